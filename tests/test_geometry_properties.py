"""Hostile inputs for every public geometry entry point (issue 15), and the numerics it found.

Hypothesis draws arrays of every shape from empty to small, of float64, float32, int, bool and complex
dtypes, with NaN, infinities, signed zeros, subnormals and values near the float64 limit. Each entry
point must return a correct result (checked against a naive oracle where one exists) with no NaN, or
raise the documented ``ValueError`` / ``TypeError``; nothing else, and never a silent change.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import posgeom.geometry as geo

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DOCUMENTED = (ValueError, TypeError)

hostile_floats = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.sampled_from([0.0, -0.0, 1.0, 5e-324, 1e-300, 1e155, 1e300, -1e155, 1.7976931348623157e308]),
)
dtypes = st.sampled_from([np.float64, np.float32, np.float16, np.int64, np.uint8, np.bool_, np.complex128])


@st.composite
def hostile_arrays(draw, min_dims=2, max_dims=2, max_side=6):
    dtype = draw(dtypes)
    shape = draw(hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=0, max_side=max_side))
    if dtype is np.complex128:
        elements = st.complex_numbers(allow_nan=False, allow_infinity=False, max_magnitude=1e6)
    elif dtype is np.float32:
        elements = st.floats(width=32, allow_nan=True, allow_infinity=True)
    elif dtype is np.float16:
        elements = st.floats(width=16, allow_nan=True, allow_infinity=True)
    elif dtype is np.uint8:
        elements = st.integers(0, 255)
    elif dtype is np.int64:
        elements = st.integers(-10, 10**6)
    elif dtype is np.bool_:
        elements = st.booleans()
    else:
        elements = hostile_floats
    return draw(hnp.arrays(dtype, shape, elements=elements))


def finite_outputs(result) -> None:
    """Every number in ``result`` (arrays, floats, dataclass fields) is free of NaN."""
    if dataclasses.is_dataclass(result):
        for f in dataclasses.fields(result):
            finite_outputs(getattr(result, f.name))
    elif isinstance(result, np.ndarray) and result.dtype.kind in "fc":
        assert not np.isnan(result).any()
    elif isinstance(result, (float, np.floating)):
        assert not np.isnan(result)
    elif isinstance(result, (tuple, list)):
        for r in result:
            finite_outputs(r)


def call(fn, *args, **kwargs):
    """``fn(...)`` or None when it raised a documented error; any other exception fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # an overflow or invalid value is a silent NaN in waiting
        warnings.simplefilter("error", np.exceptions.ComplexWarning)
        try:
            result = fn(*args, **kwargs)
        except DOCUMENTED:
            return None
    finite_outputs(result)
    return result


def naive_distances(P: np.ndarray) -> np.ndarray:
    """The oracle: ``math.dist`` of every pair (it scales internally, so it overflows only when the distance does)."""
    import math

    rows = np.asarray(P, dtype=np.float64).tolist()
    return np.array([[math.dist(a, b) for b in rows] for a in rows]).reshape(len(rows), len(rows))


def as_distance_matrix(X: np.ndarray) -> np.ndarray:
    """A valid distance matrix built from any finite real array (for entry points that need one)."""
    X = np.nan_to_num(np.real(np.asarray(X, dtype=np.complex128)), nan=0.0, posinf=1.0, neginf=-1.0)
    X = np.clip(X, -1e100, 1e100)
    return naive_distances(X)  # finite: at most about 1e101


# ------------------------------------------------------------------------------------ hostile inputs


@SETTINGS
@given(hostile_arrays())
def test_euclidean_distances_and_distances_of(P):
    D = call(geo.euclidean_distances, P)
    if D is not None:
        big = float(np.max(np.abs(P.astype(np.float64)))) if P.size else 0.0
        assert np.isfinite(D).all() or big > 1e307  # only a true overflow may be infinite
        oracle = naive_distances(np.asarray(P, dtype=np.float64))
        np.testing.assert_allclose(D, oracle, rtol=1e-7, atol=1e-9 * max(1.0, big))
    call(geo.distances_of, P)


@SETTINGS
@given(hostile_arrays(), st.sampled_from(geo.STRESS_NORMALIZATIONS))
def test_stress(X, normalization):
    for Dhat in (X, as_distance_matrix(X) if X.ndim == 2 and X.size else X):
        D = as_distance_matrix(X) if X.size else X
        value = call(geo.stress, D, Dhat, normalization)
        if value is not None:
            assert value >= 0


