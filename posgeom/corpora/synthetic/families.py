r"""The families that model text: ``stationary``, ``drift``, ``regimes`` and ``markov`` (the formulas
are in :mod:`posgeom.corpora.synthetic`)."""

from __future__ import annotations

import numpy as np

from ...validation import check_int, check_real
from ..identifiers import SyntheticFamily
from .sampling import (
    PAD, SyntheticCorpus, check_common, draw_lengths, length_mixture, pad_beyond, permuted_zipf, positionwise_corpus,
    sample_law, sample_positionwise, sample_rows, seeded_streams,
)

__all__ = ["stationary", "drift", "regimes", "markov", "markov_transition"]


# stationary


def stationary(
    n_sequences: int = 10_000,
    n_positions: int = 50,
    vocab_size: int = 100,
    *,
    exponent: float = 1.0,
    min_length: int | None = None,
    seed: int = 0,
) -> SyntheticCorpus:
    r"""Every position draws from the same Zipfian law $\pi$ ($\mu_i = \pi$).

    Parameters
    ----------
    n_sequences, n_positions, vocab_size : int
        The sample's size, $n$ and $v$.
    exponent : float
        The Zipf exponent $s \ge 0$.
    min_length : int, optional
        Lengths are uniform on ``[min_length, n_positions]`` (default ``n_positions``).
    seed : int
        Seeds the population's stream and the sample's.
    """
    n_seq, n, v, lo, _ = check_common(n_sequences, n_positions, vocab_size, min_length)
    rng_dist, rng = seeded_streams(seed)
    # mu_i = pi for every i
    mu = np.tile(permuted_zipf(v, exponent, rng_dist), (n, 1))
    return positionwise_corpus(SyntheticFamily.STATIONARY, mu, rng, n_sequences=n_seq, n_positions=n, vocab_size=v,
                               exponent=float(exponent), min_length=lo, seed=seed)


# drift


def _drift_weights(n: int, anchors: int, spread: float, smoothness: float) -> np.ndarray:
    r"""Mixture weights $w_k(i) = x_k(i)^2$, shape (n, K); every row sums to 1 and $\sum_k x_k = c$."""
    K = anchors
    # E: orthonormal basis of 1^perp (K x (K-1)), from the QR of [1 | I]
    Q, _ = np.linalg.qr(np.column_stack([np.ones(K), np.eye(K)[:, : K - 1]]))
    E = Q[:, 1:K]
    # b_k = E^T (e_k - 1/K) / ||e_k - 1/K||: the direction of anchor k inside the hyperplane
    A = np.eye(K) - 1.0 / K
    A /= np.linalg.norm(A, axis=1, keepdims=True)
    b = A @ E  # (K, K-1)
    t = np.linspace(0.0, 1.0, n) if n > 1 else np.zeros(1)
    t_k = np.linspace(0.0, 1.0, K)
    h = smoothness / (K - 1)
    # phi_k(t) = exp(-(t - t_k)^2 / (2 h^2))
    phi = np.exp(-((t[:, None] - t_k[None, :]) ** 2) / (2 * h * h))
    g = phi @ b
    norm = np.linalg.norm(g, axis=1, keepdims=True)
    if np.any(norm < 1e-9):
        raise ValueError(f"smoothness = {smoothness} blends the anchors into their centre; use a value below 1")
    # u(t) = g / ||g||
    u = g / norm
    rho = spread / np.sqrt(K)
    c = np.sqrt(K * (1.0 - rho * rho))
    # x(t) = (c / K) 1 + rho E u(t), on the unit sphere and on the hyperplane sum_k x_k = c
    x = c / K + rho * (u @ E.T)
    x = np.clip(x, 0.0, None)  # rounding only: rho <= 1/sqrt(K) keeps x >= 0
    # w_k(i) = x_k(i)^2
    return x * x


def _drift_population(n, v, anchors, spread, smoothness, exponent, rng_dist):
    K = anchors
    blocks = np.array_split(rng_dist.permutation(v), K)
    Pi = np.zeros((K, v))
    for k, block in enumerate(blocks):
        # anchor k: Zipf over its own block of the vocabulary (disjoint supports)
        Pi[k, block] = permuted_zipf(block.size, exponent, rng_dist)
    W = _drift_weights(n, K, spread, smoothness)
    # mu_i = sum_k w_k(i) pi_k
    return W @ Pi, W, Pi


