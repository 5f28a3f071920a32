"""Classroom editions of the chapters: a student notebook, an instructor notebook and an autograder.

:func:`~posgeom.classroom.editions.build` writes, per chapter, ``student.ipynb`` (text and figures,
every coding exercise as a stub, the hidden-case checks, no solutions), ``instructor.ipynb`` (with the
solutions, executed) and ``autograder.json`` (the exercises and their checks);
:func:`~posgeom.classroom.grading.grade` runs a completed student notebook and scores each exercise.
``posgeom classroom build`` and ``posgeom classroom grade`` are the command line. Both need the
``book`` extra (jupytext to read the chapters, nbclient to run notebooks).
"""

from importlib.util import find_spec as _find_spec


def require_notebook_tools() -> None:
    """Raise a one-line ImportError naming the extra to install when jupytext or nbclient is missing."""
    missing = [name for name in ("jupytext", "nbclient", "nbformat") if _find_spec(name) is None]
    if missing:
        raise ImportError(f"posgeom classroom needs {', '.join(missing)}: install the book extra, "
                          "pip install 'posgeom[book]'")
