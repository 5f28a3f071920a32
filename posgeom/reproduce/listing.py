"""What ``posgeom reproduce`` prints besides running: the plan, ``--list`` with the cost model, and the
committed paper-scale results made by code that has changed since."""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Callable, Sequence

from ..registry import Registry, Result, code_changed
from ..report import CLAIMS_EXPERIMENT
from .budget import chapter_progress, checkpoint_progress, experiment_progress
from .chapters import CHAPTERS, PROGRESS_EXPERIMENT, RUNS_EXPERIMENT, Chapter, chapter_status, format_minutes
from .ddp import ddp_command


@dataclass(frozen=True)
class StaleResult:
    """A committed paper-scale registry entry made by code that has changed since (in ``modules``)."""

    experiment: str
    key: str
    modules: tuple[str, ...]
    needs_gpu: bool

    def __str__(self) -> str:
        where = "a GPU" if self.needs_gpu else "this CPU"
        return (f"paper/{self.experiment}/{self.key}: code changed in {', '.join(self.modules) or 'unrecorded code'} "
                f"(or what they import); recompute it on {where}")


def stored_results(registry: Registry, group: Callable[[str], str | None] = lambda name: name, scale: str = "paper"
                   ) -> dict[str, list[tuple[Result, bool]]]:
    """The entries at ``scale`` by ``group(registry experiment)`` (None: left out; so are the chapters' run records),
    each with whether the code that made it has changed since (``code_changed``: slow, asked of those kept only)."""
    found: dict[str, list[tuple[Result, bool]]] = {}
    for entry in registry.entries(scale=scale):
        label = None if entry.experiment in (RUNS_EXPERIMENT, PROGRESS_EXPERIMENT) else group(entry.experiment)
        if label is not None:
            found.setdefault(label, []).append((entry, bool(code_changed(entry.manifest))))
    return found


def stale_paper_results(results_dir: str | Path) -> list[StaleResult]:
    """Every paper-scale entry of the registry at ``results_dir`` whose code key no longer matches the code."""
    from ..costmodel import experiment_costs, needs_gpu
    costs, gpu_chapters = experiment_costs(), {c.slug for c in CHAPTERS if c.paper_needs_gpu}
    out = []
    for entry in (entry for rows in stored_results(Registry(results_dir)).values() for entry, stale in rows if stale):
        gpu = (entry.values.get("chapter") in gpu_chapters  # a chapter's verdicts: rerun with the whole chapter
               if entry.experiment == CLAIMS_EXPERIMENT else needs_gpu(entry.experiment, costs))
        out.append(StaleResult(entry.experiment, entry.key, tuple(entry.manifest.get("code_modules") or ()), gpu))
    return out


def format_plan(chapters: Sequence[Chapter], statuses: dict[str, str], scale: str, *, force: bool = False,
                gpu_available: bool = True, nproc: int = 1, report_gpu_work: bool = False) -> str:
    """The table printed before a run: per chapter its claims, status, action and estimate."""
    lines = [f"{'chapter':26} {'claims':18} {'status':26} {'action':6} {'time':>9} {'memory':>14}"]
    total, peak, gpu_peak = 0.0, 0.0, 0.0
    for c in chapters:
        e = c.estimate(scale)
        run = force or statuses[c.slug] != "done"
        memory = f"{e.memory_gb:.1f} GB" + (f" +{e.gpu_memory_gb:.0f} GPU" if e.gpu_memory_gb else "")
        lines.append(f"{c.slug:26} {' '.join(c.claims):18} {statuses[c.slug]:26} {'run' if run else 'skip':6} "
                     f"{format_minutes(e.minutes) if run else '-':>9} {memory if run else '-':>14}")
        if run:
            total += e.minutes
            peak, gpu_peak = max(peak, e.memory_gb), max(gpu_peak, e.gpu_memory_gb or 0.0)
            if scale == "paper" and c.paper_needs_gpu and report_gpu_work:
                lines.append(f"  {c.slug}: its GPU work is reported, not run; the time above is the GPU's")
            elif scale == "paper" and c.paper_needs_gpu and not gpu_available:
                lines.append(f"  warning: {c.slug} needs a GPU at paper scale; on this CPU expect days, not hours")
            if scale == "paper" and c.ddp and nproc > 1:
                lines.append("  first: " + " ".join(ddp_command(c.ddp, nproc, printable=True)))
    basis = ("2-core CPU measurements and estimates" if scale == "quick" else
             "the cost model for one H100/H200-class GPU where a chapter trains, recorded CPU runs elsewhere")
    lines.append(f"to run: {sum(force or statuses[c.slug] != 'done' for c in chapters)} of {len(chapters)} chapters, "
                 f"about {format_minutes(total)}, peak memory about {peak:.1f} GB"
                 + (f" (+{gpu_peak:.0f} GB GPU)" if gpu_peak else "") + f" ({basis})")
    return "\n".join(lines)


