"""Typed records of what every design sized by its power stores."""

from __future__ import annotations

from dataclasses import dataclass

from ...geometry.intervals import PilotPlan, SeedInterval

__all__ = ["PairedRun", "StoredDesign", "InitRun", "StoredInitDesign", "DropoutRun", "StoredDropoutDesign",
    "StoredLowrankDesign", "HeuristicsRun", "StoredHeuristicsDesign"]


@dataclass(frozen=True)
class PairedRun:
    """One seed of a paired design: what every chapter reads (a design's run stores its own measures too)."""

    a: float
    b: float
    difference: float


@dataclass(frozen=True)
class StoredDesign:
    """A stored :func:`posgeom.experiments.paired_design.run_paired_design`."""

    plan: PilotPlan
    pilot: tuple[PairedRun, ...]
    runs: tuple[PairedRun, ...]
    difference: SeedInterval
    seconds: dict[str, float]


@dataclass(frozen=True)
class InitRun(PairedRun):
    """A seed of S7's design: each initialisation's steps to the loss threshold (None: never reached)."""

    steps_small: float | None
    steps_large: float | None


@dataclass(frozen=True)
class StoredInitDesign(StoredDesign):
    """A stored ``run_init_powered``: a :class:`StoredDesign` whose runs are :class:`InitRun`, and its threshold."""

    runs: tuple[InitRun, ...]
    loss_threshold: float


@dataclass(frozen=True)
class DropoutRun(PairedRun):
    """A seed of S9's design: the generalisation gap without dropout."""

    gap_none: float


@dataclass(frozen=True)
class StoredDropoutDesign(StoredDesign):
    """A stored ``run_dropout_powered``."""

    runs: tuple[DropoutRun, ...]
    rate: float


@dataclass(frozen=True)
class StoredLowrankDesign(StoredDesign):
    """A stored ``run_lowrank_powered``; ``fitted_gap`` None when too few seeds fitted."""

    stalled: dict[str, tuple[int, ...]]
    fitted_gap: SeedInterval | None


@dataclass(frozen=True)
class HeuristicsRun(PairedRun):
    """A decision seed of S6's design: each heuristic's accuracy (None: not run)."""

    reuse_last: float | None = None
    interpolate: float | None = None
    new_rows: float | None = None


@dataclass(frozen=True)
class StoredHeuristicsDesign(StoredDesign):
    """A stored ``run_heuristics_powered``."""

    runs: tuple[HeuristicsRun, ...]
    heuristics: dict[str, SeedInterval]
    length: int
    L: int
