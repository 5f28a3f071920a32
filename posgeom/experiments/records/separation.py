"""Typed records of what run_separation and run_pretrained_separation (:mod:`posgeom.experiments.separation`),
run_separation_converged (:mod:`posgeom.experiments.separation_converged`) and run_factorisation_gap
(:mod:`posgeom.experiments.factorisation`) store, read back by :func:`posgeom.registry.typed.as_record`."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...geometry.intervals import SeedInterval
from ...registry.typed import stored

__all__ = ["Spread", "TableState", "SeparationRun", "PretrainedTable", "ConvergedRun", "StoredConverged",
           "FactorisationOutcome"]


@dataclass(frozen=True)
class Spread:
    """A quantity over the training seeds: mean, standard deviation (ddof 1), lowest and highest seed."""
    mean: float
    std: float
    min: float
    max: float


@dataclass(frozen=True)
class TableState:
    """A learned table at one step, over seeds: separation (raw, over the median pairwise distance), that median,
    and Spearman's ρ of the distances with the offset ``|i − j|`` (None at a tied start: every distance is 0)."""
    raw: Spread
    normalized: Spread
    median: Spread
    order_spearman: Spread | None = None


@dataclass(frozen=True, kw_only=True)
class SeparationRun:
    """A stored :func:`posgeom.experiments.separation.run_separation`, typed: arrays ``separation``,
    ``separation_normalized``, ``median_distance``, ``order_spearman`` of shape (n_seeds, n_records) at the training
    steps ``step``; the corpus facts None where they do not apply (entropies: synthetic MLM corpora; vocabulary,
    training size and reach: real corpora). The intervals are not stored: a reader that computes them fills them
    (:func:`posgeom.chapters.theorem4_separation.separation_run`)."""
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


@dataclass(frozen=True)
class PretrainedTable:
    """A stored :func:`posgeom.experiments.separation.run_pretrained_separation`, typed: per number of first positions
    ``n`` the separation, median distance, closest pair and Gaussian reference (``by_n``, as stored: a column per
    ``n``, keyed by its text); each row's distance to its nearest other row."""
    pretrained: str
    by_n: pd.DataFrame
    nearest: np.ndarray


@dataclass(frozen=True)
class ConvergedRun:
    """One decision seed of Theorem 4's CPU design as stored: log10 sep(P) over the resolved pairs under the
    conditions (``a``) and on the stationary corpus (``b``), their difference, the same over the unresolved
    pairs, the control's separation, and per setup the separation over all pairs and the final loss."""
    seed: int
    a: float
    b: float
    difference: float
    unresolved: float
    control: float
    sep_all: dict[str, float]
    loss: dict[str, float]
    order_spearman: float


@dataclass(frozen=True)
class StoredConverged:
    """A stored :func:`posgeom.experiments.separation_converged.run_separation_converged`, typed
    (:func:`posgeom.registry.typed.as_record`)."""
    ceiling: float
    least_resolved: float
    n_resolved: int
    n_pairs: int
    runs: tuple[ConvergedRun, ...]
    difference: SeedInterval


@dataclass(frozen=True)
class FactorisationOutcome:
    """A stored :func:`~posgeom.experiments.factorisation.run_factorisation_gap`, typed: the real gap ``relative``
    (m,) per kept position ``positions``, the placebos' (n_placebo, m) and their 95th percentile (m,); medians over
    positions (``real``, ``placebo``) and over pairs of positions (``pair_*``)."""
    pretrained: str
    n_texts: int
    positions: np.ndarray = stored("real__positions")
    relative: np.ndarray = stored("real__relative")
    placebo_relative: np.ndarray = stored("placebo__relative")
    placebo_band95: np.ndarray = stored("placebo__band95")
    real: float = stored("real.relative")
    placebo: float = stored("placebo.relative")
    pair_real: float = stored("real.pair_relative")
    pair_placebo: float = stored("placebo.pair_relative")
    above: int = stored("positions_above_placebo_95")  # positions whose real gap tops the placebos' 95th percentile
    npos: int = field(init=False)  # the positions kept

    def __post_init__(self):
        object.__setattr__(self, "npos", len(self.positions))
