"""Classroom editions of the chapters: a student notebook, an instructor notebook and an autograder.

:func:`~posgeom.classroom.editions.build` writes, per chapter, ``student.ipynb`` (text and figures,
every coding exercise as a stub, the hidden-case checks, no solutions), ``instructor.ipynb`` (with the
solutions, executed) and ``autograder.json`` (the exercises and their checks);
:func:`~posgeom.classroom.grading.grade` runs a completed student notebook in a sandbox and scores each
exercise in the grader's own process, against the student's functions answering from a separate
process where the exercise's library functions are blocked (:mod:`posgeom.classroom.sandbox`);
:func:`~posgeom.classroom.grading.grade_folder` grades a folder of them into one CSV.
``posgeom classroom build`` and ``posgeom classroom grade`` are the command line. Both need the
``book`` extra (jupytext to read the chapters, nbclient to run notebooks, cloudpickle to take the
functions out).
"""

from importlib.util import find_spec as _find_spec


def require_notebook_tools() -> None:
    """Raise a one-line ImportError naming the extra to install when jupytext or nbclient is missing."""
    missing = [name for name in ("jupytext", "nbclient", "nbformat", "cloudpickle") if _find_spec(name) is None]
    if missing:
        raise ImportError(f"posgeom classroom needs {', '.join(missing)}: install the book extra, "
                          "pip install 'posgeom[book]'")
