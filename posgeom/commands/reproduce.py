"""``posgeom reproduce``: run the chapters' experiments into the results registry (:mod:`posgeom.reproduce`).

Two hidden entries serve its workers: ``--cpu-part MODULE:FUNCTION KWARGS_JSON`` (one CPU part, in the process
``run_cpu_parts`` starts) and ``--ddp-worker MODULE:FUNCTION ...`` (one ``torchrun`` process; exit status 75 when
training stopped at its deadline).
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from ..config import SCALES, validate_scale

__all__ = ["add"]


def add(subparsers) -> None:
    """Register ``posgeom reproduce``."""
    p = subparsers.add_parser(
        "reproduce", help="run every chapter's experiments into the results registry (resumable)",
        description="Run the chapters' experiments into the results registry and record every claim's verdict. "
                    "Chapters already done at the scale (same code, same notebook) are skipped.")
    p.add_argument("--scale", choices=SCALES, default=None, help="quick or paper (default: POSGEOM_SCALE or quick)")
    p.add_argument("--only", nargs="+", metavar="CLAIM_OR_CHAPTER",
                   help="chapter slugs or claim ids (C7, S3): run only the chapters that check them")
    p.add_argument("--device", help="auto, cpu, cuda, cuda:N or mps (default: POSGEOM_DEVICE or auto)")
    p.add_argument("--force", action="store_true",
                   help="run chapters already done at this scale again (stored experiment results made by the "
                        "same code are still reused; delete results/<scale>/ to recompute everything)")
    p.add_argument("--list", action="store_true",
                   help="list the chapters, their claims, status, progress and estimates (at paper scale also the "
                        "cost model per experiment); run nothing")
    p.add_argument("--budget", metavar="DURATION",
                   help="run only what fits in this time (90s, 9m, 2h): training saves its state and stops at "
                        "the deadline, the next call resumes it")
    p.add_argument("--cpu-parts", action="store_true",
                   help="the whole CPU part of the paper scale: the experiments of the GPU chapters that need no GPU "
                        "(counting and linear algebra on the full corpora; reproduce.CPU_PARTS, each stopped at "
                        "--budget if given), then every selected GPU chapter on the CPU with its GPU work reported, "
                        "not run: each records the checks the CPU decides and what the others need; done chapters "
                        "are skipped, so it resumes where it stopped")
    p.add_argument("--jobs", type=int, default=1, metavar="N",
                   help="with --cpu-parts: CPU parts run at once, each with the cores shared out (default 1; on a "
                        "2-core machine, 2 halves the wall time where the parts' numbers do not depend on threads)")
    p.add_argument("--allow-dirty", action="store_true",
                   help="write paper-scale results although posgeom/ or notebooks/ have uncommitted changes (their "
                        "manifests then record a +dirty commit; without it such a run is refused)")
    p.add_argument("--nproc-per-node", type=int, default=None, metavar="N",
                   help="processes (GPUs) for the torchrun step at paper scale (default: every CUDA device; 1: none)")
    worker = p.add_mutually_exclusive_group()  # the internal entries, not in --help
    worker.add_argument("--ddp-worker", nargs="+", metavar="MODULE:FUNCTION", help=argparse.SUPPRESS)
    worker.add_argument("--cpu-part", nargs=2, metavar=("MODULE:FUNCTION", "KWARGS_JSON"), help=argparse.SUPPRESS)
    p.set_defaults(func=_run)


def _run(args) -> int:
    from ..registry import ALLOW_DIRTY_ENV
    if args.allow_dirty:  # for this process and every kernel and worker it starts
        os.environ[ALLOW_DIRTY_ENV] = "1"
    if args.ddp_worker:
        return _ddp_worker(args.ddp_worker)
    if args.cpu_part:  # function(settings at scale, **kwargs), in this process, stores its result
        from ..reproduce import run_cpu_part
        module_function, kwargs_json = args.cpu_part
        run_cpu_part(module_function, json.loads(kwargs_json), validate_scale(args.scale or "paper"))
        return 0
    scale = validate_scale(args.scale or os.environ.get("POSGEOM_SCALE", "quick"))
    if args.list:
        return _list(scale, args.only)
    if args.jobs != 1 and not args.cpu_parts:
        raise ValueError(f"--jobs {args.jobs} applies to --cpu-parts only: add --cpu-parts, or leave --jobs out")
    if args.cpu_parts:
        return _cpu_parts(scale, args.only, args.budget, args.force, args.jobs)
    return _reproduce(scale, args)


def _list(scale: str, only) -> int:
    from ..registry import Registry
    from ..reproduce import format_list, project_root, resolve_results_dir, select_chapters
    from ..validation import printable
    selected = select_chapters(only)
    notebooks = project_root() / "notebooks"
    print(printable(format_list(selected, scale, Registry(resolve_results_dir(None, notebooks)), notebooks)))
    return 0


def _cpu_parts(scale: str, only, budget, force: bool = False, jobs: int = 1) -> int:
    from ..reproduce import ChapterFailed, parse_budget, reproduce, run_cpu_parts, select_chapters
    from ..validation import printable
    timeout = parse_budget(budget) if budget is not None else None
    if jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {jobs}")
    results = run_cpu_parts(scale, only, timeout_s=timeout, jobs=jobs)
    failed = [p.name for p, status, _ in results if status.startswith("failed")]
    if failed:
        print(printable(f"posgeom reproduce: {len(failed)} CPU part(s) failed: {', '.join(failed)}"), file=sys.stderr)
        return 1
    gpu_chapters = [c.slug for c in select_chapters(only) if c.paper_needs_gpu]
    if scale != "paper" or not gpu_chapters:
        return 0
    print(f"posgeom reproduce: the GPU chapters on the CPU, their GPU work reported: {', '.join(gpu_chapters)}")
    try:
        reproduce(scale, gpu_chapters, device="cpu", force=force, report_gpu_work=True)
    except ChapterFailed as err:  # a notebook's traceback: its colours and any name's escapes shown escaped
        print(printable(f"posgeom reproduce: {err}"), file=sys.stderr)
        return 1
    return 0


def _reproduce(scale: str, args) -> int:
    from ..reproduce import ChapterFailed, parse_budget, reproduce
    from ..validation import printable
    try:
        if args.budget is not None:
            parse_budget(args.budget)  # a bad value is one line before anything starts
        report = reproduce(scale, args.only, args.device, force=args.force, nproc=args.nproc_per_node,
                           budget=args.budget)
    except ChapterFailed as err:
        print(printable(f"posgeom reproduce: {err}") + "\nFix it and run the same command again: chapters already done are "
              "skipped, and finished experiments are read back from the registry.", file=sys.stderr)
        return 1
    print(f"posgeom reproduce: {len(report.ran)} chapter(s) run, {len(report.skipped)} already done "
          "(see the page 'Does the paper hold up?' for every claim's verdict)")
    if report.interrupted or report.deferred:
        left = ([f"{report.interrupted} (in progress)"] if report.interrupted else []) + report.deferred
        print(printable(f"posgeom reproduce: the budget is spent; {len(report.deferred) + bool(report.interrupted)} "
                        f"chapter(s) left ({', '.join(left)}): run the same command again to continue"))
    return 0


def _ddp_worker(entry_points: list[str]) -> int:
    """One ``torchrun`` process; the training deadline is an expected stop (exit status 75), not a failure."""
    from ..reproduce import INTERRUPTED_EXIT, INTERRUPTED_NAME, run_ddp_worker
    from ..validation import printable
    try:
        run_ddp_worker(entry_points)
    except Exception as err:  # noqa: BLE001 - the training deadline is an expected stop, not a failure
        if type(err).__name__ != INTERRUPTED_NAME:
            raise
        print(printable(f"posgeom reproduce worker: {err}"), file=sys.stderr)
        return INTERRUPTED_EXIT
    return 0
