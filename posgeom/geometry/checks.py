"""Self-checks for the book's exercises: compare a reader's function with the reference implementation.

Each ``check_*`` runs the reader's function on seeded random inputs (including the edge cases that
usually go wrong: identical distributions, zeros, disjoint supports), prints one clear line saying
whether it passed and, if not, on which input and by how much, and returns ``True``/``False``.
"""

from __future__ import annotations

import numpy as np

from .hellinger import euclidean_distances, hellinger_distance, hellinger_matrix
from .mds import classical_mds
from .stress import STRESS_NORMALIZATIONS, stress

__all__ = ["check_hellinger", "check_hellinger_matrix", "check_classical_mds", "check_stress"]


def _report(name: str, ok: bool, n_cases: int, detail: str = "") -> bool:
    if ok:
        print(f"PASS {name}: matches the reference on {n_cases} random cases")
    else:
        print(f"FAIL {name}: {detail}")
    return ok


def _random_distribution(rng, v, kind):
    if kind == "dense":
        return rng.dirichlet(np.ones(v))
    if kind == "sparse":
        p = rng.dirichlet(np.full(v, 0.3))
        p[rng.random(v) < 0.5] = 0.0
        if p.sum() == 0:
            p[0] = 1.0
        return p / p.sum()
    p = np.zeros(v)  # one-hot
    p[rng.integers(v)] = 1.0
    return p


def _call(fn, *args):
    try:
        return fn(*args), None
    except Exception as exc:  # a reader's bug must be reported, not crash the notebook
        return None, f"raised {type(exc).__name__}: {exc}"


