r"""Stress of an encoding (the paper's Eq. 4).

$\hat D$: the encoding's pairwise distances (of its rows, or induced); sums run over the pairs $i < j$.

* ``"paper"`` (Eq. 4 as reconstructed from the review's worked numbers, no square root, no fitted scale)
  $$\sigma_{\text{paper}} = \frac{\sum (\hat d_{ij} - d_{ij})^2}{\sum d_{ij}^2}.$$
* ``"scale_free"``: the same ratio at the best global scale $s > 0$ of $\hat D$,
  $$\sigma_{\text{sf}} = \min_{s>0} \frac{\sum (s\hat d_{ij} - d_{ij})^2}{\sum d_{ij}^2}
  = 1 - \frac{(\sum \hat d_{ij} d_{ij})^2}{\sum \hat d_{ij}^2 \sum d_{ij}^2},$$
  computed as the left-hand ratio at $s^* = \sum \hat d d / \sum \hat d^2$ (no cancellation in $1 - x$);
  it is 1 when $\hat D = 0$ (NoPE). Encodings of different native scale compare fairly only with it.
* ``"kruskal1"``: $\sqrt{\sum (\hat d_{ij} - d_{ij})^2 / \sum \hat d_{ij}^2}$ — scikit-learn's
  ``MDS(normalized_stress=True).stress_`` (Kruskal's stress-1 normalised by the fitted distances).
* ``"smacof_r"``: $\sqrt{\sigma_{\text{paper}}}$, the normalised stress of R's ``smacof``.

The paper does not say which normalisation it used; the book reports ``"paper"`` and ``"scale_free"``.
"""

from __future__ import annotations

from enum import StrEnum

import numpy as np

from ..validation import (as_float_matrix, check_choice, check_distance_matrix, is_distance_matrix,
                          power_of_two_scale, upper)

__all__ = ["stress", "StressNormalization", "STRESS_NORMALIZATIONS", "REPORTED_NORMALIZATIONS", "STRESS_BOUNDS",
           "distances_of", "stress_pair"]


class StressNormalization(StrEnum):
    """How a stress is normalised (``posgeom.geometry.stress``); a member equals its text."""

    PAPER = "paper"
    SCALE_FREE = "scale_free"
    KRUSKAL1 = "kruskal1"
    SMACOF_R = "smacof_r"


STRESS_NORMALIZATIONS = tuple(StressNormalization)
#: The two normalisations every table reports: the paper's, and the scale-free one that no rescaling can game.
REPORTED_NORMALIZATIONS = (StressNormalization.PAPER, StressNormalization.SCALE_FREE)
#: The range of each normalisation ``(lo, hi)``, None where unbounded (the bounds an interval of a stress keeps,
#: :func:`posgeom.geometry.percentile_interval`): every one is >= 0; "scale_free" is 1 - a squared cosine, <= 1.
STRESS_BOUNDS = {"paper": (0.0, None), "scale_free": (0.0, 1.0), "kruskal1": (0.0, None), "smacof_r": (0.0, None)}


def distances_of(X, n: int | None = None, as_distances: bool | None = None, name: str = "Dhat_or_P") -> np.ndarray:
    r"""$\hat D$ (n, n) of an encoding: a distance matrix as given, or the Euclidean distances of an (n, d) encoding.

    ``as_distances=None`` takes a square, non-negative, symmetric, zero-diagonal array as distances and any
    other as an encoding; pass ``True``/``False`` to decide explicitly.
    """
    from .hellinger import euclidean_distances
    X = as_float_matrix(X, name)
    if n is not None and X.shape[0] != n:
        raise ValueError(f"{name} has {X.shape[0]} rows but D describes n = {n} positions; shapes must match")
    if as_distances is None:
        as_distances = is_distance_matrix(X)
    if as_distances:
        return check_distance_matrix(X, name)
    return euclidean_distances(X)


