"""Violation rate, Spearman and separation (SPEC section 1) against brute force."""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from posgeom.geometry import euclidean_distances, separation, spearman, violation_rate


def brute_counts(D, Dh):
    iu = np.triu_indices(D.shape[0], k=1)
    a, b = D[iu], Dh[iu]
    conc = disc = 0
    for p, q in itertools.combinations(range(a.size), 2):
        s = np.sign(a[p] - a[q]) * np.sign(b[p] - b[q])
        conc += s > 0
        disc += s < 0
    return int(conc), int(disc)


def integer_distances(rng, n, levels):
    """Symmetric zero-diagonal matrix with few distinct values: many ties."""
    M = rng.integers(1, levels + 1, size=(n, n)).astype(float)
    M = np.triu(M, 1)
    return M + M.T


def test_matches_brute_force_with_and_without_ties():
    rng = np.random.default_rng(0)
    for trial in range(6):
        n = int(rng.integers(3, 9))
        if trial % 2:
            D, Dh = integer_distances(rng, n, 3), integer_distances(rng, n, 2)
        else:
            D, Dh = euclidean_distances(rng.normal(size=(n, 3))), euclidean_distances(rng.normal(size=(n, 2)))
        conc, disc = brute_counts(D, Dh)
        rate, counts = violation_rate(D, Dh, return_counts=True)
        assert (counts.concordant, counts.discordant) == (conc, disc)
        assert rate == disc / (conc + disc)
        assert counts.rate == rate


@settings(max_examples=30, deadline=None)
@given(st.integers(3, 7), st.integers(1, 4), st.integers(1, 4), st.integers(0, 2**31))
def test_property_exact_counts(n, l1, l2, seed):
    rng = np.random.default_rng(seed)
    D, Dh = integer_distances(rng, n, l1 + 1), integer_distances(rng, n, l2)
    conc, disc = brute_counts(D, Dh)
    if conc + disc == 0:
        with pytest.warns(RuntimeWarning, match="undefined"):
            assert np.isnan(violation_rate(D, Dh))
    else:
        _, counts = violation_rate(D, Dh, return_counts=True)
        assert (counts.concordant, counts.discordant) == (conc, disc)


def test_tau_a_relation_on_untied_data():
    rng = np.random.default_rng(1)
    D = euclidean_distances(rng.normal(size=(30, 4)))
    Dh = euclidean_distances(rng.normal(size=(30, 4)))
    iu = np.triu_indices(30, 1)
    tau = scipy.stats.kendalltau(D[iu], Dh[iu]).statistic  # tau-b = tau-a without ties
    assert violation_rate(D, Dh) == pytest.approx((1 - tau) / 2, abs=1e-12)


def test_reference_values():
    rng = np.random.default_rng(2)
    P = rng.normal(size=(40, 3))
    D = euclidean_distances(P)
    assert violation_rate(D, P) == 0.0  # the encoding reproduces the order exactly
    reversed_ = np.where(np.eye(40, dtype=bool), 0.0, D.max() + 1 - D)
    assert violation_rate(D, reversed_) == 1.0
    rates = [violation_rate(D, rng.normal(size=(40, 8))) for _ in range(5)]
    assert abs(np.mean(rates) - 0.5) < 0.05  # random encodings: about 50%
    with pytest.warns(RuntimeWarning, match="undefined"):
        assert np.isnan(violation_rate(D, np.zeros((40, 2))))


def test_larger_n_is_fast_and_exact_against_scipy():
    rng = np.random.default_rng(3)
    D = euclidean_distances(rng.normal(size=(200, 5)))
    Dh = np.round(euclidean_distances(rng.normal(size=(200, 2))), 1)  # ties in Dhat
    _, c = violation_rate(D, Dh, return_counts=True)
    iu = np.triu_indices(200, 1)
    m = iu[0].size
    n0 = m * (m - 1) // 2
    assert c.total == n0 and c.tied_D == 0
    assert c.concordant + c.discordant == n0 - c.tied_Dhat
    tau_b = scipy.stats.kendalltau(D[iu], Dh[iu]).statistic
    assert (c.concordant - c.discordant) / np.sqrt(n0 * (n0 - c.tied_Dhat)) == pytest.approx(tau_b, rel=1e-12)


def test_spearman_matches_scipy():
    rng = np.random.default_rng(4)
    D = euclidean_distances(rng.normal(size=(15, 3)))
    P = rng.normal(size=(15, 2))
    iu = np.triu_indices(15, 1)
    assert spearman(D, P) == pytest.approx(scipy.stats.spearmanr(D[iu], euclidean_distances(P)[iu]).statistic)
    assert spearman(D, D) == pytest.approx(1.0)


def test_separation_closed_forms():
    simplex = np.eye(4)  # every pair at distance sqrt 2
    s = separation(simplex)
    assert s.raw == pytest.approx(np.sqrt(2)) and s.normalized == pytest.approx(1.0)
    line = np.arange(5.0)[:, None] * np.array([[3.0, 4.0]])  # distances 5 |i - j|
    s = separation(line)
    assert s.raw == pytest.approx(5.0) and s.median == pytest.approx(10.0) and s.normalized == pytest.approx(0.5)
    assert s.pair == (0, 1)
    dup = np.vstack([line, line[2]])
    s = separation(dup)
    assert s.raw == 0.0 and s.normalized == 0.0 and s.pair == (2, 5)
    s_scaled = separation(7.0 * line)
    assert s_scaled.normalized == pytest.approx(0.5)
    Dline = euclidean_distances(line)
    assert separation(Dline).raw == pytest.approx(5.0)  # a distance matrix is read as distances
    with pytest.raises(ValueError, match="at least 2"):
        separation(np.zeros((1, 3)))


def test_bad_inputs():
    D = euclidean_distances(np.arange(4.0)[:, None])
    with pytest.raises(ValueError, match="rows but D describes"):
        violation_rate(D, np.zeros((3, 2)))
    with pytest.raises(ValueError, match="not symmetric"):
        spearman(D + np.triu(np.ones((4, 4)), 1), D)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        violation_rate(D, D)  # no spurious warning on a well-defined case
