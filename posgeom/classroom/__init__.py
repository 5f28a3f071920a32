"""Classroom editions of the chapters: a student notebook, an instructor notebook and an autograder.

``posgeom classroom build`` writes the editions (:func:`~posgeom.classroom.editions.build`); ``posgeom classroom
grade`` decides each coding exercise on its own, from the student's definitions, in a sandbox where posgeom
and the course files are absent (:mod:`posgeom.classroom.grading`). Both need the ``book`` extra.
"""

from importlib.util import find_spec as _find_spec


def require_notebook_tools() -> None:
    """Raise a one-line ImportError naming the extra to install when a notebook tool or cloudpickle is missing."""
    missing = [name for name in ("jupytext", "nbclient", "nbformat", "cloudpickle") if _find_spec(name) is None]
    if missing:
        raise ImportError(f"posgeom classroom needs {', '.join(missing)}: install the book extra, "
                          "pip install 'posgeom[book]'")
