r"""The chapter "The minimal parametrisation" from the stored runs of :mod:`posgeom.experiments.minimal_parametrisation`
read as typed records: its tables, the numbers its prose quotes (a mapping per section, for
:func:`posgeom.notebooks.glue_fields`), its C5 rows decided by the rules of :mod:`posgeom.verdicts`, and the training
comparison's section (:mod:`posgeom.chapters.minimal_parametrisation_training`), re-exported. No module computing
the results imports this one, so they keep their code keys when the reporting changes."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from .. import verdicts as rules
from ..config import settings_or_default as _settings
from ..wording import describe_model, describe_scales, describe_sequences, model_words, rank_words, short_float, special_words
from ..geometry import MIN_SEEDS, SeedInterval
from ..registry import Result
from ..registry.typed import as_record, stored
from ..experiments.corpus_geometry import CONFIGS as CORPUS_CONFIGS, SYNTHETIC_FAMILIES
from ..experiments.minimal_parametrisation import CONFIGS, TRAIN_ENCODINGS
from ..report import ComparisonRow, decided_rows
from ..experiments.optimal_encoding import CONFIGS as ENCODING_CONFIGS
from .real_corpora import PlainText
from .powered import paired_text
from .corpus_geometry import sst2_caption
from .records import FamilyRanks, SST2Ranks, StoredC5, StoredC5Draws, StoredRanks, StoredTraining, StressPair
from .minimal_parametrisation_training import (  # the training comparison's section, re-exported
    accuracy_by_encoding, power_checks, powered_row, stall_summary, trained_runs, training_summary, training_table,
)

__all__ = [
    "HOLDS", "PURE_NOISE", "PlantedRank", "StoredValidation", "CrossFitted", "Spectrum", "StressCurve",
    "validation_summary", "validation_frame", "rank_table", "rank_summary", "spectra", "stress_curves",
    "crossing_summary", "c5_table", "c5_draws_table", "parameter_counts", "c5_evidence", "c5_summary",
    "comparison_rows", "Captions", "captions", "training_table", "trained_runs", "training_summary",
    "accuracy_by_encoding", "stall_summary", "power_checks", "powered_row",
]

#: The paper's stress reduction of rank 3 against the sinusoidal table.
HOLDS = 0.998

#: C5's generator of pure noise: every position draws from one distribution (population rank 0), so ``run_c5``
#: has no population row for it (its population distances are all 0) and only its samples are measured.
PURE_NOISE = "stationary"


@dataclass(frozen=True)
class PlantedRank:
    """One case of ``run_rank_validation`` (in the stored order, as the frame lists them): the noise-aware rank's
    estimate (None: undetermined) on a planted corpus, and its smallest planted signal against the noise threshold."""

    estimate: int | None
    interval: tuple[int, int]
    rank: int
    size: int
    smallest_signal: float
    strength: float
    text: str
    threshold: float


@dataclass(frozen=True)
class StoredValidation:
    """A stored ``run_rank_validation``, typed: every planted-rank case."""

    rows: tuple[PlantedRank, ...]


@dataclass(frozen=True)
class CrossFitted:
    """One corpus of ``run_effective_rank`` (``at=corpus, arrays_at=setting``): the cross-fitted rank at each setting
    as text, its threshold, and the cross-fitted eigenvalues (splits × directions) of the setting read."""

    cross_fitted: tuple[str, ...]
    cross_fitted_threshold: tuple[float, ...]
    eigenvalues: np.ndarray = stored("cross_fitted")


@dataclass(frozen=True)
class Spectrum:
    """One panel of the chapter's spectra: a corpus's cross-fitted eigenvalues of B (mean over the splits), the
    noise-aware threshold τ and the rank it reads."""

    corpus: str
    eigenvalues: np.ndarray
    threshold: float
    rank_text: str


@dataclass(frozen=True)
class StressCurve:
    """One corpus of ``run_stress_vs_rank`` (``at=corpus, arrays_at=corpus, corpus=corpus``): the "scale_free"
    stress of rank-k MDS at k = 1, 2, ..., and both stresses of each fixed encoding."""

    corpus: str
    mds: np.ndarray = stored("scale_free")
    encodings: dict[str, StressPair]


def validation_summary(validation: Result) -> dict:
    """The validation's counts (glued as ``mpval_<key>``): cases above the noise threshold and those recovered,
    below half of it and those flagged undetermined, and those whose interval reaches above the planted rank."""
    rows = as_record(validation, StoredValidation).rows
    above = [r for r in rows if r.smallest_signal > r.threshold]
    below = [r for r in rows if r.smallest_signal < r.threshold / 2]
    return dict(recovered=sum(r.estimate == r.rank for r in above), above=len(above),
                flagged=sum(r.estimate is None for r in below), below=len(below),
                over=sum(r.interval[1] > r.rank for r in rows), cases=len(rows))


def validation_frame(validation: Result) -> pd.DataFrame:
    """One row per planted-rank case: rank, strength, size, the estimate (NaN when undetermined) and its interval."""
    return pd.DataFrame([asdict(r) for r in as_record(validation, StoredValidation).rows])


def rank_table(ranks: Result) -> pd.DataFrame:
    """Every rank reading (tolerance, mass, stress, cross-fitted) of each synthetic family at each sample
    size, and of SST-2 under each preprocessing."""

    def readings(v, j: int) -> dict:
        return {"tol": v.tol[j], "mass": v.mass[j], "stress": v.stress[j], "cross_fitted": v.cross_fitted[j]}

    fams = {fam: as_record(ranks, FamilyRanks, at=fam) for fam in SYNTHETIC_FAMILIES}
    rows = [{"corpus": fam, "sequences": N, "population rank": v.population, **readings(v, j)}
            for fam, v in fams.items() for j, N in enumerate(v.sizes)]
    s = as_record(ranks, SST2Ranks, at="sst2")
    for j, (special, min_count, n_kept) in enumerate(zip(s.special, s.min_count, s.n_kept)):
        # the options in words (docs/STYLE.md, rule 4): not "SST-2 (model, min_count 10, n = 60)"
        reached = "at least once" if min_count == 1 else f"{min_count:,} times or more"
        rows.append({"corpus": f"SST-2 ({special_words(special)}, positions reached {reached}, n = {n_kept})",
                     "sequences": s.n_sequences, "population rank": None, **readings(s, j)})
    return pd.DataFrame(rows).set_index(["corpus", "sequences"])


def rank_summary(ranks: Result) -> dict:
    """The rank readings the chapter quotes (glued as ``mp_<key>``; ``*_cf``: the cross-fitted rank, in words)."""
    v = as_record(ranks, StoredRanks)
    dr, s, rg = v.drift, v.sst2, v.regimes
    return dict(
        drift_pop=dr.population, drift_tol_small=dr.tol[0], drift_mass_small=dr.mass[0],
        drift_cf_large=PlainText(rank_words(dr.cross_fitted[-1])), small_N=dr.sizes[0], large_N=dr.sizes[-1],
        stat_cf=PlainText("; ".join(dict.fromkeys(rank_words(t) for t in v.stationary.cross_fitted))),
        stat_mass=min(v.stationary.mass), sst2_cf_all=PlainText(rank_words(s.cross_fitted[0])),
        # the options in words (docs/STYLE.md: no code identifiers in running text)
        sst2_cf_dropped=PlainText("; ".join(
            f"{rank_words(t)} with the positions reached {m:,} times or more, {special_words(sp)}"
            for t, m, sp in zip(s.cross_fitted, s.min_count, s.special) if m > 1)),
        regimes_pop=rg.population, regimes_cf_large=PlainText(rank_words(rg.cross_fitted[-1])),
        sst2_mass_min=min(s.mass), sst2_mass_max=max(s.mass), sst2_tol_max=max(s.tol),
        markov_cf=PlainText(rank_words(v.markov.cross_fitted[-1])), markov_mass=v.markov.mass[-1],
    )


def spectra(ranks: Result) -> list[Spectrum]:
    """One :class:`Spectrum` per synthetic family (its largest sample), then SST-2 (its first preprocessing)."""
    # (title, corpus, arrays, setting): SST-2's arrays are named sst2_<special tokens>_<min_count>
    panels = [(fam, fam, fam, -1) for fam in SYNTHETIC_FAMILIES] + [("SST-2", "sst2", "sst2_model_1", 0)]
    return [Spectrum(title, v.eigenvalues.mean(axis=0), v.cross_fitted_threshold[j], v.cross_fitted[j])
            for title, at, arrays, j in panels for v in [as_record(ranks, CrossFitted, at=at, arrays_at=arrays)]]


def stress_curves(stress_vs_rank: Result) -> list[StressCurve]:
    """One :class:`StressCurve` per synthetic family, then SST-2, from a ``run_stress_vs_rank`` result."""
    return [as_record(stress_vs_rank, StressCurve, at=c, arrays_at=c, corpus=c) for c in (*SYNTHETIC_FAMILIES, "sst2")]


def crossing_summary(stress_vs_rank: Result) -> dict:
    """Per corpus of ``run_stress_vs_rank``, the first rank k whose MDS "scale_free" stress falls below the
    sinusoidal table's (or the highest rank computed, which none reaches below), as one phrase (``cross``)."""
    phrases = []
    for c in stress_curves(stress_vs_rank):
        below = np.flatnonzero(c.mds < c.encodings["sinusoidal"].scale_free)
        phrases.append(f"{c.corpus}: " + (f"rank {below[0] + 1}" if below.size else f"not within rank {c.mds.size}"))
    return {"cross": "; ".join(phrases)}


