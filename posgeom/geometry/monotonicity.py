r"""Monotonicity and separation (Theorem 4 of the paper).

The violation rate $v = n_d / (n_c + n_d)$ counts discordant pairs of position pairs between
$\operatorname{vec}_{i<j}(D)$ and $\operatorname{vec}_{i<j}(\hat D)$, ties excluded ($= (1 - \tau_a)/2$ on
untied data), in $O(m \log m)$ from scipy's $\tau_b$ and exact tie counts (exact integers for $m < 10^7$).
Separation is $\min_{i \ne j} \|p_i - p_j\|$, also over the median pairwise distance (scale-free).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from ..validation import check_distance_matrix, upper
from .hellinger import euclidean_distances
from .stress import distances_of

__all__ = ["violation_rate", "ViolationCounts", "spearman", "Separation", "separation", "linear_predictions"]

_MAX_PAIRS = 10_000_000  # m above which tau-based recovery of n_c - n_d is no longer provably exact


@dataclass(frozen=True)
class ViolationCounts:
    """Exact counts of concordant, discordant and tied pairs of position pairs; ``rate`` $= n_d / (n_c + n_d)$."""

    concordant: int
    discordant: int
    tied_D: int
    tied_Dhat: int
    tied_both: int
    total: int

    @property
    def rate(self) -> float:
        untied = self.concordant + self.discordant
        return self.discordant / untied if untied else float("nan")


def _tied_pairs(x: np.ndarray) -> int:
    """sum over tie groups t of t (t - 1) / 2, exact."""
    _, cnt = np.unique(x, return_counts=True)
    cnt = cnt[cnt > 1].astype(object)
    return int(sum(c * (c - 1) // 2 for c in cnt))


def _tied_pairs_both(a: np.ndarray, b: np.ndarray) -> int:
    ab = np.stack([a, b], axis=1)
    _, cnt = np.unique(ab, axis=0, return_counts=True)
    cnt = cnt[cnt > 1]
    return int(sum(int(c) * (int(c) - 1) // 2 for c in cnt))


def _pair_vectors(D, Dhat, as_distances):
    D = check_distance_matrix(D, "D")
    Dh = distances_of(Dhat, D.shape[0], as_distances, name="Dhat")
    return upper(D), upper(Dh)


def violation_rate(D, Dhat, *, as_distances: bool | None = None, return_counts: bool = False):
    r"""Fraction of discordant pairs of position pairs between $D$ and $\hat D$, ties excluded: $n_d / (n_c + n_d)$.

    Parameters
    ----------
    D : array-like of shape (n, n)
    Dhat : array-like of shape (n, n) or (n, d)
        Encoding distances or the encoding itself (read as in :func:`stress`).
    return_counts : bool
        Also return a :class:`ViolationCounts`.

    Returns
    -------
    rate : float
        In [0, 1]; NaN (with a warning) when every pair of pairs is tied (e.g. a constant $\hat D$).
    counts : ViolationCounts, when ``return_counts``.
    """
    a, b = _pair_vectors(D, Dhat, as_distances)
    m = a.size
    if m > _MAX_PAIRS:
        raise ValueError(f"n(n-1)/2 = {m} pairs exceeds {_MAX_PAIRS}; the exact count is not guaranteed")
    n0 = m * (m - 1) // 2
    n1, n2, n3 = _tied_pairs(a), _tied_pairs(b), _tied_pairs_both(a, b)
    untied = n0 - n1 - n2 + n3
    if n0 - n1 == 0 or n0 - n2 == 0 or untied == 0:
        warnings.warn(
            "violation rate undefined: every pair of position pairs is tied (constant D or Dhat)",
            RuntimeWarning,
            stacklevel=2,
        )
        counts = ViolationCounts(0, 0, n1, n2, n3, n0)
        return (float("nan"), counts) if return_counts else float("nan")
    from scipy.stats import kendalltau  # here, not at the top: scipy.stats costs ~1 s in every process importing geometry

    tau_b = kendalltau(a, b, variant="b").statistic
    # n_c - n_d = tau_b * sqrt((n0 - n1)(n0 - n2))
    diff = int(round(tau_b * math.sqrt(n0 - n1) * math.sqrt(n0 - n2)))
    if (untied - diff) % 2:  # n_c + n_d and n_c - n_d have the same parity
        raise ArithmeticError("internal: inexact discordant count; report this input")
    disc = (untied - diff) // 2
    counts = ViolationCounts(untied - disc, disc, n1, n2, n3, n0)
    rate = disc / untied
    return (rate, counts) if return_counts else rate


def spearman(D, Dhat, *, as_distances: bool | None = None) -> float:
    r"""Spearman's rank correlation $\rho$ between $\operatorname{vec}_{i<j} D$ and $\operatorname{vec}_{i<j}\hat D$.

    Parameters
    ----------
    D : array-like of shape (n, n)
    Dhat : array-like of shape (n, n) or (n, d)

    Returns
    -------
    float
        NaN (with a ``RuntimeWarning``) when either vector is constant or there is a single pair (n = 2).
    """
    a, b = _pair_vectors(D, Dhat, as_distances)
    if a.size < 2 or np.all(a == a[0]) or np.all(b == b[0]):
        # scipy returns NaN for these, warning only for some of them: one warning for all
        warnings.warn("spearman undefined: fewer than 2 position pairs, or a constant D or Dhat", RuntimeWarning,
                      stacklevel=2)
        return float("nan")
    from scipy.stats import spearmanr  # imported here for the reason given in violation_rate

    return float(spearmanr(a, b).statistic)


@dataclass(frozen=True)
class Separation:
    r"""Result of :func:`separation` (Theorem 4).

    Attributes
    ----------
    raw, normalized, median : float
        $\min_{i \ne j} \hat d_{ij}$; over ``median`` $= \operatorname{median}_{i<j} \hat d_{ij}$ (0 when ``raw`` is 0).
    pair : tuple of int
        A closest pair $(i, j)$, $i < j$ (the first in row-major order).
    """

    raw: float
    normalized: float
    median: float
    pair: tuple


def separation(P, *, as_distances: bool | None = None) -> Separation:
    r"""$\operatorname{sep}(P) = \min_{i \ne j} \|p_i - p_j\|$ and its value over the median pairwise distance.

    Parameters
    ----------
    P : array-like of shape (n, d) or (n, n)
        An encoding (n >= 2 rows) or its distance matrix (read as in :func:`stress`).
    """
    from ..validation import as_float_matrix
    X = as_float_matrix(P, "P")
    if X.shape[0] < 2:
        raise ValueError(f"separation needs at least 2 positions; got {X.shape[0]}")
    Dh = distances_of(X, None, as_distances, name="P")
    d = upper(Dh)
    k = int(np.argmin(d))
    raw = float(d[k])
    # the median of an even count averages the two middle distances: lo + (hi - lo) / 2 cannot overflow
    middle = np.partition(d, [(d.size - 1) // 2, d.size // 2])
    lo, hi = float(middle[(d.size - 1) // 2]), float(middle[d.size // 2])
    med = lo + (hi - lo) / 2.0
    iu = np.triu_indices(Dh.shape[0], k=1)
    norm = 0.0 if raw == 0.0 else raw / med
    return Separation(raw, norm, med, (int(iu[0][k]), int(iu[1][k])))


def linear_predictions(marginals) -> dict[str, np.ndarray]:
    r"""Distances of the linear images of the counts and marginals that the NTK argument predicts (with $G = I$).

    Parameters
    ----------
    marginals : PositionalMarginals
        With ``probs`` (n, v) and ``reach`` (n,).

    Returns
    -------
    dict
        ``marginals_l2`` (n, n): $\|\mu_i - \mu_j\|_2$; ``counts_l2`` (n, n): $\|c_i - c_j\|_2 / N_0$.
    """
    mu = np.asarray(marginals.probs, dtype=np.float64)
    reach = np.asarray(marginals.reach, dtype=np.float64)
    return {"marginals_l2": euclidean_distances(mu),
            # c_i / N_0 = mu_i N_i / N_0
            "counts_l2": euclidean_distances(mu * (reach / reach.max())[:, None])}
