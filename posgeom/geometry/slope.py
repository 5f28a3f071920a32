r"""ALiBi's distance $\hat d_{ij} = m\,|i - j|$ against a target $D$: a parabola in the slope $m$.

With $a_{ij} = |i - j|$ and sums over $i < j$,

$$\sigma_{\text{paper}}(m) = \frac{m^2 \sum a^2 - 2m \sum a d + \sum d^2}{\sum d^2},$$

minimal at $m^* = \sum a d / \sum a^2$ (the line's ``"scale_free"`` stress); a value $t$ above it is reached at
$m_\pm = \bigl(\sum ad \pm \sqrt{(\sum ad)^2 - \sum a^2 \sum d^2 (1 - t)}\bigr) / \sum a^2$.
"""

from __future__ import annotations

import math
from typing import Mapping

import numpy as np

from ..validation import check_choice, upper
from .stress import REPORTED_NORMALIZATIONS, distances_of, stress

__all__ = [
    "alibi_parabola", "alibi_paper_stress", "alibi_slopes_for", "SLOPE_RULES", "slope_for", "head_slope_choices",
    "alibi_choices", "line_stresses",
]

#: Slopes scaled to the corpus (besides the head slopes of ALiBi's geometric sequence).
SLOPE_RULES = ("max distance", "mean distance")


def alibi_parabola(D, n_positions: np.ndarray | None = None) -> dict[str, float]:
    r"""The coefficients of ALiBi's ``"paper"`` stress as a function of its slope (the docstring of this module).

    Parameters
    ----------
    D : array-like of shape (n, n)
    n_positions : array-like of shape (n,), optional
        The positions the rows of ``D`` stand for (default ``0 … n-1``); offsets are $|i - j|$ of these.

    Returns
    -------
    dict
        ``saa`` $= \sum a^2$, ``sad`` $= \sum a d$, ``sdd`` $= \sum d^2$ (sums over $i<j$),
        ``m_star`` $= \sum ad / \sum a^2$ and ``minimum`` (the ``"scale_free"`` stress of the line).
    """
    D = distances_of(D, as_distances=True, name="D")
    n = D.shape[0]
    pos = np.arange(n) if n_positions is None else np.asarray(n_positions, dtype=np.float64)
    a, d = upper(np.abs(pos[:, None] - pos[None, :])), upper(D)
    saa, sad, sdd = float(a @ a), float(a @ d), float(d @ d)
    m_star = sad / saa
    # sigma(m*) = 1 - (sum a d)^2 / (sum a^2 sum d^2)
    return {"saa": saa, "sad": sad, "sdd": sdd, "m_star": m_star, "minimum": 1.0 - sad**2 / (saa * sdd)}


def alibi_paper_stress(slope, parabola: dict[str, float]):
    r"""ALiBi's ``"paper"`` stress $(m^2 \sum a^2 - 2 m \sum ad + \sum d^2) / \sum d^2$ at slopes of any shape."""
    m = np.asarray(slope, dtype=np.float64)
    p = parabola
    return (m * m * p["saa"] - 2.0 * m * p["sad"] + p["sdd"]) / p["sdd"]


def alibi_slopes_for(target: float, parabola: dict[str, float]) -> tuple[float, float]:
    r"""The two slopes $m_- \le m_+$ at which ALiBi's ``"paper"`` stress equals ``target`` (ValueError if none)."""
    p = parabola
    disc = p["sad"] ** 2 - p["saa"] * p["sdd"] * (1.0 - target)
    if disc < 0:
        raise ValueError(
            f"no ALiBi slope reaches paper stress {target}: the smallest value over all slopes is {p['minimum']:.4g}"
        )
    # m = (sum ad -+ sqrt((sum ad)^2 - sum a^2 sum d^2 (1 - t))) / sum a^2
    root = math.sqrt(disc)
    return (p["sad"] - root) / p["saa"], (p["sad"] + root) / p["saa"]


