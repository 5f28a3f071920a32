"""What each part of a chapter (a registry experiment matching its ``Chapter.parts``) costs at ``paper`` scale:
the wall time its manifests recorded where it is stored, the cost model's GPU minutes where it waits for a GPU."""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

from ..registry import Registry
from ..timings import format_duration
from .chapters import CHAPTERS
from .listing import stored_results

__all__ = ["CHAPTER_PARTS", "ChapterNeeds", "PaperPart", "chapter_needs", "chapter_of", "paper_parts",
           "paper_parts_frame"]

#: ``Chapter.parts`` by slug: the home of every part (a part another chapter reads is listed at home only).
CHAPTER_PARTS: dict[str, tuple[str, ...]] = {c.slug: c.parts for c in CHAPTERS}


@dataclass(frozen=True)
class PaperPart:
    """One part of a chapter at ``paper`` scale: ``part``, the registry experiment (for GPU work not yet run, the
    pattern it will write); ``seconds``, the recorded wall time of its ``entries`` (None when none); ``device``,
    where they ran, comma-separated; ``gpu_minutes``, the cost model's estimate for a part waiting for a GPU."""

    part: str
    entries: int
    seconds: float | None
    device: str | None
    stale: bool
    gpu_minutes: float | None

    @property
    def status(self) -> str:
        """``"measured"``, ``"measured (stale)"`` or ``"needs a GPU"``."""
        return "needs a GPU" if not self.entries else "measured (stale)" if self.stale else "measured"

    @property
    def places(self) -> tuple[str, ...]:
        """Where its stored entries ran: ``"CPU"``, ``"GPU"`` or another device's name, each once."""
        devices = [d.strip() for d in (self.device or "").split(",") if d.strip()]
        return tuple(dict.fromkeys("CPU" if d == "cpu" else "GPU" if d.startswith("cuda") else d
                                   for d in devices)) or ("device not recorded",)

    @property
    def where(self) -> str:
        """:attr:`places` as a page says it: ``"CPU and GPU"``."""
        return " and ".join(self.places)

    @property
    def cost(self) -> str:
        """The part's time as a page shows it."""
        if self.entries:
            return f"{format_duration(self.seconds)} ({self.where})"
        # short enough for a table cell (pandas cuts cells at 50 characters); the box names scripts/gpu-slice
        return f"about {self.gpu_minutes:.0f} GPU-minutes (estimate)"


def chapter_of(experiment: str) -> str | None:
    """The chapter whose part ``experiment`` is (:data:`CHAPTER_PARTS`), or None."""
    homes = [slug for slug, patterns in CHAPTER_PARTS.items() if any(fnmatchcase(experiment, p) for p in patterns)]
    if len(homes) > 1:
        raise ValueError(f"{experiment} matches the parts of {', '.join(homes)}: give it one home in CHAPTER_PARTS")
    return homes[0] if homes else None


def paper_parts(chapter: str, registry: Registry | None = None) -> list[PaperPart]:
    """Every part of ``chapter`` at ``paper`` scale in ``registry`` (default: the results folder of
    ``posgeom.get_settings()``): the stored ones, then the GPU work not stored yet."""
    from ..costmodel import RESULT_NAMES, experiment_costs, gpu_work
    if chapter not in CHAPTER_PARTS:
        raise ValueError(f"unknown chapter {chapter!r}; valid chapters are {', '.join(CHAPTER_PARTS)}")
    registry = registry if registry is not None else Registry()  # the configured results folder
    stored = stored_results(registry, lambda name: name if chapter_of(name) == chapter else None)
    parts = []
    for name, rows in sorted(stored.items()):
        manifests = [entry.manifest for entry, _ in rows]
        devices = sorted({str(m.get("device") or "") for m in manifests} - {""})
        parts.append(PaperPart(name, len(rows), float(sum(m.get("runtime_s") or 0.0 for m in manifests)),
                               ", ".join(devices) or None, any(stale for _, stale in rows), None))
    costs = experiment_costs()
    minutes = gpu_work(costs)
    for pattern in dict.fromkeys(p for cost in costs if cost.chapter == chapter for p in RESULT_NAMES[cost.experiment]):
        # at its home only, as a stored part is (the monotonicity chapter reads real-corpora's scratch table)
        home = chapter_of(pattern) == chapter
        if pattern in minutes and home and not any(fnmatchcase(name, pattern) for name in stored):
            parts.append(PaperPart(pattern, 0, None, None, False, minutes[pattern]))
    return parts


def paper_parts_frame(chapter: str, registry: Registry | None = None):
    """:func:`paper_parts` as a DataFrame, one row per part: its stored entries, time at paper scale, status."""
    import pandas as pd
    frame = pd.DataFrame.from_records(
        [{"part": p.part, "stored entries": p.entries, "at paper scale": p.cost, "status": p.status}
         for p in paper_parts(chapter, registry)], columns=["part", "stored entries", "at paper scale", "status"])
    # the parts (registry experiments) label the rows; an unnamed index keeps the table to one header row
    return frame.set_index("part").rename_axis(index=None)


@dataclass(frozen=True)
class ChapterNeeds:
    """A chapter's cost at ``paper`` as its box states it: the stored parts' wall time and where they ran
    (``paper_measured``), the cost model's GPU minutes of the parts waiting for a GPU (``paper_gpu``)."""

    paper_measured: str
    paper_gpu: str


def chapter_needs(chapter: str, registry: Registry | None = None) -> ChapterNeeds:
    """The ``paper`` figures of ``chapter``'s box, as page text (``registry`` as in :func:`paper_parts`)."""
    parts = paper_parts(chapter, registry)
    stored = [p for p in parts if p.entries]
    if stored:
        # "a CPU", "a GPU", "a device not recorded"; another device by its own name
        devices = sorted({f"a {place}" if place in ("CPU", "GPU", "device not recorded") else place
                          for p in stored for place in p.places})
        entries, stale = sum(p.entries for p in stored), sum(p.stale for p in stored)
        measured = (f"{format_duration(sum(p.seconds or 0.0 for p in stored))} on {' and '.join(devices)}, the "
                    f"recorded wall time of {entries} stored result{'s' if entries != 1 else ''}"
                    + (f" ({stale} of its parts stored by code that has changed since)" if stale else ""))
    else:
        measured = "nothing stored here yet"
    waiting = [p for p in parts if not p.entries]
    gpu = (f"about {sum(p.gpu_minutes or 0.0 for p in waiting):.0f} GPU-minutes on one H100/H200-class GPU (the cost "
           f"model's estimate of the {len(waiting)} part{'s' if len(waiting) != 1 else ''} not run here)"
           if waiting else "none")
    return ChapterNeeds(paper_measured=measured, paper_gpu=gpu)
