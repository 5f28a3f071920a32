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


def cached_times(cache_dir: Path) -> dict[str, float]:
    """Seconds per chapter slug from a jupyter-cache folder: the latest record of each chapter."""
    from jupyter_cache import get_cache

    if not (cache_dir / "global.db").is_file():
        raise SystemExit(f"no jupyter-cache at {cache_dir}: build the book first (bash scripts/book)")
    latest: dict[str, tuple] = {}
    for record in get_cache(str(cache_dir)).list_cache_records():
        path = Path(record.uri)
        seconds = (record.data or {}).get("execution_seconds")
        if path.parent.name != CHAPTER_FOLDER or seconds is None:
            continue
        if path.stem not in latest or record.created > latest[path.stem][0]:
            latest[path.stem] = (record.created, float(seconds))
    return {slug: round(seconds, 1) for slug, (_, seconds) in sorted(latest.items())}


def times_document(seconds: dict[str, float], *, measured_on: str, cpus: int | None) -> dict:
    """The JSON document written to :data:`posgeom.timings.CHAPTER_TIMES_FILE`."""
    return {
        "about": ("Seconds of a cold run of each chapter at quick scale (no stored results), as executed by the "
                  "book build and recorded by jupyter-cache; written by benchmarks/chapter_times.py."),
        "measured_on": measured_on,
        "cpus": cpus,
        "seconds": seconds,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=REPO / "_build" / ".jupyter_cache")
    parser.add_argument("--out", type=Path, default=REPO / CHAPTER_TIMES_FILE)
    args = parser.parse_args(argv)
    seconds = cached_times(args.cache)
    if not seconds:
        raise SystemExit(f"the jupyter-cache at {args.cache} holds no executed chapter of {CHAPTER_FOLDER}/")
    document = times_document(seconds, measured_on=datetime.date.today().isoformat(), cpus=os.cpu_count())
    args.out.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    for slug, value in seconds.items():
        print(f"{slug:28s} {value:8.1f} s")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
