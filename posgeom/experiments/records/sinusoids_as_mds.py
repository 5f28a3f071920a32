"""Typed records of what the experiments of :mod:`posgeom.experiments.sinusoids_as_mds` store."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...geometry.bootstrap import Interval
from ..sinusoids_as_mds import StoredSweep

__all__ = ["FourierCorpus", "StoredFourier", "Eigenvectors", "ShiftIntervals", "StoredSweep"]


@dataclass(frozen=True)
class FourierCorpus:
    """One corpus of ``run_fourier_match`` (``at=corpus``)."""

    toeplitz_deviation: float
    circulant_deviation: float
    mean_sinusoid_r2: float
    fourier_match: float
    sinusoidal_scale_free: float
    mds_scale_free: float
    eigenvalue_share: float


@dataclass(frozen=True)
class StoredFourier:
    """A stored ``run_fourier_match``: the corpora it measured, and the width-50 sinusoidal table's frequencies."""

    corpora: tuple[str, ...]
    vaswani_frequencies: tuple[float, ...]


@dataclass(frozen=True)
class Eigenvectors:
    """One corpus's top MDS eigenvectors (positions × vectors) and sinusoid fits (``omega``: radians per position)."""

    U: np.ndarray
    sinusoid_r2: tuple
    omega: np.ndarray


@dataclass(frozen=True)
class ShiftIntervals:
    """One corpus of ``run_shift_intervals`` (``at=corpus``; None where not stored)."""

    toeplitz_deviation: Interval | None = None
    circulant_deviation: Interval | None = None
    fourier_match: Interval | None = None
