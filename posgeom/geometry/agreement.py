r"""How well an encoding's distances keep the order of a target's: violation rate and Spearman's rho
together, and along the ranks of classical MDS.
"""

from __future__ import annotations

import warnings

import numpy as np

from .hellinger import euclidean_distances
from .mds import classical_mds
from .monotonicity import spearman, violation_rate

__all__ = ["monotonicity_of", "mds_monotonicity_curve"]


def monotonicity_of(D, Dhat) -> dict[str, float]:
    """Violation rate (ties excluded), Spearman's rho and the tied fraction of ``Dhat`` against ``D``.

    Parameters
    ----------
    D, Dhat : array-like of shape (n, n)

    Returns
    -------
    dict
        ``violation_rate``, ``spearman``, ``tied_fraction`` (pairs of pairs tied in ``Dhat``).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # constant Dhat: NaN, reported as such
        rate, counts = violation_rate(D, Dhat, as_distances=True, return_counts=True)
        rho = spearman(D, Dhat, as_distances=True)
    return {"violation_rate": float(rate), "spearman": float(rho),
            "tied_fraction": counts.tied_Dhat / counts.total if counts.total else float("nan")}


def mds_monotonicity_curve(D, ranks=None) -> dict[str, np.ndarray]:
    """Violation rate and Spearman's rho of the rank-k classical MDS encoding, for each k of ``ranks``.

    Parameters
    ----------
    D : array-like of shape (n, n)
    ranks : sequence of int, optional
        Default every rank 1 … n - 1 (ranks above n - 1 are dropped).

    Returns
    -------
    dict
        ``ranks`` (r,), ``violation_rate`` (r,), ``spearman`` (r,).
    """
    D = np.asarray(D, dtype=np.float64)
    n = D.shape[0]
    mds = classical_mds(D, k=1)
    ranks = np.arange(1, n) if ranks is None else np.asarray([k for k in ranks if 1 <= k <= n - 1], dtype=int)
    coords = mds.eigenvectors * np.sqrt(np.maximum(mds.eigenvalues, 0.0))
    viol, rho = [], []
    for k in ranks:
        m = monotonicity_of(D, euclidean_distances(coords[:, :k]))
        viol.append(m["violation_rate"])
        rho.append(m["spearman"])
    return {"ranks": ranks, "violation_rate": np.asarray(viol), "spearman": np.asarray(rho)}
