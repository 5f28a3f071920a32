"""The chapters ``posgeom reproduce`` runs (:data:`CHAPTERS`), how to pick them, where the checkout and the
results are, whether a chapter is done at a scale, and their measured times as the book's MyST substitutions."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Collection, Iterable, Sequence

from ..config import checkout_root, validate_scale
from ..registry import Registry, Result, code_changed
from ..report import CLAIMS_EXPERIMENT, PAPER_CLAIMS, notebook_sha256
from ..timings import BOOK_BUILD, chapter_memory, chapter_times, format_duration, format_memory

#: Registry experiment where ``posgeom reproduce`` records each chapter run's wall time and peak memory.
RUNS_EXPERIMENT = "chapter_runs"
#: Registry experiment where a budgeted run records a chapter it stopped at the deadline (its progress).
PROGRESS_EXPERIMENT = "chapter_progress"


@dataclass(frozen=True)
class Estimate:
    """What one chapter costs at one scale: wall ``minutes`` (None at ``paper`` where the cost model prices
    it), peak host and GPU memory (GB), and whether it was ``measured`` rather than estimated."""

    minutes: float | None
    memory_gb: float
    gpu_memory_gb: float | None = None
    measured: bool = False


@dataclass(frozen=True)
class Chapter:
    """One chapter of the book as ``posgeom reproduce`` sees it.

    ``claims``: the claim ids it checks. ``ddp``: paper-scale entry points (``"module:function"``) that may
    run under ``torchrun``. ``reuses``: chapters whose registry entries it reads (it runs after them).
    ``parts``: ``fnmatch`` patterns of the registry experiments it computes (each has one home chapter).
    """

    slug: str
    title: str
    claims: tuple[str, ...]
    quick: Estimate
    paper: Estimate
    paper_needs_gpu: bool
    ddp: tuple[str, ...] = ()
    reuses: tuple[str, ...] = ()
    parts: tuple[str, ...] = ()

    @property
    def paper_from_cost_model(self) -> bool:
        """True for a chapter that trains at ``paper``: its time there is the cost model's GPU minutes."""
        return self.paper.minutes is None

    def estimate(self, scale: str, registry: Registry | None = None) -> Estimate:
        """What the chapter costs at ``scale``: measured where it has been, else the typed estimate.

        At ``quick``: the book's last measured cold build. At ``paper``: the cost model's GPU minutes for a
        chapter that trains, else its last run recorded by ``posgeom reproduce`` in ``registry``."""
        scale = validate_scale(scale)
        estimate = getattr(self, scale)
        if scale == "quick":
            seconds = chapter_times().get(self.slug)
            return estimate if seconds is None else replace(
                estimate, minutes=seconds / 60, memory_gb=chapter_memory().get(self.slug, estimate.memory_gb),
                measured=True)
        if self.paper_from_cost_model:
            minutes = cost_model_minutes().get(self.slug, 0.0)
            if minutes <= 0:
                raise ValueError(f"{self.slug}: its {scale}-scale time is to come from the cost model, which prices "
                                 "none of its experiments; cost them in posgeom.costmodel (EXPERIMENTS) or give "
                                 "the chapter's Estimate a number of minutes")
            return replace(estimate, minutes=minutes)
        run = recorded_runs(scale, registry).get(self.slug)
        return estimate if run is None else replace(estimate, minutes=run.values["wall_s"] / 60, measured=True,
                                                    memory_gb=run.values.get("peak_rss_gb") or estimate.memory_gb)


def recorded_runs(scale: str, registry: Registry | None = None) -> dict[str, Result]:
    """Each chapter's last run at ``scale`` recorded by ``posgeom reproduce`` (:data:`RUNS_EXPERIMENT`), by slug."""
    scale = validate_scale(scale)
    registry = registry if registry is not None else Registry()  # the configured results folder
    runs: dict[str, Result] = {}
    for entry in sorted(registry.entries(RUNS_EXPERIMENT, scale=scale), key=lambda e: e.manifest.get("created", "")):
        runs[entry.values.get("chapter") or entry.manifest.get("params", {}).get("chapter")] = entry
    return runs


@lru_cache(maxsize=1)
def cost_model_minutes() -> dict[str, float]:
    """Per chapter that runs a model at paper scale, the cost model's minutes on one H100/H200-class GPU."""
    from ..costmodel import experiment_costs
    minutes: dict[str, float] = {}
    for cost in experiment_costs():
        minutes[cost.chapter] = minutes.get(cost.chapter, 0.0) + cost.gpu_minutes
    return minutes


