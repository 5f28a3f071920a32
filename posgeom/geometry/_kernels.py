r"""Compiled (numba) inner loops of the geometry core. Imported lazily: ``import posgeom`` does not load numba.

Counting (:mod:`posgeom.geometry.accumulate`), one pass each: ``partition`` buckets every counted token as a
local flat index $(i - bB) v + w$ by block $b = \lfloor i / B \rfloor$ of positions (a counting sort; the
id range is checked here); ``count_block`` counts a bucket into a $B \times v$ histogram that stays in cache;
``emit_block`` turns its non-zero cells, found 64 at a time from a bit mask, into CSR columns and values and
zeroes the histogram. Blocks, and groups of sequences in ``partition``, run on separate threads.

Hellinger Gram matrix (:mod:`posgeom.geometry._pairwise`): ``scatter_columns`` compacts the "heavy" columns of
a CSR matrix into a dense block; ``light_gram`` adds $\sum_w s_{\cdot w} s_{\cdot w}^\top$ over the "light"
columns, $k (k + 1) / 2$ multiply-adds for a column used by $k$ rows, into the upper triangle of $G$;
``block_columns`` + ``light_gram_tile_row`` make the same products tile by tile ($R \times R$ tiles that stay
in cache; block rows write disjoint rows of $G$, so they run on separate threads).

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
    """Bucket the local flat indices of the tokens at positions < n by block of B positions.

    tok (T,) int32/int64 token ids; starts, lengths (b,) int64: sequence s is tok[starts[s] : starts[s] +
    lengths[s]]; cursor (n_blocks,) int64: where this group's slice of each bucket starts, advanced to
    where it ends; staging (total,) int32; ignored (v,) bool or (0,) for none.
    Returns 0, or 1 when an id at a counted position lies outside [0, v) (staging is then unusable).
    """
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
    """Append the non-zero cells of hist's first ``rows`` rows to (indices, data) from position k.

    bits (rows, W) uint64: bit j of word g of row r is set iff hist[r v + 64 g + j] != 0. The cells read
    are reset to 0. row_nnz[row0 + r] receives the count of row r. Returns the new k.
    """
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
    """out[i, col_map[w]] = S[i, w] for every stored entry of the CSR matrix S with col_map[w] >= 0.

    indptr (n + 1,), indices, data (nnz,): S in CSR; col_map (p,) int64, -1 for columns left out;
    out (n, p_kept) float64, zero on entry.
    """
    for i in range(indptr.size - 1):
        for k in range(indptr[i], indptr[i + 1]):
            c = col_map[indices[k]]
            if c >= 0:
                out[i, c] = data[k]


@_jit
def light_gram(indptr, indices, data, col_map, col_ptr, rows, vals, G):
    """G[a, b] += s_aw s_bw for a <= b over the columns w with col_map[w] >= 0 (upper triangle only).

    indptr, indices, data: S (n, p) in CSR; col_map (p,) int64: the light column's index, -1 otherwise;
    col_ptr (p_light + 1,) int64: where each light column starts in its CSC form (from its row count);
    rows (int64), vals (float64) of size col_ptr[-1]: filled here with that CSC form (a row-order scan
    leaves each column's rows ascending); G (n, n) float64, C order.
    """
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
    """Each block of R rows' light entries, column by column: the layout ``light_gram_tile_row`` reads.

    indptr, indices, data: S (n, p) in CSR, each row's columns ascending; col_map (p,) int64: the light
    column's index (0 .. p_light - 1), -1 otherwise; counts (p_light,) int64, zero on entry (left zero);
    block_ptr (n_blocks + 1,), cols and col_start (at least the number of (block, column) pairs + 1):
    filled here so that block b's columns are ``cols[block_ptr[b]:block_ptr[b + 1]]`` (ascending) and
    column t's entries are ``rows/vals[col_start[t]:col_start[t + 1]]`` (rows ascending). Returns the
    number of (block, column) pairs.
    """
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
    """G[a, b] += s_aw s_bw for a in block I, b in blocks J >= I (b >= a when J = I), light columns w.

    The layout is ``block_columns``'s; G (n, n) float64, C order: only rows of block I are written.
    """
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