@SETTINGS
@given(hostile_arrays(), st.sampled_from(geo.HELLINGER_KINDS))
def test_hellinger_on_hostile_probabilities(P, kind):
    D = call(geo.hellinger_matrix, P, kind)
    if D is not None:
        assert D.shape == (P.shape[0], P.shape[0]) and (D >= 0).all() and np.allclose(D, D.T)
    call(geo.sqrt_marginals, P)
    if P.ndim == 2 and P.shape[0] >= 2:
        call(geo.hellinger_distance, P[0], P[1], kind)


@SETTINGS
@given(st.integers(1, 5), st.integers(1, 7), st.integers(0, 2**31), st.sampled_from([np.float64, np.float32]))
def test_hellinger_on_valid_probabilities_matches_the_naive_formula(n, v, seed, dtype):
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(n, v)) * 5
    P = (np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)).astype(dtype)  # a softmax in dtype
    if n < 2:
        with pytest.raises(ValueError, match="at least 2 positions"):
            geo.hellinger_matrix(P)
        return
    D = geo.hellinger_matrix(P)
    S = np.sqrt(P.astype(np.float64))
    np.testing.assert_allclose(D, naive_distances(S), atol=1e-10)


@SETTINGS
@given(hostile_arrays(), st.integers(-1, 7), st.integers(-1, 9))
def test_mds_family_on_hostile_input(X, k, d):
    """Every entry point taking a distance matrix or an encoding, given anything."""
    call(geo.double_centered_gram, X)
    call(geo.classical_mds, X)
    call(geo.classical_mds, X, k)
    call(geo.mds_stress_curve, X)
    for criterion in geo.EFFECTIVE_RANK_CRITERIA:
        call(geo.effective_rank, X, criterion)
    call(geo.low_rank_factors, X, k, d)
    call(geo.smacof, X, k, max_iter=10)
    call(geo.separation, X)
    call(geo.lift, X, d)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the documented NaN of an all-tied input
        for fn in (geo.violation_rate, geo.spearman):
            try:
                fn(X, X)
            except DOCUMENTED:
                pass


@SETTINGS
@given(hostile_arrays())
def test_mds_family(X):
    D = call(geo.double_centered_gram, X)
    res = call(geo.classical_mds, X)
    if X.ndim == 2 and X.size and np.isfinite(np.real(X)).all():
        D = as_distance_matrix(X)
        if D.shape[0] >= 2 and D.max() > 0:
            res = call(geo.classical_mds, D)
            if res is not None:
                assert res.embedding.shape[0] == D.shape[0]
            call(geo.mds_stress_curve, D)
            for criterion in geo.EFFECTIVE_RANK_CRITERIA:
                call(geo.effective_rank, D, criterion)
            call(geo.low_rank_factors, D, 1, 4, as_distances=True)
            call(geo.smacof, D, 2, max_iter=20)
            for fn in (geo.violation_rate, geo.spearman):  # documented: NaN with a warning when all tied
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    value = fn(D, D)
                assert not np.isnan(value) or caught
            call(geo.separation, D, as_distances=True)
    call(geo.lift, X, 8)
    if X.ndim == 2:
        call(geo.effective_rank, X.ravel(), "tol")


@SETTINGS
@given(hostile_arrays(min_dims=1, max_dims=2), st.integers(-2, 8), st.integers(-2, 12))
def test_counts_marginals_noise(seqs, n, v):
    counts = call(geo.positional_counts, seqs, n, v)
    call(geo.PositionalCounts.from_array, seqs)
    if counts is not None:
        assert counts.counts.shape == (n, v) and (counts.reach <= counts.n_sequences).all()
        marg = call(geo.positional_marginals, counts)
        if marg is not None:
            np.testing.assert_allclose(marg.probs.sum(axis=1), 1.0)
            call(geo.hellinger_matrix, marg)
            call(geo.noise_floor, counts, "bootstrap", 2, 0)


@SETTINGS
@given(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-5, 5), st.just(1e308)))
def test_marginals_alpha(alpha):
    counts = geo.PositionalCounts.from_array(np.array([[3, 0, 1], [0, 2, 2]]))
    marg = call(geo.positional_marginals, counts, alpha=alpha)
    if marg is not None:
        assert alpha >= 0 and np.isfinite(alpha)
        np.testing.assert_allclose(marg.probs.sum(axis=1), 1.0)
        assert (marg.probs > 0).all() if alpha > 1e-300 else True  # a subnormal alpha may underflow


# ------------------------------------------------------------------------------------ the numerics found


