"""Committed paper-scale results (``results/paper/``) must be fresh: an entry a CPU can recompute whose
code key no longer matches the code fails this test (rerun it before the change lands); an entry that
needs a GPU is listed, and the summary page marks it stale."""

from __future__ import annotations

from pathlib import Path

import pytest

from posgeom.costmodel import needs_gpu
from posgeom.registry import Registry
from posgeom.reproduce import stale_paper_results

ROOT = Path(__file__).resolve().parent.parent


def test_committed_cpu_paper_results_are_fresh():
    stale = [s for s in stale_paper_results(ROOT / "results") if not s.needs_gpu]
    assert not stale, ("paper-scale results made by code that has changed since; recompute them on the CPU "
                       "(posgeom reproduce --scale paper --only <chapter>; posgeom results check --scale paper "
                       "lists them):\n" + "\n".join(map(str, stale)))


def test_stale_results_are_found_and_gpu_ones_told_apart(tmp_path, monkeypatch):
    from posgeom.reproduce import listing

    registry = Registry(tmp_path)
    common = dict(params={"a": 1}, scale="paper", seed=0, device="cpu", code="posgeom.experiments.zoo")
    for name in ("zoo.fresh", "zoo.table", "separation.drift.mlm.normal.wd0"):
        registry.save(name, {"x": 1}, **common)
    for chapter in ("theorem4-separation", "corpus-geometry"):  # a GPU chapter's verdicts and a CPU one's
        registry.save("claims", {"chapter": chapter, "rows": []}, **{**common, "params": {"chapter": chapter}})
    assert stale_paper_results(tmp_path) == []  # written by the current code: all fresh
    # made by "other code": the two entries' code keys no longer match
    real = listing.code_changed
    monkeypatch.setattr(listing, "code_changed", lambda m: m["experiment"] != "zoo.fresh" or real(m))
    stale = stale_paper_results(tmp_path)
    claims = {s.key: s.needs_gpu for s in stale if s.experiment == "claims"}
    from posgeom.registry import params_key

    assert claims == {params_key({"chapter": "theorem4-separation"}): True,
                      params_key({"chapter": "corpus-geometry"}): False}
    found = {s.experiment: s for s in stale if s.experiment != "claims"}
    assert set(found) == {"zoo.table", "separation.drift.mlm.normal.wd0"}
    assert not found["zoo.table"].needs_gpu and found["separation.drift.mlm.normal.wd0"].needs_gpu
    assert "posgeom.experiments.zoo" in str(found["zoo.table"])
    assert "a GPU" in str(found["separation.drift.mlm.normal.wd0"])


@pytest.mark.parametrize("name, gpu", [("separation.drift.mlm.normal.wd0", True), ("real_corpora_scratch_imdb", True),
                                       ("learned_init_study", True), ("separation.pretrained", False),
                                       ("corpus_geometry.sst2", False), ("necessity.equivariance", False)])
def test_needs_gpu(name, gpu):
    assert needs_gpu(name) is gpu


def test_results_check_says_which_stale_paper_entries_need_a_gpu(tmp_path, monkeypatch, capsys):
    from posgeom.cli import main
    from posgeom.registry import store

    registry = Registry(tmp_path)
    common = dict(params={"a": 1}, scale="paper", seed=0, device="cpu", code="posgeom.experiments.zoo")
    for name in ("zoo.table", "separation.drift.mlm.normal.wd0"):
        registry.save(name, {"x": 1}, **common)
    from posgeom.reproduce import listing

    from posgeom.registry import check

    for module in (store, check, listing):
        monkeypatch.setattr(module, "code_changed", lambda manifest: True)
    assert main(["results", "check", "--scale", "paper", "--results-dir", str(tmp_path), "--no-sweep"]) == 0
    lines = capsys.readouterr().out.splitlines()
    cpu = next(line for line in lines if "zoo.table" in line)
    gpu = next(line for line in lines if "separation.drift" in line)
    assert cpu.startswith("stale") and "a CPU recomputes it" in cpu
    assert gpu.startswith("stale") and "on a GPU" in gpu


def test_committed_manifests_hold_no_machine_path_and_a_clean_commit():
    """Committed provenance (issue 26): every manifest under results/paper records the command as typed (no
    absolute path: no ipykernel launcher, no worktree's cli.py) and a commit without ``+dirty``. When this
    fails, recompute results/paper from a clean commit: delete it, then ``posgeom reproduce --scale paper
    --device cpu --only encodings-at-a-glance corpus-geometry optimal-encoding sinusoids-as-mds inside-bert``
    and ``posgeom reproduce --scale paper --cpu-parts``."""
    import json
    import re

    absolute = re.compile(r'(^|[\s"=:,(\'])(~|[A-Za-z]:)?[/\\][A-Za-z0-9_.-]')
    manifests = sorted((ROOT / "results" / "paper").rglob("manifest.json"))
    assert manifests, "no committed paper results"
    bad = []
    for path in manifests:
        m = json.loads(path.read_text())
        where = path.relative_to(ROOT)
        if "argv" in m or not m.get("command"):
            bad.append(f"{where}: no command as typed (argv {m.get('argv')})")
        for key, value in m.items():
            if key != "params" and absolute.search(json.dumps(value)):
                bad.append(f"{where}: {key} holds an absolute path: {json.dumps(value)[:120]}")
        if absolute.search(json.dumps(m.get("params"))):
            bad.append(f"{where}: params hold an absolute path")
        if not m.get("git_commit") or str(m["git_commit"]).endswith("+dirty"):
            bad.append(f"{where}: git_commit {m.get('git_commit')!r} is not a clean commit")
    assert not bad, f"{len(bad)} problem(s) in {len(manifests)} manifests:\n" + "\n".join(bad[:20])


def _interval_records(value, where=""):
    """Every dict in a stored result that reads as an interval: an estimate (or mean) with its low and high."""
    if isinstance(value, dict):
        centre = next((k for k in ("estimate", "mean") if k in value), None)
        if centre is not None and "low" in value and "high" in value:
            yield where, value[centre], value["low"], value["high"]
        for key, item in value.items():
            yield from _interval_records(item, f"{where}/{key}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _interval_records(item, f"{where}[{i}]")


def test_committed_intervals_hold_their_estimate_and_bounds():
    """Every interval record in results/paper contains its estimate (percentile intervals re-centred on it,
    posgeom.geometry.bootstrap; Student-t over seeds, posgeom.geometry.intervals), and none crosses 0 from
    a quantity that cannot be negative (a stress, a rate, a share)."""
    import json
    import math

    problems, seen = [], 0
    for result in sorted((ROOT / "results" / "paper").rglob("result.json")):
        data = json.loads(result.read_text())
        values = data.get("values", data)  # result.json holds the values themselves
        for where, centre, low, high in _interval_records(values):
            if not all(isinstance(v, (int, float)) and math.isfinite(v) for v in (centre, low, high)):
                continue
            seen += 1
            if not low <= centre <= high:
                problems.append(f"{result.relative_to(ROOT)}{where}: {centre} not in [{low}, {high}]")
            if centre >= 0 and low < 0 and any(w in where.lower() for w in ("stress", "rate", "share", "match")):
                problems.append(f"{result.relative_to(ROOT)}{where}: a non-negative quantity with low {low} < 0")
    assert not problems, "\n".join(problems[:20])
    assert seen >= 20, f"only {seen} interval records found: has the record layout changed?"
