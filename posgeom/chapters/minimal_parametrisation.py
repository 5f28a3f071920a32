r"""The chapter "The minimal parametrisation" (:mod:`posgeom.experiments.minimal_parametrisation`): the views its
figures draw, its C5 rows, its power checks and its captions."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import verdicts as rules
from ..config import settings_or_default as _settings
from ..experiments.corpus_geometry import CONFIGS as CORPUS_CONFIGS, SYNTHETIC_FAMILIES
from ..experiments.lowrank_training import LowrankTrainingRecord, TrainedTable, TrainingRun, TrainModel
from ..experiments.minimal_parametrisation import CONFIGS, C5DrawsRecord, C5Record, StoredRanks, StressVsRankRecord
from ..experiments.optimal_encoding import CONFIGS as ENCODING_CONFIGS
from ..geometry import MIN_SEEDS, SeedInterval
from ..geometry.stress import StressNormalization
from ..registry import Result
from ..report import ComparisonRow, PowerCheck, decided_rows
from ..wording import describe_model, describe_scales, describe_sequences, model_words, short_float
from .corpus_geometry import sst2_caption
from .powered import design_check, design_row, design_summary, paired_text
from ..experiments.lowrank_powered import LowrankPoweredRecord, PoweredDesign

__all__ = ["HOLDS", "PURE_NOISE", "Spectrum", "spectra", "stress_curves", "c5_evidence", "trained_runs",
           "learned_gap", "stall_summary", "savings_row", "reduction_row", "performance_row", "powered_row", "comparison_rows",
           "power_checks", "captions"]

#: The paper's stress reduction of rank 3 against the sinusoidal table.
HOLDS = 0.998

#: C5's generator of pure noise (population rank 0): ``run_c5`` has no population row for it, only samples.
PURE_NOISE = "stationary"


@dataclass(frozen=True)
class Spectrum:
    """One panel of the spectra: a corpus's cross-fitted eigenvalues (mean over the splits), τ and the rank read."""

    corpus: str
    eigenvalues: np.ndarray
    threshold: float
    rank_text: str


def spectra(ranks: Result) -> list[Spectrum]:
    """One :class:`Spectrum` per synthetic family (its largest sample), then SST-2 (its first preprocessing)."""
    # (title, corpus, arrays, setting): SST-2's arrays are named sst2_<special tokens>_<min_count>
    panels = [(fam, fam, fam, -1) for fam in SYNTHETIC_FAMILIES] + [("SST-2", "sst2", "sst2_model_1", 0)]
    r = ranks.as_(StoredRanks)
    return [Spectrum(title, r.cross_fitted[arrays].mean(axis=0), v.cross_fitted_threshold[j], v.cross_fitted[j])
            for title, at, arrays, j in panels for v in [getattr(r, at)]]


def stress_curves(stress_vs_rank: Result) -> dict[str, tuple[np.ndarray, dict[str, dict[str, float]]]]:
    """Per synthetic family, then SST-2: rank-k MDS's scale-free stress (k = 1, 2, ...) and each fixed encoding's
    stresses by normalisation, from a ``run_stress_vs_rank`` result."""
    r = stress_vs_rank.as_(StressVsRankRecord)
    return {c: (r.scale_free[c], r.corpora[c].encodings) for c in (*SYNTHETIC_FAMILIES, "sst2")}


def c5_evidence(c5: Result, draws: Result) -> dict:
    """The keyword arguments (but the rank) :func:`posgeom.verdicts.c5_stress_reduction` decides C5's 99.8% from."""
    c, d, norms = c5.as_(C5Record), draws.as_(C5DrawsRecord), (StressNormalization.SCALE_FREE, StressNormalization.PAPER)
    one_draw = {r.generator: r for r in c.rows if r.size is None}

    def population(r, norm):
        x = getattr(r, f"reduction_{norm}")
        return x if "low" in x else getattr(one_draw[r.generator], f"reduction_{norm}")

    return dict(
        reductions={norm: {r.generator: population(r, norm) for r in d.rows if r.size is None} for norm in norms},
        population_stress={g: r.mds_scale_free for g, r in one_draw.items()},
        pure_noise={norm: [getattr(r, f"reduction_{norm}")["mean"] for r in d.rows if r.generator == PURE_NOISE]
                    for norm in norms})


def trained_runs(training: Result) -> list[TrainingRun]:
    """The marker-order runs whose trained table has a stress against the task's geometry."""
    return [r for r in training.as_(LowrankTrainingRecord).runs
            if r.task == "synthetic" and r.stress_scale_free is not None]


def learned_gap(training: LowrankTrainingRecord) -> SeedInterval:
    """C5's accuracy gap on marker order, learned − (r = 1), paired by seed."""
    return training.gaps["synthetic"][TrainedTable.LEARNED][TrainedTable.LOWRANK_R1]


