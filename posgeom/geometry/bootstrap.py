r"""Bootstrap over sequences: intervals for any statistic of a corpus's Hellinger matrix.

A replicate draws folds of sequences (:func:`posgeom.geometry.fold_counts`) with replacement and recomputes
$D^*$ and $t(D^*)$ over the kept positions (one that misses a position is left out). The interval is the
percentile interval re-centred on the estimate, $[\,t + q_{(1-\ell)/2} - q_{1/2},\ t + q_{(1+\ell)/2} - q_{1/2}\,]$,
so it always holds $t$; the bias $\bar t^* - t$ is reported with its Monte-Carlo standard error, not subtracted.
A bounded statistic is re-centred on the scale $\log(x - lo)$, $-\log(hi - x)$ or the logit, so its interval
stays inside the bounds (on the original scale, clipped, when a value lies on a bound).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from ..validation import check_bounds, check_positive_int
from .counts import PositionalCounts
from .hellinger import hellinger_matrix
from .rank import fold_counts

__all__ = ["interval_text", "difference_bounds", "Interval", "percentile_interval", "percentile_intervals", "fold_bootstrap", "bootstrap_intervals",
           "difference_interval", "sequence_intervals", "nested_intervals"]

#: A bias counts as found when it exceeds this many Monte-Carlo standard errors of the bootstrap mean:
#: two standard errors is the usual 95 % two-sided margin, so a bias below it is indistinguishable from the
#: noise of drawing a finite number of replicates.
BIAS_FOUND_SE = 2.0
#: How far (relative to the bound, at least 1) a statistic may lie past its bound by rounding: it is put on
#: the bound; farther is an error (a wrong bound or a wrong statistic).
ROUNDING_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Interval:
    """A point estimate, its bootstrap interval (:func:`percentile_interval`) and the bootstrap's bias.

    Attributes
    ----------
    estimate : float
        The statistic of the whole sample.
    low, high : float
        The interval; ``low <= estimate <= high`` always (checked on construction).
    bias, bias_se : float
        The mean of the replicates minus ``estimate``, and its Monte-Carlo standard error (sd / sqrt(count)).
    """

    estimate: float
    low: float
    high: float
    bias: float = 0.0
    bias_se: float = 0.0

    def __post_init__(self):
        if not self.low <= self.estimate <= self.high:
            raise ValueError(f"an interval must hold its estimate: got {self.estimate!r} [{self.low!r}, {self.high!r}]")

    def as_dict(self) -> dict[str, float]:
        """``{"estimate", "low", "high", "bias", "bias_se"}`` (as stored in a result)."""
        return {"estimate": self.estimate, "low": self.low, "high": self.high, "bias": self.bias,
                "bias_se": self.bias_se}

    @classmethod
    def from_dict(cls, entry: dict) -> "Interval":
        """The interval stored by :meth:`as_dict`; a record of the older basic interval is refused with what to do."""
        if "bootstrap_mean" in entry:
            raise ValueError("this interval was stored by older code (a basic bootstrap interval, which need not hold "
                             "its estimate); recompute the result that holds it (force=True)")
        return cls(**entry)

    def bias_found(self) -> bool:
        """True when the bootstrap's bias exceeds :data:`BIAS_FOUND_SE` Monte-Carlo standard errors."""
        return abs(self.bias) > BIAS_FOUND_SE * self.bias_se

    def text(self, fmt: str = "{:.3f}", *, show_bias: bool = True) -> str:
        """``estimate [low, high]``, followed by ``(bootstrap bias b)`` when the bias is found and shows in ``fmt``."""
        out = f"{fmt.format(self.estimate)} [{fmt.format(self.low)}, {fmt.format(self.high)}]"
        if show_bias and self.bias_found():
            b = fmt.format(self.bias)
            if self.bias != 0 and not _prints_as_zero(b):  # a bias that rounds to 0 when printed is not news
                out += f" (bootstrap bias {b})"
        return out


def interval_text(entry: dict[str, float], fmt: str = "{:.3f}") -> str:
    """``estimate [low, high]`` of one stored interval (:meth:`Interval.text` of :meth:`Interval.from_dict`)."""
    return Interval.from_dict(entry).text(fmt)


