r"""The search for ALiBi's 0.563 on SST-2 (claim C7), over every construction the book can name.

A construction is one corpus geometry of the grid, a stress normalisation (or its square root) and an
ALiBi slope (a mean or one head's, or one scaled to the corpus). The more constructions are tried, the
likelier one lands near any number, so :func:`run_alibi_search` counts them and sets the closest beside
the sinusoidal and RoPE stresses of the same construction.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .. import encodings as enc
from .. import geometry as geo
from ..config import Settings, settings_or_default as _settings
from ..encodings.identifiers import Encoding
from ..geometry import SLOPE_RULES, slope_for
from ..registry import Result
from . import real_corpora_geometry as rc
from .settings import as_params, store_result

__all__ = ["TRANSFORMS", "ClosestConstruction", "StoredAlibiSearch", "run_alibi_search"]

#: What is reported of a normalisation: its value, or its square root.
TRANSFORMS = {"value": float, "sqrt": np.sqrt}


@dataclass(frozen=True)
class ClosestConstruction:
    """One of the ALiBi constructions closest to the paper's value: the three stresses and the choices that make it."""

    alibi: float
    sinusoidal: float       # the sinusoidal and RoPE stresses of the same construction
    rope: float
    alibi_best: bool        # ALiBi below both
    normalization: str
    transform: str          # a key of TRANSFORMS
    slope_choice: str
    slope: float
    n: int                  # the corpus geometry: positions, special tokens, Hellinger convention
    special: str
    kind: str


@dataclass(frozen=True)
class StoredAlibiSearch:
    """A stored ``run_alibi_search``; ``n_within`` is keyed by the distance as text (``"0.01"``)."""

    n_constructions: int
    n_distinct: int                 # constructions that give different numbers
    target: float
    n_within: dict[str, int]
    closest: list[ClosestConstruction]
    alibi_best_share: float
    span: list[float]               # the smallest and largest ALiBi stress
    values: np.ndarray              # (n_constructions,) ALiBi's stress under each


def run_alibi_search(settings: Settings | None = None, *, corpus: str = "sst2", target: float = rc.PAPER_ALIBI_SST2,
                     n_closest: int = 10, force: bool = False) -> Result:
    """ALiBi's stress under every construction, the closest to ``target``, and the other encodings there.

    The record: :class:`StoredAlibiSearch` (``alibi_best_share``: the share where ALiBi is below both others).
    """
    settings = _settings(settings)
    cfg = rc.chapter_settings(settings.scale)
    grid, encodings = as_params(cfg.alibi_choices), cfg.encodings
    base = rc.corpus_options(settings.scale, corpus)
    params = {"corpus": rc.corpus_params(base), "grid": grid, "encodings": as_params(encodings), "target": target,
              "n_closest": n_closest,
              "normalizations": list(geo.STRESS_NORMALIZATIONS), "transforms": list(TRANSFORMS),
              "slope_rules": list(SLOPE_RULES)}

    def compute() -> StoredAlibiSearch:
        found: list[dict[str, Any]] = []
        source, _ = rc.corpus_source(settings, base)  # resolved once for every geometry of the grid
        heads = [(f"mean of {H} heads" if choice == "mean" else f"{choice} of {H}", m)
                 for H, choice, m in geo.head_slope_choices({H: enc.alibi_slopes(H) for H in grid["head_counts"]})]
        for special in grid["specials"]:
            for n in grid["n_positions"]:
                marg = rc.corpus_geometry_of(settings, replace(base, special=special, n_positions=n), source).marginals
                fixed = enc.encoding_set(marg.positions, names=(Encoding.SINUSOIDAL, Encoding.ROPE), **encodings.shape())
                for kind in grid["kinds"]:
                    D = geo.hellinger_matrix(marg, kind=kind)
                    slopes = heads + [(rule, slope_for(rule, D)) for rule in SLOPE_RULES]
                    line = geo.line_stresses(D, marg.positions, [m for _, m in slopes], geo.STRESS_NORMALIZATIONS)
                    for norm in geo.STRESS_NORMALIZATIONS:
                        others = {name: geo.stress(D, Dhat, norm, as_distances=True) for name, Dhat in fixed.items()}
                        for (label, m), value in zip(slopes, line[norm]):
                            found += [{"n": n, "special": special, "kind": kind, "normalization": norm,
                                       "transform": transform, "slope_choice": label, "slope": m,
                                       **{k: float(f(v)) for k, v in (("alibi", value), *others.items())}}
                                      for transform, f in TRANSFORMS.items()]
        for f in found:
            f["alibi_best"] = bool(f["alibi"] < min(f["sinusoidal"], f["rope"]))
        values = np.array([f["alibi"] for f in found])
        order = np.argsort(np.abs(values - target), kind="stable")
        return StoredAlibiSearch(
            n_constructions=len(found), target=target,
            # constructions that give different numbers (head slopes repeat across head counts)
            n_distinct=int(np.unique(np.round(values, 12)).size),
            n_within={str(t): int(np.sum(np.abs(values - target) <= t)) for t in (0.001, 0.01, 0.05)},
            closest=[ClosestConstruction(**found[i]) for i in order[:n_closest]],
            alibi_best_share=float(np.mean([f["alibi_best"] for f in found])),
            span=[float(values.min()), float(values.max())], values=values,
        )

    return store_result(settings, f"alibi_search_{corpus}", compute, params, force)
