r"""How positional counts are accumulated (the engine behind :func:`posgeom.geometry.positional_counts`).

Only the first $\min(L_s, n)$ tokens of each sequence are read. A compiled kernel (``_kernels.py``) counts
block by block of positions in cache-sized histograms, on several threads (``np.bincount`` over flat indices
$i v + w$ waits on main memory); when $n v$ dwarfs the number of tokens, the flat indices are sorted instead.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import scipy.sparse as sp

from ..validation import check_optional_int
from .counts import PositionalCounts

# Tokens counted per kernel call (the staging buffer holds 4 bytes per token, so at most 64 MiB), and
# the number a stream of small batches gathers before it is counted.
_CHUNK_TOKENS = 1 << 24
# Very sparse tables (n*v > max(_DENSE_LIMIT, _SPARSE_RATIO * tokens)) are counted by a sort (np.unique):
# the blocked kernel's cost grows with the n*v cells it scans, a sort's only with the tokens.
_DENSE_LIMIT = 1 << 24
_SPARSE_RATIO = 64
# Bytes of the per-thread block histogram (B rows of v int32 cells): about a core's L2 cache.
_HIST_BYTES = 1 << 21
# Below this many tokens one thread does everything (starting threads would cost more than it saves).
_PARALLEL_MIN_TOKENS = 1 << 18

#: Bytes of the per-position arrays (CSR row pointers, reaches, work arrays) per position counted.
_BYTES_PER_POSITION = 32


def _physical_memory() -> int | None:
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):
        return None


def check_size(n: int, v: int) -> None:
    """A ``ValueError`` naming the size when the counting arrays cannot fit in memory (not a ``MemoryError``)."""
    need = _BYTES_PER_POSITION * (n + 1) + 2 * v
    total = _physical_memory()
    if total is not None and need > total:
        raise ValueError(
            f"n_positions = {n:,} and vocab_size = {v:,} need at least {need / 2**30:,.1f} GiB for the per-position "
            f"and per-token arrays, more than this machine's {total / 2**30:,.1f} GiB of memory; count fewer "
            "positions (positions beyond the longest sequence are empty anyway) or a smaller vocabulary"
        )


def _kernels():
    from . import _kernels as kernels  # numba: loaded on the first count, not on ``import posgeom``
    return kernels


def resolve_threads(n_threads) -> int:
    """``n_threads`` validated (an integer >= 1); None: the cores this process may use, at most 8."""
    n_threads = check_optional_int(n_threads, "n_threads", 1, none="all cores")
    if n_threads is None:
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:  # not on Linux
            cores = os.cpu_count() or 1
        return max(1, min(cores, 8))
    return n_threads


def _tokens_per_position(clipped_lengths: np.ndarray, n: int) -> np.ndarray:
    """(n,) int64: how many of the sequences reach position i, i.e. #{s : min(L_s, n) > i}."""
    # #{L > i} = b - #{L <= i}
    at_most = np.cumsum(np.bincount(clipped_lengths, minlength=n + 1))[:n]
    return clipped_lengths.size - at_most


def gather_counted(tok, starts, lengths, n):
    """The tokens at counted positions (< n) and their positions, sequences laid end to end (numpy)."""
    clipped = np.minimum(lengths, n)
    total = int(clipped.sum())
    offsets = np.cumsum(clipped) - clipped
    pos = np.arange(total, dtype=np.int64) - np.repeat(offsets, clipped)
    if starts is None and total == tok.size:
        return tok, pos
    if starts is None:
        starts = np.cumsum(lengths) - lengths
    return tok[np.repeat(starts, clipped) + pos], pos


def _canonical_csr(data, cols, indptr, n: int, v: int) -> sp.csr_matrix:
    """CSR (n, v) int64 counts from parts already sorted by row then column, each cell once."""
    idx_dtype = np.int32 if max(n * v, data.size) < 2**31 - 1 else np.int64
    mat = sp.csr_matrix(
        (data.astype(np.int64, copy=False), cols.astype(idx_dtype, copy=False), indptr.astype(idx_dtype, copy=False)),
        shape=(n, v), copy=False,
    )
    mat.has_canonical_format = True  # sorted, unique column indices by construction
    return mat


def _csr_from_sorted_flat(nz: np.ndarray, data: np.ndarray, n: int, v: int) -> sp.csr_matrix:
    """CSR (n, v) from sorted unique flat indices ``f = i v + w`` and their counts."""
    # indptr[i] = number of nonzeros in rows < i = first flat index >= i * v
    indptr = np.searchsorted(nz, np.arange(n + 1, dtype=np.int64) * v)
    # w = f - i * v
    cols = nz - np.repeat(np.arange(n, dtype=np.int64) * v, np.diff(indptr))
    return _canonical_csr(data, cols, indptr, n, v)


