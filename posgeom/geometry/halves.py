r"""Cross-half estimates whose halves keep dependent rows together (the phrases of one sentence).

The resolvable geometry needs independent halves. SST-2's 67,349 training rows are phrases of 6,886
sentences: two phrases of one sentence dealt into opposite halves carry the same tokens to both, so the
cross products keep part of the noise and the geometry looks more resolved than it is. These functions deal
whole groups into the halves. They are not re-exported by :mod:`posgeom.geometry` (that would change the key
of every stored result); they join it when the paper-scale results are next recomputed whole.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .counting import positional_counts
from .counts import PositionalCounts
from .rank import fold_members
from .summaries import draw_statistics, resolvable_summary

__all__ = ["grouped_resolvable_distances", "grouped_resolvable_draws"]


def _root_rows(counts: PositionalCounts, positions: np.ndarray) -> np.ndarray:
    """Dense rows $\\sqrt{c_i / N_i}$, by the same operations (so the same rounding) as :mod:`posgeom.geometry.rank`."""
    C = counts.counts[positions].astype(np.float64)
    N = counts.reach[positions].astype(np.float64)
    # sqrt(mu_i) = sqrt(c_i / N_i)
    return sp.csr_matrix(sp.diags(1.0 / N) @ C).sqrt().toarray()


def grouped_resolvable_distances(sequences, n_positions: int, vocab_size: int, positions, groups, *,
                                 seed=0) -> dict:
    r"""The cross-half estimate of the Hellinger geometry (:func:`posgeom.geometry.resolvable_distances`), by group.

    Parameters
    ----------
    sequences : list of 1-D integer arrays, length N
    n_positions, vocab_size : int
    positions : array-like of int, shape (k,)
        The positions to keep; each must be reached in both halves.
    groups : array-like of shape (N,)
        A label per sequence; the sequences of one label go into the same half (at least 2 labels).
    seed : int

    Returns
    -------
    dict
        As :func:`posgeom.geometry.resolvable_distances`: ``R``, ``R2``, ``G`` (k, k), ``positions`` (k,),
        ``negative_fraction``.

    Raises
    ------
    ValueError
        When a kept position is not reached in both halves, or shares no token between them.
    """
    seqs = list(sequences)
    positions = np.asarray(positions, dtype=np.int64)
    half_a, half_b = fold_members(len(seqs), 2, seed=seed, groups=groups)
    ca = positional_counts([seqs[i] for i in half_a], n_positions, vocab_size)
    cb = positional_counts([seqs[i] for i in half_b], n_positions, vocab_size)
    both = np.flatnonzero((ca.reach > 0) & (cb.reach > 0))
    missing = np.setdiff1d(positions, both)
    if missing.size:
        raise ValueError(f"positions {missing.tolist()[:10]} are not reached in both halves of the split; the cross-half "
                         "estimate needs every kept position in each half: lower n_positions or raise min_count")
    # dense rows over the whole vocabulary, as resolvable_distances multiplies them (the same rounding)
    A, B = _root_rows(ca, positions), _root_rows(cb, positions)
    # G_ij = (a_i . b_j + a_j . b_i) / 2
    G = A @ B.T
    G = 0.5 * (G + G.T)
    g = np.diag(G).copy()
    if np.any(g <= 0):
        raise ValueError(f"positions {positions[g <= 0].tolist()[:10]} share no token between the two halves "
                         "(G_ii = 0): their distribution cannot be resolved at this corpus size; lower n_positions "
                         "or raise min_count")
    # R_ij^2 = 2 - 2 G_ij / sqrt(G_ii G_jj)
    R2 = 2.0 - 2.0 * G / np.sqrt(np.outer(g, g))
    np.fill_diagonal(R2, 0.0)
    iu = np.triu_indices(positions.size, k=1)
    return {"R": np.sqrt(np.clip(R2, 0.0, 2.0)), "R2": R2, "G": G, "positions": positions,
            "negative_fraction": float(np.mean(R2[iu] < 0)) if iu[0].size else 0.0}


def grouped_resolvable_draws(sequences, n_positions: int, vocab_size: int, positions, encodings, n_draws: int,
                             groups, first_seed: int = 0) -> tuple[np.ndarray, list[int], list[int]]:
    """:func:`posgeom.geometry.resolvable_draws` with the halves dealt by group.

    Returns
    -------
    table : ndarray of shape (n_draws, len(DRAW_STATISTICS))
    seeds, skipped : list of int
    """
    out, seeds, skipped = [], [], []
    for s in range(int(first_seed), int(first_seed) + 4 * int(n_draws)):
        try:
            res = grouped_resolvable_distances(sequences, n_positions, vocab_size, positions, groups, seed=s)
        except ValueError as exc:
            if "share no token" not in str(exc) and "not reached in both halves" not in str(exc):
                raise
            skipped.append(s)
            continue
        out.append(draw_statistics(resolvable_summary(res), res["R"], encodings))
        seeds.append(s)
        if len(out) == n_draws:
            return np.asarray(out), seeds, skipped
    raise ValueError(f"only {len(out)} of {4 * n_draws} cross-half splits resolve every kept position; "
                     "lower n_positions or raise min_count")
