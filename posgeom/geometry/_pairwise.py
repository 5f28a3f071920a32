r"""Exact pairwise Euclidean distances between the rows of a matrix, at BLAS speed.

For rows $s_i$ of $S$ (n, p), $\|s_i - s_j\|^2 = \|s_i\|^2 + \|s_j\|^2 - 2\, s_i \cdot s_j$.

Gram matrix $G = S S^\top$. Dense $S$: one BLAS ``dsyrk`` (half the flops of a GEMM; the C-ordered rows
are passed as a Fortran-ordered transpose, so nothing is copied). Sparse $S$ (e.g. $\sqrt{c_i/N_i}$ from
counts, where most tokens never occur at most positions): the columns are split by how many rows use
them. A column used by $k$ rows costs $k (k + 1) / 2$ scattered multiply-adds but $n (n + 1) / 2$ dense
ones (each far cheaper: ``dsyrk`` runs near the CPU's peak), so columns with
$k \le$ ``n / SPARSE_COL_FRACTION`` go through a compiled sparse product
(``light_gram`` in ``posgeom/geometry/_kernels.py``) and the rest, compacted to a dense (n, p_dense) block,
through ``dsyrk``: $G = S_d S_d^\top + S_s S_s^\top$. The fraction 8 was the fastest of 2..24 on the
IMDB-sized benchmark (``benchmarks/bench_geometry.py``).

Accuracy. The formula loses accuracy when $\|s_i - s_j\|^2 \ll \|s_i\|^2 + \|s_j\|^2$ (catastrophic
cancellation: the rounding error of $G$ is about $\sqrt{p}\,\varepsilon\,(\|s_i\|^2 + \|s_j\|^2)$, so a
distance of $10^{-8}$ could come out as $10^{-7}$ or as 0). Pairs with
$d_{ij}^2 <$ ``REFINE_RTOL`` $(\|s_i\|^2 + \|s_j\|^2)$ are recomputed directly as
$\sqrt{\sum_k (s_{ik} - s_{jk})^2}$. With ``REFINE_RTOL = 1e-4`` the remaining pairs have a relative
error below about $10^{-10}$, and identical rows give exactly 0.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.linalg import blas

REFINE_RTOL = 1e-4
#: A column of a sparse S used by at most n / SPARSE_COL_FRACTION rows goes through the sparse product.
SPARSE_COL_FRACTION = 8
_REFINE_BLOCK_ELEMS = 1 << 21  # elements of the temporary difference block in the refinement


def _syrk(S: np.ndarray) -> np.ndarray:
    """$S S^T$ (n, n), upper triangle only, from one ``dsyrk``."""
    S = np.ascontiguousarray(S, dtype=np.float64)
    if S.shape[1] == 0:
        return np.zeros((S.shape[0], S.shape[0]))
    # S.T is Fortran-ordered (p, n): dsyrk with trans=1 computes (S.T)^T (S.T) = S S^T with no copy
    return blas.dsyrk(1.0, S.T, trans=1, lower=0)


def _mirror_upper(G: np.ndarray) -> np.ndarray:
    iu = np.triu_indices(G.shape[0], k=1)
    G[(iu[1], iu[0])] = G[iu]
    return G


def gram(S) -> np.ndarray:
    """$G = S S^T$ (n, n), symmetric, for a dense (n, p) array or a sparse CSR matrix."""
    if not sp.issparse(S):
        return _mirror_upper(_syrk(S))
    from . import _kernels  # numba, loaded on first use

    S = sp.csr_matrix(S, dtype=np.float64)
    if not S.has_canonical_format:  # the kernels need each (row, column) stored once; never edit the caller's S
        S = S.copy()
        S.sum_duplicates()
    n, p = S.shape
    indptr, indices = S.indptr.astype(np.int64, copy=False), S.indices.astype(np.int64, copy=False)
    col_nnz = np.bincount(indices, minlength=p)
    heavy = col_nnz > max(1, n // SPARSE_COL_FRACTION)
    light = ~heavy & (col_nnz > 0)
    heavy_cols, light_cols = np.flatnonzero(heavy), np.flatnonzero(light)
    if heavy_cols.size:
        col_map = np.full(p, -1, dtype=np.int64)
        col_map[heavy_cols] = np.arange(heavy_cols.size)
        # compact the heavy columns into a dense (n, p_dense) block: S_d S_d^T by dsyrk (upper triangle)
        Sd = np.zeros((n, heavy_cols.size))
        _kernels.scatter_columns(indptr, indices, S.data, col_map, Sd)
        # C order: the light columns' updates below walk along rows of G (x3 faster than on dsyrk's F order)
        G = np.ascontiguousarray(_syrk(Sd))
        del Sd
    else:
        G = np.zeros((n, n))
    if light_cols.size:
        col_map = np.full(p, -1, dtype=np.int64)
        col_map[light_cols] = np.arange(light_cols.size)
        col_ptr = np.zeros(light_cols.size + 1, dtype=np.int64)
        np.cumsum(col_nnz[light_cols], out=col_ptr[1:])
        # S_s S_s^T: sum over light columns of (rows using it)^2 / 2 multiply-adds, upper triangle
        m = int(col_ptr[-1])
        _kernels.light_gram(indptr, indices, S.data, col_map, col_ptr, np.empty(m, np.int64), np.empty(m), G)
    return _mirror_upper(G)


def _row_sq_diff(S, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """sum_k (s_ak - s_bk)^2 for the row pairs (a[t], b[t])."""
    if sp.issparse(S):
        diff = S[a] - S[b]
        return np.asarray(diff.multiply(diff).sum(axis=1)).ravel()
    diff = S[a] - S[b]
    return np.einsum("ij,ij->i", diff, diff)


def pairwise_distances(S) -> np.ndarray:
    r"""$D_{ij} = \|s_i - s_j\|_2$ for the rows of ``S`` (n, p), dense or sparse CSR → (n, n) float64,
    exactly symmetric, zero diagonal."""
    n = S.shape[0]
    if n == 0:
        return np.zeros((0, 0))
    if sp.issparse(S):
        S = sp.csr_matrix(S, dtype=np.float64)
    G = gram(S)
    sq = np.diag(G).copy()
    # d_ij^2 = |s_i|^2 + |s_j|^2 - 2 s_i . s_j
    D2 = sq[:, None] + sq[None, :]
    scale = D2.copy()
    D2 -= 2.0 * G
    del G
    np.fill_diagonal(D2, 0.0)
    ii, jj = np.nonzero(np.triu(D2 < REFINE_RTOL * scale, k=1))
    if ii.size:
        block = max(1, _REFINE_BLOCK_ELEMS // max(1, S.shape[1]))
        for start in range(0, ii.size, block):
            a, b = ii[start : start + block], jj[start : start + block]
            # d_ij^2 = sum_k (s_ik - s_jk)^2, computed directly for near-identical rows
            exact = _row_sq_diff(S, a, b)
            D2[a, b] = exact
            D2[b, a] = exact
    np.maximum(D2, 0.0, out=D2)
    # exactly symmetric already: G is mirrored, |s_i|^2 + |s_j|^2 is, and refined pairs are written both ways
    return np.sqrt(D2, out=D2)
