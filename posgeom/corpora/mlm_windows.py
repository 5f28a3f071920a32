r"""Fixed-length windows of IMDB reviews with a reduced vocabulary, for the small masked language models
of the chapter "Where learned tables fail", with their MDS and the loss of a context-free model."""

from __future__ import annotations

import numpy as np

from ..config import settings_or_default as _settings
from ..validation import check_int, check_positive_int

__all__ = ["IMDBWindows", "imdb_windows", "mds_of_windows", "unigram_loss"]


class IMDBWindows:
    r"""Fixed-length windows of IMDB reviews for masked language modelling, with a reduced vocabulary.

    Only reviews longer than the longest window are kept, so a window of length $m$ is ``[CLS]`` and the
    first $m - 1$ word pieces. Ids: 0 ``[PAD]`` (unused), 1 ``[CLS]``, 2 ``[MASK]``, 3 any rare word piece,
    ``4 …`` the ``top_k`` most frequent training word pieces in decreasing frequency.

    Attributes
    ----------
    train, eval : ndarray of shape (n_train, n_max) / (n_eval, n_max), int64
        Windows of the longest length, disjoint sets of reviews; shorter windows are their prefixes.
    vocab_size : int
        ``top_k + 4``.
    rare_fraction : float
        Share of the training word pieces mapped to the rare id.
    info : dict
        Provenance of the tokens.
    """

    PAD, CLS, MASK, RARE = 0, 1, 2, 3
    SPECIAL = (0, 1, 2)

    def __init__(self, train, eval, vocab_size, rare_fraction, info):
        self.train, self.eval = train, eval
        self.vocab_size, self.rare_fraction, self.info = int(vocab_size), float(rare_fraction), info

    @property
    def n_max(self) -> int:
        return int(self.train.shape[1])


def imdb_windows(settings=None, *, n_max: int, top_k: int, n_train: int, n_eval: int, seed: int = 0) -> IMDBWindows:
    """Build :class:`IMDBWindows` from the IMDB train split.

    Parameters
    ----------
    n_max : int
        Longest window (``<= 511``).
    top_k : int
        Word pieces kept in the vocabulary.
    n_train, n_eval : int
        Reviews for training and evaluation (a seeded random split of the eligible ones).
    """
    from .options import CorpusOptions
    from .stats import corpus_tokens
    from .tokenize import load_tokenizer
    settings = _settings(settings)
    check_int(n_max, "n_max", 2, 511)
    check_positive_int(top_k, "top_k")
    tc = corpus_tokens(CorpusOptions("imdb", "train", 512), data_dir=settings.data_dir, progress=False)
    eligible = np.flatnonzero(tc.lengths > n_max)
    if eligible.size < n_train + n_eval:
        raise ValueError(
            f"only {eligible.size} IMDB reviews are longer than {n_max} tokens; ask for at most that many "
            f"windows (n_train + n_eval = {n_train + n_eval}) or a shorter n_max"
        )
    rows = np.random.default_rng(seed).permutation(eligible)[: n_train + n_eval]
    X = tc.padded(pad_id=0)[rows, :n_max]
    train, ev = X[:n_train], X[n_train:]
    ids, counts = np.unique(train[:, 1:], return_counts=True)
    order = np.argsort(-counts, kind="stable")
    kept = ids[order][:top_k]
    mapping = np.full(tc.vocab_size, IMDBWindows.RARE, dtype=np.int64)
    mapping[kept] = np.arange(kept.size) + 4
    mapping[load_tokenizer().cls_token_id] = IMDBWindows.CLS  # the tokenizer corpus_tokens used
    rare = float(counts[order][top_k:].sum() / counts.sum())
    info = {k: tc.info.get(k) for k in ("corpus", "split", "tokenizer", "cache_key", "source")}
    return IMDBWindows(mapping[train], mapping[ev], kept.size + 4, rare, info)


def mds_of_windows(win: IMDBWindows, rank: int) -> np.ndarray:
    """Classical MDS (rank ``rank``) of the Hellinger geometry of the training windows' positions: (n_max, rank)."""
    from .. import geometry as geo
    counts = geo.positional_counts(win.train, win.n_max, win.vocab_size)
    D = geo.hellinger_matrix(geo.positional_marginals(counts))
    return geo.classical_mds(D, rank).embedding


def unigram_loss(win: IMDBWindows, L: int) -> float:
    """Cross-entropy of the training unigram distribution on the evaluation tokens before ``L`` (no context)."""
    # -mean log q(x), q the training frequencies of the maskable ids
    freq = np.bincount(win.train[:, 1:].ravel(), minlength=win.vocab_size).astype(np.float64)
    q = freq / freq.sum()
    return float(-np.mean(np.log(np.maximum(q[win.eval[:, 1:L].ravel()], 1e-12))))
