"""Typed records of what run_noise_aware_rank, run_resolvable_splits, run_alibi_search, run_alibi_choices and
run_stress_table (:mod:`posgeom.experiments.real_corpora`) stores, read back by
:func:`posgeom.registry.typed.as_record`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


__all__ = ["NoiseAwareRank", "DrawSpread", "ResolvableSplits", "ClosestConstruction", "AlibiSearch",
    "AlibiParabola", "AlibiChoice", "StoredAlibiChoices", "StoredStressTable"]


@dataclass(frozen=True)
class NoiseAwareRank:
    """A stored ``run_noise_aware_rank``, typed: the rank in words, its interval and level, the first cross-fitted
    direction's share, and the positions it rests on."""

    text: str
    interval: tuple[int, int]
    level: float
    first_share: float
    n_positions: int


@dataclass(frozen=True)
class DrawSpread:
    """A statistic over draws: mean, sample sd, lowest and highest."""

    mean: float
    sd: float
    min: float
    max: float


@dataclass(frozen=True)
class ResolvableSplits:
    """A stored ``run_resolvable_splits``, typed: the cross-half splits used (and skipped), and each statistic's
    spread over them."""

    seeds: tuple[int, ...]
    skipped: tuple[int, ...]
    spread: dict[str, DrawSpread]


@dataclass(frozen=True)
class ClosestConstruction:
    """One of the constructions of ALiBi closest to the paper's value (``run_alibi_search``): whether ALiBi has
    the lowest stress in it."""

    alibi_best: bool


@dataclass(frozen=True)
class AlibiSearch:
    """A stored ``run_alibi_search``, typed: the constructions tried and how many distinct values they give, how
    many come within each distance of the paper's value (by distance, as text: ``"0.01"``), the share where
    ALiBi is lowest, and the closest constructions."""

    n_constructions: int
    n_distinct: int
    n_within: dict[str, int]
    alibi_best_share: float
    closest: tuple[ClosestConstruction, ...]


@dataclass(frozen=True)
class AlibiParabola:
    """ALiBi's "paper" stress as a parabola in its slope m under one set of choices (``run_alibi_choices``): the
    convention, positions and special tokens, its minimum and best slope, the slopes that reach the paper's
    value, its coefficients (sums of a², a·d and d²) and the positions kept (fields in the stored order: the
    chapter's tables list them so)."""

    kind: str
    m_minus: float
    m_plus: float
    m_star: float
    minimum: float
    n: int
    n_kept: int
    saa: float
    sad: float
    sdd: float
    special: str


@dataclass(frozen=True)
class AlibiChoice:
    """One combination of ALiBi's unstated choices (``run_alibi_choices``): heads, convention, positions, both
    stresses, the slope and how it was chosen, special tokens (in the stored order)."""

    heads: int
    kind: str
    n: int
    paper: float
    scale_free: float
    slope: float
    slope_choice: str
    special: str


@dataclass(frozen=True)
class StoredAlibiChoices:
    """A stored ``run_alibi_choices``, typed: the parabola under each set of choices, every combination, and the
    paper's value."""

    parabolas: tuple[AlibiParabola, ...]
    rows: tuple[AlibiChoice, ...]
    target: float


@dataclass(frozen=True)
class StoredStressTable:
    """What the chapter reads of a stored ``run_stress_table`` besides its rows
    (:func:`posgeom.experiments.real_corpora.stress_records`): the ALiBi head of lowest stress, each head's slope
    and "paper" stress, and the ranks at which SMACOF was compared with MDS."""

    best_head: int
    alibi_slopes: np.ndarray
    alibi_head_paper: np.ndarray
    smacof_k: np.ndarray
