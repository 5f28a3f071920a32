"""Checks for the chapters' coding exercises, one module per part of the book.

:mod:`posgeom.checks.why_position` (Part I), :mod:`posgeom.checks.optimal_encoding` (Part II),
:mod:`posgeom.checks.paper_experiments` (Part III), :mod:`posgeom.checks.learned_tables` (Part IV) and
:mod:`posgeom.checks.your_model` (Part V).
Every ``check_*`` runs the student's function on hidden cases against a private oracle, with the
package function the exercise is about switched off, prints one verdict line (``✓ … correct`` or
``✗ … not yet``, never the expected values) and returns a :class:`~posgeom.checks.core.Verdict`
(truthy when correct). :mod:`posgeom.checks.core` holds what they share.
"""