def check_hellinger(student_fn, *, n_trials: int = 20, seed: int = 0, atol: float = 1e-10) -> bool:
    r"""Check ``student_fn(p, q) -> float`` against the chord Hellinger distance $\|\sqrt p - \sqrt q\|_2$
    (SPEC section 1, paper Eq. 3) on ``n_trials`` random pairs of distributions (shape (v,)).

    Returns ``True`` when every case agrees to ``atol``; prints PASS/FAIL with the first failing case.
    """
    rng = np.random.default_rng(seed)
    kinds = ["dense", "sparse", "onehot"]
    for t in range(n_trials):
        v = int(rng.integers(2, 50))
        p = _random_distribution(rng, v, kinds[t % 3])
        q = p.copy() if t % 5 == 4 else _random_distribution(rng, v, kinds[(t // 3) % 3])
        ref = hellinger_distance(p, q)
        got, err = _call(student_fn, p.copy(), q.copy())
        if err:
            return _report("check_hellinger", False, n_trials, f"case {t} (v = {v}) {err}")
        try:
            got = float(got)
        except (TypeError, ValueError):
            return _report("check_hellinger", False, n_trials, f"case {t}: expected a number, got {type(got).__name__}")
        if not abs(got - ref) <= atol:
            hint = ""
            if ref > 0 and abs(got * np.sqrt(2) - ref) <= atol:
                hint = " (your value is d / sqrt(2): the book uses the chord form without the 1/sqrt(2))"
            elif abs(got - ref**2) <= atol:
                hint = " (your value is d^2: take the square root)"
            return _report(
                "check_hellinger", False, n_trials, f"case {t} (v = {v}): expected {ref:.12g}, got {got:.12g}{hint}"
            )
    return _report("check_hellinger", True, n_trials)


def check_hellinger_matrix(student_fn, *, n_trials: int = 5, seed: int = 0, atol: float = 1e-9) -> bool:
    r"""Check ``student_fn(mu) -> D`` for marginals ``mu`` (n, v) → (n, n) chord Hellinger distances
    (SPEC section 1) against :func:`hellinger_matrix`, including repeated rows."""
    rng = np.random.default_rng(seed)
    for t in range(n_trials):
        n, v = int(rng.integers(2, 12)), int(rng.integers(2, 40))
        mu = np.stack([_random_distribution(rng, v, ["dense", "sparse", "onehot"][k % 3]) for k in range(n)])
        if n > 2:
            mu[-1] = mu[0]
        ref = hellinger_matrix(mu)
        got, err = _call(student_fn, mu.copy())
        if err:
            return _report("check_hellinger_matrix", False, n_trials, f"case {t} (n = {n}, v = {v}) {err}")
        got = np.asarray(got, dtype=float)
        if got.shape != ref.shape:
            return _report("check_hellinger_matrix", False, n_trials, f"case {t}: expected shape {ref.shape}, got {got.shape}")
        err_max = float(np.max(np.abs(got - ref)))
        if not err_max <= atol:
            i, j = np.unravel_index(int(np.argmax(np.abs(got - ref))), ref.shape)
            return _report(
                "check_hellinger_matrix", False, n_trials,
                f"case {t}: entry [{i}, {j}] expected {ref[i, j]:.12g}, got {got[i, j]:.12g} (max error {err_max:.3g})",
            )
    return _report("check_hellinger_matrix", True, n_trials)


def check_classical_mds(student_fn, *, n_trials: int = 5, seed: int = 0, atol: float = 1e-8) -> bool:
    r"""Check ``student_fn(D, k) -> X`` (n, k) against classical MDS (SPEC section 1, Algorithm 1).

    Coordinates are compared through their pairwise distances (any rotation or sign flip is accepted):
    the distances of the reader's embedding must equal those of $U_k \Lambda_k^{1/2}$.
    """
    rng = np.random.default_rng(seed)
    for t in range(n_trials):
        n, v = int(rng.integers(4, 15)), int(rng.integers(5, 30))
        mu = rng.dirichlet(np.ones(v), size=n)
        D = hellinger_matrix(mu)
        k = int(rng.integers(1, n - 1))
        ref = euclidean_distances(classical_mds(D, k=k).embedding)
        got, err = _call(student_fn, D.copy(), k)
        if err:
            return _report("check_classical_mds", False, n_trials, f"case {t} (n = {n}, k = {k}) {err}")
        got = np.asarray(got, dtype=float)
        if got.shape != (n, k):
            return _report("check_classical_mds", False, n_trials, f"case {t}: expected shape {(n, k)}, got {got.shape}")
        err_max = float(np.max(np.abs(euclidean_distances(got) - ref)))
        if not err_max <= atol:
            return _report(
                "check_classical_mds", False, n_trials,
                f"case {t} (n = {n}, k = {k}): distances of your embedding differ from the reference by up to "
                f"{err_max:.3g} (check the double centring B = -1/2 J D^2 J, the descending order, and sqrt(lambda))",
            )
    return _report("check_classical_mds", True, n_trials)


def check_stress(student_fn, normalization: str = "paper", *, n_trials: int = 10, seed: int = 0, atol: float = 1e-10) -> bool:
    r"""Check ``student_fn(D, Dhat) -> float`` against :func:`stress` with ``normalization``
    (SPEC section 1, "Stress of an encoding"; sums over $i < j$)."""
    if normalization not in STRESS_NORMALIZATIONS:
        raise ValueError(f"normalization must be one of {STRESS_NORMALIZATIONS}; got {normalization!r}")
    rng = np.random.default_rng(seed)
    for t in range(n_trials):
        n = int(rng.integers(3, 12))
        D = euclidean_distances(rng.normal(size=(n, 4)))
        Dhat = euclidean_distances(rng.normal(size=(n, 2)) * rng.uniform(0.2, 3))
        ref = stress(D, Dhat, normalization)
        got, err = _call(student_fn, D.copy(), Dhat.copy())
        if err:
            return _report("check_stress", False, n_trials, f"case {t} (n = {n}) {err}")
        try:
            got = float(got)
        except (TypeError, ValueError):
            return _report("check_stress", False, n_trials, f"case {t}: expected a number, got {type(got).__name__}")
        if not abs(got - ref) <= atol:
            hint = ""
            for other in STRESS_NORMALIZATIONS:
                if other != normalization and abs(got - stress(D, Dhat, other)) <= atol:
                    hint = f" (your value is the {other!r} normalisation)"
                    break
            return _report(
                "check_stress", False, n_trials,
                f"case {t} (n = {n}): expected {ref:.12g} ({normalization}), got {got:.12g}{hint}",
            )
    return _report("check_stress", True, n_trials)
