"""The encoder: Theorem 1 and its causal caveat, masks, a naive-attention oracle, heads, configs, FLOPs."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils.flop_counter import FlopCounterMode

from posgeom import encodings as enc
from posgeom.models import (
    POSITIONAL,
    EncoderConfig,
    PositionLimitError,
    build_model,
    get_config,
    model_flops_per_token,
)


pytestmark = pytest.mark.usefixtures("one_torch_thread")

V, L = 60, 12


def tiny(position="learned", **kw) -> EncoderConfig:
    options = kw.pop("position_options", {})
    if position == "mds" and not options:
        options = {"table": np.random.default_rng(0).normal(size=(16, 4))}
    base = dict(vocab_size=V, d_model=16, n_layers=2, n_heads=4, d_ff=32, max_len=16, dropout=0.0,
                attention_dropout=0.0, init_std=0.3, position=position, position_options=options)
    return EncoderConfig(**{**base, **kw})


def encoder(position="learned", seed=0, **kw):
    return build_model(tiny(position, **kw), "mlm", seed=seed).encoder.eval()


# ---------------------------------------------------------------- Theorem 1 and its caveat


NOPE = encoder("none")
NOPE_CAUSAL = encoder("none", causal=True)
X = torch.randint(1, V, (2, L), generator=torch.Generator().manual_seed(0))


@settings(max_examples=25, deadline=None)
@given(st.permutations(list(range(L))))
def test_theorem_1_nope_is_permutation_equivariant(perm):
    perm = torch.tensor(perm)
    with torch.no_grad():
        # f(pi X) = pi f(X)
        torch.testing.assert_close(NOPE(X[:, perm]), NOPE(X)[:, perm], atol=1e-5, rtol=0)


def test_theorem_1_caveat_a_causal_mask_breaks_equivariance():
    perm = torch.arange(L).flip(0)
    with torch.no_grad():
        gap = (NOPE_CAUSAL(X[:, perm]) - NOPE_CAUSAL(X)[:, perm]).abs().max().item()
    assert gap > 1e-2  # the mask alone tells position 0 (sees one token) from position L-1 (sees all)
    with torch.no_grad():
        learned = encoder("learned")
        assert (learned(X[:, perm]) - learned(X)[:, perm]).abs().max().item() > 1e-2


def test_theorem_1_mean_pooled_classifier_is_permutation_invariant():
    m = build_model(tiny("none", pooling="mean"), "classification", seed=1).eval()
    perm = torch.randperm(L, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        torch.testing.assert_close(m(X[:, perm]).logits, m(X).logits, atol=1e-5, rtol=0)


# ---------------------------------------------------------------- masks


@pytest.mark.parametrize("position", list(POSITIONAL))
def test_padding_does_not_change_the_real_tokens(position):
    m = encoder(position)
    ids = X[:, :8]
    padded = torch.cat([ids, torch.zeros(2, 5, dtype=torch.long)], dim=1)
    mask = torch.cat([torch.ones(2, 8), torch.zeros(2, 5)], dim=1).long()
    with torch.no_grad():
        torch.testing.assert_close(m(padded, mask)[:, :8], m(ids), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("position", list(POSITIONAL))
def test_causal_outputs_ignore_later_tokens(position):
    m = encoder(position, causal=True)
    other = X.clone()
    other[:, 7:] = (other[:, 7:] + 1) % V
    mask = torch.ones_like(X)
    mask[1, 10:] = 0
    with torch.no_grad():
        torch.testing.assert_close(m(other, mask)[:, :7], m(X, mask)[:, :7], atol=1e-5, rtol=1e-5)
        assert (m(other)[:, 7:] - m(X)[:, 7:]).abs().max() > 1e-3


def _naive_forward(model, ids, mask):
    """The encoder written out with explicit loops over heads and softmax — the oracle for SDPA paths."""
    cfg = model.config
    emb = model.embeddings
    h = emb.word.weight[ids] + emb.token_type.weight[0]
    pe = emb.position
    n = ids.shape[1]
    if pe.kind == "absolute":
        h = h + pe(n)
    h = F.layer_norm(h, (cfg.d_model,), emb.norm.weight, emb.norm.bias, cfg.layer_norm_eps)
    H, dh = cfg.n_heads, cfg.d_head
    for layer in model.layers:
        Wq, Wk, Wv = layer.attn.qkv.weight.split(cfg.d_model)
        bq, bk, bv = layer.attn.qkv.bias.split(cfg.d_model)
        heads = []
        for head in range(H):
            sl = slice(head * dh, (head + 1) * dh)
            q, k, v = h @ Wq[sl].T + bq[sl], h @ Wk[sl].T + bk[sl], h @ Wv[sl].T + bv[sl]
            if pe.kind == "rotary":
                q, k = pe.rotate(q), pe.rotate(k)
            s = q @ k.transpose(-1, -2) / math.sqrt(dh)
            if pe.kind == "bias":
                idx = torch.arange(n, dtype=torch.float64)
                s = s - float(enc.alibi_slopes(H)[head]) * (idx[:, None] - idx[None, :]).abs().to(s)
            allowed = mask[:, None, :].bool().expand(-1, n, -1)
            if cfg.causal:
                allowed = allowed & torch.ones(n, n, dtype=torch.bool).tril()
            s = s.masked_fill(~allowed, float("-inf"))
            heads.append(torch.softmax(s, dim=-1) @ v)
        a = torch.cat(heads, dim=-1) @ layer.attn.out.weight.T + layer.attn.out.bias
        h = F.layer_norm(h + a, (cfg.d_model,), layer.norm1.weight, layer.norm1.bias, cfg.layer_norm_eps)
        f = F.gelu(h @ layer.ff1.weight.T + layer.ff1.bias) @ layer.ff2.weight.T + layer.ff2.bias
        h = F.layer_norm(h + f, (cfg.d_model,), layer.norm2.weight, layer.norm2.bias, cfg.layer_norm_eps)
    return h


@pytest.mark.parametrize("position", ["learned", "sinusoidal", "lowrank", "rope", "alibi", "none"])
@pytest.mark.parametrize("causal", [False, True])
def test_sdpa_paths_match_a_naive_attention(position, causal):
    m = encoder(position, causal=causal)
    mask = torch.ones_like(X)
    mask[0, 9:] = 0
    with torch.no_grad():
        got, ref = m(X, mask), _naive_forward(m, X, mask)
    keep = mask.bool()
    torch.testing.assert_close(got[keep], ref[keep], atol=1e-5, rtol=1e-5)


def test_sequence_longer_than_the_table_hits_the_n_max_wall():
    m = encoder("learned")
    with pytest.raises(PositionLimitError, match="N_max=16"):
        m(torch.ones(1, 17, dtype=torch.long))
    # encodings without a table have no wall
    for position in ("rope", "alibi", "none", "sinusoidal"):
        assert encoder(position)(torch.ones(1, 40, dtype=torch.long)).shape == (1, 40, 16)


# ---------------------------------------------------------------- heads


def test_mlm_loss_on_labelled_tokens_equals_full_cross_entropy():
    m = build_model(tiny(), "mlm", seed=2).eval()
    labels = torch.full_like(X, -100)
    labels[0, 3], labels[1, 5], labels[1, 0] = 7, 9, 11
    with torch.no_grad():
        out = m(X, labels=labels)
        full = m(X).logits
    ref = F.cross_entropy(full.reshape(-1, V), labels.reshape(-1), ignore_index=-100)
    torch.testing.assert_close(out.loss, ref, atol=1e-6, rtol=1e-6)
    assert out.logits.shape == (3, V)
    # the decoder is the word embedding matrix (tied), counted once
    assert m.num_parameters() == sum(p.numel() for p in m.parameters())
    m(X, labels=labels).loss.backward()
    assert m.encoder.embeddings.word.weight.grad is not None


def test_classification_pooling():
    mask = torch.ones_like(X)
    mask[1, 6:] = 0
    m = build_model(tiny(pooling="mean", n_labels=3), "classification", seed=0).eval()
    with torch.no_grad():
        h = m.encoder(X, mask)
        pooled = m.pool(h, mask)
    torch.testing.assert_close(pooled[1], h[1, :6].mean(0))
    torch.testing.assert_close(pooled[0], h[0].mean(0))
    cls = build_model(tiny(pooling="cls"), "classification", seed=0).eval()
    with torch.no_grad():
        h = cls.encoder(X)
        torch.testing.assert_close(cls.pool(h, None), torch.tanh(cls.pooler(h[:, 0])))
        out = cls(X, labels=torch.tensor([0, 1]))
    assert out.logits.shape == (2, 2) and out.loss.ndim == 0


def test_model_exposes_the_distance_matrix():
    m = build_model(tiny("alibi"), "mlm")
    np.testing.assert_allclose(m.distance_matrix(10), enc.alibi_distances(10, 4))
    learned = build_model(tiny("learned"), "classification")
    assert learned.distance_matrix().shape == (16, 16)


# ---------------------------------------------------------------- configs


def test_named_configs():
    q = get_config("quick")
    assert (q.n_layers, q.n_heads, q.max_len) == (2, 4, 128) and 64 <= q.d_model <= 128
    p = get_config("paper", "sst2")
    assert (p.n_layers, p.d_model, p.n_heads, p.d_ff, p.max_len) == (12, 768, 12, 3072, 128)
    assert get_config("paper", "imdb").max_len == 512
    assert get_config("quick", position="rope").position == "rope"


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: get_config("quick", n_heads=5), "n_heads=5 does not divide d_model=128"),
        (lambda: get_config("quick", position="xpos"), "valid encodings are none, learned"),
        (lambda: get_config("quick", position="rope", d_model=12, n_heads=4), "even head width"),
        (lambda: get_config("quick", pooling="max"), "valid poolings are cls, mean"),
        (lambda: get_config("huge"), "valid scales are quick, paper"),
        (lambda: get_config("paper", "wiki"), "valid datasets are sst2, imdb"),
        (lambda: get_config("quick", widht=3), "unknown config field"),
        (lambda: get_config("quick", dropout=1.0), "dropout must be in"),
        (lambda: get_config("quick", d_model=0), "positive integer"),
        (lambda: build_model(get_config("quick"), "ner"), "valid tasks are mlm, classification"),
        (lambda: build_model(tiny("learned", position_options={"sigma": -1.0})), "sigma must be"),
    ],
)
def test_bad_configs_raise_clear_errors(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_seeded_builds_are_identical_and_leave_the_global_rng_alone():
    state = torch.get_rng_state()
    a, b = build_model(tiny(), seed=5), build_model(tiny(), seed=5)
    assert torch.equal(torch.get_rng_state(), state)
    for (na, pa), (_, pb) in zip(a.named_parameters(), b.named_parameters()):
        assert torch.equal(pa, pb), na


def test_flops_per_token_matches_torch_flop_counter():
    """Count every matmul of the naive encoder (explicit per-head attention) and of the MLM head."""
    cfg = tiny()
    m = build_model(cfg, "mlm").eval()
    B, n = 4, 10
    ids = torch.randint(1, V, (B, n))
    selected = torch.zeros(B, n, dtype=torch.bool)
    selected.view(-1)[:8] = True  # 8 of 40 tokens predicted: a fraction 0.2
    with FlopCounterMode(display=False) as counter:
        h = _naive_forward(m.encoder, ids, torch.ones_like(ids))
        m.logits(h[selected])
    forward = counter.get_total_flops()
    assert model_flops_per_token(cfg, n, mlm_fraction=0.2) * B * n == pytest.approx(3 * forward, rel=1e-9)


def test_query_key_weights_are_the_fused_projection_rows():
    attn = encoder().layers[0].attn
    W_Q, b_Q, W_K, b_K = attn.query_key_weights()
    x = torch.randn(5, attn.qkv.in_features, dtype=torch.float64)
    with torch.no_grad():  # oracle: the fused layer itself, [Q K V] = x W_qkv^T + b
        fused = torch.nn.functional.linear(x, attn.qkv.weight.double(), attn.qkv.bias.double()).numpy()
    d = W_Q.shape[0]
    np.testing.assert_allclose(x.numpy() @ W_Q.T + b_Q, fused[:, :d], atol=1e-12)
    np.testing.assert_allclose(x.numpy() @ W_K.T + b_K, fused[:, d:2 * d], atol=1e-12)
    assert W_Q.dtype == np.float64 and W_Q.shape == (d, d) == W_K.shape
