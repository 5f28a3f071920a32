"""Typed records of what run_monotonicity_table (:mod:`posgeom.experiments.monotonicity`) and run_ntk
(:mod:`posgeom.experiments.monotonicity_ntk`) store, read back by :func:`posgeom.registry.typed.as_record`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...registry.typed import stored
from ..monotonicity import MonotonicityRow
from ..settings import find

__all__ = ["OrderTable", "NTKRun"]


@dataclass(frozen=True)
class OrderTable:
    """A stored ``run_monotonicity_table`` of one corpus, typed: the pretrained model, MDS at the rank closest
    to the paper's violation rate, every encoding's row, and the violation rates of MDS at each rank of
    ``mds_ranks`` and of the random tables."""
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
    """One stored NTK run (``run_ntk``), typed: the final values, and along training (arrays over ``step``) the
    kernel's relative change and the violation rates of the table and of its displacement. ``regime``, ``seed`` and
    ``model`` are given by the reader (the run's options and manifest)."""
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
