r"""Exact pairwise Euclidean distances between the rows of a matrix, at BLAS speed.

$\|s_i - s_j\|^2 = \|s_i\|^2 + \|s_j\|^2 - 2\, s_i \cdot s_j$ from the Gram matrix $G = S S^\top$: one BLAS
``dsyrk`` for dense $S$; for sparse $S$, a column used by $k \le$ ``n / SPARSE_COL_FRACTION`` rows goes
through a compiled sparse product ($k (k + 1) / 2$ multiply-adds), the others through ``dsyrk`` on a dense block.
Pairs with $d_{ij}^2 <$ ``REFINE_RTOL`` $(\|s_i\|^2 + \|s_j\|^2)$, where the formula cancels, are recomputed
directly: relative error below about $10^{-10}$, exactly 0 for identical rows.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp
from scipy.linalg import blas

from ..validation import check_int

REFINE_RTOL = 1e-4
#: The sparse product is tiled from this n on (G then outgrows a core's cache) ...
TILE_MIN_N = 1024
#: ... in tiles of TILE_ROWS x TILE_ROWS cells of G (512 KiB: about a core's L2 cache).
TILE_ROWS = 256
_MIRROR_BLOCK = 256
#: A column of a sparse S used by at most n / SPARSE_COL_FRACTION rows goes through the sparse product.
SPARSE_COL_FRACTION = 8
_REFINE_BLOCK_ELEMS = 1 << 21  # elements of the temporary difference block in the refinement


def _syrk(S: np.ndarray) -> np.ndarray:
    """$S S^T$ (n, n), C order, upper triangle only, from one ``dsyrk``."""
    S = np.ascontiguousarray(S, dtype=np.float64)
    if S.shape[1] == 0:
        return np.zeros((S.shape[0], S.shape[0]))
    # S.T is Fortran-ordered (p, n): dsyrk with trans=1 computes (S.T)^T (S.T) = S S^T with no copy. Its
    # lower triangle in Fortran order, transposed (a view), is the upper triangle in C order: no copy either
    return blas.dsyrk(1.0, S.T, trans=1, lower=1).T


def _mirror_upper(G: np.ndarray) -> np.ndarray:
    """Copy the upper triangle onto the lower one, block by block (each block pair stays in cache)."""
    n = G.shape[0]
    for i0 in range(0, n, _MIRROR_BLOCK):
        i1 = min(n, i0 + _MIRROR_BLOCK)
        diag = G[i0:i1, i0:i1]
        low = np.tril_indices(i1 - i0, k=-1)
        diag[low] = diag.T[low]
        for j0 in range(i1, n, _MIRROR_BLOCK):
            j1 = min(n, j0 + _MIRROR_BLOCK)
            G[j0:j1, i0:i1] = G[i0:i1, j0:j1].T
    return G


def _n_threads() -> int:
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(cores, 8))


def _light_gram(indptr, indices, data, col_map, col_nnz_light, G, tile_rows) -> None:
    """G += S_s S_s^T (upper triangle) over the light columns: one scatter, or tiles of tile_rows rows."""
    from . import _kernels
    n = G.shape[0]
    m = int(col_nnz_light.sum())
    if tile_rows is None:
        col_ptr = np.zeros(col_nnz_light.size + 1, dtype=np.int64)
        np.cumsum(col_nnz_light, out=col_ptr[1:])
        # S_s S_s^T: sum over light columns of (rows using it)^2 / 2 multiply-adds, upper triangle
        _kernels.light_gram(indptr, indices, data, col_map, col_ptr, np.empty(m, np.int64), np.empty(m), G)
        return
    n_blocks = -(-n // tile_rows)
    block_ptr = np.zeros(n_blocks + 1, dtype=np.int64)
    # (block, column) pairs: at most one per entry, and at most n_light per block
    pairs = min(m, n_blocks * col_nnz_light.size)
    cols = np.empty(pairs, dtype=np.int64)
    col_start = np.empty(pairs + 1, dtype=np.int64)
    rows, vals = np.empty(m, dtype=np.int64), np.empty(m)
    _kernels.block_columns(
        indptr, indices, data, col_map, tile_rows, np.zeros(col_nnz_light.size, np.int64), block_ptr, cols,
        col_start, rows, vals,
    )

    def tile_row(block):
        _kernels.light_gram_tile_row(block, block_ptr, cols, col_start, rows, vals, G)

    threads = min(_n_threads(), n_blocks)
    if threads == 1:
        for block in range(n_blocks):
            tile_row(block)
        return
    # block rows write disjoint rows of G; the first ones hold the most tiles, so they start first
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(tile_row, range(n_blocks)))


def gram(S, tile_rows: int | None = None) -> np.ndarray:
    """$G = S S^T$ (n, n) of a dense or CSR (n, p) S; ``tile_rows`` per sparse tile (default ``TILE_ROWS``; 0: none)."""
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
        G = _syrk(Sd)
        del Sd
    else:
        G = np.zeros((n, n))
    if light_cols.size:
        col_map = np.full(p, -1, dtype=np.int64)
        col_map[light_cols] = np.arange(light_cols.size)
        if tile_rows is None:
            tile_rows = TILE_ROWS if n >= TILE_MIN_N else 0
        tile_rows = check_int(tile_rows, "tile_rows (0: untiled)", 0)
        _light_gram(indptr, indices, S.data, col_map, col_nnz[light_cols], G, tile_rows or None)
    return _mirror_upper(G)


def _row_sq_diff(S, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """sum_k (s_ak - s_bk)^2 for the row pairs (a[t], b[t])."""
    if sp.issparse(S):
        diff = S[a] - S[b]
        return np.asarray(diff.multiply(diff).sum(axis=1)).ravel()
    diff = S[a] - S[b]
    return np.einsum("ij,ij->i", diff, diff)


def pairwise_distances(S) -> np.ndarray:
    r"""$D_{ij} = \|s_i - s_j\|_2$ (n, n), exactly symmetric, zero diagonal, for the rows of a dense or CSR ``S``."""
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
