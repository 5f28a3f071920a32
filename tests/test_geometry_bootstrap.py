"""Bootstrap over sequences (posgeom.geometry.bootstrap) against a loop over the resampled sequences."""

from __future__ import annotations

import numpy as np
import pytest

import posgeom.geometry as geo
from posgeom.corpora import synthetic as syn


def _corpus():
    return syn.make_corpus("drift", n_sequences=400, n_positions=8, vocab_size=12, seed=3)


def test_basic_interval_reflects_the_quantiles():
    reps = np.arange(101, dtype=float)  # quantiles at 2.5 % and 97.5 %: 2.5 and 97.5
    iv = geo.basic_interval(10.0, reps, level=0.95)
    assert iv.low == pytest.approx(20 - 97.5) and iv.high == pytest.approx(20 - 2.5)
    assert iv.bootstrap_mean == pytest.approx(50.0) and iv.estimate == 10.0
    assert iv.text("{:.1f}") == "10.0 [-77.5, 17.5]" and iv.excludes_zero() is False
    assert geo.basic_interval(1.0, [0.9, 1.0, 1.1]).excludes_zero()
    with pytest.raises(ValueError, match="at least 2"):
        geo.basic_interval(1.0, [1.0])
    with pytest.raises(ValueError, match="level"):
        geo.basic_interval(1.0, [1.0, 2.0], level=1.5)


def test_fold_bootstrap_matches_counting_the_resampled_sequences():
    corpus = _corpus()
    seqs = corpus.sequences()
    n, v, n_folds, seed = corpus.n_positions, corpus.vocab_size, 8, 5
    folds = geo.fold_counts(seqs, n, v, n_folds=n_folds, seed=seed)
    members = np.array_split(np.random.default_rng(seed).permutation(len(seqs)), n_folds)
    positions = np.arange(n)
    got = list(geo.fold_bootstrap(folds, positions, 6, seed=11))
    rng = np.random.default_rng(11)
    expected = []
    for _ in range(6):
        pick = np.bincount(rng.integers(0, n_folds, size=n_folds), minlength=n_folds)
        # the loop: every sequence of fold f counted pick[f] times
        resampled = [seqs[i] for f, w in enumerate(pick) for _ in range(w) for i in members[f]]
        expected.append(geo.hellinger_matrix(geo.positional_counts(resampled, n, v)))
    assert len(got) == 6
    for a, b in zip(got, expected):
        assert np.allclose(a, b, atol=1e-12)


def test_bootstrap_intervals_point_and_replicates():
    corpus = _corpus()
    folds = geo.fold_counts(corpus.sequences(), corpus.n_positions, corpus.vocab_size, n_folds=8, seed=0)
    D = geo.hellinger_matrix(corpus.counts())

    def stats(M):
        return np.array([M.mean(), M.max()])

    intervals, reps = geo.bootstrap_intervals(D, folds, np.arange(corpus.n_positions), stats, n_boot=30, seed=1)
    assert reps.shape == (30, 2) and len(intervals) == 2
    assert intervals[0].estimate == pytest.approx(D.mean()) and intervals[1].estimate == pytest.approx(D.max())
    assert all(iv.low <= iv.high for iv in intervals)
    with pytest.raises(ValueError, match="at least 2 folds"):
        list(geo.fold_bootstrap(folds[:1], np.arange(3), 2))


def test_difference_interval_is_the_interval_of_the_column_differences():
    reps = np.column_stack([np.arange(101, dtype=float), np.arange(101, dtype=float) * 0.5])
    ivs = [geo.basic_interval(10.0, reps[:, 0]), geo.basic_interval(4.0, reps[:, 1])]
    got = geo.difference_interval(ivs, reps, 0, 1)
    # by hand: t = 6, replicates of the difference 0.5 k, quantiles 1.25 and 48.75
    assert got.estimate == 6.0 and got.low == pytest.approx(12 - 48.75) and got.high == pytest.approx(12 - 1.25)
    with pytest.raises(ValueError, match="one column per interval"):
        geo.difference_interval(ivs, reps[:, :1], 0, 1)
