"""Typed records of parts of what the experiments of :mod:`posgeom.experiments.sinusoids_as_mds` store.

:class:`~posgeom.experiments.sinusoids_as_mds.FourierMatch` is read whole (every corpus and array); these read the
corpus list, one corpus's shift statistics and intervals, which tests/test_verdicts_construction.py plants alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...geometry.bootstrap import Interval

__all__ = ["FourierCorpus", "StoredFourier", "ShiftIntervals"]


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
class ShiftIntervals:
    """One corpus of ``run_shift_intervals`` (``at=corpus``; None where not stored)."""

    toeplitz_deviation: Interval | None = None
    circulant_deviation: Interval | None = None
    fourier_match: Interval | None = None
