"""Benchmark (issue 15): ``posgeom --help`` answers in under a second.

Measures, in fresh processes, the wall time of ``python -m posgeom.cli --help`` next to the reference
``python -c pass`` (the interpreter's own start-up, which no change to posgeom can remove) and to
``python -c "import posgeom.geometry"`` (what every command paid before the lazy imports). Prints the
best of ``--repeat`` runs of each; exit code 0 when ``--help`` takes under 1 s.

Run from the repository root::

    python benchmarks/bench_cli.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

TARGET_S = 1.0


def best_of(command: list[str], repeat: int, env: dict) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs of each command (best is kept)")
    args = parser.parse_args()
    repo = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    rows = {
        "python -c pass (interpreter start-up)": [sys.executable, "-c", "pass"],
        "import posgeom.geometry (the old eager import)": [sys.executable, "-c", "import posgeom.geometry"],
        "posgeom --help": [sys.executable, "-m", "posgeom.cli", "--help"],
    }
    results = {label: best_of(cmd, args.repeat, env) for label, cmd in rows.items()}
    for label, seconds in results.items():
        print(f"{label:<48} {seconds:6.2f} s")
    help_s = results["posgeom --help"]
    print(f"posgeom --help: {help_s:.2f} s (target < {TARGET_S:.0f} s): {'ok' if help_s < TARGET_S else 'MISSED'}")
    return 0 if help_s < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
