r"""Experiments of the chapter "How many numbers does position need?" (Remark 8, claim C5).

The optimal encoding has rank $r = \operatorname{rank}(B)$, so it factorises as $P = A C^\top$: $r(n + d)$
parameters instead of $nd$. An empirical $B$ has full rank (sampling noise), so the rank is estimated, by
the criteria of :func:`posgeom.geometry.effective_rank` and by the noise-aware rank of
:func:`posgeom.geometry.noise_aware_rank` with ``real_corpora.RANK_OPTIONS`` (the options the chapter on
real corpora uses, so one matrix gets one number). Then: the stress of rank-$k$ MDS as $k$ grows, claim C5
under each normalisation, and small models trained with a low-rank table.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import geometry as geo
from ..config import settings_or_default as _settings
from ..corpora import synthetic as syn
from ..corpora.synthetic.studies import c5_rows
from ..encodings import encoding_set
from ..encodings.identifiers import Encoding
from ..corpora.real import data_key
from ..geometry.stress import REPORTED_NORMALIZATIONS
from ..registry import Result
from ..registry.typed import build, stored
from . import corpus_geometry as cg
from .lowrank_training import LEVEL, TRAIN_CONFIGS, TrainedTable, TrainOptions, run_lowrank_training
from .settings import as_params, by_scale, store_result

__all__ = [
    "CONFIGS", "run_effective_rank", "run_stress_vs_rank", "RANK_KEYS", "run_c5", "run_lowrank_training",
    "TrainedTable", "RANK_VALIDATION", "RankValidation", "run_rank_validation", "MinimalOptions", "C5Options",
    "run_c5_draws", "PlantedRank", "StoredValidation", "C5Reduction", "C5Record", "C5Draw", "C5DrawsRecord",
    "CorpusStresses", "StressVsRankRecord", "RankReadings", "FamilyRanks", "SST2Ranks", "StoredRanks",
]


@dataclass(frozen=True)
class C5Options:
    """Claim C5's setting: $n = d$, the rank $r$, corpus sizes, drift anchors, and the generator draws."""

    n: int = 50
    d: int = 50
    r: int = 3
    sizes: tuple[int, ...] = (1_000, 10_000, 100_000)
    anchors: tuple[int, ...] = (3, 4, 5)


@dataclass(frozen=True)
class MinimalOptions:
    """Settings of the chapter *How many numbers does position need?* (defaults: ``quick``)."""

    null_rep: int = 5
    rank_sizes: tuple[int, ...] = (1_000, 10_000, 100_000)
    rank_criteria: dict = field(default_factory=lambda: {"tol": 1e-2, "q": 0.9, "threshold": 0.01})
    max_rank: int = 20
    sst2_variants: tuple[tuple[str, int], ...] = (("model", 1), ("model", 1_000), ("model", 5_000), ("content", 1),
                                                  ("content", 1_000))
    c5: C5Options = C5Options()
    #: generator seeds of the spread of C5's reduction (:func:`run_c5_draws`)
    c5_seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    #: the training comparison (its settings are :data:`posgeom.experiments.lowrank_training.TRAIN_CONFIGS`)
    train: TrainOptions = TRAIN_CONFIGS.quick
    #: level of the intervals over seeds and draws (Student t on the mean)
    level: float = LEVEL


#: Per-scale settings (``CONFIGS[scale]``).
CONFIGS = by_scale(
    MinimalOptions(),
    # paper steps and batch sized by posgeom.costmodel.PROPOSED (the reason of each change is there)
    null_rep=20,
    rank_sizes=(1_000, 10_000, 100_000, 1_000_000),
    max_rank=40,
    c5={"sizes": (1_000, 10_000, 100_000, 1_000_000)},
    train=TRAIN_CONFIGS.paper,
)


#: The per-corpus values of :func:`run_effective_rank` (one entry per corpus size or SST-2 variant).
RANK_KEYS = ("tol", "mass", "stress", "cross_fitted", "cross_fitted_rank", "cross_fitted_threshold")


