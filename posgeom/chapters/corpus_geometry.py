r"""What the chapter "The geometry of a corpus" reports, from its stored runs.

The runs of :mod:`posgeom.experiments.corpus_geometry` (the synthetic families and SST-2, the Hellinger
conventions, how sampling noise scales, the sensitivity to the preprocessing) and the bootstrap intervals of
:mod:`posgeom.experiments.real_corpora` are stored as dictionaries; this module builds the chapter's tables
from them, gives the numbers and phrases the chapter quotes as one summary per section (glued by
:func:`posgeom.notebooks.glue_fields`), and its "Paper vs this book" row for C8, decided by its rule in
:mod:`posgeom.verdicts`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import geometry as geo
from .. import verdicts as rules
from ..config import settings_or_default as _settings
from ..registry import Result, stored_text
from ..registry.typed import as_record, stored
from ..experiments.corpus_geometry import (
    SYNTHETIC_FAMILIES, SensitivityRow, run_sst2_geometry, run_synthetic_geometry,
)
from ..experiments.real_corpora import run_stress_intervals
from ..experiments.settings import find
from ..report import ComparisonRow
from ..wording import describe_scales, describe_sequences, special_words
from ..experiments.corpus_geometry import CONFIGS
from .real_corpora import PlainText
from .records import StoredSST2Geometry, BootstrapIntervals, StoredSyntheticGeometry, StressPair

__all__ = [
    "GeometrySummary", "geometry_summary", "kinds_table", "KindsSummary", "kinds_summary", "NoiseSummary",
    "noise_summary", "scale_table", "sensitivity_variants", "sensitivity_table", "SensitivitySummary",
    "sensitivity_summary", "interval_table", "IntervalSummary", "interval_summary", "comparison_rows",
    "EARLY_POSITIONS", "SST2View", "sst2_view", "FamilyArrays", "synthetic_arrays", "NoiseScaling", "noise_scaling",
    "Captions", "captions", "sst2_caption", "KindGeometry", "StoredSensitivity",
]

#: Positions 1–20 of SST-2: reached by most phrases (position 0 is the [CLS] point mass).
EARLY_POSITIONS = slice(1, 21)


@dataclass(frozen=True)
class KindGeometry:
    """One corpus under one Hellinger convention of ``run_hellinger_kinds`` (``at="<corpus>.<convention>"``): the
    largest distance, the mass MDS clips, its full-rank error, and each encoding's
    :class:`~posgeom.chapters.records.StressPair`."""

    max_D: float
    clipped_mass: float
    full_rank_max_error: float
    stress: dict[str, StressPair]


@dataclass(frozen=True)
class StoredSensitivity:
    """A stored ``run_sensitivity``, typed: every preprocessing variant."""

    variants: tuple[SensitivityRow, ...]


@dataclass(frozen=True)
class GeometrySummary:
    """SST-2's geometry against its noise floor, and the synthetic families' share of pairs resolved."""

    sst2_n: int
    sst2_reach_last: int
    sst2_last_pos: int
    d0: float                  # mean distance from position 0 ([CLS]) to the others
    early_ratio: float         # median D / F over the early positions
    early_reach: int           # phrases reaching position 20
    sst2_rms_D: float
    sst2_rms_F: float
    sst2_above: float          # share of pairs with D > 2F
    syn_above_drift: float
    syn_above_stat: float
    excess_ratio_markov: float  # squared distance above the population's, over the squared noise floor
    excess_ratio_regimes: float
    excess_ratio_drift: float


def geometry_summary(synthetic: Result, sst2: Result) -> GeometrySummary:
    """The :class:`GeometrySummary` of ``run_synthetic_geometry`` and ``run_sst2_geometry``."""
    g, syn = as_record(sst2, StoredSST2Geometry), as_record(synthetic, StoredSyntheticGeometry)
    D, F, early = g.D, g.F, EARLY_POSITIONS
    return GeometrySummary(
        sst2_n=g.n_sequences, sst2_reach_last=int(g.reach[-1]), sst2_last_pos=int(g.positions[-1]),
        d0=g.mean_D_from_0,
        early_ratio=float(np.median(geo.offdiag((D / np.where(F > 0, F, np.nan))[early, early]))),
        early_reach=int(g.reach[early.stop - 1]), sst2_rms_D=g.rms_D, sst2_rms_F=g.rms_F,
        sst2_above=g.frac_above_2F, syn_above_drift=syn.drift.frac_above_2F,
        syn_above_stat=syn.stationary.frac_above_2F, excess_ratio_markov=syn.markov.excess_ratio,
        excess_ratio_regimes=syn.regimes.excess_ratio, excess_ratio_drift=syn.drift.excess_ratio,
    )


def kinds_table(kinds: Result) -> pd.DataFrame:
    """Per corpus and Hellinger convention: the largest distance, the mass MDS clips, its full-rank error, and
    the stresses of the sinusoidal and ALiBi encodings."""
    rows = []
    for corpus in ("drift", "sst2"):
        for kind in geo.HELLINGER_KINDS:
            v = as_record(kinds, KindGeometry, at=f"{corpus}.{kind}")
            rows.append({"corpus": corpus, "convention": kind, "largest distance": v.max_D,
                         "MDS clipped mass": v.clipped_mass, "full-rank MDS max error": v.full_rank_max_error,
                         **{f"{enc} ({norm})": value for enc in ("sinusoidal", "alibi")
                            for norm, value in (("paper", v.stress[enc].paper), ("scale_free", v.stress[enc].scale_free))}})
    return pd.DataFrame(rows).set_index(["corpus", "convention"])


@dataclass(frozen=True)
class KindsSummary:
    """The Hellinger conventions compared, read from a ``run_hellinger_kinds`` result
    (:func:`posgeom.registry.typed.as_record`): geodesic over chord on SST-2, what MDS clips and misses, and the
    sinusoidal table's stresses under the chord and normalised conventions."""

    ratio_min_sst2: float = stored("sst2.geodesic_over_chord.min")
    ratio_max_sst2: float = stored("sst2.geodesic_over_chord.max")
    clip_geo_drift: float = stored("drift.geodesic.clipped_mass")
    err_geo_drift: float = stored("drift.geodesic.full_rank_max_error")
    err_chord_drift: float = stored("drift.chord.full_rank_max_error")
    sin_paper_chord: float = stored("sst2.chord.stress.sinusoidal.paper")
    sin_paper_norm: float = stored("sst2.normalized.stress.sinusoidal.paper")
    sin_sf_chord: float = stored("sst2.chord.stress.sinusoidal.scale_free")
    sin_sf_norm: float = stored("sst2.normalized.stress.sinusoidal.scale_free")