def drift(
    n_sequences: int = 10_000,
    n_positions: int = 50,
    vocab_size: int = 100,
    *,
    anchors: int = 4,
    spread: float = 0.9,
    smoothness: float = 0.5,
    exponent: float = 1.0,
    min_length: int | None = None,
    seed: int = 0,
) -> SyntheticCorpus:
    r"""Smooth drift between ``anchors`` $= K$ disjoint Zipfian anchors; population rank exactly $K - 1$.

    Parameters
    ----------
    anchors : int
        $K \ge 3$ (``vocab_size >= K``).
    spread : float in (0, 1]
        Radius of the path as a fraction of the largest valid one (larger: stronger drift).
    smoothness : float in (0, 1)
        Width of the blending bumps, in units of the spacing between anchors.

    Returns
    -------
    SyntheticCorpus
        ``params`` also holds ``"weights"`` (n_positions, K) and ``"anchors_pi"`` (K, vocab_size).
    """
    n_seq, n, v, lo, _ = check_common(n_sequences, n_positions, vocab_size, min_length)
    K = check_int(anchors, "anchors", 3)
    if v < K:
        raise ValueError(f"vocab_size = {v} cannot hold {K} disjoint anchors; use vocab_size >= {K}")
    spread = check_real(spread, "spread", 0.0, 1.0, open_lo=True)
    smoothness = check_real(smoothness, "smoothness", 0.0, 1.0, open_lo=True)
    rng_dist, rng = seeded_streams(seed)
    mu, W, Pi = _drift_population(n, v, K, spread, smoothness, exponent, rng_dist)
    return positionwise_corpus(
        SyntheticFamily.DRIFT, mu, rng, n_sequences=n_seq, n_positions=n, vocab_size=v, anchors=K, spread=spread,
        smoothness=smoothness, exponent=float(exponent), min_length=lo, seed=seed, weights=W, anchors_pi=Pi,
    )


# regimes


def regimes(
    n_sequences: int = 10_000,
    n_positions: int = 50,
    vocab_size: int = 100,
    *,
    n_begin: int = 3,
    n_end: int = 3,
    exponent: float = 1.0,
    min_length: int | None = 25,
    seed: int = 0,
) -> SyntheticCorpus:
    r"""Beginning / middle / end regimes with variable lengths.

    Parameters
    ----------
    n_begin, n_end : int
        Positions with their own opening and closing laws; ``min_length >= n_begin + n_end``.
    min_length : int
        Lengths are uniform on ``[min_length, n_positions]``.
    """
    n_seq, n, v, lo, p_len = check_common(n_sequences, n_positions, vocab_size, min_length)
    nb = check_int(n_begin, "n_begin", 0, n)
    ne = check_int(n_end, "n_end", 0, n)
    if lo < nb + ne:
        raise ValueError(
            f"min_length = {lo} is shorter than n_begin + n_end = {nb + ne}: the regimes would overlap; "
            f"use min_length >= {nb + ne}"
        )
    rng_dist, rng = seeded_streams(seed)
    begin = np.stack([permuted_zipf(v, exponent, rng_dist) for _ in range(nb)]) if nb else np.zeros((0, v))
    middle = permuted_zipf(v, exponent, rng_dist)
    end = np.stack([permuted_zipf(v, exponent, rng_dist) for _ in range(ne)]) if ne else np.zeros((0, v))

    def law(i: int, L: int) -> np.ndarray:  # the opening, closing or middle law at position i of length L
        return begin[i] if i < nb else end[L - 1 - i] if L - 1 - i < ne else middle

    mu = length_mixture(n, v, p_len, law)
    lengths = draw_lengths(n_seq, lo, n, rng)
    tokens = sample_positionwise(np.tile(middle, (n, 1)), lengths, rng)
    rows = np.arange(n_seq)
    for j in range(ne):  # closing law j sits at position L - 1 - j
        pos = lengths - 1 - j
        tokens[rows, pos] = sample_law(end[j], n_seq, rng)
    for j in range(nb):  # openings overwrite (precedence), only where the sequence reaches j
        draw = sample_law(begin[j], n_seq, rng)
        tokens[:, j] = np.where(lengths > j, draw, PAD)
    params = dict(
        n_sequences=n_seq, n_positions=n, vocab_size=v, n_begin=nb, n_end=ne, exponent=float(exponent),
        min_length=lo, seed=seed,
    )
    return SyntheticCorpus(tokens, lengths, v, SyntheticFamily.REGIMES, params, None, mu)


