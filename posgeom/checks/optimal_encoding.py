"""Checks for the coding exercises of Part II, *The optimal encoding*: one ``check_*`` per exercise, run by
``posgeom.checks.core.run_check`` against an oracle written here."""

from __future__ import annotations

import math

import numpy as np

from .core import Verdict, array_problem, case_rng, compare_with, line_distances, pairwise_oracle, run_check, vary

__all__ = ["check_hellinger_matrix", "check_noise_floor", "check_classical_mds", "check_double_centring",
           "check_rank_for_stress", "check_parameter_savings", "check_circulant_eigenvalues", "check_circulant_matrix"]


def _random_probs(rng, n: int, v: int, *, sparse: bool) -> np.ndarray:
    P = rng.dirichlet(np.full(v, 0.3 if sparse else 1.0), size=n)
    if sparse:
        P[rng.random(P.shape) < 0.4] = 0.0
        P[P.sum(axis=1) == 0, 0] = 1.0
        P /= P.sum(axis=1, keepdims=True)
    return P


def _hellinger_oracle(P: np.ndarray) -> np.ndarray:
    n = P.shape[0]
    D = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            D[i, j] = math.sqrt(sum((math.sqrt(a) - math.sqrt(b)) ** 2 for a, b in zip(P[i], P[j])))
    return D


def _double_centring_oracle(D: np.ndarray) -> np.ndarray:
    n = D.shape[0]
    J = np.eye(n) - np.ones((n, n)) / n
    # B = -1/2 J D^(2) J, D^(2) the entrywise squares
    return -0.5 * J @ (D * D) @ J


def _mds_distances_oracle(D: np.ndarray, k: int) -> np.ndarray:
    """Pairwise distances of the rank-k classical MDS of D (eigenvalues clipped at 0)."""
    lam, U = np.linalg.eigh(_double_centring_oracle(D))
    order = np.argsort(lam)[::-1][:k]
    return pairwise_oracle(U[:, order] * np.sqrt(np.clip(lam[order], 0.0, None)))


def check_hellinger_matrix(student_fn) -> Verdict:
    r"""Check ``student_fn(probs) -> (n, n)``: chord Hellinger distances between the rows of ``probs`` (n, v)."""
    from .. import geometry as geo
    rng = case_rng(1)
    same = _random_probs(rng, 1, 10, sparse=False)
    cases = [("random distributions", (_random_probs(rng, 6, 20, sparse=False),)),
             ("distributions with zeros", (_random_probs(rng, 5, 30, sparse=True),)),
             ("one-hot rows", (np.eye(4),)),
             ("two identical rows", (np.vstack([same, same, _random_probs(rng, 1, 10, sparse=False)]),))]

    def hints(D, P):
        want = _hellinger_oracle(P)
        if np.shape(D) == want.shape and np.allclose(D, want / math.sqrt(2), atol=1e-9):
            return "you divided by sqrt 2: that is the normalised convention, not the chord."
        if np.shape(D) == want.shape and np.allclose(D, want ** 2, atol=1e-9):
            return "these are squared distances: take the square root."
        return "the chord distance is the Euclidean norm of sqrt(mu_i) - sqrt(mu_j)."

    return run_check("chord Hellinger matrix", student_fn, cases,
                     compare_with(_hellinger_oracle, atol=1e-9, what="the distance matrix", sqrt=True),
                     switch_off=(geo.hellinger_matrix, geo.hellinger_distance), hints=hints)


def check_noise_floor(student_fn) -> Verdict:
    r"""Check ``student_fn(v, N) -> float``: the first-order expected squared chord Hellinger distance
    between the empirical distributions of two independent samples of ``N`` draws from the same law on
    ``v`` tokens, $(v - 1)/(2N)$ (each empirical distribution contributes $(v-1)/(4N)$)."""
    cases = [("v = 2, N = 10", (2, vary(10, 2, 50))),
             ("v = 100, N = 10,000", (vary(100, 50, 500), vary(10_000, 1000, 50_000))),
             ("v = 30,000, N = 8,000", (vary(30_000, 10_000, 50_000), vary(8_000, 1000, 20_000))),
             ("v = 7, N = 1", (vary(7, 3, 20), 1))]

    def hints(value, v, N):
        try:
            x = float(value)
        except (TypeError, ValueError):
            return "return a number."
        if math.isclose(x, (v - 1) / (4.0 * N), rel_tol=1e-9):
            return "that is one sample's share: both distributions are noisy."
        return "sum the variances of sqrt(mu_hat) over the v tokens (delta method)."

    def oracle(v, N):
        return (v - 1) / (2.0 * N)

    return run_check("noise floor", student_fn, cases,
                     compare_with(oracle, number=True, rtol=1e-9, what="the expected squared distance"), hints=hints)