def _counts_by_sort(tok, starts, lengths, n, v, ignore_mask, where) -> sp.csr_matrix:
    """Reference path for very sparse tables: flat indices ``i v + w`` of every counted token, sorted."""
    t, pos = gather_counted(tok, starts, lengths, n)
    check_tokens(t, v, where)
    if ignore_mask.size:
        keep = ~ignore_mask[t]  # ids checked in [0, v) above
        t, pos = t[keep], pos[keep]
    # f = i * v + w
    flat = pos * v + t.astype(np.int64, copy=False)
    nz, data = np.unique(flat, return_counts=True)
    return _csr_from_sorted_flat(nz, data, n, v)


def _split_balanced(weights: np.ndarray, parts: int) -> np.ndarray:
    """Boundaries 0 = b_0 <= ... <= b_parts = len(weights) cutting ``weights`` into runs of similar sums."""
    cum = np.cumsum(weights)
    cuts = np.searchsorted(cum, cum[-1] * np.arange(1, parts) / parts, side="right") if cum.size else []
    return np.concatenate([[0], np.minimum(cuts, weights.size), [weights.size]]).astype(np.int64)


def _run(fn, args_list, n_threads):
    if n_threads <= 1 or len(args_list) <= 1:
        return [fn(*a) for a in args_list]
    with ThreadPoolExecutor(max_workers=min(n_threads, len(args_list))) as pool:
        return list(pool.map(lambda a: fn(*a), args_list))