@dataclass(frozen=True)
class RankReadings:
    """A corpus's rank readings of :func:`run_effective_rank`, one per setting (sample size or preprocessing)."""

    tol: tuple[int, ...]
    mass: tuple[int, ...]
    stress: tuple[int, ...]
    cross_fitted: tuple[str, ...]  # the noise-aware rank in words
    cross_fitted_rank: tuple[int | None, ...]  # None where undetermined
    cross_fitted_threshold: tuple[float, ...]


@dataclass(frozen=True)
class FamilyRanks(RankReadings):
    """A synthetic family's readings at each sample size, and its population's rank."""

    sizes: tuple[int, ...]
    population: int


@dataclass(frozen=True)
class SST2Ranks(RankReadings):
    """SST-2's readings under each preprocessing, and the sequences counted."""

    special: tuple[str, ...]
    min_count: tuple[int, ...]
    n_kept: tuple[int, ...]
    n_sequences: int


@dataclass(frozen=True)
class StoredRanks:
    """A stored :func:`run_effective_rank`; the arrays are keyed by family or by ``"sst2_<special>_<min_count>"``."""

    drift: FamilyRanks
    stationary: FamilyRanks
    regimes: FamilyRanks
    markov: FamilyRanks
    sst2: SST2Ranks
    eigenvalues: dict[str, np.ndarray] = stored("{}__eigenvalues")  # (n,), at the largest size
    cross_fitted: dict[str, np.ndarray] = stored("{}__cross_fitted")  # (n_resamples, k - 1)
    population_eigenvalues: dict[str, np.ndarray] = stored("{}__population_eigenvalues")  # families only


def run_effective_rank(settings=None, *, force: bool = False) -> Result:
    r"""Effective rank of $B$ under each criterion, against the noise, for each corpus and corpus size, stored.

    Criteria: ``"tol"`` ($\lambda_k > 10^{-2}\lambda_1$), ``"mass"`` ($q = 0.9$), ``"stress"`` (scale-free
    stress of rank-$k$ MDS $\le 0.01$) and the noise-aware rank (``"cross_fitted"`` text,
    ``"cross_fitted_rank"``, None when undetermined, ``"cross_fitted_threshold"``). The record: :class:`StoredRanks`.
    """
    from .real_corpora import RANK_OPTIONS
    settings = _settings(settings)
    cfg = CONFIGS[settings.scale]
    ccfg = cg.CONFIGS[settings.scale]
    synth = {k: v for k, v in as_params(ccfg.synthetic).items() if k != "n_sequences"}
    params = dict(sizes=list(cfg.rank_sizes), crit=cfg.rank_criteria, null_rep=cfg.null_rep, synthetic=synth,
                  sst2_variants=[list(v) for v in cfg.sst2_variants],
                  sst2=as_params(ccfg.sst2), seed=settings.seed, data=data_key(settings.data_dir))

    def compute() -> StoredRanks:
        families, eigenvalues, cross_fitted, population_eigenvalues = {}, {}, {}, {}
        for fam in cg.SYNTHETIC_FAMILIES:
            rows = {k: [] for k in RANK_KEYS}
            for N in cfg.rank_sizes:
                corpus = syn.family_corpus(fam, n_sequences=N, seed=settings.seed, **synth)
                counts = corpus.counts()
                r, w, nar = geo.rank_estimates(geo.hellinger_matrix(counts), corpus.sequences(), corpus.n_positions,
                                               corpus.vocab_size, cfg.rank_criteria, settings.seed, **RANK_OPTIONS)
                for k in rows:
                    rows[k].append(r[k])
            wp = geo.classical_mds(geo.hellinger_matrix(corpus.population), k=1).eigenvalues
            families[fam] = FamilyRanks(**{k: tuple(v) for k, v in rows.items()}, sizes=tuple(int(s) for s in cfg.rank_sizes),
                                        population=geo.effective_rank(wp, "tol", tol=1e-9) if wp[0] > 0 else 0)
            eigenvalues[fam], cross_fitted[fam], population_eigenvalues[fam] = w, nar.eigenvalues, wp
        sst2 = {k: [] for k in (*RANK_KEYS, "special", "min_count", "n_kept")}
        # the sentence of each training phrase: its phrases share a fold of the noise-aware rank (None for a
        # split of whole sentences), as in the chapter on real corpora, so both get the same number
        groups = cg.sst2_groups(settings)
        for special, min_count in cfg.sst2_variants:
            marg, counts = cg.sst2_marginals(settings, special=special, min_count=min_count)
            seqs, tc, _ = cg.sst2_sequences(settings, special=special)
            # every position reached in each fold (min_count 1), or the positions min_count keeps
            positions = None if min_count <= 1 else marg.positions
            r, w, nar = geo.rank_estimates(geo.hellinger_matrix(marg), seqs, counts.n_positions, tc.vocab_size,
                                           cfg.rank_criteria, settings.seed, positions, **RANK_OPTIONS)
            if groups is not None:
                # rank_estimates deals the rows one by one: its noise-aware rank is replaced by the one dealt by sentence
                folds = geo.fold_counts(seqs, counts.n_positions, tc.vocab_size, n_folds=RANK_OPTIONS["n_folds"],
                                        seed=settings.seed, groups=groups)
                nar = geo.noise_aware_rank_from_folds(folds, positions=positions, seed=settings.seed,
                                                      n_resamples=RANK_OPTIONS["n_resamples"],
                                                      level=RANK_OPTIONS["level"])
                r.update(cross_fitted=str(nar), cross_fitted_rank=nar.rank, cross_fitted_threshold=nar.threshold)
            for k in RANK_KEYS:
                sst2[k].append(r[k])
            sst2["special"].append(special)
            sst2["min_count"].append(int(min_count))
            sst2["n_kept"].append(int(marg.n_positions))
            eigenvalues[f"sst2_{special}_{min_count}"], cross_fitted[f"sst2_{special}_{min_count}"] = w, nar.eigenvalues
        return StoredRanks(**families, sst2=SST2Ranks(**{k: tuple(v) for k, v in sst2.items()}, n_sequences=int(counts.n_sequences)),
                           eigenvalues=eigenvalues, cross_fitted=cross_fitted,
                           population_eigenvalues=population_eigenvalues)

    return store_result(settings, "minimal_parametrisation.effective_rank", compute, params, force)


