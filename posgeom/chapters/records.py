"""Typed views of the stored results the chapters read, for :func:`posgeom.registry.typed.as_record`.

A stored result is plain data; each class here names the fields a chapter reads from one experiment's result
(a view: the result may store more) and their types, so that a chapter quotes ``ranks.drift.population``
instead of ``result.values["drift"]["population"]``. A chapter's own typed views (whose fields it glues) stay
in the chapter module; these are the ones whose only purpose is the read.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..geometry.bootstrap import Interval
from ..geometry.intervals import PilotPlan, SeedInterval
from ..registry.typed import stored
from ..experiments.monotonicity import MonotonicityRow
from ..experiments.settings import find

__all__ = [
    "StoredSST2Geometry", "FamilyGeometry", "StoredSyntheticGeometry", "RankReadings", "FamilyRanks", "SST2Ranks", "StoredRanks", "C5Row", "StoredC5", "C5Draw", "StoredC5Draws",
    "EncodingAccuracy", "TrainedRun", "StoredTraining", "ConvergedRun", "StoredConverged", "PairedRun", "StoredDesign",
    "InitRun", "StoredInitDesign", "DropoutRun", "StoredDropoutDesign", "StoredLowrankDesign", "OrderTable",
    "NoiseAwareRank", "DrawSpread", "ResolvableSplits", "ClosestConstruction", "AlibiSearch", "SmacofGain",
    "ExactKind", "ExactEmbedding",
]


# Part II, *Corpus geometry*: run_sst2_geometry, run_synthetic_geometry


@dataclass(frozen=True)
class StoredSST2Geometry:
    """A stored ``run_sst2_geometry``, typed: the sequences counted, the mean distance from position 0, the
    rms of D and of the noise floor F, the share of pairs with D > 2F, and the arrays D, F, positions, reach."""

    n_sequences: int
    mean_D_from_0: float
    rms_D: float
    rms_F: float
    frac_above_2F: float
    D: np.ndarray
    F: np.ndarray
    positions: np.ndarray
    reach: np.ndarray


@dataclass(frozen=True)
class FamilyGeometry:
    """A synthetic family's geometry against its noise floor: the share of pairs with D > 2F, the squared
    distance above the population's against the squared floor, and the root-mean-square distance."""

    frac_above_2F: float
    excess_sq: float
    mean_F_sq: float
    rms_D: float

    @property
    def excess_ratio(self) -> float:
        """Squared distance above the population's, over the squared noise floor."""
        return self.excess_sq / self.mean_F_sq


@dataclass(frozen=True)
class StoredSyntheticGeometry:
    """A stored ``run_synthetic_geometry``, typed: each synthetic family's :class:`FamilyGeometry`."""

    drift: FamilyGeometry
    stationary: FamilyGeometry
    markov: FamilyGeometry
    regimes: FamilyGeometry


# Part II, *The optimal encoding*: run_smacof_gain


@dataclass(frozen=True)
class SmacofGain:
    """One corpus of a stored ``run_smacof_gain`` (``as_record(result, SmacofGain, at=corpus)``): per rank,
    SMACOF's relative gain over classical MDS ("paper" stress), MDS's stress under both normalisations, SMACOF's
    "paper" stress and its iterations."""

    ranks: tuple[int, ...]
    gain: tuple[float, ...]
    mds_paper: tuple[float, ...]
    mds_scale_free: tuple[float, ...]
    smacof_paper: tuple[float, ...]
    n_iter: tuple[int, ...]


@dataclass(frozen=True)
class ExactKind:
    """Full-rank MDS under one Hellinger distance: its largest error, the negative mass it clipped, B's smallest
    over largest eigenvalue, the negative eigenvalues beyond rounding, and B's numerical rank."""

    full_rank_max_error: float
    clipped_mass: float
    min_over_max_eigenvalue: float
    n_negative_beyond_rounding: int
    numerical_rank: int


@dataclass(frozen=True)
class ExactEmbedding:
    """One corpus of a stored ``run_exact_embedding`` (``as_record(result, ExactEmbedding, at=corpus)``): its
    positions and full-rank MDS under the chord and the geodesic distance."""

    n: int
    chord: ExactKind
    geodesic: ExactKind


# Part II, *Minimal parametrisation*: run_effective_rank, run_c5, run_c5_draws


@dataclass(frozen=True)
class RankReadings:
    """A corpus's rank readings as ``run_effective_rank`` stores them, one per setting (a synthetic family's
    sample sizes; SST-2's preprocessings): by tolerance, by mass, by stress, and the cross-fitted noise-aware
    rank as text."""

    tol: tuple[int, ...]
    mass: tuple[int, ...]
    stress: tuple[int, ...]
    cross_fitted: tuple[str, ...]


