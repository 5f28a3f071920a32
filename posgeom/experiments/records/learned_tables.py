"""Typed records of what run_table_stress (:mod:`posgeom.experiments.learned_tables`) stores, read back by
:func:`posgeom.registry.typed.as_record`."""

from __future__ import annotations

from dataclasses import dataclass

from .common import StressPair

__all__ = ["TableStress", "StoredTableStress"]


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
