"""The GPU benchmark script runs end to end on the CPU (tiny config): its JSON holds the figures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_gpu_bert_base_smoke_run(tmp_path):
    out = tmp_path / "gpu.json"
    env = {**os.environ, "PYTHONPATH": str(REPO), "POSGEOM_RESULTS_DIR": str(tmp_path / "results")}
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "gpu_bert_base.py"), "--smoke", "--sst2",
                           "--out", str(out)], env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(out.read_text())
    row = report["results"]["posgeom"]
    assert report["smoke"] and row["tokens_per_s"] > 0 and row["mfu"] is None
    sst2 = report["sst2_like"]
    assert 8 < sst2["mean_length"] < 18 and sst2["padding"] == "bucket"
    assert sst2["bucket"]["real_tokens_per_s"] > 0 and sst2["speedup"] > 0
