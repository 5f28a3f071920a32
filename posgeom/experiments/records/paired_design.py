"""Typed records of what every design sized by its power (:func:`posgeom.experiments.paired_design.run_paired_design`)
stores, read back by :func:`posgeom.registry.typed.as_record`."""

from __future__ import annotations

from dataclasses import dataclass

from ...geometry.intervals import PilotPlan, SeedInterval

__all__ = ["PairedRun", "StoredDesign", "InitRun", "StoredInitDesign", "DropoutRun", "StoredDropoutDesign",
    "StoredLowrankDesign", "HeuristicsRun", "StoredHeuristicsDesign"]


@dataclass(frozen=True)
class PairedRun:
    """One seed of a paired design: the two variants' measures and their difference ``a − b`` (a design's run
    stores more, its own measures; this is what every chapter reads)."""
    a: float
    b: float
    difference: float


@dataclass(frozen=True)
class StoredDesign:
    """A stored :func:`posgeom.experiments.paired_design.run_paired_design`, typed
    (:func:`posgeom.registry.typed.as_record`): the plan its pilot sized, the pilot's and the decision's runs,
    the paired interval over the decision's seeds and the seconds of each stage."""
    plan: PilotPlan
    pilot: tuple[PairedRun, ...]
    runs: tuple[PairedRun, ...]
    difference: SeedInterval
    seconds: dict[str, float]


@dataclass(frozen=True)
class InitRun(PairedRun):
    """A seed of S7's design (``run_init_powered``): besides the final losses, each initialisation's steps to the
    loss threshold (None where it never reached it)."""
    steps_small: float | None
    steps_large: float | None


@dataclass(frozen=True)
class StoredInitDesign(StoredDesign):
    """A stored ``run_init_powered``: a :class:`StoredDesign` whose runs are :class:`InitRun`, and its threshold."""
    runs: tuple[InitRun, ...]
    loss_threshold: float


@dataclass(frozen=True)
class DropoutRun(PairedRun):
    """A seed of S9's design (``run_dropout_powered``): besides the held-out losses, the generalisation gap
    without dropout."""
    gap_none: float


@dataclass(frozen=True)
class StoredDropoutDesign(StoredDesign):
    """A stored ``run_dropout_powered``: a :class:`StoredDesign` whose runs are :class:`DropoutRun`, and the
    dropout rate."""
    runs: tuple[DropoutRun, ...]
    rate: float


@dataclass(frozen=True)
class StoredLowrankDesign(StoredDesign):
    """A stored ``run_lowrank_powered`` (C5's design): a :class:`StoredDesign`, the decision seeds whose run
    stalled per table, and the gap over the seeds where both tables fitted (None: too few seeds)."""
    stalled: dict[str, tuple[int, ...]]
    fitted_gap: SeedInterval | None


@dataclass(frozen=True)
class HeuristicsRun(PairedRun):
    """A decision seed of S6's design: besides ``a`` (the best heuristic) and ``b`` (the table trained at the longer
    length), each heuristic's accuracy there (None: not run)."""
    reuse_last: float | None = None
    interpolate: float | None = None
    new_rows: float | None = None


@dataclass(frozen=True)
class StoredHeuristicsDesign(StoredDesign):
    """A stored ``run_heuristics_powered``: a :class:`StoredDesign` whose runs are :class:`HeuristicsRun`, each
    heuristic's paired interval, the training length ``L`` and the longer ``length``."""
    runs: tuple[HeuristicsRun, ...]
    heuristics: dict[str, SeedInterval]
    length: int
    L: int
