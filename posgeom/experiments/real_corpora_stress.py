r"""Real corpora, the encoding side: the stress table, its bootstrap intervals, and the learned tables.

Rows are stored as dictionaries and read back as :class:`StressRow` records, looked up by identifier
(``settings.find(rows, row=Encoding.ALIBI)``, :mod:`posgeom.experiments.table_rows`). The maths is in
:mod:`posgeom.experiments.real_corpora`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import encodings as enc
from .. import geometry as geo
from ..config import Settings, resolve_device, settings_or_default as _settings
from ..corpora.distances import resampling_groups
from ..corpora.identifiers import Corpus
from ..corpora.tokenize import table_rows
from ..encodings.identifiers import Encoding
from ..geometry.bootstrap import Interval
from ..geometry.stress import StressNormalization
from ..models.batches import SCALE_PADDING
from ..registry import Result
from ..registry.typed import stored
from .real_corpora_geometry import (
    NORMALIZATIONS, CorpusIntervals, RecordedOptions, chapter_settings, corpus_geometry_of, corpus_options, corpus_params,
    corpus_source, run_corpus_geometry,
)
from .settings import as_params, records, store_result
from .table_rows import TableRow, row_label

#: The fixed encodings of the stress table (:func:`posgeom.encodings.encoding_set`), in its row order.
STRESS_ENCODINGS = (Encoding.SINUSOIDAL, Encoding.ROPE, Encoding.ALIBI, Encoding.ALIBI_KERNEL_RULE,
                    Encoding.EQUIDISTANT)


@dataclass(frozen=True)
class StressRow:
    """One row of :func:`run_stress_table`: what it scores, how it was built, its stresses (``*_sd``: random tables)."""

    row: str  # an Encoding or a TableRow (posgeom.experiments.table_rows)
    options: str
    paper: float
    scale_free: float
    # rows without a value leave the key out of the stored row
    rank: int | None = stored("rank", omit_none=True, default=None)  # of a truncated MDS or of SMACOF
    scale_free_resolvable: float | None = stored("scale_free_resolvable", omit_none=True, default=None)
    paper_sd: float | None = stored("paper_sd", omit_none=True, default=None)
    scale_free_sd: float | None = stored("scale_free_sd", omit_none=True, default=None)
    scale_free_resolvable_sd: float | None = stored("scale_free_resolvable_sd", omit_none=True, default=None)

    @property
    def label(self) -> str:
        """The row's text in a table."""
        return row_label(self.row, self.rank)


@dataclass(frozen=True)
class ScratchTableRecord:
    """A stored ``run_scratch_table``: the options, the training's summary, the tables and their geometry's series."""

    corpus: Corpus
    options: RecordedOptions
    train: dict[str, Any]  # the training options (``ScratchTraining`` with the overrides, ``model`` a mapping)
    final_loss: float
    tokens_per_s: float
    runtime_s: float
    steps: int
    device: str
    final: dict[str, float]  # the last value of each series
    table: np.ndarray  # (n, d), trained
    table_init: np.ndarray  # (n, d), at step 0
    losses: np.ndarray  # (steps,)
    step: np.ndarray  # the steps the geometry was recorded at; the series below are (records,)
    separation: np.ndarray
    separation_normalized: np.ndarray
    median_distance: np.ndarray
    stress_paper: np.ndarray
    stress_scale_free: np.ndarray
    violation_rate: np.ndarray
    spearman: np.ndarray


@dataclass(frozen=True)
class StressTableRecord:
    """A stored ``run_stress_table``: the rows, the ALiBi heads chosen, and the heads' and SMACOF's details."""

    rows: tuple[StressRow, ...]
    corpus: Corpus
    model: str  # the pretrained model whose table is a row
    n_kept: int
    best_head: int
    worst_head: int
    alibi_head_paper: np.ndarray  # (H,)
    alibi_head_scale_free: np.ndarray  # (H,)
    alibi_slopes: np.ndarray  # (H,)
    smacof_k: np.ndarray  # (k,)
    smacof_iters: np.ndarray  # (k,)


@dataclass(frozen=True, kw_only=True)
class StressIntervalsRecord(CorpusIntervals):
    """A stored ``run_stress_intervals``: ``statistics[row][norm]``, and ``differences[a][b][norm]`` for the stress
    of row ``a`` minus row ``b`` (rows as in :data:`INTERVAL_STATISTICS`)."""

    statistics: dict[str, dict[StressNormalization, Interval]]
    differences: dict[str, dict[str, dict[StressNormalization, Interval]]]
    best_head: int


