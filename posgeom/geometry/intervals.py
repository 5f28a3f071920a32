r"""Intervals over independent draws: the mean over seeds with its Student-$t$ confidence interval.

A number that depends on a random draw (a training seed, a random table, a corpus subset) is reported
over several draws; :func:`seed_interval` gives the mean with the interval

$$\bar x \pm t_{(1+\ell)/2,\,k-1}\, \frac{s}{\sqrt k},$$

$s$ the sample standard deviation of the $k$ draws and $\ell$ the level, and :func:`paired_difference`
the same interval of the per-draw differences of two variants run from the same seeds; :func:`spread`
summarises draws without an interval (mean, sample sd, range). (The basic
bootstrap interval of a statistic of a corpus is :func:`posgeom.geometry.basic_interval`.)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["SeedInterval", "seed_interval", "paired_difference", "spread"]


@dataclass(frozen=True)
class SeedInterval:
    """A mean over draws with its sample standard deviation and a Student-$t$ confidence interval."""

    mean: float
    std: float
    low: float
    high: float
    n: int
    level: float

    def as_dict(self) -> dict[str, float]:
        """``{"mean", "sd", "low", "high", "n"}`` (as stored in a result)."""
        return {"mean": self.mean, "sd": self.std, "low": self.low, "high": self.high, "n": self.n}


def seed_interval(values, level: float = 0.95) -> SeedInterval:
    r"""Mean of per-draw values with the Student-$t$ interval $\bar x \pm t_{(1+\ell)/2,\,k-1}\, s/\sqrt k$.

    Parameters
    ----------
    values : array-like of shape (k,), k >= 2
        One finite value per draw.
    level : float in (0, 1)

    Returns
    -------
    SeedInterval
    """
    from scipy import stats

    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size < 2 or not np.all(np.isfinite(x)):
        raise ValueError(f"an interval over draws needs at least 2 finite values, got {x.tolist()}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    m, sd = float(x.mean()), float(x.std(ddof=1))
    # half width t_{(1+level)/2, k-1} s / sqrt(k)
    half = float(stats.t.ppf((1 + level) / 2, x.size - 1)) * sd / np.sqrt(x.size)
    return SeedInterval(mean=m, std=sd, low=m - half, high=m + half, n=int(x.size), level=float(level))


def paired_difference(a, b, level: float = 0.95) -> SeedInterval:
    r""":func:`seed_interval` of the per-draw differences $a_s - b_s$ (two variants run from the same seeds).

    Parameters
    ----------
    a, b : array-like of shape (k,), k >= 2, paired by seed
    level : float in (0, 1)

    Returns
    -------
    SeedInterval
    """
    a, b = np.asarray(a, dtype=np.float64).ravel(), np.asarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"a and b must hold one value per seed each, got {a.size} and {b.size} values")
    return seed_interval(a - b, level)


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
