r"""Compiled (numba) inner loops of the geometry core. Imported lazily: ``import posgeom`` does not load numba.

Counting (``accumulate.py``) buckets tokens by block of $B$ positions and counts each block in
a cache-sized histogram; the Hellinger Gram matrix (``_pairwise.py``) adds a "light" column's
$k (k + 1) / 2$ products sparsely, tile by tile. Blocks and tiles run on separate threads.

Numba does no bounds checking: every caller validates the inputs first and calls a later step only when the
earlier one reported success.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.cpython.unsafe.numbers import trailing_zeros

__all__ = [
    "partition", "count_block", "emit_block", "scatter_columns", "light_gram", "block_columns", "light_gram_tile_row",
]


def _jit(fn):
    """``njit(nogil=True)``, cached on disk where numba finds a writable place (else compiled in each process)."""
    try:
        return njit(nogil=True, cache=True)(fn)
    except RuntimeError:  # "cannot cache function ...: no locator available"
        return njit(nogil=True)(fn)


@_jit
def partition(tok, starts, lengths, n, v, B, cursor, staging, ignored):
    """Bucket flat indices (i - bB) v + w of tokens at positions < n by block b; 1 if an id is outside [0, v), else 0.

    tok (T,); starts, lengths (b,) int64; cursor (n_blocks,) int64, advanced; staging (total,) int32; ignored (v,)
    bool or (0,)."""
    use_ignore = ignored.size > 0
    lo = 0
    hi = 0
    for s in range(starts.size):
        L = min(lengths[s], n)
        base = starts[s]
        i = 0
        b = 0
        while i < L:
            e = min(L, i + B)
            c = cursor[b]
            if use_ignore:
                for j in range(e - i):
                    w = tok[base + i + j]
                    if w < 0 or w >= v:
                        return 1
                    if not ignored[w]:
                        # local flat index (i - b B) v + w
                        staging[c] = j * v + w
                        c += 1
            else:
                for j in range(e - i):
                    w = tok[base + i + j]
                    lo = min(lo, w)
                    hi = max(hi, w)
                    # local flat index (i - b B) v + w
                    staging[c + j] = j * v + w
                c += e - i
            cursor[b] = c
            i = e
            b += 1
    return 1 if (lo < 0 or hi >= v) else 0


@_jit
def count_block(hist, staging, begin, end):
    """hist[f] += 1 for f in staging[begin[g] : end[g]], every group g. hist (B v,) int32."""
    for g in range(begin.size):
        for k in range(begin[g], end[g]):
            hist[staging[k]] += 1


@_jit
def emit_block(hist, bits, v, rows, row0, k, row_nnz, indices, data):
    """Append hist's non-zero cells (bit mask ``bits`` (rows, W) uint64) to (indices, data) from k, zeroing them.

    row_nnz[row0 + r] receives row r's count; returns the new k."""
    one = np.uint64(1)
    W = bits.shape[1]
    for r in range(rows):
        off = r * v
        k0 = k
        for g in range(W):
            word = bits[r, g]
            a = off + 64 * g
            while word != 0:
                t = trailing_zeros(word)
                indices[k] = 64 * g + t
                data[k] = hist[a + t]
                hist[a + t] = 0
                k += 1
                # clear the lowest set bit
                word &= word - one
        row_nnz[row0 + r] = k - k0
    return k


@_jit
def scatter_columns(indptr, indices, data, col_map, out):
    """out[i, col_map[w]] = S[i, w] for the CSR S's entries with col_map[w] >= 0; out (n, p_kept) zero on entry."""
    for i in range(indptr.size - 1):
        for k in range(indptr[i], indptr[i + 1]):
            c = col_map[indices[k]]
            if c >= 0:
                out[i, c] = data[k]


@_jit
def light_gram(indptr, indices, data, col_map, col_ptr, rows, vals, G):
    """G[a, b] += s_aw s_bw, a <= b, over light columns w (col_map[w] >= 0) of the CSR S; G (n, n) C order.

    col_ptr (p_light + 1,) int64: each light column's start in the CSC form written to rows, vals."""
    cursor = col_ptr[:-1].copy()
    for i in range(indptr.size - 1):
        for k in range(indptr[i], indptr[i + 1]):
            c = col_map[indices[k]]
            if c >= 0:
                q = cursor[c]
                rows[q] = i
                vals[q] = data[k]
                cursor[c] = q + 1
    for c in range(col_ptr.size - 1):
        p0 = col_ptr[c]
        p1 = col_ptr[c + 1]
        for p in range(p0, p1):
            a = rows[p]
            x = vals[p]
            # rows ascending: (a, rows[q]) with q >= p lies on or above the diagonal
            for q in range(p, p1):
                G[a, rows[q]] += x * vals[q]


@_jit
def block_columns(indptr, indices, data, col_map, R, counts, block_ptr, cols, col_start, rows, vals):
    """Lay out each block of R rows' light entries by column for ``light_gram_tile_row``; returns the pair count.

    Block b's columns: ``cols[block_ptr[b]:block_ptr[b + 1]]``; column t's entries:
    ``rows/vals[col_start[t]:col_start[t + 1]]``; counts (p_light,) zero on entry and exit."""
    n = indptr.size - 1
    n_light = counts.size
    t = 0
    q = 0
    block_ptr[0] = 0
    for b in range(block_ptr.size - 1):
        r0 = b * R
        r1 = min(n, r0 + R)
        for i in range(r0, r1):
            for k in range(indptr[i], indptr[i + 1]):
                c = col_map[indices[k]]
                if c >= 0:
                    counts[c] += 1
        # the block's columns in ascending order; counts[c] becomes the column's write cursor
        t0 = t
        for c in range(n_light):
            m = counts[c]
            if m:
                cols[t] = c
                col_start[t] = q
                counts[c] = q
                q += m
                t += 1
        col_start[t] = q
        # rows of the block in ascending order, so each column's rows come out ascending
        for i in range(r0, r1):
            for k in range(indptr[i], indptr[i + 1]):
                c = col_map[indices[k]]
                if c >= 0:
                    w = counts[c]
                    rows[w] = i
                    vals[w] = data[k]
                    counts[c] = w + 1
        for u in range(t0, t):
            counts[cols[u]] = 0
        block_ptr[b + 1] = t
    return t


@_jit
def light_gram_tile_row(I, block_ptr, cols, col_start, rows, vals, G):
    """G[a, b] += s_aw s_bw, a in block I, b in blocks J >= I (b >= a if J = I), layout of ``block_columns``."""
    n_blocks = block_ptr.size - 1
    i0 = block_ptr[I]
    i1 = block_ptr[I + 1]
    for J in range(I, n_blocks):
        j = block_ptr[J]
        j1 = block_ptr[J + 1]
        for u in range(i0, i1):
            c = cols[u]
            # merge: advance through block J's ascending columns to c
            while j < j1 and cols[j] < c:
                j += 1
            if j == j1:
                break
            if cols[j] != c:
                continue
            a0 = col_start[u]
            a1 = col_start[u + 1]
            b0 = col_start[j]
            b1 = col_start[j + 1]
            for p in range(a0, a1):
                Ga = G[rows[p]]
                x = vals[p]
                # within one block the rows ascend, so q >= p keeps (a, b) on or above the diagonal
                q0 = p if J == I else b0
                for q in range(q0, b1):
                    Ga[rows[q]] += x * vals[q]
