r"""``posgeom reproduce``: run every chapter's experiments into the results registry, resumably.

The unit of work is a **chapter**. Reproducing a chapter executes its notebook ``notebooks/<slug>.md``
(read with jupytext, run by nbclient in a ``python3`` kernel whose working folder is ``notebooks/``,
with ``POSGEOM_SCALE``, ``POSGEOM_DEVICE``, ``POSGEOM_RESULTS_DIR`` set and ``POSGEOM_PROGRESS=0``). The
notebook's ``run_*`` functions store their results in the registry, and its "Paper vs this book" table
records the chapter's claims (``posgeom.report.record_comparison``, experiment ``"claims"``).

A chapter is **done** at a scale when its ``"claims"`` entry exists at that scale, was written by the
current code (the code key of the posgeom modules the notebook imports, :mod:`posgeom.codekey`) and from
the current notebook (its SHA-256). Done chapters are skipped (``--force`` runs them again), so a second run is fast and an interrupted run
resumes: completed chapters are skipped, and inside the interrupted chapter every ``run_*`` that had
finished returns its stored result. A failing cell stops the run with the chapter, the cell and the
error; fix it and run again.

:data:`CHAPTERS` lists, per chapter, the claims it checks and what it costs. ``quick`` figures are
measurements on a 2-core CPU (wall time; peak resident memory of the kernel) — by
``posgeom reproduce`` where ``Estimate.measured`` is true, else the chapter's own timing with a
memory estimate. ``paper`` figures are **estimates** for one H100/H200-class GPU: nothing here has run
them yet. The total is the sum of the chapters' times; the memory is the largest chapter's.

**Several GPUs.** At ``paper`` scale with ``N > 1`` CUDA devices, chapters whose paper-scale training
goes through :func:`posgeom.models.training.train` (every rank gets the same callback records and losses;
``Chapter.ddp``) first run those entry points under PyTorch's own launcher::

    torchrun --standalone --nproc_per_node=N -m posgeom.reproduce --ddp-worker MODULE:FUNCTION ...

where :func:`~posgeom.models.training.train` wraps the model in DistributedDataParallel. Rank 0 writes
the results to the registry (the other ranks compute the same things and write nothing); the notebook
then runs in one process and finds them stored.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from .config import checkout_root, get_settings, resolve_device, validate_device, validate_scale
from .codekey import code_key, code_roots
from .registry import Registry, Result, code_changed, params_key
from .report import CLAIMS_EXPERIMENT, PAPER_CLAIMS, notebook_sha256

#: Registry experiment where ``posgeom reproduce`` records each chapter run's wall time and peak memory.
RUNS_EXPERIMENT = "chapter_runs"
#: Registry experiment where a budgeted run records a chapter it stopped at the deadline (its progress).
PROGRESS_EXPERIMENT = "chapter_progress"
#: The exception :func:`posgeom.models.training.train` raises at its deadline, by name (seen in a kernel).
INTERRUPTED_NAME = "TrainingInterrupted"
#: The environment variable holding the training deadline (a UNIX time), read by the training loop.
DEADLINE_ENV = "POSGEOM_DEADLINE"
#: Exit status of a ``torchrun`` worker whose training stopped at the deadline (EX_TEMPFAIL: call again).
INTERRUPTED_EXIT = 75
#: Seconds kept back from a budget for the training loop to save its state and the kernel to stop.
BUDGET_MARGIN_S = 20.0
#: Printed by the probe cell appended to every executed notebook (peak memory of the kernel).
_PROBE_MARK = "__posgeom_reproduce_probe__"
_PROBE = f"""\
import json as _json, sys as _sys
try:
    import resource as _resource
    _rss = _resource.getrusage(_resource.RUSAGE_SELF).ru_maxrss * (1 if _sys.platform == "darwin" else 1024)
except ImportError:  # Windows
    _rss = None
_gpu = None
if "torch" in _sys.modules and _sys.modules["torch"].cuda.is_initialized():
    _gpu = _sys.modules["torch"].cuda.max_memory_allocated()
