"""Checks for the coding exercises of Part I, *Why position, and what training does with it*: one ``check_*`` per
exercise, run by ``posgeom.checks.core.run_check`` against an oracle written here."""

from __future__ import annotations

import math

import numpy as np

from .core import Verdict, case_rng, compare_with, drawing, number_problem, pairwise_oracle, run_check, vary

__all__ = ["check_sinusoid_distances", "check_sinusoid_kernel", "check_equivariance_gap",
           "check_permutation_of_logits", "check_separation", "check_tied_rows"]


_OFF_BY_ONE = "the frequencies are w_k = base^(-2k/d) for k = 0 … d/2 - 1: count k from 0, not from 1."


def _sinusoid_table_oracle(n: int, d: int, base: float, first: int = 0) -> np.ndarray:
    """The interleaved sinusoidal table, entry by entry: p_i[2k] = sin(i w_k), p_i[2k+1] = cos(i w_k)
    (``first = 1``: the frequencies numbered from 1, a common slip)."""
    P = np.zeros((n, d))
    for i in range(n):
        for k in range(d // 2):
            # w_k = base^(-2k/d)
            w = base ** (-2.0 * (k + first) / d)
            P[i, 2 * k], P[i, 2 * k + 1] = math.sin(i * w), math.cos(i * w)
    return P


def _sinusoid_functions():
    from .. import encodings as enc
    return enc.sinusoidal_distances, enc.sinusoidal_table


def _sinusoid_cases():
    """(n, d, base) of each kind; when grading, n, the even width and the base are drawn around them."""
    return [("one frequency (d = 2)", (vary(5, 3, 12), 2, vary(10000.0, 1000.0, 20000.0))),
            ("n = 16, d = 8", (vary(16, 8, 24), 2 * vary(4, 3, 6), vary(10000.0, 1000.0, 20000.0))),
            ("n = 40, d = 64", (vary(40, 30, 50), 2 * vary(32, 24, 40), vary(10000.0, 1000.0, 20000.0))),
            ("small base", (vary(12, 8, 16), 2 * vary(3, 2, 5), vary(100.0, 20.0, 200.0))),
            ("n = 48, d = 96, base 500", (vary(48, 40, 56), 2 * vary(48, 40, 56), vary(500.0, 300.0, 800.0)))]


def check_sinusoid_distances(student_fn) -> Verdict:
    r"""Check ``student_fn(n, d, base) -> (n, n)``: the distances between sinusoidal positions, from the kernel."""

    def oracle(n, d, base):
        return pairwise_oracle(_sinusoid_table_oracle(n, d, base))

    def hints(D, n, d, base):
        want = oracle(n, d, base)
        if np.shape(D) == want.shape and np.allclose(D, want ** 2, atol=1e-6):
            return "these are squared distances: take the square root."
        if np.shape(D) == want.shape and np.allclose(D, pairwise_oracle(_sinusoid_table_oracle(n, d, base, first=1)),
                                                     atol=1e-6):
            return _OFF_BY_ONE
        return "the squared distance is d (1 - K) with K the *mean* of the cosines cos(delta w_k)."

    return run_check("sinusoid distances", student_fn, _sinusoid_cases(),
                     compare_with(oracle, atol=1e-9, what="the distance matrix", sqrt=True),
                     switch_off=_sinusoid_functions(), hints=hints)


def check_sinusoid_kernel(student_fn) -> Verdict:
    r"""Check ``student_fn(offsets, d, base) -> (m,)``: $K(\delta) = \frac{2}{d}\sum_{k<d/2}\cos(\delta\,\omega_k)$
    at every offset of the 1-D array ``offsets`` (negative offsets included: $K$ is even)."""
    rng = case_rng(11)
    cases = [("offsets 0..9, d = 8", (np.arange(vary(10, 6, 14)), 2 * vary(4, 3, 6), 10000.0)),
             ("negative offsets", (np.arange(-vary(6, 3, 9), 7), 2 * vary(8, 6, 10), vary(10000.0, 1000.0, 20000.0))),
             ("random offsets, d = 128", (rng.integers(-500, 500, size=20), 2 * vary(64, 48, 80), 10000.0)),
             ("one frequency", (np.arange(vary(5, 3, 9)), 2, vary(10.0, 5.0, 50.0)))]

    def oracle(offsets, d, base, first=0):
        # first = 1 is the common slip of numbering the frequencies from 1 (the hint's test)
        out = np.zeros(len(offsets))
        for m, delta in enumerate(offsets):
            frequencies = range(first, first + d // 2)
            out[m] = sum(math.cos(float(delta) * base ** (-2.0 * k / d)) for k in frequencies) * 2.0 / d
        return out

    def hints(K, offsets, d, base):
        K = np.ravel(np.asarray(K, dtype=np.float64))
        zero = np.flatnonzero(np.asarray(offsets) == 0)
        if K.shape == np.shape(offsets) and zero.size and abs(K[zero[0]] - 1.0) > 1e-9:
            return "K(0) must be 1: average the cosines over the d/2 frequencies (the factor is 2/d)."
        if K.shape == np.shape(offsets) and np.allclose(K, oracle(offsets, d, base, first=1), atol=1e-9):
            return _OFF_BY_ONE
        return ""

    return run_check("sinusoid kernel", student_fn, cases, compare_with(oracle, flat=True, atol=1e-10, what="K"),
                     switch_off=_sinusoid_functions(), hints=hints)


def check_equivariance_gap(student_fn) -> Verdict:
    r"""Check ``student_fn(model, input_ids, perm) -> float``, the largest $|f(\Pi X) - \Pi f(X)|$."""
    import torch

    from ..models import build_model
    from ..models import equivariance as eqv
    from ..models.tasks import tiny_encoder_config
    rng = case_rng(0)
    L, V = vary(10, 6, 12), 30
    x = torch.as_tensor(rng.integers(1, V, size=(3, L)))
    cases = []
    for position, causal in (("none", False), ("learned", False), ("none", True), ("alibi", False)):
        cfg = tiny_encoder_config(vocab_size=V, max_len=L, position=position, causal=causal, d_model=16, n_layers=2,
                                  n_heads=2, d_ff=32, init_std=0.5)
        model = build_model(cfg, "classification", seed=vary(1, 0, 2**31 - 1)).double().eval()
        for name, perm in (("a random permutation", rng.permutation(L)), ("the reversal", np.arange(L)[::-1].copy())):
            cases.append((f"{position}{' + causal mask' if causal else ''}, {name}", (model, x, perm)))

    @torch.no_grad()
    def oracle(model, ids, perm):
        # position i of the permuted input holds token perm[i]: compare f(x[perm])_i with f(x)_{perm[i]}
        h_permuted_input = model.encoder(ids[:, torch.as_tensor(perm)])
        h = model.encoder(ids)
        return max(float((h_permuted_input[:, i] - h[:, int(perm[i])]).abs().max()) for i in range(len(perm)))

    return run_check("equivariance gap", student_fn, cases,
                     compare_with(oracle, number=True, atol=1e-10, rtol=1e-6, what="the gap"),
                     switch_off=(eqv.equivariance_gap,),
                     hints=("permute the input tokens on one side and the output rows on the other, with the same "
                            "index array; use the model in eval mode and take the maximum absolute difference."))


def check_permutation_of_logits(student_fn) -> Verdict:
    r"""Check ``student_fn(S, perm) -> (L, L)``: $\Pi S \Pi^\top$, whose entry $(i, j)$ is ``S[perm[i], perm[j]]``."""
    rng = case_rng(5)
    cycle = np.array([1, 2, 0]) if not drawing() else np.roll(np.arange(3), 2 * vary(0, 0, 1) - 1)
    cases = [("a 3-cycle", (rng.standard_normal((3, 3)), cycle)),
             ("a random permutation of 8", (rng.standard_normal((8, 8)), rng.permutation(8))),
             ("the identity", (rng.standard_normal((5, 5)), np.arange(5))),
             ("a random permutation of 12", (rng.standard_normal((12, 12)), rng.permutation(12)))]

    def oracle(S, perm):
        L = len(perm)
        Pi = np.zeros((L, L))
        for i in range(L):
            Pi[i, perm[i]] = 1.0  # row i of Pi X is row perm[i] of X
        return Pi @ S @ Pi.T

    return run_check("permuted logits", student_fn, cases,
                     compare_with(oracle, atol=1e-12, what="the permuted matrix"),
                     hints="rows and columns move together: entry (i, j) comes from entry (perm[i], perm[j]).")


def _separation_oracle(P):
    n = P.shape[0]
    dist = sorted(math.sqrt(float(np.sum((P[i] - P[j]) ** 2))) for i in range(n) for j in range(i + 1, n))
    m = len(dist)
    median = dist[m // 2] if m % 2 else (dist[m // 2 - 1] + dist[m // 2]) / 2
    return dist[0], dist[0] / median


def check_separation(student_fn) -> Verdict:
    r"""Check ``student_fn(P) -> (raw, normalized)`` for tables ``P`` of shape (n, d).

    ``raw`` $= \min_{i \ne j}\|p_i - p_j\|$; ``normalized`` $=$ ``raw`` over the median of the
    distances of the pairs $i < j$."""
    from .. import geometry as geo
    rng = case_rng(3)
    tied = rng.standard_normal((6, 4))
    tied[4] = tied[1]
    line = (np.array([[0.0], [1.0], [3.0], [7.0]]) if not drawing()
            else np.sort(rng.uniform(0, 10, (vary(4, 3, 8), 1)), 0))
    four = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0], [3.0, 3.0]]) if not drawing() else rng.uniform(0, 3, (4, 2))
    cases = [("gaussian 8 x 5", (rng.standard_normal((8, 5)),)),
             ("gaussian 30 x 16, small scale", (rng.standard_normal((30, 16)) * 0.02,)),
             ("two equal rows", (tied,)), ("points on a line", (line,)), ("4 points, 6 pairs", (four,))]

    def compare(answer, P):
        raw, norm = (float(v) for v in answer)
        want_raw, want_norm = _separation_oracle(P)
        return (number_problem(raw, want_raw, atol=1e-10, what="the raw separation")
                or number_problem(norm, want_norm, atol=1e-9, rtol=1e-9, what="the normalised separation"))

    def hints(answer, P):
        try:
            raw = float(answer[0])
        except (TypeError, ValueError, IndexError):
            return "return a pair (raw, normalized)."
        if raw == 0 and _separation_oracle(P)[0] > 0:
            return "leave out the zero distance of a position to itself."
        return "the median is over the pairs i < j only (each pair once, no diagonal)."

    return run_check("separation", student_fn, cases, compare, switch_off=(geo.separation,), hints=hints)


