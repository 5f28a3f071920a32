"""``posgeom reproduce --cpu-parts --jobs 2`` against ``--jobs 1``: wall time and the numbers, in one run.

Runs the same CPU parts twice into two empty temporary registries, one after another (``jobs=1``, the
reference) and in two lanes (``jobs=2``), and reports each mode's wall time and whether every stored value and
array is equal bit for bit between the two. The default parts are the powered designs of S7 and S9 (the
learned-tables chapter, about 6.5 minutes each on one core): each pins PyTorch to one thread, so a sequential
run leaves the second core idle.

Run from a clean checkout (paper-scale results are refused from a dirty one), on a quiet machine::

    python benchmarks/bench_cpu_parts_jobs.py            # about 20 minutes on 2 cores
    python benchmarks/bench_cpu_parts_jobs.py --parts learned_powered:run_init_powered

Nothing is written to ``results/``; the figures go to ``benchmarks/README.md`` by hand.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from posgeom.reproduce import CPU_PARTS, run_cpu_parts

DEFAULT_PARTS = ("learned_powered:run_init_powered", "learned_powered:run_dropout_powered")


def _stored(root: Path) -> dict[str, tuple[dict, dict]]:
    """Each stored entry of a registry folder: (values, arrays), by experiment and key (the version folder below
    them is named afresh by each write)."""
    out = {}
    for result in sorted(root.rglob("result.json")):
        name = str(result.parent.parent.relative_to(root))
        arrays_file = result.parent / "arrays.npz"
        arrays = dict(np.load(arrays_file)) if arrays_file.is_file() else {}
        data = json.loads(result.read_text())
        out[name] = (data.get("values", data), arrays)
    return out


def _without_timings(values):
    """The stored values less the wall times (``seconds``), which differ from run to run by nature."""
    if isinstance(values, dict):
        return {k: _without_timings(v) for k, v in values.items() if k != "seconds"}
    if isinstance(values, list):
        return [_without_timings(v) for v in values]
    return values


def run(parts, jobs: int, folder: Path) -> float:
    os.environ["POSGEOM_RESULTS_DIR"] = str(folder)
    start = time.perf_counter()
    out = run_cpu_parts("paper", None, parts=parts, jobs=jobs)
    seconds = time.perf_counter() - start
    failed = [(p.name, status) for p, status, _ in out if status != "stored"]
    if failed:
        raise SystemExit(f"jobs={jobs}: {failed}")
    return seconds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", default=list(DEFAULT_PARTS), metavar="MODULE:FUNCTION",
                        help="entries of posgeom.reproduce.CPU_PARTS (default: S7's and S9's powered designs)")
    args = parser.parse_args(argv)
    known = {p.entry: p for p in CPU_PARTS}
    unknown = [e for e in args.parts if e not in known]
    if unknown:
        raise SystemExit(f"not CPU parts: {unknown}; choose from {sorted(known)}")
    parts = tuple(known[e] for e in args.parts)
    with tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as two:
        t1 = run(parts, 1, Path(one))
        t2 = run(parts, 2, Path(two))
        a, b = _stored(Path(one)), _stored(Path(two))
        differ = sorted(a.keys() ^ b.keys()) + [
            k for k in a.keys() & b.keys()
            if _without_timings(a[k][0]) != _without_timings(b[k][0]) or a[k][1].keys() != b[k][1].keys()
            or not all(np.array_equal(a[k][1][n], b[k][1][n], equal_nan=True) for n in a[k][1])]
        same = not differ
    print(f"parts: {', '.join(p.name for p in parts)} (cores: {os.cpu_count()})")
    print(f"| mode | wall time |\n|---|---|\n| --jobs 1 (reference) | {t1 / 60:.1f} min |\n| --jobs 2 | {t2 / 60:.1f} min |")
    print(f"speed-up {t1 / t2:.2f}x; stored values and arrays equal bit for bit: {same}"
          + (f" (entries that differ: {differ})" if differ else f" ({len(a)} entries)"))
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