def _setting(r) -> str:
    return "population" if r.size is None else r.size


def c5_table(c5: Result) -> pd.DataFrame:
    """Per generator and sample size: the stress reduction of the rank-3 MDS against the sinusoidal table."""
    return pd.DataFrame([{"generator": r.generator, "sequences": _setting(r),
                          "reduction (paper)": r.reduction_paper, "reduction (scale_free)": r.reduction_scale_free,
                          "MDS r=3 (scale_free)": r.mds_scale_free, "sinusoidal (scale_free)": r.sin_scale_free}
                         for r in as_record(c5, StoredC5).rows]).set_index(["generator", "sequences"])


def c5_draws_table(draws: Result) -> pd.DataFrame:
    """Per generator and sample size, over the generator draws: the mean reduction with its interval (mean ± sd
    where the draws are too few for one), and in how many draws it reaches 99.8 %."""

    def text(e, fmt) -> str:
        if "low" not in e:
            return f"{fmt.format(e['mean'])} ± {fmt.format(e['sd'])} (no interval from {e['n']} draws)"
        return f"{SeedInterval.from_dict(e).text(fmt, with_t=False)}, sd {fmt.format(e['sd'])}"

    d = as_record(draws, StoredC5Draws)
    return pd.DataFrame([
        {"generator": r.generator, "sequences": _setting(r), "reduction (paper)": text(r.reduction_paper, "{:.3%}"),
         "draws ≥ 99.8% (paper)": f"{r.holds_paper}/{len(d.seeds)}",
         "reduction (scale_free)": text(r.reduction_scale_free, "{:.2%}"),
         "draws ≥ 99.8% (scale_free)": f"{r.holds_scale_free}/{len(d.seeds)}"}
        for r in d.rows]).set_index(["generator", "sequences"])