#: The planted-rank validation of the noise-aware rank: planted ranks, signal strengths, corpus sizes
#: (``posgeom.corpora.synthetic.planted_rank``, 32 positions, 200 tokens).
@dataclass(frozen=True)
class RankValidation:
    """Planted-rank corpora of :func:`run_rank_validation`: ranks, signal strengths, sizes, shape."""

    ranks: tuple[int, ...] = (1, 3, 10)
    strengths: tuple[float, ...] = (0.5, 0.1)
    sizes: tuple[int, ...] = (200, 1_000, 5_000, 20_000)
    n_positions: int = 32
    vocab_size: int = 200


#: The planted-rank study (the same at both scales).
RANK_VALIDATION = RankValidation()


@dataclass(frozen=True)
class PlantedRank:
    """One planted corpus of ``run_rank_validation``: the estimate (None: undetermined), its interval, the signal."""

    estimate: int | None
    interval: tuple[int, int]
    rank: int  # planted
    size: int  # sequences
    smallest_signal: float  # the planted rank's smallest population eigenvalue
    strength: float
    text: str
    threshold: float


@dataclass(frozen=True)
class StoredValidation:
    """A stored ``run_rank_validation``, typed: every planted-rank case, in the stored order."""

    rows: tuple[PlantedRank, ...]


def run_rank_validation(settings=None, *, force: bool = False) -> Result:
    """The noise-aware rank on synthetic corpora of planted rank, at several sizes and signal strengths, stored.

    The record: :class:`StoredValidation`, a :class:`PlantedRank` per corpus.
    """
    from .real_corpora import RANK_OPTIONS
    settings = _settings(settings)
    cfg = RANK_VALIDATION
    params = dict(**as_params(cfg), rank=RANK_OPTIONS, seed=settings.seed)

    def compute():
        rows = []
        for rank in cfg.ranks:
            for strength in cfg.strengths:
                for size in cfg.sizes:
                    c = syn.planted_rank(size, cfg.n_positions, cfg.vocab_size, rank=rank, strength=strength,
                                         seed=settings.seed)
                    nar = geo.noise_aware_rank(c.sequences(), cfg.n_positions, cfg.vocab_size, seed=settings.seed,
                                               **RANK_OPTIONS)
                    pop = geo.classical_mds(geo.hellinger_matrix(c.population), k=1).eigenvalues
                    rows.append(PlantedRank(rank=rank, strength=strength, size=size, estimate=nar.rank,
                                            interval=tuple(int(x) for x in nar.interval), text=str(nar),
                                            threshold=nar.threshold, smallest_signal=float(pop[rank - 1])))
        return StoredValidation(rows=tuple(rows))

    return store_result(settings, "minimal_parametrisation.rank_validation", compute, params, force)


