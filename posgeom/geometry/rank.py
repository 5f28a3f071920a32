r"""The rank of a corpus's positional geometry, read without the sampling noise (cross-fitting).

The noise gives an empirical Gram matrix of the root-marginals full rank; two disjoint halves with root-marginals
$a_i$, $b_j$ give $G_{ij} = \tfrac12\,(a_i^\top b_j + a_j^\top b_i)$, whose expectation is the noise-free
$\bar s_i^\top \bar s_j$. Over ``n_resamples`` half-splits of ``n_folds`` folds, $\tau$ is the largest null
eigenvalue seen (within-half differences) and resample $s$ counts $r_s = \#\{k : \lambda_k^{(s)} > \tau\}$. The
rank is determined when the central ``level`` interval of $r_s$ is one number, the first direction not counted
stays below its resample's null top in at least 90 % of the resamples, and the eigenvalues below $\tau$ carry no
signal mass. The null is conservative, so directions between $\tau/2$ and $\tau$ are neither claimed nor excluded.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .counting import positional_counts
from .counts import PositionalCounts
from .mds import classical_mds, effective_rank
from ..validation import as_square_matrix, upper

__all__ = [
    "NoiseAwareRank", "cross_fitted_gram", "cross_fitted_eigenvalues", "noise_aware_rank",
    "noise_aware_rank_from_folds", "fold_members", "fold_counts", "resolvable_distances", "rank_estimates",
    "parameter_savings",
]


def _root_rows(counts: PositionalCounts, positions: np.ndarray) -> sp.csr_matrix:
    """Sparse rows $\\sqrt{c_i / N_i}$ of the given positions (each reached at least once)."""
    C = counts.counts[positions].astype(np.float64)
    N = counts.reach[positions].astype(np.float64)
    # sqrt(mu_i) = sqrt(c_i / N_i)
    return sp.csr_matrix(sp.diags(1.0 / N) @ C).sqrt()


def _check_positions(counts: list[PositionalCounts], positions) -> np.ndarray:
    reached = np.logical_and.reduce([c.reach > 0 for c in counts])
    if positions is None:
        return np.flatnonzero(reached)
    positions = np.asarray(positions, dtype=np.int64)
    if positions.ndim != 1 or positions.size == 0:
        raise ValueError("positions must be a non-empty 1-D array of position indices")
    n = counts[0].n_positions
    if positions.min() < 0 or positions.max() >= n:
        raise ValueError(f"positions must lie in [0, {n - 1}]; got {positions.min()}..{positions.max()}")
    missing = positions[~reached[positions]]
    if missing.size:
        raise ValueError(
            f"positions {missing.tolist()[:10]} are not reached in every part of the split; the cross-fitted "
            "estimate needs each kept position on both sides: keep fewer positions or use a larger corpus"
        )
    return positions


def cross_fitted_gram(counts_a: PositionalCounts, counts_b: PositionalCounts, positions=None):
    r"""The cross-fitted Gram matrix $G_{ij} = \frac12(a_i^\top b_j + a_j^\top b_i)$ of two disjoint halves.

    Parameters
    ----------
    counts_a, counts_b : PositionalCounts
        Counts of two disjoint sets of sequences, same ``n_positions`` and ``vocab_size``.
    positions : array-like of int, optional
        The positions to keep (default: every position reached in both halves).

    Returns
    -------
    G, positions : ndarray of shape (k, k) and (k,)
    """
    for c in (counts_a, counts_b):
        if not isinstance(c, PositionalCounts):
            raise ValueError(f"counts must be PositionalCounts; got {type(c).__name__}")
    if counts_a.counts.shape != counts_b.counts.shape:
        raise ValueError(f"the two halves have counts of shapes {counts_a.counts.shape} and {counts_b.counts.shape}; "
                         "count both with the same n_positions and vocab_size")
    positions = _check_positions([counts_a, counts_b], positions)
    A, B = _root_rows(counts_a, positions), _root_rows(counts_b, positions)
    # G_ij = (a_i . b_j + a_j . b_i) / 2
    G = np.asarray((A @ B.T).todense())
    return 0.5 * (G + G.T), positions


def _centring_basis(k: int) -> np.ndarray:
    """An orthonormal basis (k, k-1) of the complement of the all-ones vector (Helmert)."""
    Q, _ = np.linalg.qr(np.eye(k)[:, 1:] - 1.0 / k)
    return Q


def cross_fitted_eigenvalues(G) -> np.ndarray:
    """Eigenvalues (descending, k - 1 of them) of the centred cross-fitted Gram $J G J$ on the complement of 1.

    Parameters
    ----------
    G : array-like of shape (k, k)
        Symmetric (from :func:`cross_fitted_gram`).
    """
    G = np.asarray(G, dtype=np.float64)
    if G.ndim != 2 or G.shape[0] != G.shape[1] or G.shape[0] < 2:
        raise ValueError(f"G must be a square matrix with at least 2 rows; got shape {G.shape}")
    if not np.allclose(G, G.T, rtol=0, atol=1e-12 * max(1.0, float(np.abs(G).max()))):
        raise ValueError("G must be symmetric; build it with cross_fitted_gram")
    Q = _centring_basis(G.shape[0])
    # Q^T J G J Q = Q^T G Q because J Q = Q
    M = Q.T @ G @ Q
    return np.linalg.eigvalsh(0.5 * (M + M.T))[::-1]


@dataclass(frozen=True)
class NoiseAwareRank:
    """The noise-aware rank of a positional geometry (module docstring).

    Attributes
    ----------
    rank : int or None
        The rank when it is determined, else None ("undetermined").
    interval : tuple of int
        Central ``level`` range of the per-resample counts $r_s$.
    level, threshold : float
        The interval's coverage; $\\tau$, the largest noise edge seen over the resamples.
    eigenvalues : ndarray of shape (n_resamples, k - 1)
        Cross-fitted eigenvalues of every resample, descending.
    counts : ndarray of shape (n_resamples,)
        $r_s$.
    residual_share, next_share : float
        Shares of the resamples whose eigenvalues below $\\tau$ sum to more than 0, and whose first direction
        not counted exceeds that resample's null top.
    positions, n_sequences, null :
        Kept positions (k,), sequences counted, the null hypothesis in words.
    """

    rank: int | None
    interval: tuple[int, int]
    level: float
    threshold: float
    eigenvalues: np.ndarray
    counts: np.ndarray
    residual_share: float
    next_share: float
    positions: np.ndarray
    n_sequences: int
    null: str = ("a direction without positional signal has a cross-fitted eigenvalue symmetric about 0, "
                 "no larger than the largest noise edge")

    @property
    def determined(self) -> bool:
        return self.rank is not None

    @property
    def mean_eigenvalues(self) -> np.ndarray:
        """Mean cross-fitted eigenvalues over the resamples, shape (k - 1,)."""
        return self.eigenvalues.mean(axis=0)

    def __str__(self) -> str:
        lo, hi = self.interval
        span = f"{lo}" if lo == hi else f"{lo}–{hi}"
        if self.determined:
            return f"{self.rank} ({self.level:.0%} interval {span})"
        return f"undetermined ({self.level:.0%} interval {span})"


def fold_members(n_sequences: int, n_folds: int, *, seed=0, groups=None) -> list[np.ndarray]:
    """The indices of the sequences of each of ``n_folds`` random folds; ``groups`` are dealt whole (dependent units).

    Parameters
    ----------
    n_sequences, n_folds, seed : int
    groups : array-like of shape (n_sequences,), optional
        Any hashable labels (integers, strings).

    Returns
    -------
    list of int arrays, length n_folds
        Disjoint, covering ``range(n_sequences)``; with groups, every group within one fold.
    """
    rng = np.random.default_rng(seed)
    if groups is None:
        if n_sequences < n_folds:
            raise ValueError(f"{n_sequences} sequences are too few for {n_folds} folds")
        return np.array_split(rng.permutation(n_sequences), n_folds)
    labels = np.asarray(groups)
    if labels.ndim != 1 or labels.size != n_sequences:
        raise ValueError(f"groups must hold one label per sequence ({n_sequences}); got shape {labels.shape}")
    _, inverse, sizes = np.unique(labels, return_inverse=True, return_counts=True)
    n_groups = sizes.size
    if n_groups < n_folds:
        raise ValueError(f"{n_groups} groups are too few for {n_folds} folds; give fewer folds or more groups")
    order = rng.permutation(n_groups)
    running = np.cumsum(sizes[order])
    # fold k ends with the group where the running count first reaches (k + 1) N / F; one group at least each
    cuts = np.searchsorted(running, np.arange(1, n_folds) * n_sequences / n_folds) + 1
    for k in range(n_folds - 1):
        cuts[k] = min(max(cuts[k], (cuts[k - 1] if k else 0) + 1), n_groups - (n_folds - 1 - k))
    by_group = np.argsort(inverse, kind="stable")
    starts = np.concatenate([[0], np.cumsum(sizes)])
    return [np.sort(np.concatenate([by_group[starts[g]:starts[g + 1]] for g in part]))
            for part in np.split(order, cuts)]


def fold_counts(sequences, n_positions: int, vocab_size: int, *, n_folds: int = 12, seed=0,
                groups=None) -> list[PositionalCounts]:
    """Deal the sequences into ``n_folds`` random folds (:func:`fold_members`) and count each fold.

    Parameters
    ----------
    sequences : sequence of 1-D integer arrays, length N >= 2 n_folds
    n_positions, vocab_size : int
    n_folds, seed : int
        ``n_folds`` a multiple of 4.
    groups : array-like of shape (N,), optional
        A label per sequence; the sequences of one label go into one fold (at least ``2 n_folds`` labels).
    """
    seqs = list(sequences)
    n_folds = int(n_folds)
    if n_folds < 4 or n_folds % 4:
        raise ValueError(f"n_folds must be a multiple of 4 (a quarter of the folds go in each part of a resample); "
                         f"got {n_folds}")
    if len(seqs) < 2 * n_folds:
        raise ValueError(f"{len(seqs)} sequences are too few for {n_folds} folds; the cross-fitted estimate needs "
                         f"at least {2 * n_folds}")
    if groups is not None and np.unique(np.asarray(groups)).size < 2 * n_folds:
        raise ValueError(f"{np.unique(np.asarray(groups)).size} groups are too few for {n_folds} folds; the "
                         f"cross-fitted estimate needs at least {2 * n_folds}")
    return [positional_counts([seqs[i] for i in part], n_positions, vocab_size)
            for part in fold_members(len(seqs), n_folds, seed=seed, groups=groups)]


def noise_aware_rank_from_folds(folds, *, positions=None, n_resamples: int = 50, level: float = 0.9,
                                seed=0) -> NoiseAwareRank:
    """:func:`noise_aware_rank` from counts already dealt into folds (:func:`fold_counts`).

    Parameters
    ----------
    folds : list of PositionalCounts
        A multiple of 4 of counts of disjoint sets of sequences.
    positions : array-like of int, optional
        Positions to keep (default: those reached in every fold).
    n_resamples, level, seed :
        Random half-splits of the folds (>= 2); the interval's coverage in (0, 1); the seed of the splits.
    """
    folds = list(folds)
    if len(folds) < 4 or len(folds) % 4:
        raise ValueError(f"folds must be a multiple of 4 (>= 4) of PositionalCounts (a quarter of them in each "
                         f"part of a resample); got {len(folds)}")
    if not all(isinstance(f, PositionalCounts) for f in folds):
        raise ValueError("folds must be PositionalCounts (use fold_counts)")
    if int(n_resamples) < 2:
        raise ValueError(f"n_resamples must be >= 2; got {n_resamples}")
    if not 0.0 < float(level) < 1.0:
        raise ValueError(f"level must lie in (0, 1), e.g. 0.9; got {level}")
    positions = _check_positions(folds, positions)
    if positions.size < 3:
        raise ValueError(f"only {positions.size} positions are reached in every fold; the rank needs at least 3")
    rng = np.random.default_rng(seed)
    m = len(folds)
    q = m // 4
    eig = np.empty((int(n_resamples), positions.size - 1))
    null_top = np.empty(int(n_resamples))
    Q = _centring_basis(positions.size)
    for s in range(int(n_resamples)):
        order = rng.permutation(m)
        quarters = [sum(folds[i] for i in order[k * q:(k + 1) * q]) for k in range(4)]
        G, _ = cross_fitted_gram(quarters[0] + quarters[1], quarters[2] + quarters[3], positions)
        eig[s] = cross_fitted_eigenvalues(G)
        # the null: d_A = (a_Q1 - a_Q2) / sqrt 2 and d_B = (b_Q3 - b_Q4) / sqrt 2 hold no signal and the noise of
        # a quarter, at least that of a half for every token (equal for tokens seen a few times, whose root
        # noise does not shrink with the sample; twice it in variance for frequent ones): a conservative null
        roots = [_root_rows(c, positions) for c in quarters]
        dA, dB = (roots[0] - roots[1]) / np.sqrt(2.0), (roots[2] - roots[3]) / np.sqrt(2.0)
        N0 = np.asarray((dA @ dB.T).todense())
        # N0 = (d_A d_B^T + d_B d_A^T) / 2, restricted to the complement of 1
        M = Q.T @ (0.5 * (N0 + N0.T)) @ Q
        null_top[s] = np.linalg.eigvalsh(0.5 * (M + M.T))[-1]
    # tau = the largest null eigenvalue seen over the resamples (+ rounding of lambda_1)
    tau = float(max(null_top.max(), 0.0)) + 1e-12 * float(np.abs(eig[:, 0]).max())
    counts = (eig > tau).sum(axis=1)
    lo, hi = (int(np.quantile(counts, p, method="inverted_cdf")) for p in ((1 - level) / 2, (1 + level) / 2))
    # signal mass left below tau: sum of the eigenvalues not counted, per resample
    residual = np.where(eig > tau, 0.0, eig).sum(axis=1)
    residual_share = float(np.mean(residual > 0))
    # the first direction not counted against the same resample's null: a direction without signal
    # stays below its (conservative) null top in most resamples; one with signal under tau does not
    nxt = eig[:, min(hi, eig.shape[1] - 1)]
    next_share = float(np.mean(nxt > null_top)) if hi < eig.shape[1] else 0.0
    determined = lo == hi and residual_share < (1 + level) / 2 and next_share < 0.1
    n_seq = sum(f.n_sequences for f in folds)
    return NoiseAwareRank(lo if determined else None, (lo, hi), float(level), tau, eig, counts, residual_share,
                          next_share, positions, int(n_seq))


def noise_aware_rank(sequences, n_positions: int, vocab_size: int, *, positions=None, n_folds: int = 12,
                     n_resamples: int = 50, level: float = 0.9, seed=0) -> NoiseAwareRank:
    r"""The number of directions of a corpus's positional geometry that stand above its sampling noise.

    Parameters
    ----------
    sequences, n_positions, vocab_size :
        Token ids (1-D integer arrays), as for :func:`posgeom.geometry.positional_counts`.
    n_folds : int
        Folds the sequences are dealt into (a multiple of 4, :func:`fold_counts`).
    positions, n_resamples, level, seed :
        As :func:`noise_aware_rank_from_folds` (``seed`` also deals the folds).
    """
    folds = fold_counts(sequences, n_positions, vocab_size, n_folds=n_folds, seed=seed)
    return noise_aware_rank_from_folds(folds, positions=positions, n_resamples=n_resamples, level=level, seed=seed)


def resolvable_distances(sequences, n_positions: int, vocab_size: int, positions=None, *, seed=0, groups=None):
    r"""The cross-half estimate of the Hellinger geometry without its sampling noise.

    $R_{ij}^2 = 2 - 2 G_{ij} / \sqrt{G_{ii} G_{jj}}$, $G$ the cross-fitted Gram matrix of one random split:
    the chord distance between the directions of $\bar s_i = \mathbb E\sqrt{\hat\mu_i}$. The halves must be
    independent (dependent sequences, e.g. SST-2's phrases of one sentence, share a label in ``groups``).

    Parameters
    ----------
    sequences, n_positions, vocab_size :
        N token id arrays (N >= 4 without ``groups``), as for :func:`posgeom.geometry.positional_counts`.
    positions : array-like of int, optional
        The positions to keep (default all reached by at least one sequence of each half).
    seed : int
    groups : array-like of shape (N,), optional
        A label per sequence; one label's sequences go into one half (at least 2 labels, :func:`fold_members`).

    Returns
    -------
    dict
        ``R`` (k, k) resolvable distances, ``R2`` (k, k) before clipping, ``G`` (k, k) cross products,
        ``positions`` (k,), ``negative_fraction`` (share of pairs $i < j$ with $R^2_{ij} < 0$).
    """
    seqs = list(sequences)
    if groups is None:
        if len(seqs) < 4:
            raise ValueError(f"the cross-half estimate needs at least 4 sequences, got {len(seqs)}")
        # halves perm[:N // 2] and perm[N // 2:] (fold_members' array_split would differ for an odd N)
        perm = np.random.default_rng(seed).permutation(len(seqs))
        half_a, half_b = perm[: len(seqs) // 2], perm[len(seqs) // 2 :]
    else:
        half_a, half_b = fold_members(len(seqs), 2, seed=seed, groups=groups)
    ca = positional_counts([seqs[i] for i in half_a], n_positions, vocab_size)
    cb = positional_counts([seqs[i] for i in half_b], n_positions, vocab_size)
    both = np.flatnonzero((ca.reach > 0) & (cb.reach > 0))
    if positions is not None:
        positions = np.asarray(positions, dtype=np.int64)
        missing = np.setdiff1d(positions, both)
        if missing.size:
            raise ValueError(
                f"positions {missing.tolist()[:10]} are not reached in both halves of the split; the cross-half "
                "estimate needs every kept position in each half: lower n_positions or raise min_count"
            )
        both = positions
    # only the kept rows are made dense: the dense product over the whole vocabulary is kept, since a product
    # over fewer columns, or a sparse one, adds the same terms in another order and rounds G differently
    A, B = _root_rows(ca, both).toarray(), _root_rows(cb, both).toarray()
    # G_ij = (a_i . b_j + a_j . b_i) / 2
    G = A @ B.T
    G = 0.5 * (G + G.T)
    g = np.diag(G).copy()
    if np.any(g <= 0):
        bad = both[g <= 0]
        raise ValueError(
            f"positions {bad.tolist()[:10]} share no token between the two halves (G_ii = 0): their distribution "
            "cannot be resolved at this corpus size; lower n_positions or raise min_count"
        )
    # R_ij^2 = 2 - 2 G_ij / sqrt(G_ii G_jj)
    R2 = 2.0 - 2.0 * G / np.sqrt(np.outer(g, g))
    np.fill_diagonal(R2, 0.0)
    return {"R": np.sqrt(np.clip(R2, 0.0, 2.0)), "R2": R2, "G": G, "positions": both,
            "negative_fraction": float(np.mean(upper(R2) < 0)) if both.size > 1 else 0.0}


def rank_estimates(D, sequences, n_positions: int, vocab_size: int, criteria, seed, positions=None,
                   **rank_options) -> tuple[dict, np.ndarray, NoiseAwareRank]:
    """Effective ranks of ``D`` under every criterion, its eigenvalues (n,) and the noise-aware rank.

    Parameters
    ----------
    D : array-like of shape (n, n)
    sequences, n_positions, vocab_size :
        The corpus's token ids, as for :func:`noise_aware_rank`.
    criteria : mapping
        ``tol``, ``q`` and ``threshold`` of :func:`posgeom.geometry.effective_rank`'s ``"tol"``, ``"mass"`` and
        ``"stress"`` criteria.
    seed, positions :
        As :func:`noise_aware_rank`.
    **rank_options
        The other options of :func:`noise_aware_rank` (``n_folds``, ``n_resamples``, ``level``).

    Returns
    -------
    ranks : dict
        ``tol``, ``mass``, ``stress`` (None when no rank reaches the threshold), ``cross_fitted`` (the text of the
        noise-aware rank), ``cross_fitted_rank`` (None when undetermined), ``cross_fitted_threshold``.
    eigenvalues : ndarray of shape (n,)
        Of the classical MDS of ``D``.
    noise_aware : NoiseAwareRank
    """
    D = as_square_matrix(D, "D")
    mds = classical_mds(D, k=1)
    w = mds.eigenvalues
    nar = noise_aware_rank(sequences, n_positions, vocab_size, positions=positions, seed=seed, **rank_options)
    out = dict(
        tol=effective_rank(w, "tol", tol=criteria["tol"]), mass=effective_rank(w, "mass", q=criteria["q"]),
        cross_fitted=str(nar), cross_fitted_rank=nar.rank, cross_fitted_threshold=nar.threshold,
    )
    try:
        out["stress"] = effective_rank(D, "stress", threshold=criteria["threshold"], normalization="scale_free")
    except ValueError:
        out["stress"] = None
    return out, w, nar


def parameter_savings(r: int, n: int, d: int) -> float:
    r"""Parameter savings of $P = A C^\top$ over a full table: $1 - r(n + d)/(n d)$ (Remark 8).

    Parameters
    ----------
    r, n, d : int
        The rank, the number of positions and the width, each >= 1.

    Returns
    -------
    float
        Negative when the factors hold more numbers than the full $n \times d$ table.
    """
    if min(r, n, d) < 1:
        raise ValueError(f"r, n and d must be positive integers; got r={r}, n={n}, d={d}")
    # 1 - r (n + d) / (n d)
    return 1.0 - r * (n + d) / (n * d)
