"""The views left: records of parts of stored results that no experiment's own record can read.

Every experiment defines the record it stores, beside it, and a reader writes ``result.as_(Record)``. The few
views here read a result whose stored layout serves two studies (``extrapolation``), a GPU-only series under the
page's own names (``monotonicity``), or parts that a claim test plants alone (``sinusoids_as_mds``). No experiment
imports these modules, so a view changes no code key of a computed result.
"""