def stress(D, Dhat_or_P, normalization: str = "paper", *, as_distances: bool | None = None) -> float:
    r"""Stress of an encoding against target distances (the paper's Eq. 4; normalisations in the module docstring).

    Parameters
    ----------
    D : array-like of shape (n, n)
        Target distances (e.g. :func:`hellinger_matrix`); symmetric, zero diagonal, not all zero.
    Dhat_or_P : array-like of shape (n, n) or (n, d)
        The encoding's distance matrix, or the encoding itself (read by :func:`distances_of`).
    normalization : {"paper", "scale_free", "kruskal1", "smacof_r"}
    """
    check_choice(normalization, "normalization", STRESS_NORMALIZATIONS)
    D = check_distance_matrix(D, "D")
    Dhat = distances_of(Dhat_or_P, D.shape[0], as_distances)
    d, dh = upper(D), upper(Dhat)
    return stress_of_pairs(d, dh, normalization)


def stress_pair(D: np.ndarray, Dhat: np.ndarray, R: np.ndarray | None = None,
                normalizations=REPORTED_NORMALIZATIONS) -> dict[str, float]:
    """Both stresses against D and, when given, the "scale_free" stress against the resolvable geometry R.

    Parameters
    ----------
    D, Dhat : ndarray of shape (k, k)
        Target and candidate distances.
    R, normalizations :
        The resolvable geometry (k, k), optional (:func:`posgeom.geometry.resolvable_distances`); names.

    Returns
    -------
    dict
        ``{normalization: stress}``, and ``scale_free_resolvable`` when ``R`` is given.
    """
    out = {z: stress(D, Dhat, z, as_distances=True) for z in normalizations}
    if R is not None:
        out["scale_free_resolvable"] = stress(R, Dhat, "scale_free", as_distances=True)
    return out


def stress_of_pairs(d: np.ndarray, dh: np.ndarray, normalization: str) -> float:
    """The stress of :func:`stress` from validated upper triangles ``d`` and ``dh`` (m,)."""
    # every normalisation is a ratio of sums of squares: the denominator's vector is divided by an exact power
    # of 2 (the numerator's by the same one), so that no square overflows or underflows on its way; a stress
    # that itself exceeds the float64 range is an error, not an infinity
    try:
        with np.errstate(over="raise", invalid="raise", divide="raise"):
            return _stress_ratio(d, dh, normalization)
    except FloatingPointError:
        raise ValueError(
            f"{normalization} stress exceeds the float64 range: the target distances are negligible against the "
            "encoding's (or the other way round); rescale one of them"
        ) from None


def _stress_ratio(d: np.ndarray, dh: np.ndarray, normalization: str) -> float:
    if normalization == "kruskal1":
        scale = power_of_two_scale(dh)
        d, dh = d / scale, dh / scale
        shh = float(np.dot(dh, dh))
        if shh == 0.0:
            raise ValueError("kruskal1 stress is undefined when every encoding distance is 0 (sum dhat^2 = 0)")
        # sqrt( sum (dhat - d)^2 / sum dhat^2 )
        return float(np.sqrt(np.sum((dh - d) ** 2) / shh))
    if normalization == "scale_free":
        # invariant to the scale of d and of dh separately (s* absorbs dh's)
        d, dh = d / power_of_two_scale(d), dh / power_of_two_scale(dh)
    else:
        scale = power_of_two_scale(d)
        d, dh = d / scale, dh / scale
    sdd = float(np.dot(d, d))
    if sdd == 0.0:
        raise ValueError("stress is undefined when every target distance is 0 (sum d^2 = 0)")
    if normalization == "scale_free":
        shh = float(np.dot(dh, dh))
        if shh == 0.0:
            return 1.0  # min over s > 0 of sum d^2 / sum d^2
        # s* = sum dhat d / sum dhat^2 ;  sigma = sum (s* dhat - d)^2 / sum d^2
        s = float(np.dot(dh, d)) / shh
        return float(np.sum((s * dh - d) ** 2) / sdd)
    # sum (dhat - d)^2 / sum d^2
    paper = float(np.sum((dh - d) ** 2) / sdd)
    return paper if normalization == "paper" else float(np.sqrt(paper))
