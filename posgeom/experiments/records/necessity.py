"""Typed records of what :mod:`posgeom.experiments.necessity` stores (a row is the models layer's own record)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...models.equivariance import EquivarianceRow
from ...models.tasks import OrderTaskRow

__all__ = ["StoredEquivariance", "StoredOrderTask"]


@dataclass(frozen=True)
class StoredEquivariance:
    """A stored :func:`posgeom.experiments.necessity.run_equivariance`; ``machine_epsilon``: the scale of rounding."""

    models: dict[str, EquivarianceRow]
    machine_epsilon: float


@dataclass(frozen=True)
class StoredOrderTask:
    """A stored :func:`posgeom.experiments.necessity.run_order_task`; the curves are stored beside it, one per model."""

    models: dict[str, OrderTaskRow]
    chance: float
    n_test: int
    seq_len: int
    steps: np.ndarray