def check_classical_mds(student_fn) -> Verdict:
    r"""Check ``student_fn(D, k) -> (n, k)``: rank-``k`` classical MDS $U_k\Lambda_k^{1/2}$ (Algorithm 1), compared
    through the pairwise distances of the embedding (signs and rotations inside repeated eigenvalues are free)."""
    from .. import geometry as geo
    rng = case_rng(2)
    D1 = _hellinger_oracle(_random_probs(rng, 8, 25, sparse=False))
    D2 = _hellinger_oracle(_random_probs(rng, 10, 40, sparse=True))
    cases = [("random corpus, k = 1", (D1, 1)), ("random corpus, k = 2", (D1, 2)), ("sparse corpus, k = 4", (D2, 4)),
             ("three one-hot distributions, k = 2", (_hellinger_oracle(np.eye(3)), 2))]

    def compare(X, D, k):
        X = np.asarray(X, dtype=np.float64)
        if X.shape != (D.shape[0], k):
            return f"the embedding has shape {X.shape}; it needs one row per position and k columns"
        return array_problem(pairwise_oracle(X), _mds_distances_oracle(D, k), atol=1e-8,
                             what="your embedding's distance matrix", sqrt=True)

    return run_check("classical MDS", student_fn, cases, compare,
                     switch_off=(geo.classical_mds, geo.double_centered_gram),
                     hints=("B = -1/2 J D^2 J (squared distances), eigenvalues in decreasing order, coordinates U "
                            "sqrt(Lambda)."))


def check_double_centring(student_fn) -> Verdict:
    r"""Check ``student_fn(D) -> (n, n)``: the double-centred matrix $B = -\frac12 J D^{(2)} J$,
    $J = I - \frac1n \mathbf 1\mathbf 1^\top$. ``posgeom.classical_mds`` is switched off."""
    from .. import geometry as geo
    rng = case_rng(6)
    cases = [("a random corpus", (_hellinger_oracle(_random_probs(rng, 7, 15, sparse=False)),)),
             ("points on a line", (line_distances(vary(5, 3, 9)),)),
             ("two points", (np.array([[0.0, 2.0], [2.0, 0.0]]) * vary(1.0, 0.1, 10.0),))]

    def hints(B, D):
        B = np.asarray(B, dtype=np.float64)
        if B.shape != D.shape:
            return ""
        n = D.shape[0]
        J = np.eye(n) - np.ones((n, n)) / n
        if np.allclose(B, -0.5 * J @ D @ J, atol=1e-9):
            return "square the distances entry by entry before centring."
        if any(np.allclose(B, -0.5 * side, atol=1e-9) for side in (J @ (D * D), (D * D) @ J)):
            return "centre both rows and columns: J on both sides."
        if np.allclose(B, -0.5 * D * D, atol=1e-9):
            return "centre the squared distances: B = -1/2 J D^2 J with J = I - 11^T / n on both sides."
        return ""

    return run_check("double centring", student_fn, cases, compare_with(_double_centring_oracle, atol=1e-10, what="B"),
                     switch_off=(geo.classical_mds, geo.double_centered_gram), hints=hints)


def _rank_for_stress_oracle(D: np.ndarray, threshold: float) -> int:
    n = D.shape[0]
    iu = np.triu_indices(n, k=1)
    d = D[iu]
    for k in range(1, n + 1):
        dh = _mds_distances_oracle(D, k)[iu]
        # scale-free stress: 1 - (sum dh d)^2 / (sum dh^2 sum d^2)
        if float(dh @ dh) > 0 and 1.0 - float(dh @ d) ** 2 / (float(dh @ dh) * float(d @ d)) <= threshold:
            return k
    return n


