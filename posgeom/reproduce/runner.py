"""The run: the selected chapters that are not done, one after another, within an optional budget."""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from ..config import get_settings, resolve_device, validate_device, validate_scale
from ..registry import COMMAND_ENV, GPU_WORK_ENV, Registry, code_changed, command_line, require_committed
from ..report import CLAIMS_EXPERIMENT, notebook_sha256
from ..validation import check_positive_int
from .budget import (
    BUDGET_MARGIN_S, DEADLINE_ENV, checkpoint_links, discard_finished_checkpoints, parse_budget, slice_minutes,
    training_deadline,
)
from .chapters import (
    CHAPTERS, PROGRESS_EXPERIMENT, RUNS_EXPERIMENT, Chapter, ChapterFailed, SliceInterrupted, chapter_status,
    format_minutes, project_root, resolve_results_dir, select_chapters,
)
from .ddp import INTERRUPTED_EXIT, ddp_command, default_nproc
from .listing import format_plan
from .notebook import execute_notebook


@dataclass
class ChapterRun:
    """What executing one chapter measured."""

    slug: str
    wall_s: float
    peak_rss_gb: float | None
    gpu_peak_gb: float | None
    claims: tuple[str, ...]
    ddp_command: list[str] | None = None


@dataclass
class ReproduceReport:
    """What :func:`reproduce` did: the chapters it ran and those it skipped (already done)."""

    scale: str
    ran: list[ChapterRun] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    #: With a budget: the chapter stopped at the deadline (resumed next time), and the chapters left for later.
    interrupted: str | None = None
    deferred: list[str] = field(default_factory=list)