def difference_bounds(bounds) -> tuple:
    """The range of a difference of two quantities of range ``bounds``: (lo - hi, hi - lo), None where unbounded."""
    lo, hi = bounds
    span = None if lo is None or hi is None else hi - lo
    return (None if span is None else -span, span)


def _prints_as_zero(text: str) -> bool:
    """True when a formatted number reads 0 (``0.000``, ``-0.0%``, ``+0.00e+00``)."""
    try:
        return float(text.strip().rstrip("%").replace(",", "")) == 0
    except ValueError:
        return False


def _per_statistic_bounds(bounds, k: int) -> list[tuple[float, float]]:
    """One ``(lo, hi)`` per statistic from None, one pair of numbers/None, or k pairs/None."""
    def scalar(x):
        return x is None or isinstance(x, (int, float, np.integer, np.floating))

    if not (bounds is None or isinstance(bounds, (tuple, list))):
        raise ValueError(f"bounds must be None, a pair (lo, hi) or one pair per statistic; got {bounds!r}")
    if bounds is None or (len(bounds) == 2 and all(scalar(b) for b in bounds)):
        return [check_bounds(bounds)] * k
    if len(bounds) != k:
        raise ValueError(f"bounds must be one pair, or one pair (or None) per statistic ({k}); got {len(bounds)}")
    return [check_bounds(b) for b in bounds]


def _to_scale(x, lo: float, hi: float):
    """The increasing map of the open interval (lo, hi) onto the real line (identity when unbounded)."""
    if np.isfinite(lo) and np.isfinite(hi):
        u = (x - lo) / (hi - lo)
        return np.log(u) - np.log1p(-u)
    if np.isfinite(lo):
        return np.log(x - lo)
    if np.isfinite(hi):
        return -np.log(hi - x)
    return x


def _from_scale(y, lo: float, hi: float):
    """The inverse of ``_to_scale``."""
    from scipy.special import expit
    if np.isfinite(lo) and np.isfinite(hi):
        return lo + (hi - lo) * expit(y)
    with np.errstate(over="ignore"):  # a far tail maps to an infinite end, clipped by the caller
        if np.isfinite(lo):
            return lo + np.exp(y)
        if np.isfinite(hi):
            return hi - np.exp(-y)
    return y


