r"""A decision over seeds sized by its power before it runs: a pilot, a plan, then the decision.

A paired difference $a_s - b_s$ is decided by its 95 % interval over seeds, and the seeds needed depend on
its unknown spread. :func:`run_paired_design` fixes the smallest effect that matters and a cap, sizes the
decision on a pilot (80 % power at the upper bound of the pilot's sd), then runs fresh seeds $0, 1, \dots$
so that the interval does not depend on the draws that sized it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Callable, Mapping

import numpy as np

from ..geometry.intervals import MIN_SEEDS, PilotPlan, SeedInterval, paired_difference, plan_from_pilot
from ..registry.typed import as_record

__all__ = ["PairedDesign", "PairedSeed", "PairedOutcome", "run_paired_design", "read_or_run"]


@dataclass(frozen=True)
class PairedDesign:
    """A paired decision over seeds, fixed before it runs (:func:`run_paired_design`)."""

    #: The smallest difference that matters, in the units of the measure (the claim's rule names it).
    effect: float
    #: The pilot's seeds, apart from the decision's 0, 1, ...: twenty, so that a failure in one run of ten
    #: shows in the pilot (a pilot of 5 misses it more often than not: 0.9^5 = 0.59; of 20, one time in eight).
    pilot_seeds: tuple[int, ...] = tuple(range(100, 120))
    #: The design is sized for the pilot sd's upper bound at this level (a pilot's own sd is as often too
    #: low as too high: sized on it, the design would miss its power half the time).
    sd_level: float = 0.95
    #: At most this many seeds (posgeom.verdicts.MAX_SEEDS: past it a rule asks for a less noisy design
    #: rather than more seeds; a test keeps them equal); a plan past it runs the cap and says so.
    max_seeds: int = 100
    #: The level of the decision's interval.
    level: float = 0.95

    def check(self) -> None:
        """Refuse a design that cannot run: too small a pilot, a pilot that overlaps the decision's seeds."""
        if len(self.pilot_seeds) < 2:
            raise ValueError(f"a pilot needs at least 2 seeds to estimate the spread, got {len(self.pilot_seeds)}")
        if not self.effect > 0:
            raise ValueError(f"effect must be > 0 (the smallest difference that matters), got {self.effect!r}")
        shared = sorted(s for s in self.pilot_seeds if 0 <= s < self.max_seeds)
        if shared:
            raise ValueError(f"pilot seeds {shared[:5]} are among the decision's seeds 0–{self.max_seeds - 1}: "
                             f"choose pilot seeds from {self.max_seeds} up")


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
    """A paired design as :func:`run_paired_design` stores it; a design's record narrows ``pilot`` and ``runs``."""

    pilot: tuple[PairedSeed, ...]
    plan: PilotPlan
    runs: tuple[PairedSeed, ...]  # the decision's seeds 0, 1, ...
    difference: SeedInterval      # the decision's interval of a - b
    level: float
    seconds: dict[str, float]     # of the pilot and of the decision

    @classmethod
    def of(cls, design: Mapping, **extra):
        """The record of :func:`run_paired_design`'s mapping, with the fields it does not hold given in ``extra``."""
        return as_record(SimpleNamespace(values=design, arrays={}), cls, **extra)


def _measured(measure: Callable[[int], Mapping], seed: int) -> dict:
    """One seed's record: what ``measure`` returns, its ``difference`` a − b, the seed and the seconds it took."""
    start = time.perf_counter()
    record = dict(measure(int(seed)))
    seconds = time.perf_counter() - start
    if "a" not in record or "b" not in record:
        raise ValueError(f"measure(seed) must return a mapping with keys 'a' and 'b', got {sorted(record)}")
    a, b = float(record["a"]), float(record["b"])
    if not (np.isfinite(a) and np.isfinite(b)):
        raise ValueError(f"seed {seed}: the measure is not finite (a = {a}, b = {b})")
    return {**record, "a": a, "b": b, "difference": a - b, "seed": int(seed), "seconds": seconds}


def run_paired_design(measure: Callable[[int], Mapping], design: PairedDesign, *, bounds=None,
                      desc: str = "design") -> dict:
    r"""Run a paired design: the pilot, the plan it sizes, the decision over fresh seeds.

    Parameters
    ----------
    measure : callable
        ``measure(seed)`` trains both variants and returns a mapping with ``"a"`` and ``"b"`` (the difference is
        $a - b$) and anything else worth keeping per seed.
    design : PairedDesign
    bounds : tuple of float, optional
        Bounds of the difference (``(-1, 1)`` for two accuracies).

    Returns
    -------
    dict
        ``pilot`` and ``runs`` (per seed: the record with ``difference``, ``seed``, ``seconds``), ``plan``,
        ``difference`` (the decision's interval as a dictionary), ``level``, ``seconds``.
    """
    from ..progress import tqdm
    design.check()
    pilot = [_measured(measure, s) for s in tqdm(design.pilot_seeds, desc=f"{desc}: pilot", unit="seed")]
    plan = plan_from_pilot([r["difference"] for r in pilot], design.effect, level=design.level,
                           sd_level=design.sd_level, min_draws=MIN_SEEDS, max_draws=design.max_seeds)
    runs = [_measured(measure, s) for s in tqdm(range(plan.seeds), desc=f"{desc}: decision", unit="seed")]
    interval = paired_difference([r["a"] for r in runs], [r["b"] for r in runs], design.level, bounds=bounds)
    return dict(pilot=pilot, plan=plan.as_dict(), runs=runs, difference=interval.as_dict(), level=design.level,
                seconds={"pilot": float(sum(r["seconds"] for r in pilot)),
                         "decision": float(sum(r["seconds"] for r in runs))})


def read_or_run(run: Callable, settings=None):
    """A CPU design for a chapter: at ``paper`` scale its own run; otherwise the stored ``paper`` one, or a run."""
    from ..config import settings_or_default
    from ..registry import stored_at_scale
    settings = settings_or_default(settings)
    if settings.scale == "paper":
        return run(settings)
    stored = stored_at_scale(run, settings, scale="paper")
    return stored if stored is not None else run(settings)
