"""scripts/params_snapshot.py: every experiment's first registry call recorded without computing, and a changed
parameter found by --compare."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "params_snapshot.py"

pytestmark = pytest.mark.slow


def _snapshot(path: Path, **env) -> dict:
    done = subprocess.run([sys.executable, str(SCRIPT), str(path), "--scales", "quick"], cwd=ROOT, text=True,
                          capture_output=True, env={**os.environ, **env}, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(path.read_text())


def test_a_changed_seed_is_found_and_nothing_is_computed(tmp_path):
    results = tmp_path / "results"
    before = _snapshot(tmp_path / "a.json", POSGEOM_RESULTS_DIR=str(results))
    assert not results.exists() or not any(results.rglob("manifest.json"))  # nothing computed or stored
    calls = [v for v in before.values() if "experiment" in v]
    assert len(calls) == len(before) > 40 and all(v["scale"] == "quick" and "params" in v for v in calls)
    assert sum(v.get("code", "").startswith("posgeom.experiments.") for v in calls) > 30
    after = _snapshot(tmp_path / "b.json", POSGEOM_RESULTS_DIR=str(results), POSGEOM_SEED="7")
    assert set(after) == set(before)
    compare = [sys.executable, str(SCRIPT), "--compare"]
    same = subprocess.run(compare + [str(tmp_path / "a.json")] * 2, capture_output=True, text=True)
    assert same.returncode == 0 and same.stdout.startswith("IDENTICAL")
    moved = subprocess.run(compare + [str(tmp_path / "a.json"), str(tmp_path / "b.json")], capture_output=True,
                           text=True)
    assert moved.returncode == 1 and "'seed': 7" in moved.stdout
