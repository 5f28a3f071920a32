r"""Positional counts (SPEC section 1, "Positional counts").

For a corpus of token-id sequences $x = (x_0, \dots, x_{L-1})$ over a vocabulary of size $v$ and the first
$n$ positions,

$$c_i(w) = \#\{x : L > i,\ x_i = w\}, \qquad N_i = \sum_w c_i(w),$$

so $N_i$ is the number of sequences that reach position $i$. Padding is never counted; a sequence longer
than $n$ contributes its first $n$ tokens only.

The counts are stored as a sparse CSR matrix of shape $(n, v)$ (for BERT, $v = 30{,}522$ and most
$(i, w)$ cells are empty). Counting is additive: the counts of a corpus are the sum of the counts of
any partition of it into shards, which is what lets a large corpus be counted shard by shard::

    total = sum(positional_counts(shard, n, v) for shard in shards)

How the counting is done. The sequences are laid end to end (one array and a length per sequence);
each token becomes one *flat index* $f = i \cdot v + w$, its position $i$ coming from a running sum
that restarts at every sequence (tokens past position $n - 1$ all go to one discarded extra row $n$);
then $c$ is ``np.bincount(f)`` restricted to $[0, n v)$ and reshaped to $(n, v)$, converted to CSR.
When $n v$ is very large compared with the number of tokens, a sort (``np.unique``) replaces the
dense ``bincount`` buffer.

Special tokens. SPEC section 1 has two policies: ``"model"`` (positions as the model sees them, ``[CLS]``
at 0) and ``"content"`` (special tokens removed *before* positions are assigned, so the first content
token is at position 0). Both are decided where the sequences are built (:mod:`posgeom.corpora`). The
``ignore_ids`` argument here is a different, simpler thing: the listed ids are not counted, but every
other token keeps the position it has in the sequence given (so with ``ignore_ids=[cls_id]`` position 0
becomes empty rather than shifting the content left). Ignored tokens count neither in $c_i$ nor in
$N_i$, so $N_i = \sum_w c_i(w)$ always holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from numbers import Integral

import numpy as np
import scipy.sparse as sp

__all__ = ["PositionalCounts", "positional_counts"]

# Flush buffered flat indices to the sparse total once this many tokens have accumulated.
_CHUNK_TOKENS = 1 << 24
# Sequences gathered from a stream of single sequences before they are counted as one ragged batch.
_STREAM_BATCH = 16384
# Use a dense bincount buffer when n*v is at most max(_DENSE_LIMIT, 4 * tokens); a sort otherwise.
_DENSE_LIMIT = 1 << 24


class PositionalCounts:
    r"""Counts $c_i(w)$ and reaches $N_i$ of a corpus at its first ``n_positions`` positions (SPEC section 1).

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
        self.ignore_ids = tuple(sorted(int(t) for t in ignore_ids))

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


class _Accumulator:
    """Buffers flat indices ``i * v + w`` and folds them into a sparse (n, v) total."""

    def __init__(self, n: int, v: int):
        self.n, self.v = n, v
        self.buffer: list[np.ndarray] = []
        self.buffered = 0
        self.total = None
        self.n_sequences = 0

    def add(self, flat: np.ndarray) -> None:
        if flat.size:
            self.buffer.append(flat)
            self.buffered += flat.size
            if self.buffered >= _CHUNK_TOKENS:
                self.flush()

    def flush(self) -> None:
        if not self.buffer:
            return
        flat = self.buffer[0] if len(self.buffer) == 1 else np.concatenate(self.buffer)
        self.buffer, self.buffered = [], 0
        part = _flat_to_csr(flat, self.n, self.v)
        self.total = part if self.total is None else self.total + part

    def result(self, ignore_ids) -> PositionalCounts:
        self.flush()
        total = self.total if self.total is not None else sp.csr_matrix((self.n, self.v), dtype=np.int64)
        return PositionalCounts(total, self.n_sequences, ignore_ids, _trusted=self.total is not None)


def _flat_to_csr(flat: np.ndarray, n: int, v: int) -> sp.csr_matrix:
    """Count flat indices ``f = i * v + w`` into a canonical CSR matrix of shape (n, v); ``f >= n v`` is dropped."""
    size = n * v  # flat indices in [n v, (n + 1) v) belong to the discarded row of truncated tokens
    if size <= max(_DENSE_LIMIT, 4 * flat.size):
        # c = bincount(f) reshaped to (n, v)
        dense = np.bincount(flat, minlength=size)[:size]
        nz = np.flatnonzero(dense != 0)  # a boolean scan is several times faster than one over int64
        data = dense[nz]
        del dense
    else:
        nz, data = np.unique(flat, return_counts=True)
        keep = nz < size
        nz, data = nz[keep], data[keep].astype(np.int64)
    idx_dtype = np.int32 if max(size, nz.size) < 2**31 - 1 else np.int64
    # indptr[i] = number of nonzeros in rows < i = first flat index >= i * v
    indptr = np.searchsorted(nz, np.arange(n + 1, dtype=np.int64) * v)
    # w = f - i * v
    cols = nz - np.repeat(np.arange(n, dtype=np.int64) * v, np.diff(indptr))
    mat = sp.csr_matrix((data, cols.astype(idx_dtype), indptr.astype(idx_dtype)), shape=(n, v), copy=False)
    mat.has_canonical_format = True  # sorted, unique column indices by construction
    return mat


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


