r"""What the chapter "The optimal encoding" reports, from the runs of :mod:`posgeom.experiments.optimal_encoding`
(Algorithm 1 step by step, the encodings compared on every corpus with bootstrap intervals, exact embedding, the
one-hot counter-example, SMACOF's gain over classical MDS) read as typed records: its tables, the numbers its prose
quotes (one mapping or view per section, glued by :func:`posgeom.notebooks.glue_fields`) and its "Paper vs this
book" rows for C3 and C6, each decided by its rule in :mod:`posgeom.verdicts`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from .. import verdicts as rules
from ..config import settings_or_default as _settings
from ..encodings import ENCODINGS_COMPARED
from ..geometry import Interval
from ..registry import Result, stored_text
from ..registry.typed import as_record, stored
from ..experiments.corpus_geometry import CONFIGS as CORPUS_CONFIGS, SYNTHETIC_FAMILIES
from ..experiments.optimal_encoding import CONFIGS, run_comparison_intervals
from ..report import ComparisonRow
from ..wording import describe_scales, describe_sequences, short_float
from .corpus_geometry import captions as corpus_captions, sst2_caption
from .records import BootstrapIntervals, ExactEmbedding, SmacofGain

__all__ = [
    "CORPORA", "FIXED", "AlgorithmSummary", "algorithm_summary", "algorithm_table", "StoredComparison", "stress_tables",
    "comparison_summary", "interval", "interval_tables", "interval_summary", "exact_table", "exact_summary",
    "OneHotStresses", "one_hot_table", "one_hot_summary", "gain_summary", "near_zero", "comparison_rows", "Captions",
    "captions",
]

#: The corpora of the comparison: the synthetic families, then SST-2.
CORPORA = tuple(SYNTHETIC_FAMILIES) + ("sst2",)
#: The fixed encodings.
FIXED = ("sinusoidal", "rope", "alibi")


@dataclass(frozen=True)
class AlgorithmSummary:
    """Algorithm 1 step by step on the drift corpus (a ``run_algorithm_steps`` result): B against J S Sᵀ J, B's
    smallest eigenvalue and numerical rank (sample and population), full-rank MDS's error, the rank-3 stresses,
    and the lift to d = 50."""

    B_vs_SS: float = stored("B_vs_SS_max_error")
    min_eig: float = stored("min_eigenvalue")
    full_err: float = stored("full_rank_max_error")
    lift_err: float = stored("lift_max_error")
    rank3_paper: float = stored("rank_k_stress.paper")
    rank3_sf: float = stored("rank_k_stress.scale_free")
    num_rank: int = stored("numerical_rank")
    pop_rank: int = stored("population_rank_tol")
    n: int


def algorithm_summary(steps: Result) -> AlgorithmSummary:
    """The :class:`AlgorithmSummary` of a ``run_algorithm_steps`` result."""
    return as_record(steps, AlgorithmSummary)


def algorithm_table(steps: Result) -> pd.DataFrame:
    """The checks of Algorithm 1 on the drift corpus, one per row."""
    a = algorithm_summary(steps)
    return pd.Series({
        "max |B - J S S^T J|": a.B_vs_SS, "smallest eigenvalue of B": a.min_eig, "numerical rank of B": a.num_rank,
        "full-rank MDS: max |D - Dhat|": a.full_err, "rank-3 MDS stress (paper)": a.rank3_paper,
        "rank-3 MDS stress (scale_free)": a.rank3_sf, "lift to d = 50: max distance change": a.lift_err},
        name="drift corpus").to_frame()


@dataclass(frozen=True)
class StoredComparison:
    """A stored ``run_encoding_comparison``, typed: the pretrained model whose table is compared, and per corpus
    (:data:`CORPORA`) each encoding's stress under each normalisation (``"paper"``, ``"scale_free"``)."""

    pretrained: str
    stationary: dict[str, dict[str, float]]
    drift: dict[str, dict[str, float]]
    regimes: dict[str, dict[str, float]]
    markov: dict[str, dict[str, float]]
    sst2: dict[str, dict[str, float]]


def stress_tables(comparison: Result) -> dict[str, pd.DataFrame]:
    """``{"scale_free": ..., "paper": ...}``: each encoding's stress (rows) on each corpus (columns); NaN where
    an encoding is not computed for a corpus."""
    stored_comparison = as_record(comparison, StoredComparison)
    by_corpus = {c: getattr(stored_comparison, c) for c in CORPORA}
    return {norm: pd.DataFrame({c: {e: by_corpus[c].get(e, {}).get(norm, np.nan) for e in ENCODINGS_COMPARED}
                                for c in CORPORA}) for norm in ("scale_free", "paper")}


