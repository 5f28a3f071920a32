r"""Synthetic corpora with known positional statistics (seeded, documented families).

Each family draws token-id sequences whose *population* positional marginals $\mu_i$
are known in closed form, so that every statistic computed from samples (counts, Hellinger distances,
MDS, effective rank) can be checked against the exact population value. Every family returns a
:class:`SyntheticCorpus` holding the sampled tokens *and* the population marginals; the same marginals
come without sampling from :func:`population_marginals`.

Vocabularies are Zipfian: the base distribution over $v$ tokens is

$$\pi(r) = \frac{(r + 1)^{-s}}{\sum_{q=0}^{v-1} (q + 1)^{-s}}, \qquad r = 0, \dots, v - 1,$$

$r$ the frequency rank of a token and $s$ the ``exponent`` (default 1, Zipf's law). Families that need
several distributions over the same vocabulary give each one its own seeded permutation of the ranks.

Families (``FAMILIES``)
-----------------------
``"stationary"``
    Every position draws from the same $\pi$: $\mu_i = \pi$. All population distances are 0; the
    distances of a sample are sampling noise only (the noise floor).
``"drift"``
    Smooth drift between $K$ anchor distributions $\pi_1, \dots, \pi_K$ with *disjoint supports* (the
    vocabulary is split into $K$ blocks), $\mu_i = \sum_k w_k(i)\, \pi_k$. Because the supports are
    disjoint, $\sqrt{\mu_i} = \sum_k \sqrt{w_k(i)}\, \sqrt{\pi_k}$ with orthonormal $\sqrt{\pi_k}$, so
    the Hellinger geometry of the positions is the Euclidean geometry of the points
    $x(i) = \sqrt{w(i)} \in \mathbb R^K$ on the unit sphere. They are placed on the sphere's
    intersection with the hyperplane $\sum_k x_k = c$ (a $(K-2)$-sphere), so their affine hull has
    dimension $K - 1$ and the double-centred Gram matrix $B$ has **rank exactly** $K - 1$:

    $$x(t) = \tfrac{c}{K}\mathbf 1 + \rho\, E\, u(t), \qquad
      u(t) = \frac{\sum_k \phi_k(t)\, b_k}{\lVert \sum_k \phi_k(t)\, b_k \rVert}, \qquad
      \phi_k(t) = e^{-(t - t_k)^2 / (2 h^2)},$$

    with $t = i / (n - 1)$, $t_k = (k - 1)/(K - 1)$, $E$ ($K \times (K-1)$) an orthonormal basis of
    $\mathbf 1^\perp$, $b_k = E^\top (e_k - \mathbf 1/K) / \lVert e_k - \mathbf 1/K \rVert$ (the
    direction of anchor $k$), $h = s_{\text{smooth}}/(K-1)$ with $s_{\text{smooth}}$ = ``smoothness``, radius $\rho = s_{\text{spread}}/\sqrt K$ with $s_{\text{spread}}$ = ``spread``
    ($\rho \le 1/\sqrt K$ keeps $x \ge 0$) and $c = \sqrt{K (1 - \rho^2)}$ (so $\lVert x \rVert = 1$).
    The weights are $w_k(i) = x_k(i)^2$; position $i$ leans towards anchor $k$ near $t_k$. $K \ge 3$:
    a rank-1 Hellinger geometry has only two distinct distributions (a line meets the sphere of the
    $\sqrt\mu$ in two points), so no *smooth* drift has rank 1. The default $K = 4$ gives rank 3, the
    paper's synthetic claim C5.
``"regimes"``
    The three kinds of positional distributions of text: the first ``n_begin`` positions each have
    their own distribution (openings), the last ``n_end`` positions *of each sequence* (counted from
    its end) have their own (closings), and every position in between draws from one middle
    distribution. Lengths vary, so the closing regime is smeared over absolute positions:

    $$\mu_i = \frac{\sum_{L > i} p(L)\, \mu_i^{(L)}}{\sum_{L > i} p(L)}, \qquad
      \mu_i^{(L)} = \begin{cases} \beta_i & i < n_{begin} \\ \varepsilon_{L-1-i} & L - 1 - i < n_{end}
      \\ \pi_M & \text{otherwise,} \end{cases}$$

    the opening regime taking precedence where the two overlap.
``"markov"``
    A shift-invariant Markov chain: $z_0 \sim \pi$, $z_{i+1} \sim T(z_i, \cdot)$ with $T$ a lazy
    Metropolis walk on the cycle $\mathbb Z_v$ whose stationary law is $\pi$ (so $z_i \sim \pi$ at every
    $i$: the chain starts at stationarity), and token $x_i = (z_i + s\, i) \bmod v$ (``step`` $s$).
    Hence $\mu_i(w) = \pi((w - s i) \bmod v)$ and the Hellinger distance between positions $i$ and $j$
    depends on $(i - j) \bmod v$ only: the distance matrix is Toeplitz, and circulant when $n = v$ (the
    default), whose eigenvectors are exactly Fourier modes (claim C4). Here $\pi$ is Zipfian in the
    cyclic distance to token 0, $\pi(w) \propto (1 + \min(w, v - w))^{-s}$, so it varies smoothly
    around the cycle.
``"order"``
    Order-sensitive labelled tasks for Theorems 1 and 4; the label depends only on the order of the
    tokens. Filler tokens are Zipfian over ids $0, \dots, v - 3$; ids $A = v - 2$ and $B = v - 1$ are
    markers. ``kind="marker_order"``: each sequence holds one $A$ and one $B$ at distinct uniform
    positions, label $= 1$ iff $A$ comes first. ``kind="marker_position"``: one $A$ at a uniform
    position $p$ (not the middle one of an odd-length sequence), label $= 1$ iff $p < (L-1)/2$ (first
    half). With ``balanced=True`` (default) row $2k+1$ is the reversal of row $2k$, whose label is the
    opposite, so the two classes have *identical* bags of words: content alone gives exactly chance,
    and any model that beats chance uses positions.

Common parameters: ``n_sequences``, ``n_positions`` ($n$, default 50, with the model width $d = 50$ the
setting of claim C5), ``vocab_size`` ($v$), ``min_length`` (lengths are uniform on
``[min_length, n_positions]``; default ``n_positions``: every sequence has length $n$), ``exponent``
($s$) and ``seed``. Positions at or beyond a sequence's length hold :data:`PAD` $= -1$; count with the
``lengths`` (as :meth:`SyntheticCorpus.counts` does), never on the padded array alone.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "FAMILIES", "PAD", "SyntheticCorpus", "zipf_distribution", "stationary", "drift", "regimes", "markov",
    "order_task", "make_corpus", "population_marginals", "markov_transition", "family_parameters", "planted_rank",
]

#: Padding value in :attr:`SyntheticCorpus.tokens` (outside every vocabulary, so it can never be counted).
PAD = -1
ORDER_KINDS = ("marker_order", "marker_position")


@dataclass(frozen=True)
class SyntheticCorpus:
    """Sampled sequences of a synthetic family, with the exact population marginals.

    Attributes
    ----------
    tokens : ndarray of shape (n_sequences, n_positions), int64
        Token ids; entries at or beyond ``lengths[r]`` are :data:`PAD`.
    lengths : ndarray of shape (n_sequences,), int64
    vocab_size : int
    family : str
    params : dict
        Every parameter used (after defaults), enough to regenerate the corpus.
    labels : ndarray of shape (n_sequences,), int64, or None
        Only for the ``"order"`` family.
    population : ndarray of shape (n_positions, vocab_size), float64
        The exact population marginals $\\mu_i$ (rows sum to 1).
    """

    tokens: np.ndarray
    lengths: np.ndarray
    vocab_size: int
    family: str
    params: dict = field(default_factory=dict)
    labels: np.ndarray | None = None
    population: np.ndarray | None = None

    @property
    def n_sequences(self) -> int:
        return int(self.tokens.shape[0])

    @property
    def n_positions(self) -> int:
        return int(self.tokens.shape[1])

    def sequences(self) -> list[np.ndarray]:
        """The sequences without padding, as a list of 1-D int64 arrays (views of :attr:`tokens`)."""
        return [row[:length] for row, length in zip(self.tokens, self.lengths)]

    def counts(self, n_positions: int | None = None):
        """Positional counts of the sample (:func:`posgeom.geometry.positional_counts`).

        Returns
        -------
        PositionalCounts
            ``counts`` of shape (n_positions, vocab_size).
        """
        from ..geometry import positional_counts

        n = self.n_positions if n_positions is None else n_positions
        return positional_counts(self.tokens, n, self.vocab_size, lengths=self.lengths)


# ---------------------------------------------------------------------------------------------
# validation and building blocks


def _int(name: str, value, lo: int, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer; got {value!r}")
    value = int(value)
    if value < lo or (hi is not None and value > hi):
        rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise ValueError(f"{name} must be {rng}; got {value}")
    return value


def _float(name: str, value, lo: float, hi: float | None = None, *, open_lo: bool = False) -> float:
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number; got {value!r}") from None
    bad = not np.isfinite(value) or value < lo or (open_lo and value == lo) or (hi is not None and value > hi)
    if bad:
        rng = f"{'>' if open_lo else '>='} {lo}" + ("" if hi is None else f" and <= {hi}")
        raise ValueError(f"{name} must be {rng}; got {value}")
    return value


def zipf_distribution(vocab_size: int, exponent: float = 1.0) -> np.ndarray:
    r"""Zipf's law over ranks: $\pi(r) \propto (r + 1)^{-s}$, $r = 0, \dots, v - 1$.

    Returns
    -------
    p : ndarray of shape (vocab_size,), float64, summing to 1, non-increasing.
    """
    v = _int("vocab_size", vocab_size, 1)
    s = _float("exponent", exponent, 0.0)
    # pi(r) = (r + 1)^(-s) / sum_q (q + 1)^(-s)
    p = np.arange(1, v + 1, dtype=np.float64) ** (-s)
    return p / p.sum()


def _permuted_zipf(size: int, exponent: float, rng: np.random.Generator) -> np.ndarray:
    """A Zipf distribution over ``size`` tokens whose ranks are a seeded permutation of the ids."""
    p = np.empty(size)
    p[rng.permutation(size)] = zipf_distribution(size, exponent)
    return p


def _length_probs(n: int, min_length: int | None) -> tuple[int, np.ndarray]:
    """``p(L)`` for ``L = 0..n`` (uniform on ``[min_length, n]``)."""
    lo = n if min_length is None else _int("min_length", min_length, 1, n)
    p = np.zeros(n + 1)
    p[lo:] = 1.0 / (n - lo + 1)
    return lo, p


def _sample(p: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` draws from the discrete law ``p`` by inverse CDF (zero-probability ids never come out)."""
    cdf = np.cumsum(p)
    cdf /= cdf[-1]
    # token = min{w : u < F(w)}, u ~ U[0, 1)
    out = np.searchsorted(cdf, rng.random(size), side="right")
    return np.minimum(out, p.size - 1).astype(np.int64)


