"""Positional-encoding modules against posgeom.encodings, naive loops and closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.spatial.distance import cdist

from posgeom import encodings as enc
from posgeom.geometry import classical_mds
from posgeom.models import positional as pos


pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.parametrize("layout", ["interleaved", "concatenated"])
def test_sinusoidal_module_is_the_formula_and_grows_when_fixed(layout):
    m = pos.SinusoidalPositional(20, 16, layout=layout)
    np.testing.assert_allclose(m(20).numpy(), enc.sinusoidal_table(20, 16, layout=layout), atol=1e-6)
    assert m.max_positions is None and not list(m.parameters())
    # fixed sinusoids have no N_max wall: the table grows
    np.testing.assert_allclose(m(50).numpy(), enc.sinusoidal_table(50, 16, layout=layout), atol=1e-5)
    t = pos.SinusoidalPositional(20, 16, layout=layout, trainable=True)
    assert t.weight.requires_grad and t.max_positions == 20
    with pytest.raises(pos.PositionLimitError, match="N_max=20"):
        t(21)
    half = pos.SinusoidalPositional(20, 16, layout=layout, scale=0.5)
    np.testing.assert_allclose(half(30).numpy(), 0.5 * enc.sinusoidal_table(30, 16, layout=layout), atol=1e-6)
    np.testing.assert_allclose(half.distance_matrix(30), 0.5 * enc.sinusoidal_distances(30, 16), atol=1e-5)


def _naive_rope(x: np.ndarray, position: int, theta: np.ndarray, layout: str) -> np.ndarray:
    """Rotate each coordinate pair by position * theta_k, one pair at a time (complex multiplication)."""
    out = x.astype(np.complex128).real.copy()
    m = len(theta)
    for k in range(m):
        a, b = (2 * k, 2 * k + 1) if layout == "interleaved" else (k, k + m)
        z = complex(x[a], x[b]) * complex(math.cos(position * theta[k]), math.sin(position * theta[k]))
        out[a], out[b] = z.real, z.imag
    return out


@pytest.mark.parametrize("layout", ["interleaved", "half"])
def test_rope_matches_a_naive_pairwise_rotation(layout):
    d_head, L = 8, 11
    m = pos.RotaryPositional(d_head, layout=layout)
    x = torch.randn(2, 3, L, d_head, dtype=torch.float64)
    got = m.rotate(x).numpy()
    theta = enc.rope_frequencies(d_head)
    for b in range(2):
        for h in range(3):
            for i in range(L):
                np.testing.assert_allclose(got[b, h, i], _naive_rope(x[b, h, i].numpy(), i, theta, layout), atol=1e-5)


@pytest.mark.parametrize("layout", ["interleaved", "half"])
def test_rope_score_depends_only_on_the_offset(layout):
    d_head, L = 16, 24
    m = pos.RotaryPositional(d_head, layout=layout)
    q, k = torch.randn(d_head, dtype=torch.float64), torch.randn(d_head, dtype=torch.float64)
    Q, K = m(q.expand(1, 1, L, d_head), k.expand(1, 1, L, d_head))
    S = (Q[0, 0] @ K[0, 0].T).numpy()  # S[i, j] = <R_i q, R_j k>
    for i in range(L):
        for j in range(L):
            for t in (1, 5):
                if i + t < L and j + t < L:
                    assert S[i + t, j + t] == pytest.approx(S[i, j], abs=1e-9)
    # and it is not constant: the offset does matter
    assert np.ptp(np.diag(S, 3)) < 1e-9 < abs(S[0, 3] - S[0, 0])
    # rotations preserve norms
    np.testing.assert_allclose(Q[0, 0].norm(dim=-1).numpy(), float(q.norm()), rtol=1e-12)


def test_rope_distance_matrix_and_dtype_cache():
    m = pos.RotaryPositional(12, base=500.0)
    np.testing.assert_array_equal(m.distance_matrix(30), enc.rope_distances(30, 12, 500.0))
    x32 = torch.randn(1, 1, 5, 12)
    x64 = x32.double()
    np.testing.assert_allclose(m.rotate(x32).numpy(), m.rotate(x64).numpy(), atol=1e-5)
    assert m.max_positions is None
    with pytest.raises(ValueError, match="pass n"):
        m.distance_matrix()
    with pytest.raises(ValueError, match="d_head=12"):
        m.rotate(torch.zeros(1, 1, 3, 8))
    with pytest.raises(ValueError, match="valid layouts are interleaved, half"):
        pos.RotaryPositional(8, layout="neox")


@pytest.mark.parametrize("heads", [8, 12])
def test_alibi_module_bias_and_distances(heads):
    m = pos.ALiBiPositional(heads)
    np.testing.assert_allclose(m(9).numpy(), enc.alibi_bias(9, heads), atol=1e-6)
    np.testing.assert_allclose(m.distance_matrix(9), enc.alibi_distances(9, heads))
    np.testing.assert_allclose(pos.ALiBiPositional(heads, head=2).distance_matrix(9), enc.alibi_distances(9, heads, head=2))


@pytest.mark.parametrize("sigma", [0.02, 1.0])
def test_learned_normal_init_has_the_requested_scale(sigma):
    torch.manual_seed(0)
    m = pos.LearnedPositional(200, 64, sigma=sigma)
    assert m.weight.std().item() == pytest.approx(sigma, rel=0.03)
    assert abs(m.weight.mean().item()) < 3 * sigma / math.sqrt(200 * 64) * 3
    np.testing.assert_allclose(m.distance_matrix(), cdist(m.weight.detach().double(), m.weight.detach().double()),
                               atol=1e-9)


def test_learned_from_sinusoids_and_from_an_mds_table():
    m = pos.LearnedPositional(30, 16, init="sinusoidal", layout="concatenated")
    np.testing.assert_allclose(m.weight.detach().numpy(), enc.sinusoidal_table(30, 16, layout="concatenated"), atol=1e-6)
    D = enc.sinusoidal_distances(30, 8)
    P = classical_mds(D, 5).embedding
    lifted = pos.LearnedPositional(30, 16, init="table", table=P)
    # lifting by orthonormal columns keeps the distances
    np.testing.assert_allclose(lifted.distance_matrix(), cdist(P, P), atol=1e-5)
    assert lifted.weight.requires_grad


def test_n_max_wall_message_names_the_sizes_and_the_options():
    m = pos.LearnedPositional(16, 8)
    assert m(16).shape == (16, 8)
    with pytest.raises(pos.PositionLimitError) as err:
        m(17)
    text = str(err.value)
    for needed in ("N_max=16", "sequence length 17", "truncate", "reuse_last", "interpolate", "new_rows"):
        assert needed in text
    with pytest.raises(pos.PositionLimitError):
        m.distance_matrix(40)


def test_extrapolation_heuristics():
    torch.manual_seed(1)
    m = pos.LearnedPositional(5, 3)
    W = m.weight.detach()
    reuse = m.extended(8, "reuse_last").weight.detach()
    assert torch.equal(reuse[:5], W) and all(torch.equal(reuse[i], W[4]) for i in range(5, 8))
    interp = m.extended(9, "interpolate").weight.detach()
    # new position i sits at old coordinate s = i (N-1)/(n-1) = i/2
    for i in range(9):
        s = i * 4 / 8
        lo, t = int(math.floor(s)), s - math.floor(s)
        expected = W[lo] if t == 0 else (1 - t) * W[lo] + t * W[lo + 1]
        torch.testing.assert_close(interp[i], expected)
    new = m.extended(7, "new_rows", seed=3).weight.detach()
    assert torch.equal(new[:5], W) and new.shape == (7, 3) and not torch.equal(new[5], new[6])
    assert m.extended(7, "new_rows", seed=3)(7).shape == (7, 3)
    with pytest.raises(ValueError, match="valid methods"):
        m.extended(7, "mirror")
    with pytest.raises(ValueError, match=r"n \(to extend a table of N_max=5 rows\) must be an integer >= 6"):
        m.extended(4)
    # the caller's random stream is untouched, and a float64 table stays float64
    state = torch.get_rng_state()
    m.extended(8, "reuse_last")
    assert torch.equal(torch.get_rng_state(), state)
    assert m.double().extended(8, "interpolate").weight.dtype == torch.float64


def test_low_rank_parameter_count_product_and_init_from_a_table():
    n, d, r = 50, 50, 3
    m = pos.LowRankPositional(n, d, rank=r)
    assert sum(p.numel() for p in m.parameters()) == r * (n + d)
    torch.testing.assert_close(m(n), m.A @ m.C.T)
    # 88% fewer parameters than the n x d table (the seed summary's worked check)
    assert 1 - r * (n + d) / (n * d) == pytest.approx(0.88)
    D = enc.sinusoidal_distances(n, 16)
    fitted = pos.LowRankPositional(n, d, rank=r, init="table", table=D)
    best = classical_mds(D, r).embedding
    np.testing.assert_allclose(fitted.distance_matrix(), cdist(best, best), atol=1e-5)
    with pytest.raises(ValueError, match="exceeds min"):
        pos.LowRankPositional(4, 8, rank=5)


def test_mds_module_fixed_or_trainable_keeps_distances():
    D = enc.alibi_distances(12, 4) + enc.sinusoidal_distances(12, 4)
    P = classical_mds(D, 3).embedding
    fixed = pos.MDSPositional(16, P)
    assert not list(fixed.parameters()) and fixed.max_positions == 12
    np.testing.assert_allclose(fixed.distance_matrix(), cdist(P, P), atol=1e-5)
    trainable = pos.MDSPositional(16, P, trainable=True)
    assert [p.shape for p in trainable.parameters()] == [torch.Size([12, 16])]
    with pytest.raises(ValueError, match="more than the model width"):
        pos.MDSPositional(16, np.zeros((4, 20)))


def test_every_registered_module_gives_a_distance_matrix():
    n = 10
    for name in pos.POSITIONAL:
        options = {"table": np.random.default_rng(0).normal(size=(n, 4))} if name == "mds" else {}
        m = pos.build_positional(name, n_positions=n, d_model=16, n_heads=4, **options)
        D = m.distance_matrix(n)
        assert D.shape == (n, n) and np.allclose(D, D.T) and np.all(np.diag(D) == 0), name
        assert np.all(D >= 0), name
        if name == "none":
            assert not D.any()
        else:
            assert D[0, 1] > 0, name


def test_factory_errors():
    with pytest.raises(ValueError, match="valid encodings are none, learned, sinusoidal, mds, lowrank, rope, alibi"):
        pos.build_positional("t5", n_positions=8, d_model=8, n_heads=2)
    with pytest.raises(ValueError, match="unknown option.*sigmaa.*valid options are init, sigma"):
        pos.build_positional("learned", n_positions=8, d_model=8, n_heads=2, sigmaa=1.0)
    with pytest.raises(ValueError, match="valid inits are normal, sinusoidal, table"):
        pos.LearnedPositional(4, 4, init="xavier")
    with pytest.raises(ValueError, match="needs table="):
        pos.build_positional("mds", n_positions=8, d_model=8, n_heads=2)
    with pytest.raises(ValueError, match="sigma must be"):
        pos.LearnedPositional(4, 4, sigma=0)
