r"""What the chapter "The geometry of a corpus" adds to the runs of :mod:`posgeom.experiments.corpus_geometry` and
:mod:`posgeom.experiments.real_corpora`: typed views of their results (the page draws and glues their fields), the
sinusoidal–RoPE comparison over the preprocessing variants, the "Paper vs this book" row for C8, and the captions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import verdicts as rules
from ..config import settings_or_default as _settings
from ..registry import Result
from ..registry.typed import as_record, stored
from ..experiments.corpus_geometry import CONFIGS, SYNTHETIC_FAMILIES, SensitivityRow
from ..report import ComparisonRow, decided_rows
from ..wording import describe_scales, describe_sequences, special_words
from ..experiments.records.common import BootstrapIntervals, StressPair
from ..experiments.records.corpus_geometry import StoredSST2Geometry

__all__ = ["KindGeometry", "KindsSummary", "StoredSensitivity", "SST2View", "FamilyArrays", "synthetic_arrays",
           "NoiseScaling", "sin_vs_rope", "c8_row", "comparison_rows", "sst2_caption", "captions"]


@dataclass(frozen=True)
class KindGeometry:
    """One corpus under one Hellinger convention of ``run_hellinger_kinds`` (``at="<corpus>.<convention>"``): the
    largest distance, the mass MDS clips, its full-rank error, and each encoding's :class:`StressPair`."""

    max_D: float
    clipped_mass: float
    full_rank_max_error: float
    stress: dict[str, StressPair]


@dataclass(frozen=True)
class KindsSummary:
    """The Hellinger conventions compared (a ``run_hellinger_kinds`` result): geodesic over chord on SST-2, what
    MDS clips and misses, and the sinusoidal table's stresses under the chord and normalised conventions."""

    ratio_min_sst2: float = stored("sst2.geodesic_over_chord.min")
    ratio_max_sst2: float = stored("sst2.geodesic_over_chord.max")
    clip_geo_drift: float = stored("drift.geodesic.clipped_mass")
    err_geo_drift: float = stored("drift.geodesic.full_rank_max_error")
    err_chord_drift: float = stored("drift.chord.full_rank_max_error")
    sin_paper_chord: float = stored("sst2.chord.stress.sinusoidal.paper")
    sin_paper_norm: float = stored("sst2.normalized.stress.sinusoidal.paper")
    sin_sf_chord: float = stored("sst2.chord.stress.sinusoidal.scale_free")
    sin_sf_norm: float = stored("sst2.normalized.stress.sinusoidal.scale_free")


@dataclass(frozen=True)
class StoredSensitivity:
    """A stored ``run_sensitivity``, typed: every preprocessing variant."""

    variants: tuple[SensitivityRow, ...]


@dataclass(frozen=True)
class SST2View(StoredSST2Geometry):
    """A ``run_sst2_geometry`` result with the arrays the chapter draws besides D, F, positions and reach: the most
    frequent tokens (``top_strings``) with their probability at each position (``top_probs``, positions × tokens),
    and the rms distance, rms floor and share of pairs resolved (D > 2F) for each number of phrases (``sizes``)."""

    top_strings: np.ndarray
    top_probs: np.ndarray
    sizes: np.ndarray
    size_rms_D: np.ndarray
    size_rms_F: np.ndarray
    size_frac_above_2F: np.ndarray


@dataclass(frozen=True)
class FamilyArrays:
    """One synthetic family's population marginals ``mu_pop`` (positions × tokens) and sample distances ``D``."""

    mu_pop: np.ndarray
    D: np.ndarray


def synthetic_arrays(synthetic: Result) -> dict[str, FamilyArrays]:
    """``{family: FamilyArrays}`` of every synthetic family of a ``run_synthetic_geometry`` result."""
    return {fam: as_record(synthetic, FamilyArrays, at=fam, arrays_at=fam) for fam in SYNTHETIC_FAMILIES}


@dataclass(frozen=True)
class NoiseScaling:
    """Sampling noise against the number of sequences ``sizes`` (``run_noise_scaling``): on the stationary family
    the mean squared distance (0 in the population) against the bootstrap, split-half and delta-method ((v − 1)/(2N),
    with its smallest expected count) floors; on the drift family the squared distance sampling adds, and its floor."""

    sizes: np.ndarray
    stationary: np.ndarray = stored("stationary_mean_sq")
    bootstrap: np.ndarray = stored("bootstrap_mean_sq")
    split_half: np.ndarray = stored("split_half_mean_sq")
    delta_method: np.ndarray = stored("delta_method_mean_sq")
    drift_excess: np.ndarray = stored("drift_excess_sq")
    drift_floor: np.ndarray = stored("drift_F_sq")
    min_expected_count: np.ndarray


