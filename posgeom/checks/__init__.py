"""Checks for the chapters' coding exercises, one module per part of the book (Part V: ``your_model``).

Every ``check_*`` runs the student's function on hidden cases against a private oracle, with the package
function the exercise is about switched off, prints one verdict line and returns a
:class:`~posgeom.checks.core.Verdict` (truthy when correct).
"""
