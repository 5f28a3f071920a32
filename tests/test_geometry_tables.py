"""Analysis of position tables (posgeom.geometry.tables) against naive loops, closed forms and
scikit-learn, and the one sinusoid fit against brute-force least squares."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.decomposition import PCA
from sklearn.metrics.pairwise import cosine_similarity

from posgeom.geometry import tables as tb


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.mark.parametrize("center", [False, True])
def test_cosine_similarity_matches_sklearn(rng, center):
    P = rng.normal(size=(12, 5)) + 2.0
    X = P - P.mean(axis=0) if center else P
    np.testing.assert_allclose(tb.cosine_similarity_matrix(P, center=center), cosine_similarity(X), atol=1e-12)


def test_cosine_similarity_rejects_zero_rows():
    with pytest.raises(ValueError, match="zero norm"):
        tb.cosine_similarity_matrix(np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]]))


def test_similarity_by_lag_matches_a_loop(rng):
    C = cosine_similarity(rng.normal(size=(9, 4)))
    out = tb.similarity_by_lag(C)
    for lag in range(9):
        vals = [C[i, i + lag] for i in range(9 - lag)]
        assert out["mean"][lag] == pytest.approx(np.mean(vals))
        assert out["min"][lag] == pytest.approx(min(vals))
        assert out["max"][lag] == pytest.approx(max(vals))
    assert out["mean"][0] == pytest.approx(1.0)


def test_sinusoidal_neighbour_cosine_has_its_closed_form():
    # <p_i, p_{i+1}> = sum_k cos(omega_k), |p_i|^2 = d/2  =>  s(1) = (2/d) sum_k cos(omega_k)
    from posgeom.encodings import sinusoidal_frequencies, sinusoidal_table

    n, d = 40, 16
    lag = tb.similarity_by_lag(tb.cosine_similarity_matrix(sinusoidal_table(n, d)))
    omega = sinusoidal_frequencies(d)
    for delta in (1, 3, 10):
        assert lag["mean"][delta] == pytest.approx(2.0 / d * np.sum(np.cos(delta * omega)), abs=1e-12)


def test_isolation_scores_match_a_loop(rng):
    P = rng.normal(size=(10, 3))
    P[0] += 25.0  # a row far from every other
    nearest = [min(np.linalg.norm(P[i] - P[j]) for j in range(10) if j != i) for i in range(10)]
    np.testing.assert_allclose(tb.isolation_scores(P), np.asarray(nearest) / np.median(nearest), rtol=1e-10)
    assert tb.stand_apart(P, 2.0).tolist() == [0]


def test_periodogram_matches_a_naive_dft(rng):
    P = rng.normal(size=(11, 3))
    freqs, power = tb.dimension_periodograms(P)
    n = P.shape[0]
    X = P - P.mean(axis=0)
    for k in range(n // 2 + 1):
        assert freqs[k] == pytest.approx(k / n)
        for j in range(3):
            z = sum(X[i, j] * np.exp(-2j * np.pi * k * i / n) for i in range(n))
            assert power[k, j] == pytest.approx(abs(z) ** 2 / n)


def test_pure_sinusoids_have_concentration_one_at_their_frequency():
    n = 64
    i = np.arange(n)
    P = np.column_stack([np.cos(2 * np.pi * 3 * i / n), np.sin(2 * np.pi * 7 * i / n), np.ones(n)])
    spec = tb.spectral_summary(P)
    assert spec["dominant_k"][:2].tolist() == [3, 7]
    np.testing.assert_allclose(spec["concentration"][:2], 1.0, atol=1e-12)
    assert spec["concentration"][2] == 0.0  # a constant column has no spectrum
    assert spec["power_share"].sum() == pytest.approx(1.0)


def test_white_noise_is_not_concentrated(rng):
    spec = tb.spectral_summary(rng.normal(size=(256, 200)))
    assert np.median(spec["concentration"]) < 0.1


def test_principal_components_match_sklearn(rng):
    P = rng.normal(size=(30, 6)) @ rng.normal(size=(6, 6))
    scores, explained = tb.principal_components(P, 4)
    pca = PCA(n_components=4).fit(P)
    np.testing.assert_allclose(explained, pca.explained_variance_ratio_, rtol=1e-8)
    np.testing.assert_allclose(np.abs(scores), np.abs(pca.transform(P)), atol=1e-8)
    with pytest.raises(ValueError, match="k must be"):
        tb.principal_components(P, 7)


def _brute_force_fit(y, omegas):
    """(omega, R^2, curve) of the first best candidate, each fitted by explicit least squares."""
    t = np.arange(y.size)
    best = (None, -np.inf, None)
    for om in omegas:
        X = np.column_stack([np.cos(om * t), np.sin(om * t), np.ones(y.size)])
        X[np.abs(X) < 1e-12] = 0.0  # sin(pi i) is 0, not rounding noise for pinv to amplify
        fitted = X @ (np.linalg.pinv(X) @ y)
        r2 = 1 - np.sum((y - fitted) ** 2) / np.sum((y - y.mean()) ** 2)
        if r2 > best[1] + 1e-12:
            best = (om, r2, fitted)
    return best


def test_fit_sinusoid_recovers_a_known_one():
    n = 50
    i = np.arange(n)
    y = 2.0 * np.cos(2 * np.pi * 3.5 * i / n + 0.7) + 0.3
    fit = tb.fit_sinusoid(y)
    assert fit.cycles[0] == 3.5 and fit.period[0] == pytest.approx(n / 3.5) and fit.r2[0] == pytest.approx(1.0)
    assert fit.amplitude[0] == pytest.approx(2.0) and fit.phase[0] == pytest.approx(0.7)
    assert fit.offset[0] == pytest.approx(0.3) and fit.omega[0] == pytest.approx(2 * np.pi * 3.5 / n)
    np.testing.assert_allclose(fit.curve[:, 0], y, atol=1e-12)


def test_fit_sinusoid_matches_brute_force_on_noise(rng):
    n, grid = 40, 120
    Y = rng.normal(size=(n, 3))
    fit = tb.fit_sinusoid(Y, grid)
    assert fit.curve.shape == (n, 3)
    for j in range(3):
        om, r2, fitted = _brute_force_fit(Y[:, j], np.pi * np.arange(1, grid + 1) / grid)
        assert fit.omega[j] == pytest.approx(om) and fit.r2[j] == pytest.approx(r2, rel=1e-9)
        np.testing.assert_allclose(fit.curve[:, j], fitted, atol=1e-10)
        i = np.arange(n)
        np.testing.assert_allclose(fit.amplitude[j] * np.cos(fit.omega[j] * i + fit.phase[j]) + fit.offset[j],
                                   fitted, atol=1e-10)


def test_fit_sinusoid_at_nyquist_and_bad_input():
    y = np.cos(np.pi * np.arange(8))  # omega = pi: the sine column vanishes
    fit = tb.fit_sinusoid(y)
    assert fit.cycles[0] == 4.0 and fit.r2[0] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="constant"):
        tb.fit_sinusoid(np.ones(10))
    with pytest.raises(ValueError, match="grid"):
        tb.fit_sinusoid(np.arange(5.0), grid=0)
    with pytest.raises(ValueError, match="n >= 3"):
        tb.fit_sinusoid(np.arange(2.0))

