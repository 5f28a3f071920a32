r"""The chapter "The optimal encoding" (:mod:`posgeom.experiments.optimal_encoding`): the readings its claims share
with its prose, the rows for C3 and C6, and the captions."""

from __future__ import annotations

from functools import partial

from .. import verdicts as rules
from ..config import settings_or_default as _settings
from ..encodings.identifiers import Encoding
from ..geometry import Interval
from ..geometry.stress import StressNormalization
from ..registry import Result, stored_text
from ..registry.typed import as_record
from ..experiments.corpus_geometry import CONFIGS as CORPUS_CONFIGS, SYNTHETIC_FAMILIES
from ..experiments.optimal_encoding import (CONFIGS, ExactEmbedding, OneHotLayouts, SmacofGain, StoredComparison,
                                            StressIntervals, run_comparison_intervals)
from ..report import ComparisonRow, decided_rows
from ..wording import describe_scales, describe_sequences, short_float
from .corpus_geometry import captions as corpus_captions, sst2_caption

__all__ = ["CORPORA", "interval", "mds3_vs_sinusoidal", "below_beyond_noise", "exact_summary", "near_zero",
           "c3_reproduces_row", "c6_row", "c3_least_stress_row", "c3_exact_row", "c3_beats_row", "comparison_rows",
           "captions"]

#: The corpora of the comparison: the synthetic families, then SST-2.
CORPORA = tuple(SYNTHETIC_FAMILIES) + ("sst2",)
_ALL_CORPORA = "4 synthetic families, SST-2 train"
_row = partial(ComparisonRow, model="none")


def interval(intervals: Result, corpus: str, encoding: str,
             norm: StressNormalization = StressNormalization.SCALE_FREE) -> Interval:
    """The stored bootstrap interval of one encoding's stress in ``run_comparison_intervals``."""
    return as_record(intervals, StressIntervals, at=corpus).statistics[encoding][norm]


def mds3_vs_sinusoidal(intervals: Result) -> dict[str, Interval]:
    """Rank-3 MDS − sinusoidal ("scale_free" stress) with its bootstrap interval, by corpus."""
    differences = {c: as_record(intervals, StressIntervals, at=c).differences for c in CORPORA}
    scale_free = StressNormalization.SCALE_FREE
    return {c: d[Encoding.MDS_RANK3][Encoding.SINUSOIDAL][scale_free] for c, d in differences.items()}


def below_beyond_noise(differences: dict[str, Interval]) -> list[str]:
    """The corpora whose difference is below 0 beyond the sampling uncertainty (its whole interval)."""
    return [c for c, iv in differences.items() if iv.high < 0]


def exact_summary(exact: Result) -> dict:
    """A ``run_exact_embedding`` result: full-rank MDS's largest chord and geodesic errors, the corpora whose
    geodesic B has negative eigenvalues, and the rank of SST-2's B."""
    v = {c: as_record(exact, ExactEmbedding, at=c) for c in CORPORA}
    return {"chord_err": float(max(v[c].chord.full_rank_max_error for c in CORPORA)),
            "geo_err": float(max(v[c].geodesic.full_rank_max_error for c in CORPORA)),
            "geo_bad": ", ".join(c for c in CORPORA if v[c].geodesic.n_negative_beyond_rounding > 0) or "none",
            "sst2_rank": v["sst2"].chord.numerical_rank}


def near_zero(iv: Interval) -> str:
    """A stress that is 0 up to rounding, said so instead of a signed interval of rounding errors."""
    bound = max(abs(iv.low), abs(iv.high), abs(iv.estimate))
    return f"0 up to rounding (estimate and 95% interval within ±{bound:.0e})" if bound < 1e-12 else iv.text("{:.1e}")


def c3_reproduces_row(chord_err: float, scale: str) -> ComparisonRow:
    """C3, "MDS reproduces the corpus geometry", from full-rank MDS's largest error (chord distance)."""
    return _row("C3", paper="MDS reproduces the corpus geometry as well as possible", scale=scale,
                ours=(f"full-rank MDS reproduces D to {chord_err:.1e} on every corpus (chord distance); exact, "
                      "no sampling interval: it holds for every sample"), corpus=f"{_ALL_CORPORA} (n = 64)",
                options="chord Hellinger, the model's special tokens", decision=rules.c3_full_rank_mds(chord_err))


def c6_row(mds_sst2: Interval, paper_scale: str, scale: str) -> ComparisonRow:
    """C6, from full-rank MDS's scale-free stress on SST-2 with its bootstrap interval (and its paper-scale text)."""
    return _row("C6", ours=(f"full-rank MDS on SST-2: scale-free stress {near_zero(mds_sst2)} (bootstrap over "
                            f"phrases); paper scale: {paper_scale}"), scale=scale,
                corpus="SST-2 train (n = 64)", options="chord Hellinger; MDS at full rank (≤ d = 768)",
                decision=rules.c6_near_zero([mds_sst2.low, mds_sst2.high, mds_sst2.estimate],
                                            note="; IMDB is checked in the chapter on real corpora"))


