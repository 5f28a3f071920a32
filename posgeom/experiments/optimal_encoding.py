r"""Experiments of the chapter "The optimal encoding" (Proposition 6, Algorithm 1, the stress and its critique).

Algorithm 1 is classical MDS of the Hellinger matrix, $B = -\tfrac12 J D^{(2)} J = U \Lambda U^\top$,
$P_{\mathrm{MDS}} = U_k \Lambda_k^{1/2}$; for the chord distance $B \succeq 0$, so the positions embed exactly.
Classical MDS minimises the strain, not the stress of Eq. 4: SMACOF started from $P_{\mathrm{MDS}}$ lowers it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import geometry as geo
from ..config import settings_or_default as _settings
from ..corpora.identifiers import SyntheticFamily
from ..corpora.real import data_key
from ..corpora.synthetic import family_corpus
from ..corpora.synthetic.studies import algorithm_steps
from ..encodings import comparison_for, comparison_intervals
from ..encodings.identifiers import Encoding
from ..geometry.bootstrap import Interval
from ..geometry.stress import StressNormalization
from ..registry import Result
from ..registry.typed import build, stored
from . import corpus_geometry as cg
from .corpus_geometry import StressPair
from .settings import EncoderShape, IntervalOptions, SmacofOptions, as_params, by_scale, params_of, store_result

__all__ = [
    "CONFIGS", "OptimalEncodingSettings", "Walkthrough", "INTERVAL_DIFFERENCES", "AlgorithmSteps", "StoredComparison",
    "StressIntervals", "ComparisonIntervals", "ExactKind", "ExactEmbedding", "ExactEmbeddings", "OneHotLayouts",
    "SmacofGain", "SmacofGains",
    "run_algorithm_steps", "run_encoding_comparison", "run_exact_embedding", "run_one_hot", "run_smacof_gain",
    "run_comparison_intervals",
]


@dataclass(frozen=True)
class Walkthrough:
    """Algorithm 1 step by step: the synthetic family, the rank ``k`` and the width of the lift."""

    family: str = "drift"
    k: int = 3
    lift_d: int = 50


@dataclass(frozen=True)
class OptimalEncodingSettings:
    """Options of the chapter "The optimal encoding" (defaults: ``quick``; corpora from ``corpus_geometry``)."""

    synthetic_encoder: EncoderShape = field(default_factory=lambda: EncoderShape(d_model=50, n_heads=5))
    walkthrough: Walkthrough = field(default_factory=Walkthrough)
    smacof_ranks: tuple[int, ...] = (1, 2, 3, 5, 10)
    smacof: SmacofOptions = field(default_factory=SmacofOptions)
    families: tuple[str, ...] = (SyntheticFamily.DRIFT, SyntheticFamily.REGIMES, SyntheticFamily.MARKOV)
    intervals: IntervalOptions = field(default_factory=IntervalOptions)


#: Per-scale options: ``paper`` adds rank 20 to the SMACOF curve, runs SMACOF to a tighter tolerance and
#: draws more bootstrap replicates.
CONFIGS = by_scale(
    OptimalEncodingSettings(), smacof_ranks=(1, 2, 3, 5, 10, 20), smacof={"max_iter": 20000, "eps": 1e-12},
    intervals={"n_boot": 1000, "n_folds": 200},
)

#: Differences of ``"scale_free"`` stress the chapter interprets, (a, b) for stress(a) - stress(b).
INTERVAL_DIFFERENCES = ((Encoding.MDS_RANK3, Encoding.SINUSOIDAL), (Encoding.SINUSOIDAL, Encoding.ROPE),
                        (Encoding.ALIBI, Encoding.SINUSOIDAL), (Encoding.ALIBI, Encoding.ROPE),
                        (Encoding.LEARNED, Encoding.SINUSOIDAL))


@dataclass(frozen=True)
class AlgorithmSteps:
    """A stored ``run_algorithm_steps``: Algorithm 1 step by step on one synthetic corpus."""

    family: str
    k: int                          # the rank of P_k
    n: int                          # positions
    d: int                          # the width of the lift
    B_vs_SS_max_error: float        # B = J S S^T J, checked
    min_eigenvalue: float
    max_eigenvalue: float
    numerical_rank: int
    full_rank_max_error: float
    rank_k_stress: StressPair
    lift_max_error: float           # the lift to width d keeps the distances
    population_rank_tol: int
    D: np.ndarray                   # (n, n)
    B: np.ndarray                   # (n, n)
    eigenvalues: np.ndarray         # (n,)
    P_k: np.ndarray                 # (n, k)
    population_eigenvalues: np.ndarray  # (n,)


def run_algorithm_steps(settings=None, *, force: bool = False) -> Result:
    """Algorithm 1 step by step on a synthetic corpus (:func:`~posgeom.corpora.synthetic.studies.algorithm_steps`).

    The record: :class:`AlgorithmSteps`.
    """
    settings = _settings(settings)
    walk = CONFIGS[settings.scale].walkthrough
    syn_cfg = cg.CONFIGS[settings.scale].synthetic
    params = params_of(**as_params(walk), synthetic=as_params(syn_cfg), seed=settings.seed)

    def compute() -> AlgorithmSteps:
        corpus = family_corpus(walk.family, seed=settings.seed, **as_params(syn_cfg))
        values, arrays = algorithm_steps(corpus, **as_params(walk), seed=settings.seed)
        return AlgorithmSteps(**{**values, "rank_k_stress": StressPair(**values["rank_k_stress"])}, **arrays)

    return store_result(settings, "optimal_encoding.algorithm_steps", compute, params, force)


@dataclass(frozen=True)
class StoredComparison:
    """A stored ``run_encoding_comparison``: per corpus each encoding's stress under each normalisation."""

    pretrained: str
    stress: dict[str, dict[str, dict[str, float]]] = stored("{}")  # by corpus, encoding and normalisation