def check_rank_for_stress(student_fn) -> Verdict:
    r"""Check ``student_fn(D, threshold) -> int``: the smallest rank whose classical MDS has scale-free
    stress at most ``threshold``. ``posgeom.effective_rank`` and ``posgeom.mds_stress_curve`` are switched off."""
    from ..corpora import synthetic as syn
    from .. import geometry as geo
    rng = case_rng(0)
    drift = _hellinger_oracle(syn.population_marginals("drift", n_positions=30, vocab_size=60, seed=vary(0, 0, 10**6)))
    noisy = _hellinger_oracle(_random_probs(rng, 12, 30, sparse=True))
    cases = [("drift population, tight threshold", (drift, 1e-6)), ("drift population, loose threshold", (drift, 0.05)),
             ("random corpus, threshold 0.05", (noisy, 0.05)), ("random corpus, threshold 0.2", (noisy, 0.2))]

    def compare(k, D, threshold):
        want = _rank_for_stress_oracle(D, threshold)
        if isinstance(k, bool) or float(k) != int(k):
            return "the rank should be an integer"
        if int(k) == want:
            return None
        return "the rank is too large" if int(k) > want else "the rank is too small (its stress is above the threshold)"

    return run_check("rank for a stress", student_fn, cases, compare,
                     switch_off=(geo.effective_rank, geo.mds_stress_curve),
                     hints=("use the scale-free stress (best rescaling of the MDS distances) and stop at the first "
                            "rank that reaches it."))


def check_parameter_savings(student_fn) -> Verdict:
    r"""Check ``student_fn(n, d, k) -> float``: the fraction of parameters saved by a rank-``k`` table
    $P = A W$ ($A$: $n \times k$, $W$: $k \times d$) over a full $n \times d$ table, $1 - k(n + d)/(n d)$."""
    full = vary(16, 8, 64)
    cases = [("BERT-base at rank 10", (512, 768, vary(10, 5, 50))),
             ("a small model at rank 3", (vary(64, 32, 128), vary(32, 16, 64), 3)),
             ("full rank", (full, full, full)), ("rank 1", (vary(128, 64, 256), vary(64, 32, 128), 1))]

    def oracle(n, d, k):
        return 1.0 - k * (n + d) / (n * d)

    return run_check("parameter savings", student_fn, cases,
                     compare_with(oracle, number=True, atol=1e-12, what="the saving"),
                     hints="count both factors (n k + k d) against the n d entries of the full table.")


def _circulant_cases():
    rng = case_rng(0)
    cases = []
    for n in (vary(6, 4, 8), vary(9, 9, 13) | 1, vary(16, 14, 20)):
        half = np.sort(rng.random(n // 2 + 1))
        half[0] = 0.0
        g = np.concatenate([half, half[1:(n + 1) // 2][::-1]])[:n]
        cases.append((f"n = {n}", (g,)))
    return cases


def check_circulant_eigenvalues(student_fn) -> Verdict:
    r"""Check ``student_fn(g) -> (n,)``: the eigenvalues of $B$ for $d_{ij} = g((j - i) \bmod n)$, any order; the
    oracle is the closed form: $0$ and $\lambda_f = -\frac12\sum_\delta g(\delta)^2\cos(2\pi f\delta/n)$."""
    from .. import geometry as geo

    def oracle(g):
        n = len(g)
        lam = [0.0] + [-0.5 * sum(g[t] ** 2 * math.cos(2 * math.pi * f * t / n) for t in range(n)) for f in range(1, n)]
        return np.sort(lam)[::-1]

    def compare(values, g):
        got = np.sort(np.ravel(np.asarray(values, dtype=np.float64)))[::-1]
        if got.size != len(g):
            return f"{got.size} eigenvalues returned; there is one per position (including the 0)"
        return array_problem(got, oracle(g), atol=1e-9, what="the sorted eigenvalues")

    return run_check("circulant eigenvalues", student_fn, _circulant_cases(), compare,
                     switch_off=(geo.circulant_eigenvalues, geo.classical_mds),
                     hints="B is built from the squared distances g(delta)^2.")


def check_circulant_matrix(student_fn) -> Verdict:
    r"""Check ``student_fn(g) -> (n, n)``: the circulant distance matrix $d_{ij} = g((j - i) \bmod n)$."""

    def oracle(g):
        n = len(g)
        return np.array([[g[(j - i) % n] for j in range(n)] for i in range(n)])

    return run_check("circulant matrix", student_fn, _circulant_cases(), compare_with(oracle, what="the matrix"),
                     hints="entry (i, j) depends on the offset j - i taken modulo n.")
