r"""Positional counts (see the book's notation).

For a corpus of token-id sequences $x = (x_0, \dots, x_{L-1})$ over a vocabulary of size $v$ and the first
$n$ positions,

$$c_i(w) = \#\{x : L > i,\ x_i = w\}, \qquad N_i = \sum_w c_i(w),$$

so $N_i$ is the number of sequences that reach position $i$. Padding is never counted; a sequence longer
than $n$ contributes its first $n$ tokens only.

The counts are stored as a sparse CSR matrix of shape $(n, v)$ (for BERT, $v = 30{,}522$ and most
$(i, w)$ cells are empty). Counting is additive: the counts of a corpus are the sum of the counts of
any partition of it into shards, which is what lets a large corpus be counted shard by shard::

    total = sum(positional_counts(shard, n, v) for shard in shards)

How the counting is done. Sequence $s$ is ``tok[start_s : start_s + L_s]`` of one token array (laid end to
end, or rows of a padded batch); only its first $\min(L_s, n)$ tokens are read. A compiled kernel
(``posgeom/geometry/_kernels.py``) buckets every counted token by block of $B$ positions, counts each
block in a histogram of $B \times v$ cells small enough to stay in a core's cache, and emits the
block's non-zero cells straight into CSR; blocks and groups of sequences are spread over threads.
This is faster than one ``np.bincount`` over precomputed flat indices $f = i \cdot v + w$, whose
scattered increments over the whole $n \times v$ table wait on main memory (``benchmarks/``). When
$n v$ is very large compared with the number of tokens, a sort of the flat indices (``np.unique``)
is used instead, since its cost does not grow with $n v$.

Special tokens. There are two policies: ``"model"`` (positions as the model sees them, ``[CLS]``
at 0) and ``"content"`` (special tokens removed *before* positions are assigned, so the first content
token is at position 0). Both are decided where the sequences are built (:mod:`posgeom.corpora`). The
``ignore_ids`` argument here is a different, simpler thing: the listed ids are not counted, but every
other token keeps the position it has in the sequence given (so with ``ignore_ids=[cls_id]`` position 0
becomes empty rather than shifting the content left). Ignored tokens count neither in $c_i$ nor in
$N_i$, so $N_i = \sum_w c_i(w)$ always holds.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from numbers import Integral

import numpy as np
import scipy.sparse as sp

__all__ = ["PositionalCounts", "positional_counts"]

# Tokens counted per kernel call (the staging buffer holds 4 bytes per token, so at most 64 MiB), and
# the number a stream of small batches gathers before it is counted.
_CHUNK_TOKENS = 1 << 24
# Sequences gathered from a stream of single sequences before they are counted as one ragged batch.
_STREAM_BATCH = 16384
# Very sparse tables (n*v > max(_DENSE_LIMIT, _SPARSE_RATIO * tokens)) are counted by a sort (np.unique):
# the blocked kernel's cost grows with the n*v cells it scans, a sort's only with the tokens.
_DENSE_LIMIT = 1 << 24
_SPARSE_RATIO = 64
# Bytes of the per-thread block histogram (B rows of v int32 cells): about a core's L2 cache.
_HIST_BYTES = 1 << 21
# Below this many tokens one thread does everything (starting threads would cost more than it saves).
_PARALLEL_MIN_TOKENS = 1 << 18


class PositionalCounts:
    r"""Counts $c_i(w)$ and reaches $N_i$ of a corpus at its first ``n_positions`` positions.

    Attributes
    ----------
    counts : scipy.sparse.csr_matrix of shape (n_positions, vocab_size), int64
        ``counts[i, w]`` $= c_i(w)$.
    reach : ndarray of shape (n_positions,), int64
        $N_i = \sum_w c_i(w)$, the number of sequences whose position ``i`` was counted.
    n_positions, vocab_size : int
        $n$ and $v$.
    n_sequences : int
        Number of sequences counted (including empty ones and ones shorter than ``n_positions``).
    ignore_ids : tuple of int
        Token ids that were not counted (see the module docstring).

    Notes
    -----
    ``a + b`` adds the counts of two disjoint shards and equals the counts of their union; ``0 + a``
    returns ``a``, so ``sum(list_of_counts)`` works. Both operands must share ``n_positions``,
    ``vocab_size`` and ``ignore_ids``.
    """

    __slots__ = ("counts", "reach", "n_positions", "vocab_size", "n_sequences", "ignore_ids")
    __hash__ = None  # mutable container semantics; equality is by value

    def __init__(self, counts, n_sequences: int, ignore_ids: Sequence[int] = (), *, _trusted: bool = False):
        if not _trusted:  # counts built here are already canonical int64 CSR
            counts = sp.csr_matrix(counts)
            if counts.dtype != np.int64:
                if not np.issubdtype(counts.dtype, np.integer):
                    raise ValueError(f"counts must hold integers; got dtype {counts.dtype}")
                counts = counts.astype(np.int64)
            counts.sum_duplicates()
            counts.eliminate_zeros()
            if counts.nnz and counts.data.min() < 0:
                raise ValueError("counts must be non-negative")
        self.counts = counts
        self.n_positions, self.vocab_size = (int(s) for s in counts.shape)
        # N_i = sum_w c_i(w)
        self.reach = np.asarray(counts.sum(axis=1), dtype=np.int64).ravel()
        self.n_sequences = int(n_sequences)
        if self.reach.size and self.n_sequences < int(self.reach.max()):
            raise ValueError(
                f"n_sequences = {self.n_sequences} is smaller than the largest reach {int(self.reach.max())}"
            )
        self.ignore_ids = _check_ignore_ids(ignore_ids)

    @classmethod
    def from_array(cls, counts, n_sequences: int | None = None) -> "PositionalCounts":
        """Wrap an (n, v) array of non-negative integer counts (dense or sparse).

        ``n_sequences`` defaults to ``max_i N_i`` (the number of sequences reaching position 0 when
        nothing was ignored).
        """
        if sp.issparse(counts):
            mat = sp.csr_matrix(counts)
        else:
            arr = np.asarray(counts)
            if arr.ndim != 2:
                raise ValueError(f"counts must be 2-D (n_positions, vocab_size); got shape {arr.shape}")
            if not np.issubdtype(arr.dtype, np.integer):
                raise ValueError(f"counts must hold integers; got dtype {arr.dtype}")
            if arr.size and arr.min() < 0:
                raise ValueError("counts must be non-negative")
            mat = sp.csr_matrix(arr.astype(np.int64))
        if n_sequences is None:
            n_sequences = int(np.asarray(mat.sum(axis=1)).max()) if mat.shape[0] else 0
        return cls(mat, n_sequences)

    def to_dense(self) -> np.ndarray:
        """The counts as a dense (n_positions, vocab_size) int64 array."""
        return self.counts.toarray()

    def __add__(self, other):
        if isinstance(other, Integral) and other == 0:
            return self
        if not isinstance(other, PositionalCounts):
            return NotImplemented
        if (self.n_positions, self.vocab_size) != (other.n_positions, other.vocab_size):
            raise ValueError(
                "cannot add counts of different shapes: "
                f"(n_positions, vocab_size) = {(self.n_positions, self.vocab_size)} vs "
                f"{(other.n_positions, other.vocab_size)}; count every shard with the same n and v"
            )
        if self.ignore_ids != other.ignore_ids:
            raise ValueError(
                f"cannot add counts made with different ignore_ids ({self.ignore_ids} vs {other.ignore_ids})"
            )
        return PositionalCounts(
            self.counts + other.counts, self.n_sequences + other.n_sequences, self.ignore_ids, _trusted=True
        )

    __radd__ = __add__

    def __eq__(self, other):
        if not isinstance(other, PositionalCounts):
            return NotImplemented
        return (
            (self.n_positions, self.vocab_size, self.n_sequences, self.ignore_ids)
            == (other.n_positions, other.vocab_size, other.n_sequences, other.ignore_ids)
            and (self.counts != other.counts).nnz == 0
        )

    def __repr__(self):
        return (
            f"PositionalCounts(n_positions={self.n_positions}, vocab_size={self.vocab_size}, "
            f"n_sequences={self.n_sequences}, tokens={int(self.reach.sum())}, nnz={self.counts.nnz})"
        )


def _check_ignore_ids(ignore_ids) -> tuple[int, ...]:
    """``ignore_ids`` as a sorted tuple of distinct ints; a non-integer id (1.7, "3", True) is an error, never
    truncated to another id."""
    ids = []
    for t in ignore_ids:
        if isinstance(t, (bool, np.bool_)) or not isinstance(t, (Integral, np.integer)):
            raise ValueError(f"ignore_ids must hold integer token ids; got {t!r} ({type(t).__name__})")
        ids.append(int(t))
    return tuple(sorted(set(ids)))


#: Bytes of the per-position arrays (CSR row pointers, reaches, work arrays) per position counted.
_BYTES_PER_POSITION = 32


def _physical_memory() -> int | None:
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, OSError, ValueError):
        return None


def _check_size(n: int, v: int) -> None:
    """A ``ValueError`` naming the size when the per-position and per-token arrays cannot fit in memory
    (instead of a ``MemoryError`` deep inside numpy)."""
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


def _resolve_threads(n_threads) -> int:
    if n_threads is None:
        try:
            cores = len(os.sched_getaffinity(0))
        except AttributeError:  # not on Linux
            cores = os.cpu_count() or 1
        return max(1, min(cores, 8))
    if not _is_scalar_int(n_threads) or isinstance(n_threads, bool) or n_threads < 1:
        raise ValueError(f"n_threads must be an integer >= 1 or None (all cores); got {n_threads!r}")
    return int(n_threads)


def _tokens_per_position(clipped_lengths: np.ndarray, n: int) -> np.ndarray:
    """(n,) int64: how many of the sequences reach position i, i.e. #{s : min(L_s, n) > i}."""
    # #{L > i} = b - #{L <= i}
    at_most = np.cumsum(np.bincount(clipped_lengths, minlength=n + 1))[:n]
    return clipped_lengths.size - at_most