def check_tied_rows(student_fn) -> Verdict:
    r"""Check ``student_fn(P, tol) -> list of (i, j)``: every pair $i < j$ with $\|p_i - p_j\| \le$ ``tol``,
    in increasing order (the rows Theorem 4 says stay tied). ``posgeom.separation`` is switched off."""
    from .. import geometry as geo
    rng = case_rng(8)
    P1 = rng.standard_normal((7, 3))
    P1[5] = P1[2]
    P2 = rng.standard_normal((10, 4))
    P2[[3, 7, 9]] = P2[0] + 1e-9
    cases = [("one tied pair", (P1, 1e-8)), ("three rows tied to row 0", (P2, 1e-6)),
             ("no ties", (rng.standard_normal((6, 2)), 1e-6)),
             ("a loose tolerance", (np.array([[0.0], [0.5], [2.0], [2.4]]) + vary(0.0, -5.0, 5.0), 0.45))]

    def oracle(P, tol):
        D = pairwise_oracle(P)
        return [(i, j) for i in range(len(P)) for j in range(i + 1, len(P)) if D[i, j] <= tol]

    def compare(pairs, P, tol):
        got = [tuple(int(v) for v in p) for p in pairs]
        want = oracle(P, tol)
        if got == want:
            return None
        if sorted(got) == want:
            return "the right pairs, not in increasing order"
        return f"{len(got)} pair(s) returned; some are missing or wrong"

    return run_check("tied rows", student_fn, cases, compare, switch_off=(geo.separation,),
                     hints=("list each pair once, as (i, j) with i < j, and compare the distance itself with tol (<= "
                            "tol)."))
