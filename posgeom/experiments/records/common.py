"""Typed records shared by several experiments: bootstrap intervals, a stress under both normalisations, and the
stored layout of a paired design (:func:`posgeom.experiments.paired_design.run_paired_design`), which the designs
extend with their own measures."""

from __future__ import annotations

from dataclasses import dataclass

from ...geometry.bootstrap import Interval
from ...geometry.intervals import PilotPlan, SeedInterval
from ...registry.typed import stored
from ..corpus_geometry import StressPair

__all__ = ["BootstrapIntervals", "StressPair", "PairedSeed", "PairedOutcome"]


@dataclass(frozen=True)
class BootstrapIntervals:
    """Bootstrap intervals as the ``run_*_intervals`` store them: per statistic and per difference ``"<a>-<b>"``."""

    statistics: dict[str, Interval]
    differences: dict[str, Interval]
    n_used: int                     # the replicates that entered the intervals
    n_folds: int | None = stored("interval.n_folds", default=None)  # the folds resampled, where stored


@dataclass(frozen=True, kw_only=True)
class PairedSeed:
    """One seed of a paired design: the two measures, their difference a - b, the seed, the seconds it took."""

    a: float
    b: float
    difference: float
    seed: int
    seconds: float


@dataclass(frozen=True, kw_only=True)
class PairedOutcome:
    """A paired design as ``run_paired_design`` stores it; a design's record narrows ``pilot`` and ``runs``."""

    pilot: tuple[PairedSeed, ...]
    plan: PilotPlan
    runs: tuple[PairedSeed, ...]  # the decision's seeds 0, 1, ...
    difference: SeedInterval      # the decision's interval of a - b
    level: float
    seconds: dict[str, float]     # of the pilot and of the decision

    @classmethod
    def of(cls, design: dict, **extra):
        """The record of ``run_paired_design``'s mapping, its seeds read into the type ``runs`` is annotated with."""
        import typing
        seed_type = typing.get_args(typing.get_type_hints(cls)["runs"])[0]
        pilot, runs = (tuple(seed_type(**r) for r in design[k]) for k in ("pilot", "runs"))
        return cls(pilot=pilot, plan=PilotPlan(**design["plan"]), runs=runs,
                   difference=SeedInterval.from_dict(design["difference"]), level=design["level"],
                   seconds=design["seconds"], **extra)