def percentile_intervals(estimates, replicates, level: float = 0.95, *, bounds=None) -> list[Interval]:
    r"""Percentile intervals re-centred on the estimates (module docstring), one per column of replicates.

    Parameters
    ----------
    estimates : array-like of shape (k,)
        $t_j$, the statistics of the whole sample; ``level`` in (0, 1).
    replicates : array-like of shape (n_boot, k)
        The statistics of each bootstrap replicate (``n_boot >= 2``, finite).
    bounds : None, (lo, hi) or sequence of k such pairs/None
        Bounds of each statistic (None or an infinite value: no bound on that side). The estimates and
        replicates must lie within them; the intervals then do too.

    Returns
    -------
    list of Interval, length k
    """
    t = np.atleast_1d(np.asarray(estimates, dtype=np.float64))
    reps = np.asarray(replicates, dtype=np.float64)
    if reps.ndim == 1:
        reps = reps[:, None]
    if t.ndim != 1 or reps.ndim != 2 or reps.shape[1] != t.size:
        raise ValueError(f"replicates must have one column per estimate ({t.size}); got shape {reps.shape}")
    if reps.shape[0] < 2:
        raise ValueError(f"a bootstrap interval needs at least 2 replicates; got {reps.shape[0]}")
    if not (np.all(np.isfinite(t)) and np.all(np.isfinite(reps))):
        raise ValueError("the estimates and replicates must be finite (a replicate that fails should be left out)")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1); got {level}")
    per = _per_statistic_bounds(bounds, t.size)
    lo_b, hi_b = np.array([p[0] for p in per]), np.array([p[1] for p in per])
    # a value past a bound by rounding only (a scale-free stress of -1e-17) is put on the bound
    tol = ROUNDING_TOLERANCE * np.maximum(1.0, np.nan_to_num(np.maximum(np.abs(lo_b), np.abs(hi_b)), posinf=1.0))
    t = np.where((t < lo_b) & (t >= lo_b - tol), lo_b, np.where((t > hi_b) & (t <= hi_b + tol), hi_b, t))
    reps = np.where((reps < lo_b) & (reps >= lo_b - tol), lo_b, np.where((reps > hi_b) & (reps <= hi_b + tol), hi_b, reps))
    outside = (t < lo_b) | (t > hi_b) | np.any((reps < lo_b) | (reps > hi_b), axis=0)
    if np.any(outside):
        j = int(np.flatnonzero(outside)[0])
        raise ValueError(f"statistic {j} lies outside its bounds ({lo_b[j]}, {hi_b[j]}): estimate {float(t[j])!r}, "
                         f"replicates in [{float(reps[:, j].min())!r}, {float(reps[:, j].max())!r}]; fix the bounds or "
                         "the statistic")
    # a statistic with its estimate or a replicate on a bound is re-centred on the original scale and clipped
    on_bound = (t == lo_b) | (t == hi_b) | np.any((reps == lo_b) | (reps == hi_b), axis=0)
    a = (1 - level) / 2
    out = []
    for j in range(t.size):
        lo, hi = (-np.inf, np.inf) if on_bound[j] else (lo_b[j], hi_b[j])
        y = _to_scale(reps[:, j], lo, hi)
        q_lo, q_med, q_hi = np.quantile(y, [a, 0.5, 1 - a])
        yt = _to_scale(t[j], lo, hi)
        low = float(np.clip(_from_scale(yt + (q_lo - q_med), lo, hi), lo_b[j], hi_b[j]))
        high = float(np.clip(_from_scale(yt + (q_hi - q_med), lo, hi), lo_b[j], hi_b[j]))
        est = float(t[j])
        # min/max: the round trip through the scale can move t by an ulp; the interval holds t exactly
        mean = float(np.mean(reps[:, j]))
        se = float(np.std(reps[:, j], ddof=1) / np.sqrt(reps.shape[0]))
        out.append(Interval(est, min(low, est), max(high, est), mean - est, se))
    return out


def percentile_interval(estimate: float, replicates, level: float = 0.95, *, bounds=None) -> Interval:
    r"""The percentile interval of a statistic's replicates re-centred on its estimate (module docstring).

    Parameters
    ----------
    estimate : float
        $t$, the statistic of the whole sample; ``level`` in (0, 1).
    replicates : array-like of shape (n_boot,)
        The statistic of each bootstrap replicate (at least 2, finite).
    bounds : (lo, hi), optional
        The statistic's range (None on a side: unbounded), e.g. ``(0, None)`` for a stress, ``(0, 1)`` for a rate.
    """
    reps = np.asarray(replicates, dtype=np.float64).ravel()
    return percentile_intervals([estimate], reps[:, None], level, bounds=bounds)[0]


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
        The Hellinger distance; ``seed`` (int or Generator) draws the folds.

    Yields
    ------
    ndarray of shape (m, m)
        $D^*_{ij}$ of the marginals $\mu^*_i = c^*_i / N^*_i$, $c^* = \sum_f w_f c_f$ with
        $w \sim \mathrm{Multinomial}(F, \mathbf 1 / F)$ the number of times each fold is drawn.
    """
    folds = list(folds)
    if len(folds) < 2:
        raise ValueError(f"the bootstrap needs at least 2 folds; got {len(folds)}")
    n_boot = check_positive_int(n_boot, "n_boot")
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
                        level: float = 0.95, kind: str = "chord", seed=0, progress=None, bounds=None):
    r"""Point estimates, bootstrap intervals (:func:`percentile_intervals`) and replicates of statistics of $D$.

    Parameters
    ----------
    D : array-like of shape (m, m)
        The Hellinger matrix of the whole sample over ``positions``.
    folds, positions, n_boot, kind, seed :
        As :func:`fold_bootstrap`.
    statistics : callable
        ``statistics(D) -> ndarray of shape (k,)``; ``level`` the coverage.
    progress, bounds :
        A callable wrapping the replicate iterator (e.g. ``tqdm``); the statistics' ranges
        (:func:`percentile_intervals`).

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
    return percentile_intervals(point, reps.reshape(len(reps), point.size), level, bounds=bounds), reps