def reproduce(scale: str = "quick", only: Iterable[str] | None = None, device: str | None = None, *,
              force: bool = False, nproc: int | None = None, chapters: Sequence[Chapter] = CHAPTERS,
              notebooks_dir: str | Path | None = None, results_dir: str | Path | None = None,
              timeout: int | None = None, out: Callable[[str], None] = print, budget: str | float | None = None,
              execute: Callable[..., dict] = execute_notebook,
              clock: Callable[[], float] = time.time, report_gpu_work: bool = False) -> ReproduceReport:
    """Execute the selected chapters that are not done at ``scale`` (``"quick"`` or ``"paper"``; all with ``force``).

    ``only``: chapter slugs and/or claim ids (:func:`select_chapters`; default every chapter). ``device``: the
    kernels' ``POSGEOM_DEVICE`` (default: the environment's, else ``auto``). ``force`` runs done chapters too (their
    ``run_*`` still reuse results stored by the same code). ``nproc``: processes for the ``torchrun`` step at
    ``paper`` (default: the number of CUDA devices). ``chapters``, ``notebooks_dir``, ``results_dir``: what to run
    and where (defaults: :data:`CHAPTERS`, the checkout's ``notebooks/``, ``POSGEOM_RESULTS_DIR`` else the
    checkout's ``results/``). ``timeout``: seconds per cell (default 3600 at ``quick``, none at ``paper``). ``out``,
    ``execute``, ``clock``: where the lines go, the notebook executor and the wall clock (tests replace them).
    ``budget`` runs only what fits (``"9m"``): training saves its state at the deadline and the next call resumes
    it. ``report_gpu_work``: at ``paper`` on a CPU, report the experiments that need a GPU instead of running them.

    Raises ``ChapterFailed`` at the first chapter that fails (the chapters before it are done) and, at ``paper``
    scale before anything runs, ``UncommittedChangesError`` when the checkout has uncommitted changes.
    """
    scale = validate_scale(scale)
    device = validate_device(device if device is not None else os.environ.get("POSGEOM_DEVICE", "auto"))
    if report_gpu_work and (scale != "paper" or not resolve_device(device).startswith("cpu")):
        raise ValueError(f"reporting GPU work instead of running it is for paper scale on a CPU; got scale {scale!r} "
                         f"on device {resolve_device(device)!r} (on a GPU, run the chapters themselves)")
    selected = select_chapters(only, chapters)
    notebooks = Path(notebooks_dir) if notebooks_dir is not None else project_root() / "notebooks"
    results_dir = resolve_results_dir(results_dir, notebooks)
    missing = [c.slug for c in selected if not (notebooks / f"{c.slug}.md").is_file()]
    if missing:
        raise ValueError(f"no notebook for chapter(s) {', '.join(missing)} in {notebooks}")
    settings, resolved = get_settings(scale=scale, device=device, results_dir=results_dir), resolve_device(device)
    nproc = _checked_nproc(default_nproc(scale, device) if nproc is None else nproc, scale, resolved)
    budget_s = parse_budget(budget) if budget is not None else None
    links = checkpoint_links(results_dir, scale)
    if links:  # training saves, resumes and discards its states there: refused before any chapter runs
        raise ValueError(f"{links[0]} is a symbolic link; posgeom never saves, resumes or discards training states "
                         "through one: delete it (posgeom results check lists every link in the results folder)")
    run = _Run(scale=scale, device=device, resolved=resolved, notebooks=notebooks, seed=settings.seed,
               registry=Registry(results_dir), nproc=nproc,
               deadline=None if budget_s is None else clock() + max(budget_s - BUDGET_MARGIN_S, budget_s / 2),
               timeout=timeout if timeout is not None else (3600 if scale == "quick" else None),
               execute=execute, clock=clock, out=out, command=command_line(), report_gpu_work=report_gpu_work)
    statuses = {c.slug: chapter_status(c, scale, run.registry, notebooks_dir=notebooks) for c in selected}
    out(f"posgeom reproduce: scale {scale}, device {resolved}, results {results_dir}, "
        f"data {settings.data_dir or 'Hugging Face hub'}, pretrained model {settings.pretrained}")
    out(format_plan(selected, statuses, scale, force=force, gpu_available=resolved.startswith("cuda"), nproc=nproc,
                    report_gpu_work=report_gpu_work))

    report = ReproduceReport(scale, skipped=[c.slug for c in selected if not force and statuses[c.slug] == "done"])
    pending = [c for c in selected if force or statuses[c.slug] != "done"]
    if not pending:
        out(f"nothing to run: every selected chapter is done at {scale} (--force runs them again)")
        return report
    require_committed(scale)  # committed paper results record a commit that reproduces them
    run.run_all(pending, report)
    return report


def _checked_nproc(nproc: int, scale: str, resolved: str) -> int:
    """``nproc`` when this machine can run that many ``torchrun`` processes at ``scale``; else ValueError."""
    nproc = check_positive_int(nproc, "nproc")
    if nproc > 1:
        import torch
        if scale != "paper":
            raise ValueError("several processes (torchrun) are for the paper scale only; use nproc=1 at quick")
        if not resolved.startswith("cuda") or nproc > torch.cuda.device_count():
            raise ValueError(f"nproc={nproc} needs {nproc} CUDA devices; this machine has "
                             f"{torch.cuda.device_count() if torch.cuda.is_available() else 0}")
    return nproc


