r"""Embeddings fitted to a target $D$ (classical MDS at full rank and truncated, SMACOF from MDS), as the
reference rows of a table that scores encodings against $D$.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from .hellinger import euclidean_distances
from .mds import classical_mds
from .smacof import smacof

__all__ = ["FittedMethod", "FittedEmbedding", "fitted_embeddings"]


class FittedMethod(StrEnum):
    """How an embedding is fitted: its row's identifier (``Encoding.MDS``, ``TableRow.SMACOF`` have these values)."""

    MDS = "mds"
    SMACOF = "smacof"


@dataclass(frozen=True)
class FittedEmbedding:
    """One embedding of :func:`fitted_embeddings`: its method and rank (``None``: full rank), options, distances
    (n, n), SMACOF iterations."""

    row: FittedMethod
    rank: int | None
    options: str
    distances: np.ndarray
    n_iter: int | None = None


def fitted_embeddings(D, mds_ranks=(), smacof_ranks=(), *, full_rank: bool = False, max_iter: int = 3000,
                      eps: float = 1e-9) -> list[FittedEmbedding]:
    """Classical MDS at full rank and at each rank of ``mds_ranks`` below ``n``, then SMACOF at ``smacof_ranks``.

    Parameters
    ----------
    D : ndarray of shape (n, n)
    mds_ranks, smacof_ranks : sequence of int
    full_rank : bool
    max_iter, eps :
        SMACOF's stopping rule (:func:`posgeom.geometry.smacof`).

    Returns
    -------
    list of FittedEmbedding
        In that order; a SMACOF run stopped by ``max_iter`` says so in its ``options``.
    """
    out = []
    if full_rank or len(mds_ranks):
        mds = classical_mds(D)
        if full_rank:
            out.append(FittedEmbedding(FittedMethod.MDS, None, f"rank {mds.k} (numerical rank of B)",
                                       euclidean_distances(mds.embedding)))
        # U_k Lambda_k^{1/2}: the first k columns of the full embedding
        W = mds.eigenvectors * np.sqrt(np.maximum(mds.eigenvalues, 0.0))
        out += [FittedEmbedding(FittedMethod.MDS, int(k), f"classical MDS, top {k} eigenvectors",
                                euclidean_distances(W[:, :k])) for k in mds_ranks if k < D.shape[0]]
    for k in smacof_ranks:
        res = smacof(D, k, max_iter=max_iter, eps=eps)
        out.append(FittedEmbedding(FittedMethod.SMACOF, int(k), f"from MDS, {res.n_iter} iterations"
                                   + ("" if res.converged else " (iteration cap)"),
                                   euclidean_distances(res.embedding), res.n_iter))
    return out
