"""The box "What this chapter needs" (or "What this page needs"), one text for the book and the downloads.

What every box shares is written here; what differs from chapter to chapter is ``posgeom.reproduce.facts``.
"""

from __future__ import annotations

from pathlib import Path

from ..timings import chapter_memory, chapter_times
from .parts import chapter_needs, paper_parts

__all__ = ["needs_title", "needs_box"]


def needs_title(page: str) -> str:
    """The title of ``page``'s box."""
    from .facts import CHAPTER_FACTS
    return "What this chapter needs" if page in CHAPTER_FACTS else "What this page needs"


def _parts_table(parts) -> list[str]:
    """The parts of a chapter at ``paper`` scale as a Markdown table."""
    rows = ["| part | stored results | time at paper scale | status |", "| --- | ---: | --- | --- |"]
    for p in parts:
        rows.append(f"| `{p.part}` | {p.entries:,} | {p.cost} | {p.status} |")
    return rows


def needs_box(page: str, settings=None, *, root: str | Path | None = None, registry=None) -> str:
    """The text of ``page``'s box "What this chapter needs" (or "What this page needs"), as Markdown.

    A chapter's box gives its measured cost at ``quick``, its parts at ``paper`` (stored, or waiting for a
    GPU), its own facts and the table of its parts; another page's box is its paragraph of ``PAGE_FACTS``.

    Parameters
    ----------
    page : str
        A chapter or page slug (``"learned-tables"``).
    settings : Settings, optional
        The settings in force (default: ``posgeom.get_settings()``).
    root : path, optional
        The checkout whose measured times are quoted (default: this checkout).
    registry : Registry, optional
        Where the ``paper`` parts are looked up (default: the results of the settings).

    Returns
    -------
    str
        Markdown without the title (:func:`needs_title`): bullets, and a table for a chapter.
    """
    from .facts import CHAPTER_FACTS, chapter_facts, page_facts
    from ..timings import format_duration, format_memory
    times, memory = chapter_times(root), chapter_memory(root)
    if page not in CHAPTER_FACTS:
        return page_facts(page, format_duration(times.get(page)))

    parts = paper_parts(page, registry)
    needs = chapter_needs(page, registry)
    lines = [f"- **Measured.** A cold run of the whole chapter at `quick` took {format_duration(times.get(page))} in "
             "the book's last measured build (a 2-core CPU; the teaching page's table has the same figure), peak "
             f"memory {format_memory(memory.get(page))}; a second run reads the stored results and takes seconds. At "
             f"`paper`, the parts stored in `results/paper/`: {needs.paper_measured}; the parts that wait for a GPU: "
             f"{needs.paper_gpu}."]
    lines += [f"- **{label}.** {_sentence_start(text)}" for label, text in chapter_facts(page, settings).items()]
    lines.append("- **At `paper`, part by part.** " + (
        "The table below: each part this chapter computes, with the wall time its run recorded (the committed "
        "results were computed on a 2-core CPU) or, for a part that waits for a GPU, the cost model's GPU minutes "
        "(`posgeom reproduce --scale paper --cpu-parts` runs the rest)." if parts else
        "no part of this chapter is stored or priced yet (`posgeom reproduce --scale paper` computes them)."))
    if parts:
        lines += ["", *_parts_table(parts)]
    return "\n".join(lines)


def _sentence_start(text: str) -> str:
    """A fact as a sentence: its first letter upper-case, except in a name written lower-case."""
    return text if text.startswith("posgeom") else text[:1].upper() + text[1:]
