"""The box "What this chapter needs" (or "What this page needs"), one text for the book and the downloads.

What every box shares is written here; what differs from chapter to chapter is ``posgeom.reproduce.facts``.
"""

from __future__ import annotations

from pathlib import Path

from ..timings import chapter_memory, chapter_times, format_duration, format_memory
from .facts import CHAPTER_FACTS, chapter_facts, page_facts
from .parts import chapter_needs, paper_parts

__all__ = ["needs_title", "needs_box"]


def needs_title(page: str) -> str:
    """The title of ``page``'s box."""
    return "What this chapter needs" if page in CHAPTER_FACTS else "What this page needs"


def needs_box(page: str, settings=None, *, root: str | Path | None = None, registry=None) -> str:
    """The Markdown of ``page``'s box, without its title (:func:`needs_title`).

    A chapter's box gives its measured cost at ``quick`` (the times of the checkout ``root``), its parts at
    ``paper`` found in ``registry`` (stored, or waiting for a GPU), its own facts (``settings``, default
    ``posgeom.get_settings()``) and the table of its parts; another page's box is its paragraph of ``PAGE_FACTS``.
    """
    times, memory = chapter_times(root), chapter_memory(root)
    if page not in CHAPTER_FACTS:
        return page_facts(page, format_duration(times.get(page)))

    parts, needs = paper_parts(page, registry), chapter_needs(page, registry)
    lines = [f"- **Measured.** A cold run of the whole chapter at `quick` took {format_duration(times.get(page))} in "
             "the book's last measured build (a 2-core CPU; the teaching page's table has the same figure), peak "
             f"memory {format_memory(memory.get(page))}; a second run reads the stored results and takes seconds. At "
             f"`paper`, the parts stored in `results/paper/`: {needs.paper_measured}; the parts that wait for a GPU: "
             f"{needs.paper_gpu}."]
    # each fact as a sentence: its first letter upper-case, except in a name written lower-case
    lines += [f"- **{label}.** {text if text.startswith('posgeom') else text[:1].upper() + text[1:]}"
              for label, text in chapter_facts(page, settings).items()]
    lines.append("- **At `paper`, part by part.** " + (
        "The table below: each part this chapter computes, with the wall time its run recorded (the committed "
        "results were computed on a 2-core CPU) or, for a part that waits for a GPU, the cost model's GPU minutes "
        "(`posgeom reproduce --scale paper --cpu-parts` runs the rest)." if parts else
        "no part of this chapter is stored or priced yet (`posgeom reproduce --scale paper` computes them)."))
    if parts:
        lines += ["", "| part | stored results | time at paper scale | status |", "| --- | ---: | --- | --- |",
                  *(f"| `{p.part}` | {p.entries:,} | {p.cost} | {p.status} |" for p in parts)]
    return "\n".join(lines)
