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

__all__ = ["MIN_SEEDS", "SeedInterval", "seed_interval", "paired_difference", "spread", "mean_sd", "draws_summary"]

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
    table = np.array([[d[k] for k in keys] for d in draws], dtype=np.float64)
    if table.shape[0] < 2:
        raise ValueError(f"mean_sd needs at least two draws; got {table.shape[0]}")
    return {**{k: float(table[:, i].mean()) for i, k in enumerate(keys)},
            **{f"{k}_sd": float(table[:, i].std(ddof=1)) for i, k in enumerate(keys)}}


def draws_summary(x, level: float = 0.95, *, bounds=None) -> dict[str, float]:
    """The Student-$t$ interval of draws (:func:`posgeom.geometry.seed_interval`, as a dictionary) when there
    are at least :data:`posgeom.geometry.MIN_SEEDS` of them; from fewer, their spread only
    (:func:`posgeom.geometry.spread`: ``mean``, ``sd``, ``min``, ``max``) and ``n``, no interval.

    Parameters
    ----------
    x : array-like of shape (k,)
        One value per draw, k >= 1.
    level : float in (0, 1)
    bounds : (lo, hi), optional
        The quantity's range (as :func:`posgeom.geometry.seed_interval`).

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
