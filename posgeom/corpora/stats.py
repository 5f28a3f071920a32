r"""From a corpus name to cached token arrays (:func:`corpus_tokens`) and positional counts (:func:`corpus_counts`).

Both are cached as :mod:`posgeom.corpora.cache` describes. Paper-like defaults (its exact settings are
unknown): SST-2 train with $n = 64$, IMDB train with $n = 512$, the ``"model"`` policy, IMDB's ``<br />``
tags as spaces.
"""

from __future__ import annotations

import hashlib
import warnings
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .cache import ArrayCache, arrays_digest, cache_key
from .options import CorpusOptions
from .real import CORPORA, DataSource, load_texts, resolve_source
from .tokenize import (
    DEFAULT_TOKENIZER, TokenizedCorpus, tokenize_texts, tokenizer_fingerprint, tokenizer_name, validate_br,
    validate_special,
)

__all__ = [
    "CorpusStatistics", "corpus_tokens", "corpus_counts", "default_positions", "default_br", "texts_fingerprint",
]


def default_positions(corpus) -> int:
    """Paper-like default number of positions: SST-2 64, IMDB 512, any other corpus 512 (BERT's maximum)."""
    return CORPORA[corpus].default_positions if isinstance(corpus, str) and corpus in CORPORA else 512


def default_br(corpus) -> str:
    """Default ``br_tags``: ``"space"`` for IMDB, ``"keep"`` otherwise."""
    return CORPORA[corpus].default_br if isinstance(corpus, str) and corpus in CORPORA else "keep"


@dataclass(frozen=True)
class CorpusStatistics:
    """Positional counts of a corpus with what produced them.

    Attributes
    ----------
    counts : PositionalCounts
        ``counts`` (n_positions, vocab_size) CSR, ``reach`` (n_positions,).
    full_lengths : ndarray of shape (n_sequences,), int64
        Sequence lengths under the policy before truncation.
    n_truncated : int
        Sequences longer than ``n_positions``.
    info : dict
        Provenance (source, tokenizer fingerprint, options, cache key) and ``"cache_hit"``.
    """

    counts: object
    full_lengths: np.ndarray
    n_truncated: int
    info: dict = field(default_factory=dict)

    @property
    def n_positions(self) -> int:
        return int(self.counts.n_positions)

    @property
    def cache_hit(self) -> bool:
        return bool(self.info.get("cache_hit", False))


def texts_fingerprint(texts: list, labels: np.ndarray | None) -> str:
    """sha256 (hex) of the texts (in order, each length-prefixed) and of the labels (n_texts,) or None."""
    h = hashlib.sha256()
    for text in texts:
        data = text.encode("utf-8")
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    h.update(b"labels:" + (arrays_digest({"labels": np.asarray(labels)}).encode() if labels is not None else b"none"))
    return h.hexdigest()


def _options_of(options, source) -> CorpusOptions:
    """The call's :class:`~posgeom.corpora.options.CorpusOptions`, checked against a resolved ``source``."""
    if isinstance(options, (str, Path)):
        options = CorpusOptions(corpus=str(options))
    elif not isinstance(options, CorpusOptions):
        raise TypeError(f"options must be a CorpusOptions (or a corpus name or path, every option at its default); "
                        f"got {type(options).__name__}")
    if source is not None and (not isinstance(source, DataSource) or (
            options.split is not None and source.split != options.split) or (
            options.corpus in CORPORA and source.corpus != options.corpus)):
        raise ValueError(f"source must be the DataSource of {options.corpus}/{options.split}; got {source!r:.80}")
    return options


def _prepare(options, data_dir, text_column, verify, on_empty, source=None):
    """Load the texts and key the caches by the very texts read, the tokenizer's fingerprint and every option."""
    o = _options_of(options, source)
    special = validate_special(o.special)
    if source is None:
        source = resolve_source(o.corpus, o.split, data_dir=data_dir, text_column=text_column, verify=verify)
    name = source.corpus if source.corpus in CORPORA else str(source.location)
    n = default_positions(source.corpus) if o.n_positions is None else o.n_positions
    br = default_br(source.corpus) if o.br_tags is None else validate_br(o.br_tags)
    # a name is fingerprinted from its files and loaded only on a cache miss (tokenize_texts loads it)
    tok = o.tokenizer if o.tokenizer is not None and not isinstance(o.tokenizer, (str, Path)) else (
        DEFAULT_TOKENIZER if o.tokenizer is None else str(o.tokenizer)
    )
    options = {
        "n_positions": n, "special": special, "br_tags": br, "text_column": text_column or source.text_column,
        "on_empty": on_empty,
    }
    texts = load_texts(source, text_column=text_column, on_empty=on_empty)
    fingerprint = tokenizer_fingerprint(tok)
    digest = texts_fingerprint(texts.texts, texts.labels)
    key = cache_key(what="tokens", texts=digest, tokenizer=fingerprint, **options)
    info = {
        "corpus": name, "split": source.split, "source": texts.source.describe(), "tokenizer": tokenizer_name(tok),
        "tokenizer_sha256": fingerprint, "texts_sha256": digest, "options": options,
        "n_rows": texts.n_rows, "n_empty": texts.n_empty, "n_dropped_empty": int(texts.dropped.size),
    }
    return texts, tok, n, br, key, info


