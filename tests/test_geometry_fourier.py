"""Fourier structure (posgeom.geometry.fourier) against circulant matrices and closed forms."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

import posgeom


def test_fourier_basis_diagonalises_circulants():
    F = posgeom.geometry.fourier_basis(12, 3)
    np.testing.assert_allclose(F.T @ F, np.eye(6), atol=1e-12)
    rng = np.random.default_rng(2)
    c = rng.random(12)
    c[1:] = (c[1:] + c[1:][::-1]) / 2  # symmetric circulant
    C = scipy.linalg.circulant(c)
    # C F stays inside span(F) pair by pair: C F = F diag(eigenvalues)
    CF = C @ F
    np.testing.assert_allclose(CF, F * np.diag(F.T @ C @ F), atol=1e-12)
    with pytest.raises(ValueError):
        posgeom.geometry.fourier_basis(6, 3)


def test_fourier_match_bounds():
    F = posgeom.geometry.fourier_basis(20, 2)
    Q, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((4, 4)))
    assert posgeom.geometry.fourier_match(F @ Q, 2) == pytest.approx(1.0)  # rotation inside the span
    rnd = np.linalg.qr(np.random.default_rng(1).standard_normal((20, 4)))[0]
    assert 0.0 <= posgeom.geometry.fourier_match(rnd, 2) < 0.9
    with pytest.raises(ValueError, match="columns"):
        posgeom.geometry.fourier_match(F[:, :3], 2)


def test_circulant_eigenvalues_closed_form():
    n = 9
    half = np.array([0.0, 0.3, 0.5, 0.6, 0.65])
    g = np.concatenate([half, half[1:][::-1]])
    idx = np.arange(n)
    D = g[(idx[None, :] - idx[:, None]) % n]
    np.testing.assert_allclose(posgeom.geometry.circulant_eigenvalues(g), posgeom.classical_mds(D, k=1).eigenvalues, atol=1e-12)
    with pytest.raises(ValueError):
        posgeom.geometry.circulant_eigenvalues(np.array([0.1, 0.2, 0.2]))
