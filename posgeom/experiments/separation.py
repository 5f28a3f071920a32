r"""Experiments of the chapter "Theorem 4: training separates positions".

Theorem 4: every global minimiser of the training loss gives distinct positions distinct vectors,
$\operatorname{sep}(P^\*) = \min_{i \ne j} \|p^\*_i - p^\*_j\| > 0$, when the corpus is non-stationary,
the loss order-sensitive and attention non-degenerate. :func:`run_separation` trains learned tables from
scratch and records $\operatorname{sep}(P)$ along training, over seeds: with the conditions holding (MLM on
the ``"drift"`` corpus, whose tokens are drawn independently from $\mu_i$ at each position, and on SST-2),
and with one broken on purpose (a stationary corpus, an order-insensitive bag-of-tokens loss), with and
without weight decay, from a random or a tied start ($P = 0$).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

from .. import geometry as geo
from ..config import resolve_device, settings_or_default as _settings, validate_scale
from ..corpora.identifiers import Corpus, SyntheticFamily
from ..corpora.real import data_key
from ..registry import Result
from ..models import evaluation as mlm_eval
from ..models.batches import SCALE_PADDING
from ..models.pretrained_tables import pretrained_separation, random_separation
from ..models.separation_training import SeparationData, summarise_separation, train_separation
from ..geometry.intervals import SeedInterval, seed_interval
from ..models.mlm_inputs import MASK_ID, PAD_ID, real_mlm_data, synthetic_mlm_data
from ..registry.typed import stored
from ..validation import check_choice, check_real
from .settings import ModelShape, SeparationTraining, as_params, by_scale, store_result

__all__ = [
    "CONFIGS", "SeparationSettings", "SyntheticCorpus", "RealCorpus", "RealCorpora", "SeparationTraining",
    "GapOptions", "CORPORA", "SYNTHETIC_CORPORA", "TASKS", "INITS", "Spread", "TableAtStart", "TableAtEnd",
    "RandomReference", "StoredSeparation", "SeparationAtN", "StoredPretrainedSeparation", "separation_data",
    "final_separation_interval", "run_separation", "run_pretrained_separation", "Setup", "SETUPS", "ChapterRuns",
    "headline_corpora", "chapter_run_count", "run_chapter",
]

#: The synthetic families trained on (the bag-of-tokens task is defined on them only).
SYNTHETIC_CORPORA = (SyntheticFamily.DRIFT, SyntheticFamily.STATIONARY)
CORPORA = SYNTHETIC_CORPORA + (Corpus.SST2, Corpus.IMDB)
TASKS = ("mlm", "bag")
INITS = ("normal", "tied")


@dataclass(frozen=True)
class SyntheticCorpus:
    """A synthetic MLM corpus: positions, vocabulary, training and held-out sequences."""

    n_positions: int = 24
    vocab_size: int = 48
    n_sequences: int = 4096
    n_eval: int = 1024


@dataclass(frozen=True)
class RealCorpus:
    """A real corpus for MLM from scratch: positions, training sequences (None: all but the held-out), held-out."""

    n_positions: int
    n_sequences: int | None
    n_eval: int


@dataclass(frozen=True)
class RealCorpora:
    """The options of SST-2 and IMDB."""

    sst2: RealCorpus = RealCorpus(n_positions=24, n_sequences=8192, n_eval=1024)
    imdb: RealCorpus = RealCorpus(n_positions=64, n_sequences=2048, n_eval=512)


@dataclass(frozen=True)
class GapOptions:
    """The factorisation check: SST-2 split, positions, attention layer (from 0), least reach of a position."""

    split: str = "validation"
    n_positions: int = 32
    layer: int = 0
    min_reach: int = 50


@dataclass(frozen=True)
class SeparationSettings:
    """The chapter's options (defaults: ``quick``).

    ``headline_seeds`` are those of the headline runs (drift and SST-2 from a random start): at least 5, so that
    their interval means something.
    """

    model: ModelShape = field(default_factory=ModelShape)
    synthetic: SyntheticCorpus = field(default_factory=SyntheticCorpus)
    real: RealCorpora = field(default_factory=RealCorpora)
    train: SeparationTraining = field(default_factory=SeparationTraining)
    weight_decay: float = 15.0
    seeds: tuple[int, ...] = (0, 1, 2)
    headline_seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    threads: int | None = 1
    pretrained_positions: tuple[int, ...] = (32, 64, 128, 512)
    gap: GapOptions = field(default_factory=GapOptions)


#: Per-scale options. ``quick``: a 1-layer width-32 encoder, 24 positions, 200 steps, 3 seeds (5 for the
#: headline runs), about 2 s of one CPU core per run (SST-2: 4 s). ``paper``: BERT-base's shape, the
#: synthetic corpora and SST-2 at 128 positions, IMDB at 512, all sequences of the training splits, for a GPU.
#: ``weight_decay`` is the value of the chapter's "with weight decay" runs: exaggerated on purpose, so
#: that the decay factor of an unused weight, about exp(-lr * weight_decay * steps / 2) under the linear
#: schedule, is about 1 % within the run (exp(-3e-3 * 15 * 200 / 2) = exp(-4.5)) — practice uses 0.01 over far
#: more steps.
CONFIGS = by_scale(
    SeparationSettings(),
    # paper steps and batch sized by posgeom.costmodel.PROPOSED (the reason of each change is there)
    model=dict(d_model=768, n_layers=12, n_heads=12, d_ff=3072),
    synthetic=dict(n_positions=128, vocab_size=1000, n_sequences=100_000, n_eval=10_000),
    real=RealCorpora(sst2=RealCorpus(n_positions=128, n_sequences=None, n_eval=5000),
                     imdb=RealCorpus(n_positions=512, n_sequences=None, n_eval=2000)),
    train=dict(steps=5_000, lr=1e-4, every=125),
    weight_decay=20.0,  # the decay factor exp(-lr * wd * steps / 2) = exp(-5) of the 10,000-step plan
    threads=None,
    pretrained_positions=(64, 128, 512),
    gap=dict(n_positions=64),
)


# the stored records


@dataclass(frozen=True)
class Spread:
    """A quantity over the training seeds: mean, standard deviation (ddof 1), lowest and highest seed."""

    mean: float
    std: float
    min: float
    max: float


@dataclass(frozen=True)
class TableAtStart:
    """A learned table at its first record, over seeds: raw and normalised separation, median distance."""

    raw: Spread
    normalized: Spread
    median: Spread


@dataclass(frozen=True)
class TableAtEnd(TableAtStart):
    """A learned table at its last record; ``order_spearman`` None at a tied start (every distance is 0)."""

    order_spearman: Spread | None


@dataclass(frozen=True)
class RandomReference:
    """Normalised separation of Gaussian tables of the run's shape: mean and standard deviation over draws."""

    mean: float
    std: float