# markov


def _cyclic_zipf(v: int, exponent: float) -> np.ndarray:
    r"""$\pi(w) \propto (1 + \min(w, v - w))^{-s}$: Zipfian in the cyclic distance to token 0."""
    w = np.arange(v)
    p = (1.0 + np.minimum(w, v - w)) ** (-float(exponent))
    return p / p.sum()


def markov_transition(pi, stay: float = 0.5) -> np.ndarray:
    r"""Lazy Metropolis walk on the cycle $\mathbb Z_v$ with stationary law ``pi``.

    Stay with probability ``stay``, else propose $a \pm 1 \pmod v$ and accept with probability
    $\min(1, \pi(b)/\pi(a))$; detailed balance gives $\pi T = \pi$.

    Parameters
    ----------
    pi : array-like of shape (v,), positive, summing to 1 (v >= 3)

    Returns
    -------
    T : ndarray of shape (v, v), row-stochastic.
    """
    pi = np.asarray(pi, dtype=np.float64)
    if pi.ndim != 1 or pi.size < 3 or np.any(pi <= 0) or not np.isclose(pi.sum(), 1.0):
        raise ValueError("pi must be a 1-D positive probability vector of length >= 3")
    stay = check_real(stay, "stay", 0.0, 1.0)
    v = pi.size
    T = np.zeros((v, v))
    for a in range(v):
        for b in ((a - 1) % v, (a + 1) % v):
            # T(a, b) = (1 - stay) / 2 * min(1, pi(b) / pi(a))
            T[a, b] += 0.5 * (1.0 - stay) * min(1.0, pi[b] / pi[a])
        T[a, a] = 1.0 - T[a].sum()
    return T


def _markov_population(n, v, exponent, step):
    pi = _cyclic_zipf(v, exponent)
    # mu_i(w) = pi((w - s i) mod v)
    w = np.arange(v)
    return np.stack([pi[(w - step * i) % v] for i in range(n)]), pi


def markov(
    n_sequences: int = 10_000,
    n_positions: int = 50,
    vocab_size: int | None = None,
    *,
    step: int = 1,
    stay: float = 0.5,
    exponent: float = 1.0,
    min_length: int | None = None,
    seed: int = 0,
) -> SyntheticCorpus:
    r"""Shift-invariant Markov chain started at stationarity.

    Parameters
    ----------
    vocab_size : int, optional
        $v \ge 3$; default ``n_positions`` (a circulant population distance matrix).
    step : int
        Shift $s$ of the token frame per position.
    stay : float in [0, 1]
        Laziness of the walk.

    Returns
    -------
    SyntheticCorpus
        ``params`` also holds ``"pi"`` (v,) and ``"transition"`` (v, v).
    """
    v_default = n_positions if vocab_size is None else vocab_size
    n_seq, n, v, lo, _ = check_common(n_sequences, n_positions, v_default, min_length, min_vocab=3)
    step = check_int(step, "step", 0)
    rng_dist, rng = seeded_streams(seed)
    mu, pi = _markov_population(n, v, exponent, step)
    T = markov_transition(pi, stay)
    lengths = draw_lengths(n_seq, lo, n, rng)
    z = np.empty((n_seq, n), dtype=np.int64)
    # z_0 ~ pi (stationary start), z_{i+1} ~ T(z_i, .)
    z[:, 0] = sample_law(pi, n_seq, rng)
    for i in range(1, n):
        z[:, i] = sample_rows(T, z[:, i - 1], rng)
    # x_i = (z_i + s i) mod v
    tokens = (z + step * np.arange(n)[None, :]) % v
    tokens = pad_beyond(tokens, lengths)
    params = dict(
        n_sequences=n_seq, n_positions=n, vocab_size=v, step=step, stay=float(stay), exponent=float(exponent),
        min_length=lo, seed=seed, pi=pi, transition=T,
    )
    return SyntheticCorpus(tokens, lengths, v, SyntheticFamily.MARKOV, params, None, mu)
