"""Typed records of what run_monotonicity_table (:mod:`posgeom.experiments.monotonicity`) stores, read back by
:func:`posgeom.registry.typed.as_record`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..monotonicity import MonotonicityRow
from ..settings import find

__all__ = ["OrderTable"]


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
