"""S6's powered design on a tiny configuration: it reproduces the order-task study's learned-table runs seed by
seed, pairs each heuristic with the table trained at the target length, is a CPU part of its chapter, and the
chapter reads it as an S6 row decided by the margin rule."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from posgeom import get_settings, verdicts
from posgeom.experiments.paired_design import PairedDesign

TINY = PairedDesign(effect=0.005, pilot_seeds=(100, 101), max_seeds=5)


@pytest.fixture
def tiny(monkeypatch):
    from posgeom.experiments import extrapolation as ex, extrapolation_powered as epw
    from posgeom.experiments.settings import ModelShape

    q = ex.CONFIGS.quick
    order = replace(q.order, L=6, vocab_size=8, n_train=64, n_eval=32, train=replace(q.order.train, steps=4, batch_size=16),
                    finetune=replace(q.order.finetune, steps=2), encodings=("learned",))
    q = replace(q, model=ModelShape(d_model=8, n_layers=1, n_heads=2, d_ff=16), order=order)
    monkeypatch.setattr(ex, "CONFIGS", replace(ex.CONFIGS, quick=q))
    monkeypatch.setattr(epw, "HEURISTICS_DESIGN", TINY)
    return epw


def test_the_design_reproduces_the_study_seed_by_seed(tiny, tmp_path):
    from posgeom.experiments import extrapolation as ex

    settings = get_settings(scale="quick", results_dir=tmp_path, device="cpu")
    r = tiny.run_heuristics_powered(settings)
    v = r.values
    assert v["plan"]["seeds"] == 5 and [x["seed"] for x in v["runs"]] == [0, 1, 2, 3, 4]
    assert [x["seed"] for x in v["pilot"]] == [100, 101]
    assert (v["L"], v["length"]) == (6, 12)
    study = ex.run_extrapolation_order(settings, encodings=("learned",), seeds=(0, 3)).values
    for i, seed in enumerate((0, 3)):
        run = v["runs"][seed]
        for h in ex.HEURISTICS:
            assert run[h] == pytest.approx(study["accuracy"][f"learned:{h}"]["2.0"][i])
        assert run["b"] == pytest.approx(study["accuracy"]["learned:target"]["2.0"][i])
        assert run["a"] == max(run[h] for h in ex.HEURISTICS)


def test_each_heuristic_is_paired_with_the_target_table_over_the_decision_seeds(tiny, tmp_path):
    from posgeom.experiments import extrapolation as ex
    from posgeom.geometry import paired_difference

    settings = get_settings(scale="quick", results_dir=tmp_path, device="cpu")
    v = tiny.run_heuristics_powered(settings).values
    assert set(v["heuristics"]) == set(ex.HEURISTICS)
    for h in ex.HEURISTICS:
        naive = paired_difference([r[h] for r in v["runs"]], [r["b"] for r in v["runs"]], bounds=(-1, 1))
        assert v["heuristics"][h]["low"] == pytest.approx(naive.low)
        assert v["heuristics"][h]["high"] == pytest.approx(naive.high)
        assert v["heuristics"][h]["n"] == 5


def test_the_chapter_reads_the_design_as_an_s6_row_decided_by_the_margin_rule(tiny, tmp_path):
    from posgeom.chapters import learned_tables_fail as exr
    from posgeom.experiments.extrapolation_powered import StoredHeuristicsPowered

    settings = get_settings(scale="quick", results_dir=tmp_path, device="cpu")
    r = tiny.run_heuristics_powered(settings)
    row = exr._s6_powered_row(r)
    assert row.claim == "S6" and row.scale == "quick" and row.model.endswith("(CPU)")
    assert row.decision == verdicts.s6_heuristics_powered(r.values["heuristics"])
    assert "seeds sized before the run" in row.options
    # every heuristic's interval is on the row
    for iv in r.as_(StoredHeuristicsPowered).heuristics.values():
        assert f"[{iv.low:+.4f}, {iv.high:+.4f}]" in row.ours
    check = exr.power_checks(_tails_stub(), None, r)[-1]
    assert check.claim == "S6" and check.effect == verdicts.SHORTFALL and check.interval.as_dict() == r.values["difference"]


def test_the_design_is_a_cpu_part_of_its_chapter_stored_where_the_chapter_lists_its_parts():
    import fnmatch

    from posgeom.reproduce import CHAPTERS, CPU_PARTS

    parts = [p for p in CPU_PARTS if p.entry == "extrapolation_powered:run_heuristics_powered"]
    assert [p.chapter for p in parts] == ["learned-tables-fail"]
    chapter = next(c for c in CHAPTERS if c.slug == "learned-tables-fail")
    assert any(fnmatch.fnmatch("learned_tables_fail.heuristics_powered", pattern) for pattern in chapter.parts)


def _tails_stub():
    """A tails-study result with five seeds (what ``power_checks`` reads of it)."""
    from posgeom.registry import Result

    per = {c: {q: [0.5, 0.6, 0.7, 0.6, 0.5] for q in ("accuracy_head", "accuracy_tail", "movement_head",
                                                     "movement_tail", "neighbour_cos_head", "neighbour_cos_tail")}
           for c in ("skewed", "uniform")}
    for c in per:
        per[c].update(frac_long=0.1, n_train=10)
    values = {"conditions": ["skewed", "uniform"], "boundary": 4, "seeds": list(range(5)), **per}
    tables = np.zeros((2, 1, 8, 4))
    arrays = {"reach": np.zeros((2, 8)), "movement": np.zeros((2, 1, 8)), "tables_final": tables,
              "tables_initial": tables}
    return Result("learned_tails", "quick", "stub", values, arrays, {"runtime_s": 1.0})