def kinds_summary(kinds: Result) -> KindsSummary:
    """The :class:`KindsSummary` of a ``run_hellinger_kinds`` result."""
    return as_record(kinds, KindsSummary)


@dataclass(frozen=True)
class NoiseSummary:
    """How sampling noise scales with the number of sequences: the delta method against the measured
    stationary distance at the smallest and largest size, and the drift family's excess over its floor."""

    dm_ratio_small: float
    dm_ratio_large: float
    dm_min_count_small: float
    n_small: int
    n_large: int
    drift_excess_ratio: float


def noise_summary(scaling: Result) -> NoiseSummary:
    """The :class:`NoiseSummary` of a ``run_noise_scaling`` result."""
    v = noise_scaling(scaling)
    ratio = v.delta_method / v.stationary
    return NoiseSummary(
        dm_ratio_small=float(ratio[0]), dm_ratio_large=float(ratio[-1]), dm_min_count_small=float(v.min_expected_count[0]),
        n_small=int(v.sizes[0]), n_large=int(v.sizes[-1]),
        drift_excess_ratio=float(v.drift_excess[-1]) / float(v.drift_floor[-1]),
    )


def scale_table(synthetic: Result, sst2: Result, settings=None) -> pd.DataFrame:
    """The resolution numbers at this scale beside the committed paper-scale ones (where stored)."""
    settings = _settings(settings)

    def at_paper(run, pick):
        return stored_text(run, settings, pick)

    def drift(r):
        return as_record(r, StoredSyntheticGeometry).drift

    def sst(r):
        return as_record(r, StoredSST2Geometry)

    d, s = drift(synthetic), sst(sst2)
    rows = {
        "drift family: pairs with D > 2F": (d.frac_above_2F, at_paper(
            run_synthetic_geometry, lambda r: f"{drift(r).frac_above_2F:.3f}")),
        "drift family: excess / floor": (d.excess_ratio, at_paper(
            run_synthetic_geometry, lambda r: f"{drift(r).excess_ratio:.3f}")),
        "SST-2: rms D": (s.rms_D, at_paper(run_sst2_geometry, lambda r: f"{sst(r).rms_D:.4f}")),
        "SST-2: rms F": (s.rms_F, at_paper(run_sst2_geometry, lambda r: f"{sst(r).rms_F:.4f}")),
        "SST-2: pairs with D > 2F": (s.frac_above_2F, at_paper(run_sst2_geometry,
                                                              lambda r: f"{sst(r).frac_above_2F:.3f}")),
    }
    return pd.DataFrame({k: {settings.scale: f"{q:.4f}", "paper scale": p} for k, (q, p) in rows.items()}).T


