"""Typed records of what run_equivariance and run_order_task (:mod:`posgeom.experiments.necessity`) store, read back
by :func:`posgeom.registry.typed.as_record`; a model's row is the models layer's own record
(:class:`~posgeom.models.equivariance.EquivarianceRow`, :class:`~posgeom.models.tasks.OrderTaskRow`), which the
experiment stores field by field."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...models.equivariance import EquivarianceRow
from ...models.tasks import OrderTaskRow

__all__ = ["StoredEquivariance", "StoredOrderTask"]


@dataclass(frozen=True)
class StoredEquivariance:
    """A stored :func:`posgeom.experiments.necessity.run_equivariance`, typed: the gaps of each randomly initialised
    encoder keyed by its label (:func:`~posgeom.models.tasks.model_label`, in the order of the run's ``models``), and
    the machine epsilon of the dtype it was computed in (the scale of a gap that is only rounding)."""
    models: dict[str, EquivarianceRow]
    machine_epsilon: float


@dataclass(frozen=True)
class StoredOrderTask:
    """A stored :func:`posgeom.experiments.necessity.run_order_task` (with ``[CLS]`` or without), typed: each model's
    final test accuracy over seeds keyed by its label, the chance level (1/2: every sequence has its reversal with the
    other label), the test sequences, the sequence length (``[CLS]`` included where prepended) and the evaluated
    training steps (n_evals,). The accuracy along training (``"<label>__curve"``) is stored beside it, one array per
    model (:func:`posgeom.chapters.theorem1_necessity.order_task_outcome` reads it)."""
    models: dict[str, OrderTaskRow]
    chance: float
    n_test: int
    seq_len: int
    steps: np.ndarray
