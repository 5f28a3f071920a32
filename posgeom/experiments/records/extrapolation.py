"""Typed records of what run_undertrained_tails (:mod:`posgeom.experiments.undertrained_tails`) stores, read back by
:func:`posgeom.registry.typed.as_record`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


__all__ = ["TailCondition", "StoredTails"]


@dataclass(frozen=True)
class TailCondition:
    """One condition of a stored ``run_undertrained_tails``: per seed, the head and tail quantities; and its share of
    long training sequences and their number."""

    accuracy_head: tuple[float, ...]
    accuracy_tail: tuple[float, ...]
    movement_head: tuple[float, ...]
    movement_tail: tuple[float, ...]
    neighbour_cos_head: tuple[float, ...]
    neighbour_cos_tail: tuple[float, ...]
    frac_long: float
    n_train: int


@dataclass(frozen=True)
class StoredTails:
    """A stored ``run_undertrained_tails``, typed: its conditions, the tail's first position, and the arrays."""

    conditions: tuple[str, ...]
    boundary: int
    reach: np.ndarray
    movement: np.ndarray
