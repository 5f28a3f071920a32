"""Checks for the coding exercises of Part III, *The paper's experiments*: one ``check_*`` per exercise, run by
``posgeom.checks.core.run_check`` against an oracle written here."""

from __future__ import annotations

import math

import numpy as np

from .core import Verdict, array_problem, case_distances, case_rng, compare_with, line_distances, run_check, vary

__all__ = ["check_alibi_slopes", "check_best_alibi_slope", "check_violation_rate", "check_kendall_tau",
           "check_logit_distances", "check_alibi_logits"]


def _drift_distances(rng, n: int, v: int) -> np.ndarray:
    """Chord Hellinger distances (n, n) between n random distributions drifting along the positions."""
    base = rng.dirichlet(np.ones(v), size=2)
    t = np.linspace(0.0, 1.0, n)[:, None]
    mu = (1 - t) * base[0] + t * base[1] + 0.3 * rng.dirichlet(np.ones(v), size=n)
    return case_distances(np.sqrt(mu / mu.sum(axis=1, keepdims=True)))


def _line_sums(D):
    n = D.shape[0]
    saa = sad = sdd = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            a, d = float(j - i), float(D[i, j])
            saa, sad, sdd = saa + a * a, sad + a * d, sdd + d * d
    return saa, sad, sdd


def _slope_cases(seed: int):
    rng = case_rng(seed)
    cases = []
    for t in range(5):
        n = int(rng.integers(4, 30))
        D = _drift_distances(rng, n, int(rng.integers(5, 40)))
        saa, sad, sdd = _line_sums(D)
        target = 1.0 - sad**2 / (saa * sdd) + float(rng.uniform(0.01, 3.0))
        cases.append((f"{n} positions, case {t + 1}", (D, target)))
    return cases


def check_alibi_slopes(student_fn) -> Verdict:
    r"""Check ``student_fn(D, target) -> (m_minus, m_plus)``: the slopes, ``m_minus <= m_plus``, at which
    $\sum_{i<j}(m|i-j| - d_{ij})^2 / \sum_{i<j} d_{ij}^2$ equals ``target`` (above its minimum)."""
    from .. import geometry as geo

    def oracle(D, target):
        saa, sad, sdd = _line_sums(D)
        # m^2 saa - 2 m sad + sdd (1 - target) = 0
        root = math.sqrt(sad**2 - saa * sdd * (1.0 - target))
        return (sad - root) / saa, (sad + root) / saa

    def compare(slopes, D, target):
        got = [float(s) for s in slopes]
        if len(got) != 2:
            return f"{len(got)} values returned; return the pair (m_minus, m_plus)"
        want = oracle(D, target)
        if np.allclose(got[::-1], want, rtol=1e-8, atol=0.0) and not np.allclose(got, want, rtol=1e-8, atol=0.0):
            return "the right slopes in the wrong order (m_minus first)"
        return array_problem(np.array(got), np.array(want), atol=0.0, rtol=1e-8, what="(m_minus, m_plus)")

    return run_check("ALiBi slopes", student_fn, _slope_cases(0), compare,
                     switch_off=(geo.alibi_slopes_for, geo.alibi_parabola, geo.alibi_paper_stress),
                     hints="the stress is a parabola in m: collect sum a^2, sum a d and sum d^2 over the pairs i < j.")


def check_best_alibi_slope(student_fn) -> Verdict:
    r"""Check ``student_fn(D) -> float``: the slope $m^\star$ minimising ALiBi's ``"paper"`` stress against
    ``D`` (offsets $|i - j|$ of positions ``0 … n-1``). ``alibi_parabola`` is switched off."""
    from .. import geometry as geo

    def oracle(D, target):
        saa, sad, _ = _line_sums(D)
        return sad / saa

    return run_check("best ALiBi slope", lambda D, target: student_fn(D), _slope_cases(1),
                     compare_with(oracle, number=True, rtol=1e-9, what="the slope"),
                     switch_off=(geo.alibi_parabola, geo.alibi_paper_stress),
                     hints="set the derivative of the parabola in m to zero; sum over the pairs i < j.")


def _violation_cases(seed: int, *, ties: bool):
    rng = case_rng(seed)
    cases = []
    for t in range(8):
        n = int(rng.integers(4, 11))
        D = case_distances(rng.standard_normal((n, 3)))
        kind = t % 4 if ties else (0, 2)[t % 2]
        if kind == 0:
            Dhat, label = case_distances(rng.standard_normal((n, 2))), "random encoding"
        elif kind == 1:
            Dhat, label = line_distances(n), "offsets only (ties)"
        elif kind == 2:
            Dhat, label = np.sqrt(D), "a monotone transform"
        else:
            Dhat, label = np.round(case_distances(rng.standard_normal((n, 2))), 1), "rounded (ties in both)"
            D = np.round(D, 1)
        cases.append((f"{label}, {n} positions", (D, Dhat)))
    return cases