def comparison_summary(comparison: Result) -> dict:
    """What the chapter quotes of a ``run_encoding_comparison`` result ("scale_free" stress), by glue name: the
    corpora where rank-3 MDS beats the sinusoidal table (``mds3_wins``) or not, the best fixed encoding on SST-2,
    SST-2's random, sinusoidal and learned stresses, and full-rank MDS's largest over the corpora (``full_max``)."""
    sf = stress_tables(comparison)["scale_free"]
    wins = [c for c in CORPORA if sf.loc["mds_rank3", c] < sf.loc["sinusoidal", c]]
    return {"mds3_wins": ", ".join(wins), "mds3_loses": ", ".join(c for c in CORPORA if c not in wins) or "none",
            "best_fixed_sst2": min(FIXED, key=lambda e: sf.loc[e, "sst2"]),
            **{f"{short}_sst2": float(sf.loc[e, "sst2"]) for e, short in
               (("random", "random"), ("sinusoidal", "sin"), ("learned", "learned"))},
            "full_max": float(np.nanmax(sf.loc["mds"].to_numpy(dtype=float)))}


def interval(intervals: Result, corpus: str, key: str, table: str = "statistics") -> Interval:
    """One stored bootstrap interval of ``run_comparison_intervals`` (``key`` as ``"<encoding>|scale_free"``, or
    ``"<a>-<b>|scale_free"`` in ``table="differences"``)."""
    return getattr(as_record(intervals, BootstrapIntervals, at=corpus), table)[key]


def interval_tables(intervals: Result, settings=None) -> pd.DataFrame:
    """The "scale_free" stress of each encoding on each corpus and the differences, with their 95 % bootstrap
    intervals over sequences, and SST-2's at paper scale where stored."""
    settings = _settings(settings)
    iv = {c: as_record(intervals, BootstrapIntervals, at=c) for c in CORPORA}
    table = pd.DataFrame({c: {e: iv[c].statistics[f"{e}|scale_free"].text()
                              if f"{e}|scale_free" in iv[c].statistics else "—" for e in ENCODINGS_COMPARED}
                          for c in CORPORA})
    diffs = pd.DataFrame({c: {name.replace("|scale_free", ""): d.text("{:.4f}") for name, d in iv[c].differences.items()}
                          for c in CORPORA})
    table["sst2, paper scale"] = pd.Series({e: stored_text(run_comparison_intervals, settings,
                                                           lambda r, e=e: interval(r, "sst2", f"{e}|scale_free").text())
                                            for e in ENCODINGS_COMPARED})
    return pd.concat({"scale_free stress": table, "difference of scale_free stress": diffs}, axis=0)


def _mds3_vs_sin(intervals: Result) -> dict[str, Interval]:
    """Rank-3 MDS − sinusoidal ("scale_free" stress) with its bootstrap interval, by corpus."""
    return {c: interval(intervals, c, "mds_rank3-sinusoidal|scale_free", "differences") for c in CORPORA}


def _mds3_decided(mds3_vs_sin: dict[str, Interval]) -> list[str]:
    """The corpora where rank-3 MDS is below the sinusoidal table beyond the sampling uncertainty."""
    return [c for c, iv in mds3_vs_sin.items() if iv.high < 0]


def interval_summary(intervals: Result) -> dict:
    """What the chapter quotes of a ``run_comparison_intervals`` result: the corpora where rank-3 MDS is below the
    sinusoidal table beyond the sampling uncertainty (``mds3_decided``), and SST-2's sinusoidal − RoPE difference
    with its interval (``sst2_sinrope_iv``)."""
    return {"mds3_decided": ", ".join(_mds3_decided(_mds3_vs_sin(intervals))) or "none",
            "sst2_sinrope_iv": interval(intervals, "sst2", "sinusoidal-rope|scale_free", "differences").text("{:.4f}")}


def exact_table(exact: Result) -> pd.DataFrame:
    """Per corpus and distance (chord, geodesic): full-rank MDS's error, the clipped negative mass, the eigenvalue
    ratio and B's numerical rank."""
    v = {c: as_record(exact, ExactEmbedding, at=c) for c in CORPORA}
    return pd.DataFrame([{"corpus": c, "distance": kind, "n": v[c].n, "full-rank MDS: max |D - Dhat|": e.full_rank_max_error,
                          "clipped (negative) eigenvalue mass": e.clipped_mass, "λ_min / λ_max": e.min_over_max_eigenvalue,
                          "numerical rank of B": e.numerical_rank}
                         for c in CORPORA for kind, e in (("chord", v[c].chord), ("geodesic", v[c].geodesic))]
                        ).set_index(["corpus", "distance"])


