"""``posgeom.costmodel``: the settings accessor on dicts and dataclasses, FLOPs against a per-run loop,
shared work counted once, the proposed settings, the measured corpus lengths and the README's table."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from posgeom import costmodel as cm
from posgeom.models.encoder import EncoderConfig, model_flops_per_token


@dataclasses.dataclass(frozen=True)
class Train:
    steps: int = 10
    batch_size: int = 4


@dataclasses.dataclass(frozen=True)
class Options:
    train: Train = Train()
    seeds: tuple = (0, 1)


def test_setting_and_with_setting_read_and_replace_dicts_and_dataclasses():
    d = {"train": {"steps": 10, "batch_size": 4}, "seeds": [0, 1]}
    o = Options()
    for s in (d, o):
        assert cm.setting(s, "train", "steps") == 10 and len(cm.setting(s, "seeds")) == 2
        t = cm.with_setting(s, ("train", "steps"), 99)
        assert cm.setting(t, "train", "steps") == 99 and cm.setting(s, "train", "steps") == 10
        assert cm.setting(t, "train", "batch_size") == 4
    with pytest.raises(KeyError, match="train.lr"):
        cm.setting(o, "train", "lr")
    assert cm.setting(d, "train", "lr", default=None) is None


def test_work_flops_equal_a_run_by_run_sum():
    shape = cm.Shape(64, 2, 128, 100)
    w = cm.Work("x", shape, "train", 32, 20.0, sequences=50, runs=3, mlm_fraction=0.15)
    config = EncoderConfig(vocab_size=100, d_model=64, n_layers=2, n_heads=1, d_ff=128, max_len=32)
    padded = sum(50 * 32 * model_flops_per_token(config, 32, mlm_fraction=0.15) for _ in range(3))
    bucketed = sum(50 * 20 * model_flops_per_token(config, 20, mlm_fraction=0.15) for _ in range(3))
    assert w.flops(False) == pytest.approx(padded) and w.flops(True) == pytest.approx(bucketed)
    forward = dataclasses.replace(w, kind="forward")
    assert forward.flops(True) == pytest.approx(bucketed / 3)


def test_parameter_count_of_bert_base():
    # BERT-base encoder + word and position embeddings: about 109 M (without token types and pooler)
    assert cm.parameter_count(cm.BERT_BASE, 512) == pytest.approx(109e6, rel=0.01)


def test_every_gpu_chapter_is_costed_and_shared_pretraining_is_counted_once():
    from posgeom.reproduce import CHAPTERS

    costs = cm.experiment_costs()
    costed = {c.chapter for c in costs if c.gpu_minutes > 0}
    assert {c.slug for c in CHAPTERS if c.paper_needs_gpu} <= costed
    scratch = [c for c in costs if c.experiment == "real_corpora:run_scratch_table"]
    assert [c.chapter for c in scratch] == ["real-corpora", "monotonicity"]
    assert scratch[0].flops > 0 and scratch[1].flops == 0 and scratch[1].shared
    t = cm.totals(costs)
    assert t["gpu_minutes"] == pytest.approx(sum(c.gpu_minutes for c in costs))
    assert t["tokens"] <= t["tokens_padded"]


def test_gpu_time_is_flops_at_the_mfu_or_the_steps_at_their_least_time():
    a = cm.ASSUMPTIONS
    half = dataclasses.replace(a, mfu=a.mfu / 2)
    big = cm.Work("bert", cm.BERT_BASE, "train", 512, 512.0, sequences=64 * 1000, runs=1, batch_size=64)
    assert big.gpu_seconds(a) == pytest.approx(big.flops(True) / (a.peak_flops * a.mfu))  # FLOP-bound
    assert big.gpu_seconds(half) == pytest.approx(2 * big.gpu_seconds(a))
    tiny = cm.Work("tiny", cm.Shape(128, 4, 512, 100), "train", 65, 65.0, sequences=64 * 1000, runs=2, batch_size=64)
    assert tiny.steps == 2000
    assert tiny.gpu_seconds(a) == pytest.approx(2000 * (a.step_s + 4 * a.layer_step_s))  # step-bound
    assert tiny.gpu_seconds(half) == pytest.approx(tiny.gpu_seconds(a))
    forward = dataclasses.replace(tiny, kind="forward")
    assert forward.gpu_seconds(a) == pytest.approx(tiny.gpu_seconds(a) / 3)


def test_proposed_settings_fit_the_goal_and_keep_each_run_s_sequences():
    now, then = cm.experiment_costs(), cm.experiment_costs(proposed=True)
    assert cm.totals(then)["gpu_minutes"] <= cm.GPU_GOAL_MINUTES
    for o in cm.PROPOSED:
        now_value = cm.setting(cm.paper_settings(o.module), *o.path)
        assert cm.plain(now_value) in (cm.plain(o.old), cm.plain(o.new)), o  # old values are the modules'
    fewer = {o.module for o in cm.PROPOSED if not o.keeps_sequences}
    for a, b in zip(now, then):
        if a.experiment.split(":")[0] not in fewer:
            assert b.tokens == pytest.approx(a.tokens)  # steps x batch unchanged: the same sequences
        assert b.gpu_minutes <= a.gpu_minutes + 1e-9


def test_an_override_already_in_the_module_is_not_applied_twice():
    first = cm.PROPOSED[0]
    applied = cm.apply_overrides(first.module, cm.paper_settings(first.module), cm.PROPOSED)
    settings_of = lambda m: applied if m == first.module else cm.paper_settings(m)  # noqa: E731
    a = cm.experiment_costs(proposed=True)
    b = cm.experiment_costs(proposed=True, settings_of=settings_of)
    assert [x.flops for x in a] == pytest.approx([x.flops for x in b])


def test_the_readme_cost_table_is_the_cost_model_s():
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    found = re.search(r"<!-- cost-table:[^\n]*-->\n(.*?)\n<!-- end cost-table -->", readme, re.S)
    assert found, "README.md has no generated cost table"
    assert found.group(1).strip() == cm.readme_table().strip(), (
        "README.md's cost table is out of date: run posgeom costs --write-readme")
    assert cm.ASSUMPTIONS.describe() in readme


def test_corpus_lengths_are_the_measured_ones():
    try:
        measured = cm.measure_corpus_lengths()
    except Exception as err:  # noqa: BLE001 - the corpora are not on this machine
        pytest.skip(f"corpora not available: {err}")
    for key, row in cm.CORPUS_LENGTHS.items():
        for n, mean in row.items():
            assert measured[key][n] == pytest.approx(mean, abs=1e-5)
    assert cm.mean_tokens("sst2", 128) == pytest.approx(13.32, abs=0.01)


def test_format_costs_names_every_experiment_and_the_assumptions():
    costs = cm.experiment_costs()
    text = cm.format_costs(costs)
    for c in costs:
        assert c.experiment in text
    assert "989 TFLOP/s" in text and "40% MFU" in text and "total:" in text


def test_gpu_measurements_are_read_from_the_windows_log(tmp_path, monkeypatch):
    import json

    log = tmp_path / cm.MEASUREMENTS
    log.parent.mkdir(parents=True)
    bench = {"results": {"posgeom": {"mfu": 0.31, "tokens_per_s": 4.2e5}}}
    log.write_text("\n".join([
        json.dumps({"device": "cpu", "dry_run": True, "benchmark": {"results": {"posgeom": {"mfu": None}}}}),
        json.dumps({"device": "NVIDIA H200", "dry_run": False, "started": "2026-12-01 20:00 UTC",
                    "benchmark": bench, "reproduce_s": 400.0}),
        "not json",
    ]) + "\n")
    found = cm.gpu_measurements(tmp_path)
    assert found == [cm.Measurement("NVIDIA H200", 0.31, 4.2e5, "2026-12-01 20:00 UTC", 400.0)]
    monkeypatch.setattr(cm.table, "gpu_measurements", lambda root=None: found)
    costs = cm.experiment_costs()
    text = cm.format_costs(costs)
    at = dataclasses.replace(cm.ASSUMPTIONS, mfu=0.31)
    expected = cm.totals(cm.experiment_costs(assumptions=at))["gpu_minutes"]
    assert "measured: 31% MFU on NVIDIA H200" in text and cm.table._minutes(expected) in text
    monkeypatch.setattr(cm.table, "gpu_measurements", lambda root=None: [])
    assert "no GPU window recorded yet" in cm.format_costs(costs)


def _typed(value, name="Settings"):
    """A dict of settings turned into nested frozen dataclasses (as the typed experiment settings are)."""
    if not isinstance(value, dict) or not all(isinstance(k, str) and k.isidentifier() for k in value):
        return tuple(value) if isinstance(value, list) else value
    fields = {k: _typed(v, f"{name}_{k}") for k, v in value.items()}
    cls = dataclasses.make_dataclass(name, [(k, object) for k in fields], frozen=True)
    return cls(**fields)


def test_typed_settings_cost_the_same_as_dicts():
    as_dict = lambda m: cm.plain(cm.paper_settings(m))  # noqa: E731
    as_typed = lambda m: _typed(cm.plain(cm.paper_settings(m)))  # noqa: E731
    for proposed in (False, True):
        a = cm.experiment_costs(proposed=proposed, settings_of=as_dict)
        b = cm.experiment_costs(proposed=proposed, settings_of=as_typed)
        assert [x.flops for x in a] == pytest.approx([x.flops for x in b])
        assert [x.gpu_minutes for x in a] == pytest.approx([x.gpu_minutes for x in b])
    # an override already applied in a typed module is recognised as applied
    o = next(o for o in cm.PROPOSED if o.module == "minimal_parametrisation" and o.path == ("train", "steps"))
    typed = _typed(cm.plain(cm.paper_settings(o.module)))
    applied = cm.with_setting(typed, o.path, _typed(o.new, "Steps"))
    _, pending = cm.pending_overrides(o.module, applied, [o])
    assert pending == []


def test_update_readme_rewrites_only_the_table(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n\n{cm.README_MARKERS[0]}\n| old |\n{cm.README_MARKERS[1]}\n\nAssumptions: old.\n\nend\n")
    assert cm.update_readme(readme) is True
    text = readme.read_text()
    assert cm.readme_table() in text and cm.ASSUMPTIONS.describe() in text and "| old |" not in text
    assert text.startswith("intro\n") and text.endswith("end\n")
    assert cm.update_readme(readme) is False
    (tmp_path / "other.md").write_text("no table\n")
    with pytest.raises(ValueError, match="no cost table"):
        cm.update_readme(tmp_path / "other.md")