def _counts_by_blocks(tok, starts, lengths, n, v, ignore_mask, where, n_threads) -> sp.csr_matrix:
    """The compiled path of ``posgeom/geometry/_kernels.py``."""
    K = _kernels()
    if tok.dtype not in (np.int32, np.int64):
        tok = tok.astype(np.int64)
    clipped = np.minimum(lengths, n)
    total = int(clipped.sum())
    if int(starts.min()) < 0 or int((starts + clipped).max()) > tok.size:  # the kernels do not bounds-check
        raise AssertionError("internal error: a sequence extends past the token array")
    threads = n_threads if total >= _PARALLEL_MIN_TOKENS else 1
    B = max(1, min(n, _HIST_BYTES // (4 * v)))  # positions per block
    block_first = np.arange(0, n, B)
    n_blocks = block_first.size

    # 1. partition: groups of sequences (similar token counts) fill their own slice of every bucket
    seq_cuts = _split_balanced(clipped, threads)
    groups = [(int(a), int(b)) for a, b in zip(seq_cuts[:-1], seq_cuts[1:])]
    per_group = np.stack(
        [np.add.reduceat(_tokens_per_position(clipped[a:b], n), block_first) for a, b in groups]
    )  # (groups, n_blocks) tokens of group g in block b
    bucket_size = per_group.sum(axis=0)
    # begin[g, b] = start of bucket b + tokens of the earlier groups in it
    begin = (np.cumsum(bucket_size) - bucket_size)[None, :] + (np.cumsum(per_group, axis=0) - per_group)
    cursor = begin.copy()
    staging = np.empty(total, dtype=np.int32)
    flags = _run(
        lambda g, a, b: K.partition(tok, starts[a:b], lengths[a:b], n, v, B, cursor[g], staging, ignore_mask),
        [(g, a, b) for g, (a, b) in enumerate(groups)],
        threads,
    )
    if any(flags):
        check_tokens(gather_counted(tok, starts, lengths, n)[0], v, where)
        raise AssertionError("the counting kernel flagged a token id that numpy finds in range")  # unreachable
    begin_t, end_t = np.ascontiguousarray(begin.T), np.ascontiguousarray(cursor.T)  # (n_blocks, groups)

    # 2.-3. count and emit runs of blocks (similar token counts) on each thread
    words = -(-v // 64)
    row_nnz = np.zeros(n, dtype=np.int64)

    def count_and_emit(b0, b1):
        hist = np.zeros(B * v, dtype=np.int32)
        mask = np.zeros((B, 64 * words), dtype=bool)  # padded to whole 64-bit words; the pad stays False
        cap = int(min(int((end_t[b0:b1] - begin_t[b0:b1]).sum()), min(n, b1 * B) * v - b0 * B * v))
        indices = np.empty(cap, dtype=np.int32)
        data = np.empty(cap, dtype=np.int64)
        k = 0
        for blk in range(b0, b1):
            K.count_block(hist, staging, begin_t[blk], end_t[blk])
            rows = min(B, n - blk * B)
            np.not_equal(hist[: rows * v].reshape(rows, v), 0, out=mask[:rows, :v])
            bits = np.packbits(mask[:rows], axis=1, bitorder="little").view("<u8").astype(np.uint64, copy=False)
            k = K.emit_block(hist, bits, v, rows, blk * B, k, row_nnz, indices, data)
        return indices[:k], data[:k]

    block_cuts = _split_balanced(bucket_size, min(threads, n_blocks))
    parts = _run(count_and_emit, [(int(a), int(b)) for a, b in zip(block_cuts[:-1], block_cuts[1:]) if b > a], threads)
    indices = np.concatenate([p[0] for p in parts])
    data = np.concatenate([p[1] for p in parts])
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(row_nnz, out=indptr[1:])
    return _canonical_csr(data, indices, indptr, n, v)  # columns emitted in increasing order, once each


class CountAccumulator:
    """Counts batches into a sparse (n, v) total: large inputs at once, small ones gathered first."""

    def __init__(self, n: int, v: int, ignore_ids: tuple[int, ...], n_threads: int):
        self.n, self.v = n, v
        self.ignore_ids = ignore_ids
        # ignore_mask[w]: id w is not counted; size 0 when nothing is ignored (the kernels' fast loop)
        self.ignore_mask = np.zeros(v if ignore_ids else 0, dtype=bool)
        self.ignore_mask[[w for w in ignore_ids if 0 <= w < v]] = True
        self.n_threads = n_threads
        self.pending: list[tuple[np.ndarray, np.ndarray]] = []  # (tokens end to end, lengths <= n)
        self.buffered = 0
        self.total = None
        self.n_sequences = 0

    def add(self, tok: np.ndarray, lengths: np.ndarray, where: str, starts=None, owned: bool = False) -> None:
        """Add ``tok[starts[s] : starts[s] + lengths[s]]`` (end to end when ``starts`` is None); ``owned``: keep tok."""
        n = self.n
        self.n_sequences += lengths.size
        counted = int(np.minimum(lengths, n).sum())
        if counted == 0:
            return
        if counted >= _CHUNK_TOKENS // 4:
            self.flush()
            self._count_now(tok, starts, lengths, where)
            return
        t, _ = gather_counted(tok, starts, lengths, n)
        check_tokens(t, self.v, where)
        if t is tok and not owned:
            t = t.copy()
        self.pending.append((t, np.minimum(lengths, n)))
        self.buffered += counted
        if self.buffered >= _CHUNK_TOKENS:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        toks, lens = zip(*self.pending)
        self.pending, self.buffered = [], 0
        tok = toks[0] if len(toks) == 1 else np.concatenate([t.astype(np.int64, copy=False) for t in toks])
        self._count_now(tok, None, lens[0] if len(lens) == 1 else np.concatenate(lens), "sequences")

    def _count_now(self, tok, starts, lengths, where) -> None:
        n, v = self.n, self.v
        if starts is None:
            starts = np.cumsum(lengths) - lengths
        clipped = np.minimum(lengths, n)
        # chunks of whole sequences with at most _CHUNK_TOKENS counted tokens each
        cum = np.cumsum(clipped)
        cuts = np.searchsorted(cum, np.arange(_CHUNK_TOKENS, int(cum[-1]), _CHUNK_TOKENS), side="right")
        bounds = np.concatenate([[0], cuts, [lengths.size]])
        for a, b in zip(bounds[:-1], bounds[1:]):
            if b <= a:
                continue
            s, L = starts[a:b], lengths[a:b]
            tokens = int(clipped[a:b].sum())
            if tokens == 0:
                continue
            if n * v > max(_DENSE_LIMIT, _SPARSE_RATIO * tokens):
                part = _counts_by_sort(tok, s, L, n, v, self.ignore_mask, where)
            else:
                part = _counts_by_blocks(tok, s, L, n, v, self.ignore_mask, where, self.n_threads)
            self.total = part if self.total is None else self.total + part

    def result(self) -> PositionalCounts:
        self.flush()
        if self.total is None:
            return PositionalCounts(sp.csr_matrix((self.n, self.v), dtype=np.int64), self.n_sequences, self.ignore_ids)
        return PositionalCounts.from_canonical(self.total, self.n_sequences, self.ignore_ids)


def check_tokens(tok: np.ndarray, v: int, where: str) -> None:
    """A ``ValueError`` naming ``where`` when an id of ``tok`` lies outside ``[0, v)``."""
    if tok.size == 0:
        return
    lo, hi = int(tok.min()), int(tok.max())
    if lo < 0 or hi >= v:
        bad = lo if lo < 0 else hi
        raise ValueError(
            f"token id {bad} in {where} is outside [0, vocab_size = {v}); "
            "check vocab_size, and mask padding ids (e.g. -100) with lengths= or attention_mask="
        )
