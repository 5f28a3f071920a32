r"""Self-checks for the coding exercises of Chapter IV (learned position tables).

Each ``check_*`` function calls the student's function on several cases, compares it with the reference
in posgeom, prints a verdict (and, when wrong, the first case that differs and by how much) and returns
``True`` or ``False``.

* :func:`check_interpolation` — linear interpolation of a table of :math:`N` rows onto :math:`m` rows,
  :math:`p'_i = (1 - t) p_{\lfloor s\rfloor} + t\, p_{\lceil s\rceil}`, :math:`s = i (N-1)/(m-1)`
  (reference: :meth:`posgeom.models.positional.LearnedPositional.extended` with ``"interpolate"``).
* :func:`check_lag_similarity` — the mean cosine similarity :math:`s(\delta)` of rows :math:`\delta`
  apart (reference: :func:`posgeom.experiments.learned_tables.similarity_by_lag` of
  :func:`~posgeom.experiments.learned_tables.cosine_similarity_matrix`).
"""

from __future__ import annotations

import numpy as np

from ._common import call_student as _call
from ._common import verdict as _verdict

__all__ = ["check_interpolation", "check_lag_similarity", "reference_interpolation"]


def reference_interpolation(P, m: int) -> np.ndarray:
    """The package's interpolation of a table ``P`` (N, d) onto ``m > N`` rows, shape (m, d).

    Computed by :meth:`~posgeom.models.positional.LearnedPositional.extended`, whose tables are float32.
    """
    import torch

    from ..models.positional import LearnedPositional

    P = np.asarray(P, dtype=np.float64)
    module = LearnedPositional(P.shape[0], P.shape[1], init="table", table=P)
    with torch.no_grad():
        return module.extended(int(m), method="interpolate").weight.detach().double().numpy()


def check_interpolation(student_fn, *, atol: float = 1e-5) -> bool:
    r"""Check ``student_fn(P, m) -> (m, d)``: the table ``P`` (N, d) linearly interpolated onto ``m`` rows.

    Row 0 of the result is :math:`p_0`, row :math:`m-1` is :math:`p_{N-1}`, and the rows in between sit
    at evenly spaced fractional positions :math:`s = i (N - 1)/(m - 1)` of the old table. The tolerance
    ``atol`` covers the float32 rounding of the package's tables.

    Returns
    -------
    bool
    """
    rng = np.random.default_rng(4)
    cases = [(rng.normal(size=(4, 3)), 7), (rng.normal(size=(16, 8)), 24), (rng.normal(size=(16, 8)), 32),
             (np.arange(10, dtype=np.float64)[:, None] * np.ones((1, 2)), 19), (rng.normal(size=(5, 1)), 6)]
    for P, m in cases:
        ok, got = _call("student_fn", student_fn, P.copy(), m)
        if not ok:
            return _verdict("interpolation", False, len(cases), got)
        got = np.asarray(got, dtype=np.float64)
        want = reference_interpolation(P, m)
        if got.shape != want.shape:
            return _verdict("interpolation", False, len(cases),
                            f"for a table of shape {P.shape} and m={m} the result has shape {got.shape}, "
                            f"expected {want.shape} (m rows, same width).")
        err = np.abs(got - want)
        if not float(err.max()) <= atol:
            i = int(np.argmax(err.max(axis=1)))
            s = i * (P.shape[0] - 1) / (m - 1)
            hint = ""
            if np.allclose(got[: P.shape[0]], P) and not np.allclose(got, want):
                hint = (" Your first N rows are the old table: that is extension, not interpolation "
                        "(compress all m positions into the old range).")
            elif not np.allclose(got[-1], P[-1], atol=atol):
                hint = " The last row should be exactly the old last row p_{N-1}."
            return _verdict(
                "interpolation", False, len(cases),
                f"for a table of shape {P.shape} and m={m}: row {i} (old position s = {s:.4g}) differs by "
                f"{float(err[i].max()):.2e}.{hint}",
            )
    return _verdict("interpolation", True, len(cases))


def check_lag_similarity(student_fn, *, atol: float = 1e-9) -> bool:
    r"""Check ``student_fn(P) -> (n,)``: :math:`s(\delta)`, the mean cosine similarity of rows :math:`\delta`
    apart, for :math:`\delta = 0, \dots, n - 1` (raw rows, not centred; :math:`s(0) = 1`).

    Returns
    -------
    bool
    """
    from ..experiments.learned_tables import cosine_similarity_matrix, similarity_by_lag
    from ..encodings import sinusoidal_table

    rng = np.random.default_rng(7)
    cases = [rng.normal(size=(6, 4)), sinusoidal_table(20, 8), rng.normal(size=(30, 5)) + 3.0,
             np.cumsum(rng.normal(size=(25, 6)), axis=0)]
    for P in cases:
        ok, got = _call("student_fn", student_fn, P.copy())
        if not ok:
            return _verdict("lag similarity", False, len(cases), got)
        got = np.asarray(got, dtype=np.float64).ravel()
        want = similarity_by_lag(cosine_similarity_matrix(P))["mean"]
        if got.shape != want.shape:
            return _verdict("lag similarity", False, len(cases),
                            f"for a table of shape {P.shape} the result has shape {got.shape}, expected {want.shape} "
                            "(one value per lag 0 … n-1).")
        err = np.abs(got - want)
        if not float(err.max()) <= atol:
            lag = int(np.argmax(err))
            centred = similarity_by_lag(cosine_similarity_matrix(P, center=True))["mean"]
            hint = ""
            if np.allclose(got, centred, atol=1e-6):
                hint = " You centred the rows first; the seed's claim is about raw cosines."
            elif abs(got[0] - 1.0) > 1e-6:
                hint = " s(0) should be 1: normalise every row to unit length before the dot products."
            return _verdict("lag similarity", False, len(cases),
                            f"for a table of shape {P.shape}: s({lag}) is {got[lag]:.6g}, "
                            f"expected {want[lag]:.6g}.{hint}")
    return _verdict("lag similarity", True, len(cases))