@dataclass(frozen=True)
class FamilyRanks(RankReadings):
    """A synthetic family's readings at each sample size, and its population's rank."""

    sizes: tuple[int, ...]
    population: int


@dataclass(frozen=True)
class SST2Ranks(RankReadings):
    """SST-2's readings under each preprocessing (special tokens, min_count, positions kept), and the sequences
    counted."""

    special: tuple[str, ...]
    min_count: tuple[int, ...]
    n_kept: tuple[int, ...]
    n_sequences: int


@dataclass(frozen=True)
class StoredRanks:
    """A stored ``run_effective_rank``, typed (:func:`posgeom.registry.typed.as_record`)."""

    drift: FamilyRanks
    stationary: FamilyRanks
    regimes: FamilyRanks
    markov: FamilyRanks
    sst2: SST2Ranks


@dataclass(frozen=True)
class C5Row:
    """One setting of ``run_c5`` (a generator at a sample size, None: its population): the rank-3 MDS's stress
    reduction against the sinusoidal table under each normalisation, and the two stresses."""

    generator: str
    size: int | None
    reduction_paper: float
    reduction_scale_free: float
    mds_scale_free: float
    sin_scale_free: float


@dataclass(frozen=True)
class StoredC5:
    """A stored ``run_c5``, typed (:func:`posgeom.registry.typed.as_record`): the parameter count's n, d, r, a full
    n × d table's parameters against its rank-r factors' and the savings, and every setting."""

    n: int
    d: int
    r: int
    n_params_full: int
    n_params_lowrank: int
    savings: float
    rows: tuple[C5Row, ...]


@dataclass(frozen=True)
class C5Draw:
    """One setting of ``run_c5_draws``: in how many generator draws the reduction reaches 99.8 % under each
    normalisation, and each reduction over the draws (as stored: an interval, or mean and sd)."""

    generator: str
    size: int | None
    holds_paper: int
    holds_scale_free: int
    reduction_paper: dict
    reduction_scale_free: dict


@dataclass(frozen=True)
class StoredC5Draws:
    """A stored ``run_c5_draws``, typed: the generator draws' seeds, the intervals' level, every setting."""

    seeds: tuple[int, ...]
    level: float
    rows: tuple[C5Draw, ...]


@dataclass(frozen=True)
class EncodingAccuracy:
    """One encoding of ``run_lowrank_training`` on one task, over its seeds: accuracy and training loss (mean and
    sd), the seeds, and its trainable positional parameters (the stored order: the chapter's tables list them so)."""

    accuracy_mean: float
    accuracy_std: float
    loss_mean: float
    loss_std: float
    n_seeds: int
    position_params: int


@dataclass(frozen=True)
class TrainedRun:
    """One trained run of ``run_lowrank_training``: its task, encoding and seed, test accuracy, and the stress of
    its trained table against the task's geometry (None where it has none)."""

    task: str
    encoding: str
    seed: int
    test_accuracy: float
    stress_scale_free: float | None


@dataclass(frozen=True)
class StoredTraining:
    """A stored ``run_lowrank_training``, typed: per task and encoding the accuracy over seeds, the paired gap
    learned − (r = 1) on the marker-order task with its interval, and every run."""

    summary: dict[str, dict[str, EncodingAccuracy]]
    gap: SeedInterval = stored("gaps.synthetic.learned - lowrank r=1")
    level: float
    runs: tuple[TrainedRun, ...]


# Part I, *Theorem 4*: run_separation_converged


@dataclass(frozen=True)
class ConvergedRun:
    """One decision seed of Theorem 4's CPU design as stored: log10 sep(P) over the resolved pairs under the
    conditions (``a``) and on the stationary corpus (``b``), their difference, the same over the unresolved
    pairs, the control's separation, and per setup the separation over all pairs and the final loss."""

    seed: int
    a: float
    b: float
    difference: float
    unresolved: float
    control: float
    sep_all: dict[str, float]
    loss: dict[str, float]
    order_spearman: float


@dataclass(frozen=True)
class StoredConverged:
    """A stored :func:`posgeom.experiments.separation_converged.run_separation_converged`, typed
    (:func:`posgeom.registry.typed.as_record`)."""

    ceiling: float
    least_resolved: float
    n_resolved: int
    n_pairs: int
    runs: tuple[ConvergedRun, ...]
    difference: SeedInterval


# Every powered design: run_paired_design


@dataclass(frozen=True)
class PairedRun:
    """One seed of a paired design: the two variants' measures and their difference ``a − b`` (a design's run
    stores more, its own measures; this is what every chapter reads)."""

    a: float
    b: float
    difference: float


