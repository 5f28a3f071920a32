r"""Counting a corpus: :func:`positional_counts` reads sequences in every common layout and counts them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from numbers import Integral

import numpy as np

from ..validation import check_int
from .accumulate import CountAccumulator, check_size, resolve_threads
from .counts import PositionalCounts, check_ignore_ids

__all__ = ["positional_counts"]

# Sequences gathered from a stream of single sequences before they are counted as one ragged batch.
_STREAM_BATCH = 16384


def _as_int_array(x, where: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.size == 0 and arr.dtype.kind == "f":
        return arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise ValueError(f"{where} must hold integer token ids; got dtype {arr.dtype}")
    return arr


def _count_ragged(seqs: list, acc: CountAccumulator, where: str) -> None:
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


def _count_padded(arr, lengths, attention_mask, acc: CountAccumulator, where: str) -> None:
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
    r"""Count $c_i(w)$ and $N_i$ for $i < n$ (definitions in ``posgeom.geometry.counts``).

    Parameters
    ----------
    sequences : one of
        * a list of 1-D integer sequences of any lengths (ragged input);
        * a 2-D integer array (batch, L), with ``lengths`` (batch,) or a right-padded 0/1 ``attention_mask``
          (batch, L); without either, every entry is a token;
        * a 1-D integer array of sequences laid end to end, with ``lengths`` (b,) summing to its size (fastest);
        * a mapping with ``"input_ids"`` (batch, L) and optionally ``"attention_mask"`` or ``"lengths"``;
        * any iterable of such batches or of single 1-D sequences, counted batch by batch.
    n_positions, vocab_size : int
        $n \ge 1$ positions counted; $v$: every id at a counted position must lie in ``[0, v)``.
    lengths, attention_mask : array-like, optional
        Only with a single 2-D array (``lengths`` also with a 1-D stream); a left-padded mask is rejected.
    ignore_ids : iterable of int, optional
        Ids not counted; the other tokens keep their positions (not the ``"content"`` policy).
    progress : bool
        Show a tqdm progress bar over the batches of an iterable input.
    n_threads : int, optional
        Threads of the counting kernel (default: the usable cores, at most 8); the counts do not depend on it.

    Examples
    --------
    >>> c = positional_counts([[1, 2, 3], [1, 3]], n_positions=3, vocab_size=4)
    >>> c.counts.toarray()[1].tolist(), c.reach.tolist()
    ([0, 0, 1, 1], [2, 2, 1])
    """
    n, v = check_int(n_positions, "n_positions", 1), check_int(vocab_size, "vocab_size", 1)
    check_size(n, v)
    ignore_tuple = check_ignore_ids(ignore_ids) if ignore_ids is not None else ()
    acc = CountAccumulator(n, v, ignore_tuple, resolve_threads(n_threads))

    if isinstance(sequences, (str, bytes)):
        raise ValueError("sequences must hold token ids, not text: tokenise first")
    single_array = isinstance(sequences, np.ndarray) or (
        hasattr(sequences, "__array__") and not isinstance(sequences, (list, tuple, Mapping))
    )
    if single_array and np.asarray(sequences).ndim == 2:
        _count_padded(np.asarray(sequences), lengths, attention_mask, acc, "sequences")
        return acc.result()
    if single_array and np.asarray(sequences).ndim == 1 and lengths is not None:
        _count_concatenated(sequences, lengths, attention_mask, acc)
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
    if progress:
        from ..progress import tqdm

        sequences = tqdm(sequences, desc="counting", unit="batch")
    _count_batches(sequences, acc)
    return acc.result()


def _count_concatenated(sequences, lengths, attention_mask, acc: CountAccumulator) -> None:
    """Count a 1-D stream of sequences laid end to end, ``lengths`` (b,) summing to its size."""
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


def _count_batches(items: Iterable, acc: CountAccumulator) -> None:
    """Count an iterable of batches, gathering single sequences into ragged batches of ``_STREAM_BATCH``."""
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
            _count_mapping(item, acc, where)
        elif kind == "padded":
            _count_padded(np.asarray(item), None, None, acc, where)
        else:
            _count_ragged(list(item), acc, where)
    if pending:
        _count_ragged(pending, acc, "sequences")


def _count_mapping(item: Mapping, acc: CountAccumulator, where: str) -> None:
    """Count a tokenizer's output: ``input_ids`` (batch, L) with ``lengths`` or ``attention_mask``, or ragged."""
    if "input_ids" not in item:
        raise ValueError(f"{where}: a mapping batch needs an 'input_ids' entry; got keys {list(item)}")
    ids = np.asarray(item["input_ids"]) if not isinstance(item["input_ids"], list) else item["input_ids"]
    if isinstance(ids, np.ndarray) and ids.ndim == 2:
        _count_padded(ids, item.get("lengths"), item.get("attention_mask"), acc, where)
        return
    # ragged input_ids (a tokenizer without padding)
    if item.get("attention_mask") is not None or item.get("lengths") is not None:
        raise ValueError(f"{where}: ragged 'input_ids' cannot come with a mask or lengths")
    _count_ragged(list(ids), acc, where)
