r"""Fourier structure of a distance matrix: the lowest Fourier pairs, the match of a subspace to them, and
the closed-form spectrum of a circulant distance matrix (:mod:`posgeom.geometry.circulant`).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg

from ..validation import check_int

__all__ = ["fourier_basis", "fourier_match", "circulant_eigenvalues"]


def fourier_basis(n: int, m: int) -> np.ndarray:
    r"""The $m$ lowest Fourier pairs on $n$ points as (n, 2m) orthonormal columns, interleaved ($1 \le m < n/2$)."""
    n, m = check_int(n, "n", 3), check_int(m, "m", 1)
    if 2 * m >= n:
        raise ValueError(f"m must be less than n / 2 (m Fourier pairs need 2m < n points); got n={n}, m={m}")
    i = np.arange(n)[:, None]
    f = np.arange(1, m + 1)[None, :]
    angle = 2 * np.pi * f * i / n
    out = np.empty((n, 2 * m))
    out[:, 0::2] = np.sqrt(2.0 / n) * np.cos(angle)
    out[:, 1::2] = np.sqrt(2.0 / n) * np.sin(angle)
    return out


def fourier_match(U, m: int) -> float:
    r"""Mean squared cosine of the principal angles between ``span(U[:, :2m])`` and the $m$ lowest Fourier pairs.

    $\frac1{2m}\lVert \hat U^\top F\rVert_F^2 \in [0, 1]$ with $\hat U$, $F$ orthonormal bases; 1 for the same subspace.

    Parameters
    ----------
    U : array-like of shape (n, k), k >= 2m
    m : int
    """
    U = np.asarray(U, dtype=np.float64)
    if U.ndim != 2 or U.shape[1] < 2 * m:
        raise ValueError(f"U must have at least 2m = {2 * m} columns; got shape {U.shape}")
    angles = scipy.linalg.subspace_angles(U[:, : 2 * m], fourier_basis(U.shape[0], m))
    return float(np.mean(np.cos(angles) ** 2))


def circulant_eigenvalues(g) -> np.ndarray:
    r"""Eigenvalues $\lambda_f = -\frac12 \sum_\delta g(\delta)^2 \cos(2\pi f\delta/n)$ of $B$ for circulant distances.

    Parameters
    ----------
    g : array-like of shape (n,)
        $g(0) = 0$, $g(\delta) = g(n - \delta) \ge 0$.

    Returns
    -------
    ndarray of shape (n,), descending.
    """
    g = np.asarray(g, dtype=np.float64)
    n = g.size
    if g.ndim != 1 or n < 2 or g[0] != 0 or np.any(g < 0) or not np.allclose(g[1:], g[1:][::-1]):
        raise ValueError("g must be a vector with g[0] = 0, g >= 0 and g[d] = g[n - d]")
    f = np.arange(n)[:, None]
    delta = np.arange(n)[None, :]
    # lambda_f = -1/2 sum_delta g(delta)^2 cos(2 pi f delta / n)
    lam = -0.5 * (np.cos(2 * np.pi * f * delta / n) @ (g * g))
    lam[0] = 0.0
    return np.sort(lam)[::-1]
