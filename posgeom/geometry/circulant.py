r"""How close a distance matrix comes to the circulant picture (claim C4), with bootstrap intervals.

For circulant distances $d_{ij} = g((i - j) \bmod n)$, $B = -\frac12 J D^{(2)} J$ is diagonalised by the
Fourier pairs $\cos(2\pi f i / n)$, $\sin(2\pi f i / n)$: classical MDS *is* a sinusoidal encoding (frequencies
$2\pi f / n$, amplitudes $\sqrt{2\lambda_f / n}$). :data:`SHIFT_STATISTICS` measure the distance from that.
"""

from __future__ import annotations

import numpy as np

from ..validation import check_int
from .bootstrap import sequence_intervals
from .counting import positional_counts
from .fourier import fourier_match
from .hellinger import hellinger_matrix
from .marginals import positional_marginals
from .mds import classical_mds
from .shift import circulant_deviation, toeplitz_deviation

__all__ = ["SHIFT_STATISTICS", "SHIFT_BOUNDS", "shift_statistics", "shift_intervals"]

#: The shift statistics given a bootstrap interval over sequences (:func:`shift_intervals`).
SHIFT_STATISTICS = ("toeplitz_deviation", "circulant_deviation", "fourier_match")
#: Their ranges: a deviation is the norm of a projection's residual over the norm of D, a match a mean squared cosine.
SHIFT_BOUNDS = ((0.0, 1.0), (0.0, 1.0), (0.0, 1.0))


def shift_statistics(D, n_pairs: int) -> np.ndarray:
    """:data:`SHIFT_STATISTICS` of one distance matrix.

    Parameters
    ----------
    D : array-like of shape (n, n)
    n_pairs : int
        The number $m$ of Fourier pairs compared (capped at ``(n - 1) // 2``).

    Returns
    -------
    ndarray of shape (3,)
        In the order of :data:`SHIFT_STATISTICS`.
    """
    n = D.shape[0]
    m = min(check_int(n_pairs, "n_pairs", 1), (n - 1) // 2)
    U = classical_mds(D, k=1).eigenvectors[:, : 2 * m]
    return np.array([toeplitz_deviation(D), circulant_deviation(D), fourier_match(U, m)])


def shift_intervals(sequences, n_positions: int, vocab_size: int, n_pairs: int, *, n_boot: int = 200,
                    n_folds: int = 100, level: float = 0.95, seed: int = 0, progress=None,
                    groups=None) -> tuple[dict, np.ndarray]:
    """Bootstrap intervals over sequences of :func:`shift_statistics` of one corpus's Hellinger matrix.

    Parameters
    ----------
    sequences, n_positions, vocab_size :
        Token ids (1-D int arrays), counted as by :func:`posgeom.geometry.positional_counts`.
    n_pairs : int
        As :func:`shift_statistics`.
    n_boot, n_folds, level, seed, progress, groups :
        As :func:`~posgeom.geometry.sequence_intervals` (``seed`` seeds the folds and the redraws).

    Returns
    -------
    values : dict
        ``{statistic: interval}`` for :data:`SHIFT_STATISTICS`, ``n_used``, ``n_kept``.
    replicates : ndarray of shape (n_used, 3)
    """
    marg = positional_marginals(positional_counts(sequences, n_positions, vocab_size))
    values, reps = sequence_intervals(hellinger_matrix(marg), sequences, n_positions, vocab_size, marg.positions,
                                      lambda D: shift_statistics(D, n_pairs), SHIFT_STATISTICS, n_boot=n_boot,
                                      n_folds=n_folds, level=level, seed=seed, groups=groups, bounds=SHIFT_BOUNDS,
                                      progress=progress)
    return dict(values["statistics"], n_used=values["n_used"], n_kept=int(marg.n_positions)), reps
