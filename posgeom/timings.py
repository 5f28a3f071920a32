"""The chapters' measured times, as the book's build recorded them (one source for every page).

``benchmarks/chapter_times.py`` writes :data:`CHAPTER_TIMES_FILE` from a cold build's jupyter-cache. The
book's extension turns it into the MyST substitutions ``{{ time_<chapter> }}``
(:func:`posgeom.reproduce.chapter_time_substitutions`), and the exported notebooks
(:mod:`posgeom.notebooks`) write the same words.
"""

from __future__ import annotations

from pathlib import Path

from .config import checkout_root

#: The measured time of each chapter, relative to the checkout: written by
#: ``benchmarks/chapter_times.py`` from a cold build's jupyter-cache, committed with the book.
CHAPTER_TIMES_FILE = "book/chapter-times.json"
#: What a page says for a chapter the file does not hold.
NOT_MEASURED = "not measured yet"


def chapter_times(root: str | Path | None = None) -> dict[str, float]:
    """Seconds of a cold run of each chapter at ``quick``, by chapter slug (:data:`CHAPTER_TIMES_FILE`).

    Empty when the file is absent (a checkout that has not measured its build).
    """
    import json

    root = Path(root) if root is not None else checkout_root()
    path = None if root is None else Path(root) / CHAPTER_TIMES_FILE
    if path is None or not path.is_file():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    seconds = data.get("seconds")
    if not isinstance(seconds, dict) or not all(isinstance(v, (int, float)) and v >= 0 for v in seconds.values()):
        raise ValueError(f"{path}: 'seconds' must map chapter slugs to non-negative numbers; "
                         "write the file again with python benchmarks/chapter_times.py")
    return {str(k): float(v) for k, v in seconds.items()}


def format_duration(seconds: float | None) -> str:
    """``"55 s"`` under two minutes, ``"6.5 min"`` from there; :data:`NOT_MEASURED` for None."""
    if seconds is None:
        return NOT_MEASURED
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min"



def time_substitution(key: str, times: dict[str, float]) -> str | None:
    """The text of the substitution ``time_<chapter>`` (hyphens as underscores) from ``times``; None for
    a key that is not a chapter's time."""
    if not key.startswith("time_"):
        return None
    return format_duration(times.get(key[len("time_"):].replace("_", "-")))


__all__ = ["CHAPTER_TIMES_FILE", "NOT_MEASURED", "chapter_times", "format_duration", "time_substitution"]