def sin_vs_rope(variants: tuple[SensitivityRow, ...]) -> tuple[float, float]:
    """The largest |sinusoidal − RoPE| / RoPE ("scale_free" stress) and the smallest sinusoidal / RoPE ("paper"
    stress) over the preprocessing variants."""
    sin, rope = ([v.stress[e] for v in variants] for e in ("sinusoidal", "rope"))
    return (max(abs(s["scale_free"] - r["scale_free"]) / r["scale_free"] for s, r in zip(sin, rope)),
            min(s["paper"] / r["paper"] for s, r in zip(sin, rope)))


def c8_row(variants: tuple[SensitivityRow, ...], intervals: BootstrapIntervals, scale: str) -> ComparisonRow:
    """C8, decided by :func:`posgeom.verdicts.c8_sinusoidal_rope` from the bootstrap interval of the sinusoidal −
    RoPE difference ("scale_free" stress) and the smallest "paper" ratio over the variants."""
    st, sin_rope = intervals.statistics, intervals.differences["sinusoidal-rope|scale_free"]
    gap, ratio = sin_vs_rope(variants)
    return ComparisonRow(
        "C8", ours=(f"scale-free stress: sinusoidal − RoPE = {sin_rope.text('{:.4f}')} (95% interval over phrases), "
                    f"within {gap:.1%} in every variant; paper: sinusoidal {st['sinusoidal|paper'].text('{:.0f}')} vs "
                    f"RoPE {st['rope|paper'].text()}, ≥ {ratio:.0f}× in every variant"),
        scale=scale, model="none (fixed encodings, d = 768, 12 heads)", corpus="SST-2 train",
        options="variants of the sensitivity table", decision=rules.c8_sinusoidal_rope(sin_rope, ratio))


def comparison_rows(sensitivity: Result, intervals: Result, settings=None) -> list[ComparisonRow]:
    """The chapter's "Paper vs this book" rows (C8) from a ``run_sensitivity`` and a ``run_stress_intervals``."""
    settings = _settings(settings)
    return decided_rows([("C8", lambda: c8_row(as_record(sensitivity, StoredSensitivity).variants,
                                                as_record(intervals, BootstrapIntervals), settings.scale))], settings)


def sst2_caption(scale: str) -> str:
    """SST-2's counting at ``scale`` in words for a caption: ``"n = 64, the model's special tokens"`` (the corpus of
    :data:`posgeom.experiments.corpus_geometry.CONFIGS`, which the chapters after this one reuse)."""
    return f"n = {CONFIGS[scale].sst2.n_positions}, {special_words(CONFIGS[scale].sst2.special)}"


def captions(settings=None) -> dict:
    """What the captions state about the corpora at ``settings.scale`` (glued as ``cgcap_<name>``); ``quick_sequences``,
    ``paper_sequences`` and ``sst2_scales`` state both scales, for the box "What this chapter needs"."""
    scale = _settings(settings).scale
    syn, sst2 = CONFIGS[scale].synthetic, CONFIGS[scale].sst2
    return dict(
        scale=scale, n_positions=int(syn.n_positions), vocab_size=int(syn.vocab_size),
        synthetic=f"{syn.n_positions} positions, {syn.vocab_size:,} tokens, {describe_sequences(syn.n_sequences)}",
        # the options in words (docs/STYLE.md, rule 4), not "min_count 1, alpha 0"
        sst2=(f"{sst2_caption(scale)}, positions reached "
              f"{'at least once' if sst2.min_count == 1 else f'{sst2.min_count:,} times or more'}, "
              f"{'no smoothing' if sst2.alpha == 0 else f'smoothing α = {sst2.alpha:g}'}"),
        sst2_texts=describe_sequences(sst2.max_texts, "phrases", random=True), n_rep=int(CONFIGS[scale].noise.n_rep),
        **{f"{s}_sequences": describe_sequences(CONFIGS[s].synthetic.n_sequences) for s in ("quick", "paper")},
        sst2_scales=describe_scales(*(describe_sequences(CONFIGS[s].sst2.max_texts, "phrases", random=True)
                                      for s in ("quick", "paper"))))
