r"""Summaries of the entries of distance matrices: the off-diagonal entries, their root mean square, and
the stress of several encodings' distance matrices against one target.
"""

from __future__ import annotations

import numpy as np

from .stress import stress

__all__ = ["offdiag", "rms_offdiag", "encoding_stresses"]


def offdiag(D) -> np.ndarray:
    """The strictly upper triangle of an (n, n) matrix as a vector of length n (n - 1) / 2."""
    D = np.asarray(D)
    return D[np.triu_indices(D.shape[0], k=1)]


def rms_offdiag(D) -> float:
    r"""Root mean square of the off-diagonal entries, $\sqrt{\frac{2}{n(n-1)}\sum_{i<j} D_{ij}^2}$."""
    x = offdiag(D)
    return float(np.sqrt(np.mean(x * x)))


def encoding_stresses(D, encodings: dict, normalizations=("paper", "scale_free")) -> dict[str, dict[str, float]]:
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
