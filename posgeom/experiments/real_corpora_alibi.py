r"""Real corpora: ALiBi's ``"paper"`` stress as a parabola in its slope, and the choices behind 0.563 (claim C7).

The maths is in the docstring of :mod:`posgeom.experiments.real_corpora`.
"""

from __future__ import annotations

import math

import numpy as np

from .. import encodings as enc
from .. import geometry as geo
from ..config import Settings, settings_or_default as _settings
from ..registry import Registry, Result
from .real_corpora_geometry import (
    PAPER_ALIBI_SST2, chapter_settings, corpus_geometry_of, corpus_options, source_description,
)
from .settings import as_params

__all__ = ["alibi_parabola", "alibi_paper_stress", "alibi_slopes_for", "run_alibi_choices"]


def alibi_parabola(D, n_positions: np.ndarray | None = None) -> dict[str, float]:
    r"""The coefficients of ALiBi's ``"paper"`` stress as a function of its slope (module docstring).

    Parameters
    ----------
    D : array-like of shape (n, n)
        Target distances.
    n_positions : array-like of shape (n,), optional
        The positions the rows of ``D`` stand for (default ``0 … n-1``); offsets are $|i - j|$ of these.

    Returns
    -------
    dict
        ``saa`` $= \sum a^2$, ``sad`` $= \sum a d$, ``sdd`` $= \sum d^2$ (sums over $i<j$),
        ``m_star`` $= \sum ad / \sum a^2$ and ``minimum`` (the ``"scale_free"`` stress of the line).
    """
    D = geo.distances_of(D, as_distances=True, name="D")
    n = D.shape[0]
    pos = np.arange(n) if n_positions is None else np.asarray(n_positions, dtype=np.float64)
    iu = np.triu_indices(n, k=1)
    a = np.abs(pos[:, None] - pos[None, :])[iu]
    d = D[iu]
    saa, sad, sdd = float(a @ a), float(a @ d), float(d @ d)
    m_star = sad / saa
    # sigma(m*) = 1 - (sum a d)^2 / (sum a^2 sum d^2)
    return {"saa": saa, "sad": sad, "sdd": sdd, "m_star": m_star, "minimum": 1.0 - sad**2 / (saa * sdd)}


def alibi_paper_stress(slope, parabola: dict[str, float]):
    r"""ALiBi's ``"paper"`` stress $(m^2 \sum a^2 - 2 m \sum ad + \sum d^2) / \sum d^2$ at slopes ``slope``.

    ``slope`` may have any shape; the result has the same shape.
    """
    m = np.asarray(slope, dtype=np.float64)
    p = parabola
    return (m * m * p["saa"] - 2.0 * m * p["sad"] + p["sdd"]) / p["sdd"]


def alibi_slopes_for(target: float, parabola: dict[str, float]) -> tuple[float, float]:
    r"""The two slopes $m_- \le m_+$ at which ALiBi's ``"paper"`` stress equals ``target``.

    Raises ``ValueError`` when ``target`` is below the minimum (the ``"scale_free"`` stress of a line).
    """
    p = parabola
    disc = p["sad"] ** 2 - p["saa"] * p["sdd"] * (1.0 - target)
    if disc < 0:
        raise ValueError(
            f"no ALiBi slope reaches paper stress {target}: the smallest value over all slopes is {p['minimum']:.4g}"
        )
    # m = (sum ad -+ sqrt((sum ad)^2 - sum a^2 sum d^2 (1 - t))) / sum a^2
    root = math.sqrt(disc)
    return (p["sad"] - root) / p["saa"], (p["sad"] + root) / p["saa"]


def run_alibi_choices(settings: Settings | None = None, *, corpus: str = "sst2", target: float = PAPER_ALIBI_SST2,
                      force: bool = False, grid: dict | None = None, corpus_overrides: dict | None = None) -> Result:
    """ALiBi's ``"paper"`` and ``"scale_free"`` stress under every combination of the unstated choices.

    Choices (``CONFIGS[scale].alibi_choices``): number of positions ``n``, special-token policy,
    Hellinger form (chord, normalised, geodesic), head count ``H`` (8, 12, 16) and slope (the mean of the
    ``H`` slopes, or one head's). For each (n, policy, form) it also stores the parabola's coefficients
    and the two slopes that give ``target``.

    Parameters
    ----------
    grid : dict, optional
        Replaces entries of the grid (``n_positions``, ``specials``, ``kinds``, ``head_counts``).
    corpus_overrides : dict, optional
        Other corpus options (:func:`corpus_options`).

    Returns
    -------
    Result
        ``values["rows"]``: ``{"n", "special", "kind", "heads", "slope_choice", "slope", "paper",
        "scale_free"}``; ``values["parabolas"]``: per (n, policy, form) ``{"m_star", "minimum",
        "m_minus", "m_plus", ...}``; ``values["target"]``.
    """
    settings = _settings(settings)
    grid = {**as_params(chapter_settings(settings.scale).alibi_choices), **(grid or {})}
    base = corpus_options(settings.scale, corpus, **(corpus_overrides or {}))
    params = {"corpus": base, "grid": grid, "target": target, "data": source_description(settings, base)}

    def compute():
        rows, parabolas = [], []
        for special in grid["specials"]:
            for n in grid["n_positions"]:
                opts = {**base, "special": special, "n_positions": n}
                marg = corpus_geometry_of(settings, opts).marginals
                for kind in grid["kinds"]:
                    D = geo.hellinger_matrix(marg, kind=kind)
                    par = alibi_parabola(D, marg.positions)
                    try:
                        lo, hi = alibi_slopes_for(target, par)
                    except ValueError:
                        lo, hi = float("nan"), float("nan")
                    parabolas.append({"n": n, "special": special, "kind": kind, "n_kept": int(D.shape[0]),
                                      **par, "m_minus": lo, "m_plus": hi})
                    for H in grid["head_counts"]:
                        slopes = enc.alibi_slopes(H)
                        choices = [("mean", float(slopes.mean()))]
                        choices += [(f"head {h}", float(s)) for h, s in enumerate(slopes)]
                        for label, m in choices:
                            rows.append({"n": n, "special": special, "kind": kind, "heads": H, "slope_choice": label,
                                         "slope": m, "paper": float(alibi_paper_stress(m, par)),
                                         "scale_free": float(par["minimum"])})
        return {"rows": rows, "parabolas": parabolas, "target": target, "corpus": corpus}, None

    return Registry(settings.results_dir).run(
        f"real_corpora_alibi_choices_{corpus}", compute, params=params, scale=settings.scale, seed=settings.seed,
        device="cpu", model=None, force=force,
    )
