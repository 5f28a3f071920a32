r"""Intervals over independent draws: the mean over seeds with its Student-$t$ confidence interval.

A number that depends on a random draw (a training seed, a random table, a corpus subset) is reported
over several draws; :func:`seed_interval` gives the mean with the interval

$$\bar x \pm t_{(1+\ell)/2,\,k-1}\, \frac{s}{\sqrt k},$$

$s$ the sample standard deviation of the $k$ draws and $\ell$ the level, and :func:`paired_difference`
the same interval of the per-draw differences of two variants run from the same seeds; :func:`spread`
summarises draws without an interval (mean, sample sd, range). The interval is centred on the mean, so
it always holds it; the $t$ quantile used is kept in the record and shown in the text, since with few
draws it dominates the width ($t_{0.975, 2} = 4.30$ for 3 seeds, $2.78$ for 5). An interval over fewer
than :data:`MIN_SEEDS` draws is refused unless the caller says it is not a headline number
(``allow_few=True``). A bounded quantity (an accuracy in $[0, 1]$, a separation $\ge 0$) keeps its bounds
through ``bounds=(lo, hi)``: the interval is clipped to them (a stated clip; the mean lies within them,
so the clipped interval still holds it). (The bootstrap interval of a statistic of a corpus is
:func:`posgeom.geometry.percentile_interval`.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..validation import check_bounds

__all__ = ["MIN_SEEDS", "SeedInterval", "seed_interval", "paired_difference", "spread", "TARGET_POWER",
           "exclusion_power", "seeds_for_power", "SeedDesign", "seed_design"]

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
        One finite value per draw; ``k >= MIN_SEEDS`` (5), or ``k >= 2`` with ``allow_few``.
    level : float in (0, 1)
    bounds : (lo, hi), optional
        The quantity's range (None on a side: unbounded); the values must lie within it and the interval is
        clipped to it.
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
    tq = float(stats.t.ppf((1 + level) / 2, x.size - 1))
    # half width t_{(1+level)/2, k-1} s / sqrt(k)
    half = tq * sd / np.sqrt(x.size)
    m = min(max(m, lo), hi)  # the mean of values within the bounds is within them up to rounding
    return SeedInterval(mean=m, std=sd, low=max(m - half, lo), high=min(m + half, hi), n=int(x.size),
                        level=float(level), t=tq)


def paired_difference(a, b, level: float = 0.95, *, bounds=None, allow_few: bool = False) -> SeedInterval:
    r""":func:`seed_interval` of the per-draw differences $a_s - b_s$ (two variants run from the same seeds).

    Parameters
    ----------
    a, b : array-like of shape (k,), paired by seed
    level : float in (0, 1)
    bounds, allow_few :
        As :func:`seed_interval` (bounds of the difference, e.g. ``(-1, 1)`` for two accuracies).

    Returns
    -------
    SeedInterval
    """
    a, b = np.asarray(a, dtype=np.float64).ravel(), np.asarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"a and b must hold one value per seed each, got {a.size} and {b.size} values")
    return seed_interval(a - b, level, bounds=bounds, allow_few=allow_few)


def spread(values) -> dict[str, float]:
    r"""Mean, sample standard deviation $s$ (``ddof=1``; 0 for a single value), minimum and maximum of draws.

    Parameters
    ----------
    values : array-like of shape (k,), k >= 1

    Returns
    -------
    dict
        ``mean``, ``sd``, ``min``, ``max``.
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size < 1:
        raise ValueError("spread needs at least one value")
    return {"mean": float(x.mean()), "sd": float(x.std(ddof=1)) if x.size > 1 else 0.0,
            "min": float(x.min()), "max": float(x.max())}


# ---------------------------------------------------------------------------------------------
# power: how many draws an interval needs to tell an effect from none


#: The power a design is sized for: an interval over seeds that would exclude the smallest effect that
#: matters four times in five (the usual 80 %; a design below it is said to be underpowered).
TARGET_POWER = 0.8


def _check_design(n_draws: int, sd: float, distance: float, level: float) -> None:
    if isinstance(n_draws, bool) or int(n_draws) != n_draws or n_draws < 2:
        raise ValueError(f"n_draws must be an integer of at least 2 (an interval needs two draws), got {n_draws!r}")
    if not (np.isfinite(sd) and sd >= 0):
        raise ValueError(f"sd must be a finite standard deviation >= 0, got {sd!r}")
    if not (np.isfinite(distance) and distance > 0):
        raise ValueError(f"distance must be a finite effect > 0 (the smallest that matters), got {distance!r}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")


def exclusion_power(n_draws: int, sd: float, distance: float, level: float = 0.95) -> float:
    r"""The probability that the Student-$t$ interval of :func:`seed_interval` over ``n_draws`` draws excludes a
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
    """:class:`SeedDesign` of an interval over seeds (a :class:`SeedInterval`, or its stored dictionary with
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
