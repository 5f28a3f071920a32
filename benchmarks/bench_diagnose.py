"""``posgeom diagnose`` reads a position table without loading the checkpoint: memory and time.

A synthetic checkpoint (a BERT-base-shaped position table, 512 × 768, beside ``--filler-mib`` of other
float32 tensors) is written as ``model.safetensors`` in a scratch folder. Two child processes then read
the table: one with :class:`posgeom.diagnose.TensorReader` (``safe_open``, one tensor), one with the
reference ``safetensors.torch.load_file`` with every tensor materialised (what loading the model costs
at least). Each
reports the resident memory the read added (current and high-water mark, the larger) and its time; the tables must be equal.

    python benchmarks/bench_diagnose.py [--filler-mib 512]

Exit code 0 when the reader's peak memory stays below 5 % of the checkpoint's size.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
import numpy as np
mode, path = sys.argv[1], sys.argv[2]
import torch, safetensors.torch
from posgeom.diagnose import TensorReader
def rss_mib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
base, base_peak = rss_mib(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
if mode == "reader":
    table = TensorReader(path, "bench").get("embeddings.position_embeddings.weight")
else:
    # what loading the model does: every tensor materialised in memory (copied into its parameter)
    state = {k: v.clone() for k, v in safetensors.torch.load_file(path + "/model.safetensors").items()}
    table = state["embeddings.position_embeddings.weight"].double().numpy()
seconds = time.perf_counter() - t0
grown = rss_mib() - base  # resident memory the read added (its results kept alive)
peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base_peak) / 1024
print(json.dumps({"seconds": seconds, "peak_mib": max(grown, peak), "checksum": float(np.abs(table).sum())}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--filler-mib", type=int, default=512, help="size of the other tensors (default 512 MiB)")
    args = parser.parse_args()
    import numpy as np
    from safetensors.numpy import save_file

    with tempfile.TemporaryDirectory(prefix="posgeom-bench-diagnose-") as tmp:
        rng = np.random.default_rng(0)
        tensors = {"embeddings.position_embeddings.weight": rng.standard_normal((512, 768)).astype(np.float32)}
        per = 16 * 1024 * 1024  # 16 MiB tensors
        for k in range(max(1, args.filler_mib // 16)):
            tensors[f"encoder.layer.{k}.filler.weight"] = np.full(per // 4, k, dtype=np.float32)
        save_file(tensors, str(Path(tmp) / "model.safetensors"))
        size_mib = (Path(tmp) / "model.safetensors").stat().st_size / 2**20
        del tensors
        out = {}
        for mode in ("reader", "load_file"):
            run = subprocess.run([sys.executable, "-c", CHILD, mode, tmp], capture_output=True, text=True, check=True)
            out[mode] = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["reader"]["checksum"] == out["load_file"]["checksum"], "the two reads differ"
    r, f = out["reader"], out["load_file"]
    print(f"checkpoint {size_mib:.0f} MiB (position table 1.5 MiB)")
    print(f"TensorReader.get : {r['seconds'] * 1e3:8.1f} ms, peak memory +{r['peak_mib']:7.1f} MiB")
    print(f"load_file        : {f['seconds'] * 1e3:8.1f} ms, peak memory +{f['peak_mib']:7.1f} MiB")
    print(f"ratio (load_file / reader): time {f['seconds'] / r['seconds']:.1f}x, memory "
          f"{f['peak_mib'] / max(r['peak_mib'], 0.1):.1f}x")
    ok = r["peak_mib"] < 0.05 * size_mib
    print("target (reader peak < 5 % of the checkpoint):", "met" if ok else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