def sensitivity_variants(sensitivity: Result) -> list[SensitivityRow]:
    """The variants of a ``run_sensitivity`` result, as typed records."""
    return list(as_record(sensitivity, StoredSensitivity).variants)


def sensitivity_table(sensitivity: Result) -> pd.DataFrame:
    """One row per preprocessing variant: positions kept, the geometry's summaries, the encodings' stresses and
    which encoding has the lowest "scale_free" stress."""
    return pd.DataFrame([{
        "variant": v.name, "positions kept": v.n_kept, "rms D": v.rms_D, "pairs > 2F": v.frac_above_2F,
        "λ1 share": v.lambda1_share, "rank (tol 1e-2)": v.rank_tol, "rank (mass 0.9)": v.rank_mass,
        "MDS r=1 (scale_free)": v.mds1_scale_free,
        **{f"{enc} ({norm})": v.stress[enc][norm] for enc in ("sinusoidal", "rope", "alibi") for norm in ("paper", "scale_free")},
        "lowest scale_free": v.best_scale_free,
    } for v in sensitivity_variants(sensitivity)]).set_index("variant")


def _relative_gaps(variants) -> list[float]:
    return [abs(v.stress["sinusoidal"]["scale_free"] - v.stress["rope"]["scale_free"]) / v.stress["rope"]["scale_free"]
            for v in variants]


def _paper_ratios(variants) -> list[float]:
    return [v.stress["sinusoidal"]["paper"] / v.stress["rope"]["paper"] for v in variants]


@dataclass(frozen=True)
class SensitivitySummary:
    """What the preprocessing changes: the baseline's best encoding and the variants that change it, the
    variants where ALiBi is best, the sinusoidal–RoPE gap and ratio, ALiBi's range, and the rank's range."""

    best_base: str
    best_changes: str
    alibi_best: str
    gap_max: float
    paper_ratio_min: float
    alibi_paper_min: float
    alibi_paper_max: float
    alibi_sf_min: float
    alibi_sf_max: float
    rank_mass_min: int
    rank_mass_max: int


def sensitivity_summary(sensitivity: Result) -> SensitivitySummary:
    """The :class:`SensitivitySummary` of a ``run_sensitivity`` result."""
    variants = sensitivity_variants(sensitivity)
    base = find(variants, name="baseline")
    changes = [v.name for v in variants if v is not base and v.best_scale_free != base.best_scale_free]
    alibi_best = [v.name for v in variants if v.best_scale_free == "alibi"]
    alibi_paper = [v.stress["alibi"]["paper"] for v in variants]
    alibi_sf = [v.stress["alibi"]["scale_free"] for v in variants]
    ranks = [v.rank_mass for v in variants]
    return SensitivitySummary(
        best_base=base.best_scale_free, best_changes=", ".join(changes) if changes else "none",
        alibi_best=", ".join(alibi_best) if alibi_best else "no variant", gap_max=max(_relative_gaps(variants)),
        paper_ratio_min=min(_paper_ratios(variants)), alibi_paper_min=min(alibi_paper), alibi_paper_max=max(alibi_paper),
        alibi_sf_min=min(alibi_sf), alibi_sf_max=max(alibi_sf), rank_mass_min=min(ranks), rank_mass_max=max(ranks),
    )


_ENCODINGS = ("sinusoidal", "rope", "alibi")
_DIFFERENCES = ("sinusoidal-rope|scale_free", "alibi-sinusoidal|scale_free", "alibi-rope|scale_free")


