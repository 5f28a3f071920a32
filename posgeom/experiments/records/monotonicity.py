"""Typed records of what run_monotonicity_table and run_ntk store."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...registry.typed import stored
from ..monotonicity import MonotonicityRow
from ..settings import find

__all__ = ["OrderTable", "NTKRun"]


@dataclass(frozen=True)
class OrderTable:
    """A stored ``run_monotonicity_table`` of one corpus."""

    model: str
    closest_rank: int
    closest_violation: float
    rows: tuple[MonotonicityRow, ...]
    mds_ranks: np.ndarray
    mds_violation: np.ndarray
    random_violation: np.ndarray

    def row(self, encoding: str) -> MonotonicityRow:
        """The row of ``encoding``."""
        return find(self.rows, encoding=encoding)


@dataclass(frozen=True)
class NTKRun:
    """One stored ``run_ntk`` (``regime``, ``seed``, ``model`` given by the reader; curves over ``step``)."""

    regime: str
    seed: int
    model: str
    final_train_loss: float
    kernel_change: float = stored("final.kernel_change")
    kernel_change_table: float = stored("final.kernel_change_table")
    table_motion: float = stored("final.table_motion")
    violation: float = stored("final.violation")
    violation_delta: float = stored("final.violation_delta")
    step: np.ndarray
    kernel_change_curve: np.ndarray = stored("kernel_change")
    violation_curve: np.ndarray = stored("violation")
    violation_delta_curve: np.ndarray = stored("violation_delta")