def stress_records(result: Result) -> list[StressRow]:
    """The rows of a :func:`run_stress_table` result as :class:`StressRow` records."""
    return records(StressRow, result.values["rows"])


# Learned tables: pretrained, and trained from scratch


def pretrained_table(settings: Settings | None = None) -> np.ndarray:
    """The learned position table of ``settings.pretrained``, an ndarray of shape (N_max, d), float64."""
    from ..models.pretrained import position_table
    return position_table(_settings(settings).pretrained)


def run_scratch_table(settings: Settings | None = None, *, corpus: str = Corpus.SST2, force: bool = False,
                      progress: bool = True, corpus_overrides: dict | None = None, **overrides) -> Result:
    r"""Train a BERT-style MLM encoder with a learned table from scratch on the corpus; keep its table.

    The table starts from BERT's initialisation ($\mathcal N(0, 0.02^2)$ rows) and its geometry is recorded along
    training (:func:`posgeom.models.scratch.train_scratch_table`). ``corpus_overrides`` are corpus options of the
    data and the target geometry; ``overrides`` are training options (``model``: a dict of
    :class:`posgeom.models.encoder.EncoderConfig` fields). The record: :class:`ScratchTableRecord`.
    """
    settings = _settings(settings)
    cfg = as_params(chapter_settings(settings.scale).scratch(corpus))
    unknown = set(overrides) - set(cfg)
    if unknown:
        raise ValueError(f"unknown training option(s) {sorted(unknown)}; valid options are {sorted(cfg)}")
    cfg.update(overrides)
    opts = corpus_options(settings.scale, corpus, **(corpus_overrides or {}))
    geometry = run_corpus_geometry(settings, corpus=corpus, **(corpus_overrides or {}))
    device = resolve_device(settings.device)
    params = {"corpus": corpus_params(opts), "train": cfg, "data": geometry.values["source"], "seed": settings.seed}

    def compute():
        from ..models.scratch import train_scratch_table
        values, arrays = train_scratch_table(corpus_geometry_of(settings, opts).tokens, geometry.arrays["D"],
                                             table_rows(opts.special, geometry.arrays["positions"]),
                                             int(opts.n_positions), cfg, settings.seed, device, progress,
                                             padding=SCALE_PADDING[settings.scale])
        return ScratchTableRecord(corpus=corpus, options=RecordedOptions.of(opts), train=cfg, **values, **arrays)

    model_name = f"posgeom MLM encoder from scratch ({cfg['model']['n_layers']} layers, d={cfg['model']['d_model']})"
    return store_result(settings, f"real_corpora_scratch_{corpus}", compute, params, force, device=device,
                        model=model_name)


# The stress table