def run_encoding_comparison(settings=None, *, force: bool = False) -> Result:
    r"""The stress of every encoding on every corpus, under ``"paper"`` and ``"scale_free"`` (claim C3), stored.

    The record: :class:`StoredComparison`.
    """
    settings = _settings(settings)
    cfg, ccfg = CONFIGS[settings.scale], cg.CONFIGS[settings.scale]
    params = params_of(families=list(cg.SYNTHETIC_FAMILIES), synthetic=ccfg.synthetic, sst2=ccfg.sst2,
                  synthetic_encoder=cfg.synthetic_encoder, encoder=ccfg.encoder, seed=settings.seed,
                  pretrained=settings.pretrained, data=data_key(settings.data_dir))

    def compute() -> StoredComparison:
        from ..models.pretrained import position_table
        values: dict = {}
        for fam in cg.SYNTHETIC_FAMILIES:
            corpus = family_corpus(fam, seed=settings.seed, **as_params(ccfg.synthetic))
            marg = geo.positional_marginals(corpus.counts())
            values[fam] = comparison_for(geo.hellinger_matrix(marg), marg.positions, **as_params(cfg.synthetic_encoder),
                                         seed=settings.seed)
        marg, _ = cg.sst2_marginals(settings)
        table = position_table(settings.pretrained)
        values["sst2"] = comparison_for(geo.hellinger_matrix(marg), marg.positions, **as_params(ccfg.encoder),
                                        seed=settings.seed, learned_table=table)
        return StoredComparison(stress=values, pretrained=settings.pretrained)

    return store_result(settings, "optimal_encoding.comparison", compute, params, force, model=settings.pretrained)


@dataclass(frozen=True)
class StressIntervals:
    """One corpus of ``run_comparison_intervals``: bootstrap intervals of its stress table,
    ``statistics[encoding][norm]`` and ``differences[a][b][norm]`` for the stress of ``a`` minus that of ``b``."""

    statistics: dict[str, dict[StressNormalization, Interval]]
    differences: dict[str, dict[str, dict[StressNormalization, Interval]]]
    n_used: int     # the replicates that entered the intervals
    n_kept: int     # positions kept


@dataclass(frozen=True)
class ComparisonIntervals:
    """A stored ``run_comparison_intervals``: per corpus its intervals, and replicates ``<corpus>__replicates``."""

    corpora: dict[str, StressIntervals] = stored("{}")
    replicates: dict[str, np.ndarray] = stored("{}__replicates")  # (n_used, n_statistics)


def run_comparison_intervals(settings=None, *, force: bool = False) -> Result:
    r"""Bootstrap intervals over sequences for the stress table of :func:`run_encoding_comparison`.

    The record: :class:`ComparisonIntervals`.
    """
    settings = _settings(settings)
    cfg, ccfg = CONFIGS[settings.scale], cg.CONFIGS[settings.scale]
    params = params_of(families=list(cg.SYNTHETIC_FAMILIES), synthetic=ccfg.synthetic, sst2=ccfg.sst2,
                  synthetic_encoder=cfg.synthetic_encoder, encoder=ccfg.encoder, intervals=cfg.intervals,
                  seed=settings.seed, pretrained=settings.pretrained, data=data_key(settings.data_dir))

    def compute() -> ComparisonIntervals:
        from ..models.pretrained import position_table
        values, arrays = {}, {}
        seqs, tokens, _ = cg.sst2_sequences(settings)
        for name in ("sst2", *cg.SYNTHETIC_FAMILIES):
            if name == "sst2":
                args, encoder = (seqs, ccfg.sst2.n_positions, tokens.vocab_size), ccfg.encoder
                # SST-2's training phrases resampled with their sentence (the independent unit)
                extra = dict(learned_table=position_table(settings.pretrained), groups=cg.sst2_groups(settings))
            else:
                corpus = family_corpus(name, seed=settings.seed, **as_params(ccfg.synthetic))
                args, encoder = (corpus.sequences(), corpus.n_positions, corpus.vocab_size), cfg.synthetic_encoder
                extra = {}
            values[name], arrays[f"{name}__replicates"] = comparison_intervals(
                *args, **as_params(encoder), **as_params(cfg.intervals), seed=settings.seed,
                differences=INTERVAL_DIFFERENCES,
                progress=f"bootstrap {name}", **extra)
        return build(ComparisonIntervals, values, arrays)

    return store_result(settings, "optimal_encoding.comparison_intervals", compute, params, force,
                         model=settings.pretrained)


