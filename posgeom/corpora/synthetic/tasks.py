r"""Labelled and validation corpora: the order-sensitive task of Theorems 1 and 4 (:func:`order_task`, the
``"order"`` family) and the planted-rank corpus that validates the noise-aware rank (:func:`planted_rank`)."""

from __future__ import annotations

import numpy as np

from ...validation import check_choice, check_int, check_real
from ..identifiers import SyntheticFamily
from .sampling import (
    PAD, SyntheticCorpus, check_common, draw_lengths, length_mixture, pad_beyond, permuted_zipf, positionwise_corpus,
    sample_law, seeded_streams, zipf_distribution,
)

__all__ = ["ORDER_KINDS", "order_task", "planted_rank"]

#: The kinds of order task (:func:`order_task`).
ORDER_KINDS = ("marker_order", "marker_position")


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

    def law_at(i: int, L: int) -> np.ndarray:
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
        return law

    return length_mixture(n, v, p_len, law_at)


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
    r"""Order-sensitive labelled task (Theorems 1 and 4).

    Parameters
    ----------
    kind : {"marker_order", "marker_position"}
    balanced : bool
        Rows come in pairs, the second the reversal of the first with the opposite label
        (``n_sequences`` must be even).

    Returns
    -------
    SyntheticCorpus
        ``labels`` (n_sequences,) in {0, 1}; ``params["markers"] = (A, B)`` = ``(v - 2, v - 1)``.
    """
    check_choice(kind, "order task kind", ORDER_KINDS, plural="kinds")
    n_seq, n, v, lo, p_len = check_common(n_sequences, n_positions, vocab_size, min_length, min_vocab=3)
    if lo < 2:  # the two markers do not fit (and the population mixture goes negative)
        raise ValueError(f"order tasks need sequences of length >= 2; got min_length = {lo}")
    if balanced and n_seq % 2:
        raise ValueError(f"balanced=True pairs every sequence with its reversal: n_sequences must be even, got {n_seq}")
    A, B = v - 2, v - 1
    _, rng = seeded_streams(seed)
    filler = zipf_distribution(v - 2, exponent)
    m = n_seq // 2 if balanced else n_seq
    lengths = draw_lengths(m, lo, n, rng)
    tokens = sample_law(filler, m * n, rng).reshape(m, n)
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
    tokens = pad_beyond(tokens, lengths)
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
    return SyntheticCorpus(tokens, lengths, v, SyntheticFamily.ORDER, params, labels, mu)


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

    Block $b$ draws from $\mu_b = (1 - s)\,\pi_0 + s\,\pi_b$ (permuted Zipf laws, $s$ = ``strength``), whose
    root-marginals are affinely independent almost surely. A validation corpus, not one of :data:`FAMILIES`.

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
    n_seq, n, v, lo, _ = check_common(n_sequences, n_positions, vocab_size, min_length, min_vocab=2)
    r = check_int(rank, "rank", 1, n - 1)
    s = check_real(strength, "strength", 0.0, 1.0, open_lo=True)
    rng_dist, rng = seeded_streams(seed)
    base = permuted_zipf(v, exponent, rng_dist)
    laws = np.stack([permuted_zipf(v, exponent, rng_dist) for _ in range(r + 1)])
    blocks = np.concatenate([np.full(part.size, b) for b, part in enumerate(np.array_split(np.arange(n), r + 1))])
    # mu_i = (1 - s) pi_0 + s pi_block(i)
    mu = (1.0 - s) * base[None, :] + s * laws[blocks]
    return positionwise_corpus("planted_rank", mu, rng, n_sequences=n_seq, n_positions=n, vocab_size=v, rank=r,
                               strength=s, exponent=float(exponent), min_length=lo, seed=seed, blocks=blocks)
