"""The paired design (pilot, plan, decision) against a naive loop, its refusals, and the learned-table designs
(S4, S7, S9) on tiny configurations: they reproduce their quick studies' runs seed by seed, and their
chapters read them as rows decided by the same rules."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from posgeom import get_settings, verdicts
from posgeom.experiments.paired_design import PairedDesign, read_or_run, run_paired_design
from posgeom.geometry import paired_difference
from posgeom.geometry.intervals import plan_from_pilot


def fake_measure(sd: float, shift: float = 0.0):
    """Two variants whose paired difference is normal(shift, sd), drawn from the seed alone."""
    def measure(seed: int) -> dict:
        rng = np.random.default_rng(seed)
        b = rng.normal()
        return {"a": b + shift + sd * rng.normal(), "b": b, "extra": seed * 2}
    return measure


def test_run_paired_design_is_the_naive_pilot_plan_and_decision():
    design = PairedDesign(effect=0.05, pilot_seeds=(200, 201, 202, 203, 204, 205), max_seeds=60)
    measure = fake_measure(0.1, shift=-0.2)
    out = run_paired_design(measure, design)
    # the naive loop: the pilot's differences size the plan, the decision runs seeds 0..n-1 afresh
    pilot = [measure(s) for s in design.pilot_seeds]
    plan = plan_from_pilot([p["a"] - p["b"] for p in pilot], 0.05, level=0.95, sd_level=0.95, min_draws=5,
                           max_draws=60)
    assert out["plan"] == plan.as_dict()
    decision = [measure(s) for s in range(plan.seeds)]
    expected = paired_difference([d["a"] for d in decision], [d["b"] for d in decision], 0.95)
    assert out["difference"] == expected.as_dict()
    assert [r["seed"] for r in out["runs"]] == list(range(plan.seeds))
    assert [r["seed"] for r in out["pilot"]] == list(design.pilot_seeds)
    assert all(r["extra"] == 2 * r["seed"] and r["difference"] == pytest.approx(r["a"] - r["b"]) for r in out["runs"])
    assert set(out["seconds"]) == {"pilot", "decision"} and all(s >= 0 for s in out["seconds"].values())
    # a noisier measure asks for more seeds; past the cap the design runs the cap and says how many it needs
    noisy = run_paired_design(fake_measure(1.0), design)
    assert noisy["plan"]["seeds"] == 60 and (noisy["plan"]["needed"] is None or noisy["plan"]["needed"] > 60)
    assert noisy["plan"]["design_power"] < 0.8


def test_run_paired_design_refuses_what_cannot_decide():
    measure = fake_measure(0.1)
    with pytest.raises(ValueError, match="at least 2 seeds"):
        run_paired_design(measure, PairedDesign(effect=0.1, pilot_seeds=(100,)))
    with pytest.raises(ValueError, match=r"pilot seeds \[3\] are among the decision's seeds 0–99"):
        run_paired_design(measure, PairedDesign(effect=0.1, pilot_seeds=(3, 100)))
    with pytest.raises(ValueError, match="effect must be > 0"):
        run_paired_design(measure, PairedDesign(effect=0.0))
    with pytest.raises(ValueError, match="keys 'a' and 'b'"):
        run_paired_design(lambda s: {"a": 1.0}, PairedDesign(effect=0.1))
    with pytest.raises(ValueError, match="not finite"):
        run_paired_design(lambda s: {"a": float("nan"), "b": 0.0}, PairedDesign(effect=0.1))


def test_the_designs_are_sized_for_their_rules_constants():
    from posgeom.experiments import learned_powered as lpw

    assert lpw.TAILS_DESIGN.effect == verdicts.TAIL_EFFECT
    assert lpw.INIT_DESIGN.effect == verdicts.LOSS_EFFECT == lpw.DROPOUT_DESIGN.effect
    for design in (lpw.TAILS_DESIGN, lpw.INIT_DESIGN, lpw.DROPOUT_DESIGN):
        assert design.max_seeds == verdicts.MAX_SEEDS
        design.check()  # the pilot's seeds are apart from the decision's


# ---------------------------------------------------------------------------------------------
# the learned-table designs on tiny configurations

TINY = PairedDesign(effect=0.01, pilot_seeds=(100, 101), max_seeds=5)


@pytest.fixture
def tiny_studies(monkeypatch):
    from posgeom.experiments import extrapolation as ex, learned_powered as lpw, learned_tables as lt, table_dropout as td
    from posgeom.experiments.settings import ModelShape

    shape = ModelShape(d_model=8, n_layers=1, n_heads=2, d_ff=16)
    q = lt.CONFIGS.quick
    q = replace(q, order=replace(q.order, n_positions=8, vocab_size=8, n_train=64, n_eval=32), model=shape,
                train=replace(q.train, steps=6, batch_size=16), init=replace(q.init, seeds=(0,), smooth=2))
    monkeypatch.setattr(lt, "CONFIGS", replace(lt.CONFIGS, quick=q))
    e = ex.CONFIGS.quick
    e = replace(e, model=shape, tails=replace(e.tails, n_positions=8, n_train=64, n_eval=32, seeds=(0,),
                                              train=replace(e.tails.train, steps=4, batch_size=16)))
    monkeypatch.setattr(ex, "CONFIGS", replace(ex.CONFIGS, quick=e))
    d = td.CONFIGS.quick
    d = replace(d, order=replace(d.order, n_positions=8, vocab_size=8, n_train=16, n_eval=32), model=shape,
                train=replace(d.train, steps=6, batch_size=8), seeds=(0, 1))
    monkeypatch.setattr(td, "CONFIGS", replace(td.CONFIGS, quick=d))
    for name in ("TAILS_DESIGN", "INIT_DESIGN", "DROPOUT_DESIGN"):
        monkeypatch.setattr(lpw, name, TINY)
    return lpw


def test_tails_design_runs_the_tails_study_seed_by_seed(tiny_studies, tmp_path):
    from posgeom.experiments import extrapolation as ex
    from posgeom.experiments.settings import as_params
    from posgeom.models.table_studies import tails_study

    settings = get_settings(scale="quick", results_dir=tmp_path, device="cpu")
    r = tiny_studies.run_tails_powered(settings)
    v = r.values
    assert v["plan"]["seeds"] == 5 and [x["seed"] for x in v["runs"]] == [0, 1, 2, 3, 4]
    cfg = ex.CONFIGS["quick"]
    task = {k: x for k, x in as_params(cfg.tails).items() if k != "seeds"}
    study, _ = tails_study(task, as_params(cfg.model), (0, 3), data_seed=0, device="cpu")
    for i, seed in enumerate((0, 3)):
        run = v["runs"][seed]
        assert run["a"] == pytest.approx(study["skewed"]["accuracy_tail"][i])
        assert run["b"] == pytest.approx(study["uniform"]["accuracy_tail"][i])
    assert "seeds" not in r.manifest["params"]["tails"] and r.manifest["params"]["design"]["pilot_seeds"] == [100, 101]
    assert -1 <= v["difference"]["low"] <= v["difference"]["high"] <= 1


def test_init_and_dropout_designs_pair_their_variants(tiny_studies, tmp_path):
    from posgeom.experiments import learned_tables as lt, table_dropout as td

    settings = get_settings(scale="quick", results_dir=tmp_path, device="cpu")
    init = tiny_studies.run_init_powered(settings)
    study = lt.run_init_study(settings, inits=("normal_0.02", "normal_1"), seeds=(2,))
    by = {x["init"]: x for x in study.values["runs"] if x["dropout"] == 0.0}
    run = init.values["runs"][2]
    assert run["a"] == pytest.approx(by["normal_0.02"]["final_loss"]) and run["b"] == pytest.approx(by["normal_1"]["final_loss"])
    assert run["steps_small"] == by["normal_0.02"]["steps_to_threshold"]
    assert init.values["loss_threshold"] == lt.CONFIGS["quick"].init.loss_threshold

    drop = tiny_studies.run_dropout_powered(settings)
    d = td.run_dropout_study(settings)
    runs = {(x.dropout, x.seed): x for x in td.dropout_runs(d)}
    for seed in (0, 1):
        got = drop.values["runs"][seed]
        assert got["a"] == pytest.approx(runs[0.1, seed].eval_loss) and got["b"] == pytest.approx(runs[0.0, seed].eval_loss)
        assert got["gap_none"] == pytest.approx(runs[0.0, seed].gap)
    assert drop.values["rate"] == 0.1


def test_chapters_read_the_designs_as_rows_decided_by_the_same_rules(tiny_studies, tmp_path):
    from posgeom.chapters import learned_tables as ltr, learned_tables_fail as exr
    from posgeom.chapters.powered import design_stages, design_summary

    settings = get_settings(scale="quick", results_dir=tmp_path, device="cpu")
    tails = read_or_run(tiny_studies.run_tails_powered, settings)  # nothing stored at paper: run at quick
    assert tails.scale == "quick"
    # once stored at paper, a quick build reads that one and runs nothing
    paper = tiny_studies.run_tails_powered(settings.with_(scale="paper"))
    assert read_or_run(tiny_studies.run_tails_powered, settings).manifest["key"] == paper.manifest["key"]
    assert read_or_run(tiny_studies.run_tails_powered, settings).scale == "paper"

    s = design_summary(tails)
    assert (s.seeds, s.pilot_n, s.max_seeds) == (5, 2, 5) and s.stale == ""
    assert s.mean_a - s.mean_b == pytest.approx(s.difference)
    stages = design_stages(tails, ("skewed", "uniform"))
    assert list(stages.index) == ["pilot (sizes the design)", "decision"] and list(stages["seeds"]) == [2, 5]

    row = exr._s4_powered_row(tails)
    assert row.claim == "S4" and row.decision == verdicts.s4_undertrained_tail(tails.values["difference"])
    assert "seeds sized before the run" in row.options and row.scale == "quick"
    checks = exr.power_checks(_tails_study_stub(tails), tails)
    assert checks[-1].interval.as_dict() == tails.values["difference"] and checks[-1].effect == verdicts.TAIL_EFFECT
    assert checks[0].seconds == 1.0  # the study's runtime, as its manifest records it

    init, drop = tiny_studies.run_init_powered(settings), tiny_studies.run_dropout_powered(settings)
    s7, s9 = ltr._s7_powered_row(init), ltr._s9_powered_row(drop)
    steps = [r["steps_small"] for r in init.values["runs"]], [r["steps_large"] for r in init.values["runs"]]
    mean = [float(np.mean([x for x in st if x is not None])) if any(x is not None for x in st) else float("nan")
            for st in steps]
    assert s7.decision == verdicts.s7_small_init(mean[0], mean[1], init.values["difference"])
    gap = float(np.mean([r["gap_none"] for r in drop.values["runs"]]))
    # a small training set is a choice the seed leaves open, not a changed condition (posgeom.verdicts.conditions)
    assert s9.decision == verdicts.s9_dropout(gap, drop.values["difference"]) and not s9.changed
    assert "a small training set" in s9.options


def _tails_study_stub(tails):
    """A tails-study result with the design's first runs as its seeds (what ``power_checks`` reads of it)."""
    from posgeom.registry import Result

    runs = tails.values["runs"]
    per = {"skewed": {"accuracy_tail": [r["a"] for r in runs]}, "uniform": {"accuracy_tail": [r["b"] for r in runs]}}
    for cond in per:
        for q in ("accuracy_head", "movement_head", "movement_tail", "neighbour_cos_head", "neighbour_cos_tail"):
            per[cond][q] = [0.0] * len(runs)
        per[cond].update(frac_long=0.1, n_train=10)
    values = {"conditions": ["skewed", "uniform"], "boundary": 4, "seeds": list(range(len(runs))), **per}
    tables = np.zeros((2, 1, 8, 4))
    arrays = {"reach": np.zeros((2, 8)), "movement": np.zeros((2, 1, 8)), "tables_final": tables,
              "tables_initial": tables}
    return Result("learned_tails", "quick", "stub", values, arrays, {"runtime_s": 1.0})
