"""Typed records of what run_smacof_gain and run_exact_embedding (:mod:`posgeom.experiments.optimal_encoding`) stores,
read back by :func:`posgeom.registry.typed.as_record`."""

from __future__ import annotations

from dataclasses import dataclass


__all__ = ["SmacofGain", "ExactKind", "ExactEmbedding"]


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
