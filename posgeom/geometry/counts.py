r"""Positional counts $c_i(w) = \#\{x : L > i,\ x_i = w\}$ and reaches $N_i = \sum_w c_i(w)$.

Padding is never counted; a sequence longer than $n$ contributes its first $n$ tokens. The counts, a sparse
CSR $(n, v)$ matrix, add up shard by shard. The special-token policy is applied where the sequences are built
(:mod:`posgeom.corpora`); ``ignore_ids`` leaves ids uncounted, every other token keeping its position.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral

import numpy as np
import scipy.sparse as sp

__all__ = ["PositionalCounts"]


class PositionalCounts:
    r"""Counts $c_i(w)$ and reaches $N_i$ of a corpus at its first ``n_positions`` positions.

    ``a + b`` adds the counts of two disjoint shards (same shape and ``ignore_ids``); ``sum()`` works.

    Attributes
    ----------
    counts : scipy.sparse.csr_matrix of shape (n_positions, vocab_size), int64
        ``counts[i, w]`` $= c_i(w)$.
    reach : ndarray of shape (n_positions,), int64
        $N_i = \sum_w c_i(w)$, the number of sequences whose position ``i`` was counted.
    n_positions, vocab_size, n_sequences : int
        $n$, $v$ and the sequences counted (including empty ones and ones shorter than ``n_positions``).
    ignore_ids : tuple of int
        Token ids that were not counted.
    """

    __slots__ = ("counts", "reach", "n_positions", "vocab_size", "n_sequences", "ignore_ids")
    __hash__ = None  # mutable container semantics; equality is by value

    def __init__(self, counts, n_sequences: int, ignore_ids: Sequence[int] = (), *, _trusted: bool = False):
        if not _trusted:  # counts built here are already canonical int64 CSR
            counts = sp.csr_matrix(counts)
            if counts.dtype != np.int64:
                if not np.issubdtype(counts.dtype, np.integer):
                    raise ValueError(f"counts must hold integers; got dtype {counts.dtype}")
                counts = counts.astype(np.int64)
            counts.sum_duplicates()
            counts.eliminate_zeros()
            if counts.nnz and counts.data.min() < 0:
                raise ValueError("counts must be non-negative")
        self.counts = counts
        self.n_positions, self.vocab_size = (int(s) for s in counts.shape)
        # N_i = sum_w c_i(w)
        self.reach = np.asarray(counts.sum(axis=1), dtype=np.int64).ravel()
        self.n_sequences = int(n_sequences)
        if self.reach.size and self.n_sequences < int(self.reach.max()):
            raise ValueError(
                f"n_sequences = {self.n_sequences} is smaller than the largest reach {int(self.reach.max())}"
            )
        self.ignore_ids = check_ignore_ids(ignore_ids)

    @classmethod
    def from_canonical(cls, counts: sp.csr_matrix, n_sequences: int,
                       ignore_ids: Sequence[int] = ()) -> "PositionalCounts":
        """Wrap a canonical (n, v) int64 CSR matrix from the counting engine without checking it again."""
        return cls(counts, n_sequences, ignore_ids, _trusted=True)

    @classmethod
    def from_array(cls, counts, n_sequences: int | None = None) -> "PositionalCounts":
        """Wrap an (n, v) array of non-negative integer counts (``n_sequences`` defaults to ``max_i N_i``)."""
        if sp.issparse(counts):
            mat = sp.csr_matrix(counts)
        else:
            arr = np.asarray(counts)
            if arr.ndim != 2:
                raise ValueError(f"counts must be 2-D (n_positions, vocab_size); got shape {arr.shape}")
            if not np.issubdtype(arr.dtype, np.integer):
                raise ValueError(f"counts must hold integers; got dtype {arr.dtype}")
            if arr.size and arr.min() < 0:
                raise ValueError("counts must be non-negative")
            mat = sp.csr_matrix(arr.astype(np.int64))
        if n_sequences is None:
            n_sequences = int(np.asarray(mat.sum(axis=1)).max()) if mat.shape[0] else 0
        return cls(mat, n_sequences)

    def __add__(self, other):
        if isinstance(other, Integral) and other == 0:
            return self
        if not isinstance(other, PositionalCounts):
            return NotImplemented
        if (self.n_positions, self.vocab_size) != (other.n_positions, other.vocab_size):
            raise ValueError(
                "cannot add counts of different shapes: "
                f"(n_positions, vocab_size) = {(self.n_positions, self.vocab_size)} vs "
                f"{(other.n_positions, other.vocab_size)}; count every shard with the same n and v"
            )
        if self.ignore_ids != other.ignore_ids:
            raise ValueError(
                f"cannot add counts made with different ignore_ids ({self.ignore_ids} vs {other.ignore_ids})"
            )
        return PositionalCounts(
            self.counts + other.counts, self.n_sequences + other.n_sequences, self.ignore_ids, _trusted=True
        )

    __radd__ = __add__

    def __eq__(self, other):
        if not isinstance(other, PositionalCounts):
            return NotImplemented
        return (
            (self.n_positions, self.vocab_size, self.n_sequences, self.ignore_ids)
            == (other.n_positions, other.vocab_size, other.n_sequences, other.ignore_ids)
            and (self.counts != other.counts).nnz == 0
        )

    def __repr__(self):
        return (
            f"PositionalCounts(n_positions={self.n_positions}, vocab_size={self.vocab_size}, "
            f"n_sequences={self.n_sequences}, tokens={int(self.reach.sum())}, nnz={self.counts.nnz})"
        )


def check_ignore_ids(ignore_ids) -> tuple[int, ...]:
    """``ignore_ids`` as a sorted tuple of distinct ints; a non-integer id is an error, never truncated."""
    ids = []
    for t in ignore_ids:
        if isinstance(t, (bool, np.bool_)) or not isinstance(t, (Integral, np.integer)):
            raise ValueError(f"ignore_ids must hold integer token ids; got {t!r} ({type(t).__name__})")
        ids.append(int(t))
    return tuple(sorted(set(ids)))
