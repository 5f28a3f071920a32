"""What every synthetic family shares: the corpus type, Zipf laws, seeded streams and the samplers.

Two seeded streams per corpus (:func:`seeded_streams`), so the population never depends on the sample size.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...validation import check_int, check_real

__all__ = ["PAD", "SyntheticCorpus", "zipf_distribution"]

#: Padding value in :attr:`SyntheticCorpus.tokens` (outside every vocabulary, so it can never be counted).
PAD = -1


@dataclass(frozen=True)
class SyntheticCorpus:
    r"""Sampled sequences of a synthetic family, with the exact population marginals.

    Attributes
    ----------
    tokens : ndarray of shape (n_sequences, n_positions), int64
        Token ids; entries at or beyond ``lengths[r]`` are :data:`PAD`.
    lengths : ndarray of shape (n_sequences,), int64
    params : dict
        Every parameter used (after defaults), enough to regenerate the corpus.
    labels : ndarray of shape (n_sequences,), int64, or None
        Only for the ``"order"`` family.
    population : ndarray of shape (n_positions, vocab_size), float64
        The exact population marginals $\mu_i$ (rows sum to 1).
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
        """Positional counts of the sample, ``counts`` of shape (n_positions, vocab_size)."""
        from ...geometry import positional_counts
        n = self.n_positions if n_positions is None else n_positions
        return positional_counts(self.tokens, n, self.vocab_size, lengths=self.lengths)


def zipf_distribution(vocab_size: int, exponent: float = 1.0) -> np.ndarray:
    r"""Zipf's law over ranks: $\pi(r) \propto (r + 1)^{-s}$, $r = 0, \dots, v - 1$.

    Parameters
    ----------
    vocab_size : int
        $v \ge 1$.
    exponent : float
        $s \ge 0$ (1: Zipf's law; 0: uniform).

    Returns
    -------
    p : ndarray of shape (vocab_size,), float64, summing to 1, non-increasing.
    """
    v = check_int(vocab_size, "vocab_size", 1)
    s = check_real(exponent, "exponent", 0.0)
    # pi(r) = (r + 1)^(-s) / sum_q (q + 1)^(-s)
    p = np.arange(1, v + 1, dtype=np.float64) ** (-s)
    return p / p.sum()


def permuted_zipf(size: int, exponent: float, rng: np.random.Generator) -> np.ndarray:
    """A Zipf distribution over ``size`` tokens whose ranks are a seeded permutation of the ids."""
    p = np.empty(size)
    p[rng.permutation(size)] = zipf_distribution(size, exponent)
    return p


def length_probs(n: int, min_length: int | None) -> tuple[int, np.ndarray]:
    """``p(L)`` for ``L = 0..n`` (uniform on ``[min_length, n]``)."""
    lo = n if min_length is None else check_int(min_length, "min_length", 1, n)
    p = np.zeros(n + 1)
    p[lo:] = 1.0 / (n - lo + 1)
    return lo, p


def sample_law(p: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` draws from the discrete law ``p`` by inverse CDF (zero-probability ids never come out)."""
    cdf = np.cumsum(p)
    cdf /= cdf[-1]
    # token = min{w : u < F(w)}, u ~ U[0, 1)
    out = np.searchsorted(cdf, rng.random(size), side="right")
    return np.minimum(out, p.size - 1).astype(np.int64)


def sample_rows(P: np.ndarray, rows: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One draw per entry of ``rows``, from the law ``P[rows[k]]`` (P of shape (m, v))."""
    cdf = np.cumsum(P, axis=1)
    cdf /= cdf[:, -1:]
    u = rng.random(rows.size)
    # token = number of w with F_row(w) <= u
    out = (cdf[rows] <= u[:, None]).sum(axis=1)
    return np.minimum(out, P.shape[1] - 1).astype(np.int64)


def pad_beyond(tokens: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``tokens`` (b, n) with :data:`PAD` at every position ``i >= lengths[r]`` of row ``r`` (in place)."""
    tokens[np.arange(tokens.shape[1])[None, :] >= lengths[:, None]] = PAD
    return tokens


def seeded_streams(seed) -> tuple[np.random.Generator, np.random.Generator]:
    """Two independent streams: one for the distributions (population), one for the sample."""
    seed = check_int(seed, "seed", 0)
    return np.random.default_rng([seed, 0]), np.random.default_rng([seed, 1])


def check_common(n_sequences, n_positions, vocab_size, min_length, *, min_vocab: int = 1):
    """The common parameters, validated: ``(n_sequences, n, v, min_length, p_len)``, ``p_len`` (n + 1,)."""
    n_seq = check_int(n_sequences, "n_sequences", 1)
    n = check_int(n_positions, "n_positions", 1)
    v = check_int(vocab_size, "vocab_size", min_vocab)
    lo, p_len = length_probs(n, min_length)
    return n_seq, n, v, lo, p_len


def draw_lengths(n_seq: int, lo: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n_seq`` lengths uniform on ``[lo, n]``, shape (n_seq,), int64."""
    return rng.integers(lo, n + 1, size=n_seq).astype(np.int64)


def sample_positionwise(mu: np.ndarray, lengths: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Tokens drawn independently at each position ``i`` from ``mu[i]``; padding beyond each length."""
    n = mu.shape[0]
    tokens = np.empty((lengths.size, n), dtype=np.int64)
    for i in range(n):
        tokens[:, i] = sample_law(mu[i], lengths.size, rng)
    return pad_beyond(tokens, lengths)


def positionwise_corpus(name: str, mu: np.ndarray, rng: np.random.Generator, **params) -> SyntheticCorpus:
    """A corpus whose positions draw independently from the rows of ``mu`` (n, v), with lengths uniform on
    ``[params["min_length"], n]``; ``params`` are stored as given, in their order."""
    n, v = mu.shape
    lengths = draw_lengths(params["n_sequences"], params["min_length"], n, rng)
    tokens = sample_positionwise(mu, lengths, rng)
    return SyntheticCorpus(tokens, lengths, v, name, params, None, mu)


def length_mixture(n: int, v: int, p_len: np.ndarray, law) -> np.ndarray:
    r"""The population marginals of variable lengths: $\mu_i = \sum_{L > i} p(L)\,\mu_i^{(L)} / \sum_{L > i} p(L)$,
    with ``law(i, L)`` the law $\mu_i^{(L)}$ (v,) at position ``i`` of a sequence of length ``L``; shape (n, v)."""
    mu = np.zeros((n, v))
    for i in range(n):
        total = 0.0
        for L in range(i + 1, n + 1):
            if p_len[L] == 0:
                continue
            mu[i] += p_len[L] * law(i, L)
            total += p_len[L]
        mu[i] /= total
    return mu
