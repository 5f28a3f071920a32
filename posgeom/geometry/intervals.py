r"""Intervals over independent draws: the mean over seeds with its Student-$t$ confidence interval.

A number that depends on a random draw (seed, random table, corpus subset) is reported as
$\bar x \pm t_{(1+\ell)/2,\,k-1}\, s / \sqrt k$, the $t$ quantile shown (it dominates the width with few draws);
fewer than :data:`MIN_SEEDS` draws are refused unless ``allow_few=True``; bounded quantities are clipped. The
power for the smallest effect that matters sizes the designs (:func:`seed_design`, :func:`plan_from_pilot`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ..validation import check_bounds, check_int

__all__ = ["MIN_SEEDS", "SeedInterval", "seed_interval", "paired_difference", "spread", "mean_sd", "draws_summary",
           "TARGET_POWER", "exclusion_power", "seeds_for_power", "SeedDesign", "seed_design", "sd_upper_bound",
           "PilotPlan", "plan_from_pilot"]

#: The fewest draws an interval over seeds rests on: below 5 the t quantile grows fast (4.30 at 3 draws,
#: 3.18 at 4, 2.78 at 5 against 1.96 for a normal), so the interval mostly measures the number of seeds.
MIN_SEEDS = 5


@dataclass(frozen=True)
class SeedInterval:
    """A mean over draws with its sample standard deviation and a Student-$t$ confidence interval."""

    mean: float
    std: float
    low: float
    high: float
    n: int
    level: float
    t: float = float("nan")

    def __post_init__(self):
        if not self.low <= self.mean <= self.high:
            raise ValueError(f"an interval must hold its mean: got {self.mean!r} [{self.low!r}, {self.high!r}]")

    def as_dict(self) -> dict[str, float]:
        """``{"mean", "sd", "low", "high", "n", "level", "t"}`` (as stored in a result; ``t`` the quantile used)."""
        return {"mean": self.mean, "sd": self.std, "low": self.low, "high": self.high, "n": self.n,
                "level": self.level, "t": self.t}

    @classmethod
    def from_dict(cls, entry: dict) -> "SeedInterval":
        """The interval stored by :meth:`as_dict`."""
        return cls(mean=entry["mean"], std=entry["sd"], low=entry["low"], high=entry["high"], n=int(entry["n"]),
                   level=entry["level"], t=entry["t"])

    def text(self, fmt: str = "{:.3f}", *, with_t: bool = True) -> str:
        """``mean [low, high]``, then ``(k seeds, t = ...)`` with the quantile the interval used."""
        out = f"{fmt.format(self.mean)} [{fmt.format(self.low)}, {fmt.format(self.high)}]"
        return out + f" ({self.n} seeds, t = {self.t:.2f})" if with_t else out


def seed_interval(values, level: float = 0.95, *, bounds=None, allow_few: bool = False) -> SeedInterval:
    r"""Mean of per-draw values with the Student-$t$ interval $\bar x \pm t_{(1+\ell)/2,\,k-1}\, s/\sqrt k$.

    Parameters
    ----------
    values : array-like of shape (k,)
        One finite value per draw; ``k >= MIN_SEEDS`` (5), or ``k >= 2`` with ``allow_few``; ``level`` in (0, 1).
    bounds : (lo, hi), optional
        The quantity's range (None on a side: unbounded), holding the values; the interval is clipped to it.
    allow_few : bool
        Accept 2 to 4 draws, for a number that is not a headline (the text still shows the large t).

    Returns
    -------
    SeedInterval
        ``low <= mean <= high``; ``t`` the quantile used.
    """
    from scipy import stats
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size < 2 or not np.all(np.isfinite(x)):
        raise ValueError(f"an interval over draws needs at least 2 finite values, got {x.tolist()}")
    if x.size < MIN_SEEDS and not allow_few:
        raise ValueError(f"an interval over draws needs at least {MIN_SEEDS} draws (t = "
                         f"{stats.t.ppf(0.975, x.size - 1):.2f} at {x.size}); run more seeds, or pass allow_few=True "
                         "for a number that is not a headline")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    lo, hi = check_bounds(bounds)
    if np.any(x < lo) or np.any(x > hi):
        raise ValueError(f"the values must lie within the bounds ({lo}, {hi}); got range [{x.min()}, {x.max()}]")
    m, sd = float(x.mean()), float(x.std(ddof=1))
    # the quantile t_{(1+level)/2, k-1} the interval uses, kept in the record for the text
    tq = float(stats.t.ppf((1 + level) / 2, x.size - 1))
    # x̄ ± t_{(1+level)/2, k-1} s/√k, by scipy's one-sample t test. Where numbers could change: its ends equal
    # the formula's to rounding, not bit for bit (it takes the lower quantile at (1 - level)/2 and s/√k as
    # √(s²/k)), at most 3e-15 of the larger of |mean| and the width on random draws, 2e-16 on the committed
    # intervals (tests/test_scipy_statistics.py, with the formula as its oracle). Draws all equal: s = 0, the
    # interval is the mean. scipy warns of precision loss when the draws are nearly equal; s above is
    # computed from the same deviations from the mean, so the warning says nothing about this interval.
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Precision loss occurred", RuntimeWarning)
        ci = stats.ttest_1samp(x, 0.0).confidence_interval(confidence_level=level)
    m = min(max(m, lo), hi)  # the mean of values within the bounds is within them up to rounding
    return SeedInterval(mean=m, std=sd, low=max(min(float(ci.low), m), lo), high=min(max(float(ci.high), m), hi),
                        n=int(x.size), level=float(level), t=tq)


def paired_difference(a, b, level: float = 0.95, *, bounds=None, allow_few: bool = False) -> SeedInterval:
    r""":func:`seed_interval` of the per-draw differences $a_s - b_s$ (two variants run from the same seeds).

    Parameters
    ----------
    a, b : array-like of shape (k,), paired by seed
    level, bounds, allow_few :
        As :func:`seed_interval` (bounds of the difference, e.g. ``(-1, 1)`` for two accuracies).
    """
    a, b = np.asarray(a, dtype=np.float64).ravel(), np.asarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"a and b must hold one value per seed each, got {a.size} and {b.size} values")
    return seed_interval(a - b, level, bounds=bounds, allow_few=allow_few)


def spread(values) -> dict[str, float]:
    r"""``{"mean", "sd", "min", "max"}`` of draws, ``sd`` the sample standard deviation (``ddof=1``; 0 for one value).

    Parameters
    ----------
    values : array-like of shape (k,), k >= 1
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size < 1:
        raise ValueError("spread needs at least one value")
    return {"mean": float(x.mean()), "sd": float(x.std(ddof=1)) if x.size > 1 else 0.0,
            "min": float(x.min()), "max": float(x.max())}


