"""The measured time of each chapter (issue 31): one source for the teaching page, the chapters'
"What this chapter needs" boxes and the summary.

jupyter-cache records how long each notebook took when the book build executed it
(``execution_seconds`` of its cache record). After a *cold* build — no stored results, no cache — this
script reads those records and writes ``book/chapter-times.json`` (``posgeom.timings.CHAPTER_TIMES_FILE``),
which the book's extension turns into the substitutions ``{{ time_<chapter> }}`` on every build.

Run from the repository root, after a cold build::

    rm -rf _build/.jupyter_cache results/quick
    bash scripts/book
    python benchmarks/chapter_times.py [--cache _build/.jupyter_cache] [--out book/chapter-times.json]

then commit ``book/chapter-times.json`` and build again (nothing is executed again: only the text changes).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from posgeom.timings import CHAPTER_TIMES_FILE  # noqa: E402  (after the checkout is on the path)

#: The folder of the chapters: only notebooks from it are chapters.
CHAPTER_FOLDER = "notebooks"


def _latest_records(cache_dir: Path) -> dict[str, object]:
    """The latest jupyter-cache record of each chapter of :data:`CHAPTER_FOLDER`, by slug."""
    from jupyter_cache import get_cache

    if not (cache_dir / "global.db").is_file():
        raise SystemExit(f"no jupyter-cache at {cache_dir}: build the book first (bash scripts/book)")
    latest: dict[str, object] = {}
    for record in get_cache(str(cache_dir)).list_cache_records():
        path = Path(record.uri)
        if path.parent.name == CHAPTER_FOLDER and (path.stem not in latest or record.created > latest[path.stem].created):
            latest[path.stem] = record
    return latest


def cached_times(cache_dir: Path) -> dict[str, float]:
    """Seconds per chapter slug from a jupyter-cache folder: the latest record of each chapter."""
    seconds = {slug: (record.data or {}).get("execution_seconds") for slug, record in _latest_records(cache_dir).items()}
    return {slug: round(float(value), 1) for slug, value in sorted(seconds.items()) if value is not None}


def cached_memory(cache_dir: Path) -> dict[str, float]:
    """Peak resident memory (GB) of each chapter's kernel, as ``posgeom book`` measured it (chapters executed
    by a build that did not measure it are left out)."""
    peaks = {slug: (record.data or {}).get("peak_rss_bytes") for slug, record in _latest_records(cache_dir).items()}
    return {slug: round(value / 1e9, 2) for slug, value in sorted(peaks.items()) if value is not None}


def slowest_cells(cache_dir: Path, count: int) -> list[tuple[float, str, int, str]]:
    """The ``count`` slowest code cells of the cached chapters: (seconds, chapter, cell number, first line),
    from the seconds per code cell that ``posgeom book`` stores with each page."""
    from jupyter_cache import get_cache

    cache = get_cache(str(cache_dir))
    latest = _latest_records(cache_dir)
    found = []
    for slug, record in latest.items():
        per_cell = (record.data or {}).get("cell_seconds") or []  # written by posgeom.reproduce.book
        code = [c for c in cache.get_cache_bundle(record.pk).nb.cells if c.cell_type == "code"] if per_cell else []
        for k, (cell, seconds) in enumerate(zip(code, per_cell), 1):
            if seconds is not None:
                first = next((ln.strip() for ln in cell.source.splitlines() if ln.strip() and not ln.startswith("#")), "")
                found.append((seconds, slug, k, first[:70]))
    return sorted(found, reverse=True)[:count]


def times_document(seconds: dict[str, float], *, measured_on: str, cpus: int | None,
                   memory_gb: dict[str, float] | None = None, build_seconds: float | None = None,
                   commit: str | None = None) -> dict:
    """The JSON document written to :data:`posgeom.timings.CHAPTER_TIMES_FILE`: each chapter's seconds and
    peak memory and, when measured (``bench_book_build.py --write-times``), the wall time of the whole cold
    build."""
    document = {
        "about": ("Seconds of a cold run of each chapter at quick scale (no stored results), as executed by the "
                  "book build and recorded by jupyter-cache; peak_memory_gb: the peak resident memory of each "
                  "chapter's kernel in that run; book_build_seconds: the wall time of the book command's cold "
                  "build from a fresh clone (environment made, nothing cached). Written by "
                  "benchmarks/bench_book_build.py --write-times or benchmarks/chapter_times.py."),
        "measured_on": measured_on,
        "cpus": cpus,
        "seconds": seconds,
    }
    if memory_gb:
        document["peak_memory_gb"] = memory_gb
    if build_seconds is not None:
        document["book_build_seconds"] = round(float(build_seconds), 1)
    if commit is not None:
        document["commit"] = commit
    return document


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=REPO / "_build" / ".jupyter_cache")
    parser.add_argument("--out", type=Path, default=REPO / CHAPTER_TIMES_FILE)
    parser.add_argument("--cells", type=int, metavar="N",
                        help="print the N slowest code cells (a profile per cell) and write nothing")
    args = parser.parse_args(argv)
    if args.cells:
        rows = slowest_cells(args.cache, args.cells)
        if not rows:
            raise SystemExit(f"no cell timings in {args.cache}: build with posgeom book first")
        for seconds, slug, k, first in rows:
            print(f"{seconds:7.1f} s  {slug:26s} cell {k:3d}  {first}")
        return 0
    seconds = cached_times(args.cache)
    if not seconds:
        raise SystemExit(f"the jupyter-cache at {args.cache} holds no executed chapter of {CHAPTER_FOLDER}/")
    # no whole-build time here: that is measured only from a fresh clone (bench_book_build.py --write-times),
    # and an older one would not belong with these chapter times
    document = times_document(seconds, measured_on=datetime.date.today().isoformat(), cpus=os.cpu_count(),
                              memory_gb=cached_memory(args.cache))
    args.out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    for slug, value in seconds.items():
        print(f"{slug:28s} {value:8.1f} s")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
