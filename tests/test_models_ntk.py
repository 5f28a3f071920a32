"""The empirical tangent kernel (posgeom.models.ntk) against autograd."""

from __future__ import annotations



def test_logit_margin_ntk_matches_autograd():
    import torch

    from posgeom.models import EncoderConfig, build_model
    from posgeom.models.ntk import logit_margin_ntk

    cfg = EncoderConfig(vocab_size=50, d_model=8, n_layers=1, n_heads=2, d_ff=16, max_len=6, dropout=0.0,
                        attention_dropout=0.0)
    model = build_model(cfg, "classification", seed=0).eval()
    ids = torch.randint(1, 50, (3, 6))
    mask = torch.ones(3, 6, dtype=torch.long)
    mask[2, 4:] = 0
    names = [k for k, _ in model.named_parameters() if "embeddings.word" not in k]
    K = logit_margin_ntk(model, ids, mask, names)
    params = dict(model.named_parameters())
    grads = []
    for a in range(3):
        out = model(ids[a:a + 1], mask[a:a + 1]).logits[0]
        g = torch.autograd.grad(out[1] - out[0], [params[k] for k in names])
        grads.append(torch.cat([x.reshape(-1) for x in g]).double())
    J = torch.stack(grads)
    assert torch.allclose(K, J @ J.T, rtol=1e-5, atol=1e-8)
