"""Classical MDS, lift, effective rank and low-rank factors (SPEC section 1, Algorithm 1, Remark 8)."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.manifold import ClassicalMDS

from posgeom.geometry import (
    classical_mds,
    double_centered_gram,
    effective_rank,
    euclidean_distances,
    hellinger_matrix,
    lift,
    low_rank_factors,
    mds_stress_curve,
    separation,
    sqrt_marginals,
    stress,
)

CYCLE4 = np.array([[0, 1, 2, 1], [1, 0, 1, 2], [2, 1, 0, 1], [1, 2, 1, 0]], dtype=float)


def random_hellinger(seed, n=12, v=30):
    rng = np.random.default_rng(seed)
    mu = rng.dirichlet(np.ones(v), size=n)
    return mu, hellinger_matrix(mu)


def test_double_centering_equals_JSSJ_for_chord_hellinger():
    mu, D = random_hellinger(0)
    n = D.shape[0]
    J = np.eye(n) - np.ones((n, n)) / n
    S = np.sqrt(mu)
    # B = -1/2 J D^2 J = J S S^T J for the chord distance
    np.testing.assert_allclose(double_centered_gram(D), -0.5 * J @ (D**2) @ J, atol=1e-14)
    np.testing.assert_allclose(double_centered_gram(D), J @ S @ S.T @ J, atol=1e-13)


def test_full_rank_mds_reproduces_chord_hellinger():
    for seed in range(3):
        _, D = random_hellinger(seed)
        res = classical_mds(D)
        assert res.k == D.shape[0] - 1  # rank(B) = n - 1 for n generic points in v > n dimensions
        assert np.max(np.abs(euclidean_distances(res.embedding) - D)) <= 1e-10
        assert res.clipped_mass < 1e-12
        assert np.all(np.diff(res.eigenvalues) <= 0)
        assert res.eigenvalues.shape == (D.shape[0],)


def test_deterministic_signs_and_eigenvectors():
    _, D = random_hellinger(4)
    res = classical_mds(D, k=4)
    U = res.eigenvectors
    lead = U[np.argmax(np.abs(U), axis=0), np.arange(U.shape[1])]
    assert np.all(lead > 0)
    np.testing.assert_allclose(U.T @ U, np.eye(U.shape[0]), atol=1e-12)
    np.testing.assert_allclose(res.embedding, U[:, :4] * np.sqrt(res.eigenvalues[:4]), atol=1e-15)
    again = classical_mds(D.copy(), k=4)
    assert np.array_equal(res.embedding, again.embedding)


def test_matches_sklearn_classical_mds():
    _, D = random_hellinger(5, n=15)
    for k in (1, 3, 7):
        ours = classical_mds(D, k=k)
        skl = ClassicalMDS(n_components=k, metric="precomputed").fit(D)
        np.testing.assert_allclose(ours.eigenvalues[:k], skl.eigenvalues_, rtol=1e-10)
        np.testing.assert_allclose(
            euclidean_distances(ours.embedding), euclidean_distances(skl.embedding_), atol=1e-10
        )
        # same sign rule (largest |entry| positive), distinct eigenvalues: same coordinates
        np.testing.assert_allclose(ours.embedding, skl.embedding_, atol=1e-10)


def test_clipped_mass_for_non_euclidean_distances():
    # a 4-cycle with unit edges and both diagonals 2 (> sqrt 2): a metric, but not Euclidean
    D = CYCLE4
    res = classical_mds(D)
    neg = res.eigenvalues[res.eigenvalues < 0]
    assert neg.size > 0
    assert res.clipped_sum == pytest.approx(-neg.sum())
    assert res.clipped_mass == pytest.approx(-neg.sum() / np.abs(res.eigenvalues).sum())
    assert np.all(np.isfinite(classical_mds(D, k=4).embedding))


def test_two_anchor_corpus_has_rank_one():
    rng = np.random.default_rng(6)
    a, b = rng.dirichlet(np.ones(50)), rng.dirichlet(np.ones(50))
    which = rng.integers(0, 2, size=20)
    which[:2] = [0, 1]
    mu = np.where(which[:, None] == 0, a, b)
    D = hellinger_matrix(mu)
    res = classical_mds(D)
    assert res.k == 1
    assert effective_rank(res.eigenvalues, "tol", tol=1e-8) == 1
    assert effective_rank(D, "mass", q=0.999999) == 1
    assert stress(D, res.embedding, "paper") < 1e-20


def test_identical_positions_give_zero_distance_and_separation():
    mu = np.tile(np.array([0.2, 0.3, 0.5]), (4, 1))
    D = hellinger_matrix(mu)
    assert np.all(D == 0)
    res = classical_mds(D)
    assert res.k == 0 and res.embedding.shape == (4, 0)
    assert separation(np.zeros((4, 2))).raw == 0.0


def test_three_one_hot_points():
    """Three one-hot distributions: d = sqrt 2 for every pair; B = J has a double eigenvalue 1."""
    D = hellinger_matrix(np.eye(3))
    assert np.allclose(D[~np.eye(3, dtype=bool)], np.sqrt(2))
    res = classical_mds(D)
    np.testing.assert_allclose(res.eigenvalues, [1, 1, 0], atol=1e-14)
    # the 1-D MDS solution (-1, 0, 1)/sqrt 2 (eigenvector of the double eigenvalue) has stress 1/6 ...
    x = np.array([[-1.0], [0.0], [1.0]]) / np.sqrt(2)
    np.testing.assert_allclose(double_centered_gram(D) @ x, x, atol=1e-15)
    assert stress(D, x, "paper") == pytest.approx(1 / 6, abs=1e-15)
    # ... and no unit vector of that eigenspace does better (the eigenspace is degenerate)
    for phi in np.linspace(0, np.pi, 13):
        u = np.cos(phi) * np.array([-1, 0, 1]) / np.sqrt(2) + np.sin(phi) * np.array([1, -2, 1]) / np.sqrt(6)
        assert stress(D, u[:, None], "paper") >= 1 / 6 - 1e-12
    # whichever basis LAPACK returns, it is a valid 1-D MDS solution: stress in [1/6, (9 - 2 sqrt 6)/6]
    s_mds = stress(D, classical_mds(D, k=1).embedding, "paper")
    assert 1 / 6 - 1e-12 <= s_mds <= (9 - 2 * np.sqrt(6)) / 6 + 1e-12
    # the rescaled configuration gives 1/9
    assert stress(D, x * 4 / 3, "paper") == pytest.approx(1 / 9, abs=1e-15)
    assert stress(D, np.array([[-2 * np.sqrt(2) / 3], [0], [2 * np.sqrt(2) / 3]]), "paper") == pytest.approx(1 / 9)


def test_lift_preserves_distances():
    _, D = random_hellinger(7)
    X = classical_mds(D, k=5).embedding
    P, Q = lift(X, 32, seed=3, return_basis=True)
    assert P.shape == (12, 32) and Q.shape == (32, 5)
    np.testing.assert_allclose(Q.T @ Q, np.eye(5), atol=1e-14)
    np.testing.assert_allclose(euclidean_distances(P), euclidean_distances(X), atol=1e-13)
    assert np.array_equal(lift(X, 32, seed=3), P)
    assert not np.allclose(lift(X, 32, seed=4), P)
    padded = lift(X, 8, seed=None)
    assert np.array_equal(padded[:, :5], X) and np.all(padded[:, 5:] == 0)
    with pytest.raises(ValueError, match="d must be"):
        lift(X, 4)


def test_mds_stress_curve_matches_direct_computation():
    _, D = random_hellinger(8)
    res = classical_mds(D)
    curve = mds_stress_curve(D, normalization="scale_free")
    direct = [stress(D, classical_mds(D, k=k).embedding, "scale_free") for k in range(1, 12)]
    np.testing.assert_allclose(curve, direct, atol=1e-12)
    assert curve[-1] < 1e-20
    paper = mds_stress_curve(D, max_rank=4, mds=res)
    np.testing.assert_allclose(paper, [stress(D, res.embedding[:, :k]) for k in range(1, 5)], atol=1e-14)


def test_effective_rank_criteria():
    w = np.array([10.0, 5.0, 1.0, 0.01, 0.0, -0.001])
    assert effective_rank(w, "tol", tol=1e-4) == 4  # lambda_k > 1e-4 * 10
    assert effective_rank(w, "tol", tol=1e-3) == 3  # 0.01 is not > 1e-3 * 10
    assert effective_rank(w, "tol", tol=0.2) == 2  # lambda > 2
    assert effective_rank(w[::-1], "tol", tol=0.2) == 2  # order does not matter
    assert effective_rank(w, "mass", q=15 / 16.01) == 2
    assert effective_rank(w, "mass", q=1.0) == 4
    assert effective_rank(np.zeros(3), "tol") == 0
    _, D = random_hellinger(9)
    curve = mds_stress_curve(D)
    thr = float(curve[3]) + 1e-15
    assert effective_rank(D, "stress", threshold=thr) == int(np.flatnonzero(curve <= thr)[0]) + 1
    with pytest.raises(ValueError, match="distance matrix D"):
        effective_rank(w, "stress")
    with pytest.raises(ValueError, match="criterion"):
        effective_rank(w, "elbow")
    with pytest.raises(ValueError, match="tol"):
        effective_rank(w, "tol", tol=2)
    with pytest.raises(ValueError, match="raise the threshold"):
        effective_rank(CYCLE4, "stress", threshold=0.0)


def test_low_rank_factors_remark_8():
    rng = np.random.default_rng(10)
    X = rng.normal(size=(50, 6)) @ rng.normal(size=(6, 50))
    f = low_rank_factors(X, 3, 50, as_distances=False)
    # r (n + d) = 300 parameters instead of n d = 2500: savings 88%
    assert (f.n_params, f.n_params_full) == (300, 2500)
    assert f.savings == pytest.approx(0.88, abs=1e-15)
    assert f.A.shape == (50, 3) and f.C.shape == (50, 3) and f.P.shape == (50, 50) and f.rank == 3
    np.testing.assert_allclose(f.C.T @ f.C, np.eye(3), atol=1e-14)
    # A is the best rank-3 approximation of the centred embedding: same distances as rank-3 MDS
    D = euclidean_distances(X)
    np.testing.assert_allclose(euclidean_distances(f.P), euclidean_distances(classical_mds(D, k=3).embedding), atol=1e-8)
    g = low_rank_factors(D, 3, 20)
    np.testing.assert_allclose(euclidean_distances(g.P), euclidean_distances(classical_mds(D, k=3).embedding), atol=1e-10)
    assert g.n_params == 3 * (50 + 20)
    with pytest.raises(ValueError, match="r must be"):
        low_rank_factors(D, 21, 20)


def test_full_rank_embedding_of_sqrt_marginals_is_an_isometry():
    """SPEC section 5, weakness 3: the rows sqrt(mu_i) embed the chord distance isometrically."""
    mu, D = random_hellinger(11)
    np.testing.assert_allclose(euclidean_distances(sqrt_marginals(mu)), D, atol=1e-14)


@pytest.mark.parametrize(
    "D, match",
    [
        (np.array([[0, 1], [2, 0]]), "not symmetric"),
        (np.array([[1, 1], [1, 1]]), "zero diagonal"),
        (np.array([[0, -1], [-1, 0]]), "negative"),
        (np.array([[0.0]]), "at least 2"),
        (np.zeros((2, 3)), "square"),
        (np.array([[0, np.nan], [np.nan, 0]]), "NaN"),
    ],
)
def test_bad_distance_matrices(D, match):
    with pytest.raises(ValueError, match=match):
        classical_mds(D)


def test_bad_k():
    _, D = random_hellinger(12)
    for k in (0, 13, 2.0):
        with pytest.raises(ValueError, match="k must be"):
            classical_mds(D, k=k)


def test_double_centered_gram_of_squares_matches_the_matrix_product():
    """B = -1/2 J D2 J by the explicit centring matrix (the oracle), for squares of any sign."""
    from posgeom.geometry import double_centered_gram, double_centered_gram_of_squares

    rng = np.random.default_rng(3)
    X = rng.standard_normal((9, 9))
    D2 = X + X.T
    np.fill_diagonal(D2, 0.0)
    J = np.eye(9) - 1.0 / 9
    assert np.allclose(double_centered_gram_of_squares(D2), -0.5 * J @ D2 @ J, atol=1e-13)
    D = posgeom_distances(rng.standard_normal((9, 3)))
    assert np.allclose(double_centered_gram(D), double_centered_gram_of_squares(D * D), atol=1e-14)
    with pytest.raises(ValueError, match="symmetric square"):
        double_centered_gram_of_squares(np.ones((3, 4)))
    with pytest.raises(ValueError, match="asymmetric"):
        double_centered_gram_of_squares(np.triu(np.ones((3, 3))))


def posgeom_distances(P):
    from posgeom.geometry import euclidean_distances

    return euclidean_distances(P)
