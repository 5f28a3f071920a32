"""Equivariance gaps (posgeom.models.equivariance) against a manual computation and Theorem 1."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from posgeom.models import build_model
from posgeom.models import equivariance as eqv
from posgeom.models.tasks import tiny_encoder_config


def model(position, causal=False, L=8, V=20, seed=0):
    cfg = tiny_encoder_config(vocab_size=V, max_len=L, position=position, causal=causal, d_model=16, n_layers=2,
                              n_heads=2, d_ff=32, init_std=0.5)
    return build_model(cfg, "classification", seed=seed).double().eval()


def test_reversal_and_bad_permutations():
    assert eqv.reversal(4).tolist() == [3, 2, 1, 0]
    with pytest.raises(ValueError, match="positive"):
        eqv.reversal(0)
    m = model("none")
    x = torch.randint(1, 20, (2, 8))
    for bad in ([0, 1, 2], [0] * 8, np.arange(8) + 1, np.linspace(0, 7, 8)):
        with pytest.raises(ValueError, match="permutation"):
            eqv.equivariance_gap(m, x, bad)
    with pytest.raises(TypeError, match="Encoder"):
        eqv.equivariance_gap(torch.nn.Linear(2, 2), x, np.arange(8))


def test_equivariance_gap_matches_a_manual_computation_and_theorem1():
    rng = np.random.default_rng(0)
    x = torch.as_tensor(rng.integers(1, 20, (3, 8)))
    perm = rng.permutation(8)
    for position, causal in [("none", False), ("learned", False), ("none", True), ("alibi", False), ("rope", False)]:
        m = model(position, causal)
        with torch.no_grad():
            h = m.encoder(x)
            hp = m.encoder(x[:, torch.as_tensor(perm)])
        manual = max(float((hp[b, i] - h[b, perm[i]]).abs().max()) for b in range(3) for i in range(8))
        gap = eqv.equivariance_gap(m, x, perm)
        assert gap == pytest.approx(manual, abs=1e-15)
        if position == "none" and not causal:
            assert gap < 1e-12  # Theorem 1
            assert eqv.readout_gap(m, x, perm) < 1e-12
        else:
            assert gap > 1e-3
    # ALiBi's bias is symmetric under the reversal
    alibi = model("alibi")
    assert eqv.equivariance_gap(alibi, x, eqv.reversal(8)) < 1e-12
    assert eqv.equivariance_gap(model("rope"), x, eqv.reversal(8)) > 1e-3
