r"""Self-checks for the coding exercises of Chapters II (the geometry of a corpus, the optimal encoding,
minimal parametrisation, sinusoids as MDS).

Each ``check_*`` function calls a student's function on a few seeded inputs, compares the answer with
posgeom's reference implementation, prints a verdict that says what differs, and returns ``True`` only
when every case matches.

* :func:`check_hellinger_matrix` — the chord Hellinger matrix $\lVert\sqrt{\mu_i} - \sqrt{\mu_j}\rVert_2$
  of the rows of a probability matrix;
* :func:`check_classical_mds` — Algorithm 1, compared through the distances it produces (MDS is unique
  only up to a rotation inside repeated eigenvalues and signs);
* :func:`check_rank_for_stress` — the smallest MDS rank whose scale-free stress is below a threshold;
* :func:`check_circulant_eigenvalues` — the eigenvalues of $B$ for circulant distances,
  $\lambda_f = -\frac12\sum_\delta g(\delta)^2\cos(2\pi f\delta/n)$.
"""

from __future__ import annotations

import numpy as np

from .. import geometry as geo

__all__ = ["check_hellinger_matrix", "check_classical_mds", "check_rank_for_stress", "check_circulant_eigenvalues"]


def _report(ok: bool, what: str, problems: list[str]) -> bool:
    if ok:
        print(f"Correct: {what}")
    else:
        print(f"Not yet: {what}")
        for p in problems[:5]:
            print(f"  - {p}")
    return ok


def _call(fn, *args):
    try:
        return fn(*args), None
    except Exception as err:  # noqa: BLE001 - report any failure of the student's code as a verdict
        return None, f"your function raised {type(err).__name__}: {err}"


def _random_probs(rng, n: int, v: int, sparse: bool) -> np.ndarray:
    P = rng.dirichlet(np.full(v, 0.5), size=n)
    if sparse:
        P[rng.random((n, v)) < 0.4] = 0.0
        P[:, 0] += 1e-3  # every row keeps some mass
        P /= P.sum(axis=1, keepdims=True)
    return P


def check_hellinger_matrix(fn, *, seed: int = 0, atol: float = 1e-9) -> bool:
    r"""Check ``fn(probs) -> D``: the chord Hellinger matrix of the rows of ``probs`` (n, v) (SPEC section 1).

    Cases: random distributions with and without zeros, identical rows, and one-hot rows
    (distance $\sqrt 2$).

    Parameters
    ----------
    fn : callable
        ``fn(probs)`` with ``probs`` an (n, v) array whose rows sum to 1; must return an (n, n) array.
    seed : int
    atol : float
        Largest absolute difference accepted.

    Returns
    -------
    bool
    """
    rng = np.random.default_rng(seed)
    cases = {
        "random distributions": _random_probs(rng, 6, 20, sparse=False),
        "distributions with zeros": _random_probs(rng, 5, 30, sparse=True),
        "one-hot rows": np.eye(4),
    }
    same = _random_probs(rng, 1, 10, sparse=False)
    cases["two identical rows"] = np.vstack([same, same, _random_probs(rng, 1, 10, sparse=False)])
    problems = []
    for name, P in cases.items():
        got, err = _call(fn, P.copy())
        if err:
            problems.append(f"{name}: {err}")
            continue
        got = np.asarray(got, dtype=np.float64)
        want = geo.hellinger_matrix(P)
        if got.shape != want.shape:
            problems.append(f"{name}: shape {got.shape}, expected {want.shape} (one row and column per position)")
            continue
        diff = np.abs(got - want)
        if diff.max() > atol:
            i, j = np.unravel_index(int(np.argmax(diff)), diff.shape)
            hint = ""
            if np.allclose(got, want / np.sqrt(2), atol=atol):
                hint = " (you divided by sqrt 2: that is the normalised convention, not the chord)"
            elif np.allclose(got, want**2, atol=atol):
                hint = " (these are squared distances: take the square root)"
            problems.append(f"{name}: D[{i}, {j}] = {got[i, j]:.6g}, expected {want[i, j]:.6g}{hint}")
    return _report(not problems, "chord Hellinger distances match posgeom.hellinger_matrix", problems)


