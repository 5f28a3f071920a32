"""Checks for the coding exercises of Part IV, *Learned positional embeddings in practice*: one ``check_*`` per
exercise, run by ``posgeom.checks.core.run_check`` against an oracle written here."""

from __future__ import annotations

import math

import numpy as np

from ..geometry.tables import cosine_similarity_matrix, similarity_by_lag
from .core import Verdict, case_rng, compare_with, run_check, vary

__all__ = ["check_lag_similarity", "check_band_width", "check_interpolation", "check_reuse_last"]


def _lag_oracle(P: np.ndarray) -> np.ndarray:
    n = P.shape[0]
    unit = [row / math.sqrt(float(row @ row)) for row in P]
    return np.array([np.mean([float(unit[i] @ unit[i + lag]) for i in range(n - lag)]) for lag in range(n)])


def _lag_cases():
    from ..encodings import sinusoidal_table
    rng = case_rng(7)
    return [("gaussian 6 x 4", (rng.normal(size=(6, 4)),)),
            ("a sinusoidal table", (sinusoidal_table(vary(20, 12, 28), 2 * vary(4, 3, 6)),)),
            ("a table with a shared offset", (rng.normal(size=(30, 5)) + 3.0,)),
            ("a random walk", (np.cumsum(rng.normal(size=(25, 6)), axis=0),))]


def check_lag_similarity(student_fn) -> Verdict:
    r"""Check ``student_fn(P) -> (n,)``: $s(\delta)$, the mean cosine similarity of the rows of ``P`` (n, d)
    that are $\delta$ apart, $\delta = 0 \dots n-1$ (raw rows, not centred; $s(0) = 1$)."""

    def hints(s, P):
        s = np.ravel(np.asarray(s, dtype=np.float64))
        if s.size and abs(s[0] - 1.0) > 1e-6:
            return "s(0) is 1: normalise every row to unit length before the dot products."
        if s.shape == (P.shape[0],) and np.allclose(s, _lag_oracle(P - P.mean(axis=0)), atol=1e-9):
            return "do not centre the rows: the similarity is of the raw rows."
        return ""

    return run_check("lag similarity", student_fn, _lag_cases(),
                     compare_with(_lag_oracle, flat=True, atol=1e-9, what="s"),
                     switch_off=(similarity_by_lag, cosine_similarity_matrix), hints=hints)


def check_band_width(student_fn) -> Verdict:
    r"""Check ``student_fn(P, level) -> int``: the smallest lag $\delta \ge 1$ with $s(\delta) <$ ``level``,
    or ``n`` when there is none."""
    levels = (vary(0.5, 0.3, 0.7), vary(0.9, 0.8, 0.95), vary(0.99, 0.97, 0.995), vary(0.2, 0.1, 0.4))
    cases = [(f"{label}, level {level}", (P, level)) for (label, (P,)), level in zip(_lag_cases(), levels)]

    def oracle(P, level):
        s = _lag_oracle(P)
        return next((lag for lag in range(1, len(s)) if s[lag] < level), len(s))

    def compare(lag, P, level):
        want = oracle(P, level)
        if isinstance(lag, bool) or float(lag) != int(lag):
            return "the lag should be an integer"
        return None if int(lag) == want else ("the lag is too large" if int(lag) > want else "the lag is too small")

    return run_check("band width", student_fn, cases, compare,
                     switch_off=(similarity_by_lag, cosine_similarity_matrix),
                     hints="start at lag 1 and stop at the first lag strictly below the level; return n when none is.")


def _extension_cases():
    rng = case_rng(4)
    return [("4 rows onto 7", (rng.normal(size=(4, 3)), vary(7, 5, 11))),
            ("16 rows onto 24", (rng.normal(size=(16, 8)), vary(24, 18, 30))),
            ("16 rows onto 32", (rng.normal(size=(16, 8)), vary(32, 31, 48))),
            ("a linear table", (np.arange(10, dtype=np.float64)[:, None] * np.ones((1, 2)) * vary(1.0, 0.5, 3.0), 19)),
            ("5 rows onto 6, width 1", (rng.normal(size=(5, 1)), 6))]


def check_interpolation(student_fn) -> Verdict:
    r"""Check ``student_fn(P, m) -> (m, d)``: the table ``P`` (N, d) linearly interpolated onto ``m`` rows,
    $p'_i = (1 - t) p_{\lfloor s\rfloor} + t\, p_{\lfloor s\rfloor + 1}$, $s = i (N-1)/(m-1)$,
    $t = s - \lfloor s\rfloor$. ``LearnedPositional.extended`` is switched off."""
    from ..models.positional import LearnedPositional

    def oracle(P, m):
        N = P.shape[0]
        out = np.zeros((m, P.shape[1]))
        for i in range(m):
            s = i * (N - 1) / (m - 1)
            lo = min(int(math.floor(s)), N - 1)
            hi = min(lo + 1, N - 1)
            t = s - lo
            out[i] = (1 - t) * P[lo] + t * P[hi]
        return out

    def hints(Q, P, m):
        Q = np.asarray(Q, dtype=np.float64)
        if Q.shape[0] >= P.shape[0] and np.allclose(Q[: P.shape[0]], P):
            return "your first N rows are the old table: that is extension, not interpolation."
        return "row 0 is p_0 and row m - 1 is p_{N-1}; the rows between sit at s = i (N - 1)/(m - 1)."

    return run_check("interpolation", student_fn, _extension_cases(),
                     compare_with(oracle, atol=1e-9, what="the interpolated table"),
                     switch_off=(LearnedPositional.extended,), hints=hints)


def check_reuse_last(student_fn) -> Verdict:
    r"""Check ``student_fn(P, m) -> (m, d)``: the table ``P`` (N, d) kept as it is and extended to ``m``
    rows by repeating its last row, $p'_i = p_{\min(i, N-1)}$. ``LearnedPositional.extended`` is switched off."""
    from ..models.positional import LearnedPositional

    def oracle(P, m):
        return np.array([P[min(i, P.shape[0] - 1)] for i in range(m)])

    return run_check("reuse the last row", student_fn, _extension_cases(),
                     compare_with(oracle, atol=0.0, what="the extended table"),
                     switch_off=(LearnedPositional.extended,),
                     hints="keep the old rows unchanged; every new row is a copy of p_{N-1}.")