@dataclass(frozen=True, kw_only=True)
class StoredSeparation:
    """A stored :func:`run_separation`: spreads over seeds, and arrays (n_seeds, n_records) at the ``step``.

    The corpus facts are left out where they do not apply: entropies for MLM on a synthetic corpus, the largest
    Hellinger distance between marginals for a synthetic corpus, reach and tokens for a real one.
    """

    corpus: SyntheticFamily | Corpus
    task: str
    init: str
    weight_decay: float
    n_positions: int
    seeds: tuple[int, ...]
    initial: TableAtStart
    final: TableAtEnd
    peak_raw: Spread                 # the largest raw separation along training
    eval_loss: Spread
    eval_accuracy: Spread
    masked_loss: Spread | None       # MLM only: loss at the masked positions (nats)
    random_reference: RandomReference
    entropy_with_position: float | None = stored("entropy_with_position", omit_none=True, default=None)
    entropy_without_position: float | None = stored("entropy_without_position", omit_none=True, default=None)
    max_marginal_hellinger: float | None = stored("max_marginal_hellinger", omit_none=True, default=None)
    reach: list[int] | None = stored("reach", omit_none=True, default=None)  # training sequences reaching each position
    n_train: int | None = stored("n_train", omit_none=True, default=None)
    vocab_size: int | None = stored("vocab_size", omit_none=True, default=None)
    tokens_info: dict | None = stored("tokens_info", omit_none=True, default=None)  # how the corpus was tokenised
    step: np.ndarray
    separation: np.ndarray
    separation_normalized: np.ndarray
    median_distance: np.ndarray
    order_spearman: np.ndarray
    loss: np.ndarray                 # (n_seeds, steps): the training loss