def _stall_reading(stalled_r1: int, stalled_learned: int, fitted: SeedInterval | None, effect: float) -> str:
    """One sentence on where the powered gap comes from: the stalled runs and the gap where both fitted."""
    if not stalled_r1 and not stalled_learned:
        return "Neither table stalled in any seed: the gap is the tables' own."
    if fitted is None:
        return "Too few seeds fitted with both tables to say what the gap is without the stalled runs."
    fit = (f"where both fitted, the rank-1 table loses less than {effect:g} of accuracy" if fitted.high <= effect
           else f"even where both fitted, a loss of {effect:g} of accuracy is not excluded")
    more = "stalls more often than" if stalled_r1 > stalled_learned else "stalls no more often than"
    return (f"{fit.capitalize()}; the rank-1 table {more} the full one, and the claim as stated is about the average "
            "over seeds, stalls included.")


def stall_summary(powered: Result) -> dict:
    """What C5's powered design adds to its :func:`posgeom.chapters.powered.design_summary` (``mpst_<key>``)."""
    d, design = powered.as_(LowrankPoweredRecord), powered.params_as(PoweredDesign, "design")
    fitted, stalled_r1 = d.fitted_gap, len(d.stalled[TrainedTable.LOWRANK_R1])
    stalled_learned = len(d.stalled[TrainedTable.LEARNED])
    fitted_text = (f"fewer than {MIN_SEEDS} seeds" if fitted is None
                   else f"{fitted.mean:+.4f} [{fitted.low:+.4f}, {fitted.high:+.4f}] over {fitted.n} seeds")
    return dict(steps=design.steps, stalled_loss=design.stalled_loss, stalled_r1=stalled_r1,
                stalled_learned=stalled_learned, fitted_text=fitted_text,
                reading=_stall_reading(stalled_r1, stalled_learned, fitted, d.plan.effect),
                verdict=rules.c5_lowrank_performance(d.difference).verdict)


def savings_row(c5: Result) -> ComparisonRow:
    """C5's 88%: a rank-r factorisation's parameters against a full n × d table (arithmetic)."""
    c = c5.as_(C5Record)
    return ComparisonRow("C5", paper="88% fewer parameters (n = d = 50, r = 3)", ours=f"{c.savings:.2%}", scale="exact",
                         model="none", corpus="—", options="r (n + d) vs n d",
                         decision=rules.c5_parameter_savings(c.n, c.d, c.r))


def reduction_row(c5: Result, draws: Result, settings=None) -> ComparisonRow:
    """C5's 99.8%: the reduction at each generator's population under both stresses, and pure noise's samples."""
    c, d, e = c5.as_(C5Record), draws.as_(C5DrawsRecord), c5_evidence(c5, draws)
    mean = lambda x: float(x["mean"]) if isinstance(x, dict) else float(x)  # an interval over the draws, or one draw
    # two decimals under 'paper', where every value is within a point of 100%
    text = {n: ", ".join(f"{g} {f.format(mean(x))}" for g, x in e["reductions"][n].items())
            + f"; pure noise's samples {f.format(min(e['pure_noise'][n]))} to {f.format(max(e['pure_noise'][n]))}"
            for n, f in {"scale_free": "{:.1%}", "paper": "{:.2%}"}.items()}
    return ComparisonRow(
        "C5", paper="r = 3 cuts the stress by 99.8% relative to sinusoidal",
        ours=(f"reduction at each generator's population, scale-free stress: {text['scale_free']}. "
              f"The paper's stress: {text['paper']}"),
        scale=_settings(settings).scale, model="none",
        corpus="synthetic drift (K = 3, 4, 5), stationary (pure noise), regimes, markov",
        options=(f"n = d = {c.n}, r = {c.r}, sinusoidal base 10000; populations (no sampling), mean over "
                 f"{len(d.seeds)} generator draws, {d.level:.0%} intervals where at least {MIN_SEEDS} draws"),
        decision=rules.c5_stress_reduction(**e, rank=c.r))


def performance_row(training: Result, settings=None) -> ComparisonRow:
    """C5's "no loss of performance": the interval over seeds of the paired accuracy gap learned − (r = 1)."""
    settings = _settings(settings)
    t, train = training.as_(LowrankTrainingRecord), CONFIGS[settings.scale].train
    r1, learned = t.summary["synthetic"][TrainedTable.LOWRANK_R1], t.summary["synthetic"][TrainedTable.LEARNED]
    r1_sigma = TrainedTable.LOWRANK_R1.options["sigma"]
    return ComparisonRow(
        "C5", paper="no loss of performance with the low-rank table (seed summary)",
        ours=(f"marker order: r = 1 {r1.accuracy_mean:.3f} vs learned {learned.accuracy_mean:.3f} with "
              f"{r1.position_params} vs {learned.position_params} parameters; "
              f"gap learned − (r = 1) {paired_text(learned_gap(t), '{:+.3f}')}"),
        scale=settings.scale, model=describe_model(train.model), corpus="marker-order task; SST-2 subset",
        options=f"{train.steps.synthetic} steps, {len(train.seeds)} seeds, factors initialised at σ = {r1_sigma}",
        decision=rules.c5_lowrank_performance(learned_gap(t)))


