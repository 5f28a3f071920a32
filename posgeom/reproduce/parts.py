"""What each part of a chapter costs at ``paper`` scale: measured where it has been run, estimated where it
waits for a GPU.

A chapter's *parts* are the registry experiments it computes (:data:`CHAPTER_PARTS`, ``fnmatch`` patterns
on the experiment names). A part stored at ``paper`` (the results committed in ``results/paper/`` or any
run since) reports the wall time its manifests recorded and the device it ran on; a part the cost model
says needs a GPU (:func:`posgeom.costmodel.gpu_work`) and that is not stored reports the cost model's GPU
minutes instead. Each chapter's "What this chapter needs" box shows :func:`paper_parts_frame`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Sequence

from ..registry import Registry, code_changed
from ..report import CLAIMS_EXPERIMENT
from ..timings import format_duration
from .chapters import PROGRESS_EXPERIMENT, RUNS_EXPERIMENT

__all__ = ["CHAPTER_PARTS", "PaperPart", "chapter_of", "paper_parts", "paper_parts_frame"]

#: The registry experiments each chapter computes (``fnmatch`` patterns): the home of every part. A part
#: another chapter reads (the corpus geometry of *Real corpora*, read by *Inside BERT*) is listed at home.
CHAPTER_PARTS: dict[str, tuple[str, ...]] = {
    "encodings-at-a-glance": ("zoo.*",),
    "theorem1-necessity": ("necessity.*",),
    "theorem4-separation": ("separation.*",),
    "corpus-geometry": ("corpus_geometry.*",),
    "optimal-encoding": ("optimal_encoding.*",),
    "minimal-parametrisation": ("minimal_parametrisation.*",),
    "sinusoids-as-mds": ("sinusoids_as_mds.*",),
    "real-corpora": ("real_corpora_*", "alibi_search_*"),
    "monotonicity": ("monotonicity_*",),
    "inside-bert": ("inside_bert*",),
    "learned-tables": ("learned_table_*", "learned_init_study", "learned_dropout_overfit"),
    "learned-tables-fail": ("learned_tails", "learned_extrapolation_*"),
}

#: Registry experiments that record runs of whole chapters, not parts of one.
_NOT_PARTS = (CLAIMS_EXPERIMENT, RUNS_EXPERIMENT, PROGRESS_EXPERIMENT)


@dataclass(frozen=True)
class PaperPart:
    """One part of a chapter at ``paper`` scale.

    ``part``: the registry experiment (or, for GPU work not yet run, the pattern of the experiments it
    will write); ``entries``: how many stored entries it has; ``seconds``: their recorded wall time, summed
    (None when nothing is stored); ``device``: where they ran; ``stale``: stored by code that has changed
    since; ``gpu_minutes``: the cost model's estimate, for a part that needs a GPU (else None).
    """

    part: str
    entries: int
    seconds: float | None
    device: str | None
    stale: bool
    gpu_minutes: float | None

    @property
    def status(self) -> str:
        """``"measured"``, ``"measured (stale)"`` or ``"needs a GPU"``."""
        if not self.entries:
            return "needs a GPU"
        return "measured (stale)" if self.stale else "measured"

    @property
    def cost(self) -> str:
        """The part's time as a page shows it."""
        if self.entries:
            where = {"cpu": "CPU"}.get(self.device or "", "GPU" if (self.device or "").startswith("cuda") else
                                      (self.device or "device not recorded"))
            return f"{format_duration(self.seconds)} ({where})"
        # short enough for a table cell (pandas cuts cells at 50 characters); the box names scripts/gpu-slice
        return f"about {self.gpu_minutes:.0f} GPU-minutes (estimate)"


def chapter_of(experiment: str) -> str | None:
    """The chapter whose part ``experiment`` is (:data:`CHAPTER_PARTS`), or None."""
    homes = [slug for slug, patterns in CHAPTER_PARTS.items() if any(fnmatchcase(experiment, p) for p in patterns)]
    if len(homes) > 1:
        raise ValueError(f"{experiment} matches the parts of {', '.join(homes)}: give it one home in CHAPTER_PARTS")
    return homes[0] if homes else None


def paper_parts(chapter: str, registry: Registry | None = None) -> list[PaperPart]:
    """Every part of ``chapter`` at ``paper`` scale: the stored ones (measured), then the GPU work the cost
    model names for the chapter and that is not stored yet.

    Parameters
    ----------
    chapter : str
        A chapter slug of :data:`CHAPTER_PARTS`.
    registry : Registry, optional
        Where to look (default: the results folder of ``posgeom.get_settings()``).

    Returns
    -------
    list of PaperPart
    """
    from ..config import get_settings
    from ..costmodel import RESULT_NAMES, experiment_costs, gpu_work

    if chapter not in CHAPTER_PARTS:
        raise ValueError(f"unknown chapter {chapter!r}; valid chapters are {', '.join(CHAPTER_PARTS)}")
    registry = registry if registry is not None else Registry(get_settings().results_dir)
    by_name: dict[str, list] = {}
    for entry in registry.entries(scale="paper"):
        if entry.experiment not in _NOT_PARTS and chapter_of(entry.experiment) == chapter:
            by_name.setdefault(entry.experiment, []).append(entry)
    parts = []
    for name in sorted(by_name):
        entries = by_name[name]
        devices = sorted({str(e.manifest.get("device") or "") for e in entries} - {""})
        parts.append(PaperPart(name, len(entries), float(sum(e.manifest.get("runtime_s") or 0.0 for e in entries)),
                               ", ".join(devices) or None, any(code_changed(e.manifest) for e in entries), None))
    minutes = gpu_work()
    for cost in experiment_costs():
        if cost.chapter != chapter:
            continue
        for pattern in RESULT_NAMES.get(cost.experiment, ()):
            stored = any(fnmatchcase(name, pattern) for name in by_name)
            if pattern in minutes and not stored and all(p.part != pattern for p in parts):
                parts.append(PaperPart(pattern, 0, None, None, False, minutes[pattern]))
    return parts


def paper_parts_frame(chapter: str, registry: Registry | None = None, parts: Sequence[PaperPart] | None = None):
    """:func:`paper_parts` as the table of a chapter's "What this chapter needs" box.

    Returns
    -------
    pandas.DataFrame
        One row per part (its registry experiment, or the pattern of the GPU work it waits for): its stored
        entries, its time at paper scale and its status.
    """
    import pandas as pd

    parts = paper_parts(chapter, registry) if parts is None else parts
    frame = pd.DataFrame.from_records(
        [{"part": p.part, "stored entries": p.entries, "at paper scale": p.cost, "status": p.status} for p in parts],
        columns=["part", "stored entries", "at paper scale", "status"])
    # the parts (registry experiments) label the rows; an unnamed index keeps the table to one header row
    return frame.set_index("part").rename_axis(index=None)
