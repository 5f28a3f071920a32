"""``posgeom reproduce``: run every chapter's notebook into the results registry, resumably.

A chapter is done at a scale when its ``"claims"`` entry exists there, written by the current code (its code key)
from the current notebook (its SHA-256); done chapters are skipped (``--force`` reruns them), and inside an
interrupted chapter every finished ``run_*`` returns its stored result. At ``paper`` scale with several CUDA
devices, a chapter's ``Chapter.ddp`` entry points first run under ``torchrun`` (rank 0 writes the registry).
``quick`` estimates are 2-core CPU measurements; ``paper`` ones are the cost model's GPU minutes or recorded CPU
runs. docs/ARCHITECTURE.md describes the modules; the command line is ``posgeom.commands.reproduce``.
"""

from .budget import (
    BUDGET_MARGIN_S, DEADLINE_ENV, MIN_SLICE_MINUTES, RunProgress, chapter_progress, checkpoint_progress,
    discard_finished_checkpoints, experiment_progress, parse_budget, slice_minutes, training_deadline,
)
from ..timings import CHAPTER_TIMES_FILE, NOT_MEASURED, chapter_times, format_duration
from .chapters import (
    CHAPTERS, OTHER_CHAPTERS, PROGRESS_EXPERIMENT, RUNS_EXPERIMENT, Chapter, ChapterFailed, Estimate, SliceInterrupted,
    chapter_status, chapter_time_substitutions, claims_stale_reason, cost_model_minutes, project_root, recorded_runs,
    resolve_results_dir, select_chapters,
)
from .cpu_parts import CPU_PARTS, CpuPart, run_cpu_part, run_cpu_parts
from .ddp import INTERRUPTED_EXIT, ddp_command, default_nproc, run_ddp_worker
from .listing import (
    StaleResult, cost_report, experiment_results, format_list, format_plan, paper_minutes, stale_paper_results,
)
from .notebook import INTERRUPTED_NAME, execute_notebook
from .parts import CHAPTER_PARTS, ChapterNeeds, PaperPart, chapter_needs, chapter_of, paper_parts, paper_parts_frame
from .runner import ChapterRun, ReproduceReport, reproduce

__all__ = [
    "CHAPTER_TIMES_FILE", "NOT_MEASURED", "OTHER_CHAPTERS", "chapter_times", "format_duration",
    "chapter_time_substitutions", "CHAPTERS", "Chapter", "Estimate", "ChapterFailed", "ChapterRun", "ReproduceReport",
    "RUNS_EXPERIMENT", "CpuPart", "CPU_PARTS", "run_cpu_part", "run_cpu_parts", "reproduce", "select_chapters",
    "chapter_status", "claims_stale_reason", "execute_notebook", "ddp_command", "run_ddp_worker", "default_nproc",
    "format_plan", "format_list", "project_root", "recorded_runs", "resolve_results_dir", "SliceInterrupted",
    "PROGRESS_EXPERIMENT", "DEADLINE_ENV", "BUDGET_MARGIN_S", "MIN_SLICE_MINUTES", "INTERRUPTED_EXIT",
    "INTERRUPTED_NAME", "parse_budget", "training_deadline", "checkpoint_progress", "RunProgress",
    "experiment_progress", "experiment_results", "discard_finished_checkpoints", "StaleResult", "stale_paper_results",
    "chapter_progress", "slice_minutes", "cost_report", "paper_minutes", "cost_model_minutes", "CHAPTER_PARTS",
    "PaperPart", "chapter_of", "paper_parts", "paper_parts_frame", "ChapterNeeds", "chapter_needs"
]
