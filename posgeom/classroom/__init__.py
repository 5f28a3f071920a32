"""Classroom editions of the chapters: a student notebook, an instructor notebook and an autograder.

:func:`~posgeom.classroom.editions.build` writes, per chapter, ``student.ipynb`` (text and figures,
every coding exercise as a stub, the hidden-case checks, no solutions), ``instructor.ipynb`` (with the
solutions, executed) and ``autograder.json`` (the exercises and their checks);
:func:`~posgeom.classroom.grading.grade` runs a completed student notebook and scores each exercise.
``posgeom classroom build`` and ``posgeom classroom grade`` are the command line.
"""
