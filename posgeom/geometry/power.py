r"""The power of a decision over seeds: how many draws a Student-$t$ interval needs to tell the smallest
effect that matters from none.

A rule that decides over seeds (:func:`posgeom.geometry.seed_interval`) states, for the smallest effect that
matters to its claim, the chance that its interval would exclude that effect (:func:`exclusion_power`, exact
for normal draws through the noncentral $t$), and the seeds that would reach :data:`TARGET_POWER`
(:func:`seeds_for_power`); :func:`seed_design` does both for a run's interval. The rules of
:mod:`posgeom.verdicts` append it to their reason, and each chapter shows the design, its power and its
cost (:func:`posgeom.report.power_frame`).

(A module of its own, not in ``intervals.py``: the intervals are part of the code key of nearly every
committed result, the power of the verdicts is not.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..validation import check_int
from .intervals import SeedInterval

__all__ = ["TARGET_POWER", "exclusion_power", "seeds_for_power", "SeedDesign", "seed_design", "sd_upper_bound",
           "PilotPlan", "plan_from_pilot"]



#: The power a design is sized for: an interval over seeds that would exclude the smallest effect that
#: matters four times in five (the usual 80 %; a design below it is said to be underpowered).
TARGET_POWER = 0.8


def _check_design(n_draws: int, sd: float, distance: float, level: float) -> None:
    check_int(n_draws, "n_draws (an interval needs two draws)", 2)
    if not (np.isfinite(sd) and sd >= 0):
        raise ValueError(f"sd must be a finite standard deviation >= 0, got {sd!r}")
    if not (np.isfinite(distance) and distance > 0):
        raise ValueError(f"distance must be a finite effect > 0 (the smallest that matters), got {distance!r}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")


def exclusion_power(n_draws: int, sd: float, distance: float, level: float = 0.95) -> float:
    r"""The probability that the Student-$t$ interval of :func:`~posgeom.geometry.seed_interval` over ``n_draws`` draws excludes a
    value ``distance`` away from the true mean, when the draws are normal with standard deviation ``sd``.

    With $k$ draws the statistic $T = (\bar x - \mu_0)\sqrt k / s$ for a value $\mu_0 = \mu - \delta$ follows a
    noncentral $t$ with $k - 1$ degrees of freedom and noncentrality $\delta \sqrt k / \sigma$; the interval
    excludes $\mu_0$ exactly when $|T| > t_{(1+\ell)/2,\,k-1}$, so

    $$\text{power} = 1 - F_{k-1,\,\delta\sqrt k/\sigma}(t) + F_{k-1,\,\delta\sqrt k/\sigma}(-t).$$

    This is the power of the two usual decisions over seeds: an effect of size $\delta$ told from none (the
    interval excludes 0), and no effect told from one of size $\delta$ (the interval excludes $\pm\delta$).

    Parameters
    ----------
    n_draws : int, at least 2
    sd : float, >= 0
        The draws' standard deviation (a pilot's sample sd); 0 gives power 1.
    distance : float, > 0
        The smallest effect that matters, $\delta$.
    level : float in (0, 1)

    Returns
    -------
    float in [0, 1]
    """
    from scipy import stats

    _check_design(n_draws, sd, distance, level)
    if sd == 0:
        return 1.0
    df, nc = int(n_draws) - 1, distance * np.sqrt(n_draws) / sd
    t = stats.t.ppf((1 + level) / 2, df)
    return float(min(1.0, stats.nct.sf(t, df, nc) + stats.nct.cdf(-t, df, nc)))


def seeds_for_power(sd: float, distance: float, *, power: float = TARGET_POWER, level: float = 0.95,
                    max_draws: int = 100_000) -> int:
    """The fewest draws (at least 2) whose interval has :func:`exclusion_power` of at least ``power`` for an
    effect ``distance`` with draws of standard deviation ``sd``; a ``ValueError`` past ``max_draws``.

    Power grows with the number of draws, so the answer is found by doubling, then bisection.
    """
    if not 0 < power < 1:
        raise ValueError(f"power must lie in (0, 1), got {power!r}")
    _check_design(2, sd, distance, level)

    def enough(k: int) -> bool:
        return exclusion_power(k, sd, distance, level) >= power

    high = 2
    while not enough(high):
        if high >= max_draws:
            raise ValueError(f"more than {max_draws} draws are needed to resolve an effect of {distance:.3g} with sd "
                             f"{sd:.3g} at power {power:.0%}: the effect is too small for this noise")
        high = min(2 * high, max_draws)
    low = max(2, high // 2)
    if enough(low):
        return low
    while high - low > 1:  # enough(high) and not enough(low)
        mid = (low + high) // 2
        low, high = (low, mid) if enough(mid) else (mid, high)
    return high


@dataclass(frozen=True)
class SeedDesign:
    """The power of a decision taken over seeds, for the smallest effect that matters.

    ``n`` draws of standard deviation ``sd`` (the run's sample sd) give ``power`` to tell an effect of
    ``effect`` from none at ``level``; ``needed`` draws reach ``TARGET_POWER``, 80 % (None: more than
    ``max_draws``, the effect is lost in the noise).
    """

    n: int
    sd: float
    effect: float
    level: float
    power: float
    needed: int | None

    @property
    def powered(self) -> bool:
        return self.power >= TARGET_POWER

    def text(self, fmt: str = "{:.3g}") -> str:
        """``"power 10% for the smallest effect that matters, 0.01 (5 seeds, sd 0.027; 80% needs 60 seeds)"``;
        a design that reaches 80 % says no more than its power."""
        if self.needed is None:
            need = f"; {TARGET_POWER:.0%} is out of reach"
        else:
            need = "" if self.powered else f"; {TARGET_POWER:.0%} needs {self.needed} seeds"
        return (f"power {self.power:.0%} for the smallest effect that matters, {fmt.format(self.effect)} ({self.n} "
                f"seeds, sd {fmt.format(self.sd)}{need})")


def seed_design(interval, effect: float, *, max_draws: int = 100_000) -> SeedDesign:
    """:class:`SeedDesign` of an interval over seeds (a :class:`~posgeom.geometry.SeedInterval`, or its stored dictionary with
    ``sd``, ``n`` and ``level``) for the smallest effect that matters, ``effect``."""
    if isinstance(interval, SeedInterval):
        n, sd, level = interval.n, interval.std, interval.level
    else:
        missing = [k for k in ("n", "sd") if k not in interval]
        if missing:
            raise ValueError(f"the power of an interval over seeds needs its number of seeds and sd; this interval "
                             f"lacks {', '.join(missing)} (pass the SeedInterval, or its as_dict())")
        n, sd, level = int(interval["n"]), float(interval["sd"]), float(interval.get("level", 0.95))
    power = exclusion_power(n, sd, effect, level)
    try:
        needed = seeds_for_power(sd, effect, level=level, max_draws=max_draws)
    except ValueError:
        needed = None
    return SeedDesign(n=n, sd=sd, effect=float(effect), level=level, power=power, needed=needed)


def sd_upper_bound(sd: float, n_draws: int, level: float = 0.95) -> float:
    r"""The one-sided upper confidence bound at ``level`` of a standard deviation estimated as ``sd`` from
    ``n_draws`` normal draws: $s \sqrt{(k-1) / \chi^2_{1-\ell,\,k-1}}$ (since $(k-1)s^2/\sigma^2 \sim \chi^2_{k-1}$).

    A design sized on a pilot's own sd is underpowered about half the time (the pilot's sd is as often below
    the truth as above); sized on this bound, it reaches its power unless the pilot was unluckily calm
    (probability ``1 - level``).
    """
    from scipy import stats

    _check_design(n_draws, sd, 1.0, level)
    k = int(n_draws)
    return float(sd * np.sqrt((k - 1) / stats.chi2.ppf(1 - level, k - 1)))


@dataclass(frozen=True)
class PilotPlan:
    """The seeds a decision needs, sized before it runs from a pilot (:func:`plan_from_pilot`).

    ``pilot_n`` draws of sd ``pilot_sd``; ``sd_bound``, the sd the design is sized for (the pilot's upper
    bound at ``sd_level``); ``needed``, the seeds that reach ``power`` for ``effect`` at that sd
    (:func:`seeds_for_power`); ``seeds``, what will run (``needed`` raised to ``min_draws`` and capped at
    ``max_draws``); ``design_power``, the power of ``seeds`` draws at ``sd_bound``.
    """

    pilot_n: int
    pilot_sd: float
    sd_level: float
    sd_bound: float
    effect: float
    level: float
    power: float
    needed: int | None
    seeds: int
    design_power: float

    def as_dict(self) -> dict:
        from dataclasses import asdict

        return asdict(self)

    def text(self, fmt: str = "{:.3g}") -> str:
        """``"a 5-seed pilot (sd 0.0045; 95% upper bound 0.013) sizes the design at 10 seeds: power 84% ..."``."""
        return (f"a {self.pilot_n}-seed pilot (sd {fmt.format(self.pilot_sd)}; its {self.sd_level:.0%} upper bound "
                f"{fmt.format(self.sd_bound)}) sizes the design at {self.seeds} seeds: power {self.design_power:.0%} for "
                f"the smallest effect that matters, {fmt.format(self.effect)}, at that bound")


def plan_from_pilot(pilot, effect: float, *, level: float = 0.95, power: float = TARGET_POWER,
                    sd_level: float = 0.95, min_draws: int = 2, max_draws: int = 1_000) -> PilotPlan:
    """Size a decision over seeds before running it: the seeds whose ``level`` interval has ``power`` for the
    smallest effect that matters, ``effect``, at the ``sd_level`` upper bound of the pilot's sd
    (:func:`sd_upper_bound`). The pilot's draws are not reused by the decision (its interval would then
    depend on the draws that sized it).

    Parameters
    ----------
    pilot : array-like of shape (k,), k >= 2
        One value per pilot draw (e.g. the paired differences the decision will read).
    effect : float, > 0
    level, power, sd_level : float in (0, 1)
    min_draws, max_draws : int
        The fewest and most seeds the plan may run (``needed`` is reported either way; None past
        ``max_draws``).

    Returns
    -------
    PilotPlan
    """
    values = np.asarray(pilot, dtype=float).ravel()
    if values.size < 2 or not np.all(np.isfinite(values)):
        raise ValueError(f"a pilot needs at least 2 finite draws, got {values.size} values "
                         f"({int(np.sum(~np.isfinite(values)))} not finite)")
    check_int(min_draws, "min_draws", 2)
    check_int(max_draws, "max_draws", min_draws)
    sd = float(np.std(values, ddof=1))
    bound = sd_upper_bound(sd, values.size, sd_level)
    try:
        needed = seeds_for_power(bound, effect, power=power, level=level, max_draws=max_draws)
    except ValueError:
        needed = None
    seeds = max_draws if needed is None else min(max(needed, min_draws), max_draws)
    return PilotPlan(pilot_n=int(values.size), pilot_sd=sd, sd_level=float(sd_level), sd_bound=bound,
                     effect=float(effect), level=float(level), power=float(power), needed=needed, seeds=int(seeds),
                     design_power=exclusion_power(seeds, bound, effect, level))