def stress_rows(D, R, positions, n_all: int, cfg, *, pretrained: tuple[str, np.ndarray, np.ndarray],
                scratch: tuple[str, np.ndarray] | None = None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The rows of the stress table (dicts of :class:`StressRow` fields) and the ALiBi head/SMACOF details.

    Parameters
    ----------
    D, R : ndarray of shape (k, k)
        The corpus geometry and its resolvable geometry on the kept ``positions`` (k,) of ``n_all``.
    cfg : RealCorporaOptions
    pretrained : (options text, table (N_max, d), table rows (k,))
    scratch : (options text, table rows (k, d)), optional
    """
    rows: list[dict[str, Any]] = []

    def add(row, options, Dhat, rank=None):
        rows.append({"row": row, "rank": rank, "options": options, **geo.stress_pair(D, Dhat, R, NORMALIZATIONS)})

    e = cfg.encodings
    for name, Dhat in enc.encoding_set(positions, names=STRESS_ENCODINGS, **e.shape()).items():
        add(name, enc.describe_encoding(name, **e.shape()), Dhat)
    H, slopes = e.n_heads, enc.alibi_slopes(e.n_heads)
    heads = geo.line_stresses(D, positions, slopes)
    best, worst = int(np.argmin(heads["paper"])), int(np.argmax(heads["paper"]))
    for row, h in ((TableRow.ALIBI_BEST_HEAD, best), (TableRow.ALIBI_WORST_HEAD, worst)):
        add(row, f"H={H}, head {h}, slope {slopes[h]:.4g}",
            enc.alibi_distances(n_all, H, head=h)[np.ix_(positions, positions)])
    text, P, prow = pretrained
    add(TableRow.LEARNED_PRETRAINED, text, geo.euclidean_distances(P[prow]))
    if scratch is not None:
        add(TableRow.LEARNED_SCRATCH, scratch[0], geo.euclidean_distances(scratch[1]))
    tables = (enc.random_table(n_all, e.d_model, sigma=e.random_sigma, seed=s)[positions] for s in e.random_seeds)
    rand = [geo.stress_pair(D, geo.euclidean_distances(T), R, NORMALIZATIONS) for T in tables]
    rows.append({"row": Encoding.RANDOM, "rank": None,
                 "options": f"d={e.d_model}, sigma={e.random_sigma}, {len(e.random_seeds)} seeds", **geo.mean_sd(rand)})
    fitted = geo.fitted_embeddings(D, cfg.mds_ranks, cfg.smacof.ranks, full_rank=True, max_iter=cfg.smacof.max_iter,
                                   eps=cfg.smacof.eps)
    for f in fitted:
        add(f.row, f.options, f.distances, f.rank)
    add(Encoding.NONE, "all distances 0", np.zeros_like(D))
    details = {"best_head": best, "worst_head": worst, "alibi_head_paper": heads["paper"],
               "alibi_head_scale_free": heads["scale_free"], "alibi_slopes": slopes, "smacof_k": np.asarray(cfg.smacof.ranks),
               "smacof_iters": np.asarray([f.n_iter for f in fitted if f.n_iter is not None])}
    return rows, details


def run_stress_table(settings: Settings | None = None, *, corpus: str = Corpus.SST2, force: bool = False,
                     train_scratch: bool | None = None, progress: bool = True, corpus_overrides: dict | None = None,
                     scratch_overrides: dict | None = None) -> Result:
    """The stress of every encoding against the corpus's Hellinger geometry, both normalisations, stored.

    ``train_scratch`` adds a table trained from scratch (default: for ``CONFIGS[scale].scratch_corpora``);
    ``corpus_overrides`` and ``scratch_overrides`` are passed to :func:`corpus_options` and :func:`run_scratch_table`.
    The record: :class:`StressTableRecord` (:func:`stress_records` reads its rows).
    """
    settings = _settings(settings)
    cfg = chapter_settings(settings.scale)
    if train_scratch is None:
        train_scratch = corpus in cfg.scratch_corpora
    geometry = run_corpus_geometry(settings, corpus=corpus, **(corpus_overrides or {}))
    scratch = run_scratch_table(settings, corpus=corpus, progress=progress, corpus_overrides=corpus_overrides,
                                **(scratch_overrides or {})) if train_scratch else None
    opts = geometry.values["options"]
    params = {
        "corpus": opts, "encodings": as_params(cfg.encodings), "mds_ranks": cfg.mds_ranks,
        "smacof": as_params(cfg.smacof), "pretrained": settings.pretrained,
        "scratch": scratch.key if scratch is not None else None, "data": geometry.values["source"],
    }

    def compute():
        positions = geometry.arrays["positions"]
        P = pretrained_table(settings)
        prow = table_rows(opts["special"], positions)
        if prow.max() >= P.shape[0]:
            raise ValueError(
                f"the pretrained table has {P.shape[0]} rows; positions up to {int(prow.max())} are needed "
                "(the N_max wall): lower n_positions"
            )
        pre = (f"{settings.pretrained}, rows {int(prow[0])}..{int(prow[-1])}, d={P.shape[1]}", P, prow)
        scr = None
        if scratch is not None:
            sc = scratch.values["train"]
            scr = (f"MLM, {sc['model']['n_layers']} layers, d={sc['model']['d_model']}, {sc['max_steps']} steps",
                   scratch.arrays["table"][prow])
        rows, det = stress_rows(geometry.arrays["D"], geometry.arrays["R"], positions, int(opts["n_positions"]), cfg,
                                pretrained=pre, scratch=scr)
        return StressTableRecord(
            rows=tuple(StressRow(**row) for row in rows), corpus=corpus, model=settings.pretrained,
            n_kept=int(geometry.arrays["D"].shape[0]), best_head=det["best_head"], worst_head=det["worst_head"],
            **{k: det[k] for k in ("alibi_head_paper", "alibi_head_scale_free", "alibi_slopes", "smacof_k",
                                   "smacof_iters")})

    return store_result(settings, f"real_corpora_stress_{corpus}", compute, params, force, model=settings.pretrained)


# Bootstrap intervals over sequences

#: The headline stresses that get a bootstrap interval: (row, normalisation); a row is an encoding of
#: :func:`posgeom.encodings.encoding_set` or ALiBi's best head.
INTERVAL_STATISTICS = (
    (Encoding.SINUSOIDAL, StressNormalization.SCALE_FREE), (Encoding.ROPE, StressNormalization.SCALE_FREE),
    (Encoding.ALIBI, StressNormalization.SCALE_FREE), (Encoding.SINUSOIDAL, StressNormalization.PAPER),
    (Encoding.ROPE, StressNormalization.PAPER), (Encoding.ALIBI, StressNormalization.PAPER),
    (TableRow.ALIBI_BEST_HEAD, StressNormalization.PAPER), (TableRow.ALIBI_BEST_HEAD, StressNormalization.SCALE_FREE),
)
#: Differences the chapter interprets: (a, b, normalisation) for stress(a) - stress(b).
INTERVAL_DIFFERENCES = (
    (Encoding.SINUSOIDAL, Encoding.ROPE, StressNormalization.SCALE_FREE),
    (Encoding.ALIBI, Encoding.SINUSOIDAL, StressNormalization.SCALE_FREE),
    (Encoding.ALIBI, Encoding.ROPE, StressNormalization.SCALE_FREE),
    (TableRow.ALIBI_BEST_HEAD, Encoding.SINUSOIDAL, StressNormalization.SCALE_FREE),
)


def run_stress_intervals(settings: Settings | None = None, *, corpus: str = Corpus.SST2, force: bool = False,
                         **overrides) -> Result:
    r"""Bootstrap intervals over sequences for the headline stresses of a real corpus and their differences.

    Intervals are re-centred on the estimate, within :data:`posgeom.geometry.STRESS_BOUNDS`, with the
    bootstrap's bias beside them; ALiBi's best head is that of the point estimate. The record:
    :class:`StressIntervalsRecord`.
    """
    settings = _settings(settings)
    cfg = chapter_settings(settings.scale)
    icfg = cfg.intervals.bootstrap()
    opts = corpus_options(settings.scale, corpus, **overrides)
    source, data = corpus_source(settings, opts)
    params = {**corpus_params(opts), "intervals": icfg, "encodings": as_params(cfg.encodings), "data": data}

    def compute():
        geometry = corpus_geometry_of(settings, opts, source)
        tokens, positions = geometry.tokens, geometry.marginals.positions
        n_all, H = int(opts.n_positions), cfg.encodings.n_heads
        D0 = geo.hellinger_matrix(geometry.marginals, kind=opts.kind)
        best = int(np.argmin(geo.line_stresses(D0, positions, enc.alibi_slopes(H), ("paper",))["paper"]))
        encs = enc.encoding_set(positions, names=STRESS_ENCODINGS, **cfg.encodings.shape())
        encs[TableRow.ALIBI_BEST_HEAD] = enc.alibi_distances(n_all, H, head=best)[np.ix_(positions, positions)]

        def statistics(D):
            return np.array([geo.stress(D, encs[e], z, as_distances=True) for e, z in INTERVAL_STATISTICS])

        # SST-2's training phrases are resampled with their sentence (the independent unit)
        out, reps = geo.sequence_intervals(
            D0, tokens.sequences(), n_all, tokens.vocab_size, positions, statistics,
            INTERVAL_STATISTICS, **icfg, kind=opts.kind, seed=settings.seed,
            differences={(a, b, z): ((a, z), (b, z)) for a, b, z in INTERVAL_DIFFERENCES},
            groups=resampling_groups(opts, data_dir=settings.data_dir, source=source),
            bounds=[geo.STRESS_BOUNDS[z] for _, z in INTERVAL_STATISTICS], progress=f"bootstrap {corpus}")
        return StressIntervalsRecord.of(opts, icfg, out, reps, statistics=geo.nested_intervals(out["statistics"]),
                                        differences=geo.nested_intervals(out["differences"]), best_head=best)

    return store_result(settings, f"real_corpora_stress_intervals_{corpus}", compute, params, force)


__all__ = [
    "STRESS_ENCODINGS", "StressRow", "stress_records", "pretrained_table",
    "run_scratch_table", "stress_rows", "run_stress_table", "INTERVAL_STATISTICS",
    "INTERVAL_DIFFERENCES", "run_stress_intervals", "ScratchTableRecord", "StressTableRecord",
    "StressIntervalsRecord",
]
