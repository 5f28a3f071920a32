"""``posgeom classroom build`` and ``posgeom classroom grade``."""

from __future__ import annotations

from pathlib import Path

__all__ = ["add"]


def add(subparsers) -> None:
    """Register ``posgeom classroom build`` and ``posgeom classroom grade``."""
    p = subparsers.add_parser("classroom", help="student and instructor notebooks of the chapters, and their autograder")
    sub = p.add_subparsers(dest="classroom_command", required=True)
    b = sub.add_parser("build", help="write student.ipynb, instructor.ipynb (executed) and autograder.json per chapter")
    b.add_argument("--chapters", nargs="+", help="chapter slugs (default: every chapter with coding exercises)")
    b.add_argument("--out", default="classroom", help="output folder (default: ./classroom)")
    b.add_argument("--no-execute", action="store_true", help="do not execute the instructor notebooks")
    b.add_argument("--seed", type=int, default=None,
                   help="the keys' seed, from which the grader draws the hidden cases (default: a new secret one)")
    g = sub.add_parser("grade", help="score a completed student notebook, or a folder of them, in a sandbox",
                       description="Each coding exercise is decided on its own: the student's function and the "
                                   "definitions it uses are read from the notebook and run in a sandbox where "
                                   "posgeom and the course files are absent; the check runs in the grader, on "
                                   "hidden cases drawn from the key's seed.")
    g.add_argument("submission", help="a completed student notebook (.ipynb), or a folder of them")
    g.add_argument("--key", required=True, help="the chapter's autograder.json")
    g.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                   help="limit to run an exercise's definitions, and per call of a student's function (default: 120)")
    g.add_argument("--submission-timeout", type=float, default=1800.0, metavar="SECONDS",
                   help="limit for all the exercises of one notebook (default: 1800)")
    g.add_argument("--memory-mb", type=int, default=8192, metavar="MIB",
                   help="address-space limit of the student's processes and of the grader's workers (0: none)")
    g.add_argument("--sandbox", choices=("auto", "bwrap", "none"), default="auto",
                   help="auto (default) and bwrap: the student's code runs under bubblewrap, without posgeom, the "
                        "course files or the network (refused where bubblewrap cannot run); none: trusted work only")
    g.add_argument("--jobs", type=int, default=None, help="submissions graded at once (folder; default: half the CPUs)")
    g.add_argument("--csv", default="grades.csv", help="the grade sheet of a folder (default: ./grades.csv)")
    g.add_argument("--feedback", default="feedback", metavar="DIR",
                   help="folder of the per-student feedback files (default: ./feedback)")

    def run_build(args) -> int:
        from ..classroom.editions import build
        for folder in build(args.chapters, args.out, execute=not args.no_execute, seed=args.seed):
            print(f"wrote {folder}/student.ipynb, instructor.ipynb, autograder.json")
        return 0

    def run_grade(args) -> int:
        from ..classroom.grading import grade, grade_folder, write_grades_csv
        from ..validation import printable
        options = {"timeout": args.timeout, "submission_timeout": args.submission_timeout,
                   "memory_mb": args.memory_mb or None, "sandbox": args.sandbox}
        if Path(args.submission).is_dir():
            reports = grade_folder(args.submission, args.key, jobs=args.jobs, **options)
            for report in reports:
                print(f"{printable(Path(report.notebook).name)}: " + (f"{report.percent:.0f} %" if not report.error
                                                                     else "not graded (see the grade sheet)"))
            print(write_grades_csv(reports, args.key, args.csv, feedback=args.feedback))
            return 1 if any(r.error for r in reports) else 0
        report = grade(args.submission, args.key, **options)
        print(report.table())
        folder = Path(args.feedback)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{Path(args.submission).stem}.txt").write_text(report.feedback())
        return 0

    b.set_defaults(func=run_build)
    g.set_defaults(func=run_grade)