def powered_row(powered: Result) -> ComparisonRow:
    """C5's performance decided by the powered design (``run_lowrank_powered``, trained until the tables fit)."""
    p, st, gap = design_summary(powered), stall_summary(powered), powered.as_(LowrankPoweredRecord).difference
    return design_row("C5", powered, f"{st['steps']:,} steps: r = 1 {p.mean_b:.3f} vs learned {p.mean_a:.3f}; gap "
                      f"learned − (r = 1) {paired_text(gap)}; stalled: r = 1 in {st['stalled_r1']}, learned in "
                      f"{st['stalled_learned']} of {p.seeds} seeds; where both fitted: {st['fitted_text']}",
                      "marker-order task", rules.c5_lowrank_performance(gap),
                      model=describe_model(powered.params_as(TrainModel, "model")),
                      paper="no loss of performance with the low-rank table (seed summary)")


def comparison_rows(c5: Result, draws: Result, training: Result, settings=None, powered: Result | None = None) -> list:
    """The chapter's rows for C5: savings, stress reduction, performance and, with ``powered``, the powered design."""
    settings = _settings(settings)
    later = [("C5", lambda: performance_row(training, settings))]
    later += [("C5", lambda: powered_row(powered))] if powered is not None else []
    return [savings_row(c5), reduction_row(c5, draws, settings)] + decided_rows(later, settings)


def power_checks(training: Result, powered: Result | None = None) -> list[PowerCheck]:
    """The chapter's decisions over seeds for its power table (:func:`posgeom.report.power_frame`)."""
    gap = learned_gap(training.as_(LowrankTrainingRecord))
    checks = [PowerCheck("C5", "accuracy, learned − rank-1 table, paired by seed", gap, rules.ACCURACY_MARGIN,
                         training.runtime_s)]
    if powered is not None:
        checks.append(design_check("C5", "the same, trained to fit the task (powered design)", powered,
                                   rules.ACCURACY_MARGIN))
    return checks


def _runs(scale: str) -> str:
    """The training comparison at ``scale`` in words, counted as run_lowrank_training loops (shape: the box's Model)."""
    t, marker = CONFIGS[scale].train, len(TrainedTable)
    sst2 = sum(table in t.sst2_encodings for table in TrainedTable)
    return (f"{marker * len(t.seeds) + sst2 * len(t.sst2_seeds)} models: {marker} encodings × {len(t.seeds)} seeds on "
            f"marker order, {t.steps.synthetic:,} steps each, and {sst2} × {len(t.sst2_seeds)} seeds on SST-2, "
            f"{t.steps.sst2:,} steps each")


def captions(settings=None) -> dict:
    """The captions' facts at ``settings.scale`` (glued as ``mpcap_<key>``), and the box's at both scales."""
    scale = _settings(settings).scale
    conf, corpus, encoder = CONFIGS[scale], CORPUS_CONFIGS[scale], ENCODING_CONFIGS[scale].synthetic_encoder
    train, task = conf.train, conf.train.synthetic
    return dict(
        scale=scale, rank_sequences=describe_sequences(max(conf.rank_sizes)), sst2=sst2_caption(scale),
        stress_sequences=describe_sequences(corpus.synthetic.n_sequences),
        encoders=(f"width {encoder.d_model} and {encoder.n_heads} heads for the synthetic families, "
                  f"{corpus.encoder.d_model} and {corpus.encoder.n_heads} heads for SST-2"),
        model=f"{describe_model(train.model)}, {train.model.pooling} pooling",
        optimiser=(f"AdamW lr {short_float(train.lr)}, batch {train.batch_size}; {train.steps.synthetic:,} steps for "
                   f"marker order, {train.steps.sst2:,} for SST-2"),
        seeds=f"{len(train.seeds)} for marker order, {len(train.sst2_seeds)} for SST-2",
        marker_task=(f"{task.n_train:,} training and {task.n_test:,} test sequences of {task.n_positions} tokens over "
                     f"{task.vocab_size:,} token ids"),
        sst2_task=(f"{describe_sequences(train.sst2.n_train, 'training phrases')} (the model's special tokens, "
                   f"n = {train.sst2.n_positions})"),
        marker_seeds=len(train.seeds), quick_runs=_runs("quick"), paper_runs=_runs("paper"),
        models=describe_scales(*(model_words(CONFIGS[s].train.model) for s in ("quick", "paper"))),
        quick_c5_draws=len(CONFIGS["quick"].c5_seeds),
        sst2_training=describe_scales(*(describe_sequences(CONFIGS[s].train.sst2.n_train, "phrases", random=True)
                                        for s in ("quick", "paper"))))
