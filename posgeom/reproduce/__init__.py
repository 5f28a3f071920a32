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

    torchrun --standalone --nproc_per_node=N -m posgeom.cli --debug reproduce --ddp-worker MODULE:FUNCTION ...

where :func:`~posgeom.models.training.train` wraps the model in DistributedDataParallel. Rank 0 writes
the results to the registry (the other ranks compute the same things and write nothing); the notebook
then runs in one process and finds them stored.

The package, by concern: ``chapters`` (the chapter table, selection, status),
``notebook`` (executing one notebook), ``ddp`` (the
``torchrun`` step), ``budget`` (deadlines, slices, saved progress),
``cpu_parts`` (the GPU chapters' CPU work), ``parts`` (each chapter's parts at paper scale, measured or
waiting for a GPU), ``listing`` (the plan, ``--list``, stale paper results) and ``runner`` (:func:`reproduce`).
The command line is :mod:`posgeom.commands.reproduce`.
"""

from .budget import (
    BUDGET_MARGIN_S, DEADLINE_ENV, MIN_SLICE_MINUTES, RunProgress, chapter_progress, checkpoint_progress,
    discard_finished_checkpoints, experiment_progress, parse_budget, slice_minutes, training_deadline,
)
from .chapters import (
    CHAPTERS, PROGRESS_EXPERIMENT, RUNS_EXPERIMENT, Chapter, ChapterFailed, Estimate, SliceInterrupted, chapter_status,
    claims_stale_reason, cost_model_minutes, project_root, recorded_runs, resolve_results_dir, select_chapters,
)
from .cpu_parts import CPU_PARTS, CpuPart, run_cpu_part, run_cpu_parts
from .ddp import INTERRUPTED_EXIT, ddp_command, default_nproc, run_ddp_worker
from .listing import (
    StaleResult, cost_report, experiment_results, format_list, format_plan, paper_minutes, stale_paper_results,
)
from .notebook import INTERRUPTED_NAME, execute_notebook
from .parts import CHAPTER_PARTS, ChapterNeeds, PaperPart, chapter_needs, chapter_of, paper_parts, paper_parts_frame
from .runner import ChapterRun, ReproduceReport, reproduce
from .timings import (
    CHAPTER_TIMES_FILE, NOT_MEASURED, OTHER_CHAPTERS, chapter_time_substitutions, chapter_times, format_duration,
)

__all__ = [
    "CHAPTER_TIMES_FILE", "NOT_MEASURED", "OTHER_CHAPTERS", "chapter_times", "format_duration",
    "chapter_time_substitutions",
    "CHAPTERS", "Chapter", "Estimate", "ChapterFailed", "ChapterRun", "ReproduceReport", "RUNS_EXPERIMENT",
    "CpuPart", "CPU_PARTS", "run_cpu_part", "run_cpu_parts", "reproduce", "select_chapters", "chapter_status",
    "claims_stale_reason", "execute_notebook", "ddp_command", "run_ddp_worker", "default_nproc", "format_plan",
    "format_list", "project_root", "recorded_runs", "resolve_results_dir", "SliceInterrupted", "PROGRESS_EXPERIMENT", "DEADLINE_ENV",
    "BUDGET_MARGIN_S", "MIN_SLICE_MINUTES", "INTERRUPTED_EXIT", "INTERRUPTED_NAME", "parse_budget",
    "training_deadline", "checkpoint_progress", "RunProgress", "experiment_progress", "experiment_results",
    "discard_finished_checkpoints", "StaleResult", "stale_paper_results", "chapter_progress", "slice_minutes",
    "cost_report", "paper_minutes", "cost_model_minutes", "CHAPTER_PARTS", "PaperPart", "chapter_of", "paper_parts",
    "paper_parts_frame", "ChapterNeeds", "chapter_needs",
]