def _gather_counted(tok, starts, lengths, n):
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
    t, pos = _gather_counted(tok, starts, lengths, n)
    _check_tokens(t, v, where)
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
    """The compiled path (see ``posgeom/geometry/_kernels.py``): partition by block of positions, count each
    block in a cache-sized histogram, emit its non-zero cells as CSR."""
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
        _check_tokens(_gather_counted(tok, starts, lengths, n)[0], v, where)
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


class _Accumulator:
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
        """Sequences ``tok[starts[s] : starts[s] + lengths[s]]`` (laid end to end when ``starts`` is None).

        tok (T,) integer ids; lengths (b,) int64, not yet clipped to n; ``owned``: tok may be kept as is
        (a stream's caller may refill its batch buffer after this call returns).
        """
        n = self.n
        self.n_sequences += lengths.size
        counted = int(np.minimum(lengths, n).sum())
        if counted == 0:
            return
        if counted >= _CHUNK_TOKENS // 4:
            self.flush()
            self._count_now(tok, starts, lengths, where)
            return
        t, _ = _gather_counted(tok, starts, lengths, n)
        _check_tokens(t, self.v, where)
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
        total = self.total if self.total is not None else sp.csr_matrix((self.n, self.v), dtype=np.int64)
        return PositionalCounts(total, self.n_sequences, self.ignore_ids, _trusted=self.total is not None)


