r"""Sampling-noise floor of Hellinger distances.

$F_{ij} = \sqrt{\tfrac12(\delta_i^2 + \delta_j^2)}$, $\delta_i^2 = \mathbb E\, d_H^2(X_i, X_i')$ for two
independent samples of size $N_i$ from position $i$: the distance of two identical distributions. Estimators:

* ``"bootstrap"``: $X_i, X_i' \sim \text{Multinomial}(N_i, \hat\mu_i) / N_i$.
* ``"split_half"``: the $N_i$ tokens are split at random into halves of sizes $a$, $b$ (a random split of the
  sequences induces this split) and $\delta_i^2 = \frac{2ab}{N_i^2}\,\mathbb E\,d^2(A, B)$; needs $N_i \ge 2$.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..validation import check_choice, check_int, check_rng
from .counts import PositionalCounts
from .hellinger import HELLINGER_KINDS, chord_to
from .marginals import PositionalMarginals

__all__ = ["NoiseFloor", "noise_floor", "NOISE_METHODS", "delta_method_noise"]

NOISE_METHODS = ("bootstrap", "split_half")


@dataclass
class NoiseFloor:
    r"""Result of :func:`noise_floor`: $F_{ij} = \sqrt{(\delta_i^2 + \delta_j^2)/2}$ (see the module docstring).

    Attributes
    ----------
    matrix : ndarray of shape (n_kept, n_kept)
        $F_{ij}$ in the requested ``kind`` (diagonal $\delta_i$).
    self_noise, positions, reach : ndarray of shape (n_kept,)
        $\delta_i$ (chord); kept positions (as :func:`positional_marginals` with the same ``min_count``); $N_i$.
    method, n_rep :
        The estimator and its replicates.
    """

    matrix: np.ndarray
    self_noise: np.ndarray
    positions: np.ndarray
    reach: np.ndarray
    method: str
    n_rep: int


def noise_floor(
    counts,
    method: str = "bootstrap",
    n_rep: int = 20,
    seed=0,
    *,
    min_count: int = 1,
    kind: str = "chord",
    progress: bool = False,
) -> NoiseFloor:
    r"""Per-pair Hellinger distance expected from sampling noise alone: $F_{ij} = \sqrt{(\delta_i^2 + \delta_j^2)/2}$.

    Parameters
    ----------
    counts : PositionalCounts or PositionalMarginals
        Counts (positions with $N_i <$ ``min_count`` are dropped, as by :func:`positional_marginals`),
        or marginals built from counts with ``alpha = 0`` (their kept positions are used).
    method, n_rep, seed :
        ``"bootstrap"`` or ``"split_half"``; Monte-Carlo replicates per position (>= 1); int, Generator or None.
    min_count : int
        Minimum $N_i$ (``"split_half"`` needs >= 2 at every kept position).
    kind : {"chord", "normalized", "geodesic"}
        Units of ``matrix`` (``"geodesic"`` is $4\arcsin(F/2)$ of the chord RMS).
    progress : bool
        Show a progress bar over the positions.
    """
    check_choice(method, "method", NOISE_METHODS)
    check_choice(kind, "kind", HELLINGER_KINDS)
    n_rep = check_int(n_rep, "n_rep", 1)
    min_count = check_int(min_count, "min_count", 1)
    if isinstance(counts, PositionalMarginals):
        if counts.counts is None:
            raise ValueError("these marginals carry no counts; pass the PositionalCounts")
        if counts.alpha != 0:
            raise ValueError("the noise floor is defined for unsmoothed marginals (alpha = 0)")
        positions = counts.positions
        counts = counts.counts
    elif isinstance(counts, PositionalCounts):
        positions = np.flatnonzero(counts.reach >= min_count)
    else:
        raise ValueError(f"counts must be a PositionalCounts or PositionalMarginals; got {type(counts).__name__}")
    if positions.size == 0:
        raise ValueError(f"no position has at least min_count = {min_count} sequences")
    reach = counts.reach[positions]
    if method == "split_half" and np.any(reach < 2):
        bad = positions[reach < 2][:20].tolist()
        raise ValueError(f"split_half needs N_i >= 2 at every position; positions {bad} have fewer (raise min_count)")
    rng = check_rng(seed)
    C = counts.counts
    delta2 = np.empty(positions.size)
    it = range(positions.size)
    if progress:
        from ..progress import tqdm

        it = tqdm(it, desc=f"noise floor ({method})", unit="position")
    for k in it:
        i = int(positions[k])
        c = C.data[C.indptr[i] : C.indptr[i + 1]].astype(np.int64)
        N = int(reach[k])
        if method == "bootstrap":
            p = c / N
            X = rng.multinomial(N, p, size=n_rep)
            Y = rng.multinomial(N, p, size=n_rep)
            # d^2(X, Y) = sum_w (sqrt(X_w / N) - sqrt(Y_w / N))^2
            d2 = np.sum((np.sqrt(X / N) - np.sqrt(Y / N)) ** 2, axis=1)
            delta2[k] = d2.mean()
        else:
            a = N // 2
            b = N - a
            A = rng.multivariate_hypergeometric(c, a, size=n_rep, method="marginals")
            B = c[None, :] - A
            d2 = np.sum((np.sqrt(A / a) - np.sqrt(B / b)) ** 2, axis=1)
            # delta^2 = (2 a b / N^2) E d^2(A, B)
            delta2[k] = 2.0 * a * b / N**2 * d2.mean()
    # F_ij = sqrt((delta_i^2 + delta_j^2) / 2)
    F = np.sqrt((delta2[:, None] + delta2[None, :]) / 2.0)
    return NoiseFloor(chord_to(F, kind), np.sqrt(delta2), positions.copy(), reach.copy(), method, n_rep)


def delta_method_noise(reach, vocab_size: int) -> np.ndarray:
    r"""Delta-method prediction of the squared noise distance between positions with equal distributions.

    $\mathbb E\, d_H^2 \approx \frac{v - 1}{4}\big(\frac1{N_i} + \frac1{N_j}\big)$, valid when every token of
    the support is seen many times ($N_i p_w \gg 1$).

    Parameters
    ----------
    reach, vocab_size :
        $N_i$ (n,), the sequences reaching each position (all >= 1); $v$, the support size.

    Returns
    -------
    ndarray of shape (n, n)
        The predicted $\mathbb E\, d_H^2$ (diagonal: two independent samples at the same position).
    """
    N = np.asarray(reach, dtype=np.float64)
    if N.ndim != 1 or np.any(N < 1):
        raise ValueError("reach must be a vector of counts >= 1")
    vocab_size = check_int(vocab_size, "vocab_size", 1)
    inv = 1.0 / N
    # E d^2 ~ (v - 1)/4 (1/N_i + 1/N_j)
    return (vocab_size - 1) / 4.0 * (inv[:, None] + inv[None, :])