def interval_table(intervals: Result, sensitivity: Result, settings=None) -> pd.DataFrame:
    """The bootstrap intervals over phrases of the baseline's stresses and of their differences, beside the
    committed paper-scale ones. The bootstrap's point estimates must be the sensitivity table's baseline
    stresses (the same matrix); a :class:`ValueError` says which differs."""
    settings = _settings(settings)
    iv = as_record(intervals, BootstrapIntervals)
    st, df = iv.statistics, iv.differences
    base = find(sensitivity_variants(sensitivity), name="baseline")
    for e in _ENCODINGS:
        for z in ("paper", "scale_free"):
            if abs(st[f"{e}|{z}"].estimate - base.stress[e][z]) >= 1e-9:
                raise ValueError(f"the bootstrap's {e} {z} stress {st[f'{e}|{z}'].estimate!r} is not the baseline's "
                                 f"{base.stress[e][z]!r}: the two were computed from different matrices")

    def paper_interval(key, differences=False):
        def pick(r):
            paper = as_record(r, BootstrapIntervals)
            return (paper.differences if differences else paper.statistics)[key].text()
        return stored_text(run_stress_intervals, settings, pick)

    column = f"{settings.scale} (95% interval)"
    # the normalisations in words (docs/STYLE.md: no option values of the code in a table)
    words = {"scale_free": "scale-free", "paper": "the paper's"}
    rows = [{"stress of": e, "normalisation": words[z], column: st[f"{e}|{z}"].text(),
             "paper scale": paper_interval(f"{e}|{z}")} for z in ("scale_free", "paper") for e in _ENCODINGS]
    rows += [{"stress of": name.replace("|scale_free", ""), "normalisation": "scale-free (difference)",
              column: df[name].text("{:.4f}"), "paper scale": paper_interval(name, differences=True)}
             for name in _DIFFERENCES]
    return pd.DataFrame(rows).set_index(["stress of", "normalisation"])


@dataclass(frozen=True)
class IntervalSummary:
    """The two differences the chapter quotes, with their 95% bootstrap intervals."""

    sinrope_iv: PlainText
    alibisin_iv: PlainText


def interval_summary(intervals: Result) -> IntervalSummary:
    """The :class:`IntervalSummary` of a ``run_stress_intervals`` result."""
    df = as_record(intervals, BootstrapIntervals).differences
    return IntervalSummary(PlainText(df["sinusoidal-rope|scale_free"].text("{:.4f}")),
                           PlainText(df["alibi-sinusoidal|scale_free"].text()))


def comparison_rows(sensitivity: Result, intervals: Result, settings=None) -> list:
    """The chapter's "Paper vs this book" row for C8, decided by :func:`posgeom.verdicts.c8_sinusoidal_rope`
    from the bootstrap interval of the sinusoidal − RoPE difference and the smallest "paper" ratio over the
    sensitivity table's variants.

    Returns
    -------
    list of posgeom.report.ComparisonRow
    """

    settings = _settings(settings)
    variants = sensitivity_variants(sensitivity)
    iv = as_record(intervals, BootstrapIntervals)
    st, sin_rope = iv.statistics, iv.differences["sinusoidal-rope|scale_free"]
    ratio = min(_paper_ratios(variants))
    return [
        ComparisonRow(
            "C8", ours=(f"scale-free stress: sinusoidal − RoPE = {sin_rope.text('{:.4f}')} (95% interval over "
                        f"phrases), within {max(_relative_gaps(variants)):.1%} in every variant; paper: sinusoidal "
                        f"{st['sinusoidal|paper'].text('{:.0f}')} vs RoPE {st['rope|paper'].text()}, "
                        f"≥ {ratio:.0f}× in every variant"),
            scale=settings.scale, model="none (fixed encodings, d = 768, 12 heads)", corpus="SST-2 train",
            options="variants of the sensitivity table", decision=rules.c8_sinusoidal_rope(sin_rope, ratio),
        ),
    ]


@dataclass(frozen=True)
class SST2View:
    """The arrays of a ``run_sst2_geometry`` result the chapter draws, typed (:func:`posgeom.registry.typed.as_record`):
    the distances ``D`` and their noise floor
    ``F``, the positions and their reach, the most frequent tokens (``top_strings``) with their probability
    at each position (``top_probs``, positions × tokens), and the rms distance, rms floor and share of pairs
    resolved (D > 2F) for each number of phrases used (``sizes``)."""

    D: np.ndarray
    F: np.ndarray
    positions: np.ndarray
    reach: np.ndarray
    top_strings: np.ndarray
    top_probs: np.ndarray
    sizes: np.ndarray
    size_rms_D: np.ndarray
    size_rms_F: np.ndarray
    size_frac_above_2F: np.ndarray


def sst2_view(sst2: Result) -> SST2View:
    """The :class:`SST2View` of a ``run_sst2_geometry`` result."""
    return as_record(sst2, SST2View)


