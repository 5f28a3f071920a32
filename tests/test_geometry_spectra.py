"""Spectra of distance matrices (posgeom.geometry.spectra) against closed forms and loops."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import pdist

import posgeom
from posgeom import encodings as enc
from posgeom.corpora import synthetic as syn
from posgeom.corpora.synthetic import family_corpus


def _random_D(rng, n, k=3):
    return posgeom.euclidean_distances(rng.standard_normal((n, k)))


def test_eigen_fraction_and_line_fit():
    assert posgeom.geometry.eigen_fraction(enc.alibi_distances(15, 4)) == pytest.approx(1.0, abs=1e-12)
    X = np.random.default_rng(1).standard_normal((10, 3))
    D = pdist(X)
    from scipy.spatial.distance import squareform

    D = squareform(D)
    Xc = X - X.mean(axis=0)
    w = np.sort(np.linalg.eigvalsh(Xc.T @ Xc))[::-1]  # the non-zero eigenvalues of B = Xc Xc^T
    assert posgeom.geometry.eigen_fraction(D, 1) == pytest.approx(w[0] / w.sum(), rel=1e-9)
    assert posgeom.geometry.eigen_fraction(D, 3) == pytest.approx(1.0, rel=1e-9)
    mds_err, spacing_err = posgeom.geometry.line_fit_error(enc.alibi_distances(30, 12))
    assert mds_err < 1e-12 and spacing_err < 1e-12
    assert posgeom.geometry.line_fit_error(enc.sinusoidal_distances(30, 16))[0] > 0.05
    with pytest.raises(ValueError, match="all-zero"):
        posgeom.geometry.line_fit_error(np.zeros((5, 5)))


def test_null_eigenvalues_and_parallel_analysis():
    stat = family_corpus("stationary", n_sequences=5_000, n_positions=10, vocab_size=20, seed=1).counts()
    null = posgeom.geometry.null_eigenvalues(stat, 3, seed=0)
    assert null.shape == (3, 10) and np.all(np.diff(null, axis=1) <= 1e-15)
    w = posgeom.classical_mds(posgeom.hellinger_matrix(stat), k=1).eigenvalues
    assert posgeom.geometry.rank_above_noise(w, null) <= 1
    drift = syn.make_corpus("drift", n_sequences=20_000, n_positions=12, vocab_size=24, anchors=4, seed=0).counts()
    wd = posgeom.classical_mds(posgeom.hellinger_matrix(drift), k=1).eigenvalues
    assert posgeom.geometry.rank_above_noise(wd, posgeom.geometry.null_eigenvalues(drift, 3, seed=0)) == 3
    assert posgeom.geometry.rank_above_noise([3.0, 2.0, 1.0], np.array([[2.5, 0.1, 0.0]])) == 1
    with pytest.raises(ValueError, match="PositionalCounts"):
        posgeom.geometry.null_eigenvalues(np.ones((3, 3)), 2)


def test_rank_one_report_on_points_on_a_line():
    x = np.sort(np.random.default_rng(1).standard_normal(8))
    D = np.abs(np.subtract.outer(x, x))
    rep = posgeom.geometry.rank_one_report(D, np.zeros_like(D))
    assert rep["share_raw"] == pytest.approx(1.0)
    assert rep["share_debiased"] == pytest.approx(1.0)
    assert rep["rank_above_noise"] == 1
    assert rep["share_above_noise"] == pytest.approx(1.0)


def test_rank_one_report_noise_gram_is_the_diagonal_of_the_floor():
    # F_ij^2 = (a_i + a_j) off the diagonal: -1/2 J F2 J = J diag(a) J, whose trace is sum(a) (1 - 1/n)
    rng = np.random.default_rng(2)
    n = 7
    a = rng.uniform(0.1, 0.5, n)
    F = np.sqrt(a[:, None] + a[None, :]) * (1 - np.eye(n))
    D = _random_D(rng, n)
    rep = posgeom.geometry.rank_one_report(D, F)
    assert rep["eigenvalues_noise"].sum() == pytest.approx(a.sum() * (1 - 1 / n))
    with pytest.raises(ValueError, match="must match"):
        posgeom.geometry.rank_one_report(D, F[:-1, :-1])


def test_gram_eigenvalues_match_the_centring_matrix():
    rng = np.random.default_rng(0)
    D = _random_D(rng, 8)
    J = np.eye(8) - 1.0 / 8
    oracle = np.sort(np.linalg.eigvalsh(-0.5 * J @ (D**2) @ J))[::-1]
    assert np.allclose(posgeom.geometry.gram_eigenvalues(D**2), oracle, atol=1e-12)
