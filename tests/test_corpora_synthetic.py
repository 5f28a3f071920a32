"""Synthetic corpora: population marginals in closed form against samples, exact rank, order tasks."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats

from posgeom.corpora.synthetic import (
    FAMILIES, PAD, drift, make_corpus, markov, markov_transition, order_task, population_marginals, regimes,
    stationary, zipf_distribution,
)
from posgeom.geometry import classical_mds, hellinger_matrix, positional_counts


def naive_counts(tokens, lengths, n, v):
    """c_i(w) by a loop over sequences and positions (oracle)."""
    c = np.zeros((n, v), dtype=np.int64)
    for row, L in zip(tokens, lengths):
        for i in range(min(L, n)):
            c[i, row[i]] += 1
    return c


def centred_gram(mu):
    """B = J S S^T J with S = sqrt(mu) (SPEC section 1), computed directly."""
    S = np.sqrt(mu)
    n = S.shape[0]
    J = np.eye(n) - 1.0 / n
    return J @ S @ S.T @ J


def test_zipf_matches_scipy():
    for v, s in [(10, 1.0), (100, 1.3), (7, 0.5)]:
        p = zipf_distribution(v, s)
        ref = scipy.stats.zipfian(s, v).pmf(np.arange(1, v + 1))
        np.testing.assert_allclose(p, ref, rtol=1e-12)
    assert np.all(np.diff(zipf_distribution(20)) < 0)


@pytest.mark.parametrize("family", list(FAMILIES))
def test_samples_match_population(family):
    """Empirical marginals from the counts agree with the closed-form population within 5 sigma."""
    corpus = make_corpus(family, n_sequences=4000, seed=3)
    mu = corpus.population
    np.testing.assert_allclose(mu.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(mu, population_marginals(family, seed=3), atol=0)
    counts = corpus.counts()
    c = counts.counts.toarray()
    np.testing.assert_array_equal(c, naive_counts(corpus.tokens, corpus.lengths, corpus.n_positions, corpus.vocab_size))
    # every cell: an exact two-sided binomial test of c_i(w) ~ Binomial(N_i, mu_i(w))
    N = np.broadcast_to(counts.reach[:, None], c.shape)
    assert np.all(c[mu == 0] == 0), family
    pos = mu > 0
    k, NN, p = c[pos], N[pos], mu[pos]
    p_two = 2 * np.minimum(scipy.stats.binom.cdf(k, NN, p), scipy.stats.binom.sf(k - 1, NN, p))
    assert p_two.min() > 1e-7, family
    # padding: exactly the cells beyond each length hold PAD
    beyond = np.arange(corpus.n_positions)[None, :] >= corpus.lengths[:, None]
    assert np.all(corpus.tokens[beyond] == PAD) and np.all(corpus.tokens[~beyond] >= 0)


def test_seeded_and_reproducible():
    a, b, c = drift(300, seed=1), drift(300, seed=1), drift(300, seed=2)
    np.testing.assert_array_equal(a.tokens, b.tokens)
    assert not np.array_equal(a.tokens, c.tokens)
    # the population does not depend on the number of sequences drawn
    np.testing.assert_array_equal(drift(10, seed=1).population, a.population)


@pytest.mark.parametrize("K", [3, 4, 5, 7])
def test_drift_population_rank_is_exactly_K_minus_1(K):
    corpus = drift(10, n_positions=40, vocab_size=60, anchors=K, seed=K)
    w = np.linalg.eigvalsh(centred_gram(corpus.population))[::-1]
    assert w[K - 2] > 1e-6 * w[0]
    assert np.all(np.abs(w[K - 1 :]) < 1e-12 * w[0])
    # the same through the geometry core: chord Hellinger + classical MDS
    mds = classical_mds(hellinger_matrix(corpus.population))
    assert mds.embedding.shape[1] == K - 1
    # disjoint anchors, weights on the hyperplane sum_k sqrt(w_k) = c
    Pi, W = corpus.params["anchors_pi"], corpus.params["weights"]
    assert np.all((Pi > 0).sum(axis=0) == 1)
    np.testing.assert_allclose(W.sum(axis=1), 1.0, atol=1e-12)
    s = np.sqrt(W).sum(axis=1)
    np.testing.assert_allclose(s, s[0], atol=1e-12)


def test_drift_is_smooth_and_visits_every_anchor():
    corpus = drift(10, n_positions=50, anchors=4)
    W = corpus.params["weights"]
    assert list(np.argmax(W[[0, 16, 33, 49]], axis=1)) == [0, 1, 2, 3]
    D = hellinger_matrix(corpus.population)
    steps = np.diag(D, 1)
    assert steps.max() < 0.2 * D.max()


def test_drift_rejects_rank_one():
    with pytest.raises(ValueError, match="anchors must be an integer >= 3"):
        drift(10, anchors=2)


def test_markov_chain_is_stationary_and_reversible():
    pi = zipf_distribution(9, 1.2)[np.r_[0, 1, 2, 3, 4, 4, 3, 2, 1]]
    pi /= pi.sum()
    T = markov_transition(pi, stay=0.3)
    np.testing.assert_allclose(T.sum(axis=1), 1.0, atol=1e-14)
    np.testing.assert_allclose(pi @ T, pi, atol=1e-14)
    F = pi[:, None] * T
    np.testing.assert_allclose(F, F.T, atol=1e-15)  # detailed balance


def test_markov_geometry_is_circulant_with_fourier_eigenvectors():
    corpus = markov(10, n_positions=24)
    assert corpus.vocab_size == 24
    D = hellinger_matrix(corpus.population)
    shift = np.roll(np.arange(24), 1)
    np.testing.assert_allclose(D[np.ix_(shift, shift)], D, atol=1e-12)
    B = centred_gram(corpus.population)
    i = np.arange(24)
    for k in range(1, 12):
        for f in (np.cos(2 * np.pi * k * i / 24), np.sin(2 * np.pi * k * i / 24)):
            Bf = B @ f
            lam = f @ Bf / (f @ f)
            np.testing.assert_allclose(Bf, lam * f, atol=1e-10)
    # the hidden chain z_i = x_i - s i (mod v) has law pi at every position (started at stationarity)
    big = markov(6000, n_positions=24, seed=5)
    z = (big.tokens - np.arange(24)[None, :]) % 24
    freq = np.stack([np.bincount(z[:, j], minlength=24) for j in range(24)]) / 6000
    pi = big.params["pi"]
    assert np.all(np.abs(freq - pi) <= 5 * np.sqrt(pi * (1 - pi) / 6000))


def test_regimes_fixed_length_has_three_blocks():
    corpus = regimes(10, n_positions=20, n_begin=2, n_end=3, min_length=20)
    mu = corpus.population
    for i in range(3, 17):
        np.testing.assert_array_equal(mu[i], mu[2])
    assert not np.allclose(mu[0], mu[1]) and not np.allclose(mu[17], mu[2]) and not np.allclose(mu[19], mu[18])
    with pytest.raises(ValueError, match="regimes would overlap"):
        regimes(10, n_positions=20, n_begin=4, n_end=4, min_length=7)


def test_regimes_end_regime_follows_each_sequence_end():
    corpus = regimes(500, n_positions=30, n_begin=1, n_end=2, min_length=10, seed=4)
    params = regimes(1, n_positions=30, n_begin=1, n_end=2, min_length=10, seed=4)
    assert np.array_equal(corpus.population, params.population)
    # the closing law's most likely token dominates the last position of every sequence
    last = corpus.tokens[np.arange(500), corpus.lengths - 1]
    top = np.argmax(corpus.population[29])  # position 29 is always the last one when reached
    assert np.mean(last == top) > 0.1


def test_order_task_labels_depend_only_on_order():
    corpus = order_task(2000, n_positions=16, vocab_size=30, seed=2)
    A, B = corpus.params["markers"]
    assert (A, B) == (28, 29)
    toks, y = corpus.tokens, corpus.labels
    assert np.all((toks == A).sum(axis=1) == 1) and np.all((toks == B).sum(axis=1) == 1)
    pa, pb = np.argmax(toks == A, axis=1), np.argmax(toks == B, axis=1)
    np.testing.assert_array_equal(y, (pa < pb).astype(int))
    # balanced: row 2k+1 is row 2k reversed, with the opposite label
    np.testing.assert_array_equal(toks[1::2], toks[0::2, ::-1])
    np.testing.assert_array_equal(y[1::2], 1 - y[0::2])


def test_order_task_bag_of_words_is_exactly_chance():
    from sklearn.linear_model import LogisticRegression

    corpus = order_task(1000, n_positions=12, vocab_size=20, min_length=8, seed=0)
    X = np.stack([np.bincount(s, minlength=20) for s in corpus.sequences()])
    clf = LogisticRegression(max_iter=2000).fit(X, corpus.labels)
    assert clf.score(X, corpus.labels) == 0.5  # each pair: same bag, opposite labels
    # while one order feature solves it
    A, B = corpus.params["markers"]
    order = np.array([[np.argmax(s == A) < np.argmax(s == B)] for s in corpus.sequences()], dtype=float)
    assert LogisticRegression().fit(order, corpus.labels).score(order, corpus.labels) == 1.0


def test_marker_position_task():
    corpus = order_task(600, n_positions=11, vocab_size=10, kind="marker_position", min_length=5, seed=1)
    A = corpus.params["markers"][0]
    p = np.argmax(corpus.tokens == A, axis=1)
    L = corpus.lengths
    assert np.all((corpus.tokens == A).sum(axis=1) == 1)
    assert not np.any((L % 2 == 1) & (p == (L - 1) // 2))
    np.testing.assert_array_equal(corpus.labels, (2 * p < L - 1).astype(int))
    assert abs(corpus.labels.mean() - 0.5) < 1e-12


def test_bad_parameters_name_valid_values():
    with pytest.raises(ValueError, match="valid families are stationary, drift, regimes, markov, order"):
        make_corpus("nope")
    with pytest.raises(ValueError, match="valid: .*anchors"):
        make_corpus("drift", colour=3)
    with pytest.raises(ValueError, match="valid kinds are marker_order, marker_position"):
        order_task(10, kind="sorted")
    with pytest.raises(ValueError, match="must be even"):
        order_task(11)
    with pytest.raises(ValueError, match="n_positions must be an integer >= 1"):
        stationary(10, n_positions=0)
    with pytest.raises(ValueError, match="min_length must be an integer in"):
        stationary(10, n_positions=5, min_length=6)


def test_counts_use_lengths_never_padding():
    corpus = stationary(50, n_positions=10, vocab_size=5, min_length=3, seed=9)
    with pytest.raises(ValueError, match="outside"):
        positional_counts(corpus.tokens, 10, 5)  # the padded array alone is rejected
    c = corpus.counts()
    np.testing.assert_array_equal(c.reach, [(corpus.lengths > i).sum() for i in range(10)])


def test_order_population_needs_length_two():
    with pytest.raises(ValueError, match="length >= 2"):
        population_marginals("order", n_positions=2, vocab_size=5, min_length=1)
