"""Typed records of what the experiments of :mod:`posgeom.experiments.real_corpora` store.

``DrawSpread``, ``AlibiParabola`` and ``AlibiChoice`` are the experiments' own records, re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...registry.typed import stored
from ..real_corpora_alibi import AlibiChoice, AlibiParabola
from ..real_corpora_draws import DrawSpread

__all__ = ["CorpusGeometry", "NoiseAwareRank", "DrawSpread", "ResolvableSplits", "SubsetDraws", "ClosestConstruction",
           "AlibiSearch", "AlibiParabola", "AlibiChoice", "StoredAlibiChoices", "StoredStressTable"]


@dataclass(frozen=True)
class CorpusGeometry:
    """A stored ``run_corpus_geometry``: the corpus, its counts, the geometry's summaries and the arrays drawn."""

    corpus: str = stored("options.corpus")
    split: str = stored("options.split")
    special: str = stored("options.special")
    n_sequences: int
    n_positions: int
    n_kept: int
    dropped: tuple
    n_truncated: int
    reach_min: int
    reach_max: int
    shift_r2: float
    share_raw: float
    rank_above_noise: int
    rank_mass_90: int
    resolvable_shift_r2: float
    resolvable_share: float
    resolvable_negative_fraction: float
    noise_top: float
    self_noise_max: float
    D: np.ndarray
    noise: np.ndarray
    R: np.ndarray
    positions: np.ndarray
    reach: np.ndarray
    self_noise: np.ndarray
    eigenvalues: np.ndarray
    eigenvalues_resolvable: np.ndarray


@dataclass(frozen=True)
class NoiseAwareRank:
    """A stored ``run_noise_aware_rank``: the rank in words, its interval, the cross-fitted eigenvalues (splits × k)."""

    text: str
    interval: tuple[int, int]
    level: float
    first_share: float
    n_positions: int
    threshold: float
    eigenvalues: np.ndarray



@dataclass(frozen=True)
class ResolvableSplits:
    """A stored ``run_resolvable_splits``: the splits used (and skipped), and each statistic's spread over them."""

    seeds: tuple[int, ...]
    skipped: tuple[int, ...]
    spread: dict[str, DrawSpread]


@dataclass(frozen=True)
class SubsetDraws:
    """A stored ``run_subset_draws``: each statistic's spread over subsets, for R (``spread``) and D (``spread_D``)."""

    seeds: tuple[int, ...]
    spread: dict[str, DrawSpread]
    spread_D: dict[str, DrawSpread]


@dataclass(frozen=True)
class ClosestConstruction:
    """One of the ALiBi constructions closest to the paper's value: the three stresses and the choices that make it."""

    alibi: float
    sinusoidal: float
    rope: float
    alibi_best: bool
    normalization: str
    transform: str
    slope_choice: str
    slope: float
    n: int
    special: str
    kind: str


@dataclass(frozen=True)
class AlibiSearch:
    """A stored ``run_alibi_search``; ``n_within`` is keyed by the distance as text (``"0.01"``)."""

    n_constructions: int
    n_distinct: int
    n_within: dict[str, int]
    alibi_best_share: float
    closest: tuple[ClosestConstruction, ...]




@dataclass(frozen=True)
class StoredAlibiChoices:
    """A stored ``run_alibi_choices``: the parabolas, every combination, and the paper's value."""

    parabolas: tuple[AlibiParabola, ...]
    rows: tuple[AlibiChoice, ...]
    target: float


@dataclass(frozen=True)
class StoredStressTable:
    """What the chapter reads of a stored ``run_stress_table`` besides its rows: the ALiBi heads and SMACOF ranks."""

    best_head: int
    alibi_slopes: np.ndarray
    alibi_head_paper: np.ndarray
    smacof_k: np.ndarray
