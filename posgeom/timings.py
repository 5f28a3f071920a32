"""The chapters' measured times, as the book's cold build recorded them (one source for every page).

``benchmarks/chapter_times.py`` writes :data:`CHAPTER_TIMES_FILE`; the book turns it into the substitutions
``{{ time_<chapter> }}``, ``{{ memory_<chapter> }}`` and ``{{ time_book_build }}``.
"""

from __future__ import annotations

import json
from pathlib import Path

from .config import checkout_root

__all__ = ["BOOK_BUILD", "CHAPTER_TIMES_FILE", "NOT_MEASURED", "chapter_memory", "chapter_times", "format_duration",
           "format_memory", "time_substitution"]

#: The measured time of each chapter, relative to the checkout.
CHAPTER_TIMES_FILE = "book/chapter-times.json"
#: The key under which :func:`chapter_times` gives the wall time of the whole cold build from a fresh clone.
BOOK_BUILD = "book-build"
#: What a page says for a chapter the file does not hold.
NOT_MEASURED = "not measured yet"


def _by_slug(root: str | Path | None, key: str, default, what: str, valid) -> tuple[Path | None, dict, dict]:
    """:data:`CHAPTER_TIMES_FILE` of the checkout ``root``, its JSON and its ``key`` (``what`` numbers by slug)."""
    root = Path(root) if root is not None else checkout_root()
    path = None if root is None else Path(root) / CHAPTER_TIMES_FILE
    if path is None or not path.is_file():
        return None, {}, {}
    data = json.loads(path.read_text(encoding="utf-8"))
    values = data.get(key, default)
    if not isinstance(values, dict) or not all(isinstance(v, (int, float)) and valid(v) for v in values.values()):
        raise ValueError(f"{path}: '{key}' must map chapter slugs to {what} numbers; "
                         "write the file again with python benchmarks/chapter_times.py")
    return path, data, {str(k): float(v) for k, v in values.items()}


def chapter_times(root: str | Path | None = None) -> dict[str, float]:
    """Seconds of a cold run of each chapter at ``quick`` by slug, and of the whole build under :data:`BOOK_BUILD`
    (empty when the file is absent)."""
    path, data, times = _by_slug(root, "seconds", None, "non-negative", lambda v: v >= 0)
    build = data.get("book_build_seconds")
    if build is not None:
        if not isinstance(build, (int, float)) or build < 0:
            raise ValueError(f"{path}: 'book_build_seconds' must be a non-negative number; "
                             "write the file again with python benchmarks/bench_book_build.py --write-times")
        times[BOOK_BUILD] = float(build)
    return times


def chapter_memory(root: str | Path | None = None) -> dict[str, float]:
    """Peak resident memory (GB) of each chapter's kernel in the same build, by slug; empty when not measured."""
    return _by_slug(root, "peak_memory_gb", {}, "positive", lambda v: v > 0)[2]


def format_duration(seconds: float | None) -> str:
    """``"55 s"`` under two minutes, ``"6.5 min"`` from there; :data:`NOT_MEASURED` for None."""
    if seconds is None:
        return NOT_MEASURED
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def time_substitution(key: str, times: dict[str, float], memory: dict[str, float] | None = None) -> str | None:
    """The text of the substitution ``time_<chapter>`` or ``memory_<chapter>``; None for any other key."""
    if key.startswith("time_"):
        return format_duration(times.get(key[len("time_"):].replace("_", "-")))
    if key.startswith("memory_") and memory is not None:
        return format_memory(memory.get(key[len("memory_"):].replace("_", "-")))
    return None


def format_memory(gigabytes: float | None) -> str:
    """``"1.2 GB"``; :data:`NOT_MEASURED` for None."""
    return NOT_MEASURED if gigabytes is None else f"{gigabytes:.1f} GB"
