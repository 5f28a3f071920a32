"""``posgeom results check``: verify every entry of the results registry and sweep interrupted writes.

Prints one line per entry that is not ``ok`` (every entry with ``--all``; statuses: ``posgeom.registry.EntryStatus``)
and a summary; a stale paper entry also says whether a CPU can recompute it. Exit status 1 when an entry is
damaged or a symbolic link stands in the registry.
"""

from __future__ import annotations

import json
from collections import Counter

__all__ = ["add"]

#: The statuses of ``Registry.check``, in the summary's order.
STATUSES = ("ok", "leftovers", "stale", "damaged", "legacy", "incomplete", "orphan", "symlink")


def _run_check(args) -> int:
    from ..config import get_settings, validate_scale
    from ..registry import Registry
    if args.scale is not None:
        validate_scale(args.scale)
    root = get_settings(results_dir=args.results_dir).results_dir
    if root.exists() and not root.is_dir():
        raise ValueError(f"results folder {str(root)!r} is a file; point --results-dir (POSGEOM_RESULTS_DIR) "
                         "at a folder")
    report = Registry(root).check(sweep=not args.no_sweep, scale=args.scale)
    counts = Counter(entry.status for entry in report)
    if args.json:
        rows = [{k: str(v) for k, v in vars(e).items()} for e in report]
        print(json.dumps({"results_dir": str(root), "counts": dict(counts), "entries": rows}))
    else:
        gpu = _gpu_note(report, root)
        for e in report:  # folder names are anyone's (a committed name can hold terminal escapes): printed escaped
            if args.all or e.status != "ok":
                print(_line(f"{e.status:<10} {e.scale}/{e.experiment}/{e.key}: {e.detail}{gpu.get(id(e), '')}"))
        summary = ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s])
        print(_line(f"{root}: {summary or 'no entries'}"))
    return 1 if counts["damaged"] or counts["symlink"] else 0


def _line(text: str) -> str:
    """``text`` as one line safe for a terminal: control characters escaped, a newline as ``\\n``."""
    from ..validation import printable
    return printable(text).replace("\n", "\\n")


def _gpu_note(report, root) -> dict[int, str]:
    """For each stale paper-scale entry: whether recomputing it needs a GPU."""
    stale = [e for e in report if e.status == "stale" and e.scale == "paper"]
    if not stale:
        return {}
    from ..reproduce import stale_paper_results

    gpu = {(s.experiment, s.key): s.needs_gpu for s in stale_paper_results(root)}
    return {id(e): ("; recompute it on a GPU (posgeom reproduce --scale paper --budget 9m)"
                    if gpu.get((e.experiment, e.key)) else
                    "; a CPU recomputes it: rerun its chapter at paper scale before the change lands")
            for e in stale}


def add(subparsers) -> None:
    """Register ``posgeom results check``."""
    p = subparsers.add_parser("results", help="inspect the results registry (results check)")
    actions = p.add_subparsers(dest="action", required=True)
    check = actions.add_parser(
        "check", help="verify every stored result, sweep interrupted writes, list stale and damaged entries",
        description=__doc__.splitlines()[0])
    check.add_argument("--results-dir", help="the registry folder (default: POSGEOM_RESULTS_DIR, else results/)")
    check.add_argument("--scale", help="check only this scale (quick or paper)")
    check.add_argument("--no-sweep", action="store_true", help="only report; delete nothing")
    check.add_argument("--all", action="store_true", help="list every entry, also those that are ok")
    check.add_argument("--json", action="store_true", help="print one JSON object")
    check.set_defaults(func=_run_check)
