"""Benchmark (issue 32): what a fresh Python process of the test command and the book build pays before it
does any work, measured against its reference in the same run.

Two costs, each in fresh processes (best of ``--repeat``):

* **The code key of code defined outside the package** (a notebook's ``__main__``, a test's script: every
  ``Registry.save`` from there): the whole package. The reference walks the import graph of every module
  (``codekey._dependencies_at``, what :func:`posgeom.codekey.module_dependencies` did for every input
  before); the shortcut knows that the closure of the whole package is the package. Both keys are checked
  equal.
* **Importing nbclient** (every process that reads or runs a notebook: the book's executors, ``posgeom
  reproduce``, ``posgeom classroom``), next to ``import jsonschema._format`` and, when it is installed,
  ``import rfc3987_syntax`` (which jsonschema >= 4.25 imports and which builds its Earley parsers at import;
  ``pyproject.toml`` pins jsonschema below 4.25).
* **Importing the geometry** (every kernel, worker and most test processes): ``import posgeom.geometry``
  next to its reference, the same import with ``scipy.stats`` loaded first, as ``geometry/monotonicity.py``
  did at its top before it imported ``kendalltau`` and ``spearmanr`` inside the two functions using them.

Run from the repository root::

    python benchmarks/bench_process_start.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

KEY_NEW = "import posgeom.codekey as c; print(c.code_key(c.all_modules()))"
# the reference: the import graph of every module walked, then the same hash over what it returns
KEY_REFERENCE = (
    "import hashlib, posgeom.codekey as c\n"
    "root = c.package_root()\n"
    "names = c._dependencies_at(tuple(sorted(c.all_modules())), root, c._source_stamp(root))\n"
    "d = hashlib.sha256()\n"
    "for n in names:\n"
    "    d.update(n.encode() + b'\\0'); d.update(c.keyed_source(c._module_file(n, root).read_bytes()) + b'\\0')\n"
    "print(d.hexdigest()[:16])"
)


def best_of(code: str, repeat: int, env: dict) -> tuple[float, str]:
    times, out = [], ""
    for _ in range(repeat):
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        out = done.stdout.strip()
    return min(times), out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of each command (best is kept)")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    rows = {
        "python -c pass (interpreter start-up)": "pass",
        "import posgeom.codekey": "import posgeom.codekey",
        "whole-package code key, reference (graph walked)": KEY_REFERENCE,
        "whole-package code key (posgeom)": KEY_NEW,
        "import posgeom.geometry, reference (scipy.stats first)": "import scipy.stats, posgeom.geometry",
        "import posgeom.geometry": "import posgeom.geometry; import sys; assert 'scipy.stats' not in sys.modules",
        "import jsonschema._format": "import jsonschema._format",
        "import nbclient": "import nbclient",
    }
    if importlib.util.find_spec("rfc3987_syntax") is not None:
        rows["import rfc3987_syntax (jsonschema >= 4.25 imports it)"] = "import rfc3987_syntax"
    results = {label: best_of(code, args.repeat, env) for label, code in rows.items()}
    for label, (seconds, _) in results.items():
        print(f"{label:<56} {seconds:6.2f} s")
    same = results["whole-package code key (posgeom)"][1] == results["whole-package code key, reference (graph walked)"][1]
    print(f"the two whole-package keys are {'equal' if same else 'DIFFERENT'}")
    if "import rfc3987_syntax (jsonschema >= 4.25 imports it)" not in results:
        print("rfc3987_syntax is not installed (jsonschema < 4.25 does not ask for it)")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
