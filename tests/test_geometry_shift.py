"""Shift structure (posgeom.geometry.shift) against naive loops and exact cases."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.linalg

from posgeom import encodings as enc
from posgeom.geometry import (
    circulant_deviation,
    euclidean_distances,
    offset_means,
    toeplitz_deviation,
    toeplitz_projection,
    toeplitz_spread,
)


def test_offset_means_is_the_class_mean_and_checks_its_labels():
    rng = np.random.default_rng(3)
    D = rng.random((5, 5))
    labels = rng.integers(0, 3, size=(5, 5))
    labels[0, :3] = [0, 1, 2]
    T, means = offset_means(D, labels)
    for c in range(3):
        assert means[c] == pytest.approx(D[labels == c].mean(), abs=1e-15)
        assert np.all(T[labels == c] == means[c])
    with pytest.raises(ValueError, match="empty"):
        offset_means(D, np.where(labels == 1, 3, labels))
    with pytest.raises(ValueError, match="integer labels"):
        offset_means(D, labels[:4])


def _toeplitz_naive(D):
    n = D.shape[0]
    T = np.zeros_like(D)
    for i in range(n):
        for j in range(n):
            vals = [D[k, k + j - i] for k in range(n) if 0 <= k + j - i < n]
            T[i, j] = np.mean(vals)
    return np.linalg.norm(D - T) / np.linalg.norm(D)


def _circulant_naive(D):
    n = D.shape[0]
    C = np.zeros_like(D)
    for i in range(n):
        for j in range(n):
            C[i, j] = np.mean([D[k, (k + j - i) % n] for k in range(n)])
    return np.linalg.norm(D - C) / np.linalg.norm(D)


def test_toeplitz_and_circulant_deviation_against_loops():
    rng = np.random.default_rng(0)
    A = rng.random((7, 7))
    assert toeplitz_deviation(A) == pytest.approx(_toeplitz_naive(A))
    assert circulant_deviation(A) == pytest.approx(_circulant_naive(A))
    T = scipy.linalg.toeplitz(rng.random(7))
    assert toeplitz_deviation(T) < 1e-14 and circulant_deviation(T) > 1e-3
    C = scipy.linalg.circulant(rng.random(7))
    # every circulant matrix is Toeplitz
    assert circulant_deviation(C) < 1e-14 and toeplitz_deviation(C) < 1e-14
    with pytest.raises(ValueError, match="square"):
        toeplitz_deviation(np.zeros((2, 3)))


def test_toeplitz_projection_matches_a_naive_loop():
    rng = np.random.default_rng(0)
    D = euclidean_distances(rng.standard_normal((9, 3)))
    T, profile, r2 = toeplitz_projection(D)
    n = D.shape[0]
    for i, j in itertools.product(range(n), range(n)):
        k = abs(i - j)
        vals = [D[a, b] for a in range(n) for b in range(n) if abs(a - b) == k]
        assert T[i, j] == pytest.approx(np.mean(vals), abs=1e-12)
    iu = np.triu_indices(n, 1)
    naive = 1 - np.sum((D[iu] - T[iu]) ** 2) / np.sum((D[iu] - D[iu].mean()) ** 2)
    assert r2 == pytest.approx(naive, abs=1e-12)
    assert 0 <= r2 < 1


def test_toeplitz_projection_of_an_offset_function_is_exact():
    off = np.abs(np.subtract.outer(np.arange(10), np.arange(10))).astype(float)
    D = np.sqrt(off)
    T, profile, r2 = toeplitz_projection(D)
    assert np.allclose(T, D)
    assert r2 == pytest.approx(1.0)
    assert np.allclose(profile, np.sqrt(np.arange(10)))


def test_toeplitz_spread_against_a_loop():
    rng = np.random.default_rng(0)
    A = rng.random((7, 7))
    D = A + A.T
    np.fill_diagonal(D, 0)
    spread = 0.0
    for k in range(1, 7):
        diag = [D[i, i + k] for i in range(7 - k)]
        spread = max(spread, max(diag) - min(diag))
    assert toeplitz_spread(D) == pytest.approx(spread / D.max(), abs=1e-15)
    assert toeplitz_spread(enc.alibi_distances(20, 8)) == 0.0
    assert toeplitz_spread(np.zeros((4, 4))) == 0.0
    with pytest.raises(ValueError, match="square"):
        toeplitz_spread(np.zeros((3, 4)))


def test_a_function_of_the_offset_is_exact_for_every_measure():
    idx = np.arange(12)
    D = np.sqrt(np.abs(idx[:, None] - idx[None, :]))
    assert toeplitz_projection(D)[2] == pytest.approx(1.0)
    assert toeplitz_deviation(D) < 1e-15 and toeplitz_spread(D) == 0.0
    assert circulant_deviation(D) > 1e-3  # |i - j| does not wrap around
    with pytest.raises(ValueError, match="n >= 3"):
        toeplitz_projection(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="NaN"):
        toeplitz_deviation(np.full((3, 3), np.nan))
