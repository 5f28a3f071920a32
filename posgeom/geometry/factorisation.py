r"""The factorisation step of the proof of Theorem 4: how far $\mathbb E[c_k\, e_k]$ is from
$\mathbb E[c_k]\,\mathbb E[e_k]$, position by position (equal when $c_k$ and $e_k$ are independent).
"""

from __future__ import annotations

import numpy as np

__all__ = ["factorisation_gap"]


def factorisation_gap(c, e, reach_mask, *, min_reach: int = 1, shuffle_seed: int | None = None) -> dict:
    r"""Compare $\mathbb E[c_k\, e_k]$ with $\mathbb E[c_k]\,\mathbb E[e_k]$ position by position.

    Parameters
    ----------
    c, e : arrays of shape (N, n) and (N, n, d)
        The coefficient $c_k$ and vector $e_k$ (e.g. the token's word embedding) of each sequence at each position.
    reach_mask : bool array of shape (N, n)
        Which sequences reach position $k$ (expectations are over those; ``min_reach`` of them at least).
    shuffle_seed : int, optional
        Pair each $c_k$ with the $e_k$ of another sequence reaching $k$: the placebo in which the two are
        independent, so that the gap is sampling noise only.

    Returns
    -------
    dict
        ``positions`` (m,) kept; ``relative`` (m,) $\|\mathbb E[c e] - \mathbb E[c]\mathbb E[e]\| /
        \|\mathbb E[c e]\|$; ``pair_relative`` (m (m-1)/2,) the same for the differences between two
        positions, $\Delta_{ij} = \mathbb E[c_i e_i] - \mathbb E[c_j e_j]$ against its factorised version;
        ``pair_cosine`` (m (m-1)/2,) the cosine between the two differences.
    """
    c = np.asarray(c, dtype=np.float64)
    e = np.asarray(e, dtype=np.float64)
    M = np.asarray(reach_mask, dtype=bool)
    if c.shape != M.shape or e.shape[:2] != M.shape or e.ndim != 3:
        raise ValueError(
            f"shapes must be c (N, n), e (N, n, d), reach_mask (N, n); got {c.shape}, {e.shape}, {M.shape}"
        )
    rng = np.random.default_rng(shuffle_seed) if shuffle_seed is not None else None
    keep, true, fact = [], [], []
    for k in range(M.shape[1]):
        rows = np.flatnonzero(M[:, k])
        if rows.size < max(1, min_reach):
            continue
        ck, ek = c[rows, k], e[rows, k]
        if rng is not None:
            ck = ck[rng.permutation(ck.size)]
        keep.append(k)
        # E[c_k e_k] and E[c_k] E[e_k]
        true.append((ck[:, None] * ek).mean(axis=0))
        fact.append(ck.mean() * ek.mean(axis=0))
    if len(keep) < 2:
        raise ValueError(f"fewer than 2 positions are reached by at least min_reach={min_reach} sequences")
    T, F = np.asarray(true), np.asarray(fact)
    rel = np.linalg.norm(T - F, axis=1) / np.linalg.norm(T, axis=1)
    i, j = np.triu_indices(len(keep), k=1)
    dT, dF = T[i] - T[j], F[i] - F[j]
    nT, nF = np.linalg.norm(dT, axis=1), np.linalg.norm(dF, axis=1)
    pair_rel = np.linalg.norm(dT - dF, axis=1) / nT
    cos = np.sum(dT * dF, axis=1) / (nT * nF)
    return dict(positions=np.asarray(keep), relative=rel, pair_relative=pair_rel, pair_cosine=cos)
