r"""Real corpora: the choices behind ALiBi's 0.563 (claim C7), its ``"paper"`` stress a parabola in the slope."""

from __future__ import annotations

from dataclasses import replace

from .. import encodings as enc
from .. import geometry as geo
from ..config import Settings, settings_or_default as _settings
from ..registry import Result
from .real_corpora_geometry import (
    PAPER_ALIBI_SST2, chapter_settings, corpus_geometry_of, corpus_options, corpus_params, corpus_source,
)
from .settings import as_params, store_result

__all__ = ["run_alibi_choices"]


def run_alibi_choices(settings: Settings | None = None, *, corpus: str = "sst2", target: float = PAPER_ALIBI_SST2,
                      force: bool = False, grid: dict | None = None, corpus_overrides: dict | None = None) -> Result:
    """ALiBi's ``"paper"`` and ``"scale_free"`` stress under every combination of the unstated choices, stored.

    ``grid`` replaces entries of ``CONFIGS[scale].alibi_choices``; ``corpus_overrides`` are corpus options.
    For each (n, policy, form) the parabola's coefficients and the two slopes that give ``target`` are stored too.

    Returns
    -------
    Result
        values: ``rows`` (``n``, ``special``, ``kind``, ``heads``, ``slope_choice``, ``slope``, ``paper``,
        ``scale_free``), ``parabolas`` (per (n, policy, form)), ``target``.
    """
    settings = _settings(settings)
    grid = {**as_params(chapter_settings(settings.scale).alibi_choices), **(grid or {})}
    base = corpus_options(settings.scale, corpus, **(corpus_overrides or {}))
    source, data = corpus_source(settings, base)
    params = {"corpus": corpus_params(base), "grid": grid, "target": target, "data": data}

    def compute():
        slopes = {H: enc.alibi_slopes(H) for H in grid["head_counts"]}
        rows, parabolas = [], []
        for special in grid["specials"]:
            for n in grid["n_positions"]:
                marg = corpus_geometry_of(settings, replace(base, special=special, n_positions=n), source).marginals
                for kind in grid["kinds"]:
                    D = geo.hellinger_matrix(marg, kind=kind)
                    par, choices = geo.alibi_choices(D, marg.positions, slopes, target)
                    where = {"n": n, "special": special, "kind": kind}
                    parabolas.append({**where, "n_kept": int(D.shape[0]), **par})
                    rows += [{**where, **row} for row in choices]
        return {"rows": rows, "parabolas": parabolas, "target": target, "corpus": corpus}, None

    return store_result(settings, f"real_corpora_alibi_choices_{corpus}", compute, params, force)
