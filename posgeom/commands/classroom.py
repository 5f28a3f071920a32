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
    g = sub.add_parser("grade", help="run a completed student notebook and score each coding exercise")
    g.add_argument("notebook", help="the completed student notebook (.ipynb)")
    g.add_argument("--key", required=True, help="the chapter's autograder.json")
    g.add_argument("--exercises-only", action="store_true",
                   help="run only the first code cell and the exercise section (faster)")

    def run_build(args) -> int:
        from ..classroom.editions import build

        for folder in build(args.chapters, args.out, execute=not args.no_execute):
            print(f"wrote {folder}/student.ipynb, instructor.ipynb, autograder.json")
        return 0

    def run_grade(args) -> int:
        from ..classroom.grading import grade

        report = grade(args.notebook, args.key, exercises_only=args.exercises_only)
        print(report.table())
        return 0

    b.set_defaults(func=run_build)
    g.set_defaults(func=run_grade)