@dataclass(frozen=True)
class StoredDesign:
    """A stored :func:`posgeom.experiments.paired_design.run_paired_design`, typed
    (:func:`posgeom.registry.typed.as_record`): the plan its pilot sized, the pilot's and the decision's runs,
    the paired interval over the decision's seeds and the seconds of each stage."""

    plan: PilotPlan
    pilot: tuple[PairedRun, ...]
    runs: tuple[PairedRun, ...]
    difference: SeedInterval
    seconds: dict[str, float]


@dataclass(frozen=True)
class InitRun(PairedRun):
    """A seed of S7's design (``run_init_powered``): besides the final losses, each initialisation's steps to the
    loss threshold (None where it never reached it)."""

    steps_small: float | None
    steps_large: float | None


@dataclass(frozen=True)
class StoredInitDesign(StoredDesign):
    """A stored ``run_init_powered``: a :class:`StoredDesign` whose runs are :class:`InitRun`, and its threshold."""

    runs: tuple[InitRun, ...]
    loss_threshold: float


@dataclass(frozen=True)
class DropoutRun(PairedRun):
    """A seed of S9's design (``run_dropout_powered``): besides the held-out losses, the generalisation gap
    without dropout."""

    gap_none: float


@dataclass(frozen=True)
class StoredDropoutDesign(StoredDesign):
    """A stored ``run_dropout_powered``: a :class:`StoredDesign` whose runs are :class:`DropoutRun`, and the
    dropout rate."""

    runs: tuple[DropoutRun, ...]
    rate: float


@dataclass(frozen=True)
class StoredLowrankDesign(StoredDesign):
    """A stored ``run_lowrank_powered`` (C5's design): a :class:`StoredDesign`, the decision seeds whose run
    stalled per table, and the gap over the seeds where both tables fitted (None: too few seeds)."""

    stalled: dict[str, tuple[int, ...]]
    fitted_gap: SeedInterval | None


# Part III, *Monotonicity*: run_monotonicity_table


@dataclass(frozen=True)
class OrderTable:
    """A stored ``run_monotonicity_table`` of one corpus, typed: the pretrained model, MDS at the rank closest
    to the paper's violation rate, every encoding's row, and the violation rates of MDS at each rank of
    ``mds_ranks`` and of the random tables."""

    model: str
    closest_rank: int
    closest_violation: float
    rows: tuple[MonotonicityRow, ...]
    mds_ranks: np.ndarray
    mds_violation: np.ndarray
    random_violation: np.ndarray

    def row(self, encoding: str) -> MonotonicityRow:
        """The row of ``encoding``."""
        return find(self.rows, encoding=encoding)


# Part III, *Real corpora*: run_noise_aware_rank, run_resolvable_splits, run_alibi_search


@dataclass(frozen=True)
class NoiseAwareRank:
    """A stored ``run_noise_aware_rank``, typed: the rank in words, its interval and level, the first cross-fitted
    direction's share, and the positions it rests on."""

    text: str
    interval: tuple[int, int]
    level: float
    first_share: float
    n_positions: int


@dataclass(frozen=True)
class DrawSpread:
    """A statistic over draws: mean, sample sd, lowest and highest."""

    mean: float
    sd: float
    min: float
    max: float


@dataclass(frozen=True)
class ResolvableSplits:
    """A stored ``run_resolvable_splits``, typed: the cross-half splits used (and skipped), and each statistic's
    spread over them."""

    seeds: tuple[int, ...]
    skipped: tuple[int, ...]
    spread: dict[str, DrawSpread]


@dataclass(frozen=True)
class ClosestConstruction:
    """One of the constructions of ALiBi closest to the paper's value (``run_alibi_search``): whether ALiBi has
    the lowest stress in it."""

    alibi_best: bool


@dataclass(frozen=True)
class AlibiSearch:
    """A stored ``run_alibi_search``, typed: the constructions tried and how many distinct values they give, how
    many come within each distance of the paper's value (by distance, as text: ``"0.01"``), the share where
    ALiBi is lowest, and the closest constructions."""

    n_constructions: int
    n_distinct: int
    n_within: dict[str, int]
    alibi_best_share: float
    closest: tuple[ClosestConstruction, ...]


# ---------------------------------------------------------------------------------------------------------------
# Issue #46, typed reads the chapters share: the views two chapters read, and ALiBi's choices (the chapter on real
# corpora is near the 600-line ceiling). The views one chapter alone reads are in its module.

__all__ += ["BootstrapIntervals", "StressPair", "AlibiParabola", "AlibiChoice", "StoredAlibiChoices", "StoredStressTable",
            "TableStress", "StoredTableStress", "TailCondition", "StoredTails", "HeuristicsRun", "StoredHeuristicsDesign"]


# Parts II and III, *The optimal encoding*, *Real corpora* and *Monotonicity*: run_comparison_intervals,
# run_stress_intervals, run_violation_intervals


