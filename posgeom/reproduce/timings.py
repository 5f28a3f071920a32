"""The chapters' measured times: one source for the teaching page, the chapters and the summary.

``benchmarks/chapter_times.py`` writes :data:`CHAPTER_TIMES_FILE` from a cold build's jupyter-cache; the
book's extension turns it into the MyST substitutions ``{{ time_<chapter> }}`` and ``{{ memory_<chapter> }}``, and the exported
notebooks (:mod:`posgeom.notebooks`, the downloads and the classroom editions) write the same words.
"""

from __future__ import annotations

from typing import Collection, Sequence

from ..timings import BOOK_BUILD, CHAPTER_TIMES_FILE, NOT_MEASURED, chapter_times, format_duration, format_memory
from .chapters import CHAPTERS, Chapter


#: Chapters of the book that check no claim (not in :data:`~posgeom.reproduce.CHAPTERS`), also timed.
OTHER_CHAPTERS = ("getting-started", "your-own-corpus", "diagnose-your-model")


def chapter_time_substitutions(times: dict[str, float], chapters: Sequence[Chapter] = CHAPTERS,
                               others: Collection[str] = OTHER_CHAPTERS,
                               memory: dict[str, float] | None = None) -> dict[str, str]:
    """MyST substitutions ``time_<slug>`` (hyphens as underscores) → the chapter's measured time, and
    ``memory_<slug>`` → the peak memory of the same run (``memory``, :func:`posgeom.timings.chapter_memory`).

    Every chapter of ``chapters``, ``others`` and ``times`` gets both (:data:`NOT_MEASURED` where
    unmeasured), so a page may name any chapter's time as ``{{ time_real_corpora }}``; the whole cold build
    (``posgeom.timings.BOOK_BUILD``) is ``{{ time_book_build }}``.
    """
    slugs = dict.fromkeys([c.slug for c in chapters] + list(others) + [BOOK_BUILD] + list(times))
    out = {"time_" + slug.replace("-", "_"): format_duration(times.get(slug)) for slug in slugs}
    out.update({"memory_" + slug.replace("-", "_"): format_memory((memory or {}).get(slug))
                for slug in slugs if slug != BOOK_BUILD})
    return out


__all__ = ["CHAPTER_TIMES_FILE", "NOT_MEASURED", "OTHER_CHAPTERS", "chapter_times", "format_duration",
           "chapter_time_substitutions"]
