"""benchmarks/compare_results.py: the check that a change leaves the book's numbers alone."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("compare_results", ROOT / "benchmarks" / "compare_results.py")
compare_results = importlib.util.module_from_spec(spec)
spec.loader.exec_module(compare_results)


def legacy_entry(root: Path, experiment: str, key: str, values: dict, arrays: dict | None = None) -> None:
    folder = root / "quick" / experiment / key
    folder.mkdir(parents=True)
    (folder / "result.json").write_text(json.dumps(values))
    if arrays:
        np.savez(folder / "arrays.npz", **arrays)


def pointer_entry(root: Path, experiment: str, key: str, values: dict, arrays: dict | None = None) -> None:
    folder = root / "quick" / experiment / key
    (folder / "v-abc").mkdir(parents=True)
    (folder / "v-abc" / "result.json").write_text(json.dumps(values))
    if arrays:
        np.savez(folder / "v-abc" / "arrays.npz", **arrays)
    (folder / "CURRENT").write_text(json.dumps({"version": "v-abc"}))


def test_equal_registries_in_either_layout_pass(tmp_path, capsys):
    values = {"stress": 0.25, "rows": [{"claim": "C7", "ours": "0.25"}], "notebook_sha256": "a"}
    legacy_entry(tmp_path / "before", "geometry", "k1", values, {"D": np.eye(3)})
    # timings say how long a run took on this machine, not what it computed
    legacy_entry(tmp_path / "before", "timed", "k3", {"runs": [{"loss": 0.5, "runtime_s": 1.7, "tokens_per_s": 3e4}]})
    pointer_entry(tmp_path / "after", "timed", "k3", {"runs": [{"loss": 0.5, "runtime_s": 1.5, "tokens_per_s": 4e4}]})
    pointer_entry(tmp_path / "after", "geometry", "k1", {**values, "stress": 0.25 + 1e-14, "notebook_sha256": "b"},
                  {"D": np.eye(3) + 1e-15})
    legacy_entry(tmp_path / "before", "chapter_runs", "k2", {"wall_s": 3.0})
    assert compare_results.main([str(tmp_path / "before"), str(tmp_path / "after")]) == 0
    assert "2 entries" in capsys.readouterr().out


def test_every_kind_of_difference_is_reported(tmp_path):
    legacy_entry(tmp_path / "before", "a", "k", {"x": 1.0, "s": "yes", "l": [1, 2]}, {"D": np.zeros(2)})
    legacy_entry(tmp_path / "before", "gone", "k", {"x": 1})
    pointer_entry(tmp_path / "after", "a", "k", {"x": 1.001, "s": "no", "l": [1], "new": 1}, {"D": np.ones(2)})
    found = compare_results.compare(tmp_path / "before", tmp_path / "after")
    text = "\n".join(found)
    for expected in ("quick/a/k.x: 1.0 before, 1.001 after", "'yes' before, 'no' after", "2 items before, 1 after",
                     ".new: only in after", "arrays differ (largest difference 1)", "quick/gone/k: missing after"):
        assert expected in text
    assert compare_results.main([str(tmp_path / "before"), str(tmp_path / "after")]) == 1
    assert compare_results.compare(tmp_path / "nothing", tmp_path / "after") == [f"no entries under {tmp_path / 'nothing'}"]


def test_ignore_param_matches_entries_whose_keys_differ_only_there(tmp_path):
    for side, data, key in (("before", "/some/machine/data", "k1"), ("after", "book copies", "k2")):
        pointer_entry(tmp_path / side, "geometry", key, {"stress": 0.25})
        manifest = {"params": {"n": 64, "data": data}}
        (tmp_path / side / "quick" / "geometry" / key / "v-abc" / "manifest.json").write_text(json.dumps(manifest))
    assert any("missing after" in d for d in compare_results.compare(tmp_path / "before", tmp_path / "after"))
    assert compare_results.main([str(tmp_path / "before"), str(tmp_path / "after"), "--ignore-param", "data"]) == 0


def test_old_layout_nests_the_inside_bert_peaks_by_definition():
    old = {"n_layers": 6, "peaks": {"propagated_scale_free": 4, "propagated_paper": 2, "residual_scale_free": 7}}
    assert compare_results.relayout("inside_bert_layers", old) == {
        "n_layers": 6, "peaks": {"propagated": {"scale_free": 4, "paper": 2}, "residual": {"scale_free": 7}}}


def test_old_layout_keys_the_converged_design_by_setup_identifier():
    seed = lambda a: {"seed": 0, "a": a, "sep_all": {"conditions hold": 1.0, "order-insensitive loss": 2.0},
                      "median": {"stationary corpus": 3.0}, "loss": {}}
    new = lambda a: {"seed": 0, "a": a, "sep_all": {"hold": 1.0, "control": 2.0}, "median": {"stationary": 3.0},
                     "loss": {}}
    old = {"ceiling": 0.5, "pilot": [seed(1.0)], "runs": [seed(2.0), seed(3.0)]}
    after = {"ceiling": 0.5, "pilot": [new(1.0)], "runs": [new(2.0), new(3.0)]}
    assert compare_results.relayout("separation.converged", old) == after
    assert compare_results.relayout("separation.converged", after) == after  # already in the new layout


def test_old_layout_names_the_lowrank_tables_by_identifier_and_finds_their_entries(tmp_path):
    run = lambda table: {"encoding": table, "seed": 0, "test_accuracy": 0.9}
    gap = {"mean": 0.01, "n": 2}
    old = {"runs": [run("lowrank r=1"), run("lowrank r=1 (σ 0.02)")], "level": 0.95,
           "summary": {"synthetic": {"lowrank r=1": {"n_seeds": 1}, "learned": {"n_seeds": 1}}},
           "gaps": {"synthetic": {"learned - lowrank r=1": gap, "learned - sinusoidal": gap,
                                  "lowrank r=1 - none": gap}}}
    new = {"runs": [run("lowrank_r1"), run("lowrank_r1_sigma0.02")], "level": 0.95,
           "summary": {"synthetic": {"lowrank_r1": {"n_seeds": 1}, "learned": {"n_seeds": 1}}},
           "gaps": {"synthetic": {"learned": {"lowrank_r1": gap, "sinusoidal": gap}, "lowrank_r1": {"none": gap}}}}
    for before, after in ((old, new), (new, new)):  # an entry already in the new layout is read as it is
        assert compare_results.relayout("minimal_parametrisation.lowrank_training", before) == after
    trained = {"encodings": [["none", "none", {}], ["lowrank r=1 (σ 0.02)", "lowrank", {"rank": 1, "sigma": 0.02}]],
               "sst2_encodings": ["none", "lowrank r=1"], "seed": 0}
    assert compare_results.relayout_params("minimal_parametrisation.lowrank_training", trained) == {
        "encodings": [["none", "none", {}], ["lowrank_r1_sigma0.02", "lowrank", {"rank": 1, "sigma": 0.02}]],
        "sst2_encodings": ["none", "lowrank_r1"], "seed": 0}

    # the powered design: its seeds' tables and stalled runs, and its parameters, whose hash is the entry's folder
    from posgeom.registry.manifest import params_key

    seeds = lambda b: [{"seed": 0, "a": 0.9, "b": 0.8, "tables": [run("learned"), run(b)]}]
    powered = lambda b: {"pilot": seeds(b), "runs": seeds(b), "stalled": {"learned": [], b: [3]}}
    params = lambda b: {"design": {"encodings": ["learned", b], "steps": 2000}, "seed": 0}
    experiment = "minimal_parametrisation.lowrank_powered"
    for b in ("lowrank r=1", "lowrank_r1"):
        assert compare_results.relayout(experiment, powered(b)) == powered("lowrank_r1")
        assert compare_results.relayout_params(experiment, params(b)) == params("lowrank_r1")
    for side, b in (("before", "lowrank r=1"), ("after", "lowrank_r1")):
        key = params_key(params(b))
        pointer_entry(tmp_path / side, experiment, key, powered(b))
        (tmp_path / side / "quick" / experiment / key / "v-abc" / "manifest.json").write_text(
            json.dumps({"params": params(b)}))
    assert any("missing after" in d for d in compare_results.compare(tmp_path / "before", tmp_path / "after"))
    assert compare_results.main([str(tmp_path / "before"), str(tmp_path / "after"), "--old-layout"]) == 0


def test_old_layout_keys_the_converged_parameters_by_setup_identifier():
    old = {"data_seed": 0, "setups": {"conditions hold": {"corpus": "drift", "task": "mlm"},
                                      "order-insensitive loss": {"corpus": "drift", "task": "bag"}}}
    new = {"data_seed": 0, "setups": {"hold": {"corpus": "drift", "task": "mlm"},
                                      "control": {"corpus": "drift", "task": "bag"}}}
    assert compare_results.relayout_params("separation.converged", old) == new
    assert compare_results.relayout_params("separation.converged", new) == new