@dataclass(frozen=True)
class BootstrapIntervals:
    """Bootstrap intervals as ``run_violation_intervals`` (``as_record(result, BootstrapIntervals)``),
    ``run_stress_intervals`` and ``run_comparison_intervals`` (``at=corpus``) store them: each statistic's
    (``"<encoding>|<normalisation>"`` for a stress), and each difference's between two (``"<a>-<b>"``, with
    ``"|<normalisation>"`` for a stress)."""

    statistics: dict[str, Interval]
    differences: dict[str, Interval]
    n_used: int                     # the replicates that entered the intervals
    n_folds: int | None = stored("interval.n_folds", default=None)  # the folds resampled, where stored


@dataclass(frozen=True)
class StressPair:
    """An encoding's stress under the paper's normalisation and the scale-free one."""

    paper: float
    scale_free: float


@dataclass(frozen=True)
class AlibiParabola:
    """ALiBi's "paper" stress as a parabola in its slope m under one set of choices (``run_alibi_choices``): the
    convention, positions and special tokens, its minimum and best slope, the slopes that reach the paper's
    value, its coefficients (sums of a², a·d and d²) and the positions kept (fields in the stored order: the
    chapter's tables list them so)."""

    kind: str
    m_minus: float
    m_plus: float
    m_star: float
    minimum: float
    n: int
    n_kept: int
    saa: float
    sad: float
    sdd: float
    special: str


@dataclass(frozen=True)
class AlibiChoice:
    """One combination of ALiBi's unstated choices (``run_alibi_choices``): heads, convention, positions, both
    stresses, the slope and how it was chosen, special tokens (in the stored order)."""

    heads: int
    kind: str
    n: int
    paper: float
    scale_free: float
    slope: float
    slope_choice: str
    special: str


@dataclass(frozen=True)
class StoredAlibiChoices:
    """A stored ``run_alibi_choices``, typed: the parabola under each set of choices, every combination, and the
    paper's value."""

    parabolas: tuple[AlibiParabola, ...]
    rows: tuple[AlibiChoice, ...]
    target: float


@dataclass(frozen=True)
class StoredStressTable:
    """What the chapter reads of a stored ``run_stress_table`` besides its rows
    (:func:`posgeom.experiments.real_corpora.stress_records`): the ALiBi head of lowest stress, each head's slope
    and "paper" stress, and the ranks at which SMACOF was compared with MDS."""

    best_head: int
    alibi_slopes: np.ndarray
    alibi_head_paper: np.ndarray
    smacof_k: np.ndarray


# Part IV, *Learned tables in practice*: run_table_stress


@dataclass(frozen=True)
class TableStress:
    """One corpus of a stored ``learned_table_stress`` entry: the positions kept, and the stress against the corpus
    of the model's table, of the three reference tables and of MDS."""

    n_kept: int
    table: StressPair
    sinusoidal: StressPair
    random_normal: StressPair
    random_walk: StressPair
    mds: StressPair


@dataclass(frozen=True)
class StoredTableStress:
    """A stored ``learned_table_stress`` entry (one model), typed: its :class:`TableStress` on each corpus (None
    where it was not run)."""

    sst2: TableStress | None = None
    imdb: TableStress | None = None


# Part IV, *When learned tables fail*: run_undertrained_tails, run_heuristics_powered


@dataclass(frozen=True)
class TailCondition:
    """One condition of a stored ``run_undertrained_tails``: per seed, the head and tail quantities; and its share of
    long training sequences and their number."""

    accuracy_head: tuple[float, ...]
    accuracy_tail: tuple[float, ...]
    movement_head: tuple[float, ...]
    movement_tail: tuple[float, ...]
    neighbour_cos_head: tuple[float, ...]
    neighbour_cos_tail: tuple[float, ...]
    frac_long: float
    n_train: int


@dataclass(frozen=True)
class StoredTails:
    """A stored ``run_undertrained_tails``, typed: its conditions, the tail's first position, and the arrays."""

    conditions: tuple[str, ...]
    boundary: int
    reach: np.ndarray
    movement: np.ndarray


@dataclass(frozen=True)
class HeuristicsRun(PairedRun):
    """A decision seed of S6's design: besides ``a`` (the best heuristic) and ``b`` (the table trained at the longer
    length), each heuristic's accuracy there (None: not run)."""

    reuse_last: float | None = None
    interpolate: float | None = None
    new_rows: float | None = None


@dataclass(frozen=True)
class StoredHeuristicsDesign(StoredDesign):
    """A stored ``run_heuristics_powered``: a :class:`StoredDesign` whose runs are :class:`HeuristicsRun`, each
    heuristic's paired interval, the training length ``L`` and the longer ``length``."""

    runs: tuple[HeuristicsRun, ...]
    heuristics: dict[str, SeedInterval]
    length: int
    L: int