def parameter_counts(c5: Result) -> str:
    """The parameters of a full n × d table against its rank-r factors A Cᵀ, and the savings, as one line."""
    v = as_record(c5, StoredC5)
    return f"parameters: full table {v.n_params_full}, A C^T {v.n_params_lowrank}, savings {v.savings:.2%}"


def c5_evidence(c5: Result, draws: Result) -> dict:
    """What :func:`posgeom.verdicts.c5_stress_reduction` decides C5's 99.8% from (its keyword arguments but the rank):
    per normalisation, the reduction at each generator's population (``reductions``: the interval over the draws, or
    run_c5's one draw where they give none); the scale-free stress of rank-r MDS at each population
    (``population_stress``); and pure noise's reductions per sample size (``pure_noise``: mean over the draws)."""
    c, d = as_record(c5, StoredC5), as_record(draws, StoredC5Draws)
    one_draw = {r.generator: r for r in c.rows if r.size is None}
    norms = ("scale_free", "paper")

    def population(r, norm):  # the interval over the draws, or run_c5's one draw where they give none
        x = getattr(r, f"reduction_{norm}")
        return x if "low" in x else getattr(one_draw[r.generator], f"reduction_{norm}")

    return dict(
        reductions={norm: {r.generator: population(r, norm) for r in d.rows if r.size is None} for norm in norms},
        population_stress={g: r.mds_scale_free for g, r in one_draw.items()},
        pure_noise={norm: [getattr(r, f"reduction_{norm}")["mean"] for r in d.rows if r.generator == PURE_NOISE]
                    for norm in norms})


def _mean(x) -> float:
    """The mean of a reduction given as a stored interval, or the value of one draw."""
    return float(x["mean"]) if isinstance(x, dict) else float(x)


