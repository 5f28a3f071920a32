r"""What the chapter "When learned tables fail" reports, from its stored runs.

The studies of :mod:`posgeom.experiments.extrapolation` (the order task at $1\times$ to $2\times$ the training
length), :mod:`posgeom.experiments.extrapolation_mlm` (IMDB masked language modelling) and
:mod:`posgeom.experiments.undertrained_tails` are read back typed (:func:`extrapolation_outcome`,
:func:`tails_outcome`); each section's quoted numbers and data-dependent sentences come as one mapping for
:func:`posgeom.notebooks.glue_fields`; the "Paper vs this book" rows for S4–S6 are each decided by its rule in
:mod:`posgeom.verdicts` (S4 and S6 a second time from the CPU designs sized by their power,
:mod:`posgeom.experiments.learned_powered` and :mod:`posgeom.experiments.extrapolation_powered`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import verdicts as rules
from ..config import settings_or_default as _settings
from ..geometry import SeedInterval, paired_difference
from ..registry import Result
from ..registry.typed import as_record
from ..experiments.extrapolation import CONFIGS, HEURISTICS, MLM_ENCODINGS, ORDER_ENCODINGS, study_plan
from ..report import ComparisonRow, PowerCheck, decided_rows
from ..wording import describe_model, describe_scales, describe_training, model_words
from ..models.table_studies import CONDITIONS
from .powered import design_check, design_summary, paired_text, plan_text, stored_design
from .records import StoredHeuristicsDesign, StoredTails, TailCondition

__all__ = [
    "METHOD_NAMES", "SOLVED", "KEEPS", "StoredExtrapolation", "ExtrapolationOutcome", "extrapolation_outcome",
    "score_table", "TailsOutcome", "tails_outcome", "tails_table", "tails_summary", "order_summary",
    "stress_accuracy", "mlm_summary", "power_checks", "comparison_rows", "heuristic_differences", "Captions",
    "captions",
]

#: The chapter's name of each method of the studies.
METHOD_NAMES = {
    "learned:reuse_last": "learned, reuse last row", "learned:interpolate": "learned, interpolated",
    "learned:new_rows": "learned, new rows + fine-tune", "learned:target": "learned, trained at target",
    "sinusoidal": "sinusoidal", "rope": "RoPE", "alibi": "ALiBi", "mds": "MDS (Algorithm 1)", "none": "no positions",
}
#: Accuracy at the training length from which a method counts as having solved the order task.
SOLVED = 0.95
#: Accuracy at the longest length from which an encoding without a wall counts as keeping the task.
KEEPS = 0.90

#: Scores as an extrapolation study stores them: per method and length factor (as text), one per seed (None: none).
Scores = dict[str, dict[str, tuple[float | None, ...]]]


@dataclass(frozen=True)
class StoredExtrapolation:
    """A stored ``run_extrapolation_order`` or ``run_extrapolation_mlm``, typed: its methods, length factors (as
    stored: as text they key the scores), training length, seeds; its scores (the order task's accuracy, the MLM's
    loss) at every position, beyond L and (order task) where both markers sit at or beyond L − 1; and its checks:
    the order task's scale-free stress of each method's positions at the longest length (per seed) and the largest
    change of the trained ALiBi models' logits (and of a model without positions, where run) under reversal; the
    MLM's loss of predicting word frequencies."""

    methods: tuple[str, ...]
    factors: tuple
    L: int
    seeds: tuple
    accuracy: Scores | None = None
    accuracy_beyond: Scores | None = None
    accuracy_both_beyond: Scores | None = None
    loss: Scores | None = None
    loss_beyond: Scores | None = None
    stress_at_max: dict[str, tuple[float, ...]] | None = None
    alibi_reversal_gap: float = float("nan")
    none_reversal_gap: float | None = None
    unigram_loss: float | None = None


