"""Typed records of what the experiments of :mod:`posgeom.experiments.optimal_encoding` store."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...registry.typed import stored
from ..optimal_encoding import ExactEmbedding, ExactKind, SmacofGain, StoredComparison

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
class OneHotStresses:
    """A stored ``run_one_hot``."""

    mds_stress: float
    rescaled_stress: float
    smacof_stress: float
    mds_scale_free: float
    smacof_n_iter: int