def corpus_tokens(
    options: CorpusOptions | str | Path,
    *,
    data_dir: str | Path | None = None,
    text_column: str | None = None,
    verify: bool = True,
    on_empty: str = "raise",
    cache: bool = True,
    cache_dir: str | Path | None = None,
    progress: bool | None = None,
    source: DataSource | None = None,
) -> TokenizedCorpus:
    """Token ids of one split, cut to ``n_positions``, from the cache when possible.

    Parameters
    ----------
    options : CorpusOptions, str or Path
        What to tokenise (:class:`~posgeom.corpora.options.CorpusOptions`); a corpus name or path alone is
        that corpus with every option at its default.
    data_dir, text_column, verify, on_empty
        Where and how the texts are read (:func:`posgeom.corpora.real.load_texts`).
    cache : bool
        Read and write the on-disk cache.
    cache_dir : path, optional
        Default ``default_cache_dir() / "corpora"``.
    progress : bool, optional
        A progress bar over the tokenisation (default: ``POSGEOM_PROGRESS``).
    source : DataSource, optional
        The split already resolved (:func:`posgeom.corpora.real.resolve_source`), so a run hashes its data once.
    """
    prepared = _prepare(options, data_dir, text_column, verify, on_empty, source)
    return _tokens(*prepared, prepared[5]["options"]["special"], cache, cache_dir, progress)


def _cached(cache: bool, cache_dir, what: str, key: str, read, compute, stacklevel: int):
    """``read(arrays, meta)`` of the cache's entry ``what``/``key``; else ``compute()`` gives ``(value, arrays,
    meta)``, whose arrays and meta are saved. An entry ``read`` cannot use is warned about and replaced."""
    store = ArrayCache(cache_dir) if cache else None
    hit = store.load(what, key) if store is not None else None
    if hit is not None:
        try:
            return read(*hit)
        except Exception as err:  # noqa: BLE001 - an entry of another shape: recompute and replace it
            warnings.warn(f"cached {what} {key[:16]} are unusable ({type(err).__name__}: {err}); recomputing them",
                          stacklevel=stacklevel + 1)
    value, arrays, meta = compute()
    if store is not None:
        store.save(what, key, arrays, meta)
    return value


def _tokens(texts, tok, n, br, key, info, special, cache, cache_dir, progress) -> TokenizedCorpus:
    def read(arrays, meta):
        return TokenizedCorpus(
            arrays["ids"], arrays["lengths"], arrays["full_lengths"], n, int(meta["vocab_size"]), special,
            info["tokenizer"], tuple(meta["special_ids"]), br, arrays.get("labels"), int(meta["n_special_dropped"]),
            info={**info, "cache_key": key, "cache_hit": True},
        )

    def compute():
        tc = tokenize_texts(texts.texts, tok, n, special=special, br_tags=br, labels=texts.labels, progress=progress)
        arrays = {"ids": tc.ids, "lengths": tc.lengths, "full_lengths": tc.full_lengths}
        if tc.labels is not None:
            arrays["labels"] = tc.labels
        meta = {
            "vocab_size": tc.vocab_size, "special_ids": list(tc.special_ids), "n_special_dropped": tc.n_special_dropped,
        }
        return replace(tc, info={**info, "cache_key": key, "cache_hit": False}), arrays, meta

    return _cached(cache, cache_dir, "tokens", key, read, compute, stacklevel=3)


def corpus_counts(
    options: CorpusOptions | str | Path,
    *,
    data_dir: str | Path | None = None,
    text_column: str | None = None,
    verify: bool = True,
    on_empty: str = "raise",
    cache: bool = True,
    cache_dir: str | Path | None = None,
    progress: bool | None = None,
    source: DataSource | None = None,
) -> CorpusStatistics:
    r"""Positional counts $c_i(w)$ (CSR int64), $N_i$ of one split (parameters as :func:`corpus_tokens`)."""
    from ..geometry import PositionalCounts
    texts, tok, n, br, tokens_key, info = _prepare(options, data_dir, text_column, verify, on_empty, source)
    key = cache_key(what="counts", tokens=tokens_key)

    def read(arrays, meta):
        mat = sp.csr_matrix((arrays["data"], arrays["indices"], arrays["indptr"]), shape=tuple(arrays["shape"]))
        return CorpusStatistics(PositionalCounts(mat, int(meta["n_sequences"])), arrays["full_lengths"],
                                int(meta["n_truncated"]), {**info, **meta["info"], "cache_key": key, "cache_hit": True})

    def compute():
        tc = _tokens(texts, tok, n, br, tokens_key, info, info["options"]["special"], cache, cache_dir, progress)
        counts = tc.counts()
        extra = {"n_special_dropped": tc.n_special_dropped, "tokens_cache_hit": bool(tc.info.get("cache_hit"))}
        mat = counts.counts
        arrays = {
            "data": mat.data, "indices": mat.indices, "indptr": mat.indptr, "shape": np.asarray(mat.shape),
            "full_lengths": tc.full_lengths,
        }
        meta = {"n_sequences": counts.n_sequences, "n_truncated": tc.n_truncated, "info": extra}
        stats = CorpusStatistics(counts, tc.full_lengths, tc.n_truncated,
                                 {**info, **extra, "cache_key": key, "cache_hit": False})
        return stats, arrays, meta

    return _cached(cache, cache_dir, "counts", key, read, compute, stacklevel=2)
