"""The CPU parts of the GPU chapters: experiments that need no GPU at paper scale, each run in its own
process with a timeout."""

from __future__ import annotations

import json
import os
import pkgutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from ..config import get_settings
from ..registry import COMMAND_ENV, command_line, require_committed
from ..validation import check_int
from .chapters import EXPERIMENTS_PACKAGE, select_chapters


@dataclass(frozen=True)
class CpuPart:
    """An experiment of a GPU chapter that needs no GPU at paper scale: ``entry`` (``module:function`` under
    ``posgeom.experiments``) called as ``function(settings, **kwargs)``."""

    chapter: str
    entry: str
    kwargs: tuple[tuple[str, Any], ...] = ()

    @property
    def name(self) -> str:
        return f"{self.entry}({', '.join(f'{k}={v!r}' for k, v in self.kwargs)})"


def _parts(chapter: str, module: str, *functions: str, **kwargs: Any) -> tuple[CpuPart, ...]:
    return tuple(CpuPart(chapter, f"{module}:{function}", tuple(kwargs.items())) for function in functions)


#: The CPU work of the chapters that train at paper scale: counting and linear algebra on the full corpora, and
#: the powered designs a small CPU model settles (C2, C5, S4, S6, S7, S9). ``--cpu-parts`` stores them under
#: ``results/paper/``; the chapter reads them back when it runs on a GPU.
CPU_PARTS: tuple[CpuPart, ...] = (
    *_parts("real-corpora", "real_corpora", "run_corpus_geometry", corpus="sst2"),
    *_parts("real-corpora", "real_corpora", "run_corpus_geometry", corpus="imdb"),
    *_parts("real-corpora", "real_corpora", "run_alibi_choices", "run_stress_intervals", "run_resolvable_splits",
            "run_noise_aware_rank", corpus="sst2"),
    *_parts("minimal-parametrisation", "minimal_parametrisation", "run_effective_rank", "run_c5", "run_c5_draws",
            "run_rank_validation", "run_stress_vs_rank"),
    *_parts("minimal-parametrisation", "lowrank_powered", "run_lowrank_powered"),
    *_parts("learned-tables-fail", "learned_powered", "run_tails_powered"),
    *_parts("learned-tables-fail", "extrapolation_powered", "run_heuristics_powered"),
    *_parts("learned-tables", "learned_powered", "run_init_powered", "run_dropout_powered"),
    *_parts("theorem4-separation", "separation_converged", "run_separation_converged"),
    *_parts("real-corpora", "real_corpora", "run_stress_intervals", "run_resolvable_splits", "run_noise_aware_rank",
            corpus="imdb"),
    # the fixed encodings' tables, without the one trained from scratch: what the C6-C9 rows read
    *_parts("real-corpora", "real_corpora", "run_stress_table", corpus="sst2", train_scratch=False),
    *_parts("real-corpora", "real_corpora", "run_stress_table", corpus="imdb", train_scratch=False),
    *_parts("monotonicity", "monotonicity", "run_monotonicity_table", corpus="sst2", train_scratch=False),
    *_parts("monotonicity", "monotonicity", "run_monotonicity_table", corpus="imdb", train_scratch=False),
    *_parts("monotonicity", "monotonicity", "run_violation_intervals", corpus="sst2"),
    *_parts("monotonicity", "monotonicity", "run_violation_intervals", corpus="imdb"),
)


def run_cpu_part(entry: str, kwargs: Mapping[str, Any], scale: str = "paper") -> None:
    """Call one CPU part in this process (``function(settings at scale, **kwargs)``); it stores its result."""
    function = pkgutil.resolve_name(EXPERIMENTS_PACKAGE + entry)
    function(get_settings(scale=scale, device="cpu"), **dict(kwargs))


def run_cpu_parts(scale: str = "paper", only: Iterable[str] | None = None, *, timeout_s: float | None = None,
                  parts: Sequence[CpuPart] = CPU_PARTS, jobs: int = 1) -> list[tuple[CpuPart, str, float]]:
    """Run the CPU parts of the selected chapters, each in its own process stopped after ``timeout_s``.

    Returns ``(part, "stored" | "timed out" | "failed: <last line>", seconds)`` per part, in order. A part
    stored by the current code returns at once; one cut by the timeout stores nothing. ``jobs`` parts run at
    once, sharing the cores out. At ``paper`` scale a checkout with uncommitted changes is refused first
    (``UncommittedChangesError``).
    """
    from .book import kernel_environment, threads_per_kernel
    jobs = check_int(jobs, "jobs", 1)
    slugs = {c.slug for c in select_chapters(only)}
    require_committed(scale)
    env = {**os.environ, "POSGEOM_PROGRESS": "0", COMMAND_ENV: command_line()}
    if jobs > 1:
        env = kernel_environment(threads_per_kernel(jobs), env)
    selected = [p for p in parts if p.chapter in slugs]

    def one(part: CpuPart) -> tuple[CpuPart, str, float]:
        command = [sys.executable, "-m", "posgeom.cli", "reproduce", "--cpu-part", part.entry,
                   json.dumps(dict(part.kwargs)), "--scale", scale]
        start = time.perf_counter()
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env=dict(env))
            tail = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
            status = "stored" if done.returncode == 0 else f"failed: {tail}"
        except subprocess.TimeoutExpired:
            status = "timed out"
        seconds = time.perf_counter() - start
        print(f"{part.chapter:24} {part.name:70} {status} ({seconds / 60:.1f} min)", flush=True)
        return part, status, seconds

    if jobs == 1:
        return [one(part) for part in selected]
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(one, selected))