#: The package of the experiments' entry points (``module:function`` names are relative to it).
EXPERIMENTS_PACKAGE = "posgeom.experiments."


def _ddp(*entry_points: str) -> tuple[str, ...]:
    return tuple(EXPERIMENTS_PACKAGE + entry for entry in entry_points)


#: The chapters that check claims, in the book's order (chapters reuse the registry entries of earlier
#: ones: *Real corpora* before *Monotonicity* and *Inside BERT*). ``getting-started`` checks no claim.
CHAPTERS: tuple[Chapter, ...] = (
    Chapter("encodings-at-a-glance", "Five encodings at a glance", ("C8",), Estimate(0.5, 0.8), Estimate(2, 3), False,
            parts=("zoo.*",)),
    Chapter("theorem1-necessity", "Theorem 1: why position must be injected", ("C1",), Estimate(1.5, 0.8),
            Estimate(None, 8, 20), True, ddp=_ddp("necessity:run_order_task"), parts=("necessity.*",)),
    Chapter("theorem4-separation", "Theorem 4: trained positions stay apart", ("C2",), Estimate(3.5, 1.2),
            Estimate(None, 12, 25), True, ddp=_ddp("separation:run_chapter"), parts=("separation.*",)),
    Chapter("corpus-geometry", "The geometry of a corpus", ("C8",), Estimate(0.4, 0.6, measured=True),
            Estimate(10, 8), False, parts=("corpus_geometry.*",)),
    Chapter("optimal-encoding", "The optimal encoding", ("C3", "C6"), Estimate(0.3, 0.7, measured=True),
            Estimate(10, 6), False, parts=("optimal_encoding.*",)),
    Chapter("minimal-parametrisation", "Minimal parametrisation", ("C5",), Estimate(3.0, 0.8), Estimate(None, 8, 16),
            True, ddp=_ddp("minimal_parametrisation:run_lowrank_training"), parts=("minimal_parametrisation.*",)),
    Chapter("sinusoids-as-mds", "When are sinusoids optimal?", ("C4",), Estimate(0.2, 0.5, measured=True),
            Estimate(2, 3), False, parts=("sinusoids_as_mds.*",)),
    Chapter("real-corpora", "Real corpora: SST-2 and IMDB", ("C6", "C7", "C8"), Estimate(5.0, 2.0),
            Estimate(None, 16, 30), True, ddp=_ddp("real_corpora:run_scratch_tables"),
            parts=("real_corpora_*", "alibi_search_*")),
    Chapter("monotonicity", "Monotonicity", ("C9", "C11"), Estimate(3.0, 1.5), Estimate(None, 16, 20), True,
            ddp=_ddp("monotonicity:run_ntk_all"), reuses=("real-corpora",), parts=("monotonicity_*",)),
    Chapter("inside-bert", "Inside BERT: the layers", ("C10",), Estimate(1.0, 1.0), Estimate(5, 4, 4), False,
            reuses=("real-corpora",), parts=("inside_bert*",)),
    Chapter("learned-tables", "Learned tables", ("S1", "S2", "S3", "S7", "S8", "S9"), Estimate(2.0, 1.5),
            Estimate(None, 8, 4), True, ddp=_ddp("learned_tables:run_init_study", "table_dropout:run_dropout_study"),
            parts=("learned_table_*", "learned_init_study", "learned_dropout_overfit", "learned_tables.*")),
    Chapter("learned-tables-fail", "Where learned tables fail", ("S4", "S5", "S6"), Estimate(2.5, 1.2),
            Estimate(None, 8, 6), True, ddp=_ddp("undertrained_tails:run_undertrained_tails",
                                                 "extrapolation:run_extrapolation_order",
                                                 "extrapolation_mlm:run_extrapolation_mlm"),
            parts=("learned_tails", "learned_extrapolation_*", "learned_tables_fail.*")),
)


class ChapterFailed(RuntimeError):
    """A chapter's notebook (or its torchrun step) failed; the message names the chapter and the cell."""

    def __init__(self, slug: str, message: str):
        super().__init__(f"chapter {slug!r}: {message}")
        self.slug = slug


class SliceInterrupted(RuntimeError):
    """A chapter stopped at the budget's deadline; training saved its state and the next call resumes it."""

    def __init__(self, slug: str, message: str):
        super().__init__(f"chapter {slug!r} stopped at the deadline: {message}")
        self.slug, self.detail = slug, message

    @property
    def steps(self) -> tuple[int, int] | None:
        """``(steps done, total steps)`` of the interrupted training run, when the message names them."""
        found = re.search(r"step (\d+) of (\d+)", self.detail)
        return (int(found.group(1)), int(found.group(2))) if found else None