@dataclass(frozen=True)
class SeparationAtN:
    """A table's separation over its first ``n`` rows, its closest pair, and Gaussian tables' normalised one."""

    raw: float
    normalized: float
    median: float
    pair: list[int]
    random_normalized_mean: float
    random_normalized_std: float


@dataclass(frozen=True)
class StoredPretrainedSeparation:
    """A stored :func:`run_pretrained_separation`: the separation over the first ``n`` positions per ``n``; each row's
    nearest other row (N_max,)."""

    pretrained: str
    max_positions: int
    width: int
    by_n: dict[int, SeparationAtN]  # by the number of first positions
    nearest: np.ndarray
    nearest_index: np.ndarray


def _spreads(summary: dict) -> dict:
    """``summarise_separation``'s mapping as records: a spread (or None) per quantity, nested for the two tables."""
    def spread(x):
        return None if x is None else Spread(**x)

    out = {k: spread(v) for k, v in summary.items() if k not in ("initial", "final")}
    out["initial"] = TableAtStart(**{k: spread(v) for k, v in summary["initial"].items()})
    out["final"] = TableAtEnd(**{k: spread(v) for k, v in summary["final"].items()})
    return out


# separation along training


def _check_run(corpus: str, task: str, init: str, weight_decay) -> float:
    check_choice(corpus, "corpus", CORPORA, plural="corpora")
    check_choice(task, "task", TASKS)
    check_choice(init, "init", INITS)
    if task == "bag" and corpus not in SYNTHETIC_CORPORA:
        raise ValueError("the bag-of-tokens task is defined on the synthetic corpora ('drift', 'stationary') only")
    return check_real(weight_decay, "weight_decay", 0.0)


def _corpus_options(corpus: str, options: SeparationSettings):
    return options.synthetic if corpus in SYNTHETIC_CORPORA else getattr(options.real, corpus)


def separation_data(corpus: str, task: str, options: SeparationSettings, *, seed: int, data_dir=None) -> SeparationData:
    """The data of a separation run: a synthetic corpus split in two, or a seeded split of a real corpus."""
    _check_run(corpus, task, "normal", 0.0)
    c = _corpus_options(corpus, options)
    n, facts = c.n_positions, {}
    if corpus in SYNTHETIC_CORPORA:
        n_tr = c.n_sequences
        both = synthetic_mlm_data(corpus, n_sequences=n_tr + c.n_eval, n_positions=n, vocab_size=c.vocab_size,
                                  seed=seed, task=task)
        train = dict(input_ids=both["input_ids"][:n_tr])
        held = dict(input_ids=both["input_ids"][n_tr:])
        if task == "bag":
            train["labels"], held["labels"] = both["labels"][:n_tr], both["labels"][n_tr:]
        if task == "mlm":
            h_pos, h_nopos = mlm_eval.entropy_references(both["population"])
            facts.update(entropy_with_position=h_pos, entropy_without_position=h_nopos)
        facts["max_marginal_hellinger"] = float(geo.hellinger_matrix(both["population"]).max())
        return SeparationData(train, held, both["vocab_size"], (PAD_ID, MASK_ID), n, facts)
    full = real_mlm_data(corpus, n_positions=n, n_sequences=None, seed=seed, data_dir=data_dir)
    N = full["input_ids"].shape[0]
    order = np.random.default_rng(seed).permutation(N)
    n_train = N - c.n_eval if c.n_sequences is None else c.n_sequences
    tr_rows, ev_rows = order[:n_train], order[n_train:n_train + c.n_eval]
    train = dict(input_ids=full["input_ids"][tr_rows], attention_mask=full["attention_mask"][tr_rows])
    held = dict(input_ids=full["input_ids"][ev_rows], attention_mask=full["attention_mask"][ev_rows])
    reach = full["attention_mask"][tr_rows].sum(dim=0).numpy()
    facts.update(reach=reach.tolist(), n_train=int(len(tr_rows)), vocab_size=int(full["vocab_size"]),
                 tokens_info=full["info"])
    return SeparationData(train, held, full["vocab_size"], tuple(full["special_ids"]), n, facts)