print("{_PROBE_MARK}" + _json.dumps({{"rss_bytes": _rss, "gpu_bytes": _gpu}}))
"""


@dataclass(frozen=True)
class Estimate:
    """What one chapter costs at one scale.

    ``minutes``: wall time; ``memory_gb``: peak resident memory of the kernel (host RAM);
    ``gpu_memory_gb``: peak GPU memory (None: no GPU used); ``measured``: measured by
    ``posgeom reproduce`` on the 2-core build machine (else the chapter's timing or an estimate).
    """

    minutes: float
    memory_gb: float
    gpu_memory_gb: float | None = None
    measured: bool = False


@dataclass(frozen=True)
class Chapter:
    """One chapter of the book as ``posgeom reproduce`` sees it.

    ``claims``: the claim ids its "Paper vs this book" table checks. ``ddp``: paper-scale entry points
    (``"module:function"``, called as ``function(settings)``) that may run under ``torchrun``.
    """

    slug: str
    title: str
    claims: tuple[str, ...]
    quick: Estimate
    paper: Estimate
    paper_needs_gpu: bool
    ddp: tuple[str, ...] = ()

    def estimate(self, scale: str) -> Estimate:
        return getattr(self, validate_scale(scale))


_EXP = "posgeom.experiments."

#: The chapters that check claims, in the book's order (chapters reuse the registry entries of earlier
#: ones: *Real corpora* before *Monotonicity* and *Inside BERT*). ``getting-started`` checks no claim.
CHAPTERS: tuple[Chapter, ...] = (
    Chapter("encodings-at-a-glance", "Five encodings at a glance", ("C8",),
            Estimate(0.5, 0.8), Estimate(2, 3), False),
    Chapter("theorem1-necessity", "Theorem 1: why position must be injected", ("C1",),
            Estimate(1.5, 0.8), Estimate(90, 8, 20), True,
            ddp=(_EXP + "necessity:run_order_task",)),
    Chapter("theorem4-separation", "Theorem 4: trained positions stay apart", ("C2",),
            Estimate(3.5, 1.2), Estimate(240, 12, 25), True,
            ddp=(_EXP + "separation:run_chapter",)),
    Chapter("corpus-geometry", "The geometry of a corpus", ("C7", "C8"),
            Estimate(0.4, 0.6, measured=True), Estimate(10, 8), False),
    Chapter("optimal-encoding", "The optimal encoding", ("C3", "C6"),
            Estimate(0.3, 0.7, measured=True), Estimate(10, 6), False),
    Chapter("minimal-parametrisation", "Minimal parametrisation", ("C5",),
            Estimate(3.0, 0.8), Estimate(120, 8, 16), True,
            ddp=(_EXP + "minimal_parametrisation:run_lowrank_training",)),
    Chapter("sinusoids-as-mds", "When are sinusoids optimal?", ("C4", "C7"),
            Estimate(0.2, 0.5, measured=True), Estimate(2, 3), False),
    Chapter("real-corpora", "Real corpora: SST-2 and IMDB", ("C6", "C7", "C8"),
            Estimate(5.0, 2.0), Estimate(120, 16, 30), True,
            ddp=(_EXP + "real_corpora:run_scratch_tables",)),
    Chapter("monotonicity", "Monotonicity", ("C9", "C11"),
            Estimate(3.0, 1.5), Estimate(60, 16, 20), True,
            ddp=(_EXP + "monotonicity:run_ntk_all",)),
    Chapter("inside-bert", "Inside BERT: the layers", ("C10",),
            Estimate(1.0, 1.0), Estimate(5, 4, 4), False),
    Chapter("learned-tables", "Learned tables", ("S1", "S2", "S3", "S7", "S8", "S9"),
            Estimate(2.0, 1.5), Estimate(20, 8, 4), True,
            ddp=(_EXP + "learned_tables:run_init_study", _EXP + "table_dropout:run_dropout_study")),
    Chapter("learned-tables-fail", "Where learned tables fail", ("S4", "S5", "S6"),
            Estimate(2.5, 1.2), Estimate(60, 8, 6), True,
            ddp=(_EXP + "undertrained_tails:run_undertrained_tails", _EXP + "extrapolation:run_extrapolation_order",
                 _EXP + "extrapolation_mlm:run_extrapolation_mlm")),
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


# --------------------------------------------------------------------------------------------
# Where things are
# --------------------------------------------------------------------------------------------


def project_root() -> Path:
    """The posgeom checkout: the one holding the current folder, else the one holding this package."""
    root = checkout_root()
    if root is None:
        here = Path(__file__).resolve().parent.parent
        if (here / "_toc.yml").is_file() and (here / "notebooks").is_dir():
            root = here
    if root is None:
        raise ValueError(
            "posgeom reproduce executes the chapters of a posgeom checkout (its notebooks/ folder); "
            "run it inside the repository"
        )
    return root


def select_chapters(only: Iterable[str] | None = None, chapters: Sequence[Chapter] = CHAPTERS) -> list[Chapter]:
    """The chapters named by ``only`` (chapter slugs or claim ids such as ``C7``; commas allowed), in book order.

    A claim id selects every chapter that checks it. An unknown value raises :class:`ValueError`
    listing the valid ones; ``None`` or empty selects every chapter.
    """
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
            raise ValueError(
                f"unknown chapter or claim {value!r}; valid chapters are {', '.join(slugs)}; "
                f"valid claims are {', '.join(PAPER_CLAIMS)}"
            )
    return [c for c in chapters if c.slug in picked]


def claims_stale_reason(entry: Result, *, notebooks_dir: str | Path | None = None) -> str | None:
    """Why a ``"claims"`` entry is out of date (``"code changed"``, ``"notebook changed"``), or None.

    "code changed": the code key of the posgeom modules the chapter imports differs from the recorded
    one (:func:`posgeom.registry.code_changed`); an edit to a module the chapter does not use keeps it fresh.
    """
    if code_changed(entry.manifest):
        return "code changed"
    if notebooks_dir is not None:
        recorded = entry.values.get("notebook_sha256")
        now = notebook_sha256(entry.values.get("chapter", ""), notebooks_dir)
        if recorded and now and recorded != now:
            return "notebook changed"
    return None


@dataclass(frozen=True)
class StaleResult:
    """A committed paper-scale registry entry made by code that has changed since.

    ``modules``: the posgeom modules the entry's code key covers (one of them, or what it imports, changed);
    ``needs_gpu``: recomputing it needs a GPU (:func:`posgeom.costmodel.needs_gpu`).
    """

    experiment: str
    key: str
    modules: tuple[str, ...]
    needs_gpu: bool

    def __str__(self) -> str:
        where = "a GPU" if self.needs_gpu else "this CPU"
        return (f"paper/{self.experiment}/{self.key}: code changed in {', '.join(self.modules) or 'unrecorded code'} "
                f"(or what they import); recompute it on {where}")


def stale_paper_results(results_dir: str | Path) -> list[StaleResult]:
    """Every paper-scale entry of the registry at ``results_dir`` whose code key no longer matches the code."""
    from .costmodel import experiment_costs, needs_gpu

    costs = experiment_costs()
    gpu_chapters = {c.slug for c in CHAPTERS if c.paper_needs_gpu}
    out = []
    for entry in Registry(results_dir).entries(scale="paper"):
        if entry.experiment in (RUNS_EXPERIMENT, PROGRESS_EXPERIMENT) or not code_changed(entry.manifest):
            continue
        if entry.experiment == CLAIMS_EXPERIMENT:  # a chapter's verdicts: rerun with the whole chapter
            gpu = entry.values.get("chapter") in gpu_chapters
        else:
            gpu = needs_gpu(entry.experiment, costs)
        out.append(StaleResult(entry.experiment, entry.key, tuple(entry.manifest.get("code_modules") or ()), gpu))
    return out


def chapter_status(chapter: Chapter, scale: str, registry: Registry, *,
                   notebooks_dir: str | Path | None = None) -> str:
    """``"done"``, ``"not run"`` or ``"stale (code changed)"`` / ``"stale (notebook changed)"`` at ``scale``."""
    params = {"chapter": chapter.slug}
    if not registry.has(CLAIMS_EXPERIMENT, params=params, scale=scale):
        return "not run"
    reason = claims_stale_reason(registry.load(CLAIMS_EXPERIMENT, params=params, scale=scale),
                                 notebooks_dir=notebooks_dir)
    return "done" if reason is None else f"stale ({reason})"


# --------------------------------------------------------------------------------------------
# Executing one notebook
# --------------------------------------------------------------------------------------------


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _first_line(source: str) -> str:
    lines = [ln for ln in source.splitlines() if ln.strip() and not ln.startswith(("---", "#", ":"))]
    text = lines[0].strip() if lines else source.strip()[:60]
    return text if len(text) <= 70 else text[:67] + "..."


def execute_notebook(path: str | Path, *, env: dict[str, str], timeout: int | None = None,
                     on_cell: Callable[[int, int], None] | None = None, slug: str | None = None,
                     interrupt_on_timeout: bool = False) -> dict:
    """Execute a MyST text notebook top to bottom in a fresh ``python3`` kernel (cwd: its folder).

    Parameters
    ----------
    path : path of the ``.md`` notebook.
    env : the kernel's environment.
    timeout : seconds allowed per cell (None: no limit).
    on_cell : called as ``on_cell(k, n)`` before the ``k``-th of ``n`` code cells (1-based).
    interrupt_on_timeout : a cell timeout means the budget ran out (:class:`SliceInterrupted`), not a failure.

    Returns
    -------
    dict with ``rss_bytes`` and ``gpu_bytes`` (peak memory of the kernel; None where unknown).

    Raises
    ------
    SliceInterrupted
        When training stopped at its deadline (``TrainingInterrupted`` in the kernel): its state is saved.
    ChapterFailed
        Naming the cell (its number among the code cells and its first line) and the error.
    """
    import jupytext
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    path = Path(path)
    slug = slug or path.stem
    nb = jupytext.read(path)
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    nb.cells.append(nbformat.v4.new_code_cell(_PROBE))
    position = {cell_index: k + 1 for k, cell_index in enumerate(code)}
    current = {"index": None}

    def start(cell, cell_index):
        current["index"] = cell_index
        if on_cell is not None and cell_index in position:
            on_cell(position[cell_index], len(code))

    client = NotebookClient(nb, kernel_name="python3", timeout=timeout, on_cell_start=start,
                            resources={"metadata": {"path": str(path.parent)}})
    try:
        client.execute(env=env)
    except (CellExecutionError, CellTimeoutError, DeadKernelError) as err:
        index = current["index"]
        where = (f"code cell {position[index]} of {len(code)} (starting `{_first_line(nb.cells[index].source)}`)"
                 if index in position else "the probe cell appended by posgeom reproduce")
        if isinstance(err, CellExecutionError) and err.ename == INTERRUPTED_NAME:
            raise SliceInterrupted(slug, str(err.evalue)) from None
        if isinstance(err, CellTimeoutError) and interrupt_on_timeout:
            raise SliceInterrupted(slug, f"the budget ran out in a cell that does not stop at the training deadline "
                                         f"({path.name}, code cell {position.get(current['index'], '?')})") from None
        if isinstance(err, CellExecutionError):
            what = f"{err.ename}: {err.evalue}"
        elif isinstance(err, CellTimeoutError):
            what = f"no result after {timeout} s (cell timeout)"
        else:
            what = "the kernel died (out of memory?)"
        trace = _ANSI.sub("", str(getattr(err, "traceback", "") or ""))
        tail = "\n".join(trace.strip().splitlines()[-12:])
        raise ChapterFailed(slug, f"{path.name}, {where} failed: {what}" + (f"\n{tail}" if tail else "")) from None
    for output in nb.cells[-1].get("outputs", []):
        text = output.get("text", "")
        if _PROBE_MARK in text:
            return json.loads(text.split(_PROBE_MARK, 1)[1].strip().splitlines()[0])
    return {"rss_bytes": None, "gpu_bytes": None}


# --------------------------------------------------------------------------------------------
# Several GPUs: torchrun
# --------------------------------------------------------------------------------------------


def ddp_command(entry_points: Sequence[str], nproc: int, *, printable: bool = False) -> list[str]:
    """The ``torchrun`` command running ``entry_points`` in ``nproc`` processes (``printable``: as typed)."""
    if nproc < 2:
        raise ValueError(f"torchrun is for several processes; got nproc={nproc}")
    launcher = ["torchrun"] if printable else [sys.executable, "-m", "torch.distributed.run"]
    return [*launcher, "--standalone", f"--nproc_per_node={nproc}", "-m", "posgeom.reproduce", "--ddp-worker",
            *entry_points]


def _resolve_entry_point(entry_point: str) -> Callable:
    module, sep, name = entry_point.partition(":")
    if not sep or not module or not name:
        raise ValueError(f"entry point {entry_point!r} must read 'package.module:function'")
    function = getattr(importlib.import_module(module), name, None)
    if not callable(function):
        raise ValueError(f"entry point {entry_point!r}: {module} has no function {name!r}")
    return function


@contextmanager
def _registry_written_by(rank: int):
    """On ranks other than 0, ``Registry.save`` returns the result without writing it."""
    if rank == 0:
        yield
        return
    original = Registry.save

    def save_in_memory(self, experiment, values, *, params, scale, seed, device, model=None, runtime_s=None,
                       arrays=None, code=None):
        roots = code_roots(code) if code is None or isinstance(code, str) else tuple(code)
        manifest = {"experiment": experiment, "key": params_key(params), "scale": scale, "seed": seed,
                    "device": device, "model": model, "runtime_s": runtime_s, "code_modules": list(roots),
                    "code_key": code_key(roots), "written": False, "rank": rank}
        return Result(experiment, scale, manifest["key"], dict(values), dict(arrays or {}), manifest)

    Registry.save = save_in_memory
    try:
        yield
    finally:
        Registry.save = original


def run_ddp_worker(entry_points: Sequence[str], settings=None) -> None:
    """One process of ``torchrun``: join the process group, call each ``function(settings)``, leave.

    The backend is NCCL on CUDA (each process on the GPU ``LOCAL_RANK``) and gloo on the CPU.
    """
    import torch
    import torch.distributed as dist

    functions = [_resolve_entry_point(e) for e in entry_points]
    settings = settings if settings is not None else get_settings()
    device = resolve_device(settings.device)
    if device.startswith("cuda"):
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl" if device.startswith("cuda") else "gloo")
    try:
        with _registry_written_by(dist.get_rank()):
            for function in functions:
                function(settings)
                dist.barrier()
    finally:
        dist.destroy_process_group()


def default_nproc(scale: str, device: str) -> int:
    """Processes for torchrun: the number of CUDA devices at ``paper`` scale on CUDA, else 1."""
    if scale != "paper" or not resolve_device(device).startswith("cuda") or device.startswith("cuda:"):
        return 1
    import torch

    return torch.cuda.device_count()


# --------------------------------------------------------------------------------------------
# Budgets: a deadline for training, slices that fit
# --------------------------------------------------------------------------------------------

_BUDGET = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h)\s*$")
_UNIT_S = {"s": 1.0, "m": 60.0, "h": 3600.0}


def parse_budget(text: str | float | int) -> float:
    """A budget such as ``"90s"``, ``"9m"``, ``"2h"`` (or a number of seconds) in seconds.

    Raises :class:`ValueError` with one line saying what is accepted.
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        seconds = float(text)
    else:
        found = _BUDGET.match(str(text).lower())
        if not found:
            raise ValueError(f"budget {text!r} is not a duration: write a number followed by s, m or h "
                             "(for example 90s, 9m, 2h)")
        seconds = float(found.group(1)) * _UNIT_S[found.group(2)]
    if not seconds > 0 or seconds != seconds or seconds == float("inf"):
        raise ValueError(f"budget {text!r} must be a positive duration (for example 90s, 9m, 2h)")
    return seconds


@contextmanager
def training_deadline(at: float | None):
    """Within the block, :func:`posgeom.models.training.train` saves its state and stops at UNIX time ``at``.

    The one adapter between ``posgeom reproduce`` and the training loop's deadline
    (``posgeom.models.deadlines.deadline``): it sets ``POSGEOM_DEADLINE`` (read by the loop in this
    process and in the notebook kernels and ``torchrun`` processes, which inherit it) and enters the
    loop's ``deadline(at)`` block where the models package has one. ``None``: no deadline.
    """
    if at is None:
        yield
        return
    previous = os.environ.get(DEADLINE_ENV)
    os.environ[DEADLINE_ENV] = repr(float(at))
    try:
        manager = getattr(_training_module(), "deadline", None)
        if callable(manager):
            with manager(float(at)):
                yield
        else:
            yield
    finally:
        if previous is None:
            os.environ.pop(DEADLINE_ENV, None)
        else:
            os.environ[DEADLINE_ENV] = previous


@dataclass(frozen=True)
class RunProgress:
    """One training run with a saved state: the experiment that trains it (``module:function``, as in
    :mod:`posgeom.costmodel`), its steps done and total, and whether it had finished."""

    experiment: str
    step: int
    total_steps: int
    complete: bool


def _training_module():
    try:
        from . import models
    except ImportError:  # no deep-learning stack: nothing can have been trained
        return None
    return models


def _cost_label(origin: str) -> str:
    """The cost model's ``module:function`` for a training run's origin, matched by the function's name
    (an experiment whose function moved to another module keeps its row); the origin itself otherwise."""
    from .costmodel import EXPERIMENTS

    function = origin.rpartition(":")[2]
    labels = [f"{module}:{name}" for _, module, name, _ in EXPERIMENTS if name == function]
    return labels[0] if labels else origin.removeprefix("posgeom.experiments.")


def checkpoint_progress(results_dir: str | Path, scale: str) -> list[RunProgress]:
    """The training runs with a saved state under ``results_dir`` at ``scale``
    (``posgeom.models.checkpoints.checkpoint_progress``; empty where the training loop keeps none)."""
    training = _training_module()
    report = getattr(training, "checkpoint_progress", None)
    if not callable(report):
        return []
    out = []
    for row in report(results_dir=results_dir, scale=scale) or ():
        get = (lambda k, r=row: r.get(k)) if isinstance(row, dict) else (lambda k, r=row: getattr(r, k, None))
        origin = _cost_label(str(get("origin") or "?"))
        step = get("step") if get("step") is not None else get("steps_done")
        if step is None or get("total_steps") is None:
            continue
        out.append(RunProgress(origin, int(step), int(get("total_steps")), bool(get("complete"))))
    return out


def experiment_progress(runs: Sequence[RunProgress]) -> dict[str, str]:
    """Per experiment, its saved runs as text: ``"2 runs finished, 1 at step 400 of 2500"``."""
    by: dict[str, list[RunProgress]] = {}
    for r in runs:
        by.setdefault(r.experiment, []).append(r)
    out = {}
    for experiment, rows in by.items():
        done = sum(r.complete for r in rows)
        parts = [f"{done} run(s) finished"] if done else []
        parts += [f"1 at step {r.step} of {r.total_steps}" for r in rows if not r.complete]
        out[experiment] = ", ".join(parts)
    return out


def discard_finished_checkpoints(results_dir: str | Path, scale: str) -> int:
    """Remove the saved states of finished training runs (kept while a deadline was set, so that an
    interrupted experiment skips them); called once a chapter has stored its results. Returns how many."""
    discard = getattr(_training_module(), "discard_checkpoints", None)
    if not callable(discard):
        return 0
    return len(discard(results_dir=results_dir, scale=scale, complete_only=True))


def chapter_progress(chapter: Chapter, scale: str, registry: Registry) -> str | None:
    """What a budgeted run recorded when it stopped ``chapter`` at the deadline (None: nothing recorded)."""
    params = {"chapter": chapter.slug}
    if not registry.has(PROGRESS_EXPERIMENT, params=params, scale=scale):
        return None
    v = registry.load(PROGRESS_EXPERIMENT, params=params, scale=scale).values
    steps = f", training at step {v['steps_done']} of {v['total_steps']}" if v.get("total_steps") else ""
    return f"{v.get('slices', 1)} slice(s), {_fmt_minutes(v.get('wall_s', 0.0) / 60)} so far{steps}"


#: The least time left (minutes) for which a budgeted run still starts a chapter longer than that.
MIN_SLICE_MINUTES = 1.0


def slice_minutes(chapter: Chapter, scale: str) -> float:
    """The time a budgeted run needs left to start ``chapter``: its whole estimate when shorter than
    :data:`MIN_SLICE_MINUTES`, else that minimum (its training is resumable and its finished experiments
    are stored, so a slice that ends at the deadline is progress)."""
    return min(chapter.estimate(scale).minutes, MIN_SLICE_MINUTES)


# --------------------------------------------------------------------------------------------
# The plan and the run
# --------------------------------------------------------------------------------------------


def _gb(n_bytes) -> float | None:
    return None if n_bytes is None else n_bytes / 1e9


def _fmt_minutes(minutes: float) -> str:
    return f"{minutes:.1f} min" if minutes < 60 else f"{minutes / 60:.1f} h"


def format_plan(chapters: Sequence[Chapter], statuses: dict[str, str], scale: str, *, force: bool = False,
                gpu_available: bool = True, nproc: int = 1) -> str:
    """The table printed before a run: per chapter its claims, status, action and the estimate."""
    lines = [f"{'chapter':26} {'claims':18} {'status':26} {'action':6} {'time':>9} {'memory':>14}"]
    total, peak, gpu_peak = 0.0, 0.0, 0.0
    for c in chapters:
        e = c.estimate(scale)
        run = force or statuses[c.slug] != "done"
        memory = f"{e.memory_gb:.1f} GB" + (f" +{e.gpu_memory_gb:.0f} GPU" if e.gpu_memory_gb else "")
        lines.append(f"{c.slug:26} {' '.join(c.claims):18} {statuses[c.slug]:26} {'run' if run else 'skip':6} "
                     f"{_fmt_minutes(e.minutes) if run else '-':>9} {memory if run else '-':>14}")
        if run:
            total += e.minutes
            peak, gpu_peak = max(peak, e.memory_gb), max(gpu_peak, e.gpu_memory_gb or 0.0)
            if scale == "paper" and c.paper_needs_gpu and not gpu_available:
                lines.append(f"  warning: {c.slug} needs a GPU at paper scale; on this CPU expect days, not hours")
            if scale == "paper" and c.ddp and nproc > 1:
                lines.append("  first: " + " ".join(ddp_command(c.ddp, nproc, printable=True)))
    basis = ("2-core CPU measurements and estimates" if scale == "quick" else "estimates for one H100/H200-class GPU")
    lines.append(f"to run: {sum(force or statuses[c.slug] != 'done' for c in chapters)} of {len(chapters)} chapters, "
                 f"about {_fmt_minutes(total)}, peak memory about {peak:.1f} GB"
                 + (f" (+{gpu_peak:.0f} GB GPU)" if gpu_peak else "") + f" ({basis})")
    return "\n".join(lines)


def resolve_results_dir(results_dir, notebooks: Path) -> Path:
    """``results_dir``, else ``POSGEOM_RESULTS_DIR``, else the checkout's ``results/``; ``~`` expanded."""
    if results_dir is None:
        env_results = os.environ.get("POSGEOM_RESULTS_DIR")
        results_dir = Path(env_results) if env_results else notebooks.parent / "results"
    return Path(results_dir).expanduser().resolve()


def reproduce(scale: str = "quick", only: Iterable[str] | None = None, device: str | None = None, *,
              force: bool = False, nproc: int | None = None, chapters: Sequence[Chapter] = CHAPTERS,
              notebooks_dir: str | Path | None = None, results_dir: str | Path | None = None,
              timeout: int | None = None, out: Callable[[str], None] = print, budget: str | float | None = None,
              execute: Callable[..., dict] = execute_notebook,
              clock: Callable[[], float] = time.time) -> ReproduceReport:
    """Execute the selected chapters that are not done at ``scale`` (all of them with ``force``).

    Parameters
    ----------
    scale : "quick" or "paper"
    only : chapter slugs and/or claim ids (see :func:`select_chapters`); default every chapter.
    device : the kernels' ``POSGEOM_DEVICE`` (default: the environment's, else ``auto``).
    force : run chapters that are done too (their ``run_*`` functions still reuse results stored by the
        same code with the same options; delete ``results/<scale>/`` to recompute everything).
    nproc : processes for the ``torchrun`` step of ``Chapter.ddp`` at ``paper`` scale (default: the
        number of CUDA devices; 1 = no torchrun).
    chapters, notebooks_dir, results_dir : what to run and where (defaults: :data:`CHAPTERS`, the
        checkout's ``notebooks/``, ``POSGEOM_RESULTS_DIR`` else the checkout's ``results/``).
    timeout : seconds per cell (default 3600 at ``quick``, none at ``paper``).
    out : where the plan and the per-chapter lines go.
    budget : run only what fits: ``"90s"``, ``"9m"``, ``"2h"`` (:func:`parse_budget`). Training stops at
        the deadline (``POSGEOM_DEADLINE``, :func:`training_deadline`) after saving its state; the chapter
        is recorded as in progress and resumed by the next call; chapters that do not fit are left for later.
    execute, clock : the notebook executor (:func:`execute_notebook`) and the wall clock (tests replace them).

    Returns
    -------
    ReproduceReport

    Raises
    ------
    ChapterFailed
        At the first chapter that fails; the chapters before it are done and will be skipped next time.
    """
    from .progress import tqdm

    scale = validate_scale(scale)
    device = validate_device(device if device is not None else os.environ.get("POSGEOM_DEVICE", "auto"))
    selected = select_chapters(only, chapters)
    notebooks = Path(notebooks_dir) if notebooks_dir is not None else project_root() / "notebooks"
    results_dir = resolve_results_dir(results_dir, notebooks)
    missing = [c.slug for c in selected if not (notebooks / f"{c.slug}.md").is_file()]
    if missing:
        raise ValueError(f"no notebook for chapter(s) {', '.join(missing)} in {notebooks}")
    settings = get_settings(scale=scale, device=device, results_dir=results_dir)
    registry = Registry(results_dir)
    resolved = resolve_device(device)
    nproc = default_nproc(scale, device) if nproc is None else int(nproc)
    if nproc < 1:
        raise ValueError(f"nproc must be a positive integer, got {nproc}")
    if nproc > 1:
        import torch

        if scale != "paper":
            raise ValueError("several processes (torchrun) are for the paper scale only; use nproc=1 at quick")
        if not resolved.startswith("cuda") or nproc > torch.cuda.device_count():
            raise ValueError(f"nproc={nproc} needs {nproc} CUDA devices; this machine has "
                             f"{torch.cuda.device_count() if torch.cuda.is_available() else 0}")
    budget_s = parse_budget(budget) if budget is not None else None
    started = clock()
    deadline = None if budget_s is None else started + max(budget_s - BUDGET_MARGIN_S, budget_s / 2)
    timeout = timeout if timeout is not None else (3600 if scale == "quick" else None)
    statuses = {c.slug: chapter_status(c, scale, registry, notebooks_dir=notebooks) for c in selected}
    out(f"posgeom reproduce: scale {scale}, device {resolved}, results {results_dir}, "
        f"data {settings.data_dir or 'Hugging Face hub'}, pretrained model {settings.pretrained}")
    out(format_plan(selected, statuses, scale, force=force, gpu_available=resolved.startswith("cuda"), nproc=nproc))

    report = ReproduceReport(scale, skipped=[c.slug for c in selected if not force and statuses[c.slug] == "done"])
    pending = [c for c in selected if force or statuses[c.slug] != "done"]
    env = {**os.environ, "POSGEOM_SCALE": scale, "POSGEOM_DEVICE": device, "POSGEOM_RESULTS_DIR": str(results_dir),
           "POSGEOM_PROGRESS": "0"}
    if not pending:
        out(f"nothing to run: every selected chapter is done at {scale} (--force runs them again)")
        return report
    bar = tqdm(total=len(pending), desc=f"reproduce {scale}", unit="chapter")

    def say(line: str) -> None:  # a line above the progress bar
        bar.clear()
        out(line)
        bar.refresh()

    try:
        for k, chapter in enumerate(pending, 1):
            left_min = None if deadline is None else (deadline - clock()) / 60
            if left_min is not None and left_min < slice_minutes(chapter, scale):
                report.deferred = [c.slug for c in pending[k - 1:]]
                say(f"budget: {left_min:.1f} min left, {chapter.slug} needs at least "
                    f"{slice_minutes(chapter, scale):.1f} min; left for the next call: {', '.join(report.deferred)}")
                break
            bar.set_postfix_str(chapter.slug)
            start = time.perf_counter()
            command = None
            run_env = {**env, DEADLINE_ENV: repr(float(deadline))} if deadline is not None else env

            def on_cell(i, n, slug=chapter.slug):
                bar.set_postfix_str(f"{slug} cell {i}/{n}")

            try:
                if scale == "paper" and chapter.ddp and nproc > 1:
                    command = ddp_command(chapter.ddp, nproc)
                    say(f"[{k}/{len(pending)}] {chapter.slug}: "
                        + " ".join(ddp_command(chapter.ddp, nproc, printable=True)))
                    done = subprocess.run(command, cwd=notebooks, env=run_env)
                    if done.returncode == INTERRUPTED_EXIT and deadline is not None:
                        raise SliceInterrupted(chapter.slug, "the torchrun step stopped at the training deadline")
                    if done.returncode != 0:
                        raise ChapterFailed(chapter.slug, f"the torchrun step exited with code {done.returncode} "
                                                          "(its output is above); --nproc-per-node 1 trains in one "
                                                          "process")
                cell_timeout = timeout
                if deadline is not None:  # a cell that ignores the training deadline still ends with the budget
                    grace = int(deadline - clock() + BUDGET_MARGIN_S / 2)
                    cell_timeout = max(1, grace if timeout is None else min(timeout, grace))
                with training_deadline(deadline):
                    probe = execute(notebooks / f"{chapter.slug}.md", env=run_env, timeout=cell_timeout,
                                    on_cell=on_cell, slug=chapter.slug, interrupt_on_timeout=deadline is not None)
            except SliceInterrupted as stop:
                wall = time.perf_counter() - start
                _record_progress(registry, chapter.slug, scale, stop, wall, seed=settings.seed, device=resolved)
                report.interrupted = chapter.slug
                report.deferred = [c.slug for c in pending[k:]]
                steps = f" at training step {stop.steps[0]} of {stop.steps[1]}" if stop.steps else ""
                say(f"[{k}/{len(pending)}] {chapter.slug}: stopped at the deadline after {_fmt_minutes(wall / 60)}"
                    f"{steps}; its state is saved, the next call resumes it")
                break
            wall = time.perf_counter() - start
            recorded = _recorded_claims(registry, chapter.slug, scale)
            run = ChapterRun(chapter.slug, wall, _gb(probe.get("rss_bytes")), _gb(probe.get("gpu_bytes")), recorded,
                             command)
            registry.save(RUNS_EXPERIMENT, {"chapter": chapter.slug, "wall_s": wall, "peak_rss_gb": run.peak_rss_gb,
                                            "gpu_peak_gb": run.gpu_peak_gb, "nproc": nproc if command else 1,
                                            "notebook_sha256": notebook_sha256(chapter.slug, notebooks)},
                          params={"chapter": chapter.slug}, scale=scale, seed=settings.seed, device=resolved,
                          code=())  # a record of how a run went depends on no code: never stale
            report.ran.append(run)
            _clear_progress(registry, chapter.slug, scale)
            if deadline is not None and not registry.entries(PROGRESS_EXPERIMENT, scale=scale):
                # no other chapter is in progress: no finished run's state is still needed
                discard_finished_checkpoints(results_dir, scale)
            memory = "" if run.peak_rss_gb is None else f", peak memory {run.peak_rss_gb:.1f} GB"
            memory += "" if run.gpu_peak_gb is None else f" (GPU {run.gpu_peak_gb:.1f} GB)"
            if recorded:
                line = f"done in {_fmt_minutes(wall / 60)}{memory}; claims {' '.join(recorded)} recorded"
            else:
                line = (f"ran in {_fmt_minutes(wall / 60)}{memory} but recorded no claims: its comparison_table "
                        f"needs chapter={chapter.slug!r}, settings=settings (it will run again next time)")
            say(f"[{k}/{len(pending)}] {chapter.slug}: {line}")
            bar.update(1)
    finally:
        bar.close()
    return report


def _record_progress(registry: Registry, slug: str, scale: str, stop: SliceInterrupted, wall: float, *, seed: int,
                     device: str) -> None:
    params = {"chapter": slug}
    before = (registry.load(PROGRESS_EXPERIMENT, params=params, scale=scale).values
              if registry.has(PROGRESS_EXPERIMENT, params=params, scale=scale) else {})
    done, total = stop.steps or (None, None)
    registry.save(PROGRESS_EXPERIMENT, {"chapter": slug, "slices": int(before.get("slices", 0)) + 1,
                                        "wall_s": float(before.get("wall_s", 0.0)) + wall, "steps_done": done,
                                        "total_steps": total, "detail": stop.detail},
                  params=params, scale=scale, seed=seed, device=device)


def _clear_progress(registry: Registry, slug: str, scale: str) -> None:
    """A chapter that finished has no progress left to report."""
    import shutil

    folder = Path(registry.root) / scale / PROGRESS_EXPERIMENT / params_key({"chapter": slug})
    if folder.is_dir():
        shutil.rmtree(folder, ignore_errors=True)


def _recorded_claims(registry: Registry, slug: str, scale: str) -> tuple[str, ...]:
    params = {"chapter": slug}
    if not registry.has(CLAIMS_EXPERIMENT, params=params, scale=scale):
        return ()
    entry = registry.load(CLAIMS_EXPERIMENT, params=params, scale=scale)
    if code_changed(entry.manifest):
        return ()
    return tuple(dict.fromkeys(r["claim"] for r in entry.values["rows"]))


def paper_minutes(chapters: Sequence[Chapter] = CHAPTERS) -> dict[str, float]:
    """Per chapter, the paper-scale time on one H100/H200-class GPU: the cost model's time of the
    experiments that run a model (:mod:`posgeom.costmodel`) plus, for chapters without model work, the
    chapter's own estimate (counting and linear algebra on the CPU)."""
    from .costmodel import experiment_costs

    model = {}
    for cost in experiment_costs():
        model[cost.chapter] = model.get(cost.chapter, 0.0) + cost.gpu_minutes
    return {c.slug: model[c.slug] if model.get(c.slug, 0.0) >= 0.05 else c.paper.minutes for c in chapters}


def format_list(chapters: Sequence[Chapter], scale: str, registry: Registry, notebooks_dir: Path) -> str:
    """``posgeom reproduce --list``: every chapter, its claims, status at ``scale`` (done, stale, in
    progress, not run) and the estimates; at ``paper`` scale also the cost model per experiment."""
    paper = paper_minutes(chapters)
    lines = [f"{'chapter':26} {'claims':18} {'status (' + scale + ')':26} {'quick':>9} {'paper (GPU)':>12} "
             f"{'GPU at paper':13} torchrun"]
    for c in chapters:
        status = chapter_status(c, scale, registry, notebooks_dir=notebooks_dir)
        if status != "done" and chapter_progress(c, scale, registry):
            status = "in progress"
        lines.append(f"{c.slug:26} {' '.join(c.claims):18} {status:26} {_fmt_minutes(c.quick.minutes):>9} "
                     f"{_fmt_minutes(paper[c.slug]):>12} {'yes' if c.paper_needs_gpu else 'no':13} "
                     f"{'yes' if c.ddp else 'no'}")
    lines.append(f"total: {_fmt_minutes(sum(c.quick.minutes for c in chapters))} at quick on a 2-core CPU; "
                 f"about {_fmt_minutes(sum(paper.values()))} at paper on one H100/H200-class GPU (the cost model "
                 "at 40 % MFU for the training, the chapters' estimates for the rest)")
    for c in chapters:
        progress = chapter_progress(c, scale, registry)
        if progress and chapter_status(c, scale, registry, notebooks_dir=notebooks_dir) != "done":
            lines.append(f"in progress: {c.slug}: {progress} (posgeom reproduce --scale {scale} --budget ... resumes it)")
    progress = experiment_progress(checkpoint_progress(registry.root, scale))
    for experiment, text in progress.items():
        lines.append(f"saved training at {scale}: {experiment}: {text}")
    if scale == "paper":
        stored = experiment_results(registry, scale)
        status = {e: "; ".join(t for t in (stored.get(e), progress.get(e)) if t) for e in {*stored, *progress}}
        lines.append("")
        lines.append(cost_report([c.slug for c in chapters], progress=status))
    return "\n".join(lines)


def experiment_results(registry: Registry, scale: str = "paper") -> dict[str, str]:
    """Per costed experiment (``module:function``, :data:`posgeom.costmodel.RESULT_NAMES`), its stored
    entries at ``scale``: ``"3 stored"``, ``"3 stored (1 stale)"``."""
    from fnmatch import fnmatchcase

    from .costmodel import RESULT_NAMES

    counts: dict[str, list[int]] = {}
    for entry in registry.entries(scale=scale):
        for experiment, patterns in RESULT_NAMES.items():
            if any(fnmatchcase(entry.experiment, p) for p in patterns):
                n = counts.setdefault(experiment, [0, 0])
                n[0] += 1
                n[1] += bool(code_changed(entry.manifest))
    return {e: f"{n} stored" + (f" ({stale} stale)" if stale else "") for e, (n, stale) in counts.items()}


def cost_report(slugs: Sequence[str] | None = None, *, progress: dict[str, str] | None = None) -> str:
    """The cost model's table (:mod:`posgeom.costmodel`) for the chapters ``slugs`` at the modules' paper
    settings, and the total with the proposed settings (:data:`posgeom.costmodel.PROPOSED`)."""
    from .costmodel import GPU_GOAL_MINUTES, experiment_costs, format_costs, totals

    keep = (lambda cost: True) if slugs is None else (lambda cost: cost.chapter in set(slugs))
    now = [c for c in experiment_costs() if keep(c)]
    then = [c for c in experiment_costs(proposed=True) if keep(c)]
    t_now, t_then = totals(now), totals(then)
    lines = ["cost model: experiments that run a model at paper scale (the other experiments count and solve "
             "on the CPU, within the chapter estimates above)", format_costs(now, progress=progress)]
    lines.append(f"with the proposed settings (posgeom.costmodel.PROPOSED): {t_then['gpu_minutes']:.1f} min on the GPU "
                 f"in {t_then['slices']} slices (now {t_now['gpu_minutes']:.1f} min; goal at most "
                 f"{GPU_GOAL_MINUTES:.0f} min)")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# The CPU parts of the GPU chapters
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CpuPart:
    """One experiment inside a GPU chapter that needs no GPU at paper scale: ``entry`` (``module:function``
    under ``posgeom.experiments``) called as ``function(settings, **kwargs)``."""

    chapter: str
    entry: str
    kwargs: tuple[tuple[str, Any], ...] = ()

    @property
    def name(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.kwargs)
        return f"{self.entry}({args})"


#: Counting and linear algebra on the full corpora inside the chapters that train at paper scale: run now
#: on a CPU by ``posgeom reproduce --scale paper --cpu-parts``, committed under ``results/paper/``, and read
#: back when the chapter runs on a GPU. (The stress and monotonicity tables are not here: they include the
#: table trained from scratch.)
CPU_PARTS: tuple[CpuPart, ...] = tuple(
    CpuPart(chapter, entry, tuple(kwargs.items())) for chapter, entry, kwargs in (
        ("real-corpora", "real_corpora:run_corpus_geometry", {"corpus": "sst2"}),
        ("real-corpora", "real_corpora:run_corpus_geometry", {"corpus": "imdb"}),
        ("real-corpora", "real_corpora:run_alibi_choices", {"corpus": "sst2"}),
        ("real-corpora", "real_corpora:run_stress_intervals", {"corpus": "sst2"}),
        ("real-corpora", "real_corpora:run_resolvable_splits", {"corpus": "sst2"}),
        ("real-corpora", "real_corpora:run_noise_aware_rank", {"corpus": "sst2"}),
        ("minimal-parametrisation", "minimal_parametrisation:run_effective_rank", {}),
        ("minimal-parametrisation", "minimal_parametrisation:run_c5", {}),
        ("minimal-parametrisation", "minimal_parametrisation:run_c5_draws", {}),
        ("minimal-parametrisation", "minimal_parametrisation:run_rank_validation", {}),
        ("minimal-parametrisation", "minimal_parametrisation:run_stress_vs_rank", {}),
        ("real-corpora", "real_corpora:run_stress_intervals", {"corpus": "imdb"}),
        ("real-corpora", "real_corpora:run_resolvable_splits", {"corpus": "imdb"}),
        ("real-corpora", "real_corpora:run_noise_aware_rank", {"corpus": "imdb"}),
    )
)


def run_cpu_part(entry: str, kwargs: Mapping[str, Any], scale: str = "paper") -> None:
    """Call one CPU part in this process (``function(settings at scale, **kwargs)``); it stores its result."""
    module, _, name = entry.partition(":")
    function = getattr(importlib.import_module(_EXP + module), name)
    function(get_settings(scale=scale, device="cpu"), **dict(kwargs))


def run_cpu_parts(scale: str = "paper", only: Iterable[str] | None = None, *, timeout_s: float | None = None,
                  parts: Sequence[CpuPart] = CPU_PARTS) -> list[tuple[CpuPart, str, float]]:
    """Run the CPU parts of the selected chapters, each in its own process, stopping one that passes
    ``timeout_s``; returns ``(part, "stored" | "timed out" | "failed: <last line>", seconds)`` per part.

    A part already stored by the current code returns at once; one cut by the timeout stores nothing (a
    registry entry is written whole or not at all) and runs again next time.
    """
    slugs = {c.slug for c in select_chapters(only)}
    out = []
    for part in [p for p in parts if p.chapter in slugs]:
        command = [sys.executable, "-m", "posgeom.reproduce", "--cpu-part", part.entry, json.dumps(dict(part.kwargs)),
                   "--scale", scale]
        start = time.perf_counter()
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s,
                                  env={**os.environ, "POSGEOM_PROGRESS": "0"})
            tail = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
            status = "stored" if done.returncode == 0 else f"failed: {tail}"
        except subprocess.TimeoutExpired:
            status = "timed out"
        out.append((part, status, time.perf_counter() - start))
        print(f"{part.chapter:24} {part.name:70} {status} ({out[-1][2] / 60:.1f} min)", flush=True)
    return out


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def _worker_main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m posgeom.reproduce",
                                     description="one torchrun process of posgeom reproduce")
    task = parser.add_mutually_exclusive_group(required=True)
    task.add_argument("--ddp-worker", nargs="+", metavar="MODULE:FUNCTION")
    task.add_argument("--cpu-part", nargs=2, metavar=("MODULE:FUNCTION", "KWARGS_JSON"))
    parser.add_argument("--scale", default="paper")
    args = parser.parse_args(argv)
    if args.cpu_part:
        run_cpu_part(args.cpu_part[0], json.loads(args.cpu_part[1]), validate_scale(args.scale))
        return 0
    try:
        run_ddp_worker(args.ddp_worker)
    except Exception as err:  # noqa: BLE001 - the training deadline is an expected stop, not a failure
        if type(err).__name__ != INTERRUPTED_NAME:
            raise
        print(f"posgeom reproduce worker: {err}", file=sys.stderr)
        return INTERRUPTED_EXIT
    return 0


__all__ = [
    "CHAPTERS", "Chapter", "Estimate", "ChapterFailed", "ChapterRun", "ReproduceReport", "RUNS_EXPERIMENT",
    "CpuPart", "CPU_PARTS", "run_cpu_part", "run_cpu_parts", "reproduce", "select_chapters", "chapter_status", "claims_stale_reason", "execute_notebook", "ddp_command",
    "run_ddp_worker", "default_nproc", "format_plan", "format_list", "project_root", "resolve_results_dir",
    "SliceInterrupted", "PROGRESS_EXPERIMENT", "DEADLINE_ENV", "BUDGET_MARGIN_S", "MIN_SLICE_MINUTES", "parse_budget",
    "training_deadline", "checkpoint_progress", "RunProgress", "experiment_progress", "experiment_results", "discard_finished_checkpoints", "StaleResult", "stale_paper_results", "chapter_progress", "slice_minutes", "cost_report", "paper_minutes",
]

if __name__ == "__main__":
    sys.exit(_worker_main())
