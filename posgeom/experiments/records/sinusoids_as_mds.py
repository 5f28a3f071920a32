"""Typed records of what run_fourier_match, run_shift_intervals and run_stationarity_sweep
(:mod:`posgeom.experiments.sinusoids_as_mds`) store, read back by :func:`posgeom.registry.typed.as_record`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...geometry.bootstrap import Interval

__all__ = ["FourierCorpus", "StoredFourier", "Eigenvectors", "ShiftIntervals", "StoredSweep"]


@dataclass(frozen=True)
class FourierCorpus:
    """One corpus of ``run_fourier_match`` (``at=corpus``): its D's Toeplitz and circulant deviations, the mean R²
    of the sinusoids fitted to its top MDS eigenvectors, their Fourier match, the scale-free stresses of the
    sinusoidal table and of MDS at the same rank, and the eigenvalue share of the top vectors."""
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
    """One corpus of ``run_fourier_match`` (``at=corpus, arrays_at=corpus``): its top MDS eigenvectors
    (positions × vectors), the R² of the sinusoid fitted to each, and the frequencies of those fits (radians per
    position)."""
    U: np.ndarray
    sinusoid_r2: tuple
    omega: np.ndarray


@dataclass(frozen=True)
class ShiftIntervals:
    """One corpus of ``run_shift_intervals`` (``at=corpus``): the bootstrap interval of each shift statistic
    (:data:`posgeom.geometry.SHIFT_STATISTICS`; None where not stored)."""
    toeplitz_deviation: Interval | None = None
    circulant_deviation: Interval | None = None
    fourier_match: Interval | None = None


@dataclass(frozen=True)
class StoredSweep:
    """A stored ``run_stationarity_sweep``: at each mixing weight t (0: the Markov corpus, 1: the drift one), the
    Toeplitz and circulant deviations, Fourier match, mean sinusoid R², and the scale-free stresses of the
    sinusoidal table and of rank-6 MDS."""
    t: tuple[float, ...]
    toeplitz_deviation: tuple[float, ...]
    circulant_deviation: tuple[float, ...]
    fourier_match: tuple[float, ...]
    mean_sinusoid_r2: tuple[float, ...]
    sinusoidal_scale_free: tuple[float, ...]
    mds_scale_free: tuple[float, ...]
