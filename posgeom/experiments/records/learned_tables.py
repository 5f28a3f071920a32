"""Typed records of what the learned-table experiments (anatomy, stress, initialisation, dropout) store."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..corpus_geometry import StressPair

__all__ = ["TableAnalysis", "TableStress", "StoredTableStress", "StoredInitStudy", "StoredDropoutStudy"]


@dataclass(frozen=True)
class TableAnalysis:
    """One table's :func:`posgeom.geometry.analyse_table` in a ``learned_table_anatomy`` entry (``P``: learned only)."""

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
    """One corpus of a ``learned_table_stress`` entry: the stress of the model's table, the references and MDS."""

    n_kept: int
    table: StressPair
    sinusoidal: StressPair
    random_normal: StressPair
    random_walk: StressPair
    mds: StressPair


@dataclass(frozen=True)
class StoredTableStress:
    """A stored ``learned_table_stress`` entry (one model): its :class:`TableStress` per corpus (None: not run)."""

    sst2: TableStress | None = None
    imdb: TableStress | None = None


@dataclass(frozen=True)
class StoredInitStudy:
    """A stored ``run_init_study``: tables (variants, seeds, n, d), losses (variants, seeds, steps), ``D``."""

    variants: tuple[tuple[str, float], ...]
    seeds: tuple[int, ...]
    losses: np.ndarray
    tables_initial: np.ndarray
    tables_final: np.ndarray
    D: np.ndarray


@dataclass(frozen=True)
class StoredDropoutStudy:
    """A stored ``run_dropout_study``."""

    dropouts: tuple[float, ...]
    seeds: tuple[int, ...]
    n_train: int
    passes: float

    @property
    def rate(self) -> float:
        """The rate compared with no dropout: the largest."""
        return max(self.dropouts)