def _segment_positions(lengths: np.ndarray, total: int, step: int) -> np.ndarray:
    """``step * i`` for every token, ``i`` its position inside its sequence (sequences laid end to end).

    A running sum of increments: +step inside a sequence, a jump back to 0 at each sequence start
    (one fill and one cumsum instead of arange/repeat/subtract).
    """
    nz = lengths[lengths > 0]
    out = np.full(total, step, dtype=np.int64)
    if total == 0:
        return out
    out[0] = 0
    starts = np.cumsum(nz[:-1])
    # at the start of sequence k the previous token sat at position nz[k-1] - 1: jump back by that
    out[starts] = -(nz[:-1] - 1) * step
    np.cumsum(out, out=out)
    return out


def _count_stream(tok: np.ndarray, lengths: np.ndarray, acc: _Accumulator, ignore, where: str) -> None:
    """Count sequences laid end to end in ``tok`` (total,) with per-sequence ``lengths`` (b,)."""
    n, v = acc.n, acc.v
    acc.n_sequences += lengths.size
    total = int(tok.size)
    if total == 0:
        return
    lo, hi = int(tok.min()), int(tok.max())
    if lo < 0 or hi >= v:  # rare: find out whether a counted position holds the bad id
        kept = _segment_positions(lengths, total, 1) < n
        _check_tokens(tok[kept], v, where)
        tok, lengths = tok[kept], np.minimum(lengths, n)  # bad ids only beyond position n: drop them
        total = int(tok.size)
    pos = _segment_positions(lengths, total, v)  # i * v
    if int(lengths.max()) > n:
        # tokens at positions >= n go to a discarded extra row n (cheaper than gathering the kept ones)
        np.minimum(pos, n * v, out=pos)
    if ignore is not None:
        keep = ~np.isin(tok, ignore)
        tok, pos = tok[keep], pos[keep]
    # f = i * v + w
    pos += tok
    acc.add(pos)


def _count_ragged(seqs: list, acc: _Accumulator, ignore, where: str) -> None:
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
        flat_items = [t for s in seqs for t in s]
        if not all(isinstance(t, (Integral, np.integer)) and not isinstance(t, bool) for t in flat_items):
            bad = next(t for t in flat_items if not isinstance(t, (Integral, np.integer)) or isinstance(t, bool))
            raise ValueError(f"{where} must hold integer token ids; found {bad!r} ({type(bad).__name__})")
        tok = np.fromiter(flat_items, dtype=np.int64, count=total)
    _count_stream(tok.astype(np.int64, copy=False), lengths, acc, ignore, where)


def _count_padded(arr, lengths, attention_mask, acc: _Accumulator, ignore, where: str) -> None:
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
    w = min(width, n)
    if b == 0 or w == 0:
        acc.n_sequences += b
        return
    arr = arr[:, :w]
    lengths = np.minimum(lengths.astype(np.int64), w)
    # the valid tokens in row-major order are the sequences laid end to end
    if int(lengths.min()) == w:  # no padding inside the first w columns
        tok = arr.reshape(-1)
    else:
        tok = arr[np.arange(w)[None, :] < lengths[:, None]]
    _count_stream(tok.astype(np.int64, copy=False), lengths, acc, ignore, where)


def _is_scalar_int(x) -> bool:
    return isinstance(x, (Integral, np.integer))


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
) -> PositionalCounts:
    r"""Count $c_i(w)$ and $N_i$ for $i < n$ (SPEC section 1, "Positional counts").

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
    ignore = None
    ignore_tuple: tuple[int, ...] = ()
    if ignore_ids is not None:
        ignore_tuple = tuple(sorted({int(t) for t in ignore_ids}))
        ignore = np.asarray(ignore_tuple, dtype=np.int64) if ignore_tuple else None
    acc = _Accumulator(n, v)

    if isinstance(sequences, (str, bytes)):
        raise ValueError("sequences must hold token ids, not text: tokenise first")
    single_array = isinstance(sequences, np.ndarray) or (
        hasattr(sequences, "__array__") and not isinstance(sequences, (list, tuple, Mapping))
    )
    if single_array and np.asarray(sequences).ndim == 2:
        _count_padded(np.asarray(sequences), lengths, attention_mask, acc, ignore, "sequences")
        return acc.result(ignore_tuple)
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
        _count_stream(tok.astype(np.int64, copy=False), lengths.astype(np.int64), acc, ignore, "sequences")
        return acc.result(ignore_tuple)
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
                _count_ragged(pending, acc, ignore, "sequences")
                pending = []
            continue
        if pending:
            _count_ragged(pending, acc, ignore, "sequences")
            pending = []
        where = f"batch {k}"
        if kind == "mapping":
            if "input_ids" not in item:
                raise ValueError(f"{where}: a mapping batch needs an 'input_ids' entry; got keys {list(item)}")
            ids = np.asarray(item["input_ids"]) if not isinstance(item["input_ids"], list) else item["input_ids"]
            if isinstance(ids, np.ndarray) and ids.ndim == 2:
                _count_padded(ids, item.get("lengths"), item.get("attention_mask"), acc, ignore, where)
            else:  # ragged input_ids (a tokenizer without padding)
                if item.get("attention_mask") is not None or item.get("lengths") is not None:
                    raise ValueError(f"{where}: ragged 'input_ids' cannot come with a mask or lengths")
                _count_ragged(list(ids), acc, ignore, where)
        elif kind == "padded":
            _count_padded(np.asarray(item), None, None, acc, ignore, where)
        else:
            _count_ragged(list(item), acc, ignore, where)
    if pending:
        _count_ragged(pending, acc, ignore, "sequences")
    return acc.result(ignore_tuple)
