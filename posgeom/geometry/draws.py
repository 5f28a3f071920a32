r"""A number over independent draws, summarised with an interval when there are enough draws.

:func:`draws_summary` reports the mean of $k$ draws with its Student-$t$ interval
(:func:`posgeom.geometry.seed_interval`) when $k \ge$ :data:`posgeom.geometry.MIN_SEEDS`, and only their
spread (:func:`posgeom.geometry.spread`) from fewer: a stored result then never holds an interval that
mostly measures the number of seeds.
"""

from __future__ import annotations

import numpy as np

from .intervals import MIN_SEEDS, seed_interval, spread

__all__ = ["draws_summary"]


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