def test_float32_softmax_rows_are_accepted():
    P = np.array([[0.1, 0.2, 0.7000000298], [0.5, 0.25, 0.25]], dtype=np.float32)
    assert abs(float(P[0].astype(np.float64).sum()) - 1.0) > 1e-8  # the rounding that used to be rejected
    D = geo.hellinger_matrix(P)
    assert D.shape == (2, 2) and np.isfinite(D).all()
    with pytest.raises(ValueError, match="sum to 1"):
        geo.hellinger_matrix(np.array([[0.1, 0.2, 0.7001], [0.5, 0.25, 0.25]], dtype=np.float32))
    with pytest.raises(ValueError, match="sum to 1"):  # float64 keeps its tight tolerance
        geo.hellinger_matrix(np.array([[0.1, 0.2, 0.7000000298], [0.5, 0.25, 0.25]]))


def test_huge_finite_inputs_give_finite_distances_and_stress():
    P = np.array([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]]) * 1e155
    D = geo.euclidean_distances(P)
    np.testing.assert_allclose(D, np.array([[0, 5, 10], [5, 0, 5], [10, 5, 0]]) * 1e155, rtol=1e-12)
    small = np.array([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]])
    assert geo.stress(D, P * 1.5) == pytest.approx(geo.stress(geo.euclidean_distances(small), small * 1.5), rel=1e-12)
    with pytest.raises(ValueError, match="too large to square"):
        geo.classical_mds(D)


def test_complex_input_is_a_type_error():
    P = np.array([[1 + 2j, 0], [0, 1j]])
    for fn in (geo.euclidean_distances, geo.hellinger_matrix, geo.sqrt_marginals):
        with pytest.raises(TypeError, match="complex"):
            fn(P)
    with pytest.raises(TypeError, match="complex"):
        geo.stress(np.array([[0, 1.0], [1, 0]]), np.array([[0, 1 + 1j], [1 - 1j, 0]]))
    with pytest.raises(TypeError, match="complex"):
        geo.hellinger_distance(np.array([0.5, 0.5 + 0j]), np.array([0.5, 0.5]))
    with pytest.raises(TypeError, match="complex"):
        geo.effective_rank(np.array([2.0, 1j]), "tol")


def test_non_integer_ignore_ids_are_rejected():
    with pytest.raises(ValueError, match="integer token ids; got 1.7"):
        geo.positional_counts([[1, 2, 3]], 3, 4, ignore_ids=[1.7])
    with pytest.raises(ValueError, match="integer token ids"):
        geo.positional_counts([[1, 2, 3]], 3, 4, ignore_ids=[True])
    counts = geo.positional_counts([[1, 2, 3]], 3, 4, ignore_ids=[np.int64(1)])
    assert counts.ignore_ids == (1,) and counts.counts[0, 1] == 0


def test_huge_alpha_gives_uniform_rows():
    counts = geo.PositionalCounts.from_array(np.array([[3, 0, 1], [0, 2, 2]]))
    marg = geo.positional_marginals(counts, alpha=1e308)
    np.testing.assert_allclose(marg.probs, 1.0 / 3.0)
    small = geo.positional_marginals(counts, alpha=0.5)
    np.testing.assert_allclose(small.probs[0], np.array([3.5, 0.5, 1.5]) / 5.5)


def test_impossible_sizes_are_a_value_error_with_the_size():
    with pytest.raises(ValueError, match=r"n_positions = 1,099,511,627,776 .* GiB"):
        geo.positional_counts([[1, 2, 3]], 2**40, 4)


def test_results_beyond_float64_are_value_errors_and_near_the_limit_are_exact():
    D = np.array([[0.0, 1e-160], [1e-160, 0.0]])
    with pytest.raises(ValueError, match="exceeds the float64 range"):
        geo.stress(D, np.array([[0.0, 1e160], [1e160, 0.0]]))
    assert geo.stress(D, D * 3.0) == pytest.approx(4.0)  # tiny distances: no underflow to "all zero"
    big = np.array([[1.6e308], [1.7e308], [1.5e308]])
    sep = geo.separation(big)
    assert sep.raw == pytest.approx(1e307) and sep.median == pytest.approx(1e307)
    with pytest.raises(ValueError, match="exceed the float64 range"):
        geo.euclidean_distances(np.array([[-1.7e308], [1.7e308]]))
    np.testing.assert_allclose(geo.lift(np.array([[1e308, 0.0], [0.0, 1e308]]), 2, seed=None),
                               [[1e308, 0.0], [0.0, 1e308]])
    with pytest.raises(ValueError, match="probabilities are <= 1"):
        geo.hellinger_matrix(np.array([[8.9e307, 8.9e307], [0.5, 0.5]]))
