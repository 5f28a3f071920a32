"""Training loop: masking, schedule, determinism, resume equality, OOM, callbacks, every encoding at quick scale."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from posgeom import encodings as enc
from posgeom.geometry import classical_mds, separation, spearman, stress, violation_rate
from posgeom.models import (
    POSITIONAL,
    Callback,
    PositionGeometry,
    PositionLimitError,
    TokenData,
    TrainConfig,
    TrainingOOMError,
    build_model,
    evaluate,
    get_config,
    load_checkpoint,
    mask_tokens,
    train,
)
from posgeom.models.batches import as_token_data
from posgeom.models.optim import lr_factor
from posgeom.registry import Registry


pytestmark = pytest.mark.usefixtures("one_torch_thread")

V, N, L = 300, 48, 16


def tiny(position="learned", **kw):
    return get_config("quick", vocab_size=V, d_model=32, n_heads=4, d_ff=64, max_len=L, position=position, **kw)


def corpus(seed=0, n=N, length=L):
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(110, V, (n, length), generator=g)
    ids[:, 0] = 101
    mask = torch.ones_like(ids)
    for r in range(0, n, 3):
        cut = 6 + r % (length - 6)
        ids[r, cut:] = 0
        mask[r, cut:] = 0
    labels = (ids[:, 1] > ids[:, 2]).long()  # order-sensitive: which of the first two tokens is larger
    return TokenData(ids, mask, labels)


def quiet(**kw):
    base = dict(batch_size=8, max_steps=6, lr=1e-3, progress=False, warmup_steps=2)
    return TrainConfig(**{**base, **kw})


# ---------------------------------------------------------------- masking and schedule


def test_mask_tokens_80_10_10_and_never_special_or_padding():
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(110, 30000, (400, 128), generator=g)
    ids[:, 0], ids[:, 1] = 101, 102
    mask = torch.ones_like(ids)
    mask[:, 100:] = 0
    inputs, labels = mask_tokens(ids, vocab_size=30522, attention_mask=mask, generator=torch.Generator().manual_seed(1))
    selected = labels != -100
    assert not selected[:, :2].any() and not selected[:, 100:].any()
    assert torch.equal(labels[selected], ids[selected])
    assert torch.equal(inputs[~selected], ids[~selected])
    frac = selected[:, 2:100].float().mean().item()
    assert abs(frac - 0.15) < 0.005
    k = selected.sum().item()
    masked = (inputs[selected] == 103).float().sum().item() / k
    same = (inputs[selected] == ids[selected]).float().sum().item() / k
    assert abs(masked - 0.8) < 0.01 and abs(same - 0.1) < 0.01  # the rest (~10 %) are random tokens
    again = mask_tokens(ids, vocab_size=30522, attention_mask=mask, generator=torch.Generator().manual_seed(1))
    assert torch.equal(again[0], inputs) and torch.equal(again[1], labels)


def test_warmup_then_linear_decay():
    total, warm = 10, 4
    factors = [lr_factor(t, warm, total) for t in range(total)]
    assert factors == [0.0, 0.25, 0.5, 0.75] + [(total - t) / (total - warm) for t in range(4, 10)]
    assert [lr_factor(t, warm, total, "constant") for t in (3, 4, 9)] == [0.75, 1.0, 1.0]
    result = train(build_model(tiny(), seed=0), corpus(), quiet(max_steps=total, warmup_steps=warm, lr=2e-3))
    np.testing.assert_allclose(result.lrs, [2e-3 * f for f in factors])


# ---------------------------------------------------------------- determinism and resume


def _params(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def test_same_seed_same_numbers_other_seed_other_numbers():
    a = train(build_model(tiny(), seed=0), corpus(), quiet(seed=3))
    b = train(build_model(tiny(), seed=0), corpus(), quiet(seed=3))
    c = train(build_model(tiny(), seed=0), corpus(), quiet(seed=4))
    assert a.losses == b.losses and len(a.losses) == 6
    assert a.losses != c.losses


class _Interrupt(Callback):
    def __init__(self, at):
        self.at = at

    def on_step_end(self, state):
        if state.step == self.at:
            raise KeyboardInterrupt


@pytest.mark.parametrize("task, position", [("mlm", "learned"), ("classification", "lowrank")])
def test_interrupted_and_resumed_equals_uninterrupted(tmp_path, task, position):
    data = corpus()
    target = enc.sinusoidal_distances(L, 8)
    cfg = dict(task=task, max_steps=9, checkpoint_every=3)

    full_model = build_model(tiny(position), task, seed=1)
    full_geo = PositionGeometry(every=2, target=target)
    full = train(full_model, data, quiet(**cfg, checkpoint_dir=str(tmp_path / "a")), callbacks=[full_geo])

    model = build_model(tiny(position), task, seed=1)
    geo = PositionGeometry(every=2, target=target)
    with pytest.raises(KeyboardInterrupt):
        train(model, data, quiet(**cfg, checkpoint_dir=str(tmp_path / "b")), callbacks=[geo, _Interrupt(5)])
    assert load_checkpoint(tmp_path / "b" / "last.pt")["step"] == 3
    fresh = build_model(tiny(position), task, seed=99)  # other weights: everything must come from the checkpoint
    geo2 = PositionGeometry(every=2, target=target)
    resumed = train(fresh, data, quiet(**cfg, checkpoint_dir=str(tmp_path / "b")), callbacks=[geo2, _Interrupt(-1)])

    assert resumed.resumed_from == 3 and resumed.steps == 9
    assert resumed.losses == full.losses and resumed.lrs == full.lrs
    for k, v in _params(full_model).items():
        assert torch.equal(v, fresh.state_dict()[k]), k
    assert geo2.records == full_geo.records
    assert geo2.records["step"] == [0, 2, 4, 6, 8, 9]


def test_resuming_with_other_settings_is_refused(tmp_path):
    data = corpus()
    train(build_model(tiny(), seed=0), data, quiet(checkpoint_dir=str(tmp_path), checkpoint_every=3))
    with pytest.raises(ValueError, match=r"other training settings \(lr: 0.001 → 0.002\)"):
        train(build_model(tiny(), seed=0), data, quiet(lr=2e-3, checkpoint_dir=str(tmp_path)))
    # resume=False starts over
    again = train(build_model(tiny(), seed=0), data, quiet(lr=2e-3, checkpoint_dir=str(tmp_path), resume=False))
    assert again.resumed_from is None


# ---------------------------------------------------------------- failures


class _OOMModel(torch.nn.Module):
    def __init__(self, error):
        super().__init__()
        self.config = tiny()
        self.w = torch.nn.Parameter(torch.zeros(1))
        self.error = error

    def logits(self, h):  # looks like an MLM model
        return h

    def forward(self, *args, **kwargs):
        raise self.error


@pytest.mark.parametrize(
    "error",
    [torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"),
     RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: can't allocate memory")],
)
def test_out_of_memory_names_the_next_batch_size(error):
    with pytest.raises(TrainingOOMError, match="batch_size=16.*try batch_size=8"):
        train(_OOMModel(error), corpus(), quiet(batch_size=16))


def test_other_runtime_errors_pass_through():
    with pytest.raises(RuntimeError, match="shape mismatch") as err:
        train(_OOMModel(RuntimeError("shape mismatch")), corpus(), quiet())
    assert not isinstance(err.value, TrainingOOMError)


def test_sequences_beyond_the_table_hit_the_n_max_wall_before_training():
    long = corpus(length=L + 4)
    with pytest.raises(PositionLimitError, match=f"N_max={L}"):
        train(build_model(tiny(), seed=0), long, quiet())


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda: TrainConfig(task="nsp"), "valid tasks are mlm, classification"),
        (lambda: TrainConfig(batch_size=0), "batch_size must be a positive integer"),
        (lambda: TrainConfig(precision="fp8"), "valid precisions are auto, fp32, bf16"),
        (lambda: TrainConfig(padding="pack"), "valid paddings are full, trim, bucket"),
        (lambda: TrainConfig(checkpoint_seconds=0), "checkpoint_seconds must be > 0 or None"),
        (lambda: TrainConfig(mlm_probability=1.5), "mlm_probability"),
        (lambda: TokenData(torch.zeros(4, 5), None), "must hold integers"),
        (lambda: TokenData(torch.zeros(4, 5, dtype=torch.long), torch.ones(4, 6, dtype=torch.long)), "shape of input_ids"),
        (lambda: TokenData(torch.zeros(4, 5, dtype=torch.long), labels=torch.zeros(3, dtype=torch.long)), r"labels must have shape \(N,\)"),
        (lambda: train(build_model(tiny(), "classification"), TokenData(corpus().input_ids), quiet(task="classification")), "needs labels"),
        (lambda: train(build_model(tiny(), "classification"), corpus(), quiet(task="mlm")), "needs a masked-LM model"),
    ],
)
def test_bad_training_inputs_raise_clear_errors(make, message):
    with pytest.raises(ValueError, match=message):
        make()


# ---------------------------------------------------------------- every encoding trains; callbacks; evaluation


@pytest.mark.parametrize("position", list(POSITIONAL))
def test_every_encoding_trains_at_quick_scale(position):
    """The quick shape (width 128, 2 layers, 4 heads) learns a repetitive corpus with every encoding.

    The vocabulary is cut to 2,000 ids (from BERT's 30,522) only to keep this test fast.
    """
    options = {}
    if position == "mds":
        options = {"table": classical_mds(enc.sinusoidal_distances(32, 16), 6).embedding}
    cfg = get_config("quick", vocab_size=2000, max_len=32, position=position, position_options=options)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(1000, 1040, (64, 32), generator=g)  # a 40-token language: easy to learn quickly
    result = train(build_model(cfg, seed=0), TokenData(ids), quiet(batch_size=16, max_steps=16, lr=3e-3))
    assert np.isfinite(result.losses).all()
    assert np.mean(result.losses[-4:]) < np.mean(result.losses[:4]) - 0.5, result.losses


def test_position_geometry_callback_records_and_saves(tmp_path):
    target = enc.sinusoidal_distances(L, 8)
    registry = Registry(tmp_path)
    geo = PositionGeometry(every=3, target=target, registry=registry, experiment="geo_test", params={"run": "t"})
    model = build_model(tiny("learned"), seed=0)
    train(model, corpus(), quiet(max_steps=7), callbacks=[geo])
    assert geo.records["step"] == [0, 3, 6, 7]
    D = model.distance_matrix(L)
    assert geo.records["separation"][-1] == pytest.approx(separation(D, as_distances=True).raw)
    assert geo.records["stress_paper"][-1] == pytest.approx(stress(target, D, "paper"))
    assert geo.records["stress_scale_free"][-1] == pytest.approx(stress(target, D, "scale_free"))
    assert geo.records["violation_rate"][-1] == pytest.approx(violation_rate(target, D))
    assert geo.records["spearman"][-1] == pytest.approx(spearman(target, D))
    assert geo.records["separation"][0] != geo.records["separation"][-1]  # the table moved
    saved = registry.entries("geo_test", "quick")
    assert len(saved) == 1
    np.testing.assert_allclose(saved[0].arrays["stress_paper"], geo.records["stress_paper"])
    assert saved[0].manifest["seed"] == 0 and saved[0].values["final"]["step"] == 7


def test_position_geometry_of_nope_is_degenerate_not_an_error():
    geo = PositionGeometry(every=2, target=enc.sinusoidal_distances(L, 8))
    train(build_model(tiny("none"), seed=0), corpus(), quiet(max_steps=2), callbacks=[geo])
    assert geo.records["separation"] == [0.0, 0.0] and np.isnan(geo.records["violation_rate"]).all()
    np.testing.assert_allclose(geo.records["stress_paper"], [1.0, 1.0], rtol=1e-12)  # Dhat = 0: sum d^2 / sum d^2
    with pytest.raises(ValueError, match="valid ones are paper"):
        PositionGeometry(normalizations=["kruskal"])


def test_classification_trains_and_evaluates():
    data = corpus()
    model = build_model(tiny("learned", pooling="mean"), "classification", seed=0)
    result = train(model, data, quiet(task="classification", max_steps=12), eval_data=data)
    assert set(result.eval) == {"loss", "accuracy", "n"} and result.eval["n"] == N
    assert 0.0 <= result.eval["accuracy"] <= 1.0
    mlm = evaluate(build_model(tiny(), seed=0), data, quiet())
    assert mlm["n"] > 0 and mlm["loss"] == pytest.approx(evaluate(build_model(tiny(), seed=0), data, quiet())["loss"])


def test_data_from_dicts_and_datasets():
    datasets = pytest.importorskip("datasets")
    data = corpus()
    ds = datasets.Dataset.from_dict({"sentence": ["x"] * N, "input_ids": data.input_ids.tolist(),
                                     "attention_mask": data.attention_mask.tolist(), "label": data.labels.tolist()})
    for source in (ds, {"input_ids": data.input_ids, "attention_mask": data.attention_mask, "label": data.labels}):
        got = as_token_data(source)
        assert torch.equal(got.input_ids, data.input_ids) and torch.equal(got.labels, data.labels)
        assert torch.equal(got.attention_mask, data.attention_mask)
    with pytest.raises(ValueError, match="unknown data key"):
        as_token_data({"input_ids": data.input_ids, "text": ["a"]})
    with pytest.raises(ValueError, match="no input_ids column"):
        as_token_data(datasets.Dataset.from_dict({"sentence": ["a", "b"]}))


def test_progress_bar_shows_the_loss(capsys):
    train(build_model(tiny(), seed=0), corpus(), quiet(progress=True, log_every=2, max_steps=4))
    assert "loss=" in capsys.readouterr().err


def test_precision_auto_is_fp32_on_cpu_and_bf16_autocast_runs():
    result = train(build_model(tiny(), seed=0), corpus(), quiet(max_steps=2))
    assert result.precision == "fp32" and result.device == "cpu"
    bf16 = train(build_model(tiny(), seed=0), corpus(), quiet(max_steps=2, precision="bf16", device="cpu"))
    assert bf16.precision == "bf16" and np.isfinite(bf16.losses).all()


def test_tokens_per_s_counts_short_last_batch(monkeypatch):
    """48 rows in batches of 20: steps of 20, 20, 8 rows; the throughput counts 48 rows, not 60."""
    import posgeom.models.training as training_mod

    clock = iter(float(t) for t in range(1000))
    monkeypatch.setattr(training_mod.time, "perf_counter", lambda: next(clock))
    model = build_model(tiny(), "classification")
    res = train(model, corpus(), quiet(task="classification", batch_size=20, max_steps=3))
    # the fake clock ticks once per call; whatever runtime it gives, tokens = 48 rows x L
    assert res.tokens_per_s * res.runtime_s == pytest.approx(N * L)


def test_dict_with_label_and_labels_is_rejected():
    ids = np.zeros((2, 4), dtype=np.int64)
    with pytest.raises(ValueError, match="both label and labels"):
        as_token_data({"input_ids": ids, "label": np.array([0, 1]), "labels": np.array([1, 0])})