@dataclass(frozen=True)
class FamilyArrays:
    """The arrays of one synthetic family of a ``run_synthetic_geometry`` result, typed (``as_record(result,
    FamilyArrays, at=family, arrays_at=family)``): the marginals ``mu`` and distances ``D`` of its sample and of its
    population (``*_pop``), the noise floor ``F``, and the reach of each position."""

    mu: np.ndarray
    mu_pop: np.ndarray
    D: np.ndarray
    D_pop: np.ndarray
    F: np.ndarray
    reach: np.ndarray


def synthetic_arrays(synthetic: Result) -> dict[str, FamilyArrays]:
    """``{family: FamilyArrays}`` of every synthetic family of a ``run_synthetic_geometry`` result."""
    return {fam: as_record(synthetic, FamilyArrays, at=fam, arrays_at=fam) for fam in SYNTHETIC_FAMILIES}


@dataclass(frozen=True)
class NoiseScaling:
    """How sampling noise scales with the number of sequences ``sizes``, typed from a ``run_noise_scaling`` result
    (:func:`posgeom.registry.typed.as_record`): on the stationary family the measured mean squared distance (its
    population distance is 0) against the bootstrap and split-half noise floors and the delta method's
    (v − 1)/(2N), and the smallest expected count the delta method rests on; on the drift family the squared
    distance added by sampling against the bootstrap floor."""

    sizes: np.ndarray
    stationary: np.ndarray = stored("stationary_mean_sq")
    bootstrap: np.ndarray = stored("bootstrap_mean_sq")
    split_half: np.ndarray = stored("split_half_mean_sq")
    delta_method: np.ndarray = stored("delta_method_mean_sq")
    drift_excess: np.ndarray = stored("drift_excess_sq")
    drift_floor: np.ndarray = stored("drift_F_sq")
    min_expected_count: np.ndarray


def noise_scaling(scaling: Result) -> NoiseScaling:
    """The :class:`NoiseScaling` of a ``run_noise_scaling`` result."""
    return as_record(scaling, NoiseScaling)


@dataclass(frozen=True)
class Captions:
    """What the chapter's figure captions state about the corpora, from the settings in force (glued as
    ``cgcap_<field>``), so that a caption is right at both scales."""

    scale: str
    synthetic: str        # positions, tokens and sequences of a synthetic family
    n_positions: int      # of the synthetic families
    vocab_size: int
    sst2: str             # the SST-2 corpus and its preprocessing
    sst2_texts: str       # how many of its phrases
    n_rep: int            # noise-floor replicates
    quick_sequences: str  # a synthetic family's sample at each scale, for the "What this chapter needs" box
    paper_sequences: str
    sst2_scales: str      # SST-2's phrases at both scales, for the box


def sst2_caption(scale: str) -> str:
    """SST-2's counting at ``scale`` in words for a caption: ``"n = 64, the model's special tokens"`` (the corpus
    of :data:`posgeom.experiments.corpus_geometry.CONFIGS`, which the optimal encoding, minimal
    parametrisation and sinusoids chapters reuse)."""

    sst2 = CONFIGS[scale].sst2
    return f"n = {sst2.n_positions}, {special_words(sst2.special)}"


def captions(settings=None) -> Captions:
    """The :class:`Captions` of the chapter at ``settings.scale`` (:data:`posgeom.experiments.corpus_geometry.CONFIGS`)."""

    settings = _settings(settings)
    conf = CONFIGS[settings.scale]
    syn, sst2 = conf.synthetic, conf.sst2
    quick, paper = CONFIGS["quick"], CONFIGS["paper"]
    return Captions(
        scale=settings.scale,
        synthetic=f"{syn.n_positions} positions, {syn.vocab_size:,} tokens, {describe_sequences(syn.n_sequences)}",
        n_positions=int(syn.n_positions), vocab_size=int(syn.vocab_size),
        # the options in words (docs/STYLE.md, rule 4), not "min_count 1, alpha 0"
        sst2=(f"{sst2_caption(settings.scale)}, positions reached "
              f"{'at least once' if sst2.min_count == 1 else f'{sst2.min_count:,} times or more'}, "
              f"{'no smoothing' if sst2.alpha == 0 else f'smoothing α = {sst2.alpha:g}'}"),
        sst2_texts=describe_sequences(sst2.max_texts, "phrases", random=True), n_rep=int(conf.noise.n_rep),
        quick_sequences=describe_sequences(quick.synthetic.n_sequences),
        paper_sequences=describe_sequences(paper.synthetic.n_sequences),
        sst2_scales=describe_scales(*(describe_sequences(c.sst2.max_texts, "phrases", random=True) for c in (quick, paper))))
