r"""Summaries over training seeds: the mean with its spread and a Student-t confidence interval.

A headline number that depends on a training draw is reported over several seeds (at least 5 where it
carries a verdict); :func:`seed_interval` gives its interval, and :func:`paired_difference` the interval
of a difference between two variants trained from the same seeds.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["SeedInterval", "seed_interval", "paired_difference"]


@dataclass(frozen=True)
class SeedInterval:
    """A mean over seeds with its standard deviation and a Student-t confidence interval."""

    mean: float
    std: float
    low: float
    high: float
    n: int
    level: float


def seed_interval(values, level: float = 0.95) -> SeedInterval:
    r"""Mean of per-seed values with the Student-t interval $\bar x \pm t_{(1+\text{level})/2,\,k-1}\, s/\sqrt k$.

    Parameters
    ----------
    values : array of shape (k,), k >= 2
    level : float in (0, 1)

    Returns
    -------
    SeedInterval
    """
    from scipy import stats

    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size < 2 or not np.all(np.isfinite(x)):
        raise ValueError(f"seed_interval needs at least 2 finite values, got {x.tolist()}")
    if not 0 < level < 1:
        raise ValueError(f"level must lie in (0, 1), got {level!r}")
    m, sd = float(x.mean()), float(x.std(ddof=1))
    half = float(stats.t.ppf((1 + level) / 2, x.size - 1)) * sd / np.sqrt(x.size)
    return SeedInterval(mean=m, std=sd, low=m - half, high=m + half, n=int(x.size), level=float(level))


def paired_difference(a, b, level: float = 0.95) -> SeedInterval:
    r""":func:`seed_interval` of the per-seed differences $a_s - b_s$ (two variants trained from the same seeds).

    Parameters
    ----------
    a, b : array of shape (k,), k >= 2, paired by seed

    Returns
    -------
    SeedInterval
    """
    a, b = np.asarray(a, dtype=np.float64).ravel(), np.asarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"a and b must hold one value per seed each, got {a.size} and {b.size} values")
    return seed_interval(a - b, level)