def difference_interval(intervals: Sequence[Interval], replicates, a: int, b: int, level: float = 0.95, *,
                        bounds=None) -> Interval:
    r"""The interval of the difference $t_a - t_b$ of two statistics bootstrapped together.

    Parameters
    ----------
    intervals : list of Interval, length k
        The intervals of the statistics (:func:`bootstrap_intervals`); their estimates give $t_a - t_b$.
    replicates : array-like of shape (n_used, k)
        Their replicates; column ``a`` minus column ``b`` gives the replicates of the difference.
    a, b : int
        The columns; ``level`` in (0, 1).
    bounds : (lo, hi), optional
        The difference's range (e.g. ``(-1, 1)`` for two quantities in ``[0, 1]``); default unbounded.
    """
    reps = np.asarray(replicates, dtype=np.float64)
    if reps.ndim != 2 or reps.shape[1] != len(intervals):
        raise ValueError(f"replicates must have one column per interval ({len(intervals)}); got shape {reps.shape}")
    # replicates of t_a - t_b: the difference of the columns (same resampled folds)
    return percentile_interval(intervals[a].estimate - intervals[b].estimate, reps[:, a] - reps[:, b], level,
                               bounds=bounds)


def sequence_intervals(D, sequences, n_positions: int, vocab_size: int, positions, statistics, names, *,
                       differences=None, n_boot: int, n_folds: int, level: float = 0.95, kind: str = "chord",
                       seed=0, groups=None, bounds=None, progress: str | None = None) -> tuple[dict, np.ndarray]:
    r"""Bootstrap intervals over sequences of named statistics of $D$ and of their differences (same replicates).

    Parameters
    ----------
    D : array-like of shape (m, m)
        The Hellinger matrix (``kind``) of all the sequences over ``positions`` (m,).
    sequences, n_positions, vocab_size :
        Token ids (1-D int arrays), counted as by :func:`posgeom.geometry.positional_counts`.
    statistics, names :
        ``statistics(D) -> ndarray of shape (k,)``, and the k names of its entries.
    differences : mapping of str to (str, str), optional
        ``{key: (a, b)}``: ``t_a - t_b``, within :func:`difference_bounds` of ``a``'s range.
    n_boot, n_folds, level, kind, seed :
        As :func:`bootstrap_intervals` (``seed`` also deals the folds).
    groups, bounds, progress :
        One label per sequence, shape (n_sequences,) (:func:`posgeom.geometry.fold_members`); the statistics'
        ranges (as :func:`bootstrap_intervals`); a progress bar's description (none when None).

    Returns
    -------
    values : dict
        ``n_used``, ``statistics`` {name: :meth:`Interval.as_dict`}, ``differences`` {key: the same}.
    replicates : ndarray of shape (n_used, k)
    """
    wrap = None
    if progress is not None:
        from ..progress import tqdm

        def wrap(it):
            return tqdm(it, desc=progress, total=n_boot, leave=False)

    names = list(names)
    folds = fold_counts(sequences, n_positions, vocab_size, n_folds=n_folds, seed=seed, groups=groups)
    intervals, reps = bootstrap_intervals(D, folds, positions, statistics, n_boot=n_boot, level=level, kind=kind,
                                          seed=seed, progress=wrap, bounds=bounds)
    per = _per_statistic_bounds(bounds, len(names))
    diffs = {key: difference_interval(intervals, reps, names.index(a), names.index(b), level,
                                      bounds=difference_bounds(per[names.index(a)])).as_dict()
             for key, (a, b) in (differences or {}).items()}
    return {"n_used": int(len(reps)), "statistics": {n: iv.as_dict() for n, iv in zip(names, intervals)},
            "differences": diffs}, reps


def nested_intervals(flat: dict) -> dict:
    """``{(k1, ..., kn): interval}`` (as ``sequence_intervals`` returns them, keyed by tuples of identifiers) as
    nested mappings ``{k1: ... {kn: Interval}}``; a key that is not a tuple is one level."""
    out: dict = {}
    for key, interval in flat.items():
        *outer, last = key if isinstance(key, tuple) else (key,)
        node = out
        for part in outer:
            node = node.setdefault(part, {})
        node[last] = Interval.from_dict(interval)
    return out