def _check_tokens(tok: np.ndarray, v: int, where: str) -> None:
    if tok.size == 0:
        return
    lo, hi = int(tok.min()), int(tok.max())
    if lo < 0 or hi >= v:
        bad = lo if lo < 0 else hi
        raise ValueError(
            f"token id {bad} in {where} is outside [0, vocab_size = {v}); "
            "check vocab_size, and mask padding ids (e.g. -100) with lengths= or attention_mask="
        )


def _as_int_array(x, where: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.size == 0 and arr.dtype.kind == "f":
        return arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise ValueError(f"{where} must hold integer token ids; got dtype {arr.dtype}")
    return arr


def _count_ragged(seqs: list, acc: _Accumulator, where: str) -> None:
    """Count a list of 1-D sequences (lists or arrays) of possibly different lengths."""
    n = acc.n
    if not seqs:
        return
    # array-likes (e.g. CPU torch tensors) become arrays; lists, tuples and ranges are read as they are
    seqs = [s if isinstance(s, (list, tuple, range, np.ndarray)) else np.asarray(s) for s in seqs]
    lengths = np.fromiter((len(s) for s in seqs), dtype=np.int64, count=len(seqs))
    if lengths.size and int(lengths.max()) > n:  # truncate before concatenating: cheaper than a mask
        seqs = [s[:n] for s in seqs]
        lengths = np.minimum(lengths, n)
    total = int(lengths.sum())
    if total == 0:
        acc.n_sequences += len(seqs)
        return
    if all(isinstance(s, np.ndarray) for s in seqs):
        for s in seqs:
            if s.ndim != 1:
                raise ValueError(f"{where}: every sequence must be 1-D; got one of shape {s.shape}")
        tok = _as_int_array(np.concatenate(seqs), where)
    else:
        # Python ints to one int64 array, _STREAM_BATCH sequences at a time (bounded temporary lists)
        parts = []
        for k in range(0, len(seqs), _STREAM_BATCH):
            flat_items = [t for s in seqs[k : k + _STREAM_BATCH] for t in s]
            if not all(isinstance(t, (Integral, np.integer)) and not isinstance(t, bool) for t in flat_items):
                bad = next(t for t in flat_items if not isinstance(t, (Integral, np.integer)) or isinstance(t, bool))
                raise ValueError(f"{where} must hold integer token ids; found {bad!r} ({type(bad).__name__})")
            parts.append(np.fromiter(flat_items, dtype=np.int64, count=len(flat_items)))
        tok = parts[0] if len(parts) == 1 else np.concatenate(parts)
    acc.add(tok, lengths, where, owned=True)  # a new array: safe to keep


def _count_padded(arr, lengths, attention_mask, acc: _Accumulator, where: str) -> None:
    """Count a padded (batch, L) array whose valid prefix per row is given by lengths or a right-padded mask."""
    n = acc.n
    arr = _as_int_array(arr, where)
    if arr.ndim != 2:
        raise ValueError(f"{where} must be 2-D (batch, length); got shape {arr.shape}")
    b, width = arr.shape
    if lengths is not None and attention_mask is not None:
        raise ValueError("pass either lengths= or attention_mask=, not both")
    if attention_mask is not None:
        mask = np.asarray(attention_mask)
        if mask.shape != arr.shape:
            raise ValueError(f"attention_mask has shape {mask.shape}, but the token array has shape {arr.shape}")
        if mask.dtype.kind not in "biu" or (mask.size and (mask.min() < 0 or mask.max() > 1)):
            raise ValueError("attention_mask must hold 0/1 (or booleans)")
        mask = mask.astype(bool)
        if width > 1 and np.any(mask[:, 1:] & ~mask[:, :-1]):
            row = int(np.argwhere(np.any(mask[:, 1:] & ~mask[:, :-1], axis=1))[0, 0])
            raise ValueError(
                f"attention_mask row {row} is not right-padded (ones then zeros): positions would be ambiguous. "
                "Convert left-padded batches to right padding, or pass ragged sequences"
            )
        lengths = mask.sum(axis=1)
    if lengths is None:
        lengths = np.full(b, width, dtype=np.int64)
    else:
        lengths = np.asarray(lengths)
        if lengths.shape != (b,):
            raise ValueError(f"lengths must have shape ({b},), one per row; got {lengths.shape}")
        if lengths.dtype.kind not in "iu":
            raise ValueError(f"lengths must be integers; got dtype {lengths.dtype}")
        if b and (lengths.min() < 0 or lengths.max() > width):
            raise ValueError(f"lengths must lie in [0, {width}] (the padded width)")
    if b == 0 or min(width, n) == 0:
        acc.n_sequences += b
        return
    # row r is the sequence tok[r * width : r * width + lengths[r]]: no gather of the valid tokens needed
    arr = np.ascontiguousarray(arr)
    acc.add(arr.reshape(-1), lengths.astype(np.int64), where, starts=np.arange(b, dtype=np.int64) * width)


def _is_scalar_int(x) -> bool:
    return isinstance(x, (Integral, np.integer))


def _all_single_sequences(items) -> bool:
    """True when every item is a 1-D array, or every item a list/tuple of ints (one sequence each)."""
    if not items:
        return False
    first = type(items[0])
    if first is np.ndarray:
        return all(type(s) is np.ndarray and s.ndim == 1 for s in items)
    if first in (list, tuple):
        return all(type(s) is first and (len(s) == 0 or _is_scalar_int(s[0])) for s in items)
    return False


def _batch_kind(item) -> str:
    """'seq' for one 1-D sequence, 'padded' for a 2-D array, 'mapping', 'ragged' for a list of sequences."""
    if isinstance(item, Mapping):
        return "mapping"
    if isinstance(item, np.ndarray) or hasattr(item, "__array__") and not isinstance(item, (list, tuple)):
        arr = np.asarray(item)
        if arr.ndim == 1:
            return "seq"
        if arr.ndim == 2:
            return "padded"
        raise ValueError(f"a batch must be 1-D (one sequence) or 2-D (batch, length); got shape {arr.shape}")
    if isinstance(item, (list, tuple, range)):
        if len(item) == 0 or _is_scalar_int(item[0]) or isinstance(item[0], float):
            return "seq"
        return "ragged"
    raise ValueError(
        f"cannot read {type(item).__name__} as token ids: give lists of ints, 1-D/2-D integer arrays, "
        "or mappings with 'input_ids' (and 'attention_mask' or 'lengths')"
    )


def positional_counts(
    sequences,
    n_positions: int,
    vocab_size: int,
    *,
    lengths=None,
    attention_mask=None,
    ignore_ids: Iterable[int] | None = None,
    progress: bool = False,
    n_threads: int | None = None,
) -> PositionalCounts:
    r"""Count $c_i(w)$ and $N_i$ for $i < n$ (Positional counts, see the book's notation).

    $c_i(w) = \#\{x : L > i, x_i = w\}$ and $N_i = \sum_w c_i(w)$; padding is never counted and a
    sequence longer than ``n_positions`` is counted on its first ``n_positions`` tokens.

    Parameters
    ----------
    sequences : one of
        * a list of 1-D integer sequences of any lengths (lists, tuples or arrays): ragged input;
        * a 2-D integer array of shape (batch, L), with ``lengths`` (batch,) or a right-padded
          ``attention_mask`` (batch, L) of 0/1 giving the valid prefix of each row; without either,
          every entry is a token (a rectangular corpus without padding);
        * a 1-D integer array of sequences laid end to end, with ``lengths`` (b,) summing to its size
          (the layout of an Arrow list column or of :mod:`posgeom.corpora`'s token cache; the fastest
          input: no per-sequence work at all);
        * a mapping with key ``"input_ids"`` (batch, L) and optionally ``"attention_mask"`` or
          ``"lengths"`` (a tokenizer's output);
        * any iterable (e.g. a generator) of such batches or of single 1-D sequences, counted batch
          by batch without holding the corpus in memory.
    n_positions : int
        $n$, the number of positions counted (>= 1).
    vocab_size : int
        $v$; every id at a counted position must lie in ``[0, v)`` (ids beyond position ``n`` of a long
        sequence and padding marked by ``lengths``/``attention_mask`` are not read).
    lengths, attention_mask : array-like, optional
        Only with a single 2-D array (``lengths`` also with a 1-D concatenated stream). A left-padded mask is rejected (positions would be ambiguous).
    ignore_ids : iterable of int, optional
        Ids not counted; the other tokens keep their positions. This is *not* the ``"content"``
        special-token policy (which removes special tokens before positions are assigned; see the
        module docstring).
    progress : bool
        Show a tqdm progress bar over the batches of an iterable input.
    n_threads : int, optional
        Threads used by the counting kernel on large inputs (at least 262,144 tokens); default: every
        core this process may use, at most 8. The counts do not depend on it.

    Returns
    -------
    PositionalCounts
        ``counts`` (n_positions, vocab_size) CSR int64, ``reach`` (n_positions,) int64, ...

    Examples
    --------
    >>> c = positional_counts([[1, 2, 3], [1, 3]], n_positions=3, vocab_size=4)
    >>> c.counts.toarray()[1].tolist(), c.reach.tolist()
    ([0, 0, 1, 1], [2, 2, 1])
    """
    for name, val, lo in (("n_positions", n_positions, 1), ("vocab_size", vocab_size, 1)):
        if not _is_scalar_int(val) or isinstance(val, bool) or val < lo:
            raise ValueError(f"{name} must be an integer >= {lo}; got {val!r}")
    n, v = int(n_positions), int(vocab_size)
    _check_size(n, v)
    ignore_tuple = _check_ignore_ids(ignore_ids) if ignore_ids is not None else ()
    acc = _Accumulator(n, v, ignore_tuple, _resolve_threads(n_threads))

    if isinstance(sequences, (str, bytes)):
        raise ValueError("sequences must hold token ids, not text: tokenise first")
    single_array = isinstance(sequences, np.ndarray) or (
        hasattr(sequences, "__array__") and not isinstance(sequences, (list, tuple, Mapping))
    )
    if single_array and np.asarray(sequences).ndim == 2:
        _count_padded(np.asarray(sequences), lengths, attention_mask, acc, "sequences")
        return acc.result()
    if single_array and np.asarray(sequences).ndim == 1 and lengths is not None:
        if attention_mask is not None:
            raise ValueError("a concatenated 1-D stream takes lengths=, not attention_mask=")
        tok = _as_int_array(sequences, "sequences")
        lengths = np.asarray(lengths)
        if lengths.ndim != 1 or lengths.dtype.kind not in "iu":
            raise ValueError(f"lengths must be a 1-D integer array; got shape {lengths.shape}, dtype {lengths.dtype}")
        if lengths.size and lengths.min() < 0:
            raise ValueError("lengths must be >= 0")
        if int(lengths.sum()) != tok.size:
            raise ValueError(
                f"lengths sum to {int(lengths.sum())} but the concatenated stream has {tok.size} tokens; "
                "they must match (one length per sequence, sequences laid end to end)"
            )
        acc.add(tok, lengths.astype(np.int64), "sequences")
        return acc.result()
    if lengths is not None or attention_mask is not None:
        raise ValueError(
            "lengths= and attention_mask= apply to a single 2-D padded array; for batches, pass mappings "
            "{'input_ids': ..., 'attention_mask': ...}"
        )
    if isinstance(sequences, Mapping):
        sequences = [sequences]
    if single_array:
        arr = np.asarray(sequences)
        if arr.ndim != 1:
            raise ValueError(f"a token array must be 1-D or 2-D; got shape {arr.shape}")
        sequences = [arr]
    if not isinstance(sequences, Iterable):
        raise ValueError(f"sequences must be iterable; got {type(sequences).__name__}")
    if not progress and isinstance(sequences, (list, tuple)) and _all_single_sequences(sequences):
        # a corpus already in memory as a list of sequences: one ragged batch, no per-item dispatch
        _count_ragged(list(sequences), acc, "sequences")
        return acc.result()

    items = sequences
    if progress:
        from ..progress import tqdm

        items = tqdm(sequences, desc="counting", unit="batch")
    pending: list = []
    for k, item in enumerate(items):
        kind = _batch_kind(item)
        if kind == "seq":
            pending.append(item)
            if len(pending) >= _STREAM_BATCH:
                _count_ragged(pending, acc, "sequences")
                pending = []
            continue
        if pending:
            _count_ragged(pending, acc, "sequences")
            pending = []
        where = f"batch {k}"
        if kind == "mapping":
            if "input_ids" not in item:
                raise ValueError(f"{where}: a mapping batch needs an 'input_ids' entry; got keys {list(item)}")
            ids = np.asarray(item["input_ids"]) if not isinstance(item["input_ids"], list) else item["input_ids"]
            if isinstance(ids, np.ndarray) and ids.ndim == 2:
                _count_padded(ids, item.get("lengths"), item.get("attention_mask"), acc, where)
            else:  # ragged input_ids (a tokenizer without padding)
                if item.get("attention_mask") is not None or item.get("lengths") is not None:
                    raise ValueError(f"{where}: ragged 'input_ids' cannot come with a mask or lengths")
                _count_ragged(list(ids), acc, where)
        elif kind == "padded":
            _count_padded(np.asarray(item), None, None, acc, where)
        else:
            _count_ragged(list(item), acc, where)
    if pending:
        _count_ragged(pending, acc, "sequences")
    return acc.result()
