"""SMACOF (SPEC section 5, weakness 4): monotone stress, the 1/6 -> 1/9 example, scikit-learn cross-check."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.manifold import smacof as sk_smacof

from posgeom.geometry import classical_mds, euclidean_distances, hellinger_matrix, smacof, stress


def random_D(seed, n=20, v=40):
    rng = np.random.default_rng(seed)
    return hellinger_matrix(rng.dirichlet(np.full(v, 0.5), size=n))


def test_three_one_hot_points_from_1_6_to_1_9():
    D = hellinger_matrix(np.eye(3))
    x0 = np.array([[-1.0], [0.0], [1.0]]) / np.sqrt(2)  # the 1-D MDS solution with stress 1/6
    res = smacof(D, 1, init=x0)
    assert res.stress_history[0] == pytest.approx(1 / 6, abs=1e-14)
    assert res.stress == pytest.approx(1 / 9, abs=1e-12)
    assert res.converged
    x = res.embedding[:, 0] * np.sign(res.embedding[2, 0])
    np.testing.assert_allclose(x, [-2 * np.sqrt(2) / 3, 0, 2 * np.sqrt(2) / 3], atol=1e-10)


def test_refinement_lowers_paper_stress_monotonically():
    for seed, k in [(0, 1), (1, 2), (2, 3)]:
        D = random_D(seed)
        res = smacof(D, k)
        h = res.stress_history
        assert h[0] == pytest.approx(stress(D, classical_mds(D, k=k).embedding, "paper"), rel=1e-9)
        assert np.all(np.diff(h) <= 1e-13)  # majorisation never increases the stress
        assert res.stress < h[0]
        assert res.stress == pytest.approx(stress(D, res.embedding, "paper"), rel=1e-12)
        assert res.stress == pytest.approx(h[-1], rel=1e-8, abs=1e-14)
        assert res.n_iter == len(h) - 1 and res.converged


def test_matches_sklearn_smacof_from_the_same_start():
    D = random_D(3, n=15)
    X0 = classical_mds(D, k=2).embedding
    ours = smacof(D, 2, init=X0, eps=0, max_iter=400)
    X_sk, _ = sk_smacof(D, n_components=2, init=X0.copy(), n_init=1, max_iter=400, eps=0, metric=True,
                        normalized_stress=False)
    np.testing.assert_allclose(euclidean_distances(ours.embedding), euclidean_distances(X_sk), atol=1e-8)
    assert ours.n_iter == 400 and not ours.converged


def test_weights():
    D = random_D(4, n=10)
    plain = smacof(D, 2)
    ones = smacof(D, 2, weights=np.ones_like(D))
    np.testing.assert_allclose(ones.embedding, plain.embedding, atol=1e-8)
    np.testing.assert_allclose(ones.stress_history, plain.stress_history, atol=1e-10)
    W = np.ones_like(D)
    W[0, 1] = W[1, 0] = 0.0  # ignore one pair
    res = smacof(D, 2, weights=W)
    assert np.all(np.diff(res.stress_history) <= 1e-13)
    with pytest.raises(ValueError, match="symmetric and non-negative"):
        smacof(D, 2, weights=np.triu(W))


def test_random_init_is_seeded_and_inits_are_checked():
    D = random_D(5, n=12)
    a = smacof(D, 2, init="random", seed=1)
    b = smacof(D, 2, init="random", seed=1)
    assert np.array_equal(a.embedding, b.embedding)
    with pytest.raises(ValueError, match="shape"):
        smacof(D, 2, init=np.zeros((12, 3)))
    with pytest.raises(ValueError, match="init must be"):
        smacof(D, 2, init="pca")
    with pytest.raises(ValueError, match="k must be"):
        smacof(D, 0)
    with pytest.raises(ValueError, match="sum w d"):
        smacof(np.zeros((3, 3)), 1)


def test_exact_fit_stops_at_zero():
    rng = np.random.default_rng(6)
    P = rng.normal(size=(8, 2))
    res = smacof(euclidean_distances(P), 2)
    assert res.stress < 1e-20
