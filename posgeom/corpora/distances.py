r"""From a corpus to its positional distance matrix, by one route.

:func:`corpus_distances` takes the options of a corpus's geometry (:class:`CorpusOptions`) and returns
the Hellinger matrix of its kept positions with what it was computed from (:class:`CorpusDistances`):

1. token ids of one split cut to $n$ positions (:func:`posgeom.corpora.stats.corpus_tokens`, cached on
   disk), or of a seeded random subset of ``max_sequences`` texts;
2. positional counts $c_i(w)$ and reach $N_i$ (:func:`posgeom.geometry.positional_counts`; from the
   counts cache, :func:`posgeom.corpora.stats.corpus_counts`, when the tokens are not needed);
3. marginals $\mu_i(w) = (c_i(w) + \alpha) / (N_i + \alpha v)$ of the positions reached by at least
   ``min_count`` sequences (:func:`posgeom.geometry.positional_marginals`);
4. $D_{ij} = \lVert \sqrt{\mu_i} - \sqrt{\mu_j} \rVert_2$ (chord; or ``"normalized"``, ``"geodesic"``:
   :func:`posgeom.geometry.hellinger_matrix`).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

import numpy as np

from .. import geometry as geo

__all__ = ["CorpusOptions", "CorpusDistances", "corpus_distances", "resampling_groups"]


@dataclass(frozen=True)
class CorpusOptions:
    """The options that define a corpus's positional geometry.

    Attributes
    ----------
    corpus : str
        ``"sst2"``, ``"imdb"``, or a file or folder of texts (:func:`posgeom.corpora.real.resolve_source`).
    split : str
    n_positions : int, optional
        Default :func:`posgeom.corpora.stats.default_positions` (SST-2 64, IMDB 512).
    special : {"model", "content"}
        Count the special tokens as the model sees them, or the content tokens only.
    br_tags : {"keep", "space"}, optional
        Default :func:`posgeom.corpora.stats.default_br`.
    tokenizer : str or tokenizer, optional
        Default the packaged bert-base-uncased WordPiece.
    max_sequences : int, optional
        Count a random subset of that many texts (drawn without replacement with ``subset_seed``).
    subset_seed : int
    min_count : int
        Keep the positions reached by at least that many sequences.
    alpha : float
        Additive smoothing of the marginals.
    kind : {"chord", "normalized", "geodesic"}
    """

    corpus: str = "sst2"
    split: str = "train"
    n_positions: int | None = None
    special: str = "model"
    br_tags: str | None = None
    tokenizer: object = None
    max_sequences: int | None = None
    subset_seed: int = 0
    min_count: int = 1
    alpha: float = 0.0
    kind: str = "chord"

    @classmethod
    def from_dict(cls, options: dict) -> "CorpusOptions":
        """The options of a dict with these keys (a ``ValueError`` names any other key)."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(options) - known)
        if unknown:
            raise ValueError(f"unknown corpus option(s) {unknown}; valid options are {sorted(known)}")
        return cls(**options)

    def as_dict(self) -> dict:
        """The options as a plain dict (as stored in a result's parameters)."""
        return asdict(self)


@dataclass(frozen=True)
class CorpusDistances:
    """A corpus's positional geometry and what it was computed from (built by :func:`corpus_distances`).

    Attributes
    ----------
    D : ndarray of shape (m, m)
        Hellinger distances between the kept positions.
    positions : ndarray of shape (m,)
        The kept positions (increasing).
    reach : ndarray of shape (m,)
        $N_i$, the sequences reaching each kept position.
    marginals : posgeom.geometry.PositionalMarginals
        ``probs`` (m, v).
    counts : posgeom.geometry.PositionalCounts
        (n_positions, v).
    tokens : posgeom.corpora.tokenize.TokenizedCorpus or None
        The token ids counted (None when they were not asked for and the counts came from the cache).
    options : CorpusOptions
    """

    D: np.ndarray
    positions: np.ndarray
    reach: np.ndarray
    marginals: object
    counts: object
    tokens: object
    options: CorpusOptions


