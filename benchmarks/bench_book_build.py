"""The cold build of the book from a fresh clone: the chapters run in parallel against one after another.

What a new reader waits for after ``bash scripts/book`` has made the environment: every chapter executed
with nothing cached (no results registry, no jupyter-cache), then the strict Sphinx build. Each arm
clones the commit into a temporary folder and runs ``posgeom book --jobs N`` there
with this environment's Python (the clone's package first on ``PYTHONPATH``, its own empty
``results/``, ``_build/``, token and count cache and ``datasets`` cache), timing the whole command. With a reference arm (``--reference-jobs``,
default 1: the chapters one after another, as Jupyter Book runs them) both arms run in the same call, so
a busy machine slows both, and their registries are compared entry by entry
(``compare_results.py``): running chapters side by side must change no number and no verdict.

Run from the repository root, on a committed tree::

    python benchmarks/bench_book_build.py [--jobs 2] [--reference-jobs 1 | --no-reference] [--rev HEAD]
        [--out benchmarks/book-build.json] [--keep] [--write-times]

``--write-times`` writes the measured arm's times (each chapter, and the whole build) to
``book/chapter-times.json``: the one source of the pages' ``{{ time_... }}`` and of the README's figure.

Exit code 0 when every arm built and the registries agree.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from chapter_times import cached_memory, cached_times, times_document  # noqa: E402  (beside this file)
from compare_results import compare  # noqa: E402


def clone(rev: str, into: Path) -> Path:
    """A fresh clone of ``rev`` of this repository in ``into/p`` (nothing ignored comes along)."""
    target = into / "p"
    subprocess.run(["git", "clone", "--quiet", "--no-checkout", str(REPO), str(target)], check=True)
    subprocess.run(["git", "-C", str(target), "checkout", "--quiet", rev], check=True)
    return target


def data_dir() -> str | None:
    """Where this environment takes the corpora from (the clone has no data folder beside it)."""
    import posgeom  # noqa: F401  (fills POSGEOM_DATA_DIR from the checkout's data folder, when there is one)

    return os.environ.get("POSGEOM_DATA_DIR")


def build(checkout: Path, jobs: int) -> dict:
    """Run the book command's build in ``checkout`` with ``jobs`` kernels; its wall time, exit code and
    the pages' execution times."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "POSGEOM_PROGRESS": "0", "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.pop("POSGEOM_RESULTS_DIR", None)  # the clone's own, empty results/
    # nothing cached: token and count caches, and the datasets library's, start empty in each arm
    env["POSGEOM_CACHE_DIR"] = str(checkout.parent / "cache")
    env["HF_DATASETS_CACHE"] = str(checkout.parent / "hf-datasets")
    data = data_dir()
    if data:
        env["POSGEOM_DATA_DIR"] = data
    log = checkout / "build.log"
    started = time.perf_counter()
    with log.open("w") as handle:
        code = subprocess.run([sys.executable, "-m", "posgeom.cli", "book", "--jobs", str(jobs)],
                              cwd=checkout, env=env, stdout=handle, stderr=subprocess.STDOUT).returncode
    wall = time.perf_counter() - started
    text = log.read_text(errors="replace")
    executed = re.findall(r"\((\d+) s in all\)", text)
    cache = checkout / "_build" / ".jupyter_cache"
    return {"jobs": jobs, "exit_code": code, "wall_s": round(wall, 1),
            "execution_wall_s": float(executed[-1]) if executed else None,
            "pages_s": cached_times(cache) if (cache / "global.db").is_file() else {},
            "pages_peak_gb": cached_memory(cache) if (cache / "global.db").is_file() else {},
            "log_tail": "\n".join(text.splitlines()[-15:]) if code else ""}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2, help="kernels at once in the measured arm (default 2)")
    parser.add_argument("--reference-jobs", type=int, default=1, help="kernels at once in the reference arm (default 1)")
    parser.add_argument("--no-reference", action="store_true", help="run the measured arm only")
    parser.add_argument("--rev", default="HEAD", help="the commit to clone (default HEAD)")
    parser.add_argument("--out", type=Path, help="write the figures as JSON here")
    parser.add_argument("--keep", action="store_true", help="keep the clones (their logs and registries)")
    parser.add_argument("--write-times", action="store_true",
                        help="write the measured arm's chapter times and build time to this checkout's "
                             "book/chapter-times.json (the one source the pages and the README quote)")
    args = parser.parse_args(argv)
    if subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                      capture_output=True, text=True).stdout.strip() and args.rev == "HEAD":
        print("note: the working tree has uncommitted changes; the clone builds the last commit", file=sys.stderr)
    rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", args.rev], capture_output=True, text=True,
                         check=True).stdout.strip()
    arms = [args.jobs] + ([] if args.no_reference else [args.reference_jobs])
    work = Path(tempfile.mkdtemp(prefix="posgeom-bench-book-"))
    results, checkouts = [], []
    try:
        for jobs in arms:
            checkout = clone(rev, work / f"jobs{jobs}")
            checkouts.append(checkout)
            print(f"[bench] jobs={jobs}: building a fresh clone of {rev[:10]} in {checkout}", flush=True)
            result = build(checkout, jobs)
            results.append(result)
            print(f"[bench] jobs={jobs}: exit {result['exit_code']}, {result['wall_s'] / 60:.1f} min "
                  f"(chapters {(result['execution_wall_s'] or 0) / 60:.1f} min)", flush=True)
            if result["exit_code"]:
                print(result["log_tail"])
        differences = None
        if len(checkouts) == 2 and all(r["exit_code"] == 0 for r in results):
            differences = compare(checkouts[1] / "results", checkouts[0] / "results", scale="quick")
        document = {"commit": rev, "cpus": os.cpu_count(), "machine": platform.platform(),
                    "load_average_at_end": os.getloadavg(), "arms": results,
                    "registries_differ": differences}
        print(f"\n{'jobs':>5} {'exit':>5} {'build':>10} {'chapters':>10}")
        for r in results:
            print(f"{r['jobs']:>5} {r['exit_code']:>5} {r['wall_s'] / 60:>8.1f} m "
                  f"{(r['execution_wall_s'] or 0) / 60:>8.1f} m")
        if len(results) == 2 and results[1]["wall_s"]:
            print(f"speed-up of jobs={results[0]['jobs']} over jobs={results[1]['jobs']}: "
                  f"{results[1]['wall_s'] / results[0]['wall_s']:.2f}x")
        if differences is not None:
            print("registries: " + ("every number and verdict the same" if not differences
                                    else f"{len(differences)} difference(s):\n  " + "\n  ".join(differences[:20])))
        if args.out:
            args.out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        ok = all(r["exit_code"] == 0 for r in results) and not differences
        if args.write_times and ok and results[0]["pages_s"]:
            from posgeom.timings import CHAPTER_TIMES_FILE

            times = times_document(results[0]["pages_s"], measured_on=time.strftime("%Y-%m-%d"), cpus=os.cpu_count(),
                                   memory_gb=results[0]["pages_peak_gb"], build_seconds=results[0]["wall_s"],
                                   commit=rev[:10])
            (REPO / CHAPTER_TIMES_FILE).write_text(json.dumps(times, indent=2) + "\n", encoding="utf-8")
            print(f"wrote {REPO / CHAPTER_TIMES_FILE} (build {results[0]['wall_s'] / 60:.1f} min)")
        return 0 if ok else 1
    finally:
        if args.keep:
            print(f"[bench] clones kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
