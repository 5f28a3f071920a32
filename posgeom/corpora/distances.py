r"""From a corpus to its positional distance matrix, by one route (:func:`corpus_distances`).

Token ids of one split cut to $n$ positions (or of a seeded subset of ``max_sequences`` texts) → counts
$c_i(w)$ and reach $N_i$ → marginals $\mu_i(w) = (c_i(w) + \alpha) / (N_i + \alpha v)$ of the positions
reached by at least ``min_count`` sequences → $D_{ij} = \lVert \sqrt{\mu_i} - \sqrt{\mu_j} \rVert_2$
(:func:`posgeom.geometry.hellinger_matrix`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import geometry as geo
from ..validation import check_int
from .options import CorpusOptions, check_options

__all__ = ["CorpusDistances", "corpus_distances", "resampling_groups"]


@dataclass(frozen=True)
class CorpusDistances:
    """A corpus's positional geometry and what it was computed from.

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
        The token ids counted, when asked for or subsetted.
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
    m = check_int(options.max_sequences, f"max_sequences (for {options.corpus}/{options.split})", 1, n_texts)
    return np.sort(np.random.default_rng(options.subset_seed).choice(n_texts, size=m, replace=False))


def _subset_tokens(options: CorpusOptions, data_dir, source=None):
    """Token ids of the ``max_sequences`` subset."""
    from .stats import default_br, default_positions
    from .tokenize import tokenize_texts
    texts = _texts(options, data_dir, source)
    rows = _subset_rows(options, len(texts.texts))
    labels = texts.labels[rows] if texts.labels is not None else None
    n = default_positions(options.corpus) if options.n_positions is None else options.n_positions
    br = default_br(options.corpus) if options.br_tags is None else options.br_tags
    return tokenize_texts([texts.texts[r] for r in rows], options.tokenizer, n, special=options.special, br_tags=br,
                          labels=labels)


def _texts(options: CorpusOptions, data_dir, source):
    """The texts of the options' corpus and split, from their resolved ``source`` when given."""
    from .real import load_texts
    if source is None:
        return load_texts(options.corpus, options.split, data_dir=data_dir)
    if options.split is not None and source.split != options.split:
        raise ValueError(f"source must be the DataSource of {options.corpus}/{options.split}; got {source!r:.80}")
    return load_texts(source)


def corpus_distances(options: CorpusOptions, *, data_dir=None, source=None, with_tokens: bool = False,
                     progress: bool = False) -> CorpusDistances:
    """The Hellinger matrix of a corpus's kept positions.

    Parameters
    ----------
    options : CorpusOptions
    data_dir : path, optional
        The data folder; None: the configured one, else the Hugging Face hub.
    source : posgeom.corpora.real.DataSource, optional
        The split already resolved, so a run hashes its data once.
    with_tokens : bool
        Also return the token ids (otherwise a whole split is read from the counts cache).
    progress : bool
    """
    check_options(options)
    from .stats import corpus_counts, corpus_tokens
    tokens = None
    if options.max_sequences is not None:
        if options.tokenizer is not None and not isinstance(options.tokenizer, str):
            raise ValueError("a subset (max_sequences) is tokenised by name: give tokenizer as a name or a folder")
        tokens = _subset_tokens(options, data_dir, source)
        counts = tokens.counts()
    elif with_tokens:
        tokens = corpus_tokens(options, data_dir=data_dir, progress=progress, source=source)
        counts = tokens.counts()
    else:
        counts = corpus_counts(options, data_dir=data_dir, progress=progress, source=source).counts
    marginals = geo.positional_marginals(counts, alpha=options.alpha, min_count=options.min_count)
    D = geo.hellinger_matrix(marginals, kind=options.kind)
    return CorpusDistances(D, marginals.positions, marginals.reach, marginals, counts, tokens, options)


def resampling_groups(options: CorpusOptions, *, data_dir=None, source=None):
    """A label per sequence of :func:`corpus_distances`'s tokens grouping the rows that are not independent.

    :func:`posgeom.corpora.groups.containing_text_groups` (int64, shape (n_sequences,)) for a split of phrases
    (SST-2 train), restricted to a ``max_sequences`` subset; None for any other split. ``data_dir`` and ``source``
    as :func:`corpus_distances`.
    """
    from .groups import containing_text_groups, split_has_phrases
    if not split_has_phrases(options.corpus, options.split):
        return None
    texts = _texts(options, data_dir, source).texts
    labels = containing_text_groups(texts)
    return labels[_subset_rows(options, len(texts))] if options.max_sequences is not None else labels
