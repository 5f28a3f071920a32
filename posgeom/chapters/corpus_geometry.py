r"""What the chapter "The geometry of a corpus" reports, from the runs of :mod:`posgeom.experiments.corpus_geometry`
(synthetic families and SST-2, Hellinger conventions, sampling noise, preprocessing) and the bootstrap intervals of
:mod:`posgeom.experiments.real_corpora`, read as typed records: its tables, the numbers its prose quotes (one mapping
or view per section, glued by :func:`posgeom.notebooks.glue_fields`) and its "Paper vs this book" row for C8.
"""

from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter

import numpy as np
import pandas as pd

from .. import geometry as geo, verdicts as rules
from ..config import settings_or_default as _settings
from ..registry import Result, stored_text
from ..registry.typed import as_record, stored
from ..experiments.corpus_geometry import CONFIGS, SYNTHETIC_FAMILIES, SensitivityRow, run_sst2_geometry, run_synthetic_geometry
from ..experiments.real_corpora import run_stress_intervals
from ..experiments.settings import find
from ..report import ComparisonRow
from ..wording import describe_scales, describe_sequences, special_words
from .real_corpora import PlainText
from .records import StoredSST2Geometry, BootstrapIntervals, StoredSyntheticGeometry, StressPair

__all__ = [
    "geometry_summary", "kinds_table", "KindsSummary", "kinds_summary", "noise_summary", "scale_table",
    "sensitivity_table", "sensitivity_summary", "interval_table", "interval_summary", "comparison_rows",
    "EARLY_POSITIONS", "SST2View", "sst2_view", "FamilyArrays", "synthetic_arrays", "NoiseScaling", "noise_scaling",
    "Captions", "captions", "sst2_caption", "KindGeometry", "StoredSensitivity",
]

#: Positions 1–20 of SST-2: reached by most phrases (position 0 is the [CLS] point mass).
EARLY_POSITIONS = slice(1, 21)
_ENCODINGS = ("sinusoidal", "rope", "alibi")


@dataclass(frozen=True)
class KindGeometry:
    """One corpus under one Hellinger convention of ``run_hellinger_kinds`` (``at="<corpus>.<convention>"``): the
    largest distance, the mass MDS clips, its full-rank error, and each encoding's :class:`StressPair`."""

    max_D: float
    clipped_mass: float
    full_rank_max_error: float
    stress: dict[str, StressPair]


@dataclass(frozen=True)
class StoredSensitivity:
    """A stored ``run_sensitivity``, typed: every preprocessing variant."""

    variants: tuple[SensitivityRow, ...]


def geometry_summary(synthetic: Result, sst2: Result) -> dict:
    """SST-2's geometry against its noise floor, and the synthetic families' share of pairs resolved, by glue
    name: ``d0`` the mean distance from position 0 ([CLS]) to the others, ``early_ratio`` the median D / F over
    :data:`EARLY_POSITIONS` (``early_reach`` phrases reach their end), ``*_above`` the share of pairs with D > 2F,
    ``excess_ratio_<family>`` the squared distance above the population's over the squared noise floor."""
    g, syn, early = as_record(sst2, StoredSST2Geometry), as_record(synthetic, StoredSyntheticGeometry), EARLY_POSITIONS
    return {"sst2_n": g.n_sequences, "sst2_reach_last": int(g.reach[-1]), "sst2_last_pos": int(g.positions[-1]),
            "d0": g.mean_D_from_0,
            "early_ratio": float(np.median(geo.offdiag((g.D / np.where(g.F > 0, g.F, np.nan))[early, early]))),
            "early_reach": int(g.reach[early.stop - 1]), "sst2_rms_D": g.rms_D, "sst2_rms_F": g.rms_F,
            "sst2_above": g.frac_above_2F, "syn_above_drift": syn.drift.frac_above_2F,
            "syn_above_stat": syn.stationary.frac_above_2F,
            **{f"excess_ratio_{fam}": getattr(syn, fam).excess_ratio for fam in ("markov", "regimes", "drift")}}