def c3_least_stress_row(gain: SmacofGain, one_hot: OneHotLayouts, scale: str) -> ComparisonRow:
    """C3, "classical MDS has the least stress", from SMACOF's gain on SST-2 and the one-hot counter-example."""
    return _row("C3", paper="classical MDS is the best achievable encoding (least stress)", scale=scale,
                ours=(f"SMACOF from MDS lowers the paper's stress by {min(gain.gain):.0%}–{max(gain.gain):.0%} "
                      f"at ranks {gain.ranks[0]}–{gain.ranks[-1]} on SST-2; 1/6 vs 1/9 on three one-hot points "
                      "(exact; no sampling interval: a counter-example needs one matrix)"),
                corpus="SST-2 train (n = 64); three one-hot distributions", options="the paper's normalisation",
                decision=rules.c3_least_stress(gain.gain, one_hot.mds_stress, one_hot.smacof_stress))


def c3_exact_row(chord_err: float, geo_bad: str, sst2_rank: int, scale: str) -> ComparisonRow:
    """C3, "exact reproduction is impossible", from three readings of :func:`exact_summary`."""
    return _row("C3", paper="exact reproduction is impossible (curved geometry)", scale=scale,
                ours=(f"chord: exact to {chord_err:.1e}; geodesic: negative eigenvalues on "
                      f"{geo_bad if geo_bad != 'none' else 'no corpus'}; rank(B) on SST-2 = {sst2_rank} "
                      "< d = 768 (exact algebra, no sampling interval)"),
                corpus=_ALL_CORPORA, options="chord and geodesic Hellinger",
                decision=rules.c3_exact_impossible(chord_err, sst2_rank, 768))


def c3_beats_row(mds3_vs_sin: dict[str, Interval], pretrained: str, scale: str) -> ComparisonRow:
    """C3, "MDS beats the other encodings", from rank-3 MDS − sinusoidal with its interval on every corpus."""
    return _row("C3", paper="MDS beats the other encodings on every corpus", scale=scale,
                ours=("rank-3 MDS − sinusoidal (scale-free stress, 95% interval over sequences): "
                      + "; ".join(f"{c} {mds3_vs_sin[c].text('{:.3f}')}" for c in CORPORA)
                      + "; below it beyond the sampling uncertainty on "
                      + (", ".join(below_beyond_noise(mds3_vs_sin)) or "no corpus")),
                model=f"learned table: {pretrained}", corpus=_ALL_CORPORA,
                options="scale-free stress; d = 50 (synthetic), 768 (SST-2)",
                decision=rules.c3_beats_other_encodings(mds3_vs_sin))


def comparison_rows(comparison: Result, intervals: Result, exact: Result, one_hot: Result, gain: Result,
                    settings=None) -> list[ComparisonRow]:
    """The chapter's "Paper vs this book" rows for C3 (four checks) and C6, from its runs' results."""
    settings = _settings(settings)
    scale, ex, mds_sst2 = settings.scale, exact_summary(exact), interval(intervals, "sst2", Encoding.MDS)
    return decided_rows([
        ("C3", lambda: c3_reproduces_row(ex["chord_err"], scale)),
        ("C6", lambda: c6_row(mds_sst2, stored_text(run_comparison_intervals, settings, lambda r: near_zero(
            interval(r, "sst2", Encoding.MDS))), scale)),
        ("C3", lambda: c3_least_stress_row(as_record(gain, SmacofGain, at="sst2"),
                                           one_hot.as_(OneHotLayouts), scale)),
        ("C3", lambda: c3_exact_row(ex["chord_err"], ex["geo_bad"], ex["sst2_rank"], scale)),
        ("C3", lambda: c3_beats_row(mds3_vs_sinusoidal(intervals), comparison.as_(StoredComparison).pretrained,
                                    scale)),
    ], settings)


def captions(settings=None) -> dict:
    """The captions' facts at ``settings.scale`` (glued as ``oecap_<name>``), and the box's at both scales."""
    settings = _settings(settings)
    conf, corpus = CONFIGS[settings.scale], CORPUS_CONFIGS[settings.scale]
    enc = conf.synthetic_encoder
    return dict(
        scale=settings.scale, synthetic=corpus_captions(settings)["synthetic"], rank=int(conf.walkthrough.k),
        sequences=describe_sequences(corpus.synthetic.n_sequences), sst2=sst2_caption(settings.scale),
        encoders=(f"synthetic families at width {enc.d_model} with {enc.n_heads} heads; SST-2 at width "
                  f"{corpus.encoder.d_model} with {corpus.encoder.n_heads} heads"),
        smacof=f"{conf.smacof.max_iter:,} iterations or a relative decrease below {short_float(conf.smacof.eps)}",
        redraws=describe_scales(*(f"{CONFIGS[s].intervals.n_boot:,}" for s in ("quick", "paper"))))