def c5_summary(c5: Result, draws: Result) -> dict:
    """C5's numbers (glued as ``mpc5_<key>``) from ``run_c5`` and ``run_c5_draws``: the savings, the settings where
    rank 3 cuts the stress by 99.8 % under each stress, pure noise, drift K = 4 by sample size, the draws, and what
    the rule decides from (where rank-3 MDS is exact, the reduction at every other population) and its verdict."""
    c, d, e = as_record(c5, StoredC5), as_record(draws, StoredC5Draws), c5_evidence(c5, draws)
    rows, first = c.rows, d.rows[0].reduction_scale_free
    k4 = [r for r in rows if r.generator == "drift K=4"]
    k4_ok = [r.size for r in k4 if r.size is not None and r.reduction_scale_free >= HOLDS]
    exact = [g for g, stress in e["population_stress"].items() if stress <= rules.ROUNDING_TOL]
    return dict(
        savings=c.savings, paper_n=sum(r.reduction_paper >= HOLDS for r in rows), total=len(rows),
        stat_paper=min(r.reduction_paper for r in rows if r.generator == PURE_NOISE),
        sf_list="; ".join(f"{r.generator} ({_setting(r)})" for r in rows if r.reduction_scale_free >= HOLDS),
        k4_min_size=min(k4_ok) if k4_ok else "no sample size",
        k4_10k=next(r.reduction_scale_free for r in k4 if r.size == 10_000),
        n_seeds=len(d.seeds), level=d.level, t=f"{first['t']:.2f}" if "t" in first else "none",
        exact=", ".join(exact) or "none",
        evidence=", ".join(f"{g} {_mean(x):.1%}" for g, x in e["reductions"]["scale_free"].items() if g not in exact),
        verdict=rules.c5_stress_reduction(**e, rank=c.r).verdict,
    )


def comparison_rows(c5: Result, draws: Result, training: Result, settings=None, powered: Result | None = None) -> list:
    """The chapter's "Paper vs this book" rows (:class:`posgeom.report.ComparisonRow`) for C5, each decided by its
    rule in :mod:`posgeom.verdicts`: the parameter savings, the stress reduction, and "no loss of performance" by
    the interval over seeds of the paired accuracy gap learned − (r = 1); with ``powered`` (``run_lowrank_powered``)
    by the same rule a fourth time, on the design sized by its power and trained until the tables fit the task."""
    settings, c, d = _settings(settings), as_record(c5, StoredC5), as_record(draws, StoredC5Draws)
    e = c5_evidence(c5, draws)
    # two decimals under 'paper', where every value is within a point of 100%
    text = {n: ", ".join(f"{g} {f.format(_mean(x))}" for g, x in e["reductions"][n].items())
            + f"; pure noise's samples {f.format(min(e['pure_noise'][n]))} to {f.format(max(e['pure_noise'][n]))}"
            for n, f in {"scale_free": "{:.1%}", "paper": "{:.2%}"}.items()}
    savings = ComparisonRow("C5", paper="88% fewer parameters (n = d = 50, r = 3)", ours=f"{c.savings:.2%}",
                            scale="exact", model="none", corpus="—", options="r (n + d) vs n d",
                            decision=rules.c5_parameter_savings(c.n, c.d, c.r))
    reduction = ComparisonRow(
        "C5", paper="r = 3 cuts the stress by 99.8% relative to sinusoidal",
        ours=(f"reduction at each generator's population, scale-free stress: {text['scale_free']}. "
              f"The paper's stress: {text['paper']}"),
        scale=settings.scale, model="none",
        corpus="synthetic drift (K = 3, 4, 5), stationary (pure noise), regimes, markov",
        options=(f"n = d = {c.n}, r = {c.r}, sinusoidal base 10000; populations (no sampling), mean over "
                 f"{len(d.seeds)} generator draws, {d.level:.0%} intervals where at least {MIN_SEEDS} draws"),
        decision=rules.c5_stress_reduction(**e, rank=c.r))

    def performance_row():  # the training comparison may wait for a GPU (decided_rows says so)
        t, tr_cfg = as_record(training, StoredTraining), CONFIGS[settings.scale].train
        r1, learned = t.summary["synthetic"]["lowrank r=1"], t.summary["synthetic"]["learned"]
        r1_sigma = next(opts for label, _, opts in TRAIN_ENCODINGS if label == "lowrank r=1")["sigma"]
        return ComparisonRow(
            "C5", paper="no loss of performance with the low-rank table (seed summary)",
            ours=(f"marker order: r = 1 {r1.accuracy_mean:.3f} vs learned {learned.accuracy_mean:.3f} with "
                  f"{r1.position_params} vs {learned.position_params} parameters; "
                  f"gap learned − (r = 1) {paired_text(t.gap, '{:+.3f}')}"),
            scale=settings.scale, model=describe_model(tr_cfg.model), corpus="marker-order task; SST-2 subset",
            options=(f"{tr_cfg.steps.synthetic} steps, {len(tr_cfg.seeds)} seeds, "
                     f"factors initialised at σ = {r1_sigma}"),
            decision=rules.c5_lowrank_performance(t.gap))

    powered_rows = [("C5", lambda: powered_row(powered))] if powered is not None else []
    return [savings, reduction] + decided_rows([("C5", performance_row), *powered_rows], settings)


