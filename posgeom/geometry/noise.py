r"""Sampling-noise floor of Hellinger distances (the empirical $B$ is noisy).

An empirical marginal $\hat\mu_i$ is a multinomial sample of size $N_i$. Two positions with *identical*
true distributions still show a non-zero distance $d_H(\hat\mu_i, \hat\mu_j)$. The floor says how large:

$$F_{ij} = \sqrt{\tfrac12(\delta_i^2 + \delta_j^2)}, \qquad
\delta_i^2 = \mathbb E\, d_H^2(X_i, X_i'),$$

where $X_i, X_i'$ are two independent empirical distributions of size $N_i$ drawn from position $i$'s
distribution. Why: writing $\sqrt{\hat\mu_i} = \sqrt{\mu_i} + \varepsilon_i$ with independent errors,
when $\mu_i = \mu_j$ we get $\mathbb E\,d^2 = \mathbb E\|\varepsilon_i\|^2 + \mathbb E\|\varepsilon_j\|^2
= \frac12(\delta_i^2 + \delta_j^2)$ (exact for the variance part; the small bias term
$\|\mathbb E\varepsilon_i - \mathbb E\varepsilon_j\|^2$ vanishes when $N_i = N_j$). $F$ is a root mean
square, so it slightly exceeds $\mathbb E\,d$. Its diagonal $F_{ii} = \delta_i$ is the distance two
independent corpora of the same size would show at position $i$.

Two estimators of $\delta_i^2$, both from the counts alone (the ``n_rep`` Monte-Carlo replicates are seeded):

* ``"bootstrap"`` (parametric): $X_i, X_i' \sim \text{Multinomial}(N_i, \hat\mu_i) / N_i$, the plug-in
  distribution standing in for the truth.
* ``"split_half"`` (no model): the $N_i$ observed tokens at position $i$ are split uniformly at random into
  halves of sizes $a = \lfloor N_i/2 \rfloor$ and $b = N_i - a$ (a multivariate hypergeometric draw — a random
  split of the *sequences* induces exactly this split at each position). A random split of an i.i.d. sample
  gives two independent samples of sizes $a, b$, so $\mathbb E\,d^2(A, B)$ is the noise at sizes $(a, b)$;
  to first order in $1/N$ it scales as $\frac1a + \frac1b$, and the full-size value is
  $\delta_i^2 = \frac{2ab}{N_i^2}\,\mathbb E\,d^2(A, B)$ (the factor is $\frac12$ for even $N_i$).
  Needs $N_i \ge 2$.

A position pair with $D_{ij}$ near $F_{ij}$ is indistinguishable from sampling noise at this corpus size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..validation import check_int, check_rng
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
        $F_{ij} = \sqrt{(\delta_i^2 + \delta_j^2)/2}$ in the requested ``kind`` (diagonal $\delta_i$).
    self_noise : ndarray of shape (n_kept,)
        $\delta_i$ (chord).
    positions : ndarray of shape (n_kept,)
        Kept positions (as in :func:`positional_marginals` with the same ``min_count``).
    reach : ndarray of shape (n_kept,)
        $N_i$.
    method : str
    n_rep : int
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
    r"""Per-pair Hellinger distance expected from sampling noise alone at the corpus's per-position counts
    (issue 3; see the module docstring): $F_{ij} = \sqrt{(\delta_i^2 + \delta_j^2)/2}$.

    Parameters
    ----------
    counts : PositionalCounts or PositionalMarginals
        Counts (positions with $N_i <$ ``min_count`` are dropped, as by :func:`positional_marginals`),
        or marginals built from counts with ``alpha = 0`` (their kept positions are used).
    method : {"bootstrap", "split_half"}
    n_rep : int
        Monte-Carlo replicates per position (>= 1).
    seed : int, Generator or None
    min_count : int
        Minimum $N_i$ (``"split_half"`` needs >= 2 at every kept position).
    kind : {"chord", "normalized", "geodesic"}
        Units of ``matrix`` (``"geodesic"`` is $4\arcsin(F/2)$ of the chord RMS).
    progress : bool
        tqdm bar over positions.

    Returns
    -------
    NoiseFloor
        ``matrix`` (n_kept, n_kept), ``self_noise`` (n_kept,), ``positions``, ``reach``.
    """
    if method not in NOISE_METHODS:
        raise ValueError(f"method must be one of {NOISE_METHODS}; got {method!r}")
    if kind not in HELLINGER_KINDS:
        raise ValueError(f"kind must be one of {HELLINGER_KINDS}; got {kind!r}")
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

    $\mathbb E\, d_H^2 \approx \frac{v - 1}{4}\big(\frac1{N_i} + \frac1{N_j}\big)$, valid when every token
    of the support is seen many times ($N_i p_w \gg 1$).

    Parameters
    ----------
    reach : array-like of shape (n,)
        $N_i$, the sequences reaching each position (all >= 1).
    vocab_size : int
        $v$, the support size of the distributions.

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
