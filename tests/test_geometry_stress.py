"""Stress normalisations (SPEC section 1, "Stress of an encoding") against loops over i < j, and
scikit-learn's MDS.stress_ for "kruskal1"."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize_scalar
from sklearn.manifold import MDS

from posgeom.geometry import distances_of, euclidean_distances, hellinger_matrix, stress


def loop_sums(D, Dh):
    n = D.shape[0]
    num = den = hh = cross = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            num += (Dh[i, j] - D[i, j]) ** 2
            den += D[i, j] ** 2
            hh += Dh[i, j] ** 2
            cross += Dh[i, j] * D[i, j]
    return num, den, hh, cross


def random_pair(seed, n=9):
    rng = np.random.default_rng(seed)
    D = hellinger_matrix(rng.dirichlet(np.ones(20), size=n))
    P = rng.normal(size=(n, 3))
    return D, P, euclidean_distances(P)


def test_formulas_against_loops():
    for seed in range(4):
        D, P, Dh = random_pair(seed)
        num, den, hh, cross = loop_sums(D, Dh)
        assert stress(D, Dh, "paper") == pytest.approx(num / den, rel=1e-13)
        assert stress(D, Dh, "scale_free") == pytest.approx(1 - cross**2 / (hh * den), rel=1e-10)
        assert stress(D, Dh, "kruskal1") == pytest.approx(np.sqrt(num / hh), rel=1e-13)
        assert stress(D, Dh, "smacof_r") == pytest.approx(np.sqrt(num / den), rel=1e-13)
        # the encoding itself gives the same numbers as its distance matrix
        for norm in ("paper", "scale_free", "kruskal1", "smacof_r"):
            assert stress(D, P, norm) == pytest.approx(stress(D, Dh, norm), rel=1e-12)


def test_scale_free_is_the_minimum_over_scales():
    D, _, Dh = random_pair(5)
    best = minimize_scalar(lambda s: stress(D, s * Dh, "paper"), bounds=(1e-6, 100), method="bounded",
                           options={"xatol": 1e-12})
    assert stress(D, Dh, "scale_free") == pytest.approx(best.fun, rel=1e-8)
    assert stress(D, Dh, "scale_free") <= stress(D, Dh, "paper")


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.floats(1e-3, 1e3))
def test_property_scale_free_invariant_to_scaling(seed, scale):
    D, P, Dh = random_pair(seed, n=6)
    ref = stress(D, Dh, "scale_free")
    assert stress(D, scale * Dh, "scale_free") == pytest.approx(ref, rel=1e-9, abs=1e-15)
    assert stress(D, scale * P, "scale_free") == pytest.approx(ref, rel=1e-9, abs=1e-15)
    assert 0 <= ref <= 1


def test_perfect_encoding_and_nope():
    D, P, Dh = random_pair(6)
    for norm in ("paper", "scale_free", "kruskal1", "smacof_r"):
        assert stress(Dh, P, norm) < 1e-24
    nope = np.zeros((9, 4))  # every position the same vector
    assert stress(D, nope, "paper") == 1.0
    assert stress(D, nope, "scale_free") == 1.0
    with pytest.raises(ValueError, match="sum dhat"):
        stress(D, nope, "kruskal1")
    with pytest.raises(ValueError, match="sum d"):
        stress(np.zeros((3, 3)), np.eye(3), "paper")


def test_kruskal1_equals_sklearn_normalized_stress():
    D, _, _ = random_pair(7, n=12)
    mds = MDS(n_components=2, metric_mds=True, normalized_stress=True, init="classical_mds", metric="precomputed",
              max_iter=50, eps=1e-12, n_init=1)
    X = mds.fit_transform(D)
    assert stress(D, X, "kruskal1") == pytest.approx(mds.stress_, rel=1e-10)


def test_reading_of_the_second_argument():
    D, _, Dh = random_pair(8, n=4)
    square_encoding = np.arange(16.0).reshape(4, 4)  # n == d but not a distance matrix: an encoding
    np.testing.assert_allclose(distances_of(square_encoding), euclidean_distances(square_encoding))
    np.testing.assert_array_equal(distances_of(Dh), Dh)
    # forcing the reading
    np.testing.assert_allclose(distances_of(Dh, as_distances=False), euclidean_distances(Dh))
    assert stress(D, Dh, as_distances=False) != stress(D, Dh)
    with pytest.raises(ValueError, match="not symmetric"):
        distances_of(square_encoding, as_distances=True)


@pytest.mark.parametrize(
    "second, match",
    [(np.ones((5, 2)), "5 rows but D describes n = 9"), (np.full((9, 2), np.nan), "NaN"), (np.ones(9), "2-D")],
)
def test_bad_second_argument(second, match):
    D, _, _ = random_pair(9)
    with pytest.raises(ValueError, match=match):
        stress(D, second)


def test_bad_normalization_and_target():
    D, P, _ = random_pair(10)
    with pytest.raises(ValueError, match="normalization"):
        stress(D, P, "raw")
    with pytest.raises(ValueError, match="not symmetric"):
        stress(D + np.triu(np.ones_like(D), 1), P)
    with pytest.raises(ValueError, match="at least 2"):
        stress(np.zeros((1, 1)), np.zeros((1, 2)))
