r"""Real corpora: the choices behind ALiBi's 0.563 (claim C7), its ``"paper"`` stress a parabola in the slope."""

from __future__ import annotations

from dataclasses import dataclass, replace

from .. import encodings as enc
from .. import geometry as geo
from ..config import Settings, settings_or_default as _settings
from ..corpora.identifiers import Corpus
from ..registry import Result
from .real_corpora_geometry import (
    PAPER_ALIBI_SST2, chapter_settings, corpus_geometry_of, corpus_options, corpus_params, corpus_source,
)
from .settings import as_params, store_result

__all__ = ["run_alibi_choices", "AlibiParabola", "AlibiChoice", "AlibiChoicesRecord"]


@dataclass(frozen=True)
class AlibiParabola:
    """ALiBi's "paper" stress as a parabola in the slope under one set of choices (fields in the stored order)."""

    kind: str
    m_minus: float  # the two slopes that give the target (NaN when none does)
    m_plus: float
    m_star: float  # the slope of the minimum
    minimum: float
    n: int
    n_kept: int
    saa: float  # the parabola's coefficients (``posgeom.geometry.alibi_parabola``)
    sad: float
    sdd: float
    special: str


@dataclass(frozen=True)
class AlibiChoice:
    """One combination of ALiBi's unstated choices (``run_alibi_choices``), fields in the stored order."""

    heads: int
    kind: str
    n: int
    paper: float
    scale_free: float
    slope: float
    slope_choice: str
    special: str


@dataclass(frozen=True)
class AlibiChoicesRecord:
    """A stored ``run_alibi_choices``: the parabolas, every combination, the paper's value and the corpus."""

    parabolas: tuple[AlibiParabola, ...]
    rows: tuple[AlibiChoice, ...]
    target: float
    corpus: Corpus


def run_alibi_choices(settings: Settings | None = None, *, corpus: str = Corpus.SST2, target: float = PAPER_ALIBI_SST2,
                      force: bool = False, grid: dict | None = None, corpus_overrides: dict | None = None) -> Result:
    """ALiBi's ``"paper"`` and ``"scale_free"`` stress under every combination of the unstated choices, stored.

    ``grid`` replaces entries of ``CONFIGS[scale].alibi_choices``; ``corpus_overrides`` are corpus options.
    For each (n, policy, form) the parabola's coefficients and the two slopes that give ``target`` are stored too.
    The record: :class:`AlibiChoicesRecord`.
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
                    parabolas.append(AlibiParabola(**where, n_kept=int(D.shape[0]), **par))
                    rows += [AlibiChoice(**where, **row) for row in choices]
        return AlibiChoicesRecord(parabolas=tuple(parabolas), rows=tuple(rows), target=target, corpus=corpus)

    return store_result(settings, f"real_corpora_alibi_choices_{corpus}", compute, params, force)
