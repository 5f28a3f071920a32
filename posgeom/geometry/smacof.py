r"""SMACOF: stress majorisation started from classical MDS.

SMACOF (de Leeuw 1977; Borg & Groenen 2005, ch. 8) minimises the stress
$\sigma(X) = \sum_{i<j} w_{ij} (\hat d_{ij}(X) - d_{ij})^2$ (classical MDS minimises the strain) by the Guttman
transform $X^{(t+1)} = V^{+} B(X^{(t)})\, X^{(t)}$, $B(X)_{ij} = -w_{ij} d_{ij} / \hat d_{ij}(X)$ off the
diagonal, $V = \operatorname{diag}(W\mathbf 1) - W$; it stops when the ``"paper"`` stress falls by less than ``eps``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..validation import as_float_matrix, check_distance_matrix, check_int, check_rng, check_squarable
from .hellinger import euclidean_distances
from .hellinger import hellinger_matrix
from .mds import classical_mds
from .stress import stress

__all__ = ["SmacofResult", "smacof", "smacof_curve", "one_hot_distances", "one_hot_layouts"]


@dataclass
class SmacofResult:
    """Result of :func:`smacof`.

    Attributes
    ----------
    embedding : ndarray of shape (n, k)
    stress : float
        Final ``"paper"`` stress (weighted when weights are given), from exact distances.
    stress_history : ndarray of shape (n_iter + 1,)
        ``"paper"`` stress of the start configuration and after every iteration (non-increasing).
    n_iter, converged :
        Iterations run; whether the ``eps`` rule (not ``max_iter``) stopped them.
    """

    embedding: np.ndarray
    stress: float
    stress_history: np.ndarray = field(repr=False)
    n_iter: int
    converged: bool


# Up to this width the two thin products of an iteration (X X^T and R X) use einsum's single-threaded
# loops: for such thin matrices a multi-threaded BLAS spends more time synchronising its threads than
# computing, badly so on a loaded machine (measured: 4-10x slower per iteration at load 10 on 2 cores).
_EINSUM_MAX_K = 32


def _thin_product(A: np.ndarray, B: np.ndarray, spec: str) -> np.ndarray:
    if B.shape[1] <= _EINSUM_MAX_K:
        return np.einsum(spec, A, B, optimize=False)
    return A @ B.T if spec == "ik,jk->ij" else A @ B


def _distances(X: np.ndarray) -> np.ndarray:
    """Pairwise distances of the rows of X (n, k) for the iterations, in place on the Gram matrix."""
    sq = np.einsum("ij,ij->i", X, X)
    # dhat_ij^2 = |x_i|^2 + |x_j|^2 - 2 x_i . x_j
    D2 = _thin_product(X, X, "ik,jk->ij")
    D2 *= -2.0
    D2 += sq[:, None]
    D2 += sq[None, :]
    np.maximum(D2, 0.0, out=D2)
    np.fill_diagonal(D2, 0.0)
    return np.sqrt(D2, out=D2)


def smacof(
    D,
    k: int,
    init="mds",
    max_iter: int = 3000,
    eps: float = 1e-7,
    weights=None,
    seed=0,
) -> SmacofResult:
    r"""Metric SMACOF refinement of a k-dimensional encoding (Guttman transforms, module docstring).

    Parameters
    ----------
    D, k :
        Target distances (n, n); the embedding dimension, 1 <= k <= n.
    init : {"mds", "random"} or array-like of shape (n, k)
        Start: rank-k classical MDS (default), a seeded Gaussian scaled to D, or a given configuration.
    max_iter, eps :
        Stop after ``max_iter`` iterations, or when one lowers the ``"paper"`` stress by less than ``eps``.
    weights : array-like of shape (n, n), optional
        Symmetric non-negative $w_{ij}$ (diagonal ignored); default all ones.
    seed : int, Generator or None
        For ``init="random"``.
    """
    D = check_squarable(check_distance_matrix(D, "D"))
    n = D.shape[0]
    k = check_int(k, "k", 1, n)
    max_iter = check_int(max_iter, "max_iter", 1)
    if not eps >= 0:
        raise ValueError(f"eps must be >= 0; got {eps}")
    X = _initial_configuration(D, k, init, seed)
    X -= X.mean(axis=0, keepdims=True)
    W, V, Vplus = _weight_matrices(weights, n)
    np.fill_diagonal(W, 0.0)
    WD = W * D
    norm = float(np.sum(WD * D)) / 2.0  # sum_{i<j} w_ij d_ij^2
    if norm == 0:
        raise ValueError("SMACOF needs at least one positive weighted distance (sum w d^2 = 0)")

    R = np.empty_like(D)
    history = []
    converged = False
    it = 0
    while True:
        Dh = _distances(X)
        # R_ij = w_ij d_ij / dhat_ij (0 where dhat_ij = 0), so B(X) = diag(R 1) - R
        R.fill(0.0)
        np.divide(WD, Dh, out=R, where=Dh > 0)
        np.fill_diagonal(R, 0.0)
        # B(X) X = diag(R 1) X - R X
        BX = R.sum(axis=1)[:, None] * X - _thin_product(R, X, "ij,jk->ik")
        # sigma(X) = eta_d^2 + eta^2(X) - 2 rho(X), with rho = tr(X^T B(X) X) = sum w d dhat and
        # eta^2 = tr(X^T V X) = sum w dhat^2  (= n tr(X^T X) for unit weights and centred X)
        rho = float(np.sum(X * BX))
        eta2 = n * float(np.sum(X * X)) if Vplus is None else float(np.sum(X * (V @ X)))
        history.append(max(norm + eta2 - 2.0 * rho, 0.0) / norm)
        if len(history) > 1 and (history[-1] == 0.0 or history[-2] - history[-1] < eps):
            converged = True
            break
        if it == max_iter:
            break
        # Guttman transform X <- V^+ B(X) X   (V^+ = J/n for unit weights; B(X) X is already centred)
        X = BX / n if Vplus is None else Vplus @ BX
        it += 1
    # final "paper" stress from exact distances: sum w (dhat - d)^2 / sum w d^2
    final = float(np.sum(W * (euclidean_distances(X) - D) ** 2)) / 2.0 / norm
    return SmacofResult(X, final, np.asarray(history), it, converged)


def _initial_configuration(D: np.ndarray, k: int, init, seed) -> np.ndarray:
    """The starting (n, k) configuration of :func:`smacof` (a copy, not yet centred)."""
    n = D.shape[0]
    if isinstance(init, str):
        if init == "mds":
            return classical_mds(D, k=k).embedding.copy()
        if init == "random":
            scale = np.sqrt(np.mean(D**2) / (2 * k))
            return check_rng(seed).standard_normal((n, k)) * scale
        raise ValueError(f"init must be 'mds', 'random' or an (n, k) array; got {init!r}")
    X = as_float_matrix(init, "init").copy()
    if X.shape != (n, k):
        raise ValueError(f"init must have shape (n, k) = {(n, k)}; got {X.shape}")
    return X


def _weight_matrices(weights, n: int):
    """``(W, V, V^+)``; ``V`` and ``V^+`` are None for unit weights (then $V^+ = J / n$)."""
    if weights is None:
        return np.ones((n, n)), None, None
    W = as_float_matrix(weights, "weights").copy()
    if W.shape != (n, n):
        raise ValueError(f"weights must have shape {(n, n)}; got {W.shape}")
    if np.any(W < 0) or np.max(np.abs(W - W.T)) > 0:
        raise ValueError("weights must be symmetric and non-negative")
    # V = diag(W 1) - W ;  V^+ by pseudo-inverse (V 1 = 0)
    np.fill_diagonal(W, 0.0)
    V = np.diag(W.sum(axis=1)) - W
    return W, V, np.linalg.pinv(V, hermitian=True)


def smacof_curve(D, ranks, *, max_iter: int = 3000, eps: float = 1e-9) -> dict:
    r"""``"paper"`` stress of rank-$k$ MDS, of the same layout at its best scale, and of SMACOF from it, per rank.

    Parameters
    ----------
    D : array-like of shape (n, n)
    ranks : iterable of int
        The ranks $k$ (those $\ge n$ are skipped).
    max_iter, eps :
        SMACOF's stopping rule (:func:`smacof`).

    Returns
    -------
    dict
        Lists aligned with the ranks kept: ``ranks``, ``mds_paper``, ``mds_scale_free``, ``smacof_paper``,
        ``smacof_scale_free``, ``n_iter``, ``gain``.
    """
    D = check_squarable(check_distance_matrix(D, "D"))
    out = {k: [] for k in ("ranks", "mds_paper", "mds_scale_free", "smacof_paper", "smacof_scale_free", "n_iter", "gain")}
    for k in ranks:
        if k >= D.shape[0]:
            continue
        P = classical_mds(D, k=k).embedding
        sm = smacof(D, k, init="mds", max_iter=max_iter, eps=eps)
        mp, sp_ = stress(D, P, "paper"), float(sm.stress)
        out["ranks"].append(int(k))
        out["mds_paper"].append(mp)
        out["mds_scale_free"].append(stress(D, P, "scale_free"))
        out["smacof_paper"].append(sp_)
        out["smacof_scale_free"].append(stress(D, sm.embedding, "scale_free"))
        out["n_iter"].append(int(sm.n_iter))
        # 1 - sigma_SMACOF / sigma_MDS
        out["gain"].append(1.0 - sp_ / mp if mp > 0 else 0.0)
    return out


def one_hot_distances(m: int = 3) -> np.ndarray:
    r"""Chord Hellinger distances (m, m) between ``m`` one-hot distributions: $\sqrt 2$ off the diagonal."""
    return hellinger_matrix(np.eye(check_int(m, "m", 1)))


def one_hot_layouts() -> tuple[dict, dict]:
    r"""Three one-hot distributions: 1-D classical MDS ($\sigma = 1/6$), the rescaled layout ($1/9$) and SMACOF.

    Returns
    -------
    values : dict
        ``mds_stress``, ``rescaled_stress``, ``smacof_stress`` (``"paper"``), ``smacof_n_iter``,
        ``mds_scale_free``, ``mds_sorted`` and ``smacof_sorted`` (the 1-D coordinates, sorted).
    arrays : dict
        ``mds``, ``rescaled``, ``smacof``, each of shape (3, 1).
    """
    D = one_hot_distances(3)
    mds = classical_mds(D, k=1).embedding
    rescaled = np.array([[-2 * np.sqrt(2) / 3], [0.0], [2 * np.sqrt(2) / 3]])
    sm = smacof(D, 1, init="mds")
    values = dict(
        mds_stress=stress(D, mds, "paper"), rescaled_stress=stress(D, rescaled, "paper"),
        smacof_stress=float(sm.stress), smacof_n_iter=int(sm.n_iter),
        mds_scale_free=stress(D, mds, "scale_free"),
        mds_sorted=sorted(float(x) for x in mds.ravel()), smacof_sorted=sorted(float(x) for x in sm.embedding.ravel()),
    )
    return values, dict(mds=mds, rescaled=rescaled, smacof=sm.embedding)