def final_separation_interval(result: Result, *, normalized: bool = True, level: float = 0.95) -> SeedInterval:
    """Seed interval of the final separation of a :func:`run_separation` result (a distance: bounded below by 0)."""
    key = "separation_normalized" if normalized else "separation"
    return seed_interval(result.arrays[key][:, -1], level, bounds=(0.0, None))


def run_separation(settings=None, *, force: bool = False, corpus: str = "drift", task: str = "mlm",
                   init: str = "normal", weight_decay: float = 0.0, seeds=None, steps: int | None = None,
                   progress: bool = True) -> Result:
    r"""Train a learned table from scratch and record its separation along training, over seeds, stored.

    Parameters
    ----------
    corpus : {"drift", "stationary", "sst2", "imdb"}
    task : {"mlm", "bag"}
        Masked language modelling (order-sensitive), or the order-insensitive bag-of-tokens label with mean
        pooling (synthetic corpora only).
    init : {"normal", "tied"}
        $\mathcal N(0, 0.02^2)$ rows (BERT), or every row 0.
    weight_decay : float
        AdamW's decoupled weight decay, on every weight but biases and LayerNorm.

    Returns
    -------
    Result
        Of a :class:`StoredSeparation`: spreads over seeds, and arrays (n_seeds, T) at ``step`` (T,), but
        ``loss`` (n_seeds, steps).
    """
    settings = _settings(settings)
    weight_decay = _check_run(corpus, task, init, weight_decay)
    conf = CONFIGS[settings.scale]
    training = conf.train if steps is None else dataclasses.replace(conf.train, steps=int(steps))
    seeds = tuple(conf.seeds if seeds is None else seeds)
    device = resolve_device(settings.device)
    params = dict(corpus=corpus, task=task, init=init, weight_decay=weight_decay, seeds=list(seeds),
                  model=as_params(conf.model), train=as_params(training),
                  data=as_params(_corpus_options(corpus, conf)), base_seed=settings.seed,
                  data_dir=data_key(settings.data_dir) if corpus in (Corpus.SST2, Corpus.IMDB) else None)

    def compute():
        data = separation_data(corpus, task, conf, seed=settings.seed, data_dir=settings.data_dir)
        runs = train_separation(data, task=task, init=init, weight_decay=weight_decay, seeds=seeds,
                                shape=as_params(conf.model), **as_params(training), device=device, threads=conf.threads,
                                progress=progress,
                                desc=f"separation {corpus}/{task}/{init}/wd={weight_decay:g}",
                                padding=SCALE_PADDING[settings.scale])
        ref_mean, ref_std = random_separation(data.n_positions, conf.model.d_model, seed=settings.seed)
        return StoredSeparation(
            **data.facts, corpus=corpus, task=task, init=init, weight_decay=weight_decay,
            n_positions=data.n_positions, seeds=seeds, **_spreads(summarise_separation(runs)),
            random_reference=RandomReference(ref_mean, ref_std), step=runs.step, separation=runs.separation,
            separation_normalized=runs.separation_normalized, median_distance=runs.median_distance,
            order_spearman=runs.order_spearman, loss=runs.loss)

    name = f"separation.{corpus}.{task}.{init}.wd{weight_decay:g}"
    return store_result(settings, name, compute, params, force, device=device)