def project_root() -> Path:
    """The posgeom checkout (:func:`posgeom.config.checkout_root`); a ``ValueError`` outside any."""
    root = checkout_root()
    if root is None:
        raise ValueError("posgeom reproduce executes the chapters of a posgeom checkout (its notebooks/ folder); "
                         "run it inside the repository")
    return root


def select_chapters(only: Iterable[str] | None = None, chapters: Sequence[Chapter] = CHAPTERS) -> list[Chapter]:
    """The chapters named by ``only`` (slugs, or claim ids selecting every chapter that checks them; commas
    allowed), in book order; every chapter when empty. An unknown value raises ValueError."""
    values = [v.strip() for item in (only or ()) for v in str(item).split(",") if v.strip()]
    if not values:
        return list(chapters)
    slugs = [c.slug for c in chapters]
    picked: set[str] = set()
    for value in values:
        if value in slugs:
            picked.add(value)
        elif value.upper() in PAPER_CLAIMS:
            checking = [c.slug for c in chapters if value.upper() in c.claims]
            if not checking:
                raise ValueError(f"claim {value.upper()} is checked by no chapter of this list ({', '.join(slugs)})")
            picked.update(checking)
        else:
            raise ValueError(f"unknown chapter or claim {value!r}; valid chapters are {', '.join(slugs)}; "
                             f"valid claims are {', '.join(PAPER_CLAIMS)}")
    return [c for c in chapters if c.slug in picked]


def claims_stale_reason(entry: Result, *, notebooks_dir: str | Path | None = None) -> str | None:
    """Why a ``"claims"`` entry is out of date (``"code changed"``, ``"notebook changed"``), or None."""
    if code_changed(entry.manifest):
        return "code changed"
    if notebooks_dir is not None:
        recorded = entry.values.get("notebook_sha256")
        now = notebook_sha256(entry.values.get("chapter", ""), notebooks_dir)
        if recorded and now and recorded != now:
            return "notebook changed"
    return None


def chapter_status(chapter: Chapter, scale: str, registry: Registry, *,
                   notebooks_dir: str | Path | None = None) -> str:
    """``"done"``, ``"not run"`` or ``"stale (code changed)"`` / ``"stale (notebook changed)"`` at ``scale``."""
    params = {"chapter": chapter.slug}
    if not registry.has(CLAIMS_EXPERIMENT, params=params, scale=scale):
        return "not run"
    reason = claims_stale_reason(registry.load(CLAIMS_EXPERIMENT, params=params, scale=scale),
                                 notebooks_dir=notebooks_dir)
    return "done" if reason is None else f"stale ({reason})"


def resolve_results_dir(results_dir, notebooks: Path) -> Path:
    """``results_dir``, else ``POSGEOM_RESULTS_DIR``, else the checkout's ``results/``; ``~`` expanded."""
    if results_dir is None:
        env_results = os.environ.get("POSGEOM_RESULTS_DIR")
        results_dir = Path(env_results) if env_results else notebooks.parent / "results"
    return Path(results_dir).expanduser().resolve()


def format_minutes(minutes: float) -> str:
    """``"4.0 min"`` below an hour, ``"1.5 h"`` from an hour on."""
    return f"{minutes:.1f} min" if minutes < 60 else f"{minutes / 60:.1f} h"


#: Chapters of the book that check no claim (not in :data:`~posgeom.reproduce.CHAPTERS`), also timed.
OTHER_CHAPTERS = ("getting-started", "your-own-corpus", "diagnose-your-model")


def chapter_time_substitutions(times: dict[str, float], chapters: Sequence[Chapter] = CHAPTERS,
                               others: Collection[str] = OTHER_CHAPTERS,
                               memory: dict[str, float] | None = None) -> dict[str, str]:
    """MyST substitutions ``time_<slug>`` and ``memory_<slug>`` (hyphens as underscores) of every chapter in
    ``chapters``, ``others`` and ``times`` (``NOT_MEASURED`` where unmeasured); ``time_book_build``: the cold build."""
    slugs = dict.fromkeys([c.slug for c in chapters] + list(others) + [BOOK_BUILD] + list(times))
    out = {"time_" + slug.replace("-", "_"): format_duration(times.get(slug)) for slug in slugs}
    out.update({"memory_" + slug.replace("-", "_"): format_memory((memory or {}).get(slug))
                for slug in slugs if slug != BOOK_BUILD})
    return out
