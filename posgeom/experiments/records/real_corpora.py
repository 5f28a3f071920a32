"""Typed records of what run_corpus_geometry, run_noise_aware_rank, run_resolvable_splits, run_subset_draws,
run_alibi_search, run_alibi_choices and run_stress_table (:mod:`posgeom.experiments.real_corpora`) stores, read back
by :func:`posgeom.registry.typed.as_record`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...registry.typed import stored

__all__ = ["CorpusGeometry", "NoiseAwareRank", "DrawSpread", "ResolvableSplits", "SubsetDraws", "ClosestConstruction",
           "AlibiSearch", "AlibiParabola", "AlibiChoice", "StoredAlibiChoices", "StoredStressTable"]


@dataclass(frozen=True)
class CorpusGeometry:
    """A stored ``run_corpus_geometry``, typed: the corpus, its counts, the geometry's summaries, and the arrays the
    chapters draw (``D``, its bootstrap floor ``noise``, the resolvable ``R``, reach and self-noise per position, the
    eigenvalues of B for D and for R)."""
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
    """A stored ``run_noise_aware_rank``, typed: the rank in words, its interval and level, the first cross-fitted
    direction's share, the positions it rests on, the threshold τ and the cross-fitted eigenvalues (splits × k)."""
    text: str
    interval: tuple[int, int]
    level: float
    first_share: float
    n_positions: int
    threshold: float
    eigenvalues: np.ndarray


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
class SubsetDraws:
    """A stored ``run_subset_draws``, typed: the subsets drawn, and each statistic's spread over them for the
    resolvable geometry R (``spread``) and for D (``spread_D``)."""
    seeds: tuple[int, ...]
    spread: dict[str, DrawSpread]
    spread_D: dict[str, DrawSpread]


@dataclass(frozen=True)
class ClosestConstruction:
    """One of the constructions of ALiBi closest to the paper's value (``run_alibi_search``): the stresses of ALiBi,
    the sinusoidal table and RoPE in it, whether ALiBi's is the lowest, and the choices that make it (normalisation,
    transform, slope and how it was chosen, positions, special tokens, Hellinger form)."""
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