@dataclass
class _Run:
    """One call of :func:`reproduce` once its options are checked: where, how, and until when."""

    scale: str
    device: str
    resolved: str
    notebooks: Path
    seed: int
    registry: Registry
    nproc: int
    deadline: float | None
    timeout: int | None
    execute: Callable[..., dict]
    clock: Callable[[], float]
    out: Callable[[str], None]
    command: str
    report_gpu_work: bool
    bar: Any = None

    @property
    def env(self) -> dict[str, str]:
        """The kernels' (and torchrun processes') environment."""
        env = {**os.environ, "POSGEOM_SCALE": self.scale, "POSGEOM_DEVICE": self.device,
               "POSGEOM_RESULTS_DIR": str(self.registry.root), "POSGEOM_PROGRESS": "0", COMMAND_ENV: self.command}
        if self.report_gpu_work:
            from ..costmodel import gpu_work
            env[GPU_WORK_ENV] = json.dumps(gpu_work())
        return {**env, DEADLINE_ENV: repr(float(self.deadline))} if self.deadline is not None else env

    def say(self, line: str) -> None:
        """A line above the progress bar."""
        self.bar.clear()
        self.out(line)
        self.bar.refresh()

    def run_all(self, pending: Sequence[Chapter], report: ReproduceReport) -> None:
        """Run ``pending`` in order until one fails, the budget is spent or a chapter stops at the deadline."""
        from ..progress import tqdm
        self.bar = tqdm(total=len(pending), desc=f"reproduce {self.scale}", unit="chapter")
        try:
            for k, chapter in enumerate(pending, 1):
                left_min, needs_min = (None if self.deadline is None else (self.deadline - self.clock()) / 60,
                                       slice_minutes(chapter, self.scale))
                if left_min is not None and left_min < needs_min:
                    report.deferred = [c.slug for c in pending[k - 1:]]
                    self.say(f"budget: {left_min:.1f} min left, {chapter.slug} needs at least {needs_min:.1f} min; "
                             f"left for the next call: {', '.join(report.deferred)}")
                    break
                self.bar.set_postfix_str(chapter.slug)
                start, prefix = time.perf_counter(), f"[{k}/{len(pending)}] {chapter.slug}: "
                try:
                    probe, command = self.execute_chapter(chapter, prefix)
                except SliceInterrupted as stop:
                    self.stopped(chapter, stop, time.perf_counter() - start, prefix)
                    report.interrupted, report.deferred = chapter.slug, [c.slug for c in pending[k:]]
                    break
                report.ran.append(self.finished(chapter, time.perf_counter() - start, probe, command, prefix))
                self.bar.update(1)
        finally:
            self.bar.close()

    def execute_chapter(self, chapter: Chapter, prefix: str) -> tuple[dict, list[str] | None]:
        """Run the chapter's ``torchrun`` step and notebook: the kernel's probe and the ``torchrun`` command or None."""
        command = None
        if self.scale == "paper" and chapter.ddp and self.nproc > 1:
            command = ddp_command(chapter.ddp, self.nproc)
            self.say(prefix + " ".join(ddp_command(chapter.ddp, self.nproc, printable=True)))
            done = subprocess.run(command, cwd=self.notebooks, env=self.env)
            if done.returncode == INTERRUPTED_EXIT and self.deadline is not None:
                raise SliceInterrupted(chapter.slug, "the torchrun step stopped at the training deadline")
            if done.returncode != 0:
                raise ChapterFailed(chapter.slug, f"the torchrun step exited with code {done.returncode} "
                                                  "(its output is above); --nproc-per-node 1 trains in one process")
        cell_timeout = self.timeout
        if self.deadline is not None:  # a cell that ignores the training deadline still ends with the budget
            grace = int(self.deadline - self.clock() + BUDGET_MARGIN_S / 2)
            cell_timeout = max(1, grace if self.timeout is None else min(self.timeout, grace))

        env = {**self.env, COMMAND_ENV: f"{self.command} (notebook {chapter.slug}.md)"}  # what its results record
        more = {"report_gpu_work": True} if self.report_gpu_work else {}
        with training_deadline(self.deadline):
            probe = self.execute(self.notebooks / f"{chapter.slug}.md", env=env, timeout=cell_timeout,
                                 on_cell=lambda i, n: self.bar.set_postfix_str(f"{chapter.slug} cell {i}/{n}"),
                                 slug=chapter.slug, interrupt_on_timeout=self.deadline is not None, **more)
        return probe, command

    def stopped(self, chapter: Chapter, stop: SliceInterrupted, wall: float, prefix: str) -> None:
        """Record (:data:`PROGRESS_EXPERIMENT`) and say that ``chapter`` stopped at the deadline (resumed next time)."""
        params = {"chapter": chapter.slug}
        before = (self.registry.load(PROGRESS_EXPERIMENT, params=params, scale=self.scale).values
                  if self.registry.has(PROGRESS_EXPERIMENT, params=params, scale=self.scale) else {})
        done, total = stop.steps or (None, None)
        self.registry.save(PROGRESS_EXPERIMENT, {"chapter": chapter.slug, "slices": int(before.get("slices", 0)) + 1,
                                                 "wall_s": float(before.get("wall_s", 0.0)) + wall,
                                                 "steps_done": done, "total_steps": total, "detail": stop.detail},
                           params=params, scale=self.scale, seed=self.seed, device=self.resolved)
        steps = f" at training step {done} of {total}" if stop.steps else ""
        self.say(f"{prefix}stopped at the deadline after {format_minutes(wall / 60)}{steps}; its state is saved, "
                 "the next call resumes it")

    def finished(self, chapter: Chapter, wall: float, probe: dict, command: list[str] | None,
                 prefix: str) -> ChapterRun:
        """Record how ``chapter``'s run went (:data:`RUNS_EXPERIMENT`), clear its progress, and say so."""
        params = {"chapter": chapter.slug}
        claims = (self.registry.load(CLAIMS_EXPERIMENT, params=params, scale=self.scale)
                  if self.registry.has(CLAIMS_EXPERIMENT, params=params, scale=self.scale) else None)
        recorded = (() if claims is None or code_changed(claims.manifest)  # verdicts of older code are no record
                    else tuple(dict.fromkeys(r["claim"] for r in claims.values["rows"])))
        rss_gb, gpu_gb = (None if probe.get(key) is None else probe[key] / 1e9 for key in ("rss_bytes", "gpu_bytes"))
        run = ChapterRun(chapter.slug, wall, rss_gb, gpu_gb, recorded, command)
        self.registry.save(RUNS_EXPERIMENT, {"chapter": chapter.slug, "wall_s": wall, "peak_rss_gb": run.peak_rss_gb,
                                             "gpu_peak_gb": run.gpu_peak_gb, "nproc": self.nproc if command else 1,
                                             "notebook_sha256": notebook_sha256(chapter.slug, self.notebooks)},
                           params=params, scale=self.scale, seed=self.seed, device=self.resolved,
                           code=())  # a record of how a run went depends on no code: never stale
        _clear_progress(self.registry, chapter.slug, self.scale)
        if self.deadline is not None and not self.registry.entries(PROGRESS_EXPERIMENT, scale=self.scale):
            # no other chapter is in progress: no finished run's state is still needed
            discard_finished_checkpoints(self.registry.root, self.scale)
        memory = "" if run.peak_rss_gb is None else f", peak memory {run.peak_rss_gb:.1f} GB"
        memory += "" if run.gpu_peak_gb is None else f" (GPU {run.gpu_peak_gb:.1f} GB)"
        waiting = probe.get("gpu_cells") or []
        memory += f"; {len(waiting)} cell(s) wait for a GPU ({', '.join(map(str, waiting))})" if waiting else ""
        if recorded:
            self.say(f"{prefix}done in {format_minutes(wall / 60)}{memory}; claims {' '.join(recorded)} recorded")
        else:
            self.say(f"{prefix}ran in {format_minutes(wall / 60)}{memory} but recorded no claims: its comparison_table "
                     f"needs chapter={chapter.slug!r}, settings=settings (it will run again next time)")
        return run


def _clear_progress(registry: Registry, slug: str, scale: str) -> None:
    """Remove a finished chapter's progress record (kept, with a warning, behind a symbolic link)."""
    import warnings
    try:
        registry.remove(PROGRESS_EXPERIMENT, params={"chapter": slug}, scale=scale)
    except ValueError as err:
        warnings.warn(f"kept the progress record of {slug}: {err}", stacklevel=2)
