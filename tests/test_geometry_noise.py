"""Noise floor (issue 3): on a stationary corpus, where every true distance is 0, the observed Hellinger
distances are pure sampling noise and must match the floor."""

from __future__ import annotations

import numpy as np
import pytest

from posgeom.geometry import (
    PositionalCounts,
    hellinger_matrix,
    noise_floor,
    positional_counts,
    positional_marginals,
)


def stationary_counts(seed, n_seq, n=16, v=40, concentration=2.0):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(v, concentration))
    return positional_counts(rng.choice(v, size=(n_seq, n), p=p), n, v)


@pytest.mark.parametrize("method", ["bootstrap", "split_half"])
def test_stationary_corpus_distances_are_at_the_floor(method):
    # 48 positions share one distribution: every true distance is 0. The mean of d^2 over the 1128 pairs
    # has a relative sampling spread of about 2-3% here (checked over seeds), so 8% is a 3-sigma band.
    n = 48
    c = stationary_counts(0, 3000, n=n)
    D = hellinger_matrix(c)
    F = noise_floor(c, method, n_rep=20, seed=1)
    iu = np.triu_indices(n, 1)
    # E d^2 over pairs of positions with identical true distributions = mean F^2
    assert np.mean(D[iu] ** 2) == pytest.approx(np.mean(F.matrix[iu] ** 2), rel=0.08)
    assert F.matrix.shape == (n, n) and np.allclose(F.matrix, F.matrix.T)
    np.testing.assert_allclose(np.diag(F.matrix), F.self_noise)
    assert F.method == method and F.n_rep == 20


def test_floor_scales_like_one_over_sqrt_n():
    small = noise_floor(stationary_counts(2, 500), n_rep=30, seed=0).self_noise.mean()
    large = noise_floor(stationary_counts(2, 8000), n_rep=30, seed=0).self_noise.mean()
    assert small / large == pytest.approx(4.0, rel=0.1)  # sqrt(8000 / 500)


def test_structured_corpus_stands_above_the_floor():
    rng = np.random.default_rng(3)
    n, v = 10, 30
    P = rng.dirichlet(np.ones(v), size=n)  # every position its own distribution
    seqs = np.stack([[rng.choice(v, p=P[i]) for i in range(n)] for _ in range(2000)])
    c = positional_counts(seqs, n, v)
    D, F = hellinger_matrix(c), noise_floor(c, n_rep=10).matrix
    off = ~np.eye(n, dtype=bool)
    assert np.all(D[off] > 3 * F[off])


def test_deterministic_positions_have_zero_noise_and_seed_reproducibility():
    c = PositionalCounts.from_array(np.array([[50, 0, 0], [10, 20, 20], [0, 0, 7]]))
    for method in ("bootstrap", "split_half"):
        F = noise_floor(c, method, n_rep=5, seed=4)
        assert F.self_noise[0] == 0.0 and F.self_noise[2] == 0.0 and F.self_noise[1] > 0
        assert np.array_equal(F.matrix, noise_floor(c, method, n_rep=5, seed=4).matrix)
    F = noise_floor(c, kind="normalized", seed=4)
    np.testing.assert_allclose(F.matrix, noise_floor(c, seed=4).matrix / np.sqrt(2))
    G = noise_floor(c, kind="geodesic", seed=4)
    np.testing.assert_allclose(G.matrix, 4 * np.arcsin(noise_floor(c, seed=4).matrix / 2))


def test_progress_bar(capsys):
    c = PositionalCounts.from_array(np.array([[5, 5], [3, 4]]))
    noise_floor(c, n_rep=2, progress=True)
    assert "noise floor" in capsys.readouterr().err


def test_positions_follow_min_count_and_marginals():
    c = PositionalCounts.from_array(np.array([[5, 5], [1, 0], [0, 0], [3, 4]]))
    F = noise_floor(c, min_count=2)
    assert F.positions.tolist() == [0, 3] and F.reach.tolist() == [10, 7]
    m = positional_marginals(c, min_count=2)
    assert noise_floor(m).positions.tolist() == m.positions.tolist()
    with pytest.raises(ValueError, match="alpha"):
        noise_floor(positional_marginals(c, alpha=1.0))
    with pytest.raises(ValueError, match="N_i >= 2"):
        noise_floor(c, "split_half")
    with pytest.raises(ValueError, match="method"):
        noise_floor(c, "jackknife")
    with pytest.raises(ValueError, match="n_rep"):
        noise_floor(c, n_rep=0)
    with pytest.raises(ValueError, match="PositionalCounts"):
        noise_floor(np.ones((2, 2)))