def kinds_table(kinds: Result) -> pd.DataFrame:
    """Per corpus and Hellinger convention: the largest distance, the mass MDS clips, its full-rank error, and
    the stresses of the sinusoidal and ALiBi encodings."""
    rows = []
    for corpus in ("drift", "sst2"):
        for kind in geo.HELLINGER_KINDS:
            v = as_record(kinds, KindGeometry, at=f"{corpus}.{kind}")
            rows.append({"corpus": corpus, "convention": kind, "largest distance": v.max_D,
                         "MDS clipped mass": v.clipped_mass, "full-rank MDS max error": v.full_rank_max_error,
                         **{f"{enc} ({norm})": getattr(v.stress[enc], norm) for enc in ("sinusoidal", "alibi")
                            for norm in ("paper", "scale_free")}})
    return pd.DataFrame(rows).set_index(["corpus", "convention"])


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


def kinds_summary(kinds: Result) -> KindsSummary:
    """The :class:`KindsSummary` of a ``run_hellinger_kinds`` result."""
    return as_record(kinds, KindsSummary)


def noise_summary(scaling: Result) -> dict:
    """How sampling noise scales with the number of sequences, by glue name: the delta method over the measured
    stationary distance (``dm_ratio_*``) and its smallest expected count at the smallest (``n_small``) and largest
    (``n_large``) size, and the drift family's excess over its floor at the largest."""
    v = noise_scaling(scaling)
    ratio = v.delta_method / v.stationary
    return {"dm_ratio_small": float(ratio[0]), "dm_ratio_large": float(ratio[-1]),
            "dm_min_count_small": float(v.min_expected_count[0]), "n_small": int(v.sizes[0]),
            "n_large": int(v.sizes[-1]), "drift_excess_ratio": float(v.drift_excess[-1]) / float(v.drift_floor[-1])}


def scale_table(synthetic: Result, sst2: Result, settings=None) -> pd.DataFrame:
    """The resolution numbers at this scale beside the committed paper-scale ones (where stored)."""
    settings = _settings(settings)
    syn, sst = (run_synthetic_geometry, synthetic, StoredSyntheticGeometry), (run_sst2_geometry, sst2, StoredSST2Geometry)
    rows = {  # label: (run, its result at this scale, its typed record), the number read, its paper-scale format
        "drift family: pairs with D > 2F": (*syn, "drift.frac_above_2F", "{:.3f}"),
        "drift family: excess / floor": (*syn, "drift.excess_ratio", "{:.3f}"),
        "SST-2: rms D": (*sst, "rms_D", "{:.4f}"), "SST-2: rms F": (*sst, "rms_F", "{:.4f}"),
        "SST-2: pairs with D > 2F": (*sst, "frac_above_2F", "{:.3f}"),
    }

    def read(result, record, number):
        return attrgetter(number)(as_record(result, record))

    return pd.DataFrame({label: {settings.scale: f"{read(result, record, number):.4f}", "paper scale": stored_text(
        run, settings, lambda r, record=record, number=number, fmt=fmt: fmt.format(read(r, record, number)))}
        for label, (run, result, record, number, fmt) in rows.items()}).T


def sensitivity_table(sensitivity: Result) -> pd.DataFrame:
    """One row per preprocessing variant: positions kept, the geometry's summaries, the encodings' stresses and
    which encoding has the lowest "scale_free" stress."""
    return pd.DataFrame([{
        "variant": v.name, "positions kept": v.n_kept, "rms D": v.rms_D, "pairs > 2F": v.frac_above_2F,
        "λ1 share": v.lambda1_share, "rank (tol 1e-2)": v.rank_tol, "rank (mass 0.9)": v.rank_mass,
        "MDS r=1 (scale_free)": v.mds1_scale_free,
        **{f"{enc} ({norm})": v.stress[enc][norm] for enc in _ENCODINGS for norm in ("paper", "scale_free")},
        "lowest scale_free": v.best_scale_free,
    } for v in as_record(sensitivity, StoredSensitivity).variants]).set_index("variant")


