r"""Hellinger distances between positional marginals (the paper's Eq. 3).

Chord form $d_H(\mu_i, \mu_j) = \| \sqrt{\mu_i} - \sqrt{\mu_j} \|_2 = \sqrt{2 - 2\,BC_{ij}}$, range
$[0, \sqrt 2]$, $BC_{ij} = \sum_w \sqrt{\mu_i(w)\,\mu_j(w)}$. ``"normalized"`` divides by $\sqrt 2$;
``"geodesic"`` is the Fisher–Rao angle $2 \arccos BC_{ij}$, computed as $4 \arcsin(d_H / 2)$ (accurate near
$BC = 1$), from the Gram matrix of the rows $\sqrt{\mu_i}$ (``_pairwise.py``).
"""

from __future__ import annotations

from enum import StrEnum

import numpy as np
import scipy.sparse as sp

from ._pairwise import pairwise_distances
from ..validation import as_float_matrix, check_choice, power_of_two_scale, reject_complex, unscale
from .counts import PositionalCounts
from .marginals import PositionalMarginals

__all__ = ["hellinger_matrix", "hellinger_distance", "euclidean_distances", "sqrt_marginals", "HellingerKind",
           "HELLINGER_KINDS"]

class HellingerKind(StrEnum):
    """The units of a Hellinger distance: the chord of Eq. 3, chord / sqrt 2, or the Fisher–Rao geodesic."""

    CHORD = "chord"
    NORMALIZED = "normalized"
    GEODESIC = "geodesic"


HELLINGER_KINDS = tuple(HellingerKind)


def _check_kind(kind: str) -> None:
    check_choice(kind, "kind", HELLINGER_KINDS)


def chord_to(D, kind: str):
    r"""Convert chord Hellinger distances $d$ (array or float, in $[0, \sqrt 2]$) to ``kind``."""
    _check_kind(kind)
    if kind == "normalized":
        return D / np.sqrt(2.0)
    if kind == "geodesic":
        return 4.0 * np.arcsin(np.minimum(D, np.sqrt(2.0)) / 2.0)
    return D


#: Tolerance on row sums when probabilities are given directly.
ROW_SUM_ATOL = 1e-8


def row_sum_tolerance(dtype, v: int) -> float:
    r"""How far from 1 a row of ``v`` probabilities may sum: ``ROW_SUM_ATOL``, or $16 \sqrt v\,\varepsilon$ if more."""
    eps = np.finfo(dtype).eps if np.issubdtype(dtype, np.floating) else np.finfo(np.float64).eps
    return max(ROW_SUM_ATOL, 16.0 * np.sqrt(max(v, 1)) * float(eps))


def _check_probs(P, name="marginals"):
    reject_complex(P.data if sp.issparse(P) else P, name)
    in_dtype = P.dtype if sp.issparse(P) else np.asarray(P).dtype
    if sp.issparse(P):
        P = sp.csr_matrix(P, dtype=np.float64)
        data = P.data
        if data.size and (not np.all(np.isfinite(data))):
            raise ValueError(f"{name} contains NaN or infinite entries")
        if data.size and data.min() < 0:
            raise ValueError(f"{name} has negative entries; probabilities are >= 0")
        if data.size and data.max() > 1.0 + ROW_SUM_ATOL:
            raise ValueError(f"{name} has entries above 1 (max {data.max():.3g}); probabilities are <= 1")
        sums = np.asarray(P.sum(axis=1)).ravel()
    else:
        P = as_float_matrix(P, name)
        if np.any(P < 0):
            i, j = np.argwhere(P < 0)[0]
            raise ValueError(f"{name} has negative entries (e.g. [{i}, {j}] = {P[i, j]:.3g}); probabilities are >= 0")
        if P.size and P.max() > 1.0 + ROW_SUM_ATOL:
            i, j = np.unravel_index(int(np.argmax(P)), P.shape)
            raise ValueError(f"{name} has entries above 1 (e.g. [{i}, {j}] = {P[i, j]:.3g}); probabilities are <= 1")
        sums = P.sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1.0) > row_sum_tolerance(in_dtype, P.shape[1]))
    if bad.size:
        k = int(bad[0])
        raise ValueError(
            f"{name} rows must sum to 1: row {k} sums to {sums[k]:.12g} ({bad.size} bad row(s)). "
            "Pass a PositionalCounts, or normalise with P / P.sum(axis=1, keepdims=True); "
            "an all-zero row is an empty position and must be removed"
        )
    return P


