"""Typed records shared by several chapters: bootstrap intervals as the ``run_*_intervals`` store them."""

from __future__ import annotations

from dataclasses import dataclass

from ...geometry.bootstrap import Interval
from ...registry.typed import stored

__all__ = ["BootstrapIntervals"]


@dataclass(frozen=True)
class BootstrapIntervals:
    """Bootstrap intervals as the ``run_*_intervals`` store them: per statistic and per difference ``"<a>-<b>"``."""

    statistics: dict[str, Interval]
    differences: dict[str, Interval]
    n_used: int                     # the replicates that entered the intervals
    n_folds: int | None = stored("interval.n_folds", default=None)  # the folds resampled, where stored
