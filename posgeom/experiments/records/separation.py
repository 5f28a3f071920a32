"""Typed records of what the experiments of the chapter "Theorem 4" store.

Views of the stored layouts (records the chapter reads); ``Spread`` is the experiment's own, re-exported.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...geometry.intervals import SeedInterval
from ...registry.typed import stored
from ..separation import Spread

__all__ = ["Spread", "TableState", "SeparationRun"]


@dataclass(frozen=True)
class TableState:
    """A learned table at one step, over seeds (``order_spearman`` None at a tied start: every distance is 0)."""

    raw: Spread
    normalized: Spread
    median: Spread
    order_spearman: Spread | None = None


@dataclass(frozen=True, kw_only=True)
class SeparationRun:
    """A stored :func:`posgeom.experiments.separation.run_separation`: arrays (n_seeds, n_records) at the ``step``.

    Corpus facts are None where they do not apply; the intervals are not stored, a reader that computes them fills
    them (:func:`posgeom.chapters.theorem4_separation.separation_run`).
    """

    weight_decay: float
    seeds: tuple
    initial: TableState
    final: TableState
    random_reference: float = stored("random_reference.mean")  # sep / median of a Gaussian table (mean of draws)
    eval_accuracy: Spread
    masked_loss: Spread | None = None  # MLM only: loss at the masked positions (nats)
    step: np.ndarray
    separation: np.ndarray
    separation_normalized: np.ndarray
    median_distance: np.ndarray
    order_spearman: np.ndarray
    entropy_with_position: float | None = None
    entropy_without_position: float | None = None
    vocab_size: int | None = None
    n_train: int | None = None
    reach: tuple | None = None  # sequences reaching each position (real corpora)
    interval_raw: SeedInterval | None = None  # 95% over seeds of the final separation
    interval_normalized: SeedInterval | None = None  # the same, normalised

