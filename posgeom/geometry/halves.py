r"""Cross-half estimates whose halves keep dependent rows together (the phrases of one sentence).

The resolvable geometry compares the positions of one half of the sequences with those of the other
(:func:`posgeom.geometry.resolvable_distances`), so that the sampling noise of each half cancels in the
cross products. That needs halves that are independent. SST-2's training rows are not: its 67,349 rows
are the phrases of 6,886 sentences (:mod:`posgeom.corpora.groups`), and two phrases of one sentence dealt
into opposite halves carry the same tokens at the same positions to both, so the cross products keep
part of the noise they are meant to cancel and the geometry looks more resolved than it is.
:func:`grouped_resolvable_distances` deals whole groups into the halves (:func:`posgeom.geometry.fold_members`
with two folds) and otherwise computes the same estimate; :func:`grouped_resolvable_draws` repeats it over
split seeds, as :func:`posgeom.geometry.resolvable_draws` does for rows dealt one by one.

This module is imported from here, not re-exported by :mod:`posgeom.geometry`: every stored result is keyed
by the source of the package's re-exports, and these functions join them (with ``resolvable_distances``
taking ``groups``) when the paper-scale results are next recomputed whole.
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
    """Dense rows $\\sqrt{c_i / N_i}$ of the given positions, computed as the cross-fitted estimates compute them
    (:mod:`posgeom.geometry.rank`: the same operations, so the same rounding)."""
    C = counts.counts[positions].astype(np.float64)
    N = counts.reach[positions].astype(np.float64)
    # sqrt(mu_i) = sqrt(c_i / N_i)
    return sp.csr_matrix(sp.diags(1.0 / N) @ C).sqrt().toarray()


def grouped_resolvable_distances(sequences, n_positions: int, vocab_size: int, positions, groups, *,
                                 seed=0) -> dict:
    r"""The cross-half estimate of the Hellinger geometry, whole groups dealt into each half.

    $R_{ij}^2 = 2 - 2 G_{ij} / \sqrt{G_{ii} G_{jj}}$ with $G_{ij} = \frac12(a_i^\top b_j + a_j^\top b_i)$, where
    $a_i$, $b_j$ are the root-marginals of position $i$ in one half and of position $j$ in the other
    (:func:`posgeom.geometry.resolvable_distances`).

    Parameters
    ----------
    sequences : list of 1-D integer arrays, length N
    n_positions, vocab_size : int
    positions : array-like of int, shape (k,)
        The positions to keep; each must be reached in both halves.
    groups : array-like of shape (N,)
        A label per sequence; the sequences of one label go into the same half (at least 2 labels).
    seed : int
        Seed of the deal.

    Returns
    -------
    dict
        As :func:`posgeom.geometry.resolvable_distances`: ``R``, ``R2``, ``G`` (k, k), ``positions`` (k,),
        ``negative_fraction``.

    Raises
    ------
    ValueError
        When a kept position is not reached in both halves, or shares no token between them (the message
        says so, as :func:`posgeom.geometry.resolvable_distances`'s does).
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
    """:func:`posgeom.geometry.draw_statistics` of ``n_draws`` cross-half estimates dealt by group
    (:func:`grouped_resolvable_distances`), split seeds ``first_seed, first_seed + 1, ...``; a seed whose
    split cannot resolve every kept position is skipped, up to ``4 n_draws`` seeds
    (:func:`posgeom.geometry.resolvable_draws`).

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