def exact_summary(exact: Result) -> dict:
    """Exact embedding (a ``run_exact_embedding`` result), by glue name: full-rank MDS's largest error under the
    chord (``chord_err``) and geodesic (``geo_err``) distances, the corpora whose geodesic B has negative eigenvalues
    beyond rounding (``geo_bad``), and the rank of SST-2's B (``sst2_rank``)."""
    v = {c: as_record(exact, ExactEmbedding, at=c) for c in CORPORA}
    return {"chord_err": float(max(v[c].chord.full_rank_max_error for c in CORPORA)),
            "geo_err": float(max(v[c].geodesic.full_rank_max_error for c in CORPORA)),
            "geo_bad": ", ".join(c for c in CORPORA if v[c].geodesic.n_negative_beyond_rounding > 0) or "none",
            "sst2_rank": v["sst2"].chord.numerical_rank}


@dataclass(frozen=True)
class OneHotStresses:
    """A stored ``run_one_hot``, typed: classical MDS's, a rescaled layout's and SMACOF's "paper" stress, classical
    MDS's scale-free one, and SMACOF's iterations."""

    mds_stress: float
    rescaled_stress: float
    smacof_stress: float
    mds_scale_free: float
    smacof_n_iter: int


def one_hot_table(one_hot: Result) -> pd.DataFrame:
    """The "paper" stress of classical MDS, a rescaled layout and SMACOF on three one-hot distributions."""
    o = as_record(one_hot, OneHotStresses)
    return pd.Series({"classical MDS": o.mds_stress, "rescaled layout": o.rescaled_stress,
                      "SMACOF from MDS": o.smacof_stress, "classical MDS, scale-free stress": o.mds_scale_free},
                     name="the paper's stress").to_frame()


def one_hot_summary(one_hot: Result) -> dict:
    """The one-hot counter-example (a ``run_one_hot`` result), by glue name: classical MDS's "paper" stress
    (``mds``), SMACOF's (``smacof``) and SMACOF's iterations (``iter``)."""
    o = as_record(one_hot, OneHotStresses)
    return {"mds": o.mds_stress, "smacof": o.smacof_stress, "iter": o.smacof_n_iter}


def gain_summary(gain: Result, settings=None) -> dict:
    """SMACOF's gain over classical MDS (a ``run_smacof_gain`` result at the scale in force), by glue name: on
    SST-2 ("paper" stress) its range over the ranks (``ranks``) and at rank 1, the part rescaling alone gives at
    rank 1 (``rescale_k1``), and how many SMACOF runs of every corpus stopped at the iteration cap."""
    cfg = CONFIGS[_settings(settings).scale]
    g = as_record(gain, SmacofGain, at="sst2")
    return {"gain_min": float(min(g.gain)), "gain_max": float(max(g.gain)), "gain_k1": float(g.gain[0]),
            "rescale_k1": float(1 - g.mds_scale_free[0] / g.mds_paper[0]), "ranks": ", ".join(str(k) for k in g.ranks),
            "not_converged": sum(1 for name in ["sst2", *cfg.families]
                                 for it in as_record(gain, SmacofGain, at=name).n_iter if it >= cfg.smacof.max_iter)}


def near_zero(iv: Interval) -> str:
    """A stress that is 0 up to rounding, said so instead of a signed interval of rounding errors."""
    bound = max(abs(iv.low), abs(iv.high), abs(iv.estimate))
    return f"0 up to rounding (estimate and 95% interval within ±{bound:.0e})" if bound < 1e-12 else iv.text("{:.1e}")


