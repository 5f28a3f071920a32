"""``posgeom reproduce``: run the chapters' experiments into the results registry (see
:mod:`posgeom.reproduce`)."""

from __future__ import annotations

from ..config import SCALES, validate_scale

__all__ = ["add"]


def add(subparsers) -> None:
    """Register ``posgeom reproduce``."""
    p = subparsers.add_parser(
        "reproduce", help="run every chapter's experiments into the results registry (resumable)",
        description="Run the chapters' experiments into the results registry and record every claim's verdict. "
                    "Chapters already done at the scale (same code, same notebook) are skipped.",
    )
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
                   help="run only the experiments of the GPU chapters that need no GPU (counting and linear algebra "
                        "on the full corpora; reproduce.CPU_PARTS), each stopped at --budget if given")
    p.add_argument("--nproc-per-node", type=int, default=None, metavar="N",
                   help="processes (GPUs) for the torchrun step at paper scale (default: every CUDA device; 1: none)")

    def run(args) -> int:
        import os
        import sys

        from ..registry import Registry
        from ..reproduce import (
            ChapterFailed, format_list, parse_budget, project_root, reproduce, resolve_results_dir, select_chapters,
        )

        scale = validate_scale(args.scale or os.environ.get("POSGEOM_SCALE", "quick"))
        if args.list:
            selected = select_chapters(args.only)
            notebooks = project_root() / "notebooks"
            print(format_list(selected, scale, Registry(resolve_results_dir(None, notebooks)), notebooks))
            return 0
        if args.cpu_parts:
            from ..reproduce import run_cpu_parts

            timeout = parse_budget(args.budget) if args.budget is not None else None
            results = run_cpu_parts(scale, args.only, timeout_s=timeout)
            failed = [p.name for p, status, _ in results if status.startswith("failed")]
            if failed:
                print(f"posgeom reproduce: {len(failed)} CPU part(s) failed: {', '.join(failed)}", file=sys.stderr)
                return 1
            return 0
        try:
            if args.budget is not None:
                parse_budget(args.budget)  # a bad value is one line before anything starts
            report = reproduce(scale, args.only, args.device, force=args.force, nproc=args.nproc_per_node,
                               budget=args.budget)
        except ChapterFailed as err:
            print(f"posgeom reproduce: {err}\nFix it and run the same command again: chapters already done are "
                  "skipped, and finished experiments are read back from the registry.", file=sys.stderr)
            return 1
        print(f"posgeom reproduce: {len(report.ran)} chapter(s) run, {len(report.skipped)} already done "
              "(see the page 'Does the paper hold up?' for every claim's verdict)")
        if report.interrupted or report.deferred:
            print(f"posgeom reproduce: the budget is spent; {len(report.deferred) + bool(report.interrupted)} "
                  "chapter(s) left (" + ", ".join(([f"{report.interrupted} (in progress)"] if report.interrupted
                                                   else []) + report.deferred)
                  + "): run the same command again to continue")
        return 0

    p.set_defaults(func=run)
