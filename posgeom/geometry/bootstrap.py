r"""Bootstrap over sequences: intervals for any statistic of a corpus's Hellinger matrix.

A statistic $t(D)$ of the chord Hellinger matrix (a stress, a difference of stresses, an eigenvalue
share) varies with the sample of sequences it was counted from. The sequences are dealt into folds of
random sequences (:func:`posgeom.geometry.fold_counts`); a replicate draws the folds with replacement
(a bootstrap of clusters of random sequences, which approximates the bootstrap of sequences), adds
their counts, restricts them to the positions of the point estimate and recomputes $D^*$ and
$t(D^*)$. A replicate that misses a kept position is left out.

The interval is the *basic* bootstrap interval $[2t - q_{hi}, 2t - q_{lo}]$ of the replicates'
quantiles: a statistic of a noisy $D$ is biased by the sampling noise, a replicate adds the same bias
again, so reflecting the quantiles about $t$ estimates the value without the noise (the interval may
then exclude the estimate itself when that bias exceeds the spread).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..validation import check_positive_int
from .counts import PositionalCounts
from .hellinger import hellinger_matrix

__all__ = ["Interval", "basic_interval", "fold_bootstrap", "bootstrap_intervals", "difference_interval"]


@dataclass(frozen=True)
class Interval:
    """A point estimate with its basic bootstrap interval (:func:`basic_interval`)."""

    estimate: float
    low: float
    high: float
    bootstrap_mean: float

    def as_dict(self) -> dict[str, float]:
        """``{"estimate", "low", "high", "bootstrap_mean"}`` (as stored in a result)."""
        return {"estimate": self.estimate, "low": self.low, "high": self.high, "bootstrap_mean": self.bootstrap_mean}

    def text(self, fmt: str = "{:.3f}") -> str:
        """``estimate [low, high]``."""
        return f"{fmt.format(self.estimate)} [{fmt.format(self.low)}, {fmt.format(self.high)}]"

    def excludes_zero(self) -> bool:
        """True when the interval lies entirely on one side of 0 (a difference the data decide)."""
        return self.low > 0 or self.high < 0


def basic_interval(estimate: float, replicates, level: float = 0.95) -> Interval:
    r"""The basic bootstrap interval $[2t - q_{(1+\ell)/2},\ 2t - q_{(1-\ell)/2}]$ of a statistic.

    Parameters
    ----------
    estimate : float
        $t$, the statistic of the whole sample.
    replicates : array-like of shape (n_boot,)
        The statistic of each bootstrap replicate (at least 2).
    level : float in (0, 1)

    Returns
    -------
    Interval
    """
    reps = np.asarray(replicates, dtype=np.float64).ravel()
    if reps.size < 2:
        raise ValueError(f"a bootstrap interval needs at least 2 replicates; got {reps.size}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1); got {level}")
    lo_q, hi_q = (1 - level) / 2, (1 + level) / 2
    q_lo, q_hi = np.quantile(reps, lo_q), np.quantile(reps, hi_q)
    # basic bootstrap interval [2 t - q_hi, 2 t - q_lo]
    return Interval(float(estimate), float(2 * estimate - q_hi), float(2 * estimate - q_lo), float(np.mean(reps)))


def fold_bootstrap(folds: Sequence[PositionalCounts], positions, n_boot: int, *, kind: str = "chord", seed=0):
    r"""Yield the Hellinger matrix $D^*$ of each bootstrap replicate of the folds.

    Parameters
    ----------
    folds : list of PositionalCounts
        Counts of disjoint sets of sequences (:func:`posgeom.geometry.fold_counts`), each (n, v).
    positions : array-like of int, shape (m,)
        The positions of the point estimate (a replicate that misses one is skipped).
    n_boot : int
        Replicates drawn (fewer are yielded when some are skipped).
    kind : {"chord", "normalized", "geodesic"}
    seed : int or numpy Generator

    Yields
    ------
    ndarray of shape (m, m)
        $D^*_{ij}$ of the marginals $\mu^*_i = c^*_i / N^*_i$, $c^* = \sum_f w_f c_f$ with
        $w \sim \mathrm{Multinomial}(F, \mathbf 1 / F)$ the number of times each fold is drawn.
    """
    folds = list(folds)
    if len(folds) < 2:
        raise ValueError(f"the bootstrap needs at least 2 folds; got {len(folds)}")
    n_boot = check_positive_int("n_boot", n_boot)
    positions = np.asarray(positions)
    rng = np.random.default_rng(seed)
    for _ in range(n_boot):
        pick = np.bincount(rng.integers(0, len(folds), size=len(folds)), minlength=len(folds))
        c = sum(int(w) * f.counts for f, w in zip(folds, pick) if w)
        c = c[positions]
        reach = np.asarray(c.sum(axis=1)).ravel()
        if np.any(reach == 0):
            continue
        n_seq = int(sum(int(w) * f.n_sequences for f, w in zip(folds, pick)))
        yield hellinger_matrix(PositionalCounts(c, n_seq), kind=kind)


def bootstrap_intervals(D, folds, positions, statistics: Callable[[np.ndarray], np.ndarray], *, n_boot: int,
                        level: float = 0.95, kind: str = "chord", seed=0, progress=None):
    r"""Point estimates, basic bootstrap intervals and replicates of a vector of statistics of $D$.

    Parameters
    ----------
    D : array-like of shape (m, m)
        The Hellinger matrix of the whole sample over ``positions``.
    folds, positions, n_boot, kind, seed :
        As :func:`fold_bootstrap`.
    statistics : callable
        ``statistics(D) -> ndarray of shape (k,)``.
    level : float
    progress : callable, optional
        Wraps the replicate iterator (e.g. ``posgeom.progress.tqdm``).

    Returns
    -------
    intervals : list of Interval, length k
    replicates : ndarray of shape (n_used, k)
    """
    point = np.asarray(statistics(np.asarray(D, dtype=np.float64)), dtype=np.float64)
    it = fold_bootstrap(folds, positions, n_boot, kind=kind, seed=seed)
    reps = np.array([statistics(Dr) for Dr in (progress(it) if progress else it)], dtype=np.float64)
    if reps.shape[0] < 2:
        raise ValueError(f"only {reps.shape[0]} of {n_boot} replicates reached every kept position; "
                         "use fewer positions (min_count) or larger folds")
    return [basic_interval(point[j], reps[:, j], level) for j in range(point.size)], reps


def difference_interval(intervals: Sequence[Interval], replicates, a: int, b: int, level: float = 0.95) -> Interval:
    r"""The basic bootstrap interval of the difference $t_a - t_b$ of two statistics bootstrapped together.

    Parameters
    ----------
    intervals : list of Interval, length k
        The intervals of the statistics (:func:`bootstrap_intervals`); their estimates give $t_a - t_b$.
    replicates : array-like of shape (n_used, k)
        Their replicates; column ``a`` minus column ``b`` gives the replicates of the difference.
    a, b : int
        Indices of the two statistics.
    level : float in (0, 1)

    Returns
    -------
    Interval
    """
    reps = np.asarray(replicates, dtype=np.float64)
    if reps.ndim != 2 or reps.shape[1] != len(intervals):
        raise ValueError(f"replicates must have one column per interval ({len(intervals)}); got shape {reps.shape}")
    # replicates of t_a - t_b: the difference of the columns (same resampled folds)
    return basic_interval(intervals[a].estimate - intervals[b].estimate, reps[:, a] - reps[:, b], level)
