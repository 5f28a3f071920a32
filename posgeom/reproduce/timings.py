"""The chapters' measured times as the book's MyST substitutions ``{{ time_<chapter> }}`` and ``{{ memory_<chapter> }}``."""

from __future__ import annotations

from typing import Collection, Sequence

from ..timings import BOOK_BUILD, CHAPTER_TIMES_FILE, NOT_MEASURED, chapter_times, format_duration, format_memory
from .chapters import CHAPTERS, Chapter

#: Chapters of the book that check no claim (not in :data:`~posgeom.reproduce.CHAPTERS`), also timed.
OTHER_CHAPTERS = ("getting-started", "your-own-corpus", "diagnose-your-model")


def chapter_time_substitutions(times: dict[str, float], chapters: Sequence[Chapter] = CHAPTERS,
                               others: Collection[str] = OTHER_CHAPTERS,
                               memory: dict[str, float] | None = None) -> dict[str, str]:
    """MyST substitutions ``time_<slug>`` and ``memory_<slug>`` (hyphens as underscores) for every chapter of
    ``chapters``, ``others`` and ``times`` (:data:`NOT_MEASURED` where unmeasured); the whole cold build is
    ``time_book_build``."""
    slugs = dict.fromkeys([c.slug for c in chapters] + list(others) + [BOOK_BUILD] + list(times))
    out = {"time_" + slug.replace("-", "_"): format_duration(times.get(slug)) for slug in slugs}
    out.update({"memory_" + slug.replace("-", "_"): format_memory((memory or {}).get(slug))
                for slug in slugs if slug != BOOK_BUILD})
    return out


__all__ = ["CHAPTER_TIMES_FILE", "NOT_MEASURED", "OTHER_CHAPTERS", "chapter_times", "format_duration",
           "chapter_time_substitutions"]
