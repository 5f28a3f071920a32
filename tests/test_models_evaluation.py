"""MLM evaluation (posgeom.models.evaluation) against closed forms and the model's own loss."""

from __future__ import annotations

import math
import numpy as np
import pytest
import torch

from posgeom.models.evaluation import entropy_references, masked_position_loss
from posgeom.models.mlm_inputs import MASK_ID
from posgeom.models import build_model
from posgeom.models.evaluation import mlm_loss_by_position
from posgeom.corpora.mlm_windows import IMDBWindows
from posgeom.models.tasks import tiny_encoder_config


def test_entropy_references_closed_forms():
    uniform = np.full((3, 4), 0.25)
    assert entropy_references(uniform) == pytest.approx((math.log(4), math.log(4)))
    onehot = np.eye(4)[:2]  # two positions, each certain, different tokens
    h_with, h_without = entropy_references(onehot)
    assert h_with == 0.0 and h_without == pytest.approx(math.log(2))


def test_masked_position_loss_masks_one_token_per_sequence():
    torch.manual_seed(0)
    cfg = tiny_encoder_config(vocab_size=10, max_len=5, position_options={"sigma": 0.02}, d_model=8, n_layers=1, n_heads=2,
                              d_ff=16)
    m = build_model(cfg, "mlm", seed=0)
    x = torch.randint(2, 10, (6, 5))
    loss = masked_position_loss(m, x, seed=4)
    # the same computation by hand: the masked position is the argmax of the seeded scores
    g = torch.Generator().manual_seed(4)
    pos = torch.rand(6, 5, generator=g).argmax(dim=1)
    inp = x.clone()
    inp[torch.arange(6), pos] = MASK_ID
    with torch.no_grad():
        logits = m(inp).logits[torch.arange(6), pos]
    manual = torch.nn.functional.cross_entropy(logits, x[torch.arange(6), pos])
    assert loss == pytest.approx(float(manual), rel=1e-5)
    assert m.training  # the mode is restored


def test_mlm_loss_by_position_matches_the_model_loss():
    from posgeom.models.encoder import build_model
    from posgeom.models.batches import mask_tokens

    config = tiny_encoder_config(vocab_size=30, max_len=10, d_model=8, n_layers=1, n_heads=2, d_ff=16)
    model = build_model(config, "mlm", seed=0).eval()
    X = np.random.default_rng(0).integers(4, 30, size=(16, 10))
    X[:, 0] = 1
    s, n = mlm_loss_by_position(model, X, mask_token_id=IMDBWindows.MASK,
                                special_token_ids=IMDBWindows.SPECIAL, seed=5, batch_size=16)
    inputs, labels = mask_tokens(torch.as_tensor(X), vocab_size=30, mask_token_id=2, special_token_ids=(0, 1, 2),
                                 generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        loss = model(inputs, labels=labels).loss
    assert s.sum() / n.sum() == pytest.approx(float(loss), rel=1e-5)
    assert n[0] == 0 and n.sum() == int((labels != -100).sum())