@dataclass(frozen=True)
class CorpusStresses:
    """One corpus of ``run_stress_vs_rank``: each fixed encoding's stress, by encoding and normalisation."""

    encodings: dict[str, dict[str, float]]


@dataclass(frozen=True)
class StressVsRankRecord:
    """A stored ``run_stress_vs_rank``: per corpus, the fixed encodings' stresses and rank-k MDS's stress curves.

    The corpora are the synthetic families of ``corpus_geometry.SYNTHETIC_FAMILIES`` and SST-2; each curve
    ``<corpus>__<normalisation>`` is (max_rank,), stored under that name.
    """

    corpora: dict[str, CorpusStresses] = stored("{}")
    paper: dict[str, np.ndarray] = stored("{}__paper")  # the curves, by corpus
    scale_free: dict[str, np.ndarray] = stored("{}__scale_free")


def run_stress_vs_rank(settings=None, *, force: bool = False) -> Result:
    r"""Stress of rank-$k$ classical MDS for $k = 1, \dots,$ ``max_rank``, with the fixed encodings for reference.

    The record: :class:`StressVsRankRecord`.
    """
    from .optimal_encoding import CONFIGS as OE
    settings = _settings(settings)
    cfg = CONFIGS[settings.scale]
    ccfg = cg.CONFIGS[settings.scale]
    params = dict(max_rank=cfg.max_rank, synthetic=as_params(ccfg.synthetic), sst2=as_params(ccfg.sst2),
                  encoder=as_params(ccfg.encoder), synthetic_encoder=as_params(OE[settings.scale].synthetic_encoder),
                  seed=settings.seed,
                  data=data_key(settings.data_dir))

    def one(D, positions, enc_cfg):
        encs = encoding_set(positions, d_model=enc_cfg.d_model, n_heads=enc_cfg.n_heads, seed=settings.seed)
        encs = {k: encs[k] for k in (Encoding.SINUSOIDAL, Encoding.ROPE, Encoding.ALIBI)}
        mds = geo.classical_mds(D, k=1)
        k = min(cfg.max_rank, D.shape[0] - 1)
        curves = {norm: geo.mds_stress_curve(D, k, norm, mds=mds) for norm in REPORTED_NORMALIZATIONS}
        return CorpusStresses(encodings=geo.encoding_stresses(D, encs)), curves

    def compute():
        values, arrays = {}, {}
        for fam in cg.SYNTHETIC_FAMILIES:
            corpus = syn.family_corpus(fam, seed=settings.seed, **as_params(ccfg.synthetic))
            marg = geo.positional_marginals(corpus.counts())
            v, curves = one(geo.hellinger_matrix(marg), marg.positions, OE[settings.scale].synthetic_encoder)
            values[fam] = v
            arrays.update({f"{fam}__{k}": c for k, c in curves.items()})
        marg, _ = cg.sst2_marginals(settings)
        v, curves = one(geo.hellinger_matrix(marg), marg.positions, ccfg.encoder)
        values["sst2"] = v
        arrays.update({f"sst2__{k}": c for k, c in curves.items()})
        return build(StressVsRankRecord, values, arrays)

    return store_result(settings, "minimal_parametrisation.stress_vs_rank", compute, params, force)


@dataclass(frozen=True)
class C5Reduction:
    """One setting of ``run_c5`` (a generator at a sample size; None: its population): the stresses and reduction."""

    generator: str
    size: int | None
    mds_paper: float  # rank-3 MDS
    mds_scale_free: float
    sin_paper: float  # the sinusoidal table
    sin_scale_free: float
    reduction_paper: float  # 1 - stress(MDS) / stress(sinusoidal)
    reduction_scale_free: float


