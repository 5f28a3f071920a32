"""Padding is not trained on: ``padding="trim"`` / ``"bucket"`` in :func:`posgeom.models.train`.

Oracles: the padded batch (the loss of a trimmed batch equals it up to rounding, since padding keys are
masked), a loop over rows for the sequence lengths, and the default ``padding="full"`` run.
"""

from __future__ import annotations

import pytest
import torch

from posgeom.models import Callback, TokenData, TrainConfig, build_model, get_config, train
from posgeom.models.batches import BUCKET_BATCHES, epoch_batches, sequence_lengths, step_batch

pytestmark = pytest.mark.usefixtures("one_torch_thread")

V, L = 300, 40


def corpus(n=60, seed=0) -> TokenData:
    """Right-padded rows of lengths 3..L (a few full ones), like a tokenised corpus."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(110, V, (n, L), generator=g)
    lengths = torch.randint(3, L + 1, (n,), generator=g)
    lengths[::7] = L
    mask = (torch.arange(L)[None, :] < lengths[:, None]).long()
    ids = ids * mask
    ids[:, 0] = 101
    return TokenData(ids, mask, (ids[:, 1] > ids[:, 2]).long())


def tiny(position="learned", **kw):
    return get_config("quick", vocab_size=V, d_model=32, n_heads=4, d_ff=64, max_len=L, position=position,
                      dropout=0.0, attention_dropout=0.0, **kw)


def test_sequence_lengths_against_a_loop():
    data = corpus()
    mask = data.attention_mask.clone()
    mask[3, 5] = 0  # a hole inside a row does not shorten it
    expected = [max([i + 1 for i in range(L) if mask[r, i]], default=0) for r in range(len(mask))]
    assert sequence_lengths(mask).tolist() == expected


@pytest.mark.parametrize("padding", ["trim", "bucket"])
@pytest.mark.parametrize("task", ["mlm", "classification"])
def test_each_batch_is_padded_to_its_longest_sequence(padding, task):
    data = corpus()
    lengths = sequence_lengths(data.attention_mask)
    cfg = TrainConfig(task=task, batch_size=8, padding=padding)
    batches = epoch_batches(len(data), 8, seed=0, epoch=0, padding=padding, lengths=lengths)
    # a partition of the rows into ceil(N / B) batches
    assert sorted(torch.cat(batches).tolist()) == list(range(len(data)))
    assert len(batches) == -(-len(data) // 8)
    for step, idx in enumerate(batches):
        b = step_batch(data, cfg, V, step, idx, "cpu").tensors
        assert b["input_ids"].shape[1] == int(lengths[idx].max())
        if task == "mlm":
            assert b["labels"].shape == b["input_ids"].shape


def test_bucketing_groups_similar_lengths_and_full_keeps_the_old_order():
    data = corpus(n=2000)
    lengths = sequence_lengths(data.attention_mask)
    full = epoch_batches(len(data), 8, seed=3, epoch=1)
    # "full" and "trim" are consecutive slices of the epoch's permutation (the order of padding="full")
    assert torch.equal(torch.cat(full), torch.cat(epoch_batches(len(data), 8, seed=3, epoch=1, padding="trim",
                                                                lengths=lengths)))
    bucket = epoch_batches(len(data), 8, seed=3, epoch=1, padding="bucket", lengths=lengths)
    padded = lambda batches: sum(len(i) * int(lengths[i].max()) for i in batches)  # noqa: E731
    assert padded(bucket) < 0.75 * padded(full) and padded(full) < len(data) * L
    # the same chunks of the permutation, sorted: each bucket batch comes from one chunk
    chunk = BUCKET_BATCHES * 8
    perm = torch.cat(full)
    where = {int(r): k // chunk for k, r in enumerate(perm)}
    assert all(len({where[int(r)] for r in b}) == 1 for b in bucket)
    assert epoch_batches(len(data), 8, seed=3, epoch=2, padding="bucket", lengths=lengths)[0].tolist() != bucket[0].tolist()


@pytest.mark.parametrize("position", ["learned", "sinusoidal", "lowrank", "rope", "alibi", "none"])
@pytest.mark.parametrize("task, pooling", [("mlm", "cls"), ("classification", "cls"), ("classification", "mean")])
def test_trimmed_batch_loss_equals_the_padded_one(position, task, pooling):
    data = corpus()
    model = build_model(tiny(position, pooling=pooling), task, seed=0).eval()
    idx = torch.tensor([r for r in range(60) if r % 7][:16])  # no full-length row: something to trim
    full = step_batch(data, TrainConfig(task=task, seed=4), V, 7, idx, "cpu").tensors
    trim = step_batch(data, TrainConfig(task=task, seed=4, padding="trim"), V, 7, idx, "cpu").tensors
    assert trim["input_ids"].shape[1] < full["input_ids"].shape[1]
    with torch.no_grad():
        a = model(full["input_ids"], full["attention_mask"], labels=full["labels"])
        b = model(trim["input_ids"], trim.get("attention_mask"), labels=trim["labels"])
    torch.testing.assert_close(b.loss, a.loss, rtol=1e-5, atol=1e-6)
    # ... because the masking is that of the padded batch, cut
    if task == "mlm":
        Lb = trim["labels"].shape[1]
        assert torch.equal(trim["labels"], full["labels"][:, :Lb]) and bool((full["labels"][:, Lb:] == -100).all())


def test_training_with_trimmed_batches_follows_the_padded_run():
    data = corpus()

    class Shapes(Callback):
        def __init__(self):
            self.seen = 0

        def on_step_end(self, state):
            self.seen += 1

    runs = {}
    for padding in ("full", "trim"):
        model = build_model(tiny(), "mlm", seed=0)
        cfg = TrainConfig(task="mlm", batch_size=8, max_steps=10, lr=2e-3, warmup_steps=2, progress=False,
                          device="cpu", log_every=1, padding=padding)
        runs[padding] = (train(model, data, cfg, callbacks=[Shapes()]), model)
    (full, m_full), (trim, m_trim) = runs["full"], runs["trim"]
    assert trim.losses == pytest.approx(full.losses, rel=1e-4, abs=1e-5)
    for k, v in m_full.state_dict().items():
        torch.testing.assert_close(m_trim.state_dict()[k], v, rtol=1e-3, atol=1e-4, msg=k)
    assert trim.tokens_per_s > 0


def test_bucketed_training_runs_and_is_reproducible():
    data = corpus()
    cfg = TrainConfig(task="classification", batch_size=8, max_steps=9, progress=False, device="cpu", log_every=1,
                      padding="bucket")
    a = train(build_model(tiny(), "classification", seed=0), data, cfg)
    b = train(build_model(tiny(), "classification", seed=0), data, cfg)
    assert a.losses == b.losses and len(a.losses) == 9
