"""``posgeom book``: the chapters executed in parallel into jupyter-cache, then the strict build."""

from __future__ import annotations

__all__ = ["add"]


def add(subparsers) -> None:
    """Register ``posgeom book``."""
    p = subparsers.add_parser(
        "book", help="execute the chapters in parallel, then build the book strictly into _build/html",
        description="Execute every chapter of the checkout that jupyter-cache does not hold yet, N kernels at "
                    "once (each with its share of the cores' threads), then run `jupyter-book build . --all "
                    "--warningiserror --nitpick --keep-going`, which reads them from the cache.")
    p.add_argument("--jobs", type=int, default=None,
                   help="kernels at once (default: one per core, at most 4; 1 = one after another)")
    p.add_argument("--timeout", type=int, default=3600, help="seconds allowed per cell (default 3600)")
    p.add_argument("--path-output", default=None, metavar="DIR",
                   help="build into DIR/_build/html instead of the checkout's _build/html")
    p.add_argument("--course", action="store_true",
                   help="a course's site: no exercise solutions and no links to the sources (which hold them), "
                        "into _build/course/_build/html unless --path-output says otherwise")
    p.set_defaults(func=_run)


def _run(args) -> int:
    from ..reproduce.book import build_book
    if args.jobs is not None and args.jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {args.jobs}")
    if args.timeout < 1:
        raise ValueError(f"--timeout must be at least 1 second, got {args.timeout}")
    config, path_output = None, args.path_output
    if args.course:
        from ..classroom.course import COURSE_OUTPUT, write_course_config
        from ..reproduce.chapters import project_root

        path_output = path_output if path_output is not None else project_root() / COURSE_OUTPUT
        config = write_course_config(project_root(), path_output)
    return build_book(jobs=args.jobs, timeout=args.timeout, path_output=path_output, config=config)
