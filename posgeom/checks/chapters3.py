r"""Self-checks for the coding exercises of the chapters *Real corpora*, *Does the geometry of the corpus
order the encoding?* and *Inside BERT*.

Each ``check_*`` runs a reader's function on seeded random inputs, compares it with the reference in
``posgeom``, prints one verdict line (``✓ … correct`` or ``✗ … not yet`` with the first input that
differs and by how much) and returns ``True``/``False``. A reader's exception is reported, not raised.

* :func:`check_alibi_slopes` — the two slopes $m_\pm$ at which ALiBi's line $m|i-j|$ has a given
  ``"paper"`` stress (:func:`posgeom.experiments.real_corpora.alibi_slopes_for`).
* :func:`check_violation_rate` — the fraction of discordant pairs of position pairs, ties excluded
  (:func:`posgeom.geometry.violation_rate`).
* :func:`check_kernel_distances` — distances induced by a similarity (logit) matrix,
  $\hat d_{ij}^2 = S_{ii} + S_{jj} - 2 S_{ij}$ with $S = (G + G^\top)/2$
  (:func:`posgeom.experiments.inside_bert.kernel_distances`).
"""

from __future__ import annotations

import numpy as np

from ._common import call_student, verdict

__all__ = ["check_alibi_slopes", "check_violation_rate", "check_kernel_distances"]


def _random_hellinger(rng, n: int, v: int) -> np.ndarray:
    """Chord Hellinger distances (n, n) between n random distributions with a drift along the positions."""
    from ..geometry import hellinger_matrix

    base = rng.dirichlet(np.ones(v), size=2)
    t = np.linspace(0.0, 1.0, n)[:, None]
    mu = (1 - t) * base[0] + t * base[1] + 0.3 * rng.dirichlet(np.ones(v), size=n)
    return hellinger_matrix(mu / mu.sum(axis=1, keepdims=True))


def check_alibi_slopes(student_fn, *, n_trials: int = 10, seed: int = 0, rtol: float = 1e-8) -> bool:
    r"""Check ``student_fn(D, target) -> (m_minus, m_plus)``: the slopes at which the line $m|i - j|$ has
    ``"paper"`` stress ``target`` against ``D`` (shape (n, n), positions ``0 … n-1``), ``m_minus <= m_plus``.

    Targets are drawn above the minimum over all slopes, so both slopes exist.

    Returns
    -------
    bool
        ``True`` when every case agrees to relative tolerance ``rtol``.
    """
    from ..experiments.real_corpora import alibi_parabola, alibi_slopes_for

    rng = np.random.default_rng(seed)
    for t in range(n_trials):
        n = int(rng.integers(4, 30))
        D = _random_hellinger(rng, n, int(rng.integers(5, 40)))
        par = alibi_parabola(D)
        target = par["minimum"] + float(rng.uniform(0.01, 3.0))
        ref = alibi_slopes_for(target, par)
        ok, got = call_student("slopes_for", student_fn, D.copy(), target)
        if not ok:
            return verdict("check_alibi_slopes", False, n_trials, f"case {t} (n = {n}): {got}")
        try:
            got = tuple(float(x) for x in got)
        except (TypeError, ValueError):
            return verdict("check_alibi_slopes", False, n_trials,
                           f"case {t}: expected a pair of numbers (m_minus, m_plus), got {got!r}")
        if len(got) != 2:
            return verdict("check_alibi_slopes", False, n_trials, f"case {t}: expected 2 slopes, got {len(got)}")
        if not np.allclose(got, ref, rtol=rtol, atol=0.0):
            hint = ""
            if np.allclose(got[::-1], ref, rtol=rtol, atol=0.0):
                hint = " (the right slopes in the wrong order: return (m_minus, m_plus) with m_minus <= m_plus)"
            return verdict("check_alibi_slopes", False, n_trials,
                           f"case {t} (n = {n}, target {target:.4g}): expected {ref}, got {got}{hint}")
    return verdict("check_alibi_slopes", True, n_trials)


