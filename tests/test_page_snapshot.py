"""scripts/page_snapshot.py: what a page shows, read from stored results only, and the comparison of two snapshots."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "page_snapshot.py"


def _module():
    spec = importlib.util.spec_from_file_location("page_snapshot", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _snap(glue=None, display=(), errors=(), claims=None):
    return {"glue": dict(glue or {}), "display": list(display), "errors": list(errors), "claims": dict(claims or {})}


def test_differences_names_every_changed_value_and_nothing_else():
    diff = _module().differences
    before = _snap({"t1_rate": "0.25", "t1_worst": "'alibi'"}, ["table:a,b\n1,2\n"], [],
                   {"c": [{"claim": "C1", "verdict": "reproduced"}]})
    assert diff(before, json.loads(json.dumps(before))) == []
    after = json.loads(json.dumps(before))
    after["glue"]["t1_rate"] = "0.26"
    after["display"].append("printed:hello\n")
    after["claims"]["c"][0]["verdict"] = "not reproduced"
    found = diff(before, after)
    assert len(found) == 3
    assert found[0].startswith("glue[t1_rate]") and "0.26" in found[0]
    assert found[1].startswith("claims[c]") and "not reproduced" in found[1]
    assert found[2].startswith("display[1]") and "hello" in found[2]
    # a glued value that disappears is a difference too
    gone = json.loads(json.dumps(before))
    del gone["glue"]["t1_worst"]
    assert [f.split(":")[0] for f in diff(before, gone)] == ["glue[t1_worst]"]


def test_a_snapshot_reads_only_and_is_the_same_twice(tmp_path):
    """Run on a chapter against an empty registry: nothing is computed or written, a cell whose result is not
    stored fails inside the snapshot (not the script), and two runs agree."""
    results = tmp_path / "results"
    results.mkdir()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(REPO)}
    outs = []
    for k in range(2):
        out = tmp_path / f"snap{k}.json"
        run = subprocess.run([sys.executable, str(SCRIPT), "optimal-encoding", str(out), "--scale", "quick",
                              "--results", str(results)], cwd=REPO, env=env, capture_output=True, text=True,
                             timeout=600)
        assert run.returncode == 0, run.stderr[-2000:]
        outs.append(out)
    snap = json.loads(outs[0].read_text())
    assert snap["errors"][0].startswith("cell 2: RuntimeError: page snapshot: this result is not stored")
    assert snap["glue"]  # the cells that read no result still ran
    # the page as a download writes it: numbers glued by the cells that ran, the cell named for the others
    page = "\n".join(snap["page"])
    assert "{glue" not in page and "[number: run code cell" in page
    assert any(p.startswith("caption: ") and "Scale quick" in p for p in snap["page"])
    assert list(results.rglob("*")) == []  # nothing written
    compare = subprocess.run([sys.executable, str(SCRIPT), "--compare", *map(str, outs)], cwd=REPO, env=env,
                             capture_output=True, text=True, timeout=120)
    assert compare.returncode == 0 and compare.stdout.strip() == "IDENTICAL", compare.stdout


def test_a_chapter_that_does_not_exist_is_refused_in_one_line(tmp_path):
    run = subprocess.run([sys.executable, str(SCRIPT), "no-such-chapter", str(tmp_path / "x.json")], cwd=REPO,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "notebooks/no-such-chapter.md does not exist" in run.stderr


def test_page_only_compares_the_prose_not_the_glued_names():
    """Two snapshots whose glued names differ but whose prose is the same compare equal with ``page_only``; a
    re-wrapped paragraph reads the same; a number written otherwise is a difference."""
    module = _module()
    before = {**_snap({"t1_rate": "0.256"}), "page": ["Rate 0.26."]}
    renamed = {**_snap({"rate": "0.256"}), "page": ["Rate 0.26."]}
    assert module.differences(before, renamed, page_only=True) == []
    assert [f.split(":")[0] for f in module.differences(before, renamed)] == ["glue[rate]", "glue[t1_rate]"]
    rewrapped = {**renamed, "page": ["Rate\n 0.26."]}
    assert module.differences(before, rewrapped, page_only=True) == []
    moved = {**renamed, "page": ["Rate 0.256."]}
    assert [f.split(":")[0] for f in module.differences(before, moved, page_only=True)] == ["page[0]"]