@dataclass(frozen=True)
class C5Record:
    """A stored ``run_c5``: the parameter counts and savings, and every setting."""

    n: int
    d: int
    r: int
    n_params_full: int
    n_params_lowrank: int
    savings: float
    rows: tuple[C5Reduction, ...]


@dataclass(frozen=True)
class C5Draw:
    """One setting of ``run_c5_draws``: draws reaching 99.8 % per normalisation, and each reduction as stored."""

    generator: str
    size: int | None
    holds_paper: int
    holds_scale_free: int
    # an interval over draws (``posgeom.geometry.draws_summary``), or a spread where too few draws ran
    reduction_paper: dict
    reduction_scale_free: dict


@dataclass(frozen=True)
class C5DrawsRecord:
    """A stored ``run_c5_draws``: the draws' seeds, each setting's spread, and every reduction (draws, settings)."""

    seeds: tuple[int, ...]
    level: float
    rows: tuple[C5Draw, ...]
    reduction_paper: np.ndarray
    reduction_scale_free: np.ndarray


def run_c5(settings=None, *, force: bool = False) -> Result:
    r"""Claim C5 under every reading: rank-3 MDS against the sinusoidal table at $n = d = 50$, stored.

    The reduction $1 - \sigma(P^{(3)}_{\mathrm{MDS}}) / \sigma(P_{\sin})$ under both normalisations, for each
    generator at the population and at each corpus size (:func:`posgeom.corpora.synthetic.studies.c5_rows`).
    The record: :class:`C5Record`.
    """
    settings = _settings(settings)
    c5 = CONFIGS[settings.scale].c5
    vocab = cg.CONFIGS[settings.scale].synthetic.vocab_size
    n, d, r = c5.n, c5.d, c5.r
    params = dict(**as_params(c5), vocab_size=vocab, seed=settings.seed)

    def compute():
        rows = c5_rows(**as_params(c5), vocab_size=vocab, seed=settings.seed)
        return C5Record(savings=geo.parameter_savings(r, n, d), n=n, d=d, r=r, n_params_full=n * d,
                        n_params_lowrank=r * (n + d), rows=tuple(C5Reduction(**row) for row in rows))

    return store_result(settings, "minimal_parametrisation.c5", compute, params, force)


def run_c5_draws(settings=None, *, force: bool = False) -> Result:
    r"""C5's reduction over several generator draws (``CONFIGS[scale].c5_seeds``): its spread and interval, stored.

    Each draw redraws the generators as well as the corpora (:func:`posgeom.geometry.draws_summary`). The
    record: :class:`C5DrawsRecord`.
    """
    settings = _settings(settings)
    cfg = CONFIGS[settings.scale]
    vocab = cg.CONFIGS[settings.scale].synthetic.vocab_size
    seeds = [int(s) for s in cfg.c5_seeds]
    params = dict(**as_params(cfg.c5), vocab_size=vocab, seeds=seeds, level=cfg.level)

    def compute():
        draws = [c5_rows(**as_params(cfg.c5), vocab_size=vocab, seed=s) for s in seeds]
        arrays = {f"reduction_{z}": np.array([[r[f"reduction_{z}"] for r in rows] for rows in draws])
                  for z in REPORTED_NORMALIZATIONS}
        out = []
        for j, r in enumerate(draws[0]):
            row = dict(generator=r["generator"], size=r["size"])
            for z in REPORTED_NORMALIZATIONS:
                col = arrays[f"reduction_{z}"][:, j]
                # a reduction 1 - stress(MDS) / stress(sinusoid) is at most 1
                row[f"reduction_{z}"] = geo.draws_summary(col, cfg.level, bounds=(None, 1.0))
                row[f"holds_{z}"] = int(np.sum(col >= 0.998))
            out.append(C5Draw(**row))
        return C5DrawsRecord(seeds=tuple(seeds), level=cfg.level, rows=tuple(out), **arrays)

    return store_result(settings, "minimal_parametrisation.c5_draws", compute, params, force)