def slope_for(rule: str, D) -> float:
    r"""ALiBi's slope scaled to the corpus's (n, n) target distances ``D`` by ``rule`` (:data:`SLOPE_RULES`).

    ``"max distance"``: $\max D / (n - 1)$; ``"mean distance"``: $\overline{D} / \overline{|i-j|}$ (means over $i < j$).
    """
    check_choice(rule, "slope rule", SLOPE_RULES, plural="rules")
    D = np.asarray(D, dtype=np.float64)
    n = D.shape[0]
    iu = np.triu_indices(n, 1)
    if rule == "max distance":
        # m = max D / (n - 1)
        return float(D[iu].max() / (n - 1))
    offsets = (iu[1] - iu[0]).astype(np.float64)
    # m = mean D / mean |i - j|
    return float(D[iu].mean() / offsets.mean())


def head_slope_choices(head_slopes: Mapping[int, np.ndarray]) -> list[tuple[int, str, float]]:
    """The slopes one can call "ALiBi's": for each head count ``H``, the mean of its slopes, then each head's.

    Parameters
    ----------
    head_slopes : mapping of int to array-like of shape (H,)
        ``{H: slopes}`` (e.g. :func:`posgeom.encodings.alibi_slopes` of each ``H``).

    Returns
    -------
    list of (H, choice, slope)
        ``choice`` is ``"mean"`` or ``"head h"``.
    """
    out = []
    for H, slopes in head_slopes.items():
        slopes = np.asarray(slopes, dtype=np.float64)
        out.append((int(H), "mean", float(slopes.mean())))
        out += [(int(H), f"head {h}", float(m)) for h, m in enumerate(slopes)]
    return out


def alibi_choices(D, positions, head_slopes: Mapping[int, np.ndarray],
                  target: float) -> tuple[dict[str, float], list[dict]]:
    """ALiBi's ``"paper"`` stress against ``D`` at every slope of :func:`head_slope_choices`, and its parabola.

    Parameters
    ----------
    D, positions :
        Target distances (n, n) and the positions (n,) its rows stand for.
    head_slopes : mapping of int to array-like
        As :func:`head_slope_choices`.
    target : float
        A ``"paper"`` stress whose two slopes are wanted (:func:`alibi_slopes_for`).

    Returns
    -------
    parabola : dict
        :func:`alibi_parabola` with ``m_minus`` and ``m_plus``, the slopes that give ``target`` (NaN when no
        slope does).
    rows : list of dict
        ``heads``, ``slope_choice``, ``slope``, ``paper`` and ``scale_free`` (the parabola's minimum) per slope.
    """
    par = alibi_parabola(D, positions)
    try:
        lo, hi = alibi_slopes_for(target, par)
    except ValueError:
        lo, hi = float("nan"), float("nan")
    rows = [{"heads": H, "slope_choice": choice, "slope": m, "paper": float(alibi_paper_stress(m, par)),
             "scale_free": float(par["minimum"])} for H, choice, m in head_slope_choices(head_slopes)]
    return {**par, "m_minus": lo, "m_plus": hi}, rows


def line_stresses(D, positions, slopes, normalizations=REPORTED_NORMALIZATIONS) -> dict[str, np.ndarray]:
    r"""The stress against ``D`` of ALiBi's line $\hat d_{ij} = m\,|i - j|$ at each slope $m$ of ``slopes``.

    Parameters
    ----------
    D, positions :
        Target distances (n, n) and the positions (n,) its rows stand for.
    slopes, normalizations :
        Slopes (s,); names of :data:`posgeom.geometry.STRESS_NORMALIZATIONS`.

    Returns
    -------
    dict
        ``{normalization: ndarray of shape (s,)}``.
    """
    pos = np.asarray(positions, dtype=np.float64)
    offsets = np.abs(pos[:, None] - pos[None, :])
    slopes = np.asarray(slopes, dtype=np.float64)
    return {z: np.array([stress(D, m * offsets, z, as_distances=True) for m in slopes]) for z in normalizations}
