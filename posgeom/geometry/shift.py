r"""Shift structure of a square matrix: how far $D_{ij}$ is from depending on the offset between $i$ and $j$ only.

Each measure averages $D$ over the pairs with the same offset (:func:`offset_means`): $\lvert i - j\rvert$
(:func:`toeplitz_projection`), $j - i$ (:func:`toeplitz_deviation`), $(j - i) \bmod n$ (:func:`circulant_deviation`);
:func:`toeplitz_spread` is a worst case.
"""

from __future__ import annotations

import numpy as np

from ..validation import as_square_matrix, upper

__all__ = ["offset_means", "toeplitz_projection", "toeplitz_deviation", "circulant_deviation", "toeplitz_spread"]


def offset_means(D, offset) -> tuple[np.ndarray, np.ndarray]:
    r"""Average ``D`` over the classes of ``offset`` (labels $0 \dots m-1$, none empty): $T_{ij} = \bar D_{c}$.

    Parameters
    ----------
    D : array-like of shape (n, n)
    offset : array-like of int, shape (n, n)
        The class of each entry; every label in ``0 .. offset.max()`` must occur.

    Returns
    -------
    T : ndarray of shape (n, n)
    means : ndarray of shape (m,)
        ``means[c]`` is the mean of ``D`` over class ``c``.
    """
    D = as_square_matrix(D, "D")
    offset = np.asarray(offset)
    if offset.shape != D.shape or not np.issubdtype(offset.dtype, np.integer) or offset.min() < 0:
        raise ValueError(f"offset must be non-negative integer labels of shape {D.shape}; got {offset.dtype} "
                         f"of shape {offset.shape}")
    labels = offset.ravel()
    sizes = np.bincount(labels)
    if np.any(sizes == 0):
        raise ValueError(f"offset leaves class {int(np.argmin(sizes))} empty; number the classes 0 .. m-1")
    # means[c] = sum of D over class c / size of class c
    means = np.bincount(labels, weights=D.ravel()) / sizes
    return means[offset], means


def _deviation_from_class_means(D, offset_class) -> float:
    """``||D - M||_F / ||D||_F`` with ``M`` the mean of ``D`` over each class of ``offset_class(i, j)``."""
    D = as_square_matrix(D, "D", min_n=2)
    idx = np.arange(D.shape[0])
    M, _ = offset_means(D, offset_class(idx[:, None], idx[None, :], D.shape[0]))
    norm = np.linalg.norm(D)
    # ||D - M||_F / ||D||_F (0 for an all-zero D)
    return float(np.linalg.norm(D - M) / norm) if norm > 0 else 0.0


def toeplitz_projection(D) -> tuple[np.ndarray, np.ndarray, float]:
    r"""The shift-equivariant part of a distance matrix: the mean of ``D`` along each offset $\lvert i-j\rvert$.

    $R^2 = 1 - \sum_{i<j} (D - T)_{ij}^2 / \sum_{i<j} (D_{ij} - \bar d)^2$: 1 when $D$ depends on $|i - j|$ only.

    Parameters
    ----------
    D : array-like of shape (n, n), n >= 3

    Returns
    -------
    T : ndarray of shape (n, n)
    profile : ndarray of shape (n,)
        ``profile[k]`` is the mean of ``D`` at offset ``k`` (0 for a distance matrix at ``k = 0``).
    r2 : float
        NaN when the off-diagonal entries are all equal.
    """
    D = as_square_matrix(D, "D", min_n=3)
    n = D.shape[0]
    idx = np.arange(n)
    # profile[k] = mean of D over |i - j| = k
    T, profile = offset_means(D, np.abs(idx[:, None] - idx[None, :]))
    d = upper(D)
    total = float(np.sum((d - d.mean()) ** 2))
    # R^2 = 1 - sum (D - T)^2 / sum (D - mean)^2 over i < j
    r2 = 1.0 - float(np.sum((d - upper(T)) ** 2)) / total if total > 0 else float("nan")
    return T, profile, r2


def toeplitz_deviation(D) -> float:
    r"""$\lVert D - \mathcal T(D)\rVert_F / \lVert D\rVert_F$, $\mathcal T(D)_{ij}$ = mean of the diagonal $j - i$.

    Parameters
    ----------
    D : array-like of shape (n, n), n >= 2

    Returns
    -------
    float
        0 for an all-zero ``D``.
    """
    # T(D)_ij = mean_k D_{k, k + (j - i)}: classes j - i + n - 1 in 0 .. 2n - 2
    return _deviation_from_class_means(D, lambda i, j, n: j - i + n - 1)


def circulant_deviation(D) -> float:
    r"""$\lVert D - \mathcal C(D)\rVert_F / \lVert D\rVert_F$, $\mathcal C(D)_{ij}$ = mean over $(j - i) \bmod n$.

    Parameters
    ----------
    D : array-like of shape (n, n), n >= 2

    Returns
    -------
    float
        0 for an all-zero ``D``.
    """
    # C(D)_ij = mean of D over (j - i) mod n
    return _deviation_from_class_means(D, lambda i, j, n: (j - i) % n)


def toeplitz_spread(D) -> float:
    r"""The worst-case distance of ``D`` from depending on the offset only (0 for a Toeplitz upper triangle).

    $\max_{\delta \ge 1} \big(\max_{i} D_{i, i+\delta} - \min_{i} D_{i, i+\delta}\big) / \max \lvert D\rvert$.

    Parameters
    ----------
    D : array-like of shape (n, n)

    Returns
    -------
    float
        In ``[0, 1]`` for a non-negative ``D``; 0 when ``D`` is all zeros.
    """
    D = as_square_matrix(D, "D")
    top = float(np.max(np.abs(D)))
    if top == 0.0:
        return 0.0
    n = D.shape[0]
    # range of each upper diagonal delta = 1 .. n-1, the largest one relative to max |D|
    spread = max((float(np.ptp(np.diagonal(D, offset=k))) for k in range(1, n)), default=0.0)
    return spread / top