def _subset_rows(options: CorpusOptions, n_texts: int) -> np.ndarray:
    """The rows of a ``max_sequences`` subset: drawn without replacement with ``subset_seed``, in order."""
    m = options.max_sequences
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or not 1 <= m <= n_texts:
        raise ValueError(
            f"max_sequences must be an integer in [1, {n_texts}] for {options.corpus}/{options.split}; got {m!r}"
        )
    return np.sort(np.random.default_rng(options.subset_seed).choice(n_texts, size=int(m), replace=False))


def _subset_tokens(options: CorpusOptions, data_dir):
    """Token ids of ``max_sequences`` texts drawn without replacement with ``subset_seed`` (rows kept in order)."""
    from .real import load_texts
    from .stats import default_br, default_positions
    from .tokenize import tokenize_texts

    texts = load_texts(options.corpus, options.split, data_dir=data_dir)
    rows = _subset_rows(options, len(texts.texts))
    labels = texts.labels[rows] if texts.labels is not None else None
    n = default_positions(options.corpus) if options.n_positions is None else options.n_positions
    br = default_br(options.corpus) if options.br_tags is None else options.br_tags
    return tokenize_texts([texts.texts[r] for r in rows], options.tokenizer, n, special=options.special, br_tags=br,
                          labels=labels)


def corpus_distances(options: CorpusOptions, *, data_dir=None, with_tokens: bool = False,
                     progress: bool = False) -> CorpusDistances:
    """The Hellinger matrix of a corpus's kept positions (module docstring).

    Parameters
    ----------
    options : CorpusOptions
    data_dir : path, optional
        The data folder (``settings.data_dir``); None: the configured one, else the Hugging Face hub.
    with_tokens : bool
        Also return the token ids (read from the token cache; otherwise a whole split is counted from
        the counts cache).
    progress : bool
        Show tokenisation progress.

    Returns
    -------
    CorpusDistances
    """
    if not isinstance(options, CorpusOptions):
        raise TypeError(f"options must be a CorpusOptions; got {type(options).__name__} (use CorpusOptions.from_dict)")
    from .stats import corpus_counts, corpus_tokens

    common = dict(special=options.special, tokenizer=options.tokenizer, br_tags=options.br_tags, data_dir=data_dir,
                  progress=progress)
    tokens = None
    if options.max_sequences is not None:
        if options.tokenizer is not None and not isinstance(options.tokenizer, str):
            raise ValueError("a subset (max_sequences) is tokenised by name: give tokenizer as a name or a folder")
        tokens = _subset_tokens(options, data_dir)
        counts = tokens.counts()
    elif with_tokens:
        tokens = corpus_tokens(options.corpus, options.split, options.n_positions, **common)
        counts = tokens.counts()
    else:
        counts = corpus_counts(options.corpus, options.split, options.n_positions, **common).counts
    marginals = geo.positional_marginals(counts, alpha=options.alpha, min_count=options.min_count)
    D = geo.hellinger_matrix(marginals, kind=options.kind)
    return CorpusDistances(D, marginals.positions, marginals.reach, marginals, counts, tokens, options)


def resampling_groups(options: CorpusOptions, *, data_dir=None):
    """A label per sequence of :func:`corpus_distances`'s tokens grouping the rows that are not independent.

    For a split whose rows include phrases of one another (:data:`posgeom.corpora.groups.PHRASE_SPLITS`: SST-2's
    training split) each row is labelled with the longest row containing it
    (:func:`posgeom.corpora.groups.containing_text_groups`, computed over the whole split, then restricted to the
    rows of a ``max_sequences`` subset); for any other split, None (its rows are the independent units).

    Parameters
    ----------
    options : CorpusOptions
    data_dir : path, optional

    Returns
    -------
    ndarray of int64 of shape (n_sequences,), or None
    """
    from .groups import containing_text_groups, split_has_phrases
    from .real import load_texts

    if not split_has_phrases(options.corpus, options.split):
        return None
    texts = load_texts(options.corpus, options.split, data_dir=data_dir).texts
    labels = containing_text_groups(texts)
    return labels[_subset_rows(options, len(texts))] if options.max_sequences is not None else labels