@dataclass(frozen=True)
class Captions:
    """What the chapter's figure captions and its "What this chapter needs" box state about the runs, from the
    settings in force (glued as ``mpcap_<field>``), so that a caption is right at both scales."""

    scale: str
    rank_sequences: str    # the largest synthetic corpus of the noise-aware rank
    sst2: str              # SST-2's positions and special tokens
    stress_sequences: str  # the synthetic corpora of the stress-against-rank curves
    encoders: str          # the fixed encodings' shapes there
    model: str             # the classifiers of the training comparison
    optimiser: str         # their optimiser and steps per task
    seeds: str             # seeds per task
    marker_task: str
    sst2_task: str
    marker_seeds: int
    quick_runs: str        # the training comparison at each scale, for the box
    paper_runs: str
    models: str            # the classifiers' shape at both scales, in words, said once in the box
    quick_c5_draws: int    # C5's generator draws at quick (run_c5_draws), for the box
    sst2_training: str     # SST-2's training phrases at both scales, for the box


def captions(settings=None) -> Captions:
    """The :class:`Captions` of the chapter at ``settings.scale`` (its experiments' ``CONFIGS``, and the corpus
    geometry and optimal encoding settings its stress curves reuse)."""
    settings = _settings(settings)
    conf, corpus = CONFIGS[settings.scale], CORPUS_CONFIGS[settings.scale]

    def runs(scale: str) -> str:
        # the comparison at a scale in words, counted as run_lowrank_training loops: on marker order every encoding
        # and seed, on SST-2 the sst2_encodings and sst2_seeds; the shape is said once, in the box's "Model" line
        t, marker = CONFIGS[scale].train, len(TRAIN_ENCODINGS)
        sst2 = sum(label in t.sst2_encodings for label, _, _ in TRAIN_ENCODINGS)
        return (f"{marker * len(t.seeds) + sst2 * len(t.sst2_seeds)} models: {marker} encodings × {len(t.seeds)} "
                f"seeds on marker order, {t.steps.synthetic:,} steps each, and {sst2} × {len(t.sst2_seeds)} seeds on "
                f"SST-2, {t.steps.sst2:,} steps each")

    synthetic_encoder, train = ENCODING_CONFIGS[settings.scale].synthetic_encoder, conf.train
    return Captions(
        scale=settings.scale, rank_sequences=describe_sequences(max(conf.rank_sizes)),
        sst2=sst2_caption(settings.scale), stress_sequences=describe_sequences(corpus.synthetic.n_sequences),
        encoders=(f"width {synthetic_encoder.d_model} and {synthetic_encoder.n_heads} heads for the synthetic "
                  f"families, {corpus.encoder.d_model} and {corpus.encoder.n_heads} heads for SST-2"),
        model=f"{describe_model(train.model)}, {train.model.pooling} pooling",
        optimiser=(f"AdamW lr {short_float(train.lr)}, batch {train.batch_size}; {train.steps.synthetic:,} steps for "
                   f"marker order, {train.steps.sst2:,} for SST-2"),
        seeds=f"{len(train.seeds)} for marker order, {len(train.sst2_seeds)} for SST-2",
        marker_task=(f"{train.synthetic.n_train:,} training and {train.synthetic.n_test:,} test sequences of "
                     f"{train.synthetic.n_positions} tokens over {train.synthetic.vocab_size:,} token ids"),
        sst2_task=(f"{describe_sequences(train.sst2.n_train, 'training phrases')} (the model's special tokens, "
                   f"n = {train.sst2.n_positions})"),
        marker_seeds=len(train.seeds), quick_runs=runs("quick"), paper_runs=runs("paper"),
        models=describe_scales(*(model_words(CONFIGS[s].train.model) for s in ("quick", "paper"))),
        quick_c5_draws=len(CONFIGS["quick"].c5_seeds),
        sst2_training=describe_scales(*(describe_sequences(CONFIGS[s].train.sst2.n_train, "phrases", random=True)
                                        for s in ("quick", "paper"))))
