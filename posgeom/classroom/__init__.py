"""Classroom editions of the chapters: a student notebook, an instructor notebook and an autograder.

:func:`~posgeom.classroom.editions.build` writes, per chapter, ``student.ipynb`` (text and figures,
every coding exercise as a stub, the check cells, no solutions), ``instructor.ipynb`` (with the
solutions, executed) and ``autograder.json`` (every exercise, the checks, points and case weights, and
the secret seed the hidden cases are drawn from); :func:`~posgeom.classroom.grading.grade` decides each
coding exercise on its own: the student's definitions it needs are read from the notebook
(:mod:`posgeom.classroom.extract`) and answer from a sandbox where posgeom and the course files are
absent (:mod:`posgeom.classroom.sandbox`, :mod:`posgeom.classroom.answer_server`), the check runs in a
memory-limited worker of the grader (:mod:`posgeom.classroom.worker`);
:func:`~posgeom.classroom.grading.grade_folder` and :func:`~posgeom.classroom.grading.write_grades_csv`
grade a folder into a grade sheet and feedback files. :mod:`posgeom.classroom.course` is the Sphinx
extension of the course build of the site (``posgeom book --course``: no solutions).
``posgeom classroom build`` and ``posgeom classroom grade`` are the command line. Both need the
``book`` extra (jupytext to read the chapters, nbclient to run notebooks, nbformat to read
submissions, cloudpickle to send the hidden cases).
"""

from importlib.util import find_spec as _find_spec


def require_notebook_tools() -> None:
    """Raise a one-line ImportError naming the extra to install when jupytext or nbclient is missing."""
    missing = [name for name in ("jupytext", "nbclient", "nbformat", "cloudpickle") if _find_spec(name) is None]
    if missing:
        raise ImportError(f"posgeom classroom needs {', '.join(missing)}: install the book extra, "
                          "pip install 'posgeom[book]'")
