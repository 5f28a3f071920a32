"""Typed records of what run_effective_rank, run_rank_validation, run_stress_vs_rank, run_c5, run_c5_draws
(:mod:`posgeom.experiments.minimal_parametrisation`) and the training comparison
(:mod:`posgeom.experiments.lowrank_training`) store, read back by :func:`posgeom.registry.typed.as_record`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...geometry.intervals import SeedInterval
from ...registry.typed import stored
from .common import StressPair

__all__ = ["RankReadings", "FamilyRanks", "SST2Ranks", "StoredRanks", "CrossFitted", "PlantedRank",
    "StoredValidation", "StressCurve", "C5Row", "StoredC5", "C5Draw", "StoredC5Draws", "EncodingAccuracy",
    "TrainedRun", "StoredTraining"]


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
class CrossFitted:
    """One corpus of ``run_effective_rank`` (``at=corpus, arrays_at=setting``): the cross-fitted rank at each setting
    as text, its threshold, and the cross-fitted eigenvalues (splits × directions) of the setting read."""
    cross_fitted: tuple[str, ...]
    cross_fitted_threshold: tuple[float, ...]
    eigenvalues: np.ndarray = stored("cross_fitted")


@dataclass(frozen=True)
class PlantedRank:
    """One planted corpus of ``run_rank_validation``: the estimate (None: undetermined), its interval, the signal."""
    estimate: int | None
    interval: tuple[int, int]
    rank: int
    size: int
    smallest_signal: float
    strength: float
    text: str
    threshold: float


@dataclass(frozen=True)
class StoredValidation:
    """A stored ``run_rank_validation``, typed: every planted-rank case, in the stored order."""
    rows: tuple[PlantedRank, ...]


@dataclass(frozen=True)
class StressCurve:
    """One corpus of ``run_stress_vs_rank`` (``at=corpus, arrays_at=corpus``; ``corpus`` is given, not stored):
    rank-k MDS's scale-free stress (k = 1, 2, ...), each encoding's two."""
    corpus: str
    mds: np.ndarray = stored("scale_free")
    encodings: dict[str, StressPair]


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
