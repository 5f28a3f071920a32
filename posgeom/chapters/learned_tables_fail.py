r"""What the chapter "When learned tables fail" reports from its stored runs (:mod:`posgeom.experiments.extrapolation`,
``extrapolation_mlm``, ``undertrained_tails``, read back typed): each section's quoted numbers and sentences as one
mapping for :func:`posgeom.notebooks.glue_fields`, and the "Paper vs this book" rows for S4–S6, each decided by its
rule in :mod:`posgeom.verdicts` (S4 and S6 a second time from the CPU designs sized by their power,
:mod:`posgeom.experiments.learned_powered` and :mod:`posgeom.experiments.extrapolation_powered`)."""

from __future__ import annotations

from dataclasses import dataclass, field

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

__all__ = ["METHOD_NAMES", "SOLVED", "KEEPS", "ExtrapolationOutcome", "extrapolation_outcome", "score_table",
           "TailsOutcome", "tails_outcome", "tails_table", "tails_summary", "order_summary", "stress_accuracy",
           "mlm_summary", "power_checks", "comparison_rows", "Captions", "captions"]

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
class ExtrapolationOutcome:
    """A stored ``run_extrapolation_order`` (score: accuracy) or ``run_extrapolation_mlm`` (loss), typed: its
    :data:`Scores` at every position, beyond L and (order task) with both markers at or beyond L − 1, and its checks.
    Read from them: ``mean``, ``std`` (n_methods, n_factors) over the seeds that produced a value (population sd);
    ``beyond``, ``both_beyond``: the two (n_methods,) at the longest factor."""

    methods: tuple[str, ...]
    factors: tuple                       # as stored: as text they key the scores
    L: int
    seeds: tuple
    accuracy: Scores | None = None
    accuracy_beyond: Scores | None = None
    accuracy_both_beyond: Scores | None = None
    loss: Scores | None = None
    loss_beyond: Scores | None = None
    stress_at_max: dict[str, tuple[float, ...]] | None = None  # per method and seed, of its positions at the longest
    alibi_reversal_gap: float = float("nan")   # largest change of the ALiBi models' logits under reversal
    none_reversal_gap: float | None = None     # the same without positions, where run
    unigram_loss: float | None = None          # MLM: the loss of predicting word frequencies
    score: str = field(init=False)       # "accuracy" (order task) or "loss" (MLM)
    mean: pd.DataFrame = field(init=False, repr=False)
    std: pd.DataFrame = field(init=False, repr=False)
    beyond: tuple[pd.Series, pd.Series] = field(init=False, repr=False)
    both_beyond: tuple[pd.Series, pd.Series] | None = field(init=False, repr=False)

    def __post_init__(self):
        score = "accuracy" if self.accuracy is not None else "loss"
        at_longest = [tuple(frame.iloc[:, 0] for frame in _mean_std(table, self.methods, self.factors[-1:]))
                      if table is not None else None for table in (getattr(self, f"{score}_beyond"),
                                                                   self.accuracy_both_beyond)]
        for name, value in zip(("score", "mean", "std", "beyond", "both_beyond"),
                               (score, *_mean_std(getattr(self, score), self.methods, self.factors), *at_longest)):
            object.__setattr__(self, name, value)  # frozen: set once, from the stored scores

    @property
    def longest(self) -> float:
        return self.factors[-1]

    def at(self, method: str, factor: float) -> float:
        """The mean score of ``method`` at ``factor`` × L (NaN where no seed produced one)."""
        return float(self.mean.loc[method, factor])


def _mean_std(scores: Scores, methods, factors) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Mean and population sd over the seeds that produced a value (NaN where none did), (n_methods, n_factors)."""
    def over_seeds(per_seed):
        x = np.array([v for v in per_seed if v is not None], dtype=float)
        return (x.mean(), x.std()) if x.size else (np.nan, np.nan)

    cells = np.array([[over_seeds(scores[m][str(f)]) for f in factors] for m in methods], dtype=float)
    return tuple(pd.DataFrame(cells[..., k], index=list(methods), columns=list(factors)) for k in (0, 1))


def extrapolation_outcome(result: Result) -> ExtrapolationOutcome:
    """The typed view of ``run_extrapolation_order`` or ``run_extrapolation_mlm``."""
    return as_record(result, ExtrapolationOutcome)


def score_table(outcome: ExtrapolationOutcome, fmt: str = "{:.3f}") -> pd.DataFrame:
    """The chapter's table: per method (:data:`METHOD_NAMES`), "mean ± sd" at each length factor and beyond L."""
    o, f_max = outcome, outcome.longest
    columns = {f"{o.score} at {f:g}L": (o.mean[f], o.std[f]) for f in o.factors}
    columns[("later marker ≥ L" if o.score == "accuracy" else "positions ≥ L") + f", at {f_max:g}L"] = o.beyond
    if o.both_beyond is not None:
        columns[f"both markers ≥ L−1, at {f_max:g}L"] = o.both_beyond

    def cell(mean, sd):
        return "—" if not np.isfinite(mean) else f"{fmt.format(mean)} ± {fmt.format(sd)}"

    return pd.DataFrame({METHOD_NAMES[m]: {c: cell(mean[m], sd[m]) for c, (mean, sd) in columns.items()}
                         for m in o.methods}).T