# the pretrained table


def run_pretrained_separation(settings=None, *, force: bool = False, positions=None) -> Result:
    r"""Separation of the pretrained model's position table over its first ``n`` rows, for each ``n`` of ``positions``.

    Raises
    ------
    posgeom.models.pretrained.ModelUnavailableError
        When the pretrained model cannot be loaded.
    """
    settings = _settings(settings)
    positions = tuple(CONFIGS[settings.scale].pretrained_positions if positions is None else positions)
    params = dict(pretrained=settings.pretrained, positions=list(positions))

    def compute():
        from ..models.pretrained import load_hf
        pm = load_hf(settings.pretrained)
        P = pm.position_table()
        by_n, nearest = pretrained_separation(P, positions, seed=settings.seed)
        return StoredPretrainedSeparation(pm.name, int(P.shape[0]), int(P.shape[1]),
                                          {int(n): SeparationAtN(**row) for n, row in by_n.items()}, **nearest)

    return store_result(settings, "separation.pretrained", compute, params, force, model=settings.pretrained)


class Setup(StrEnum):
    """The three setups of the tied-start and weight-decay runs: conditions hold, stationary corpus, control.

    A member is its identifier (``Setup.HOLD == "hold"``), the key of the stored results; ``label`` is for display.
    """

    HOLD = "hold", "conditions hold", SyntheticFamily.DRIFT, "mlm"
    STATIONARY = "stationary", "stationary corpus", SyntheticFamily.STATIONARY, "mlm"
    CONTROL = "control", "order-insensitive loss", SyntheticFamily.DRIFT, "bag"

    def __new__(cls, value: str, label: str, corpus: str, task: str):
        member = str.__new__(cls, value)
        member._value_, member.label, member.corpus, member.task = value, label, corpus, task
        return member

    def run(self) -> dict[str, str]:
        """The keywords of :func:`run_separation` that make this setup."""
        return {"corpus": self.corpus, "task": self.task}


#: ``{setup: run_separation's keywords}`` of each :class:`Setup`: the form the parameters of
#: ``separation.converged`` record.
SETUPS = {setup: setup.run() for setup in Setup}


@dataclass(frozen=True)
class ChapterRuns:
    """Every training run of the chapter: the headline runs by corpus, the tied-start and weight-decay runs by setup."""

    headline: dict[str, Result]
    tied: dict[Setup, Result]
    decay: dict[Setup, Result]


def headline_corpora(scale: str) -> tuple[str, ...]:
    """The corpora of the headline runs: drift and SST-2, and IMDB at ``paper`` only."""
    return (SyntheticFamily.DRIFT, Corpus.SST2) + ((Corpus.IMDB,) if validate_scale(scale) == "paper" else ())


def chapter_run_count(scale: str) -> int:
    """How many training runs :func:`run_chapter` makes at ``scale``."""
    conf = CONFIGS[scale]
    return len(headline_corpora(scale)) * len(conf.headline_seeds) + 2 * len(Setup) * len(conf.seeds)


def run_chapter(settings=None, *, force: bool = False) -> ChapterRuns:
    """Every training run of the chapter (the entry point ``posgeom reproduce`` runs under ``torchrun``)."""
    settings = _settings(settings)
    conf = CONFIGS[settings.scale]
    headline = {c: run_separation(settings, corpus=c, seeds=conf.headline_seeds, force=force)
                for c in headline_corpora(settings.scale)}
    tied, decay = {}, {}
    for setup in Setup:
        tied[setup] = run_separation(settings, init="tied", force=force, **setup.run())
        decay[setup] = run_separation(settings, weight_decay=conf.weight_decay, force=force, **setup.run())
    return ChapterRuns(headline, tied, decay)