def check_classical_mds(fn, *, seed: int = 0, rtol: float = 1e-7) -> bool:
    r"""Check ``fn(D, k) -> P``: rank-``k`` classical MDS $U_k\Lambda_k^{1/2}$ (Algorithm 1).

    The answer is compared through its pairwise distances with those of
    :func:`posgeom.geometry.classical_mds` (signs and rotations inside repeated eigenvalues are free).
    Cases: Hellinger matrices of random distributions at ranks 1, 2 and 4, and the three one-hot points
    at rank 2 (an exact equilateral triangle).

    Parameters
    ----------
    fn : callable
        ``fn(D, k)`` with ``D`` (n, n); must return an (n, k) array.

    Returns
    -------
    bool
    """
    rng = np.random.default_rng(seed)
    D1 = geo.hellinger_matrix(_random_probs(rng, 8, 25, sparse=False))
    D2 = geo.hellinger_matrix(_random_probs(rng, 10, 40, sparse=True))
    cases = [("random corpus, k = 1", D1, 1), ("random corpus, k = 2", D1, 2), ("sparse corpus, k = 4", D2, 4),
             ("three one-hot distributions, k = 2", geo.hellinger_matrix(np.eye(3)), 2)]
    problems = []
    for name, D, k in cases:
        got, err = _call(fn, D.copy(), k)
        if err:
            problems.append(f"{name}: {err}")
            continue
        got = np.asarray(got, dtype=np.float64)
        if got.shape != (D.shape[0], k):
            problems.append(f"{name}: shape {got.shape}, expected {(D.shape[0], k)} (one row per position, k columns)")
            continue
        want = geo.euclidean_distances(geo.classical_mds(D, k=k).embedding)
        have = geo.euclidean_distances(got)
        err_ = np.max(np.abs(have - want)) / max(want.max(), 1e-300)
        if err_ > rtol:
            hint = ""
            if np.allclose(have, want * np.sqrt(2), rtol=1e-6) or np.allclose(have * np.sqrt(2), want, rtol=1e-6):
                hint = " (off by sqrt 2: B = -1/2 J D^2 J, and the coordinates are U sqrt(Lambda))"
            problems.append(f"{name}: distances of your embedding differ from the reference by {err_:.2e} (relative){hint}")
    return _report(not problems, "your embedding has the distances of rank-k classical MDS", problems)


def check_rank_for_stress(fn, *, seed: int = 0) -> bool:
    r"""Check ``fn(D, threshold) -> k``: the smallest rank whose classical MDS has scale-free stress
    $\le$ ``threshold`` (:func:`posgeom.geometry.effective_rank` with ``criterion="stress"``).

    Parameters
    ----------
    fn : callable
        ``fn(D, threshold)`` with ``D`` (n, n) and a float; must return an int.

    Returns
    -------
    bool
    """
    from ..corpora import synthetic as syn

    rng = np.random.default_rng(seed)
    drift = geo.hellinger_matrix(syn.population_marginals("drift", n_positions=30, vocab_size=60, seed=seed))
    noisy = geo.hellinger_matrix(_random_probs(rng, 12, 30, sparse=True))
    cases = [("drift population (rank 3), threshold 1e-6", drift, 1e-6), ("drift population, threshold 0.05", drift, 0.05),
             ("random corpus, threshold 0.05", noisy, 0.05), ("random corpus, threshold 0.2", noisy, 0.2)]
    problems = []
    for name, D, thr in cases:
        got, err = _call(fn, D.copy(), thr)
        if err:
            problems.append(f"{name}: {err}")
            continue
        want = geo.effective_rank(D, "stress", threshold=thr, normalization="scale_free")
        try:
            ok = int(got) == want and float(got) == int(got)
        except (TypeError, ValueError):
            ok = False
        if not ok:
            curve = geo.mds_stress_curve(D, normalization="scale_free")
            problems.append(
                f"{name}: you returned {got!r}, expected {want} (scale-free stress at rank {want}: "
                f"{curve[want - 1]:.3g}{f', at rank {want - 1}: {curve[want - 2]:.3g}' if want > 1 else ''})"
            )
    return _report(not problems, "smallest rank reaching the stress threshold", problems)


def check_circulant_eigenvalues(fn, *, seed: int = 0, atol: float = 1e-9) -> bool:
    r"""Check ``fn(g) -> eigenvalues``: the spectrum of $B$ for circulant distances $d_{ij} = g((j - i) \bmod n)$.

    Compared, sorted in decreasing order, with the eigenvalues of
    :func:`posgeom.geometry.classical_mds` on the circulant matrix built from ``g``.

    Parameters
    ----------
    fn : callable
        ``fn(g)`` with ``g`` (n,) (``g[0] = 0``, ``g[d] = g[n - d]``); must return n eigenvalues.

    Returns
    -------
    bool
    """
    rng = np.random.default_rng(seed)
    cases = []
    for n in (6, 9, 16):
        half = np.sort(rng.random(n // 2 + 1))
        half[0] = 0.0
        g = np.concatenate([half, half[1:(n + 1) // 2][::-1]])[:n]
        cases.append((f"n = {n}", g))
    problems = []
    for name, g in cases:
        n = g.size
        idx = np.arange(n)
        D = g[(idx[None, :] - idx[:, None]) % n]
        want = geo.classical_mds(D, k=1).eigenvalues
        got, err = _call(fn, g.copy())
        if err:
            problems.append(f"{name}: {err}")
            continue
        got = np.sort(np.asarray(got, dtype=np.float64).ravel())[::-1]
        if got.size != n:
            problems.append(f"{name}: {got.size} eigenvalues, expected {n} (one per position, including the 0)")
            continue
        diff = np.max(np.abs(got - want))
        if diff > atol * max(1.0, np.abs(want).max()):
            hint = " (did you square g? B is built from the squared distances)" if not np.allclose(
                np.sort(got), np.sort(want), atol=1e-6) else ""
            problems.append(f"{name}: largest difference {diff:.3g}; expected {np.round(want[:4], 6)}...{hint}")
    return _report(not problems, "eigenvalues of B for circulant distances", problems)