def paper_minutes(chapters: Sequence[Chapter] = CHAPTERS) -> dict[str, float]:
    """Per chapter, the paper-scale minutes of :meth:`Chapter.estimate`."""
    return {c.slug: c.estimate("paper").minutes for c in chapters}


def format_list(chapters: Sequence[Chapter], scale: str, registry: Registry, notebooks_dir: Path) -> str:
    """``posgeom reproduce --list``: every chapter's claims, status and estimates (at ``paper``, the cost model too)."""
    quick, paper = {c.slug: c.estimate("quick").minutes for c in chapters}, paper_minutes(chapters)
    lines = [f"{'chapter':26} {'claims':18} {'status (' + scale + ')':26} {'quick':>9} {'paper':>12} "
             f"{'GPU at paper':13} torchrun"]
    in_progress = []
    for c in chapters:
        status = chapter_status(c, scale, registry, notebooks_dir=notebooks_dir)
        progress = chapter_progress(c, scale, registry) if status != "done" else None
        if progress:
            status = "in progress"
            in_progress.append(f"in progress: {c.slug}: {progress} (posgeom reproduce --scale {scale} --budget ... "
                               "resumes it)")
        paper_time = format_minutes(paper[c.slug]) + (" GPU" if c.paper_from_cost_model else " CPU")
        lines.append(f"{c.slug:26} {' '.join(c.claims):18} {status:26} {format_minutes(quick[c.slug]):>9} "
                     f"{paper_time:>12} {'yes' if c.paper_needs_gpu else 'no':13} {'yes' if c.ddp else 'no'}")
    lines.append(f"total: {format_minutes(sum(quick.values()))} at quick on a 2-core CPU; "
                 f"about {format_minutes(sum(paper.values()))} at paper: the cost model's time on one "
                 "H100/H200-class GPU (40% MFU) for the chapters that train, the recorded CPU runs for the rest")
    progress = experiment_progress(checkpoint_progress(registry.root, scale))
    lines += in_progress + [f"saved training at {scale}: {experiment}: {text}" for experiment, text in progress.items()]
    if scale == "paper":
        stored = experiment_results(registry, scale)
        status = {e: "; ".join(t for t in (stored.get(e), progress.get(e)) if t) for e in {*stored, *progress}}
        lines += ["", cost_report([c.slug for c in chapters], progress=status)]
    return "\n".join(lines)


def experiment_results(registry: Registry, scale: str = "paper") -> dict[str, str]:
    """Per costed experiment, its stored entries at ``scale``: ``"3 stored"``, ``"3 stored (1 stale)"``."""
    from ..costmodel import RESULT_NAMES

    def costed(name: str) -> str | None:  # the experiment that writes it (each registry experiment has one writer)
        return next((e for e, patterns in RESULT_NAMES.items() if any(fnmatchcase(name, p) for p in patterns)), None)

    found = stored_results(registry, costed, scale)
    stale = {e: sum(s for _, s in rows) for e, rows in found.items()}
    return {e: f"{len(rows)} stored" + (f" ({stale[e]} stale)" if stale[e] else "") for e, rows in found.items()}


def cost_report(slugs: Sequence[str] | None = None, *, progress: dict[str, str] | None = None) -> str:
    """The cost model's table for the chapters ``slugs``, and the total with the proposed settings."""
    from ..costmodel import GPU_GOAL_MINUTES, experiment_costs, format_costs, totals
    now, then = ([c for c in experiment_costs(proposed=proposed) if slugs is None or c.chapter in set(slugs)]
                 for proposed in (False, True))
    t_now, t_then = totals(now), totals(then)
    return "\n".join([
        "cost model: experiments that run a model at paper scale (the other experiments count and solve on the CPU, "
        "within the chapter estimates above)", format_costs(now, progress=progress),
        f"with the proposed settings (posgeom.costmodel.PROPOSED): {t_then['gpu_minutes']:.1f} min on the GPU in "
        f"{t_then['slices']} slices (now {t_now['gpu_minutes']:.1f} min; goal at most {GPU_GOAL_MINUTES:.0f} min)"])