@dataclass(frozen=True)
class ExtrapolationOutcome:
    """An extrapolation study's scores: ``mean`` and ``std`` (population sd over the seeds that produced a value),
    DataFrames (n_methods, n_factors); ``beyond_*`` the same at the longest factor for the positions beyond the
    training length (order task: the later marker at or beyond L; MLM: the masked positions at or beyond L);
    ``both_beyond_*`` (order task only) for the sequences whose two markers both sit at or beyond L − 1."""

    score: str               # "accuracy" or "loss"
    methods: tuple
    factors: tuple
    L: int
    seeds: tuple
    mean: pd.DataFrame
    std: pd.DataFrame
    beyond_mean: pd.Series
    beyond_std: pd.Series
    both_beyond_mean: pd.Series | None = None
    both_beyond_std: pd.Series | None = None

    @property
    def longest(self) -> float:
        """The longest length factor evaluated."""
        return self.factors[-1]

    def at(self, method: str, factor: float) -> float:
        """The mean score of ``method`` at ``factor`` × L (NaN where no seed produced one)."""
        return float(self.mean.loc[method, factor])


def _mean_std(scores: Scores, methods, factors, columns=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Mean and population sd over the seeds that produced a value (NaN where none did), (n_methods, n_factors),
    with ``columns`` as labels of the factors (default: as stored)."""
    def over_seeds(per_seed):
        x = np.array([v for v in per_seed if v is not None], dtype=float)
        return (x.mean(), x.std()) if x.size else (np.nan, np.nan)

    cells = np.array([[over_seeds(scores[m][str(f)]) for f in factors] for m in methods], dtype=float)
    return tuple(pd.DataFrame(cells[..., k], index=list(methods), columns=list(columns or factors)) for k in (0, 1))


def extrapolation_outcome(result: Result) -> ExtrapolationOutcome:
    """The typed view of ``run_extrapolation_order`` (scores: accuracy) or ``run_extrapolation_mlm``
    (scores: masked-token loss)."""
    s = as_record(result, StoredExtrapolation)
    score = "accuracy" if s.accuracy is not None else "loss"
    scores, beyond = (s.accuracy, s.accuracy_beyond) if score == "accuracy" else (s.loss, s.loss_beyond)
    factors = tuple(float(f) if float(f) != int(f) else int(f) for f in s.factors)

    def at_longest(table):  # (mean, sd) per method at the longest factor
        return tuple(frame.iloc[:, 0] for frame in _mean_std(table, s.methods, s.factors[-1:]))

    both = at_longest(s.accuracy_both_beyond) if s.accuracy_both_beyond is not None else (None, None)
    return ExtrapolationOutcome(score, s.methods, factors, s.L, s.seeds, *_mean_std(scores, s.methods, s.factors, factors),
                                *at_longest(beyond), *both)


def score_table(outcome: ExtrapolationOutcome, fmt: str = "{:.3f}") -> pd.DataFrame:
    """The chapter's table: per method (named by :data:`METHOD_NAMES`), "mean ± sd" at each length factor and
    for the positions beyond L at the longest factor."""
    o, f_max = outcome, outcome.longest
    columns = {f"{o.score} at {f:g}L": (o.mean[f], o.std[f]) for f in o.factors}
    beyond = "later marker ≥ L" if o.score == "accuracy" else "positions ≥ L"
    columns[f"{beyond}, at {f_max:g}L"] = (o.beyond_mean, o.beyond_std)
    if o.both_beyond_mean is not None:
        columns[f"both markers ≥ L−1, at {f_max:g}L"] = (o.both_beyond_mean, o.both_beyond_std)

    def cell(mean, sd):
        return "—" if not np.isfinite(mean) else f"{fmt.format(mean)} ± {fmt.format(sd)}"

    return pd.DataFrame({METHOD_NAMES[m]: {c: cell(mean[m], sd[m]) for c, (mean, sd) in columns.items()}
                         for m in o.methods}).T


@dataclass(frozen=True)
class TailsOutcome(StoredTails):
    """A stored ``run_undertrained_tails``, typed: its :class:`~posgeom.chapters.records.StoredTails` (``reach``
    (n_conditions, n) the training sequences reaching each position, ``movement`` (n_conditions, n_seeds, n) how
    far each row moved) and, per condition (``"skewed"``, ``"uniform"``), its head and tail quantities per seed."""

    by_condition: dict[str, TailCondition]

    @property
    def n_positions(self) -> int:
        return int(self.reach.shape[1])

    @property
    def short_fraction(self) -> float:
        """The share of short training sequences under the skewed condition."""
        return 1 - self.by_condition["skewed"].frac_long

    def mean(self, condition: str, quantity: str) -> float:
        return float(np.mean(getattr(self.by_condition[condition], quantity)))

    def sd(self, condition: str, quantity: str) -> float:
        return float(np.std(getattr(self.by_condition[condition], quantity)))

    def tail_difference(self) -> SeedInterval:
        """Skewed minus uniform tail accuracy, paired by training seed, with its 95% Student-t interval."""
        return paired_difference(self.by_condition["skewed"].accuracy_tail,
                                 self.by_condition["uniform"].accuracy_tail, bounds=(-1, 1))


_TAIL_QUANTITIES = ("accuracy_head", "accuracy_tail", "movement_head", "movement_tail", "neighbour_cos_head",
                    "neighbour_cos_tail")


def tails_outcome(result: Result) -> TailsOutcome:
    """The typed view of a ``run_undertrained_tails`` result."""
    stored = as_record(result, StoredTails)
    return TailsOutcome(**vars(stored), by_condition={c: as_record(result, TailCondition, at=c)
                                                      for c in stored.conditions})


def tails_table(tails: TailsOutcome) -> pd.DataFrame:
    """Mean and standard deviation over seeds of each head and tail quantity, per condition."""
    rows = [{"lengths": c, "quantity": q, "mean": tails.mean(c, q), "sd": tails.sd(c, q)}
            for c in tails.conditions for q in _TAIL_QUANTITIES]
    return pd.DataFrame(rows).pivot(index="quantity", columns="lengths", values=["mean", "sd"])


def tails_summary(tails: TailsOutcome) -> dict:
    """The under-trained-tails numbers the chapter quotes (means and sds over seeds; ``reach_last`` and
    ``reach_last_u``, the training sequences reaching the last position with skewed and uniform lengths) and
    ``tail_comment``, what the tail accuracies say: it follows where the paired interval of skewed − uniform lies
    against the smallest deficit that counts, ``posgeom.verdicts.TAIL_EFFECT`` (beyond it, excluding it, or
    neither), as S4's rule reads it."""
    diff = tails.tail_difference()
    drop = {c: tails.mean(c, "accuracy_head") - tails.mean(c, "accuracy_tail") for c in tails.conditions}
    interval = ("The difference of the tail accuracies, skewed minus uniform, with its 95% Student-t interval "
                f"over the seeds, is {diff.text()}: at this scale ")
    if diff.high < -rules.TAIL_EFFECT:
        comment = (f"Tail accuracy drops by {drop['skewed']:.3f} below the head with skewed lengths and by "
                   f"{drop['uniform']:.3f} with uniform ones: part of the drop is the task (a marker late in a long "
                   "sequence is harder at this size), the rest is the under-trained tail.")
    elif diff.low > -rules.TAIL_EFFECT:
        comment = interval + f"a tail deficit of {rules.TAIL_EFFECT:g} or more is excluded."
    else:
        comment = interval + "the under-training of the tail is not resolved in the accuracy."
    means = [("skewed", "accuracy_head"), ("skewed", "accuracy_tail"), ("skewed", "movement_head"),
             ("skewed", "movement_tail"), ("uniform", "accuracy_head"), ("uniform", "accuracy_tail")]
    return {"n": tails.n_positions, "half": tails.boundary, "short_pct": 100 * tails.short_fraction,
            "n_train": tails.by_condition["skewed"].n_train, "reach_last": int(tails.reach[0, -1]),
            "reach_last_u": int(tails.reach[1, -1]), **{f"{c}_{q}": tails.mean(c, q) for c, q in means},
            **{f"{c}_accuracy_tail_sd": tails.sd(c, "accuracy_tail") for c in ("skewed", "uniform")},
            "tail_comment": comment}


def _heuristics(outcome: ExtrapolationOutcome) -> dict[str, float]:
    return {h: outcome.at(f"learned:{h}", outcome.longest) for h in HEURISTICS}


def stress_accuracy(order: Result) -> pd.DataFrame:
    """Per method, the mean scale-free stress of its positions at the longest length and its accuracy there."""
    outcome = extrapolation_outcome(order)
    stress = as_record(order, StoredExtrapolation).stress_at_max
    return pd.DataFrame({METHOD_NAMES[m]: {"stress at 2L (scale_free)": float(np.mean(stress[m])),
                                           "accuracy at 2L": outcome.at(m, outcome.longest)}
                         for m in outcome.methods}).T


def order_summary(order: Result, settings=None) -> dict:
    """The order-task extrapolation numbers and sentences the chapter quotes, at the scale in force: the accuracies
    at the longest length (``acc_*_max``, means over seeds; ``both_reuse_last`` on the sequences whose two markers
    sit at or beyond L − 1), which methods solve the task at L (``at_L_comment``), which encodings without a wall
    keep it at the longest length (``wallfree_comment``), whether the heuristics fall short of the table trained at
    the target length (``s6_comment``), the largest change of a trained ALiBi model's logits under reversal
    (``alibi_gap``), and Spearman's ρ between stress and accuracy at the longest length over the methods."""
    from scipy.stats import spearmanr

    conf = CONFIGS[_settings(settings).scale].order
    o, stored = extrapolation_outcome(order), as_record(order, StoredExtrapolation)
    f_max, heur = o.longest, _heuristics(o)
    target = o.at("learned:target", f_max)
    not_below = [h for h in HEURISTICS if heur[h] >= target - rules.SHORTFALL]
    solved = [METHOD_NAMES[m] for m in o.methods if o.at(m, 1) >= SOLVED]
    unsolved = [METHOD_NAMES[m] for m in o.methods if o.at(m, 1) < SOLVED]
    wall_free = [m for m in ("rope", "mds", "sinusoidal", "alibi") if m in o.methods]
    keep = [METHOD_NAMES[m] for m in wall_free if o.at(m, f_max) >= KEEPS]
    lose = [METHOD_NAMES[m] for m in wall_free if o.at(m, f_max) < KEEPS]
    gap, none_gap = stored.alibi_reversal_gap, stored.none_reversal_gap
    sa = stress_accuracy(order)
    stress = sa["stress at 2L (scale_free)"]
    return {
        "L": o.L, "train_steps": conf.train.steps, "ft_steps": conf.finetune.steps,
        **{f"acc_{h}_max": heur[h] for h in HEURISTICS}, "acc_target_max": target,
        **{f"acc_{m}_max": o.at(m, f_max) for m in ("rope", "mds", "sinusoidal")},
        "both_reuse_last": float(o.both_beyond_mean["learned:reuse_last"]),
        "best_heur": max(heur, key=heur.get).replace("_", " "),
        "at_L_comment": (f"{'; '.join(solved) or 'no method'} — at least {100 * SOLVED:.0f}% accuracy"
                         + (f"; below {100 * SOLVED:.0f}%: {'; '.join(unsolved)}" if unsolved else "") + "."),
        "wallfree_comment": (f"{' and '.join(keep) or 'none'} keep at least {100 * KEEPS:.0f}% accuracy"
                             + (f", while {' and '.join(lose)} do not." if lose else ".")),
        "s6_comment": ("Every heuristic stays below the table trained at the target length." if not not_below else
                       f"Not every heuristic falls short here: {', '.join(h.replace('_', ' ') for h in not_below)} "
                       f"matches or beats the table trained at the target length ({target:.3f}), which had to learn a "
                       "harder task (longer sequences) in the same number of steps."),
        "alibi_gap": gap,
        "gap_sentence": (f"The largest change of the trained ALiBi models' logits under reversal is {gap:.1e}"
                         + (f" (a model without positions: {none_gap:.1e})" if none_gap is not None else "") + "."),
        "stress_rho": float(spearmanr(stress, sa["accuracy at 2L"]).statistic),
        "stress_mds": float(stress[METHOD_NAMES["mds"]]), "stress_rope": float(stress[METHOD_NAMES["rope"]]),
    }


def mlm_summary(mlm: Result, settings=None) -> dict:
    """The IMDB masked-language-model numbers the chapter quotes (losses in nats, means over seeds) at the scale in
    force: ``spread``, the largest minus the smallest loss over the methods at L; ``seed_sd``, the mean over the
    methods of the seeds' standard deviation there; ``uses_position``, whether the spread exceeds
    ``posgeom.verdicts.USES_POSITION_SDS`` × ``seed_sd`` (does the model use positions at all?)."""
    c = CONFIGS[_settings(settings).scale].mlm
    o = extrapolation_outcome(mlm)
    spread, seed_sd = float(o.mean[1].max() - o.mean[1].min()), float(o.std[1].mean())
    uses = spread > rules.USES_POSITION_SDS * seed_sd
    return {"topk": f"{c.top_k:,}", "L": c.L, "lengths": ", ".join(str(int(round(f * c.L))) for f in c.factors),
            "nseeds": len(c.seeds), "unigram": as_record(mlm, StoredExtrapolation).unigram_loss,
            "none_1": o.at("none", 1), "spread": spread, "seed_sd": seed_sd, "uses_position": uses,
            "comment": ("The methods do separate: see the table for which ones degrade beyond L." if uses else
                        "At this scale the masked language model has not learned to use positions at all — it "
                        "predicts word frequencies — so this task cannot rank the extrapolation methods here; a "
                        "longer-trained, larger model (the `paper` configuration) is needed for that.")}


def power_checks(tails: Result, powered: Result | None = None, heuristics_powered: Result | None = None) -> list:
    """This chapter's decisions over seeds for its power table (:func:`posgeom.report.power_frame`), each against
    the smallest effect its rule names: S4's tail accuracy, skewed − uniform lengths (with ``powered``, the same in
    the design sized by its power); with ``heuristics_powered``, S6's best heuristic against the target-length table.

    Returns
    -------
    list of posgeom.report.PowerCheck
    """
    checks = [PowerCheck("S4", "tail accuracy, skewed − uniform lengths, paired by seed",
                         tails_outcome(tails).tail_difference(), rules.TAIL_EFFECT, tails.manifest.get("runtime_s"))]
    if powered is not None:
        checks.append(design_check("S4", "the same, over the seeds a pilot sized (powered design)", powered,
                                   rules.TAIL_EFFECT))
    if heuristics_powered is not None:
        checks.append(design_check("S6", "accuracy at 2L, best heuristic − table trained at 2L, paired by seed "
                                   "(powered design)", heuristics_powered, rules.SHORTFALL))
    return checks


def comparison_rows(tails: Result, order: Result, mlm: Result, wall_error: str | None, table_rows: int,
                    settings=None, powered: Result | None = None, heuristics_powered: Result | None = None) -> list:
    """The chapter's "Paper vs this book" rows for S4, S5 and S6, each decided by its rule in :mod:`posgeom.verdicts`.

    Parameters
    ----------
    tails, order, mlm : Result
        ``run_undertrained_tails``, ``run_extrapolation_order``, ``run_extrapolation_mlm``.
    wall_error : str or None
        The message of the ``PositionLimitError`` a longer input raised in a learned table of ``table_rows``
        rows (None when it passed).
    settings : Settings, optional
        The scale in force (its settings describe the models).
    powered : Result, optional
        ``run_tails_powered`` (:mod:`posgeom.experiments.learned_powered`): S4 decided a second time, by the same
        rule, over the seeds a pilot sized.
    heuristics_powered : Result, optional
        ``run_heuristics_powered`` (:mod:`posgeom.experiments.extrapolation_powered`): S6 decided over the seeds a
        pilot sized, on a CPU, against the margin of :func:`posgeom.verdicts.s6_heuristics_powered`.

    Returns
    -------
    list of posgeom.report.ComparisonRow
    """
    settings = _settings(settings)
    conf, scale = CONFIGS[settings.scale], settings.scale

    def tiny(n_seeds, extra=""):
        return (f"encoder d={conf.model.d_model}, {conf.model.n_layers} layers, trained from scratch, "
                f"{n_seeds} seeds{extra}")

    def s4_row():
        t = tails_outcome(tails)
        diff = t.tail_difference()
        skewed, uniform = (f"{t.mean(c, 'accuracy_tail'):.3f} ± {t.sd(c, 'accuracy_tail'):.3f}" for c in CONDITIONS)
        return ComparisonRow("S4", ours=(f"tail accuracy {skewed} (90% short) vs {uniform} (uniform lengths); "
                                         f"difference {diff.text()} (95%, paired by seed)"),
                             scale=scale, model=tiny(len(conf.tails.seeds)),
                             corpus=f"synthetic order task, n = {conf.tails.n_positions}",
                             options="learned N(0, 0.02²), AdamW", decision=rules.s4_undertrained_tail(diff))

    def s5_row():
        return ComparisonRow("S5", ours=f"PositionLimitError for a 24-token input to a {table_rows}-row table",
                             scale=scale, model="posgeom encoder, learned table", corpus="none", options="",
                             decision=rules.s5_no_vector_beyond(wall_error is not None))

    def s6_order_row():
        o = extrapolation_outcome(order)
        f_max, heur = o.longest, _heuristics(o)
        target = o.at("learned:target", f_max)
        return ComparisonRow("S6", ours=(f"order task at {f_max:g}L: reuse {heur['reuse_last']:.3f}, interpolate "
                                         f"{heur['interpolate']:.3f}, new rows + fine-tune {heur['new_rows']:.3f}; "
                                         f"trained at {f_max:g}L {target:.3f}; RoPE {o.at('rope', f_max):.3f}"),
                             scale=scale, model=tiny(len(o.seeds)), corpus=f"synthetic order task, L = {o.L}",
                             options=f"fine-tune {conf.order.finetune.steps} steps",
                             decision=rules.s6_heuristics_order(heur, target))

    def s6_mlm_row():
        m, s = extrapolation_outcome(mlm), mlm_summary(mlm, settings)
        f_max = extrapolation_outcome(order).longest  # the lengths of the order task's study, as its row
        heur = _heuristics(m)
        return ComparisonRow("S6", ours=(f"IMDB MLM loss at {f_max:g}L: reuse {m.at('learned:reuse_last', f_max):.3f}, "
                                         f"interpolate {m.at('learned:interpolate', f_max):.3f}, new rows "
                                         f"{m.at('learned:new_rows', f_max):.3f}; no positions "
                                         f"{m.at('none', f_max):.3f}; unigram {s['unigram']:.3f}"),
                             scale=scale, model=tiny(len(m.seeds), f", {conf.mlm.train.steps} steps"),
                             corpus=f"IMDB train windows, L = {conf.mlm.L}",
                             options=f"{conf.mlm.top_k:,}-word-piece vocabulary",
                             decision=rules.s6_heuristics_mlm(s["spread"], s["seed_sd"], heur, m.at("none", f_max)))

    powered_rows = [("S4", lambda: _s4_powered_row(powered))] if powered is not None else []
    powered_s6 = [("S6", lambda: _s6_powered_row(heuristics_powered))] if heuristics_powered is not None else []
    return decided_rows([("S4", s4_row), *powered_rows, ("S5", s5_row), ("S6", s6_order_row), *powered_s6,
                         ("S6", s6_mlm_row)], settings)


def _s4_powered_row(powered: Result) -> ComparisonRow:
    """S4 decided by the design sized by its power (:func:`posgeom.experiments.learned_powered.run_tails_powered`)."""
    p, difference = design_summary(powered), stored_design(powered).difference
    return ComparisonRow("S4", ours=(f"tail accuracy {p.mean_a:.4f} (90% short) vs {p.mean_b:.4f} (uniform lengths); "
                                     f"difference {paired_text(difference)}{p.stale}"),
                         scale=p.scale, model=powered.manifest["model"] + " (CPU)",
                         corpus=f"synthetic order task, n = {powered.manifest['params']['tails']['n_positions']}",
                         options=plan_text(powered), decision=rules.s4_undertrained_tail(difference))


def heuristic_differences(heuristics_powered: Result) -> dict[str, SeedInterval]:
    """S6's design: each heuristic's accuracy at 2L minus the target-length table's, paired by seed over the
    decision's seeds (95 %, Student t), keyed by the heuristic's name in :data:`METHOD_NAMES` order."""
    stored_intervals = as_record(heuristics_powered, StoredHeuristicsDesign).heuristics
    return {h: stored_intervals[h] for h in HEURISTICS if h in stored_intervals}


def _s6_powered_row(heuristics_powered: Result) -> ComparisonRow:
    """S6 decided by the design sized by its power
    (:func:`posgeom.experiments.extrapolation_powered.run_heuristics_powered`)."""
    p = design_summary(heuristics_powered)
    diffs, d = heuristic_differences(heuristics_powered), as_record(heuristics_powered, StoredHeuristicsDesign)
    means = "; ".join(f"{METHOD_NAMES['learned:' + h]} {np.mean([getattr(r, h) for r in d.runs]):.4f}, difference "
                      f"{diffs[h].text('{:+.4f}', with_t=False)}" for h in diffs)
    return ComparisonRow("S6", ours=(f"order task at {d.length} positions (trained at {d.L}): trained at "
                                     f"{d.length} {p.mean_b:.4f}; {means} (95% intervals over {p.seeds} seeds, "
                                     f"paired){p.stale}"),
                         scale=p.scale, model=heuristics_powered.manifest["model"] + " (CPU)",
                         corpus=f"synthetic order task, L = {d.L}",
                         options=f"fine-tune {heuristics_powered.manifest['params']['order']['finetune']['steps']} "
                                 f"steps; {plan_text(heuristics_powered)}",
                         decision=rules.s6_heuristics_powered(diffs))


@dataclass(frozen=True)
class Captions:
    """What the chapter's figure captions state about the runs, from the settings in force (glued as
    ``ltfcap_<field>``), so that a caption is right at both scales."""

    scale: str
    model: str
    order_task: str       # the order task of the headline figure
    order_lengths: str    # the evaluation lengths
    order_seeds: int
    finetune_steps: int   # the fine-tune of the new rows
    order_target: str     # the lengths the "trained at target" tables are trained at
    order_training: str
    tails_task: str
    tails_training: str
    tails_seeds: int
    mlm_windows: str
    mlm_seeds: int
    mlm_data: str
    quick_runs: str       # the training runs at each scale, for the "What this chapter needs" box
    paper_runs: str
    models: str           # the encoder's shape at both scales, in words, said once in the box


def _lengths(factors) -> str:
    """Length factors in words: (1.0, 1.5, 2.0) → ``"L, 1.5 L and 2 L"``."""
    words = ["L" if float(f) == 1.0 else f"{float(f):g} L" for f in factors]
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def captions(settings=None) -> Captions:
    """The :class:`Captions` of the chapter at ``settings.scale`` (:data:`posgeom.experiments.extrapolation.CONFIGS`)."""
    settings = _settings(settings)
    conf = CONFIGS[settings.scale]
    order, tails, mlm = conf.order, conf.tails, conf.mlm
    return Captions(
        scale=settings.scale, model=describe_model(conf.model),
        order_task=f"{order.vocab_size:,} tokens, L = {order.L} positions",
        order_lengths=_lengths(order.factors), order_seeds=len(order.seeds), finetune_steps=int(order.finetune.steps),
        order_target=_lengths(order.target_factors), order_training=describe_training(order.train),
        tails_task=(f"{tails.n_positions} positions and {tails.n_train:,} training sequences, "
                    f"{tails.short_fraction:.0%} shorter than {tails.n_positions // 2} tokens (\"skewed\") or lengths "
                    f"uniform on [{tails.min_length}, {tails.n_positions}] (\"uniform\")"),
        tails_training=describe_training(tails.train), tails_seeds=len(tails.seeds),
        mlm_windows=f"{2 * mlm.L}-token windows (2 L) for models trained on {mlm.L}-token windows",
        mlm_seeds=len(mlm.seeds),
        mlm_data=f"{mlm.top_k:,}-word-piece vocabulary, {mlm.n_train:,} training reviews",
        quick_runs=_runs("quick"), paper_runs=_runs("paper"),
        models=describe_scales(*(model_words(CONFIGS[s].model) for s in ("quick", "paper"))))


def _runs(scale: str) -> str:
    """The chapter's training runs at ``scale`` in words (how many, for what, the steps, the seeds and the
    fine-tunes' steps), counted as the studies loop: the tails (each condition and seed), the order task and IMDB
    masked language modelling (``study_plan(...).n_runs``: each encoding and seed, and for the learned table a
    fine-tune per longer length and a model trained at each target length). The encoder's shape is said once, in
    the box's "Model" line (``Captions.models``)."""
    conf = CONFIGS[scale]
    order, mlm = study_plan(conf.order, valid=ORDER_ENCODINGS), study_plan(conf.mlm, valid=MLM_ENCODINGS)
    tails = len(CONDITIONS) * len(conf.tails.seeds)
    parts = []
    for n, what, block, tunes in ((tails, "the tails", conf.tails, False), (order.n_runs, "the order task", conf.order, True),
                                  (mlm.n_runs, "IMDB masked language modelling", conf.mlm, True)):
        tune = f", fine-tunes of {block.finetune.steps:,}" if tunes and "learned" in block.encodings else ""
        parts.append(f"{n} for {what} ({block.train.steps:,} steps{tune}; {len(block.seeds)} seeds)")
    return f"{tails + order.n_runs + mlm.n_runs} training runs: {'; '.join(parts)}"
