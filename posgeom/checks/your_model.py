r"""Checks for the coding exercises of Part V, *Your own model*: each compares the student's function with an
oracle written here, on hidden cases, with the package function switched off (:mod:`posgeom.checks.core`)."""

from __future__ import annotations

import math

import numpy as np

from .core import Verdict, case_distances, case_rng, compare_with, line_distances, run_check, vary

__all__ = ["check_rotary_distances", "check_offset_profile"]


def check_rotary_distances(student_fn) -> Verdict:
    r"""Check ``student_fn(n, theta) -> (n, n)``: rotary distances for the frequencies ``theta`` (m,):
    $\hat d_{ij}^2 = 2(K(0) - K(i - j))$ with $K(\delta) = \frac1m\sum_k\cos(\delta\theta_k)$.
    """
    from .. import encodings as enc

    def freqs(d_head, base):
        return np.array([base ** (-2.0 * k / d_head) for k in range(d_head // 2)])

    cases = [("RoPE, head width 16", (vary(12, 8, 16), freqs(2 * vary(8, 6, 10), vary(10000.0, 1000.0, 20000.0)))),
             ("Llama-style base 500,000", (vary(20, 14, 26), freqs(2 * vary(32, 24, 40), vary(500000.0, 1e5, 1e6)))),
             ("a partial rotation (4 frequencies)", (vary(16, 10, 20), freqs(8, vary(10000.0, 1000.0, 20000.0)))),
             ("one frequency", (vary(6, 3, 9), np.array([vary(0.7, 0.1, 3.0)])))]

    def oracle(n, theta):
        D = np.zeros((n, n))
        for i in range(n):
            for j in range(n):
                # K(delta) = mean_k cos(delta theta_k); d^2 = 2 (K(0) - K(delta)), K(0) = 1
                K = sum(math.cos((i - j) * t) for t in theta) / len(theta)
                D[i, j] = math.sqrt(max(2.0 * (1.0 - K), 0.0))
        return D

    def hints(D, n, theta):
        want = oracle(n, theta)
        if np.shape(D) == want.shape and np.allclose(D, want ** 2, atol=1e-9):
            return "these are squared distances: take the square root."
        return "average the cosines over the frequencies (K(0) = 1), then d^2 = 2 (1 - K)."

    return run_check("rotary distances", student_fn, cases,
                     compare_with(oracle, atol=1e-9, what="the distance matrix", sqrt=True),
                     switch_off=(enc.rotary_distances, enc.rope_distances, enc.rope_kernel), hints=hints)


def check_offset_profile(student_fn) -> Verdict:
    r"""Check ``student_fn(D) -> (n - 1,)``: for each offset $o = 1 \dots n-1$ the mean of $d_{ij}$ over the
    pairs with $|i - j| = o$, divided by the largest of these means."""
    rng = case_rng(12)
    circle = np.c_[np.cos(np.arange(12) / 2), np.sin(np.arange(12) / 2)]
    cases = [("points on a line", (line_distances(vary(7, 4, 10)),)),
             ("a random table", (case_distances(rng.standard_normal((10, 3))),)),
             ("a circle", (case_distances(circle),)),
             ("two positions", (np.array([[0.0, 3.0], [3.0, 0.0]]) * vary(1.0, 0.1, 10.0),))]

    def oracle(D):
        n = D.shape[0]
        means = []
        for o in range(1, n):
            values = [D[i, i + o] for i in range(n - o)] + [D[i + o, i] for i in range(n - o)]
            means.append(sum(values) / len(values))
        top = max(means)
        return np.array([m / top for m in means])

    return run_check("offset profile", student_fn, cases,
                     compare_with(oracle, flat=True, atol=1e-12, what="the profile"),
                     hints="one value per offset 1 … n-1 (not offset 0), averaged over all pairs at that offset, then "
                           "scaled.")
