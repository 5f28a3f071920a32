r"""Positional marginals $\mu_i(w) = (c_i(w) + \alpha) / (N_i + \alpha v)$, $\alpha \ge 0$ (default 0).

Positions with $N_i <$ ``min_count`` are dropped and reported, or rejected; never silently kept. ``probs`` is
dense. The special-token policy is applied where the sequences are built, so there is no ``special=`` here.
"""

from __future__ import annotations

import numpy as np

from ..validation import check_choice, check_int, check_real
from .counts import PositionalCounts

__all__ = ["PositionalMarginals", "positional_marginals"]


class PositionalMarginals:
    r"""Marginals $\mu_i = (c_i + \alpha) / (N_i + \alpha v)$ of the kept positions.

    Attributes
    ----------
    probs : ndarray of shape (n_kept, v), float64
        Row ``k`` is $\mu_{i_k}$ for position ``i_k = positions[k]``; each row sums to 1.
    positions : ndarray of shape (n_kept,), int64
        The kept position indices, increasing.
    dropped : list of int
        Positions with $N_i <$ ``min_count`` that were dropped.
    reach : ndarray of shape (n_kept,), int64
        $N_i$ of the kept positions.
    alpha, min_count :
        The smoothing and the threshold used.
    counts : PositionalCounts or None
        The counts these marginals came from (kept for the noise floor), when built from counts.
    """

    __slots__ = ("probs", "positions", "dropped", "reach", "alpha", "min_count", "counts")

    def __init__(self, probs, positions, dropped, reach, alpha, min_count, counts=None):
        self.probs = probs
        self.positions = np.asarray(positions, dtype=np.int64)
        self.dropped = list(dropped)
        self.reach = np.asarray(reach, dtype=np.int64)
        self.alpha = float(alpha)
        self.min_count = int(min_count)
        self.counts = counts

    @property
    def n_positions(self) -> int:
        """Number of kept positions."""
        return int(self.probs.shape[0])

    @property
    def vocab_size(self) -> int:
        return int(self.probs.shape[1])

    def __repr__(self):
        return (
            f"PositionalMarginals(n_kept={self.n_positions}, vocab_size={self.vocab_size}, "
            f"dropped={len(self.dropped)}, alpha={self.alpha})"
        )


def positional_marginals(
    counts: PositionalCounts,
    alpha: float = 0.0,
    min_count: int = 1,
    on_low_count: str = "drop",
) -> PositionalMarginals:
    r"""$\mu_i = (c_i + \alpha) / (N_i + \alpha v)$ for every position with $N_i \ge$ ``min_count``.

    Parameters
    ----------
    counts : PositionalCounts
        Of shape (n, v); ``alpha`` (default 0) the additive smoothing $\alpha \ge 0$.
    min_count : int, default 1
        Positions with $N_i <$ ``min_count`` (>= 1: an unreached position has no distribution) are low-count.
    on_low_count : {"drop", "raise"}
        ``"drop"``: remove them and list them in ``dropped``; ``"raise"``: a ``ValueError`` listing them.
    """
    if not isinstance(counts, PositionalCounts):
        raise ValueError(
            f"counts must be a PositionalCounts (from positional_counts); got {type(counts).__name__}. "
            "Wrap an (n, v) integer array with PositionalCounts.from_array"
        )
    check_real(alpha, "alpha", 0.0)
    check_int(min_count, "min_count", 1)
    check_choice(on_low_count, "on_low_count", ("drop", "raise"), plural="values")
    low = np.flatnonzero(counts.reach < min_count)
    if low.size and on_low_count == "raise":
        shown = ", ".join(str(int(i)) for i in low[:20]) + (" ..." if low.size > 20 else "")
        raise ValueError(
            f"{low.size} position(s) have fewer than min_count = {min_count} sequences: [{shown}]. "
            "Lower min_count, count a larger corpus, reduce n_positions, or use on_low_count='drop'"
        )
    kept = np.flatnonzero(counts.reach >= min_count)
    if kept.size == 0:
        raise ValueError(f"no position is reached by at least min_count = {min_count} sequences")
    v = counts.vocab_size
    sub = counts.counts[kept]
    reach = counts.reach[kept]
    # mu_i = (c_i + alpha) / (N_i + alpha v), numerator and denominator divided by s = max(1, alpha) so
    # that a huge alpha cannot overflow alpha v (mu then tends to the uniform 1 / v, as it should)
    s = max(1.0, float(alpha))
    probs = np.full((kept.size, v), float(alpha) / s, dtype=np.float64)
    rows = np.repeat(np.arange(kept.size), np.diff(sub.indptr))
    probs[rows, sub.indices] += sub.data / s
    probs /= (reach.astype(np.float64) / s + (float(alpha) / s) * v)[:, None]
    return PositionalMarginals(probs, kept, [int(i) for i in low], reach, alpha, min_count, counts=counts)