def mean_sd(draws, keys=None) -> dict[str, float]:
    """The mean of each quantity over draws and its sample standard deviation (``ddof=1``), as one table row.

    Parameters
    ----------
    draws : sequence of mappings
        One ``{quantity: value}`` per draw (at least two).
    keys : sequence of str, optional
        The quantities (default: the first draw's keys).

    Returns
    -------
    dict
        ``{key: mean}`` for each key, then ``{f"{key}_sd": sd}``.
    """
    keys = list(draws[0] if keys is None else keys)
    if len(draws) < 2:
        raise ValueError(f"mean_sd needs at least two draws; got {len(draws)}")
    columns = {k: spread([d[k] for d in draws]) for k in keys}
    return {**{k: s["mean"] for k, s in columns.items()}, **{f"{k}_sd": s["sd"] for k, s in columns.items()}}


def draws_summary(x, level: float = 0.95, *, bounds=None) -> dict[str, float]:
    """The Student-$t$ interval of draws as a dictionary, or only their spread from fewer than ``MIN_SEEDS``.

    Parameters
    ----------
    x : array-like of shape (k,)
        One value per draw, k >= 1.
    level, bounds :
        As :func:`posgeom.geometry.seed_interval`.

    Returns
    -------
    dict
        ``mean``, ``sd`` (sample), ``low``, ``high``, ``n``, ``level``, ``t`` (the quantile used); or ``mean``,
        ``sd``, ``min``, ``max``, ``n`` from fewer than :data:`posgeom.geometry.MIN_SEEDS` draws.
    """
    x = np.asarray(x, dtype=np.float64).ravel()
    if x.size >= MIN_SEEDS:
        return seed_interval(x, level, bounds=bounds).as_dict()
    return {**spread(x), "n": int(x.size)}


