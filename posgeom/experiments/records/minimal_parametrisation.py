"""Typed records of what :mod:`posgeom.experiments.minimal_parametrisation` and its training comparison store.

``RankReadings``, ``FamilyRanks``, ``SST2Ranks``, ``StoredRanks``, ``PlantedRank``, ``StoredValidation``,
``C5Draw`` and ``EncodingAccuracy`` are the experiments' own records, re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...geometry.intervals import SeedInterval
from ...registry.typed import stored
from ..lowrank_training import EncodingAccuracy
from ..minimal_parametrisation import (C5Draw, FamilyRanks, PlantedRank, RankReadings, SST2Ranks, StoredRanks,
                                       StoredValidation)
from ..corpus_geometry import StressPair

__all__ = ["RankReadings", "FamilyRanks", "SST2Ranks", "StoredRanks", "CrossFitted", "PlantedRank",
    "StoredValidation", "StressCurve", "C5Row", "StoredC5", "C5Draw", "StoredC5Draws", "EncodingAccuracy",
    "TrainedRun", "StoredTraining"]


@dataclass(frozen=True)
class CrossFitted:
    """One corpus of ``run_effective_rank`` (``at=corpus, arrays_at=setting``); ``eigenvalues``: splits × directions."""

    cross_fitted: tuple[str, ...]
    cross_fitted_threshold: tuple[float, ...]
    eigenvalues: np.ndarray = stored("cross_fitted")


@dataclass(frozen=True)
class StressCurve:
    """One corpus of ``run_stress_vs_rank`` (``at=corpus, arrays_at=corpus``; ``corpus`` is given, not stored)."""

    corpus: str
    mds: np.ndarray = stored("scale_free")
    encodings: dict[str, StressPair]


@dataclass(frozen=True)
class C5Row:
    """One setting of ``run_c5`` (a generator at a sample size; None: its population)."""

    generator: str
    size: int | None
    reduction_paper: float
    reduction_scale_free: float
    mds_scale_free: float
    sin_scale_free: float


@dataclass(frozen=True)
class StoredC5:
    """A stored ``run_c5``: the parameter counts and savings, and every setting."""

    n: int
    d: int
    r: int
    n_params_full: int
    n_params_lowrank: int
    savings: float
    rows: tuple[C5Row, ...]


@dataclass(frozen=True)
class StoredC5Draws:
    """A stored ``run_c5_draws``."""

    seeds: tuple[int, ...]
    level: float
    rows: tuple[C5Draw, ...]


@dataclass(frozen=True)
class TrainedRun:
    """One trained run of ``run_lowrank_training`` (``stress_scale_free`` None where the task has no geometry)."""

    task: str
    encoding: str
    seed: int
    test_accuracy: float
    stress_scale_free: float | None


@dataclass(frozen=True)
class StoredTraining:
    """A stored ``run_lowrank_training``: per task and encoding the accuracy, the gap learned − (r = 1), every run."""

    summary: dict[str, dict[str, EncodingAccuracy]]
    gap: SeedInterval = stored("gaps.synthetic.learned - lowrank r=1")
    level: float
    runs: tuple[TrainedRun, ...]
