"""``scripts/gpu-slice``: the GPU window's script runs end to end on a CPU with ``--dry-run``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "gpu-slice"


def run(*args, timeout=600):
    env = {**os.environ, "PYTHON": sys.executable, "HF_HUB_OFFLINE": "1", "POSGEOM_PROGRESS": "0"}
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=timeout, cwd=ROOT)


@pytest.mark.slow
def test_dry_run_checks_the_device_benchmarks_and_lists_the_slices():
    done = run("--dry-run")
    assert done.returncode == 0, done.stderr[-2000:]
    text = done.stdout
    assert "cost model" in text  # reproduce --list --scale paper ran
    summary = json.loads(text.split("summary (paste into benchmarks/README.md):", 1)[1].split("[gpu-slice] then", 1)[0])
    assert summary["dry_run"] is True and summary["benchmark_rc"] == 0 and summary["reproduce_rc"] == 0
    assert summary["benchmark"]["results"]["posgeom"]["tokens_per_s"] > 0
    assert not summary["recorded_in"].startswith("benchmarks/")  # a dry run leaves the windows' log alone
    assert json.loads(Path(summary["recorded_in"]).read_text().splitlines()[-1])["dry_run"] is True


def test_a_bad_window_is_one_line():
    done = run("--total", "nine", "--dry-run", timeout=1800)
    assert done.returncode != 0
    assert done.stderr.strip().splitlines()[-1].startswith("gpu-slice: error: budget 'nine'")
