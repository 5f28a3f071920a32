r"""Does the geometry of the corpus order the encoding? The monotonicity conjecture (C9) and the NTK regime (C11).

An encoding $\hat D$ is monotone in the corpus geometry $D$ when $d_{ij} < d_{kl}$ implies
$\hat d_{ij} < \hat d_{kl}$; its violation rate is the fraction of discordant pairs of position pairs, ties
excluded (:func:`posgeom.geometry.violation_rate`), reported with Spearman's $\rho$.

In the NTK regime (Appendix A) the table moves by gradients taken at the initial network: if the gradient at
position $i$ depends on the sequence only through its token, $\Delta p_i \propto G\, c_i$, a fixed linear
image of the positional counts, monotone in $D$ only if $G$ is close to a scaled isometry. The table scores
those linear predictions (:func:`posgeom.geometry.linear_predictions`); :func:`run_ntk` trains in and out of
that regime.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import encodings as enc
from .. import geometry as geo
from ..config import Settings, settings_or_default as _settings
from ..corpora.distances import resampling_groups
from ..corpora.identifiers import Corpus
from ..corpora.tokenize import table_rows
from ..encodings.identifiers import Encoding
from ..registry import Result
from ..registry.typed import stored
from . import real_corpora as rc
from .monotonicity_ntk import NTK_CONFIGS, REGIMES, NTKOptions, NTKRecord, NTKRegime, run_ntk, run_ntk_all
from ..geometry.bootstrap import Interval
from .real_corpora_geometry import CorpusIntervals
from .settings import as_params, by_scale, records, store_result
from .table_rows import TableRow, row_label


#: The paper's violation rate of P_MDS (claim C9).
PAPER_MDS_VIOLATION = 0.22


@dataclass(frozen=True)
class MonotonicityOptions:
    """Settings of the chapter *Monotonicity* (defaults: ``quick``)."""

    random_seeds: tuple[int, ...] = (0, 1, 2, 3, 4, 5, 6, 7)
    random_sigma: float = 0.02
    smacof_ranks: tuple[int, ...] = (1,)
    # MDS ranks scored per corpus (None: every rank 1 … n - 1)
    mds_ranks_sst2: tuple[int, ...] | None = None
    mds_ranks_imdb: tuple[int, ...] | None = (1, 2, 3, 5, 8, 10, 14, 16, 18, 20, 25, 30, 50, 100, 200, 511)
    # bootstrap intervals of the violation rates (the replicates, folds and level of real_corpora's intervals)
    interval_corpora: tuple[str, ...] = (Corpus.SST2,)
    #: the NTK experiment (its settings are :data:`posgeom.experiments.monotonicity_ntk.NTK_CONFIGS`)
    ntk: NTKOptions = NTK_CONFIGS.quick

    def mds_ranks(self, corpus: str):
        return getattr(self, f"mds_ranks_{corpus}")


#: Per-scale settings (``CONFIGS[scale]``).
CONFIGS = by_scale(
    MonotonicityOptions(),
    random_seeds=tuple(range(20)),
    smacof_ranks=(1, 2, 3),
    mds_ranks_imdb=None,
    interval_corpora=rc.CORPUS_NAMES,
    ntk=NTK_CONFIGS.paper,
)


@dataclass(frozen=True)
class MonotonicityRow:
    """One row of :func:`run_monotonicity_table` (``*_sd``: the spread over the random tables' seeds)."""

    row: str  # an Encoding or a TableRow (posgeom.experiments.table_rows)
    options: str
    violation_rate: float
    spearman: float
    tied_fraction: float
    violation_rate_resolvable: float
    # rows without a value leave these keys out of the stored row
    rank: int | None = stored("rank", omit_none=True, default=None)  # of SMACOF
    violation_rate_sd: float | None = stored("violation_rate_sd", omit_none=True, default=None)
    spearman_sd: float | None = stored("spearman_sd", omit_none=True, default=None)
    violation_rate_resolvable_sd: float | None = stored("violation_rate_resolvable_sd", omit_none=True, default=None)

    @property
    def label(self) -> str:
        """The row's text in a table."""
        return row_label(self.row, self.rank)


@dataclass(frozen=True)
class MonotonicityTableRecord:
    """A stored ``run_monotonicity_table``: the rows, the MDS rank closest to the paper's 22 %, the curves."""

    rows: tuple[MonotonicityRow, ...]
    corpus: Corpus
    model: str  # the pretrained model whose table is a row
    closest_rank: int
    closest_violation: float
    n_kept: int
    mds_ranks: np.ndarray  # (r,)
    mds_violation: np.ndarray  # (r,)
    mds_spearman: np.ndarray  # (r,)
    random_violation: np.ndarray  # (seeds,)


@dataclass(frozen=True, kw_only=True)
class ViolationIntervalsRecord(CorpusIntervals):
    """A stored ``run_violation_intervals``: ``statistics[row]`` and ``differences[a][b]``, the rate of row ``a``
    minus row ``b`` (rows as in :data:`INTERVAL_ENCODINGS`)."""

    statistics: dict[str, Interval]
    differences: dict[str, dict[str, Interval]]
    mds_rank: int


#: The fixed encodings whose order the table scores.
ORDER_ENCODINGS = (Encoding.SINUSOIDAL, Encoding.ROPE, Encoding.ALIBI)


def monotonicity_records(result: Result) -> list[MonotonicityRow]:
    """The rows of a :func:`run_monotonicity_table` result as :class:`MonotonicityRow` records."""
    return records(MonotonicityRow, result.values["rows"])


def monotonicity_rows(D, R, positions, n_all: int, cfg: MonotonicityOptions, rc_cfg, *,
                      pretrained: tuple[str, np.ndarray, np.ndarray], scratch=None,
                      marginals=None) -> tuple[list[dict], np.ndarray]:
    """The rows of the monotonicity table (dicts of :class:`MonotonicityRow` fields) and the random tables' rates.

    Parameters
    ----------
    D, R : ndarray of shape (k, k)
        Corpus geometry and its resolvable geometry on ``positions`` (k,) of ``n_all``.
    cfg, rc_cfg : MonotonicityOptions, posgeom.experiments.real_corpora.RealCorporaOptions
    pretrained : (options text, table (N_max, d), table rows (k,))
    scratch : (options text, trained rows (k, d), initial rows (k, d)), optional
    marginals : PositionalMarginals, optional
        For the two NTK predictions.
    """
    rows = []

    def scores(Dhat):
        return {**geo.monotonicity_of(D, Dhat), "violation_rate_resolvable": geo.monotonicity_of(R, Dhat)["violation_rate"]}

    def add(row, options, Dhat, rank=None):
        rows.append({"row": row, "rank": rank, "options": options, **scores(Dhat)})

    e = rc_cfg.encodings
    # not "none" or "equidistant" (every distance equal: every pair of pairs is tied, no rate exists),
    # nor "alibi (kernel rule)" (an increasing function of ALiBi's line: the same order, the same rate)
    for name, Dhat in enc.encoding_set(positions, names=ORDER_ENCODINGS, **e.shape()).items():
        add(name, enc.describe_encoding(name, **e.shape()), Dhat)
    text, P, prow = pretrained
    add(TableRow.LEARNED_PRETRAINED, text, geo.euclidean_distances(P[prow]))
    if scratch is not None:
        add(TableRow.LEARNED_SCRATCH, scratch[0], geo.euclidean_distances(scratch[1]))
        add(TableRow.LEARNED_AT_INIT, "N(0, 0.02^2) initialisation", geo.euclidean_distances(scratch[2]))
    tables = (enc.random_table(n_all, e.d_model, sigma=cfg.random_sigma, seed=s)[positions] for s in cfg.random_seeds)
    rand = [scores(geo.euclidean_distances(T)) for T in tables]
    rows.append({"row": Encoding.RANDOM, "rank": None,
                 "options": f"d={e.d_model}, sigma={cfg.random_sigma}, {len(cfg.random_seeds)} seeds",
                 **geo.mean_sd(rand, ("violation_rate", "spearman", "violation_rate_resolvable")), "tied_fraction": 0.0})
    for f in geo.fitted_embeddings(D, smacof_ranks=cfg.smacof_ranks, max_iter=rc_cfg.smacof.max_iter,
                                   eps=rc_cfg.smacof.eps):
        add(f.row, f.options, f.distances, f.rank)
    if marginals is not None:
        lin = geo.linear_predictions(marginals)
        add(TableRow.NTK_MARGINALS, "||mu_i - mu_j||_2 (G = I)", lin["marginals_l2"])
        add(TableRow.NTK_COUNTS, "||c_i - c_j||_2 / N_0 (G = I)", lin["counts_l2"])
    return rows, np.array([r["violation_rate"] for r in rand])


def run_monotonicity_table(settings: Settings | None = None, *, corpus: str = Corpus.SST2, force: bool = False,
                           progress: bool = True, corpus_overrides: dict | None = None,
                           scratch_overrides: dict | None = None, train_scratch: bool | None = None) -> Result:
    """Violation rate and Spearman's rho of every encoding against the corpus's Hellinger geometry, stored.

    ``corpus_overrides`` and ``scratch_overrides`` are corpus and training options; ``train_scratch`` includes
    the table trained from scratch (default: for the corpora that have one, or when ``scratch_overrides`` are
    given). Without it every row is computed on a CPU at every scale. The record:
    :class:`MonotonicityTableRecord` (:func:`monotonicity_records` reads its rows).
    """
    settings = _settings(settings)
    cfg, rc_cfg = CONFIGS[settings.scale], rc.chapter_settings(settings.scale)
    geometry = rc.run_corpus_geometry(settings, corpus=corpus, **(corpus_overrides or {}))
    # the table trained from scratch exists for the corpora of rc.CONFIGS[scale].scratch_corpora (SST-2 at quick)
    if train_scratch is None:
        train_scratch = corpus in rc_cfg.scratch_corpora or scratch_overrides is not None
    scratch = None
    if train_scratch:
        scratch = rc.run_scratch_table(settings, corpus=corpus, progress=progress, corpus_overrides=corpus_overrides,
                                       **(scratch_overrides or {}))
    opts = geometry.values["options"]
    params = {"corpus": opts, "random_seeds": cfg.random_seeds, "random_sigma": cfg.random_sigma,
              "mds_ranks": cfg.mds_ranks(corpus), "encodings": as_params(rc_cfg.encodings),
              "pretrained": settings.pretrained, "scratch": scratch.key if scratch is not None else None,
              "data": geometry.values["source"]}

    def compute():
        D, pos = geometry.arrays["D"], geometry.arrays["positions"]
        P = rc.pretrained_table(settings)
        prow = table_rows(opts["special"], pos)
        scr = None
        if scratch is not None:
            scr = (f"MLM, {scratch.values['train']['max_steps']} steps (chapter Real corpora)",
                   scratch.arrays["table"][prow], scratch.arrays["table_init"][prow])
        rows, rand = monotonicity_rows(D, geometry.arrays["R"], pos, int(opts["n_positions"]), cfg, rc_cfg,
                                       pretrained=(f"{settings.pretrained}, d={P.shape[1]}", P, prow), scratch=scr,
                                       marginals=rc.corpus_geometry_of(settings, rc.corpus_options(
                                           settings.scale, corpus, **(corpus_overrides or {}))).marginals)
        curve = geo.mds_monotonicity_curve(D, cfg.mds_ranks(corpus))
        k_best = int(curve["ranks"][np.argmin(np.abs(curve["violation_rate"] - PAPER_MDS_VIOLATION))])
        return MonotonicityTableRecord(
            rows=tuple(MonotonicityRow(**row) for row in rows), corpus=corpus, model=settings.pretrained,
            closest_rank=k_best, closest_violation=float(curve["violation_rate"][list(curve["ranks"]).index(k_best)]),
            n_kept=int(D.shape[0]), mds_ranks=curve["ranks"], mds_violation=curve["violation_rate"],
            mds_spearman=curve["spearman"], random_violation=rand)

    return store_result(settings, f"monotonicity_table_{corpus}", compute, params, force, model=settings.pretrained)


#: The violation rates that get a bootstrap interval over sequences (rows of :func:`run_monotonicity_table`;
#: ``MDS_CLOSEST_RANK`` is rank-k classical MDS of each replicate at the table's closest rank to 22 %).
INTERVAL_ENCODINGS = (*ORDER_ENCODINGS, TableRow.LEARNED_PRETRAINED, TableRow.MDS_CLOSEST_RANK)
#: Differences of violation rates the chapter interprets: (a, b) for rate(a) - rate(b).
INTERVAL_DIFFERENCES = ((Encoding.SINUSOIDAL, Encoding.ROPE), (Encoding.ALIBI, Encoding.SINUSOIDAL),
                        (TableRow.LEARNED_PRETRAINED, Encoding.SINUSOIDAL))


def violation_statistics(D, encodings: dict[str, np.ndarray], mds_rank: int) -> np.ndarray:
    """The violation rates of :data:`INTERVAL_ENCODINGS` against ``D`` (the MDS one built from ``D`` itself)."""
    # P_MDS of rank k = U_k Lambda_k^{1/2}
    coords = geo.classical_mds(D, k=mds_rank).embedding
    tables = {**encodings, TableRow.MDS_CLOSEST_RANK: geo.euclidean_distances(coords)}
    return np.array([geo.monotonicity_of(D, tables[name])["violation_rate"] for name in INTERVAL_ENCODINGS])


def run_violation_intervals(settings: Settings | None = None, *, corpus: str = Corpus.SST2, force: bool = False) -> Result:
    """Bootstrap intervals over sequences for the violation rates of :data:`INTERVAL_ENCODINGS` and their differences.

    The record: :class:`ViolationIntervalsRecord`.
    """
    settings = _settings(settings)
    rc_cfg = rc.chapter_settings(settings.scale)
    # the table is read for the MDS rank closest to 22% only, which the table trained from scratch does not change
    table = run_monotonicity_table(settings, corpus=corpus, train_scratch=False)
    icfg = rc_cfg.intervals.bootstrap()
    copts = rc.corpus_options(settings.scale, corpus)
    opts = rc.corpus_params(copts)
    source, data = rc.corpus_source(settings, copts)
    params = {**opts, "intervals": icfg, "encodings": as_params(rc_cfg.encodings), "pretrained": settings.pretrained,
              "mds_rank": int(table.values["closest_rank"]), "data": data}

    def compute():
        cd = rc.corpus_geometry_of(settings, copts, source)
        pos, k = cd.marginals.positions, params["mds_rank"]
        encs = enc.encoding_set(pos, names=ORDER_ENCODINGS, **rc_cfg.encodings.shape())
        encs[TableRow.LEARNED_PRETRAINED] = geo.euclidean_distances(
            rc.pretrained_table(settings)[table_rows(opts["special"], pos)])
        out, reps = geo.sequence_intervals(
            cd.D, cd.tokens.sequences(), int(opts["n_positions"]), cd.tokens.vocab_size, pos,
            lambda D: violation_statistics(D, encs, k), INTERVAL_ENCODINGS, **icfg, kind=opts["kind"],
            seed=settings.seed, differences={(a, b): (a, b) for a, b in INTERVAL_DIFFERENCES},
            groups=resampling_groups(cd.options, data_dir=settings.data_dir, source=source), bounds=(0.0, 1.0),  # rates
            progress=f"violation bootstrap {corpus}")
        return ViolationIntervalsRecord.of(opts, icfg, out, reps, statistics=geo.nested_intervals(out["statistics"]),
                                           differences=geo.nested_intervals(out["differences"]), mds_rank=k)

    return store_result(settings, f"monotonicity_violation_intervals_{corpus}", compute, params, force,
                        model=settings.pretrained)


__all__ = [
    "CONFIGS", "MonotonicityOptions", "NTKOptions", "NTKRegime", "MonotonicityRow", "PAPER_MDS_VIOLATION",
    "REGIMES", "monotonicity_records", "monotonicity_rows", "run_monotonicity_table", "INTERVAL_ENCODINGS",
    "INTERVAL_DIFFERENCES", "violation_statistics", "run_violation_intervals", "run_ntk", "run_ntk_all",
    "ORDER_ENCODINGS", "MonotonicityTableRecord", "ViolationIntervalsRecord", "NTKRecord",
]