def _sin_vs_rope(variants) -> tuple[float, float]:
    """The largest |sinusoidal − RoPE| / RoPE ("scale_free" stress) and the smallest sinusoidal / RoPE ("paper"
    stress) over the variants."""
    sin, rope = ([v.stress[e] for v in variants] for e in ("sinusoidal", "rope"))
    return (max(abs(s["scale_free"] - r["scale_free"]) / r["scale_free"] for s, r in zip(sin, rope)),
            min(s["paper"] / r["paper"] for s, r in zip(sin, rope)))


def sensitivity_summary(sensitivity: Result) -> dict:
    """What the preprocessing changes, by glue name: the baseline's best encoding (``best_base``) and the variants
    that change it, the variants where ALiBi is best, the largest sinusoidal–RoPE gap, the smallest "paper" ratio,
    and the ranges of ALiBi's stresses and of the rank (mass 0.9)."""
    variants = as_record(sensitivity, StoredSensitivity).variants
    base = find(variants, name="baseline")
    changes = [v.name for v in variants if v is not base and v.best_scale_free != base.best_scale_free]
    alibi_best = [v.name for v in variants if v.best_scale_free == "alibi"]
    spans = {"alibi_paper": [v.stress["alibi"]["paper"] for v in variants],
             "alibi_sf": [v.stress["alibi"]["scale_free"] for v in variants], "rank_mass": [v.rank_mass for v in variants]}
    return {"best_base": base.best_scale_free, "best_changes": ", ".join(changes) if changes else "none",
            "alibi_best": ", ".join(alibi_best) if alibi_best else "no variant",
            **dict(zip(("gap_max", "paper_ratio_min"), _sin_vs_rope(variants))),
            **{f"{name}_{end}": f(xs) for name, xs in spans.items() for end, f in (("min", min), ("max", max))}}


_DIFFERENCES = ("sinusoidal-rope|scale_free", "alibi-sinusoidal|scale_free", "alibi-rope|scale_free")


def interval_table(intervals: Result, sensitivity: Result, settings=None) -> pd.DataFrame:
    """The bootstrap intervals over phrases of the baseline's stresses and of their differences, beside the
    committed paper-scale ones. The bootstrap's point estimates must be the sensitivity table's baseline
    stresses (the same matrix); a :class:`ValueError` says which differs."""
    settings = _settings(settings)
    iv = as_record(intervals, BootstrapIntervals)
    st, df = iv.statistics, iv.differences
    base = find(as_record(sensitivity, StoredSensitivity).variants, name="baseline")
    for e, z in ((e, z) for e in _ENCODINGS for z in ("paper", "scale_free")):
        if abs(st[f"{e}|{z}"].estimate - base.stress[e][z]) >= 1e-9:
            raise ValueError(f"the bootstrap's {e} {z} stress {st[f'{e}|{z}'].estimate!r} is not the baseline's "
                             f"{base.stress[e][z]!r}: the two were computed from different matrices")

    def paper_interval(key, table="statistics"):
        return stored_text(run_stress_intervals, settings, lambda r: getattr(as_record(r, BootstrapIntervals), table)[key].text())

    column = f"{settings.scale} (95% interval)"
    # the normalisations in words (docs/STYLE.md: no option values of the code in a table)
    words = {"scale_free": "scale-free", "paper": "the paper's"}
    rows = [{"stress of": e, "normalisation": words[z], column: st[f"{e}|{z}"].text(),
             "paper scale": paper_interval(f"{e}|{z}")} for z in ("scale_free", "paper") for e in _ENCODINGS]
    rows += [{"stress of": name.replace("|scale_free", ""), "normalisation": "scale-free (difference)",
              column: df[name].text("{:.4f}"), "paper scale": paper_interval(name, "differences")}
             for name in _DIFFERENCES]
    return pd.DataFrame(rows).set_index(["stress of", "normalisation"])


