r"""Spectra of distance matrices: the eigenvalues of $B = -\tfrac12 J D^{(2)} J$ and what they say.

A noise floor $F$ debiases ($\mathbb E\,\hat d_{ij}^2 \approx d_{ij}^2 + F_{ij}^2$) and its Gram matrix $B_F$ bounds
one direction's noise: $s_1 = (\lambda_1 - \lambda_{\max}(B_F)) / \sum_k (\lambda_k - \lambda_{\max}(B_F))_+$.
Parallel analysis (Horn 1965) draws every position from the pooled distribution.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .counts import PositionalCounts
from .hellinger import hellinger_matrix
from .mds import classical_mds, double_centered_gram_of_squares
from ..validation import check_int

__all__ = ["gram_eigenvalues", "rank_one_report", "eigen_fraction", "line_fit_error", "null_eigenvalues",
           "rank_above_noise"]


def gram_eigenvalues(D2) -> np.ndarray:
    r"""Eigenvalues (descending) of $B = -\tfrac12 J D^{(2)} J$ for squared distances ``D2``."""
    return np.linalg.eigvalsh(double_centered_gram_of_squares(D2))[::-1]


def rank_one_report(D, F) -> dict[str, Any]:
    r"""How much of $B$ one direction holds, raw, debiased and above the noise floor (module docstring).

    Parameters
    ----------
    D, F : array-like of shape (n, n)
        Chord Hellinger distances and their noise floor (:attr:`posgeom.geometry.NoiseFloor.matrix`).

    Returns
    -------
    dict
        ``eigenvalues`` (n,) of $B$, ``eigenvalues_debiased`` (n,) of $\tilde B$, ``eigenvalues_noise``
        (n,) of $B_F$; scalars ``share_raw`` $= \lambda_1/\sum\lambda^+$, ``share_debiased``,
        ``noise_top`` $= \lambda_{\max}(B_F)$, ``rank_above_noise``, ``share_above_noise`` $= s_1$.
    """
    D = np.asarray(D, dtype=np.float64)
    F = np.asarray(F, dtype=np.float64)
    if F.shape != D.shape:
        raise ValueError(f"the noise floor has shape {F.shape} but D has shape {D.shape}; they must match")
    off = ~np.eye(D.shape[0], dtype=bool)
    F2 = np.where(off, F**2, 0.0)
    w = gram_eigenvalues(D**2)
    # E dhat^2 ~ d^2 + F^2: the debiased squared distances
    w_deb = gram_eigenvalues(np.where(off, D**2 - F**2, 0.0))
    w_noise = gram_eigenvalues(F2)
    # eigenvalues within rounding of the noise top (or of 0 when F = 0) do not count as directions
    top = float(w_noise[0]) + 1e-12 * float(w[0])
    excess = np.maximum(w - top, 0.0)
    pos = np.maximum(w, 0.0)
    pos_deb = np.maximum(w_deb, 0.0)
    return {
        "eigenvalues": w, "eigenvalues_debiased": w_deb, "eigenvalues_noise": w_noise,
        "share_raw": float(w[0] / pos.sum()),
        "share_debiased": float(w_deb[0] / pos_deb.sum()) if pos_deb.sum() > 0 else float("nan"),
        "noise_top": top,
        "rank_above_noise": int(np.count_nonzero(w > top)),
        # s_1 = (lambda_1 - lambda_max(B_F)) / sum_k (lambda_k - lambda_max(B_F))_+
        "share_above_noise": float(excess[0] / excess.sum()) if excess.sum() > 0 else float("nan"),
    }


def eigen_fraction(D, k: int = 1) -> float:
    r"""Fraction of the positive eigenvalue mass of $B = -\frac12 J D^{(2)} J$ held by the top ``k``.

    Parameters
    ----------
    D : array of shape (n, n)
    k : int

    Returns
    -------
    float
        1 for a matrix of Euclidean rank at most ``k``; NaN for an all-zero ``D``.
    """
    w = classical_mds(D).eigenvalues
    pos = w[w > 0]
    if pos.size == 0:
        return float("nan")
    return float(pos[:k].sum() / pos.sum())


def line_fit_error(D) -> tuple[float, float]:
    r"""How well a distance matrix is a line: 1-D classical MDS, then equal spacing.

    Returns
    -------
    mds_error : float
        $\max_{ij} \big| |x_i - x_j| - D_{ij} \big| / \max D$ for the 1-D MDS coordinates $x$.
    spacing_error : float
        $\max_i |x_i - (a + b\,i)| / (\max x - \min x)$ for the least-squares line $a + b\,i$.
    """
    D = np.asarray(D, dtype=np.float64)
    x = classical_mds(D, k=1).embedding[:, 0]
    top = float(D.max())
    if top == 0.0:
        raise ValueError("an all-zero distance matrix has no line to fit")
    mds_error = float(np.max(np.abs(np.abs(x[:, None] - x[None, :]) - D)) / top)
    i = np.arange(x.size, dtype=np.float64)
    b, a = np.polyfit(i, x, 1)
    spacing_error = float(np.max(np.abs(x - (a + b * i))) / (x.max() - x.min()))
    return mds_error, spacing_error


def null_eigenvalues(counts, n_rep: int = 5, seed=0) -> np.ndarray:
    r"""Eigenvalues of $B$ when every position draws $N_i$ tokens from $\bar\mu = \sum_i c_i / \sum_i N_i$ (the null).

    Parameters
    ----------
    counts : posgeom.geometry.PositionalCounts
        (n, v); positions with $N_i = 0$ are not allowed (drop them first).
    n_rep, seed :
        Replicates (>= 1); int or numpy Generator.

    Returns
    -------
    ndarray of shape (n_rep, n)
        Each row the eigenvalues of one null $B$, descending.
    """
    if not isinstance(counts, PositionalCounts):
        raise ValueError(f"counts must be a PositionalCounts; got {type(counts).__name__}")
    n_rep = check_int(n_rep, "n_rep", 1)
    N = counts.reach
    if np.any(N < 1):
        raise ValueError(f"positions {np.flatnonzero(N < 1).tolist()} are never reached; count fewer positions")
    rng = np.random.default_rng(seed)
    pooled = np.asarray(counts.counts.sum(axis=0), dtype=np.float64).ravel()
    # mu_bar = sum_i c_i / sum_i N_i
    pooled /= pooled.sum()
    support = np.flatnonzero(pooled)
    out = np.empty((n_rep, N.size))
    for rep in range(n_rep):
        X = np.zeros((N.size, pooled.size), dtype=np.int64)
        X[:, support] = np.stack([rng.multinomial(int(n_i), pooled[support]) for n_i in N])
        D = hellinger_matrix(PositionalCounts.from_array(X))
        out[rep] = classical_mds(D, k=1).eigenvalues
    return out


def rank_above_noise(eigenvalues, null) -> int:
    r"""Number of eigenvalues above the largest eigenvalue of any null replicate (parallel analysis).

    Parameters
    ----------
    eigenvalues, null : array-like of shape (n,), and (n_rep, n) or (n,)
        Eigenvalues of $B$; the null's (:func:`null_eigenvalues`).
    """
    w = np.asarray(eigenvalues, dtype=np.float64)
    return int(np.sum(w > float(np.max(null))))