def _sqrt_counts(x: PositionalCounts, positions=None) -> sp.csr_matrix:
    """Sparse CSR (n, v) with entries sqrt(c_i(w) / N_i) (rows restricted to ``positions`` if given)."""
    c = x.counts if positions is None else x.counts[positions]
    reach = x.reach if positions is None else x.reach[positions]
    empty = np.flatnonzero(reach == 0)
    if empty.size:
        shown = ", ".join(str(int(i)) for i in empty[:20]) + (" ..." if empty.size > 20 else "")
        raise ValueError(
            f"{empty.size} position(s) are empty (N_i = 0): [{shown}]. Call positional_marginals(counts, "
            "min_count=...) to drop them explicitly, or count fewer positions"
        )
    # s_i(w) = sqrt(c_i(w) / N_i), in place on one float copy of the counts
    data = c.data.astype(np.float64)
    data *= np.repeat(1.0 / reach, np.diff(c.indptr))
    np.sqrt(data, out=data)
    S = sp.csr_matrix((data, c.indices.copy(), c.indptr.copy()), shape=c.shape)
    S.has_canonical_format = True
    return S


def _sqrt_rows(x):
    """S with rows sqrt(mu_i): sparse CSR from counts (and unsmoothed marginals), dense otherwise."""
    if isinstance(x, PositionalMarginals):
        if x.alpha == 0 and x.counts is not None:
            return _sqrt_counts(x.counts, x.positions)
        return np.sqrt(x.probs)
    if isinstance(x, PositionalCounts):
        return _sqrt_counts(x)
    P = _check_probs(x)
    if sp.issparse(P):
        P = P.copy()
        P.data = np.sqrt(P.data)
        return P
    return np.sqrt(P)


def sqrt_marginals(marginals_or_counts) -> np.ndarray:
    r"""The dense (n, v) float64 matrix $S$ of rows $\sqrt{\mu_i}$ (an isometric embedding of the chord distance)."""
    S = _sqrt_rows(marginals_or_counts)
    return S.toarray() if sp.issparse(S) else S


def hellinger_matrix(marginals_or_counts, kind: str = "chord") -> np.ndarray:
    r"""Pairwise Hellinger distances between positions (the paper's Eq. 3; module docstring).

    Parameters
    ----------
    marginals_or_counts : PositionalMarginals, PositionalCounts, or array-like (n, v)
        Marginals; counts (every position non-empty, $\mu_i = c_i / N_i$); or a dense/sparse matrix of
        probabilities whose rows sum to 1 (within ``row_sum_tolerance``).
    kind : {"chord", "normalized", "geodesic"}

    Returns
    -------
    D : ndarray of shape (n, n), float64
        Symmetric, zero diagonal; ``"chord"`` values in $[0, \sqrt 2]$.
    """
    _check_kind(kind)
    S = _sqrt_rows(marginals_or_counts)
    if S.shape[0] < 2:
        raise ValueError(f"need at least 2 positions for a distance matrix; got {S.shape[0]}")
    D = pairwise_distances(S)
    # rounding can only push a chord distance past sqrt(2) by ~1e-16 (BC >= 0 exactly)
    np.minimum(D, np.sqrt(2.0), out=D)
    return chord_to(D, kind)


def hellinger_distance(p, q, kind: str = "chord") -> float:
    r"""Hellinger distance between two distributions ``p``, ``q`` of shape (v,): the one-pair reference formula."""
    reject_complex(p, "p")
    reject_complex(q, "q")
    p, q = np.asarray(p), np.asarray(q)
    if p.ndim != 1 or q.ndim != 1 or p.shape != q.shape:
        raise ValueError(f"p and q must be 1-D distributions of the same length; got shapes {p.shape} and {q.shape}")
    P = _check_probs(np.vstack([p, q]), "p, q")
    _check_kind(kind)
    # d_H = || sqrt(p) - sqrt(q) ||_2
    d = min(float(np.linalg.norm(np.sqrt(P[0]) - np.sqrt(P[1]))), np.sqrt(2.0))
    return float(chord_to(d, kind))


def euclidean_distances(P) -> np.ndarray:
    r"""Exact pairwise Euclidean distances $\hat d_{ij} = \|p_i - p_j\|_2$ between the rows of an encoding.

    Parameters
    ----------
    P : array-like of shape (n, d)

    Returns
    -------
    Dhat : ndarray of shape (n, n), float64
        Symmetric, exactly 0 for identical rows, accurate to ~1e-12 relative.
    """
    P = as_float_matrix(P, "P")
    if P.shape[0] == 0:
        raise ValueError("P has no rows")
    # d(P) = 2^e d(P / 2^e): a power-of-2 scale is exact, and keeps squared norms (and the mean) from overflowing
    scale = power_of_two_scale(P)
    Q = P / scale
    # centring leaves distances unchanged and shrinks |p_i|, which the Gram formula's accuracy depends on
    Qc = Q - Q.mean(axis=0, keepdims=True)
    return unscale(pairwise_distances(Qc), scale, "distances between the rows of P")