def _sample_rows(P: np.ndarray, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw per entry of ``rows``, from the law ``P[rows[k]]`` (P of shape (m, v))."""
    cdf = np.cumsum(P, axis=1)
    cdf /= cdf[:, -1:]
    u = rng.random(rows.size)
    # token = number of w with F_row(w) <= u
    out = (cdf[rows] <= u[:, None]).sum(axis=1)
    return np.minimum(out, P.shape[1] - 1).astype(np.int64)


def _pad_beyond(tokens: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    tokens[np.arange(tokens.shape[1])[None, :] >= lengths[:, None]] = PAD
    return tokens


def _rngs(seed) -> tuple[np.random.Generator, np.random.Generator]:
    """Two independent streams: one for the distributions (population), one for the sample."""
    seed = _int("seed", seed, 0)
    return np.random.default_rng([seed, 0]), np.random.default_rng([seed, 1])


def _check_common(n_sequences, n_positions, vocab_size, min_length, *, min_vocab: int = 1):
    n_seq = _int("n_sequences", n_sequences, 1)
    n = _int("n_positions", n_positions, 1)
    v = _int("vocab_size", vocab_size, min_vocab)
    lo, p_len = _length_probs(n, min_length)
    return n_seq, n, v, lo, p_len


def _draw_lengths(n_seq: int, lo: int, n: int, rng: np.random.Generator) -> np.ndarray:
    return rng.integers(lo, n + 1, size=n_seq).astype(np.int64)


def _sample_positionwise(mu: np.ndarray, lengths: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Tokens drawn independently at each position ``i`` from ``mu[i]``; padding beyond each length."""
    n = mu.shape[0]
    tokens = np.empty((lengths.size, n), dtype=np.int64)
    for i in range(n):
        tokens[:, i] = _sample(mu[i], lengths.size, rng)
    return _pad_beyond(tokens, lengths)


# ---------------------------------------------------------------------------------------------
# stationary


def _stationary_population(n, v, exponent, rng_dist):
    pi = _permuted_zipf(v, exponent, rng_dist)
    # mu_i = pi for every i
    return np.tile(pi, (n, 1))


def stationary(
    n_sequences: int = 10_000,
    n_positions: int = 50,
    vocab_size: int = 100,
    *,
    exponent: float = 1.0,
    min_length: int | None = None,
    seed: int = 0,
) -> SyntheticCorpus:
    r"""Every position draws from the same Zipfian law $\pi$ ($\mu_i = \pi$; see the module docstring).

    Returns
    -------
    SyntheticCorpus
        ``tokens`` (n_sequences, n_positions), ``population`` (n_positions, vocab_size).
    """
    n_seq, n, v, lo, _ = _check_common(n_sequences, n_positions, vocab_size, min_length)
    rng_dist, rng = _rngs(seed)
    mu = _stationary_population(n, v, exponent, rng_dist)
    lengths = _draw_lengths(n_seq, lo, n, rng)
    tokens = _sample_positionwise(mu, lengths, rng)
    params = dict(n_sequences=n_seq, n_positions=n, vocab_size=v, exponent=float(exponent), min_length=lo, seed=seed)
    return SyntheticCorpus(tokens, lengths, v, "stationary", params, None, mu)


# ---------------------------------------------------------------------------------------------
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
        Pi[k, block] = _permuted_zipf(block.size, exponent, rng_dist)
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
        Radius of the path as a fraction of the largest one that keeps all weights valid; larger is a
        stronger drift.
    smoothness : float in (0, 1)
        Width of the blending bumps, in units of the spacing between anchors.

    Returns
    -------
    SyntheticCorpus
        ``params`` also holds ``"weights"`` (n_positions, K) and ``"anchors_pi"`` (K, vocab_size).
    """
    n_seq, n, v, lo, _ = _check_common(n_sequences, n_positions, vocab_size, min_length)
    K = _int("anchors", anchors, 3)
    if v < K:
        raise ValueError(f"vocab_size = {v} cannot hold {K} disjoint anchors; use vocab_size >= {K}")
    spread = _float("spread", spread, 0.0, 1.0, open_lo=True)
    smoothness = _float("smoothness", smoothness, 0.0, 1.0, open_lo=True)
    rng_dist, rng = _rngs(seed)
    mu, W, Pi = _drift_population(n, v, K, spread, smoothness, exponent, rng_dist)
    lengths = _draw_lengths(n_seq, lo, n, rng)
    tokens = _sample_positionwise(mu, lengths, rng)
    params = dict(
        n_sequences=n_seq, n_positions=n, vocab_size=v, anchors=K, spread=spread, smoothness=smoothness,
        exponent=float(exponent), min_length=lo, seed=seed, weights=W, anchors_pi=Pi,
    )
    return SyntheticCorpus(tokens, lengths, v, "drift", params, None, mu)


# ---------------------------------------------------------------------------------------------
# regimes


def _regime_laws(v, n_begin, n_end, exponent, rng_dist):
    begin = np.stack([_permuted_zipf(v, exponent, rng_dist) for _ in range(n_begin)]) if n_begin else np.zeros((0, v))
    middle = _permuted_zipf(v, exponent, rng_dist)
    end = np.stack([_permuted_zipf(v, exponent, rng_dist) for _ in range(n_end)]) if n_end else np.zeros((0, v))
    return begin, middle, end


def _regimes_population(n, p_len, begin, middle, end):
    n_begin, n_end = begin.shape[0], end.shape[0]
    v = middle.size
    mu = np.zeros((n, v))
    for i in range(n):
        total = 0.0
        for L in range(i + 1, n + 1):
            if p_len[L] == 0:
                continue
            if i < n_begin:
                law = begin[i]
            elif L - 1 - i < n_end:
                law = end[L - 1 - i]
            else:
                law = middle
            # mu_i = sum_{L > i} p(L) mu_i^(L) / sum_{L > i} p(L)
            mu[i] += p_len[L] * law
            total += p_len[L]
        mu[i] /= total
    return mu


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
    r"""Beginning / middle / end regimes with variable lengths (see the module docstring).

    Parameters
    ----------
    n_begin, n_end : int
        Positions with their own opening laws and closing laws (counted from each sequence's end);
        ``min_length >= n_begin + n_end``.
    min_length : int
        Lengths are uniform on ``[min_length, n_positions]`` (default 25, half of the default $n$).

    Returns
    -------
    SyntheticCorpus
        ``tokens`` (n_sequences, n_positions), ``population`` (n_positions, vocab_size).
    """
    n_seq, n, v, lo, p_len = _check_common(n_sequences, n_positions, vocab_size, min_length)
    nb = _int("n_begin", n_begin, 0, n)
    ne = _int("n_end", n_end, 0, n)
    if lo < nb + ne:
        raise ValueError(
            f"min_length = {lo} is shorter than n_begin + n_end = {nb + ne}: the regimes would overlap; "
            f"use min_length >= {nb + ne}"
        )
    rng_dist, rng = _rngs(seed)
    begin, middle, end = _regime_laws(v, nb, ne, exponent, rng_dist)
    mu = _regimes_population(n, p_len, begin, middle, end)
    lengths = _draw_lengths(n_seq, lo, n, rng)
    tokens = _sample_positionwise(np.tile(middle, (n, 1)), lengths, rng)
    rows = np.arange(n_seq)
    for j in range(ne):  # closing law j sits at position L - 1 - j
        pos = lengths - 1 - j
        tokens[rows, pos] = _sample(end[j], n_seq, rng)
    for j in range(nb):  # openings overwrite (precedence), only where the sequence reaches j
        draw = _sample(begin[j], n_seq, rng)
        tokens[:, j] = np.where(lengths > j, draw, PAD)
    params = dict(
        n_sequences=n_seq, n_positions=n, vocab_size=v, n_begin=nb, n_end=ne, exponent=float(exponent),
        min_length=lo, seed=seed,
    )
    return SyntheticCorpus(tokens, lengths, v, "regimes", params, None, mu)


# ---------------------------------------------------------------------------------------------
# markov


def _cyclic_zipf(v: int, exponent: float) -> np.ndarray:
    r"""$\pi(w) \propto (1 + \min(w, v - w))^{-s}$: Zipfian in the cyclic distance to token 0."""
    w = np.arange(v)
    p = (1.0 + np.minimum(w, v - w)) ** (-float(exponent))
    return p / p.sum()


def markov_transition(pi, stay: float = 0.5) -> np.ndarray:
    r"""Lazy Metropolis walk on the cycle $\mathbb Z_v$ with stationary law ``pi``.

    From state $a$: stay with probability ``stay``; otherwise propose $b = a \pm 1 \pmod v$ (each with
    probability 1/2) and accept with probability $\min(1, \pi(b)/\pi(a))$. The proposal is symmetric, so
    detailed balance $\pi(a) T(a, b) = \pi(b) T(b, a)$ holds and $\pi T = \pi$.

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
    stay = _float("stay", stay, 0.0, 1.0)
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
    r"""Shift-invariant Markov chain started at stationarity (see the module docstring).

    Parameters
    ----------
    vocab_size : int, optional
        $v \ge 3$; default ``n_positions``, which makes the population distance matrix circulant.
    step : int
        Shift $s$ of the token frame per position.
    stay : float in [0, 1]
        Laziness of the walk (larger: stronger correlation between neighbouring tokens).

    Returns
    -------
    SyntheticCorpus
        ``params`` also holds ``"pi"`` (v,) and ``"transition"`` (v, v).
    """
    v_default = n_positions if vocab_size is None else vocab_size
    n_seq, n, v, lo, _ = _check_common(n_sequences, n_positions, v_default, min_length, min_vocab=3)
    step = _int("step", step, 0)
    rng_dist, rng = _rngs(seed)
    mu, pi = _markov_population(n, v, exponent, step)
    T = markov_transition(pi, stay)
    lengths = _draw_lengths(n_seq, lo, n, rng)
    z = np.empty((n_seq, n), dtype=np.int64)
    # z_0 ~ pi (stationary start), z_{i+1} ~ T(z_i, .)
    z[:, 0] = _sample(pi, n_seq, rng)
    for i in range(1, n):
        z[:, i] = _sample_rows(T, z[:, i - 1], rng)
    # x_i = (z_i + s i) mod v
    tokens = (z + step * np.arange(n)[None, :]) % v
    tokens = _pad_beyond(tokens, lengths)
    params = dict(
        n_sequences=n_seq, n_positions=n, vocab_size=v, step=step, stay=float(stay), exponent=float(exponent),
        min_length=lo, seed=seed, pi=pi, transition=T,
    )
    return SyntheticCorpus(tokens, lengths, v, "markov", params, None, mu)


# ---------------------------------------------------------------------------------------------
# order-sensitive labelled tasks


def _allowed_positions(L: int, kind: str) -> np.ndarray:
    """Positions a marker may take in a sequence of length L (marker_position excludes an odd middle)."""
    pos = np.arange(L)
    if kind == "marker_position" and L % 2 == 1:
        pos = pos[pos != (L - 1) // 2]
    return pos


def _order_population(n, v, p_len, kind, exponent):
    filler = np.zeros(v)
    filler[: v - 2] = zipf_distribution(v - 2, exponent)
    A, B = v - 2, v - 1
    mu = np.zeros((n, v))
    for i in range(n):
        total = 0.0
        for L in range(i + 1, n + 1):
            if p_len[L] == 0:
                continue
            law = np.zeros(v)
            allowed = _allowed_positions(L, kind)
            if kind == "marker_order":
                # one A and one B at two distinct uniform positions: P(x_i = A | L) = P(x_i = B | L) = 1/L
                law[A] = law[B] = 1.0 / L
                law += (1.0 - 2.0 / L) * filler
            else:
                pa = 1.0 / allowed.size if i in allowed else 0.0
                law[A] = pa
                law += (1.0 - pa) * filler
            mu[i] += p_len[L] * law
            total += p_len[L]
        mu[i] /= total
    return mu


def order_task(
    n_sequences: int = 10_000,
    n_positions: int = 50,
    vocab_size: int = 100,
    *,
    kind: str = "marker_order",
    balanced: bool = True,
    exponent: float = 1.0,
    min_length: int | None = None,
    seed: int = 0,
) -> SyntheticCorpus:
    r"""Order-sensitive labelled task (Theorems 1 and 4); see the module docstring.

    Parameters
    ----------
    kind : {"marker_order", "marker_position"}
    balanced : bool
        Rows come in pairs (``2k``, ``2k + 1``), the second the reversal of the first with the opposite
        label: the bags of words of the two classes are identical (``n_sequences`` must be even).

    Returns
    -------
    SyntheticCorpus
        ``labels`` (n_sequences,) in {0, 1}; ``params["markers"] = (A, B)`` = ``(v - 2, v - 1)``.
    """
    if kind not in ORDER_KINDS:
        raise ValueError(f"unknown order task kind {kind!r}; valid kinds are {', '.join(ORDER_KINDS)}")
    n_seq, n, v, lo, p_len = _check_common(n_sequences, n_positions, vocab_size, min_length, min_vocab=3)
    if lo < 2:
        raise ValueError(f"order tasks need sequences of length >= 2; got min_length = {lo}")
    if balanced and n_seq % 2:
        raise ValueError(f"balanced=True pairs every sequence with its reversal: n_sequences must be even, got {n_seq}")
    A, B = v - 2, v - 1
    _, rng = _rngs(seed)
    filler = zipf_distribution(v - 2, exponent)
    m = n_seq // 2 if balanced else n_seq
    lengths = _draw_lengths(m, lo, n, rng)
    tokens = _sample(filler, m * n, rng).reshape(m, n)
    rows = np.arange(m)
    if kind == "marker_order":
        # two distinct uniform positions: p_a uniform on [0, L), p_b uniform on [0, L) \ {p_a}
        p_a = (rng.random(m) * lengths).astype(np.int64)
        p_b = (rng.random(m) * (lengths - 1)).astype(np.int64)
        p_b += p_b >= p_a
        tokens[rows, p_a] = A
        tokens[rows, p_b] = B
        labels = (p_a < p_b).astype(np.int64)
    else:
        n_allowed = lengths - (lengths % 2)  # an odd length loses its middle position
        k = (rng.random(m) * n_allowed).astype(np.int64)
        middle = (lengths - 1) // 2
        p_a = k + ((lengths % 2 == 1) & (k >= middle))
        tokens[rows, p_a] = A
        # label = 1 iff p < (L - 1) / 2 (first half)
        labels = (2 * p_a < lengths - 1).astype(np.int64)
    tokens = _pad_beyond(tokens, lengths)
    if balanced:
        # the twin of row r: its first L tokens reversed, label flipped
        twins = np.full_like(tokens, PAD)
        idx = lengths[:, None] - 1 - np.arange(n)[None, :]
        valid = idx >= 0
        twins[valid] = tokens[np.broadcast_to(rows[:, None], idx.shape)[valid], idx[valid]]
        tokens = np.stack([tokens, twins], axis=1).reshape(n_seq, n)
        labels = np.stack([labels, 1 - labels], axis=1).reshape(n_seq)
        lengths = np.repeat(lengths, 2)
    mu = _order_population(n, v, p_len, kind, exponent)
    params = dict(
        n_sequences=n_seq, n_positions=n, vocab_size=v, kind=kind, balanced=bool(balanced), exponent=float(exponent),
        min_length=lo, seed=seed, markers=(A, B),
    )
    return SyntheticCorpus(tokens, lengths, v, "order", params, labels, mu)


# ---------------------------------------------------------------------------------------------
# planted rank (validation of the noise-aware rank)


def planted_rank(
    n_sequences: int = 10_000,
    n_positions: int = 50,
    vocab_size: int = 100,
    *,
    rank: int = 3,
    strength: float = 0.5,
    exponent: float = 1.0,
    min_length: int | None = None,
    seed: int = 0,
) -> SyntheticCorpus:
    r"""Positions in ``rank + 1`` contiguous blocks, each block with its own law: population rank exactly ``rank``.

    Block $b$ draws from $\mu_b = (1 - s)\,\pi_0 + s\,\pi_b$, with $\pi_0, \pi_1, \dots$ permuted Zipf laws
    and $s$ = ``strength``; the ``rank + 1`` distinct root-marginals are affinely independent (almost
    surely), so the centred Gram matrix has rank ``rank``. A smaller ``strength`` is a weaker signal for
    the same sampling noise. Not one of :data:`FAMILIES` (a validation corpus, not a model of text).

    Parameters
    ----------
    rank : int
        $r \ge 1$, at most ``n_positions - 1``.
    strength : float in (0, 1]

    Returns
    -------
    SyntheticCorpus
        ``params`` also holds ``"blocks"`` (n_positions,), the block of every position.
    """
    n_seq, n, v, lo, _ = _check_common(n_sequences, n_positions, vocab_size, min_length, min_vocab=2)
    r = _int("rank", rank, 1, n - 1)
    s = _float("strength", strength, 0.0, 1.0, open_lo=True)
    rng_dist, rng = _rngs(seed)
    base = _permuted_zipf(v, exponent, rng_dist)
    laws = np.stack([_permuted_zipf(v, exponent, rng_dist) for _ in range(r + 1)])
    blocks = np.concatenate([np.full(part.size, b) for b, part in enumerate(np.array_split(np.arange(n), r + 1))])
    # mu_i = (1 - s) pi_0 + s pi_block(i)
    mu = (1.0 - s) * base[None, :] + s * laws[blocks]
    lengths = _draw_lengths(n_seq, lo, n, rng)
    tokens = _sample_positionwise(mu, lengths, rng)
    params = dict(n_sequences=n_seq, n_positions=n, vocab_size=v, rank=r, strength=s, exponent=float(exponent),
                  min_length=lo, seed=seed, blocks=blocks)
    return SyntheticCorpus(tokens, lengths, v, "planted_rank", params, None, mu)


# ---------------------------------------------------------------------------------------------
# registry, dispatch and population marginals

#: Family name → generator function.
FAMILIES = {"stationary": stationary, "drift": drift, "regimes": regimes, "markov": markov, "order": order_task}


def family_parameters(family: str) -> dict:
    """The keyword parameters of a family's generator and their defaults."""
    fn = _family(family)
    return {k: p.default for k, p in inspect.signature(fn).parameters.items()}


def _family(family: str):
    if family not in FAMILIES:
        raise ValueError(f"unknown synthetic family {family!r}; valid families are {', '.join(FAMILIES)}")
    return FAMILIES[family]


def _check_params(family: str, params: dict, *, drop: tuple[str, ...] = ()) -> None:
    valid = [k for k in family_parameters(family) if k not in drop]
    bad = sorted(set(params) - set(valid))
    if bad:
        raise ValueError(
            f"unknown parameter(s) {', '.join(bad)} for synthetic family {family!r}; valid: {', '.join(valid)}"
        )


def make_corpus(family: str, **params) -> SyntheticCorpus:
    """Generate a corpus of the named family (``FAMILIES``) with the given parameters.

    Returns
    -------
    SyntheticCorpus
    """
    fn = _family(family)
    _check_params(family, params)
    return fn(**params)


def population_marginals(family: str, **params) -> np.ndarray:
    r"""The exact population marginals $\mu_i$ of a family, without sampling.

    Takes the same parameters as the family's generator (``n_sequences`` is not needed) and returns what
    its ``population`` attribute holds.

    Returns
    -------
    mu : ndarray of shape (n_positions, vocab_size), rows summing to 1.
    """
    _family(family)
    _check_params(family, params, drop=("n_sequences",))
    defaults = family_parameters(family)
    p = {**{k: v for k, v in defaults.items() if k != "n_sequences"}, **params}
    if family == "markov" and p["vocab_size"] is None:
        p["vocab_size"] = p["n_positions"]
    # Validate like the generator, building the distributions from the same seeded stream.
    min_vocab = 3 if family in ("markov", "order") else 1
    _, n, v, lo, p_len = _check_common(1, p["n_positions"], p["vocab_size"], p["min_length"], min_vocab=min_vocab)
    rng_dist, _ = _rngs(p["seed"])
    if family == "stationary":
        return _stationary_population(n, v, p["exponent"], rng_dist)
    if family == "drift":
        K = _int("anchors", p["anchors"], 3)
        if v < K:
            raise ValueError(f"vocab_size = {v} cannot hold {K} disjoint anchors; use vocab_size >= {K}")
        spread = _float("spread", p["spread"], 0.0, 1.0, open_lo=True)
        smoothness = _float("smoothness", p["smoothness"], 0.0, 1.0, open_lo=True)
        return _drift_population(n, v, K, spread, smoothness, p["exponent"], rng_dist)[0]
    if family == "regimes":
        nb, ne = _int("n_begin", p["n_begin"], 0, n), _int("n_end", p["n_end"], 0, n)
        if lo < nb + ne:
            raise ValueError(
                f"min_length = {lo} is shorter than n_begin + n_end = {nb + ne}; use min_length >= {nb + ne}"
            )
        begin, middle, end = _regime_laws(v, nb, ne, p["exponent"], rng_dist)
        return _regimes_population(n, p_len, begin, middle, end)
    if family == "markov":
        return _markov_population(n, v, p["exponent"], _int("step", p["step"], 0))[0]
    if p["kind"] not in ORDER_KINDS:
        raise ValueError(f"unknown order task kind {p['kind']!r}; valid kinds are {', '.join(ORDER_KINDS)}")
    if lo < 2:  # as order_task: below length 2 the two markers do not fit and the mixture goes negative
        raise ValueError(f"order tasks need sequences of length >= 2; got min_length = {lo}")
    return _order_population(n, v, p_len, p["kind"], p["exponent"])