def check_violation_rate(student_fn, *, n_trials: int = 12, seed: int = 0, atol: float = 1e-12) -> bool:
    r"""Check ``student_fn(D, Dhat) -> float``: the fraction of discordant pairs of position pairs between
    two (n, n) distance matrices, pairs tied in either one excluded (SPEC section 1, "Monotonicity").

    Cases include tied distances (as ALiBi's $\bar m|i-j|$ has) and reversed orders.

    Returns
    -------
    bool
        ``True`` when every case agrees to ``atol``.
    """
    from ..geometry import euclidean_distances, violation_rate

    rng = np.random.default_rng(seed)
    for t in range(n_trials):
        n = int(rng.integers(4, 12))
        D = euclidean_distances(rng.standard_normal((n, 3)))
        kind = t % 4
        if kind == 0:
            Dhat = euclidean_distances(rng.standard_normal((n, 2)))
        elif kind == 1:  # offsets only: many ties
            Dhat = np.abs(np.subtract.outer(np.arange(n), np.arange(n))).astype(float)
        elif kind == 2:  # a monotone transform: no violation
            Dhat = np.sqrt(D)
        else:  # rounded: ties in D as well
            D = np.round(D, 1)
            Dhat = np.round(euclidean_distances(rng.standard_normal((n, 2))), 1)
        ref = violation_rate(D, Dhat, as_distances=True)
        ok, got = call_student("violation", student_fn, D.copy(), Dhat.copy())
        if not ok:
            return verdict("check_violation_rate", False, n_trials, f"case {t} (n = {n}): {got}")
        try:
            got = float(got)
        except (TypeError, ValueError):
            return verdict("check_violation_rate", False, n_trials,
                           f"case {t}: expected a number, got {type(got).__name__}")
        if not abs(got - ref) <= atol:
            hint = ""
            if kind in (1, 3):
                hint = " (this case has ties: leave pairs tied in D or in Dhat out of both the count and the total)"
            return verdict("check_violation_rate", False, n_trials,
                           f"case {t} (n = {n}): expected {ref:.12g}, got {got:.12g}{hint}")
    return verdict("check_violation_rate", True, n_trials)


def check_kernel_distances(student_fn, *, n_trials: int = 10, seed: int = 0, atol: float = 1e-10) -> bool:
    r"""Check ``student_fn(G) -> Dhat``: the distances induced by an (n, n) similarity matrix ``G``
    (not necessarily symmetric): $S = (G + G^\top)/2$, $\hat d_{ij} = \sqrt{\max(S_{ii} + S_{jj} - 2S_{ij}, 0)}$.

    Returns
    -------
    bool
        ``True`` when every case agrees to ``atol``.
    """
    from ..experiments.inside_bert import kernel_distances

    rng = np.random.default_rng(seed)
    for t in range(n_trials):
        n = int(rng.integers(3, 15))
        X = rng.standard_normal((n, 4))
        G = X @ rng.standard_normal((4, 4)) @ X.T  # asymmetric bilinear form, like Q K^T
        if t % 3 == 2:
            G = G - 3.0 * np.eye(n)  # not positive semidefinite: some squared distances clip at 0
        ref = kernel_distances(G)
        ok, got = call_student("logit_distances", student_fn, G.copy())
        if not ok:
            return verdict("check_kernel_distances", False, n_trials, f"case {t} (n = {n}): {got}")
        got = np.asarray(got, dtype=float)
        if got.shape != ref.shape:
            return verdict("check_kernel_distances", False, n_trials,
                           f"case {t}: expected shape {ref.shape}, got {got.shape}")
        diff = float(np.max(np.abs(got - ref)))
        if not diff <= atol:
            hint = ""
            if np.allclose(got, ref**2, atol=atol):
                hint = " (you returned squared distances: take the square root)"
            elif not np.allclose(got, got.T, atol=atol):
                hint = " (your result is not symmetric: symmetrise G first, S = (G + G^T) / 2)"
            return verdict("check_kernel_distances", False, n_trials,
                           f"case {t} (n = {n}): max difference {diff:.3g}{hint}")
    return verdict("check_kernel_distances", True, n_trials)