# the power of an interval over seeds

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
    r"""The probability that the Student-$t$ interval over ``n_draws`` normal draws excludes a value ``distance`` away.

    $T$ follows a noncentral $t$ with $k - 1$ degrees of freedom and noncentrality $\delta \sqrt k / \sigma$:
    $\text{power} = 1 - F_{k-1,\,\delta\sqrt k/\sigma}(t) + F_{k-1,\,\delta\sqrt k/\sigma}(-t)$.

    Parameters
    ----------
    n_draws : int, at least 2
    sd : float, >= 0
        The draws' standard deviation (a pilot's sample sd); 0 gives power 1.
    distance, level : float
        $\delta > 0$, the smallest effect that matters; the interval's level in (0, 1).
    """
    from scipy import stats
    _check_design(n_draws, sd, distance, level)
    if sd == 0:
        return 1.0
    df, nc = int(n_draws) - 1, distance * np.sqrt(n_draws) / sd
    t = stats.t.ppf((1 + level) / 2, df)
    # 1 - F_nc(t) + F_nc(-t), the lower tail as F_nc(-t) = 1 - F_{-nc}(t) (the noncentral t's symmetry): scipy
    # 1.17 returns nan for F_nc(-t) once nc passes about 7.5 (sporadically; where the tail is about 0), which
    # min(1, ...) turned into power 1 (0.97 is right for 2 draws at nc 14); the survival function at -nc gives
    # the same value bit for bit wherever F_nc(-t) is finite, so only the powers that were 1 by a nan change (no
    # committed plan, verdict or seed design had one: tests/test_scipy_statistics.py)
    return float(min(1.0, stats.nct.sf(t, df, nc) + stats.nct.sf(t, df, -nc)))


def seeds_for_power(sd: float, distance: float, *, power: float = TARGET_POWER, level: float = 0.95,
                    max_draws: int = 100_000) -> int:
    """The fewest draws (at least 2) whose :func:`exclusion_power` reaches ``power`` (ValueError past ``max_draws``)."""
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
    """The power of a decision over seeds for the smallest effect that matters (``needed``: None if out of reach)."""

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
        """``"power 10% for the smallest effect that matters, 0.01 (5 seeds, sd 0.027; 80% needs 60 seeds)"``."""
        if self.needed is None:
            need = f"; {TARGET_POWER:.0%} is out of reach"
        else:
            need = "" if self.powered else f"; {TARGET_POWER:.0%} needs {self.needed} seeds"
        return (f"power {self.power:.0%} for the smallest effect that matters, {fmt.format(self.effect)} ({self.n} "
                f"seeds, sd {fmt.format(self.sd)}{need})")


def seed_design(interval, effect: float, *, max_draws: int = 100_000) -> SeedDesign:
    """:class:`SeedDesign` of an interval over seeds (a SeedInterval or its stored dictionary) for ``effect``."""
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
    r"""One-sided upper ``level`` bound $s \sqrt{(k-1) / \chi^2_{1-\ell,\,k-1}}$ of an sd from ``n_draws`` normal draws.

    A design sized on a pilot's own sd is underpowered about half the time; on this bound, with probability
    ``1 - level``."""
    from scipy import stats
    _check_design(n_draws, sd, 1.0, level)
    k = int(n_draws)
    return float(sd * np.sqrt((k - 1) / stats.chi2.ppf(1 - level, k - 1)))


@dataclass(frozen=True)
class PilotPlan:
    """The seeds a decision needs, sized from a pilot at the pilot's upper sd bound ``sd_bound``."""

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
    """Size a decision over seeds at the ``sd_level`` upper bound of the pilot's sd (the decision reuses no pilot draw).

    Parameters
    ----------
    pilot : array-like of shape (k,), k >= 2
        One value per pilot draw (e.g. the paired differences the decision will read).
    effect : float, > 0
    level, power, sd_level : float in (0, 1)
    min_draws, max_draws : int
        The fewest and most seeds the plan may run (``needed`` is reported either way; None past ``max_draws``).
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
