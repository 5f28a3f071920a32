"""Typed records of what the learned-tables experiments store, read back by
:func:`posgeom.registry.typed.as_record`: each pretrained table's anatomy and its stress against two corpora
(``run_pretrained_tables``, ``run_table_stress``) and the initialisation study (``run_init_study``) of
:mod:`posgeom.experiments.learned_tables`, and the dropout study (``run_dropout_study``) of
:mod:`posgeom.experiments.table_dropout`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .common import StressPair

__all__ = ["TableAnalysis", "TableStress", "StoredTableStress", "StoredInitStudy", "StoredDropoutStudy"]


@dataclass(frozen=True)
class TableAnalysis:
    """One table's :func:`posgeom.geometry.analyse_table` in a stored ``learned_table_anatomy`` entry (the learned
    table or a reference table, each stored at its own key): the statistics a chapter reads, and per position, lag
    or column the arrays it draws (``cos``, the n × n cosine similarity, and ``P``, the table, for the learned table
    only)."""
    n: int
    d: int
    neighbour_cos: float
    neighbour_cos_centered: float
    neighbour_cos_min: float
    neighbour_cos_median: float
    frac_neighbour_above_0_9: float
    lag_below_half: int | None
    decay_spearman: float
    stand_apart: tuple
    isolation_threshold: float
    median_isolation_rest: float
    pc_freq: tuple
    pc_period: tuple
    pc_r2: tuple
    pc_explained: tuple
    offset_ratio: float
    lag_mean: np.ndarray
    lag_q10: np.ndarray
    lag_q90: np.ndarray
    lag_mean_centered: np.ndarray
    isolation: np.ndarray
    row_norm: np.ndarray
    dominant_freq: np.ndarray
    concentration: np.ndarray
    pcs: np.ndarray
    cos: np.ndarray | None = None
    P: np.ndarray | None = None


@dataclass(frozen=True)
class TableStress:
    """One corpus of a stored ``learned_table_stress`` entry: the positions kept, and the stress against the corpus
    of the model's table, of the three reference tables and of MDS."""
    n_kept: int
    table: StressPair
    sinusoidal: StressPair
    random_normal: StressPair
    random_walk: StressPair
    mds: StressPair


@dataclass(frozen=True)
class StoredTableStress:
    """A stored ``learned_table_stress`` entry (one model), typed: its :class:`TableStress` on each corpus (None
    where it was not run)."""
    sst2: TableStress | None = None
    imdb: TableStress | None = None


@dataclass(frozen=True)
class StoredInitStudy:
    """A stored ``run_init_study``, typed: its variants (initialisation and dropout rate) and seeds, every
    variant's tables before and after training (variants, seeds, n, d), its training losses (variants, seeds,
    steps), and the task's distance matrix ``D``."""
    variants: tuple[tuple[str, float], ...]
    seeds: tuple[int, ...]
    losses: np.ndarray
    tables_initial: np.ndarray
    tables_final: np.ndarray
    D: np.ndarray


@dataclass(frozen=True)
class StoredDropoutStudy:
    """A stored ``run_dropout_study``, typed: its dropout rates and seeds, the training sequences, and the times
    each is seen (``passes``)."""
    dropouts: tuple[float, ...]
    seeds: tuple[int, ...]
    n_train: int
    passes: float

    @property
    def rate(self) -> float:
        """The rate compared with no dropout: the largest."""
        return max(self.dropouts)
