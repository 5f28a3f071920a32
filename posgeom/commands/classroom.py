"""``posgeom classroom build`` and ``posgeom classroom grade``."""

from __future__ import annotations

__all__ = ["add"]


def add(subparsers) -> None:
    """Register ``posgeom classroom build`` and ``posgeom classroom grade``."""
    p = subparsers.add_parser("classroom", help="student and instructor notebooks of the chapters, and their autograder")
    sub = p.add_subparsers(dest="classroom_command", required=True)
    b = sub.add_parser("build", help="write student.ipynb, instructor.ipynb (executed) and autograder.json per chapter")
    b.add_argument("--chapters", nargs="+", help="chapter slugs (default: every chapter with coding exercises)")
    b.add_argument("--out", default="classroom", help="output folder (default: ./classroom)")
    b.add_argument("--no-execute", action="store_true", help="do not execute the instructor notebooks")
    g = sub.add_parser("grade", help="score a completed student notebook, or a folder of them, in a sandbox",
                       description="Each submission runs on a temporary copy in its own folder; the checks run in "
                                   "the grader's process against the student's functions, which answer from a "
                                   "separate process where the library functions of the exercise are blocked.")
    g.add_argument("submission", help="a completed student notebook (.ipynb), or a folder of them")
    g.add_argument("--key", required=True, help="the chapter's autograder.json")
    g.add_argument("--exercises-only", action="store_true",
                   help="run only the first code cell and the exercise section (faster)")
    g.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                   help="limit per cell and per call of a student's function (default: 120)")
    g.add_argument("--submission-timeout", type=float, default=1800.0, metavar="SECONDS",
                   help="limit for the whole run of one notebook (default: 1800)")
    g.add_argument("--memory-mb", type=int, default=8192, metavar="MIB",
                   help="address-space limit of the student's processes, where the platform allows (0: none)")
    g.add_argument("--sandbox", choices=("auto", "bwrap", "none"), default="auto",
                   help="bwrap: the student's processes can write only in their temporary folders (bubblewrap); "
                        "none: ordinary processes there; auto (default): bwrap where it runs, else none with a warning")
    g.add_argument("--jobs", type=int, default=None, help="submissions graded at once (folder; default: half the CPUs)")
    g.add_argument("--csv", default="grades.csv", help="the grade sheet of a folder (default: ./grades.csv)")

    def run_build(args) -> int:
        from ..classroom.editions import build

        for folder in build(args.chapters, args.out, execute=not args.no_execute):
            print(f"wrote {folder}/student.ipynb, instructor.ipynb, autograder.json")
        return 0

    def run_grade(args) -> int:
        from pathlib import Path

        import sys

        from ..classroom.grading import grade, grade_folder, write_grades_csv
        from ..classroom.sandbox import NOT_CONFINED, resolve_sandbox

        sandbox = resolve_sandbox(args.sandbox)
        if args.sandbox == "auto" and sandbox == "none":
            print(f"posgeom classroom grade: warning: {NOT_CONFINED}", file=sys.stderr)
        options = {"exercises_only": args.exercises_only, "timeout": args.timeout,
                   "submission_timeout": args.submission_timeout, "memory_mb": args.memory_mb or None,
                   "sandbox": sandbox}
        if Path(args.submission).is_dir():
            reports = grade_folder(args.submission, args.key, jobs=args.jobs, **options)
            for report in reports:
                print(f"{Path(report.notebook).name}: " + (f"{report.percent:.0f} %" if not report.error
                                                           else f"not graded: {report.error}"))
            print(write_grades_csv(reports, args.key, args.csv))
            return 1 if any(r.error for r in reports) else 0
        print(grade(args.submission, args.key, **options).table())
        return 0

    b.set_defaults(func=run_build)
    g.set_defaults(func=run_grade)