@dataclass(frozen=True)
class ExactKind:
    """Full-rank MDS under one Hellinger distance."""

    full_rank_max_error: float
    clipped_mass: float
    min_over_max_eigenvalue: float
    n_negative_beyond_rounding: int
    numerical_rank: int


@dataclass(frozen=True)
class ExactEmbedding:
    """One corpus of a stored ``run_exact_embedding`` (``at=corpus``)."""

    n: int
    chord: ExactKind
    geodesic: ExactKind


@dataclass(frozen=True)
class ExactEmbeddings:
    """A stored ``run_exact_embedding``: every corpus's full-rank MDS."""

    corpora: dict[str, ExactEmbedding] = stored("{}")


def run_exact_embedding(settings=None, *, force: bool = False) -> Result:
    r"""Curvature is not the obstacle: the chord Hellinger embeds exactly, for every corpus, stored (:class:`ExactEmbeddings`)."""
    settings = _settings(settings)
    ccfg = cg.CONFIGS[settings.scale]
    params = params_of(synthetic=ccfg.synthetic, sst2=ccfg.sst2, seed=settings.seed, data=data_key(settings.data_dir))

    def compute() -> ExactEmbeddings:
        values = {}
        for fam in cg.SYNTHETIC_FAMILIES:
            corpus = family_corpus(fam, seed=settings.seed, **as_params(ccfg.synthetic))
            values[fam] = geo.exact_embedding(geo.positional_marginals(corpus.counts()))
        values["sst2"] = geo.exact_embedding(cg.sst2_marginals(settings)[0])
        return build(ExactEmbeddings, values)

    return store_result(settings, "optimal_encoding.exact_embedding", compute, params, force)


@dataclass(frozen=True)
class OneHotLayouts:
    """A stored ``run_one_hot``: three one-hot distributions laid out by MDS, MDS rescaled, and SMACOF."""

    mds_stress: float
    rescaled_stress: float
    smacof_stress: float
    smacof_n_iter: int
    mds_scale_free: float
    mds_sorted: list[float]     # the layouts' coordinates in increasing order
    smacof_sorted: list[float]
    mds: np.ndarray             # (3, 1)
    rescaled: np.ndarray        # (3, 1)
    smacof: np.ndarray          # (3, 1)


def _one_hot() -> OneHotLayouts:
    values, arrays = geo.one_hot_layouts()
    return OneHotLayouts(**values, **arrays)


def run_one_hot(settings=None, *, force: bool = False) -> Result:
    r"""Classical MDS is not the stress optimum: three one-hot distributions (``"paper"`` stress 1/6 against 1/9).

    The record: :class:`OneHotLayouts`.
    """
    settings = _settings(settings)
    return store_result(settings, "optimal_encoding.one_hot", _one_hot, dict(m=3, seed=settings.seed), force)


@dataclass(frozen=True)
class SmacofGain:
    """One corpus of a stored ``run_smacof_gain`` (``at=corpus``), per rank."""

    ranks: tuple[int, ...]
    gain: tuple[float, ...]     # 1 - smacof_paper / mds_paper
    mds_paper: tuple[float, ...]
    mds_scale_free: tuple[float, ...]
    smacof_paper: tuple[float, ...]
    smacof_scale_free: tuple[float, ...]
    n_iter: tuple[int, ...]


@dataclass(frozen=True)
class SmacofGains:
    """A stored ``run_smacof_gain``: SST-2 and each family of the settings' ``families``."""

    corpora: dict[str, SmacofGain] = stored("{}")


def run_smacof_gain(settings=None, *, force: bool = False) -> Result:
    r"""How much SMACOF started from classical MDS lowers the ``"paper"`` stress, rank by rank, stored.

    The record: :class:`SmacofGains`.
    """
    settings = _settings(settings)
    cfg, ccfg = CONFIGS[settings.scale], cg.CONFIGS[settings.scale]
    params = params_of(ranks=list(cfg.smacof_ranks), smacof=cfg.smacof, families=list(cfg.families),
                  synthetic=ccfg.synthetic, sst2=ccfg.sst2, seed=settings.seed, data=data_key(settings.data_dir))

    def compute() -> SmacofGains:
        values = {"sst2": geo.smacof_curve(geo.hellinger_matrix(cg.sst2_marginals(settings)[0]), cfg.smacof_ranks,
                                           **as_params(cfg.smacof))}
        for fam in cfg.families:
            corpus = family_corpus(fam, seed=settings.seed, **as_params(ccfg.synthetic))
            values[fam] = geo.smacof_curve(geo.hellinger_matrix(corpus.counts()), cfg.smacof_ranks,
                                           **as_params(cfg.smacof))
        return build(SmacofGains, values)

    return store_result(settings, "optimal_encoding.smacof_gain", compute, params, force)
