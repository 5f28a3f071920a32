r"""Classical MDS (the paper's Algorithm 1), effective rank and low-rank factors (Remark 8).

$B = -\tfrac12\, J D^{(2)} J$, $J = I - \frac1n \mathbf 1 \mathbf 1^\top$; for the chord Hellinger distance
$B = J S S^\top J \succeq 0$, so full-rank MDS reproduces $D$. Negative eigenvalues are clipped to 0 (mass
reported); eigenvector signs follow scikit-learn's ``svd_flip`` (largest-magnitude entry positive).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg

from ..validation import (
    as_float_matrix, check_choice, check_distance_matrix, check_int, check_rng, check_squarable, is_distance_matrix,
    power_of_two_scale, reject_complex, unscale, upper,
)
from .hellinger import HellingerKind, euclidean_distances, hellinger_matrix
from .stress import STRESS_NORMALIZATIONS, stress_of_pairs

__all__ = ["MDSResult", "classical_mds", "double_centered_gram", "double_centered_gram_of_squares", "lift",
           "mds_stress_curve", "effective_rank", "EFFECTIVE_RANK_CRITERIA", "LowRankFactors", "low_rank_factors",
           "exact_embedding"]

EFFECTIVE_RANK_CRITERIA = ("tol", "mass", "stress")


def double_centered_gram(D) -> np.ndarray:
    r"""$B = -\frac12 J D^{(2)} J$, the double-centred Gram matrix (the book's notation).

    Parameters
    ----------
    D : array-like of shape (n, n)
        A distance matrix (symmetric, zero diagonal, non-negative).

    Returns
    -------
    B : ndarray of shape (n, n), float64, exactly symmetric.
    """
    D = check_squarable(check_distance_matrix(D, "D"))
    return double_centered_gram_of_squares(D * D)


def double_centered_gram_of_squares(D2) -> np.ndarray:
    r"""$B = -\frac12 J D^{(2)} J$ from squared dissimilarities that may be negative (debiased or cross-fitted).

    Parameters
    ----------
    D2 : array-like of shape (n, n)
        Symmetric, finite (entries of any sign).

    Returns
    -------
    B : ndarray of shape (n, n), float64, exactly symmetric.
    """
    D2 = as_float_matrix(D2, "D2")
    if D2.shape[0] != D2.shape[1] or not np.allclose(D2, D2.T, rtol=1e-10, atol=1e-12):
        raise ValueError(f"D2 must be a symmetric square matrix; got shape {D2.shape}" +
                         ("" if D2.shape[0] != D2.shape[1] else " and an asymmetric one (symmetrise it: (D2 + D2.T) / 2)"))
    # J D2 J = D2 - row means - column means + grand mean
    row = D2.mean(axis=1)
    B = D2 - row[:, None] - row[None, :] + row.mean()
    # B = -1/2 J D2 J
    B *= -0.5
    return (B + B.T) / 2.0


@dataclass
class MDSResult:
    r"""Result of :func:`classical_mds` (the paper's Algorithm 1).

    Attributes
    ----------
    embedding : ndarray of shape (n, k)
        $P_{\text{MDS}} = U_k \Lambda_k^{1/2}$ (negative eigenvalues clipped to 0).
    eigenvalues : ndarray of shape (n,)
        All eigenvalues of $B$, descending, unclipped.
    eigenvectors : ndarray of shape (n, n)
        $U$, columns in the same order, sign-normalised.
    clipped_mass, clipped_sum : float
        The clipped share $\sum_{\lambda<0} |\lambda| / \sum |\lambda|$ (0 for a Euclidean $D$ up to rounding) and
        sum $\sum_{\lambda<0} |\lambda|$.
    B : ndarray of shape (n, n)
        The double-centred Gram matrix.
    """

    embedding: np.ndarray
    eigenvalues: np.ndarray
    eigenvectors: np.ndarray
    clipped_mass: float
    clipped_sum: float
    B: np.ndarray

    @property
    def k(self) -> int:
        return int(self.embedding.shape[1])


def _numerical_rank(w: np.ndarray) -> int:
    """Number of eigenvalues above n * eps * lambda_max (numpy.linalg.matrix_rank's convention)."""
    top = float(w[0]) if w.size else 0.0
    if top <= 0:
        return 0
    return int(np.sum(w > w.size * np.finfo(np.float64).eps * top))


def classical_mds(D, k: int | None = None) -> MDSResult:
    r"""Classical MDS (Algorithm 1): $B = -\frac12 J D^{(2)} J = U \Lambda U^\top$, $P = U_k \Lambda_k^{1/2}$.

    Parameters
    ----------
    D : array-like of shape (n, n)
        Distance matrix (e.g. :func:`hellinger_matrix`); n >= 2.
    k : int, optional
        Embedding dimension, 1 <= k <= n. Default: the numerical rank of $B$ (eigenvalues above
        $n\,\varepsilon\,\lambda_1$), which reproduces a Euclidean $D$ to rounding.
    """
    B = double_centered_gram(D)
    n = B.shape[0]
    if k is not None:
        k = check_int(k, "k", 1, n)
    w, U = scipy.linalg.eigh(B)
    w, U = w[::-1].copy(), U[:, ::-1].copy()
    # deterministic signs: the largest-|.| entry of each eigenvector is positive
    lead = np.argmax(np.abs(U), axis=0)
    signs = np.sign(U[lead, np.arange(n)])
    signs[signs == 0] = 1.0
    U *= signs
    neg = w < 0
    clipped_sum = float(-w[neg].sum()) + 0.0  # + 0.0 turns -0.0 into 0.0
    total = float(np.abs(w).sum())
    clipped_mass = clipped_sum / total if total > 0 else 0.0
    if k is None:
        k = _numerical_rank(w)
    # P_MDS = U_k Lambda_k^{1/2}
    embedding = U[:, :k] * np.sqrt(np.maximum(w[:k], 0.0))
    return MDSResult(embedding, w, U, clipped_mass, clipped_sum, B)


def lift(embedding, d: int, seed: int | None = 0, *, return_basis: bool = False):
    r"""Lift an (n, k) embedding into model width $d$: $P = X Q^\top$, $Q^\top Q = I_k$ (distances unchanged).

    Parameters
    ----------
    embedding, d :
        The (n, k) embedding; the model width d >= k.
    seed : int, numpy Generator or None
        $Q$ from the QR of a seeded Gaussian (d, k) matrix; ``None``: zero-padding $Q = [I_k; 0]$.
    return_basis : bool
        Also return $Q$.

    Returns
    -------
    P : ndarray of shape (n, d)   (and Q : ndarray of shape (d, k) when ``return_basis``)
    """
    X = as_float_matrix(embedding, "embedding")
    k = X.shape[1]
    d = check_int(d, "d", max(k, 1))
    Q = _orthonormal_basis(d, k, seed)
    # P = X Q^T, on X / 2^e so that no row's products overflow (the exact power-of-2 scale is undone after)
    scale = power_of_two_scale(X)
    P = unscale((X / scale) @ Q.T, scale, "lifted coordinates")
    return (P, Q) if return_basis else P


def _orthonormal_basis(d: int, k: int, seed) -> np.ndarray:
    """(d, k) with orthonormal columns: seeded QR of a Gaussian, or [I_k; 0] when seed is None."""
    if seed is None:
        return np.eye(d, k)
    G = check_rng(seed).standard_normal((d, k))
    Q, R = np.linalg.qr(G)
    s = np.sign(np.diag(R))
    s[s == 0] = 1.0
    return Q * s


def mds_stress_curve(D, max_rank: int | None = None, normalization: str = "paper", *, mds: MDSResult | None = None):
    r"""Stress of the rank-$k$ classical MDS encoding for $k = 1, \dots,$ ``max_rank`` (Remark 8's curve).

    Parameters
    ----------
    D : array-like of shape (n, n)
    max_rank : int, optional
        Default n - 1; ``normalization`` one of :data:`STRESS_NORMALIZATIONS`.
    mds : MDSResult, optional
        A precomputed ``classical_mds(D)`` (any k) to reuse its eigendecomposition.

    Returns
    -------
    curve : ndarray of shape (max_rank,)
        ``curve[k - 1]`` is the stress of $U_k \Lambda_k^{1/2}$.
    """
    check_choice(normalization, "normalization", STRESS_NORMALIZATIONS)
    D = check_distance_matrix(D, "D")
    n = D.shape[0]
    max_rank = n - 1 if max_rank is None else check_int(max_rank, "max_rank", 1, n)
    res = mds if mds is not None else classical_mds(D, k=1)
    coords = res.eigenvectors[:, :max_rank] * np.sqrt(np.maximum(res.eigenvalues[:max_rank], 0.0))
    iu0, iu1 = np.triu_indices(n, k=1)
    d = upper(D)
    acc = np.zeros(d.size)
    curve = np.empty(max_rank)
    for k in range(max_rank):
        # dhat_k^2 = dhat_{k-1}^2 + (x_k(i) - x_k(j))^2
        diff = coords[iu0, k] - coords[iu1, k]
        acc += diff * diff
        dh = np.sqrt(acc)
        if normalization == "kruskal1" and not acc.any():
            curve[k] = np.nan
            continue
        curve[k] = stress_of_pairs(d, dh, normalization)
    return curve


def effective_rank(
    eigenvalues_or_D,
    criterion: str = "tol",
    *,
    tol: float = 1e-3,
    q: float = 0.99,
    threshold: float = 0.01,
    normalization: str = "paper",
) -> int:
    r"""Effective rank of $B$ under a named criterion (the paper's Remark 8).

    * ``"tol"``: $\#\{k : \lambda_k > \text{tol} \cdot \lambda_1\}$;
    * ``"mass"``: smallest $k$ with $\sum_{l \le k} \lambda_l^+ \ge q \sum_l \lambda_l^+$;
    * ``"stress"``: smallest $k$ whose rank-$k$ classical MDS has stress (``normalization``) $\le$
      ``threshold``; needs the distance matrix.

    Parameters
    ----------
    eigenvalues_or_D : array-like of shape (n,) or (n, n)
        Eigenvalues of $B$ (e.g. ``classical_mds(D).eigenvalues``, any order) or the distance matrix $D$.
    criterion : {"tol", "mass", "stress"}
    tol, q, threshold, normalization :
        Parameters of the criteria (0 < tol < 1, 0 < q <= 1, threshold >= 0; ``"stress"``'s normalisation).

    Returns
    -------
    int
        The rank (0 when $B = 0$).
    """
    check_choice(criterion, "criterion", EFFECTIVE_RANK_CRITERIA, plural="criteria")
    reject_complex(eigenvalues_or_D, "eigenvalues_or_D")
    x = np.asarray(eigenvalues_or_D, dtype=np.float64)
    if x.ndim == 1:
        if criterion == "stress":
            raise ValueError("criterion='stress' needs the distance matrix D, not eigenvalues")
        if not np.all(np.isfinite(x)) or x.size == 0:
            raise ValueError("eigenvalues must be a non-empty vector of finite numbers")
        w = np.sort(x)[::-1]
        D = None
    elif x.ndim == 2:
        D = check_distance_matrix(x, "D")
        res = classical_mds(D, k=1)
        w = res.eigenvalues
    else:
        raise ValueError(f"expected eigenvalues (n,) or a distance matrix (n, n); got shape {x.shape}")
    if criterion == "tol":
        if not 0 < tol < 1:
            raise ValueError(f"tol must lie in (0, 1); got {tol}")
        if w[0] <= 0:
            return 0
        # #{k : lambda_k > tol * lambda_1}
        return int(np.sum(w > tol * w[0]))
    if criterion == "mass":
        if not 0 < q <= 1:
            raise ValueError(f"q must lie in (0, 1]; got {q}")
        wp = np.maximum(w, 0.0)
        total = wp.sum()
        if total <= 0:
            return 0
        # smallest k with sum_{l<=k} lambda_l^+ >= q sum lambda^+   (relative slack for rounding in cumsum)
        cum = np.cumsum(wp)
        return int(np.searchsorted(cum, q * total * (1 - 1e-12)) + 1)
    if threshold < 0:
        raise ValueError(f"threshold must be >= 0; got {threshold}")
    curve = mds_stress_curve(D, normalization=normalization, mds=res)
    hits = np.flatnonzero(curve <= threshold)
    if hits.size == 0:
        raise ValueError(
            f"no MDS rank reaches {normalization} stress <= {threshold} (best {np.nanmin(curve):.4g}); "
            "raise the threshold"
        )
    return int(hits[0] + 1)


@dataclass
class LowRankFactors:
    r"""$P = A C^\top$ (the paper's Remark 8).

    Attributes
    ----------
    A : ndarray of shape (n, r)
        Position factor (principal coordinates).
    C : ndarray of shape (d, r)
        Width factor with orthonormal columns.
    n_params, n_params_full : int
        $r (n + d)$ and $n d$.
    savings : float
        $1 - r(n+d)/(n d)$ (negative when the factorisation is larger than the full table).
    """

    A: np.ndarray
    C: np.ndarray
    n_params: int
    n_params_full: int
    savings: float

    @property
    def rank(self) -> int:
        return int(self.A.shape[1])

    @property
    def P(self) -> np.ndarray:
        """The (n, d) encoding $A C^\\top$."""
        return self.A @ self.C.T


def low_rank_factors(D_or_embedding, r: int, d: int, *, seed: int | None = 0, as_distances: bool | None = None):
    r"""Rank-$r$ factors $P = A C^\top$ of an encoding, $A$ (n, r), $C$ (d, r) (the paper's Remark 8).

    $A$: rank-$r$ classical MDS (or the SVD of a centred embedding); $C$ orthonormal, so $A C^\top$ keeps $A$'s
    distances.

    Parameters
    ----------
    D_or_embedding : array-like of shape (n, n) or (n, m)
        Read as distances when square, symmetric and zero-diagonal, unless ``as_distances`` says otherwise.
    r, d : int
        Rank, 1 <= r <= min(n, d) (and <= m for an embedding); model width.
    seed : int, Generator or None
        Seed of $C$ (``None``: $C = [I_r; 0]$).
    """
    X = as_float_matrix(D_or_embedding, "D_or_embedding")
    n = X.shape[0]
    d = check_int(d, "d", 1)
    if as_distances is None:
        as_distances = is_distance_matrix(X)
    if as_distances:
        r = check_int(r, "r", 1, min(n, d))
        A = classical_mds(X, k=r).embedding
    else:
        r = check_int(r, "r", 1, min(n, d, X.shape[1]))
        # the SVD of the centred X / 2^e (no overflow near the float64 limit); the exact scale is undone after
        scale = power_of_two_scale(X)
        Xc = X / scale
        Xc -= Xc.mean(axis=0, keepdims=True)
        U, s, _ = np.linalg.svd(Xc, full_matrices=False)
        lead = np.argmax(np.abs(U[:, :r]), axis=0)
        signs = np.sign(U[lead, np.arange(r)])
        signs[signs == 0] = 1.0
        A = unscale(U[:, :r] * s[:r] * signs, scale, "factor entries")
    C = _orthonormal_basis(d, r, seed)
    # r (n + d) parameters instead of n d
    n_params = r * (n + d)
    n_full = n * d
    return LowRankFactors(A, C, n_params, n_full, 1.0 - n_params / n_full)


def exact_embedding(marg) -> dict:
    """Full-rank MDS of the chord and geodesic Hellinger matrices of one corpus, and how exact it is.

    Parameters
    ----------
    marg : PositionalMarginals
        The corpus's marginals, ``probs`` of shape (n, v).

    Returns
    -------
    dict
        ``n`` and, for ``"chord"`` and ``"geodesic"``, ``{"full_rank_max_error", "clipped_mass", "numerical_rank",
        "min_over_max_eigenvalue", "n_negative_beyond_rounding"}``.
    """
    out = {"n": int(marg.n_positions)}
    for kind in (HellingerKind.CHORD, HellingerKind.GEODESIC):
        D = hellinger_matrix(marg, kind=kind)
        res = classical_mds(D)
        w = res.eigenvalues
        out[kind] = dict(
            full_rank_max_error=float(np.max(np.abs(euclidean_distances(res.embedding) - D))),
            clipped_mass=float(res.clipped_mass), numerical_rank=int(res.k),
            min_over_max_eigenvalue=float(w.min() / w.max()), n_negative_beyond_rounding=int(
                np.sum(w < -w.size * np.finfo(float).eps * w.max() * 100)),
        )
    return out
