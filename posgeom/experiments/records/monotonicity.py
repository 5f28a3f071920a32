"""The typed record of what run_ntk stores, as the chapter reads it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...registry.typed import stored

__all__ = ["NTKRun"]


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
