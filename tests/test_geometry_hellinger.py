"""Hellinger distances (SPEC section 1, Eq. 3) against an explicit double loop and scipy's pdist."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.spatial.distance import pdist, squareform

from posgeom.geometry import (
    PositionalCounts,
    euclidean_distances,
    hellinger_distance,
    hellinger_matrix,
    positional_counts,
    positional_marginals,
    sqrt_marginals,
)
from posgeom.geometry import _pairwise


def loop_hellinger(mu):
    """d_ij = sqrt(sum_w (sqrt(mu_i(w)) - sqrt(mu_j(w)))^2), one pair and one word at a time."""
    n, v = mu.shape
    D = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            D[i, j] = np.sqrt(sum((np.sqrt(mu[i, w]) - np.sqrt(mu[j, w])) ** 2 for w in range(v)))
    return D


def random_marginals(rng, n, v, sparsity=0.5):
    mu = rng.dirichlet(np.full(v, 0.7), size=n)
    mu[rng.random((n, v)) < sparsity] = 0
    mu[mu.sum(axis=1) == 0, 0] = 1
    return mu / mu.sum(axis=1, keepdims=True)


def test_matches_double_loop():
    rng = np.random.default_rng(0)
    mu = random_marginals(rng, 7, 11)
    np.testing.assert_allclose(hellinger_matrix(mu), loop_hellinger(mu), rtol=0, atol=1e-13)


def test_bc_form_and_kinds():
    rng = np.random.default_rng(1)
    mu = random_marginals(rng, 6, 20)
    bc = np.sqrt(mu[:, None, :] * mu[None, :, :]).sum(axis=2)  # BC_ij = sum_w sqrt(mu_i mu_j)
    chord = hellinger_matrix(mu)
    np.testing.assert_allclose(chord, np.sqrt(np.maximum(2 - 2 * bc, 0)), atol=1e-7)
    np.testing.assert_allclose(hellinger_matrix(mu, kind="normalized"), chord / np.sqrt(2), atol=1e-15)
    geo = hellinger_matrix(mu, kind="geodesic")
    off = ~np.eye(6, dtype=bool)
    np.testing.assert_allclose(geo[off], 2 * np.arccos(np.clip(bc[off], -1, 1)), atol=1e-7)
    assert np.all(np.diag(geo) == 0)


def test_closed_forms_disjoint_and_identical():
    mu = np.array([[1.0, 0, 0], [0, 1.0, 0], [0, 0.5, 0.5], [1.0, 0, 0]])
    D = hellinger_matrix(mu)
    assert D[0, 1] == pytest.approx(np.sqrt(2), abs=1e-15)  # disjoint supports: sqrt 2
    assert D[0, 3] == 0.0  # identical positions: exactly 0
    assert hellinger_matrix(mu, kind="normalized")[0, 1] == pytest.approx(1.0, abs=1e-15)
    assert hellinger_matrix(mu, kind="geodesic")[0, 1] == pytest.approx(np.pi, abs=1e-12)
    # d(delta_1, (delta_1 + delta_2) / 2)^2 = 2 - 2 sqrt(1/2)
    assert D[1, 2] == pytest.approx(np.sqrt(2 - np.sqrt(2)), abs=1e-14)
    assert hellinger_distance(mu[0], mu[1]) == pytest.approx(np.sqrt(2))
    assert hellinger_distance(mu[1], mu[2], kind="geodesic") == pytest.approx(2 * np.arccos(np.sqrt(0.5)))


def test_near_identical_rows_match_pdist_to_1e_12():
    """Catastrophic cancellation in 2 - 2 BC is refined away (issue: <= 1e-9 against pdist)."""
    rng = np.random.default_rng(2)
    mu = random_marginals(rng, 30, 400, sparsity=0.2)
    for k, eps in enumerate([1e-4, 1e-7, 1e-10, 1e-13]):
        mu[10 + k] = (1 - eps) * mu[k] + eps * mu[20 + k]
    mu[25] = mu[5]
    ref = squareform(pdist(np.sqrt(mu)))
    D = hellinger_matrix(mu)
    assert np.max(np.abs(D - ref)) <= 1e-12
    assert D[5, 25] == 0.0
    # the naive Gram formula would not get the tiny distances right
    S = np.sqrt(mu)
    naive = np.sqrt(np.maximum(2 - 2 * S @ S.T, 0))
    assert np.max(np.abs(naive - ref)) > 1e-9


def test_counts_marginals_and_probabilities_agree():
    rng = np.random.default_rng(3)
    seqs = [rng.integers(0, 40, size=int(rng.integers(5, 30))).tolist() for _ in range(200)]
    c = positional_counts(seqs, 6, 40)
    m = positional_marginals(c)
    D_counts = hellinger_matrix(c)
    np.testing.assert_allclose(hellinger_matrix(m), D_counts, atol=1e-14)
    np.testing.assert_allclose(hellinger_matrix(m.probs), D_counts, atol=1e-14)
    np.testing.assert_allclose(hellinger_matrix(sp.csr_matrix(m.probs)), D_counts, atol=1e-14)
    np.testing.assert_allclose(D_counts, loop_hellinger(m.probs), atol=1e-13)
    np.testing.assert_allclose(sqrt_marginals(c), np.sqrt(m.probs), atol=1e-15)
    # smoothed marginals go through the dense path
    ms = positional_marginals(c, alpha=0.1)
    np.testing.assert_allclose(hellinger_matrix(ms), loop_hellinger(ms.probs), atol=1e-13)


@pytest.mark.parametrize("fraction", [1, 4, 10**6])
def test_sparse_hybrid_split_matches_pdist(monkeypatch, fraction):
    """Columns split between the dense dsyrk block and the sparse product: every split gives the same."""
    monkeypatch.setattr(_pairwise, "SPARSE_COL_FRACTION", fraction)
    rng = np.random.default_rng(4)
    p = 1.0 / np.arange(1, 301) ** 1.1
    seqs = [rng.choice(300, size=25, p=p / p.sum()).tolist() for _ in range(60)]
    c = positional_counts(seqs, 25, 300)
    ref = squareform(pdist(np.sqrt(positional_marginals(c).probs)))
    assert np.max(np.abs(hellinger_matrix(c) - ref)) <= 1e-12


def test_sparse_gram_kernels_against_dense_product(monkeypatch):
    """gram() of a sparse matrix: light columns (compiled outer products) + heavy ones (dsyrk) = S S^T,
    also for a non-canonical CSR (duplicates, unsorted columns), which is left unchanged."""
    monkeypatch.setattr(_pairwise, "SPARSE_COL_FRACTION", 3)
    rng = np.random.default_rng(8)
    dense = rng.random((40, 70)) * (rng.random((40, 70)) < np.linspace(0.02, 0.9, 70))
    np.testing.assert_allclose(_pairwise.gram(sp.csr_matrix(dense)), dense @ dense.T, rtol=1e-13, atol=1e-13)
    rows, cols = np.nonzero(dense)
    vals = dense[rows, cols]
    # split every entry in two halves stored separately, in a shuffled order
    order = rng.permutation(2 * rows.size)
    coo = sp.coo_matrix(
        (np.r_[vals / 2, vals / 2][order], (np.r_[rows, rows][order], np.r_[cols, cols][order])), shape=dense.shape
    )
    messy = sp.csr_matrix((coo.data, coo.col, np.r_[0, np.cumsum(np.bincount(coo.row, minlength=40))]), shape=dense.shape)
    order_rows = np.argsort(coo.row, kind="stable")
    messy = sp.csr_matrix((coo.data[order_rows], coo.col[order_rows], messy.indptr), shape=dense.shape)
    before = (messy.data.copy(), messy.indices.copy())
    assert not messy.has_canonical_format
    np.testing.assert_allclose(_pairwise.gram(messy), dense @ dense.T, rtol=1e-13, atol=1e-13)
    np.testing.assert_array_equal(messy.data, before[0])
    np.testing.assert_array_equal(messy.indices, before[1])


@pytest.mark.parametrize("tile_rows", [1, 5, 16, 64, 1000])
def test_tiled_sparse_gram_against_dense_product(monkeypatch, tile_rows):
    """The tiled sparse product (tiles of tile_rows rows, ragged last block, tiles larger than n) gives
    S S^T like the dense product and the untiled kernel, on one thread and on several."""
    monkeypatch.setattr(_pairwise, "SPARSE_COL_FRACTION", 3)
    rng = np.random.default_rng(9)
    dense = rng.random((83, 150)) * (rng.random((83, 150)) < np.linspace(0.01, 0.8, 150))
    dense[:, 7] = 0  # an unused column
    S = sp.csr_matrix(dense)
    untiled = _pairwise.gram(S, tile_rows=0)
    for threads in (1, 3):
        monkeypatch.setattr(_pairwise, "_n_threads", lambda threads=threads: threads)
        tiled = _pairwise.gram(S, tile_rows=tile_rows)
        np.testing.assert_allclose(tiled, dense @ dense.T, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(tiled, untiled, rtol=1e-13, atol=1e-13)
        assert np.array_equal(tiled, tiled.T)


def test_large_n_takes_the_tiled_path_and_matches_pdist(monkeypatch):
    """n past TILE_MIN_N: hellinger_matrix (tiled Gram, block mirror) against pdist, exactly symmetric."""
    calls = []
    kernel = _pairwise._light_gram
    monkeypatch.setattr(_pairwise, "_light_gram", lambda *a: calls.append(a[-1]) or kernel(*a))
    rng = np.random.default_rng(10)
    n = _pairwise.TILE_MIN_N + 37
    p = 1.0 / np.arange(1, 401) ** 1.1
    seqs = [((rng.choice(400, size=n, p=p / p.sum()) + np.arange(n) // 50) % 400).tolist() for _ in range(30)]
    c = positional_counts(seqs, n, 400)
    D = hellinger_matrix(c)
    assert calls == [_pairwise.TILE_ROWS]
    ref = squareform(pdist(np.sqrt(positional_marginals(c).probs)))
    assert np.max(np.abs(D - ref)) <= 1e-12
    assert np.array_equal(D, D.T) and not np.diag(D).any()
    with pytest.raises(ValueError, match=r"tile_rows \(0: untiled\) must be an integer >= 0"):
        _pairwise.gram(sp.csr_matrix(np.eye(3)), tile_rows=-1)


def test_empty_positions_need_an_explicit_choice():
    c = PositionalCounts.from_array(np.array([[1, 1], [0, 0], [2, 0]]))
    with pytest.raises(ValueError, match=r"empty \(N_i = 0\).*\[1\]"):
        hellinger_matrix(c)
    D = hellinger_matrix(positional_marginals(c))
    assert D.shape == (2, 2)


@pytest.mark.parametrize(
    "mu, match",
    [
        (np.array([[0.5, 0.5], [1.2, -0.2]]), "negative"),
        (np.array([[0.5, 0.5], [np.nan, 0.5]]), "NaN"),
        (np.array([[0.5, 0.5], [0.5, 0.4]]), "sum to 1"),
        (np.array([[0.5, 0.5], [0.0, 0.0]]), "sum to 1"),
        (np.array([[1.0, 0.0]]), "at least 2"),
        (np.array([0.5, 0.5]), "2-D"),
    ],
)
def test_bad_probabilities(mu, match):
    with pytest.raises(ValueError, match=match):
        hellinger_matrix(mu)


def test_bad_kind():
    with pytest.raises(ValueError, match="kind"):
        hellinger_matrix(np.eye(2), kind="angle")


@settings(max_examples=50, deadline=None)
@given(
    arrays(np.float64, st.tuples(st.integers(2, 7), st.integers(1, 9)), elements=st.floats(0, 1)),
)
def test_property_metric_axioms(raw):
    raw = raw.copy()
    raw[raw.sum(axis=1) == 0, 0] = 1.0
    mu = raw / raw.sum(axis=1, keepdims=True)
    D = hellinger_matrix(mu)
    assert np.array_equal(D, D.T)
    assert np.all(np.diag(D) == 0)
    assert np.all(D >= 0) and np.all(D <= np.sqrt(2))
    # triangle inequality d_ik <= d_ij + d_jk
    assert np.all(D[:, None, :] <= D[:, :, None] + D[None, :, :] + 1e-12)
    np.testing.assert_allclose(D, squareform(pdist(np.sqrt(mu))), atol=1e-12)
    Dn = hellinger_matrix(mu, kind="normalized")
    assert np.all(Dn <= 1.0)
    Dg = hellinger_matrix(mu, kind="geodesic")
    assert np.all(Dg <= np.pi + 1e-12)


# ---------------------------------------------------------------- euclidean_distances


def test_euclidean_distances_match_pdist_with_large_offsets():
    rng = np.random.default_rng(5)
    P = rng.normal(size=(50, 16)) * 1e-3 + 1e3  # large common offset: centring keeps accuracy
    P[7] = P[3]
    P[8] = P[4] + 1e-9
    D = euclidean_distances(P)
    np.testing.assert_allclose(D, squareform(pdist(P)), rtol=1e-9, atol=1e-15)
    assert D[3, 7] == 0.0
    assert np.array_equal(D, D.T) and np.all(np.diag(D) == 0)


def test_euclidean_distances_constant_rows_and_errors():
    assert np.all(euclidean_distances(np.ones((5, 3))) == 0)  # NoPE: every row equal
    assert euclidean_distances(np.zeros((1, 2))).shape == (1, 1)
    with pytest.raises(ValueError, match="2-D"):
        euclidean_distances(np.ones(4))
    with pytest.raises(ValueError, match="NaN"):
        euclidean_distances(np.array([[0.0, np.inf]]))
    with pytest.raises(ValueError, match="no rows"):
        euclidean_distances(np.zeros((0, 3)))
