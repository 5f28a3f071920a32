"""Typed records of what several experiments alike: bootstrap intervals (run_comparison_intervals,
run_stress_intervals, run_violation_intervals) and a stress under both normalisations stores, read back by
:func:`posgeom.registry.typed.as_record`."""

from __future__ import annotations

from dataclasses import dataclass

from ...geometry.bootstrap import Interval
from ...registry.typed import stored

__all__ = ["BootstrapIntervals", "StressPair"]


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
