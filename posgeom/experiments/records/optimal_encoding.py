"""Typed records of what the experiments of :mod:`posgeom.experiments.optimal_encoding` store."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...registry.typed import stored

__all__ = ["AlgorithmSummary", "AlgorithmArrays", "StoredComparison", "SmacofGain", "ExactKind", "ExactEmbedding",
           "OneHotStresses"]


@dataclass(frozen=True)
class AlgorithmSummary:
    """Algorithm 1 step by step on the drift corpus (a stored ``run_algorithm_steps``)."""

    B_vs_SS: float = stored("B_vs_SS_max_error")
    min_eig: float = stored("min_eigenvalue")
    full_err: float = stored("full_rank_max_error")
    lift_err: float = stored("lift_max_error")
    rank3_paper: float = stored("rank_k_stress.paper")
    rank3_sf: float = stored("rank_k_stress.scale_free")
    num_rank: int = stored("numerical_rank")
    pop_rank: int = stored("population_rank_tol")
    n: int


@dataclass(frozen=True)
class AlgorithmArrays:
    """The arrays of ``run_algorithm_steps`` drawn: ``P_k`` (n × k), eigenvalues (descending), ``D`` (n × n)."""

    P_k: np.ndarray
    eigenvalues: np.ndarray
    population_eigenvalues: np.ndarray
    D: np.ndarray


@dataclass(frozen=True)
class StoredComparison:
    """A stored ``run_encoding_comparison``: per corpus each encoding's stress under each normalisation."""

    pretrained: str
    stationary: dict[str, dict[str, float]]
    drift: dict[str, dict[str, float]]
    regimes: dict[str, dict[str, float]]
    markov: dict[str, dict[str, float]]
    sst2: dict[str, dict[str, float]]


@dataclass(frozen=True)
class SmacofGain:
    """One corpus of a stored ``run_smacof_gain`` (``at=corpus``), per rank."""

    ranks: tuple[int, ...]
    gain: tuple[float, ...]
    mds_paper: tuple[float, ...]
    mds_scale_free: tuple[float, ...]
    smacof_paper: tuple[float, ...]
    n_iter: tuple[int, ...]


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
class OneHotStresses:
    """A stored ``run_one_hot``."""

    mds_stress: float
    rescaled_stress: float
    smacof_stress: float
    mds_scale_free: float
    smacof_n_iter: int
