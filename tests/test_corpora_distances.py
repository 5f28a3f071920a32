"""The one route from a corpus to its distance matrix (posgeom.corpora.distances) against the steps
done by hand: load, tokenise, count in a loop, marginals, Hellinger."""

from __future__ import annotations

import numpy as np
import pytest

import posgeom
from posgeom.corpora.distances import corpus_distances
from posgeom.corpora.options import CorpusOptions
from posgeom.corpora.real import load_texts
from posgeom.corpora.tokenize import tokenize_texts


def _by_hand(texts, n, rows=None, min_count=1, alpha=0.0, kind="chord"):
    rows = np.arange(len(texts.texts)) if rows is None else rows
    tc = tokenize_texts([texts.texts[r] for r in rows], None, n, special="model", br_tags="keep")
    counts = np.zeros((n, tc.vocab_size))
    for seq in tc.sequences():
        for i, w in enumerate(seq):
            counts[i, w] += 1
    reach = counts.sum(axis=1)
    keep = reach >= min_count
    mu = (counts[keep] + alpha) / (reach[keep, None] + alpha * tc.vocab_size)
    root = np.sqrt(mu)
    D = np.sqrt(np.maximum(((root[:, None, :] - root[None, :, :]) ** 2).sum(axis=2), 0.0))
    return D, np.flatnonzero(keep)


def test_a_subset_matches_the_steps_done_by_hand(env, shared_data_dir):
    texts = load_texts("sst2", "validation", data_dir=shared_data_dir)
    opts = CorpusOptions("sst2", "validation", 10, max_sequences=60, subset_seed=3, min_count=5, alpha=0.01)
    got = corpus_distances(opts, data_dir=shared_data_dir)
    rows = np.sort(np.random.default_rng(3).choice(len(texts.texts), size=60, replace=False))
    D, kept = _by_hand(texts, 10, rows, min_count=5, alpha=0.01)
    np.testing.assert_array_equal(got.positions, kept)
    np.testing.assert_allclose(got.D, D, atol=1e-12)
    assert got.tokens.n_sequences == 60 and got.D.shape == (kept.size, kept.size)


def test_the_whole_split_is_the_same_with_or_without_tokens(env, shared_data_dir):
    opts = CorpusOptions("sst2", "validation", 8, kind="geodesic")
    counted = corpus_distances(opts, data_dir=shared_data_dir)
    tokenised = corpus_distances(opts, data_dir=shared_data_dir, with_tokens=True)
    assert counted.tokens is None and tokenised.tokens.n_sequences == counted.counts.n_sequences
    np.testing.assert_array_equal(counted.D, tokenised.D)
    chord = posgeom.hellinger_matrix(tokenised.marginals)
    np.testing.assert_allclose(counted.D, 4 * np.arcsin(chord / 2), atol=1e-12)


def test_options_are_checked():
    assert CorpusOptions.from_dict({"corpus": "imdb", "n_positions": 32}).as_dict()["n_positions"] == 32
    with pytest.raises(ValueError, match="unknown corpus option"):
        CorpusOptions.from_dict({"corpus": "sst2", "positions": 3})
    with pytest.raises(TypeError, match="CorpusOptions"):
        corpus_distances({"corpus": "sst2"})


def test_counts_take_one_corpusoptions_and_refuse_the_old_flat_form(shared_data_dir):
    from posgeom.corpora import corpus_counts, corpus_tokens, resolve_source

    typed = corpus_counts(CorpusOptions("sst2", "validation", 16), data_dir=shared_data_dir)
    # a name alone is that corpus with every option at its default (SST-2: train, 64 positions)
    assert corpus_tokens("sst2", data_dir=shared_data_dir).n_positions == 64
    # the split left at None is the corpus's default split, also against an already resolved source
    source = resolve_source("sst2", "validation", data_dir=shared_data_dir)
    assert corpus_counts(CorpusOptions("sst2", "validation", 16), source=source).counts == typed.counts
    with pytest.raises(ValueError, match="source must be the DataSource of sst2/train"):
        corpus_counts(CorpusOptions("sst2", "train", 16), source=source)
    # what defines the counts goes in the CorpusOptions: the flat form of before is a one-line error
    with pytest.raises(TypeError):
        corpus_counts("sst2", "validation", 16)
    with pytest.raises(TypeError, match="unexpected keyword argument 'n_positions'"):
        corpus_counts("sst2", n_positions=16)
    with pytest.raises(TypeError, match="options must be a CorpusOptions"):
        corpus_tokens({"corpus": "sst2"})
    with pytest.raises(ValueError, match="unknown special-token policy"):
        corpus_counts(CorpusOptions("sst2", "validation", 16, special="both"), data_dir=shared_data_dir)
