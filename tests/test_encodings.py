"""posgeom.encodings against closed forms, naive loops and the reference ALiBi code."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.distance import cdist
from sklearn.metrics import pairwise_distances

from posgeom import encodings as enc
from posgeom.geometry import kernel_distances


def reference_get_slopes(n):
    """``get_slopes`` of the ALiBi reference implementation (ofirpress/attention_with_linear_biases)."""

    def get_slopes_power_of_2(n):
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        ratio = start
        return [start * ratio**i for i in range(n)]

    if math.log2(n).is_integer():
        return get_slopes_power_of_2(n)
    closest_power_of_2 = 2 ** math.floor(math.log2(n))
    return (
        get_slopes_power_of_2(closest_power_of_2)
        + reference_get_slopes(2 * closest_power_of_2)[0::2][: n - closest_power_of_2]
    )


@pytest.mark.parametrize("layout", ["interleaved", "concatenated"])
def test_sinusoidal_matches_the_formula_elementwise(layout):
    n, d = 17, 12
    P = enc.sinusoidal_table(n, d, layout=layout)
    for pos in range(n):
        for i in range(d // 2):
            angle = pos / 10000 ** (2 * i / d)
            s_col, c_col = (2 * i, 2 * i + 1) if layout == "interleaved" else (i, d // 2 + i)
            assert P[pos, s_col] == pytest.approx(math.sin(angle), abs=1e-12)
            assert P[pos, c_col] == pytest.approx(math.cos(angle), abs=1e-12)


def test_sinusoidal_layouts_are_a_column_permutation_with_identical_distances():
    n, d = 30, 16
    a = enc.sinusoidal_table(n, d, layout="interleaved")
    b = enc.sinusoidal_table(n, d, layout="concatenated")
    perm = np.r_[np.arange(0, d, 2), np.arange(1, d, 2)]
    np.testing.assert_array_equal(a[:, perm], b)
    np.testing.assert_allclose(
        enc.sinusoidal_distances(n, d, layout="interleaved"), enc.sinusoidal_distances(n, d, layout="concatenated"),
        atol=1e-12,
    )
    np.testing.assert_allclose(enc.sinusoidal_distances(n, d), cdist(a, a), atol=1e-7)


def test_sinusoidal_distance_closed_form_depends_only_on_offset():
    n, d, base = 25, 10, 100.0
    D = enc.sinusoidal_distances(n, d, base=base)
    omega = base ** (-2 * np.arange(d // 2) / d)
    for i in range(n):
        for j in range(n):
            # ||p_i - p_j||^2 = sum_k 2 - 2 cos((i-j) omega_k)
            expected = math.sqrt(max(sum(2 - 2 * math.cos((i - j) * w) for w in omega), 0.0))
            assert D[i, j] == pytest.approx(expected, abs=1e-7)


def test_rope_kernel_naive_loop_and_distances():
    d_head, base, n = 8, 10000.0, 20
    theta = [base ** (-2 * k / d_head) for k in range(d_head // 2)]
    D = enc.rope_distances(n, d_head, base)
    for i in range(n):
        for j in range(n):
            K = sum(math.cos((i - j) * t) for t in theta) / len(theta)
            assert enc.rope_kernel(i - j, d_head, base) == pytest.approx(K, abs=1e-12)
            assert D[i, j] == pytest.approx(math.sqrt(max(2 * (1 - K), 0.0)), abs=1e-7)
    assert np.all(np.diag(D) == 0) and np.allclose(D, D.T)


def test_rope_is_sinusoidal_of_width_d_head_over_sqrt_m():
    n, d_head = 40, 16
    np.testing.assert_allclose(
        enc.rope_distances(n, d_head), enc.sinusoidal_distances(n, d_head) / math.sqrt(d_head // 2), atol=1e-7
    )


def test_rope_distance_is_the_distance_of_rotated_unit_vectors_averaged():
    """Rotating a unit pair by i*theta and j*theta: |R_i u - R_j u|^2 = 2 - 2 cos((i-j) theta), averaged over k."""
    d_head, n = 6, 9
    theta = enc.rope_frequencies(d_head)
    D = enc.rope_distances(n, d_head)
    for i in range(n):
        for j in range(n):
            total = 0.0
            for t in theta:
                a = np.array([math.cos(i * t), math.sin(i * t)])
                b = np.array([math.cos(j * t), math.sin(j * t)])
                total += np.sum((a - b) ** 2)
            assert D[i, j] ** 2 == pytest.approx(total / len(theta), abs=1e-10)


@pytest.mark.parametrize("heads", [8, 12])
def test_alibi_slopes_match_the_reference_implementation(heads):
    np.testing.assert_allclose(enc.alibi_slopes(heads), reference_get_slopes(heads), rtol=1e-14)


def test_alibi_slopes_published_values_for_8_and_12_heads():
    # Press et al. (2022): for 8 heads the slopes are 1/2^1 ... 1/2^8.
    np.testing.assert_allclose(enc.alibi_slopes(8), [2.0**-k for k in range(1, 9)], rtol=1e-14)
    # 12 heads: the 8 slopes, then every other slope of the 16-head sequence 2^(-k/2): k = 1, 3, 5, 7.
    np.testing.assert_allclose(
        enc.alibi_slopes(12), [2.0**-k for k in range(1, 9)] + [2.0 ** (-k / 2) for k in (1, 3, 5, 7)], rtol=1e-14
    )


def test_alibi_slopes_every_head_count_up_to_64():
    for h in range(1, 65):
        np.testing.assert_allclose(enc.alibi_slopes(h), reference_get_slopes(h), rtol=1e-13, err_msg=f"{h} heads")


def test_alibi_bias_and_distances():
    n, heads = 7, 12
    bias = enc.alibi_bias(n, heads)
    slopes = reference_get_slopes(heads)
    for h in range(heads):
        for i in range(n):
            for j in range(n):
                assert bias[h, i, j] == pytest.approx(-slopes[h] * abs(i - j))
    D = enc.alibi_distances(n, heads)
    np.testing.assert_allclose(D, -bias.mean(axis=0))
    np.testing.assert_allclose(enc.alibi_distances(n, heads, head=3), -bias[3])
    # rank one: the double-centred Gram matrix of a line has one non-zero eigenvalue
    J = np.eye(n) - 1 / n
    eig = np.linalg.eigvalsh(-0.5 * J @ (D**2) @ J)
    assert np.sum(np.abs(eig) > 1e-9 * np.abs(eig).max()) == 1


def test_none_random_and_table():
    assert not enc.none_distances(5).any() and enc.none_distances(5).shape == (5, 5)
    P = enc.random_table(50, 400, sigma=1.0, seed=3)
    np.testing.assert_array_equal(P, enc.random_table(50, 400, sigma=1.0, seed=3))
    assert abs(P.std() - 1.0) < 0.02
    assert abs(enc.random_table(50, 400, sigma=0.02, seed=3).std() - 0.02) < 0.001
    np.testing.assert_allclose(enc.random_distances(50, 400, sigma=1.0, seed=3), pairwise_distances(P), atol=1e-8)
    T = np.random.default_rng(0).normal(size=(12, 5))
    np.testing.assert_allclose(enc.table_distances(T), cdist(T, T), atol=1e-10)


def test_dispatcher_matches_the_functions():
    n = 12
    np.testing.assert_array_equal(
        enc.encoding_distances("sinusoidal", n, d=8, layout="concatenated"),
        enc.sinusoidal_distances(n, 8, layout="concatenated"),
    )
    np.testing.assert_array_equal(enc.encoding_distances("rope", n, d=64, n_heads=4), enc.rope_distances(n, 16))
    np.testing.assert_array_equal(enc.encoding_distances("rope", n, d_head=8), enc.rope_distances(n, 8))
    np.testing.assert_array_equal(enc.encoding_distances("alibi", n, n_heads=12), enc.alibi_distances(n, 12))
    np.testing.assert_array_equal(enc.encoding_distances("none", n), np.zeros((n, n)))
    np.testing.assert_array_equal(
        enc.encoding_distances("random", n, d=16, sigma=1.0, seed=5), enc.random_distances(n, 16, 1.0, 5)
    )
    T = np.arange(40.0).reshape(20, 2)
    np.testing.assert_allclose(enc.encoding_distances("table", n, table=T), cdist(T[:n], T[:n]), atol=1e-10)
    assert set(enc.ENCODINGS) >= {"sinusoidal", "rope", "alibi", "none", "random", "table", "mds"}


def test_mds_encoding_reproduces_a_euclidean_target_and_truncates_by_rank():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(15, 4))
    D = cdist(X, X)
    # full rank: classical MDS of Euclidean distances reproduces them
    np.testing.assert_allclose(enc.encoding_distances("mds", 15, target=D), D, atol=1e-9)
    # rank 1: the distances of the projection on the first principal axis of the centred points
    Xc = X - X.mean(0)
    axis = np.linalg.svd(Xc, full_matrices=False)[2][0]
    z = Xc @ axis
    np.testing.assert_allclose(enc.mds_distances(D, 1), np.abs(z[:, None] - z[None, :]), atol=1e-9)
    with pytest.raises(ValueError, match="needs target="):
        enc.encoding_distances("mds", 10, target=D)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: enc.encoding_distances("learnt", 5, d=4), "valid encodings are sinusoidal, rope"),
        (lambda: enc.sinusoidal_table(4, 7), "must be even"),
        (lambda: enc.sinusoidal_table(4, 8, layout="blocked"), "valid layouts are interleaved, concatenated"),
        (lambda: enc.sinusoidal_table(0, 8), "positive integer"),
        (lambda: enc.rope_distances(4, 8, base=1.0), "base must be"),
        (lambda: enc.encoding_distances("sinusoidal", 4, d=4, base=None), "base must be a finite number"),
        (lambda: enc.encoding_distances("sinusoidal", 4, d=4, bogus=1), "bad options.*unexpected keyword"),
        (lambda: enc.encoding_distances("rope", 4, d=10, n_heads=4), "does not divide"),
        (lambda: enc.alibi_slopes(0), "positive integer"),
        (lambda: enc.alibi_distances(4, 8, head=8), "0..7"),
        (lambda: enc.random_table(4, 4, sigma=-1), "sigma must be"),
        (lambda: enc.encoding_distances("table", 10, table=np.zeros((5, 3))), "N_max"),
        (lambda: enc.table_distances(np.array([[np.nan, 1.0]])), "NaN"),
        (lambda: enc.encoding_distances("none", 4, sigma=1), "bad options"),
        (lambda: enc.encoding_distances("sinusoidal", 4), "needs the width d"),
    ],
)
def test_bad_inputs_raise_clear_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_cosine_kernel_and_the_sinusoidal_identity():
    omega = enc.sinusoidal_frequencies(12)
    deltas = np.arange(9)
    naive = np.array([sum(math.cos(t * w) for w in omega) / len(omega) for t in deltas])
    np.testing.assert_allclose(enc.cosine_kernel(deltas, omega), naive, atol=1e-14)
    # ||p_i - p_j||^2 = d (1 - K(i - j)) on the table itself
    D = enc.sinusoidal_distances(9, 12)
    np.testing.assert_allclose(D[0] ** 2, 12 * (1 - naive), atol=1e-12)
    with pytest.raises(ValueError, match="frequencies"):
        enc.cosine_kernel(deltas, [])


def test_encoding_set_uses_true_offsets_and_matches_each_encoding():
    n, d, H = 10, 16, 4
    full = enc.encoding_set(n, d_model=d, n_heads=H, names=enc.ENCODING_SET_NAMES, seed=0)
    assert list(full) == list(enc.ENCODING_SET_NAMES)
    np.testing.assert_array_equal(full["sinusoidal"], enc.sinusoidal_distances(n, d))
    np.testing.assert_array_equal(full["rope"], enc.rope_distances(n, d // H))
    np.testing.assert_array_equal(full["alibi"], enc.alibi_distances(n, H))
    np.testing.assert_array_equal(full["random"], enc.random_distances(n, d, 0.02, 0))
    np.testing.assert_array_equal(full["none"], np.zeros((n, n)))
    kept = enc.encoding_set([0, 3, 9], d_model=d, n_heads=H, names=enc.ENCODING_SET_NAMES, seed=0)
    for name in enc.ENCODING_SET_NAMES:
        np.testing.assert_allclose(kept[name], full[name][np.ix_([0, 3, 9], [0, 3, 9])])
    # ALiBi's induced distance is proportional to |i - j| of the true positions
    assert kept["alibi"][0, 2] / kept["alibi"][0, 1] == pytest.approx(3.0)
    assert list(enc.encoding_set(4, d_model=8, n_heads=2)) == list(enc.DEFAULT_ENCODING_SET)
    assert enc.describe_encoding("rope", d_model=768, n_heads=12) == "d_head=64, base=10000, per unit vector"
    with pytest.raises(ValueError, match="unknown encodings"):
        enc.encoding_set(4, d_model=8, n_heads=2, names=("learnt",))
    with pytest.raises(ValueError, match="increasing"):
        enc.encoding_set([3, 1], d_model=8, n_heads=2)


def test_alibi_kernel_rule_is_the_kernel_of_the_bias():
    n, H = 10, 8
    m = enc.alibi_slopes(H).mean()
    offsets = np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
    # dhat^2 = 2 (K(0) - K(i - j)) with K(delta) = -mbar |delta|
    np.testing.assert_allclose(enc.alibi_kernel_distances(n, H), np.sqrt(2 * m * offsets), atol=1e-15)
    np.testing.assert_allclose(enc.alibi_kernel_distances(n, H), kernel_distances(enc.alibi_bias(n, H).mean(axis=0)),
                               atol=1e-12)


def test_equidistant_is_the_simplex_of_one_hot_rows():
    np.testing.assert_allclose(enc.equidistant_distances(5), cdist(np.eye(5), np.eye(5)), atol=1e-15)


def test_random_walk_table_is_a_cumulative_sum():
    P = enc.random_walk_table(20, 4, sigma=0.5, seed=3)
    steps = np.random.default_rng(3).normal(0.0, 0.5, size=(20, 4))
    np.testing.assert_allclose(P, np.cumsum(steps, axis=0))
    with pytest.raises(ValueError, match="sigma"):
        enc.random_walk_table(5, 2, sigma=0.0)


def test_reference_tables_are_the_named_ones():
    refs = enc.reference_tables(16, 8, sigma=0.5, seed=3)
    assert list(refs) == list(enc.REFERENCE_TABLES)
    np.testing.assert_array_equal(refs["random_walk"], enc.random_walk_table(16, 8, sigma=0.5, seed=3))
    np.testing.assert_array_equal(refs["sinusoidal"], enc.sinusoidal_table(16, 8))