def comparison_rows(comparison: Result, intervals: Result, exact: Result, one_hot: Result, gain: Result,
                    settings=None) -> list[ComparisonRow]:
    """The chapter's "Paper vs this book" rows for C3 (four checks) and C6, each decided by its rule in
    :mod:`posgeom.verdicts`."""
    settings = _settings(settings)
    ex = exact_summary(exact)
    chord_err, geo_bad, sst2_rank = ex["chord_err"], ex["geo_bad"], ex["sst2_rank"]
    mds_sst2 = interval(intervals, "sst2", "mds|scale_free")
    mds_sst2_paper = stored_text(run_comparison_intervals, settings,
                                 lambda r: near_zero(interval(r, "sst2", "mds|scale_free")))
    g, oh = as_record(gain, SmacofGain, at="sst2"), as_record(one_hot, OneHotStresses)
    mds3_vs_sin = _mds3_vs_sin(intervals)
    row, corpora = partial(ComparisonRow, scale=settings.scale, model="none"), "4 synthetic families, SST-2 train"
    return [
        row("C3", paper="MDS reproduces the corpus geometry as well as possible",
            ours=(f"full-rank MDS reproduces D to {chord_err:.1e} on every corpus (chord distance); exact, "
                  "no sampling interval: it holds for every sample"), corpus=f"{corpora} (n = 64)",
            options="chord Hellinger, the model's special tokens", decision=rules.c3_full_rank_mds(chord_err)),
        row("C6", ours=(f"full-rank MDS on SST-2: scale-free stress {near_zero(mds_sst2)} (bootstrap over "
                        f"phrases); paper scale: {mds_sst2_paper}"),
            corpus="SST-2 train (n = 64)", options="chord Hellinger; MDS at full rank (≤ d = 768)",
            decision=rules.c6_near_zero([mds_sst2.low, mds_sst2.high, mds_sst2.estimate],
                                        note="; IMDB is checked in the chapter on real corpora")),
        row("C3", paper="classical MDS is the best achievable encoding (least stress)",
            ours=(f"SMACOF from MDS lowers the paper's stress by {min(g.gain):.0%}–{max(g.gain):.0%} "
                  f"at ranks {g.ranks[0]}–{g.ranks[-1]} on SST-2; 1/6 vs 1/9 on three one-hot points "
                  "(exact; no sampling interval: a counter-example needs one matrix)"),
            corpus="SST-2 train (n = 64); three one-hot distributions", options="the paper's normalisation",
            decision=rules.c3_least_stress(g.gain, oh.mds_stress, oh.smacof_stress)),
        row("C3", paper="exact reproduction is impossible (curved geometry)",
            ours=(f"chord: exact to {chord_err:.1e}; geodesic: negative eigenvalues on "
                  f"{geo_bad if geo_bad != 'none' else 'no corpus'}; rank(B) on SST-2 = {sst2_rank} "
                  "< d = 768 (exact algebra, no sampling interval)"),
            corpus=corpora, options="chord and geodesic Hellinger",
            decision=rules.c3_exact_impossible(chord_err, sst2_rank, 768)),
        row("C3", paper="MDS beats the other encodings on every corpus",
            ours=("rank-3 MDS − sinusoidal (scale-free stress, 95% interval over sequences): "
                  + "; ".join(f"{c} {mds3_vs_sin[c].text('{:.3f}')}" for c in CORPORA)
                  + f"; below it beyond the sampling uncertainty on {', '.join(_mds3_decided(mds3_vs_sin)) or 'no corpus'}"),
            model=f"learned table: {as_record(comparison, StoredComparison).pretrained}", corpus=corpora,
            options="scale-free stress; d = 50 (synthetic), 768 (SST-2)",
            decision=rules.c3_beats_other_encodings(mds3_vs_sin)),
    ]


@dataclass(frozen=True)
class Captions:
    """What the chapter's figure captions state about the corpora and encodings, from the settings in force
    (glued as ``oecap_<field>``), so that a caption is right at both scales."""

    scale: str
    synthetic: str        # positions, tokens and sequences of a synthetic family
    sequences: str        # its sample size alone
    rank: int             # the walk-through's MDS rank
    encoders: str         # the encodings' shapes on each corpus
    sst2: str
    smacof: str           # SMACOF's stopping rule
    redraws: str          # the stress table's bootstrap redraws at both scales, for the "What this chapter needs" box


def captions(settings=None) -> Captions:
    """The :class:`Captions` of the chapter at ``settings.scale`` (:data:`posgeom.experiments.optimal_encoding.CONFIGS`
    and the corpora of :data:`posgeom.experiments.corpus_geometry.CONFIGS`)."""
    settings = _settings(settings)
    conf, corpus = CONFIGS[settings.scale], CORPUS_CONFIGS[settings.scale]
    enc, corpus_words = conf.synthetic_encoder, corpus_captions(settings)
    return Captions(
        scale=settings.scale, synthetic=corpus_words.synthetic,
        sequences=describe_sequences(corpus.synthetic.n_sequences), rank=int(conf.walkthrough.k),
        encoders=(f"synthetic families at width {enc.d_model} with {enc.n_heads} heads; SST-2 at width "
                  f"{corpus.encoder.d_model} with {corpus.encoder.n_heads} heads"),
        sst2=sst2_caption(settings.scale),
        smacof=f"{conf.smacof.max_iter:,} iterations or a relative decrease below {short_float(conf.smacof.eps)}",
        redraws=describe_scales(*(f"{CONFIGS[s].intervals.n_boot:,}" for s in ("quick", "paper"))))