def interval_summary(intervals: Result) -> dict:
    """The two differences the chapter quotes with their 95% bootstrap intervals: ``sinrope_iv`` (sinusoidal −
    RoPE) and ``alibisin_iv`` (ALiBi − sinusoidal), as text displayed without quotes."""
    df = as_record(intervals, BootstrapIntervals).differences
    return {"sinrope_iv": PlainText(df["sinusoidal-rope|scale_free"].text("{:.4f}")),
            "alibisin_iv": PlainText(df["alibi-sinusoidal|scale_free"].text())}


def comparison_rows(sensitivity: Result, intervals: Result, settings=None) -> list[ComparisonRow]:
    """The chapter's "Paper vs this book" row for C8, decided by :func:`posgeom.verdicts.c8_sinusoidal_rope`
    from the bootstrap interval of the sinusoidal − RoPE difference and the smallest "paper" ratio over the
    sensitivity table's variants."""
    settings = _settings(settings)
    iv = as_record(intervals, BootstrapIntervals)
    st, sin_rope = iv.statistics, iv.differences["sinusoidal-rope|scale_free"]
    gap, ratio = _sin_vs_rope(as_record(sensitivity, StoredSensitivity).variants)
    return [
        ComparisonRow(
            "C8", ours=(f"scale-free stress: sinusoidal − RoPE = {sin_rope.text('{:.4f}')} (95% interval over "
                        f"phrases), within {gap:.1%} in every variant; paper: sinusoidal "
                        f"{st['sinusoidal|paper'].text('{:.0f}')} vs RoPE {st['rope|paper'].text()}, "
                        f"≥ {ratio:.0f}× in every variant"),
            scale=settings.scale, model="none (fixed encodings, d = 768, 12 heads)", corpus="SST-2 train",
            options="variants of the sensitivity table", decision=rules.c8_sinusoidal_rope(sin_rope, ratio),
        ),
    ]


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


def sst2_view(sst2: Result) -> SST2View:
    """The :class:`SST2View` of a ``run_sst2_geometry`` result."""
    return as_record(sst2, SST2View)


@dataclass(frozen=True)
class FamilyArrays:
    """One synthetic family's arrays of a ``run_synthetic_geometry`` result: the marginals ``mu`` and distances
    ``D`` of its sample and of its population (``*_pop``), the noise floor ``F``, and each position's reach."""

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
    return f"n = {CONFIGS[scale].sst2.n_positions}, {special_words(CONFIGS[scale].sst2.special)}"


def captions(settings=None) -> Captions:
    """The :class:`Captions` of the chapter at ``settings.scale`` (:data:`posgeom.experiments.corpus_geometry.CONFIGS`)."""
    settings = _settings(settings)
    conf = CONFIGS[settings.scale]
    syn, sst2 = conf.synthetic, conf.sst2
    return Captions(
        scale=settings.scale,
        synthetic=f"{syn.n_positions} positions, {syn.vocab_size:,} tokens, {describe_sequences(syn.n_sequences)}",
        n_positions=int(syn.n_positions), vocab_size=int(syn.vocab_size),
        # the options in words (docs/STYLE.md, rule 4), not "min_count 1, alpha 0"
        sst2=(f"{sst2_caption(settings.scale)}, positions reached "
              f"{'at least once' if sst2.min_count == 1 else f'{sst2.min_count:,} times or more'}, "
              f"{'no smoothing' if sst2.alpha == 0 else f'smoothing α = {sst2.alpha:g}'}"),
        sst2_texts=describe_sequences(sst2.max_texts, "phrases", random=True), n_rep=int(conf.noise.n_rep),
        quick_sequences=describe_sequences(CONFIGS["quick"].synthetic.n_sequences),
        paper_sequences=describe_sequences(CONFIGS["paper"].synthetic.n_sequences),
        sst2_scales=describe_scales(*(describe_sequences(CONFIGS[s].sst2.max_texts, "phrases", random=True)
                                      for s in ("quick", "paper"))))