def _pair_counts(D, Dhat):
    """(concordant, discordant) pairs of position pairs, ties in either matrix left out, by a loop."""
    n = D.shape[0]
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    conc = disc = 0
    for p in range(len(pairs)):
        for q in range(p + 1, len(pairs)):
            s = np.sign(D[pairs[p]] - D[pairs[q]]) * np.sign(Dhat[pairs[p]] - Dhat[pairs[q]])
            conc, disc = conc + (s > 0), disc + (s < 0)
    return int(conc), int(disc)


def check_violation_rate(student_fn) -> Verdict:
    r"""Check ``student_fn(D, Dhat) -> float``: discordant over (concordant + discordant) pairs of
    position pairs $i < j$, pairs tied in ``D`` or in ``Dhat`` left out."""
    from .. import geometry as geo

    def oracle(D, Dhat):
        conc, disc = _pair_counts(D, Dhat)
        return disc / (conc + disc)

    return run_check("violation rate", student_fn, _violation_cases(0, ties=True),
                     compare_with(oracle, number=True, atol=1e-12, what="the rate"),
                     switch_off=(geo.violation_rate,),
                     hints="leave pairs tied in D or in Dhat out of both the count and the total.")


def check_kendall_tau(student_fn) -> Verdict:
    r"""Check ``student_fn(D, Dhat) -> float``: Kendall's $\tau_a = (n_c - n_d)/(n_c + n_d)$ over the pairs of
    position pairs of two distance matrices without ties. ``posgeom.violation_rate`` is switched off."""
    from .. import geometry as geo

    def oracle(D, Dhat):
        conc, disc = _pair_counts(D, Dhat)
        return (conc - disc) / (conc + disc)

    return run_check("Kendall's tau", student_fn, _violation_cases(1, ties=False),
                     compare_with(oracle, number=True, atol=1e-12, what="tau"),
                     switch_off=(geo.violation_rate,),
                     hints=("count concordant and discordant pairs of pairs (i < j, k < l); scipy.stats.kendalltau "
                            "agrees here."))


def check_logit_distances(student_fn) -> Verdict:
    r"""Check ``student_fn(G) -> (n, n)``: $\hat d_{ij} = \sqrt{\max(S_{ii} + S_{jj} - 2S_{ij}, 0)}$ with
    $S = (G + G^\top)/2$, for (n, n) logit matrices ``G`` that need not be symmetric nor positive
    semidefinite."""
    from ..geometry import kernel_distances
    rng = case_rng(0)
    cases = []
    for t in range(6):
        n = int(rng.integers(3, 15))
        X = rng.standard_normal((n, 4))
        G = X @ rng.standard_normal((4, 4)) @ X.T  # an asymmetric bilinear form, like Q K^T
        label = "an asymmetric logit matrix"
        if t % 3 == 2:
            G, label = G - 3.0 * np.eye(n), "not positive semidefinite"
        cases.append((f"{label}, {n} positions", (G,)))

    def oracle(G):
        n = G.shape[0]
        out = np.zeros((n, n))
        for i in range(n):
            for j in range(n):
                s_ij = (G[i, j] + G[j, i]) / 2
                out[i, j] = math.sqrt(max(G[i, i] + G[j, j] - 2 * s_ij, 0.0))
        return out

    def hints(Dhat, G):
        if not np.allclose(np.asarray(Dhat), np.asarray(Dhat).T):
            return "symmetrise G first, S = (G + G^T) / 2."
        return "clip negative squared distances at 0 before the square root."

    return run_check("logit distances", student_fn, cases,
                     compare_with(oracle, atol=1e-10, what="the distance matrix", sqrt=True),
                     switch_off=(kernel_distances,), hints=hints)


def check_alibi_logits(student_fn) -> Verdict:
    r"""Check ``student_fn(n, slope) -> (n, n)``: ALiBi's logit bias $G_{ij} = -m\,|i - j|$ (no causal mask)."""
    cases = [("4 positions, slope 1", (vary(4, 3, 6), vary(1.0, 0.5, 2.0))),
             ("10 positions, slope 0.25", (vary(10, 8, 14), vary(0.25, 0.1, 0.4))),
             ("one position", (1, vary(0.5, 0.1, 1.0))),
             ("16 positions, slope 2^-8", (vary(16, 12, 20), 2.0 ** -vary(8, 6, 10)))]

    def oracle(n, m):
        return np.array([[-m * abs(i - j) for j in range(n)] for i in range(n)], dtype=np.float64)

    def hints(G, n, m):
        if np.shape(G) == (n, n) and np.allclose(G, -oracle(n, m), atol=1e-12) and m * (n - 1) > 0:
            return "the bias is a penalty: minus the slope times the distance |i - j|."
        return ""

    return run_check("ALiBi logits", student_fn, cases, compare_with(oracle, atol=1e-15, what="the bias matrix"),
                     hints=hints)