@dataclass(frozen=True)
class TailsOutcome(StoredTails):
    """A stored ``run_undertrained_tails``: its :class:`~posgeom.chapters.records.StoredTails` (``reach`` (n_conditions,
    n), ``movement`` (n_conditions, n_seeds, n)) and the per-seed quantities of each condition (skewed, uniform)."""

    by_condition: dict[str, TailCondition]

    @property
    def n_positions(self) -> int:
        return int(self.reach.shape[1])

    def tail_difference(self) -> SeedInterval:
        """Skewed minus uniform tail accuracy, paired by training seed, with its 95% Student-t interval."""
        return paired_difference(*(self.by_condition[c].accuracy_tail for c in ("skewed", "uniform")), bounds=(-1, 1))


def tails_outcome(result: Result) -> TailsOutcome:
    """The typed view of a ``run_undertrained_tails`` result."""
    stored = as_record(result, StoredTails)
    by_condition = {c: as_record(result, TailCondition, at=c) for c in stored.conditions}
    return TailsOutcome(**vars(stored), by_condition=by_condition)


def tails_table(tails: TailsOutcome) -> pd.DataFrame:
    """Mean and sd over seeds of each head and tail quantity (rows), columns ("mean" or "sd", condition)."""
    per_seed = {(c, f"{q}_{part}"): getattr(tails.by_condition[c], f"{q}_{part}") for c in tails.conditions
                for q in ("accuracy", "movement", "neighbour_cos") for part in ("head", "tail")}
    rows = [{"lengths": c, "quantity": q, "mean": np.mean(x), "sd": np.std(x)} for (c, q), x in per_seed.items()]
    return pd.DataFrame(rows).pivot(index="quantity", columns="lengths", values=["mean", "sd"])


def tails_summary(tails: TailsOutcome) -> dict:
    """The tails numbers the chapter quotes (of :func:`tails_table`; ``reach_last(_u)``: sequences reaching the last
    position, skewed (uniform) lengths) and ``tail_comment``: where the paired interval of skewed − uniform lies
    against the smallest deficit that counts, ``verdicts.TAIL_EFFECT`` (beyond, excluding it, or neither), as S4."""
    diff, stats = tails.tail_difference(), tails_table(tails)
    drop = stats["mean"].loc["accuracy_head"] - stats["mean"].loc["accuracy_tail"]  # per condition
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
    skewed = tails.by_condition["skewed"]
    quoted = [("skewed", "accuracy_head"), ("skewed", "accuracy_tail"), ("skewed", "movement_head"),
              ("skewed", "movement_tail"), ("uniform", "accuracy_head"), ("uniform", "accuracy_tail")]
    return {"n": tails.n_positions, "half": tails.boundary, "short_pct": 100 * (1 - skewed.frac_long),
            "n_train": skewed.n_train, "reach_last": int(tails.reach[0, -1]), "reach_last_u": int(tails.reach[1, -1]),
            **{f"{c}_{q}": float(stats["mean"].loc[q, c]) for c, q in quoted},
            **{f"{c}_accuracy_tail_sd": float(stats["sd"].loc["accuracy_tail", c]) for c in ("skewed", "uniform")},
            "tail_comment": comment}


def _heuristics(outcome: ExtrapolationOutcome) -> dict[str, float]:
    return {h: outcome.at(f"learned:{h}", outcome.longest) for h in HEURISTICS}


