r"""Summaries of the entries of distance matrices: off-diagonal entries, their root mean square, several
encodings' stress against one target, and the mean of (attention) matrices along each offset $j - i$.
"""

from __future__ import annotations

import numpy as np

from ..validation import upper
from .stress import REPORTED_NORMALIZATIONS, stress

__all__ = ["offdiag", "rms_offdiag", "encoding_stresses", "offset_profiles"]


def offdiag(D) -> np.ndarray:
    """The strictly upper triangle of an (n, n) matrix as a vector of length n (n - 1) / 2."""
    return upper(np.asarray(D))


def rms_offdiag(D) -> float:
    r"""Root mean square of the off-diagonal entries, $\sqrt{\frac{2}{n(n-1)}\sum_{i<j} D_{ij}^2}$."""
    x = offdiag(D)
    return float(np.sqrt(np.mean(x * x)))


def encoding_stresses(D, encodings: dict, normalizations=REPORTED_NORMALIZATIONS) -> dict[str, dict[str, float]]:
    """Stress of each encoding's distance matrix against ``D`` under each normalisation.

    Returns
    -------
    dict
        ``{encoding: {normalization: stress}}``; ``nan`` where a normalisation is undefined
        (``kruskal1`` of an all-zero encoding).
    """
    out: dict[str, dict[str, float]] = {}
    for name, Dhat in encodings.items():
        row = {}
        for norm in normalizations:
            try:
                row[norm] = stress(D, Dhat, norm, as_distances=True)
            except ValueError:
                row[norm] = float("nan")
        out[name] = row
    return out


def offset_profiles(maps) -> tuple[np.ndarray, np.ndarray]:
    r"""Mean attention at each offset $\delta = j - i$ of averaged attention maps.

    Parameters
    ----------
    maps : array-like of shape (n_layers, K, K)

    Returns
    -------
    offsets : ndarray of shape (2K - 1,)
        $-(K-1), \dots, K-1$.
    profile : ndarray of shape (n_layers, 2K - 1)
        Mean of ``maps[l, i, i + δ]`` over the valid ``i``.
    """
    maps = np.asarray(maps, dtype=np.float64)
    if maps.ndim != 3 or maps.shape[1] != maps.shape[2]:
        raise ValueError(f"maps must have shape (n_layers, K, K), got {maps.shape}")
    K = maps.shape[1]
    offsets = np.arange(-(K - 1), K)
    profile = np.stack([[np.diagonal(m, offset=int(o)).mean() for o in offsets] for m in maps])
    return offsets, profile
