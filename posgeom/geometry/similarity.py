r"""Distances induced by similarities: attention logits and other bilinear kernels.

$G$ induces $\hat d_{ij}^2 = S_{ii} + S_{jj} - 2 S_{ij}$, $S = \tfrac12 (G + G^\top)$, Euclidean exactly when
$S \succeq 0$ (Schoenberg); negative squared distances are clipped to 0 with their mass reported.
"""

from __future__ import annotations

import numpy as np

__all__ = ["kernel_distances", "head_logits"]


def kernel_distances(G, *, return_clipped: bool = False):
    r"""Distances induced by a similarity matrix: $\hat d_{ij}^2 = S_{ii} + S_{jj} - 2S_{ij}$, $S = (G + G^\top)/2$.

    Parameters
    ----------
    G : array-like of shape (n, n)
        Logits or any bilinear similarity (need not be symmetric).
    return_clipped : bool
        Also return the clipped mass $\sum_{i<j} (\hat d_{ij}^2)_- / \sum_{i<j} |\hat d_{ij}^2|$.

    Returns
    -------
    Dhat : ndarray of shape (n, n)
        Symmetric, zero diagonal, non-negative.
    clipped : float, when ``return_clipped``.
    """
    G = np.asarray(G, dtype=np.float64)
    if G.ndim != 2 or G.shape[0] != G.shape[1]:
        raise ValueError(f"G must be a square (n, n) matrix of similarities, got shape {G.shape}")
    if not np.all(np.isfinite(G)):
        raise ValueError("G holds NaN or infinite values")
    S = 0.5 * (G + G.T)
    diag = np.diag(S)
    # dhat_ij^2 = S_ii + S_jj - 2 S_ij
    sq = diag[:, None] + diag[None, :] - 2.0 * S
    np.fill_diagonal(sq, 0.0)
    iu = np.triu_indices(G.shape[0], k=1)
    total = float(np.abs(sq[iu]).sum())
    clipped = float(np.sum(-sq[iu][sq[iu] < 0])) / total if total > 0 else 0.0
    Dhat = np.sqrt(np.clip(sq, 0.0, None))
    return (Dhat, clipped) if return_clipped else Dhat


def head_logits(X, weight_q, bias_q, weight_k, bias_k, n_heads: int) -> np.ndarray:
    r"""Per-head logits $G^h = (X W_Q^h + b_Q^h)(X W_K^h + b_K^h)^\top / \sqrt{d_h}$ of positional vectors ``X``.

    Parameters
    ----------
    X : array-like of shape (n, d)
    weight_q, weight_k : array-like of shape (d, d)
        ``torch.nn.Linear`` weights (``out × in``): $q = X W^\top + b$.
    bias_q, bias_k : array-like of shape (d,)
    n_heads : int
        $H$; heads are consecutive blocks of $d_h = d / H$ output features.

    Returns
    -------
    G : ndarray of shape (H, n, n)
    """
    X = np.asarray(X, dtype=np.float64)
    d = X.shape[1]
    if d % n_heads:
        raise ValueError(f"n_heads={n_heads} does not divide the width d={d}")
    dh = d // n_heads
    # q = X W_Q^T + b_Q, k = X W_K^T + b_K                    (n, H, d_h)
    q = (X @ np.asarray(weight_q, dtype=np.float64).T + np.asarray(bias_q, dtype=np.float64)).reshape(-1, n_heads, dh)
    k = (X @ np.asarray(weight_k, dtype=np.float64).T + np.asarray(bias_k, dtype=np.float64)).reshape(-1, n_heads, dh)
    # G^h = q^h k^h^T / sqrt(d_h)
    return np.einsum("ihe,jhe->hij", q, k) / np.sqrt(dh)