def stress_accuracy(order: Result) -> pd.DataFrame:
    """Per method, the mean scale-free stress of its positions at the longest length and its accuracy there."""
    o = extrapolation_outcome(order)
    return pd.DataFrame({METHOD_NAMES[m]: {"stress at 2L (scale_free)": float(np.mean(o.stress_at_max[m])),
                                           "accuracy at 2L": o.at(m, o.longest)} for m in o.methods}).T


def order_summary(order: Result, settings=None) -> dict:
    """The order-task numbers and sentences the chapter quotes at the scale in force: means over seeds at the longest
    length (``acc_*_max``), which methods solve the task at L, which encodings without a wall keep it, whether the
    heuristics fall short (``s6_comment``), and Spearman's ρ between stress and accuracy over the methods."""
    from scipy.stats import spearmanr

    conf, o = CONFIGS[_settings(settings).scale].order, extrapolation_outcome(order)
    f_max, heur, target = o.longest, _heuristics(o), o.at("learned:target", o.longest)
    not_below = [h.replace("_", " ") for h in HEURISTICS if heur[h] >= target - rules.SHORTFALL]
    solved = [METHOD_NAMES[m] for m in o.methods if o.at(m, 1) >= SOLVED]
    unsolved = [METHOD_NAMES[m] for m in o.methods if o.at(m, 1) < SOLVED]
    wall_free = [m for m in ("rope", "mds", "sinusoidal", "alibi") if m in o.methods]
    keep = [METHOD_NAMES[m] for m in wall_free if o.at(m, f_max) >= KEEPS]
    lose = [METHOD_NAMES[m] for m in wall_free if o.at(m, f_max) < KEEPS]
    gap, none_gap = o.alibi_reversal_gap, o.none_reversal_gap
    sa = stress_accuracy(order)
    stress = sa["stress at 2L (scale_free)"]
    return {
        "L": o.L, "train_steps": conf.train.steps, "ft_steps": conf.finetune.steps,
        **{f"acc_{h}_max": heur[h] for h in HEURISTICS}, "acc_target_max": target,
        **{f"acc_{m}_max": o.at(m, f_max) for m in ("rope", "mds", "sinusoidal")},
        "both_reuse_last": float(o.both_beyond[0]["learned:reuse_last"]),
        "best_heur": max(heur, key=heur.get).replace("_", " "),
        "at_L_comment": (f"{'; '.join(solved) or 'no method'} — at least {100 * SOLVED:.0f}% accuracy"
                         + (f"; below {100 * SOLVED:.0f}%: {'; '.join(unsolved)}" if unsolved else "") + "."),
        "wallfree_comment": (f"{' and '.join(keep) or 'none'} keep at least {100 * KEEPS:.0f}% accuracy"
                             + (f", while {' and '.join(lose)} do not." if lose else ".")),
        "s6_comment": ("Every heuristic stays below the table trained at the target length." if not not_below else
                       f"Not every heuristic falls short here: {', '.join(not_below)} matches or beats the table "
                       f"trained at the target length ({target:.3f}), which had to learn a harder task (longer "
                       "sequences) in the same number of steps."),
        "alibi_gap": gap,
        "gap_sentence": (f"The largest change of the trained ALiBi models' logits under reversal is {gap:.1e}"
                         + (f" (a model without positions: {none_gap:.1e})" if none_gap is not None else "") + "."),
        "stress_rho": float(spearmanr(stress, sa["accuracy at 2L"]).statistic),
        "stress_mds": float(stress[METHOD_NAMES["mds"]]), "stress_rope": float(stress[METHOD_NAMES["rope"]]),
    }


def mlm_summary(mlm: Result, settings=None) -> dict:
    """The IMDB MLM numbers the chapter quotes (nats, means over seeds) at the scale in force: ``spread``, the largest
    minus the smallest loss over the methods at L; ``seed_sd``, the methods' mean sd over seeds there;
    ``uses_position``: spread > ``verdicts.USES_POSITION_SDS`` × ``seed_sd`` (does the model use positions at all?)."""
    c, o = CONFIGS[_settings(settings).scale].mlm, extrapolation_outcome(mlm)
    spread, seed_sd = float(o.mean[1].max() - o.mean[1].min()), float(o.std[1].mean())
    uses = spread > rules.USES_POSITION_SDS * seed_sd
    return {"topk": f"{c.top_k:,}", "L": c.L, "lengths": ", ".join(str(int(round(f * c.L))) for f in c.factors),
            "nseeds": len(c.seeds), "unigram": o.unigram_loss, "none_1": o.at("none", 1), "spread": spread,
            "seed_sd": seed_sd, "uses_position": uses,
            "comment": ("The methods do separate: see the table for which ones degrade beyond L." if uses else
                        "At this scale the masked language model has not learned to use positions at all — it "
                        "predicts word frequencies — so this task cannot rank the extrapolation methods here; a "
                        "longer-trained, larger model (the `paper` configuration) is needed for that.")}


def power_checks(tails: Result, powered: Result | None = None, heuristics_powered: Result | None = None) -> list:
    """The chapter's decisions over seeds (:class:`posgeom.report.PowerCheck`, against the smallest effect of its rule)
    for its power table: S4 (and with ``powered`` its powered design); with ``heuristics_powered``, S6's design."""
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
    """The chapter's "Paper vs this book" rows (:class:`posgeom.report.ComparisonRow`) for S4, S5 and S6, each
    decided by its rule in :mod:`posgeom.verdicts`: ``tails``, ``order``, ``mlm`` are ``run_undertrained_tails``,
    ``run_extrapolation_order``, ``run_extrapolation_mlm``; ``wall_error`` the ``PositionLimitError`` a longer input
    raised in a learned table of ``table_rows`` rows (None: it passed); ``settings`` the scale in force (they describe
    the models); ``powered`` and ``heuristics_powered`` (``run_tails_powered``, ``run_heuristics_powered``) decide S4
    and S6 a second time, on a CPU, over the seeds a pilot sized."""
    settings = _settings(settings)
    conf = CONFIGS[settings.scale]

    def row(claim, ours, n_seeds, corpus, options, decision, steps=""):
        model = f"encoder d={conf.model.d_model}, {conf.model.n_layers} layers, trained from scratch, {n_seeds} seeds"
        return ComparisonRow(claim, ours=ours, scale=settings.scale, model=model + steps, corpus=corpus,
                             options=options, decision=decision)

    def s4_row():
        t = tails_outcome(tails)
        diff, stats = t.tail_difference(), tails_table(t).loc["accuracy_tail"]
        skewed, uniform = (f"{stats['mean', c]:.3f} ± {stats['sd', c]:.3f}" for c in ("skewed", "uniform"))
        return row("S4", f"tail accuracy {skewed} (90% short) vs {uniform} (uniform lengths); difference "
                   f"{diff.text()} (95%, paired by seed)", len(conf.tails.seeds),
                   f"synthetic order task, n = {conf.tails.n_positions}", "learned N(0, 0.02²), AdamW",
                   rules.s4_undertrained_tail(diff))

    def s5_row():
        return ComparisonRow("S5", ours=f"PositionLimitError for a 24-token input to a {table_rows}-row table",
                             scale=settings.scale, model="posgeom encoder, learned table", corpus="none", options="",
                             decision=rules.s5_no_vector_beyond(wall_error is not None))

    def s6_order_row():
        o = extrapolation_outcome(order)
        f_max, heur, target = o.longest, _heuristics(o), o.at("learned:target", o.longest)
        return row("S6", f"order task at {f_max:g}L: reuse {heur['reuse_last']:.3f}, interpolate "
                   f"{heur['interpolate']:.3f}, new rows + fine-tune {heur['new_rows']:.3f}; trained at {f_max:g}L "
                   f"{target:.3f}; RoPE {o.at('rope', f_max):.3f}", len(o.seeds), f"synthetic order task, L = {o.L}",
                   f"fine-tune {conf.order.finetune.steps} steps", rules.s6_heuristics_order(heur, target))

    def s6_mlm_row():
        m, s = extrapolation_outcome(mlm), mlm_summary(mlm, settings)
        f_max = extrapolation_outcome(order).longest  # the lengths of the order task's study, as its row
        return row("S6", f"IMDB MLM loss at {f_max:g}L: reuse {m.at('learned:reuse_last', f_max):.3f}, interpolate "
                   f"{m.at('learned:interpolate', f_max):.3f}, new rows {m.at('learned:new_rows', f_max):.3f}; no "
                   f"positions {m.at('none', f_max):.3f}; unigram {s['unigram']:.3f}", len(m.seeds),
                   f"IMDB train windows, L = {conf.mlm.L}", f"{conf.mlm.top_k:,}-word-piece vocabulary",
                   rules.s6_heuristics_mlm(s["spread"], s["seed_sd"], _heuristics(m), m.at("none", f_max)),
                   steps=f", {conf.mlm.train.steps} steps")

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


def _s6_powered_row(result: Result) -> ComparisonRow:
    """S6 decided by the design sized by its power (``run_heuristics_powered`` of
    :mod:`posgeom.experiments.extrapolation_powered`): each heuristic at 2L minus the target-length table, by seed."""
    p, d = design_summary(result), as_record(result, StoredHeuristicsDesign)
    diffs = {h: d.heuristics[h] for h in HEURISTICS if h in d.heuristics}  # in the order of METHOD_NAMES
    means = "; ".join(f"{METHOD_NAMES['learned:' + h]} {np.mean([getattr(r, h) for r in d.runs]):.4f}, difference "
                      f"{diffs[h].text('{:+.4f}', with_t=False)}" for h in diffs)
    return ComparisonRow("S6", ours=(f"order task at {d.length} positions (trained at {d.L}): trained at "
                                     f"{d.length} {p.mean_b:.4f}; {means} (95% intervals over {p.seeds} seeds, "
                                     f"paired){p.stale}"),
                         scale=p.scale, model=result.manifest["model"] + " (CPU)",
                         corpus=f"synthetic order task, L = {d.L}",
                         options=f"fine-tune {result.manifest['params']['order']['finetune']['steps']} steps; "
                                 f"{plan_text(result)}",
                         decision=rules.s6_heuristics_powered(diffs))


@dataclass(frozen=True)
class Captions:
    """What the figure captions state about the runs, from the settings in force (glued as ``ltfcap_<field>``)."""

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


def captions(settings=None) -> Captions:
    """The :class:`Captions` of the chapter at ``settings.scale`` (from ``experiments.extrapolation.CONFIGS``)."""
    settings = _settings(settings)
    conf = CONFIGS[settings.scale]
    order, tails, mlm = conf.order, conf.tails, conf.mlm

    def lengths(factors):  # (1.0, 1.5, 2.0) → "L, 1.5 L and 2 L"
        words = ["L" if float(f) == 1.0 else f"{float(f):g} L" for f in factors]
        return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]

    return Captions(
        scale=settings.scale, model=describe_model(conf.model),
        order_task=f"{order.vocab_size:,} tokens, L = {order.L} positions",
        order_lengths=lengths(order.factors), order_seeds=len(order.seeds), finetune_steps=int(order.finetune.steps),
        order_target=lengths(order.target_factors), order_training=describe_training(order.train),
        tails_task=(f"{tails.n_positions} positions and {tails.n_train:,} training sequences, "
                    f"{tails.short_fraction:.0%} shorter than {tails.n_positions // 2} tokens (\"skewed\") or lengths "
                    f"uniform on [{tails.min_length}, {tails.n_positions}] (\"uniform\")"),
        tails_training=describe_training(tails.train), tails_seeds=len(tails.seeds),
        mlm_windows=f"{2 * mlm.L}-token windows (2 L) for models trained on {mlm.L}-token windows",
        mlm_seeds=len(mlm.seeds), mlm_data=f"{mlm.top_k:,}-word-piece vocabulary, {mlm.n_train:,} training reviews",
        quick_runs=_runs("quick"), paper_runs=_runs("paper"),
        models=describe_scales(*(model_words(CONFIGS[s].model) for s in ("quick", "paper"))))


def _runs(scale: str) -> str:
    """The chapter's training runs at ``scale`` in words, counted as the studies loop (the tails: each condition and
    seed; the order task and IMDB MLM: ``study_plan(...).n_runs``). The encoder's shape is said once, in the box's
    "Model" line (``Captions.models``)."""
    conf = CONFIGS[scale]
    order, mlm = study_plan(conf.order, valid=ORDER_ENCODINGS), study_plan(conf.mlm, valid=MLM_ENCODINGS)
    tails = len(CONDITIONS) * len(conf.tails.seeds)
    parts = []
    for n, what, block in ((tails, "the tails", conf.tails), (order.n_runs, "the order task", conf.order),
                           (mlm.n_runs, "IMDB masked language modelling", conf.mlm)):
        tunes = block is not conf.tails and "learned" in block.encodings  # the tails fine-tune nothing
        tune = f", fine-tunes of {block.finetune.steps:,}" if tunes else ""
        parts.append(f"{n} for {what} ({block.train.steps:,} steps{tune}; {len(block.seeds)} seeds)")
    return f"{tails + order.n_runs + mlm.n_runs} training runs: {'; '.join(parts)}"
