r"""What the chapter "When learned tables fail" reports, from its stored runs.

The studies of :mod:`posgeom.experiments.extrapolation` (the order task at $1\times$ to $2\times$ the
training length), :mod:`posgeom.experiments.extrapolation_mlm` (IMDB masked language modelling) and
:mod:`posgeom.experiments.undertrained_tails` are stored as nested dictionaries keyed by method and
length factor; this module reads them back as typed tables (:func:`extrapolation_outcome`,
:func:`tails_outcome`), gives the numbers and the data-dependent sentences the chapter quotes as one
summary per section (glued by :func:`posgeom.notebooks.glue_fields`), and builds the chapter's "Paper vs
this book" rows for S4–S6, each decided by its rule in :mod:`posgeom.verdicts` (S4 and S6 a second time from
the CPU designs sized by their power, :mod:`posgeom.experiments.learned_powered` and
:mod:`posgeom.experiments.extrapolation_powered`).
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
    "METHOD_NAMES", "ExtrapolationOutcome", "extrapolation_outcome", "score_table", "TailsOutcome",
    "tails_outcome", "tails_table", "TailsSummary", "tails_summary", "OrderSummary", "order_summary",
    "MLMSummary", "mlm_summary", "comparison_rows", "heuristic_differences", "SOLVED", "KEEPS", "Captions",
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


@dataclass(frozen=True)
class ExtrapolationOutcome:
    """A stored order-task or MLM extrapolation study, typed.

    ``mean`` and ``std`` (population standard deviation over the seeds that produced a value) are
    DataFrames indexed by method, with one column per length factor; ``beyond_*`` the same at the
    longest factor for the positions beyond the training length (order task: the later marker at or
    beyond L; MLM: the masked positions at or beyond L); ``both_beyond_*`` (order task only) for the
    sequences whose two markers both sit at or beyond L − 1.
    """

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


def _mean_std(table: dict, methods, factors) -> tuple[pd.DataFrame, pd.DataFrame]:
    mean = pd.DataFrame(np.nan, index=list(methods), columns=list(factors))
    std = mean.copy()
    for m in methods:
        for f in factors:
            x = np.array([v for v in table[m][str(f)] if v is not None], dtype=float)
            if x.size:
                mean.loc[m, f], std.loc[m, f] = x.mean(), x.std()
    return mean, std


#: Scores as an extrapolation study stores them: per method and length factor (as text), one per seed (None: none).
Scores = dict[str, dict[str, tuple[float | None, ...]]]


@dataclass(frozen=True)
class StoredExtrapolation:
    """A stored ``run_extrapolation_order`` or ``run_extrapolation_mlm``, typed: its methods, length factors (as
    stored: as text they key the scores), training length, seeds, and its scores (the order task's accuracy, the
    MLM's loss) at every position, beyond L, and (order task) where both markers sit at or beyond L − 1."""

    methods: tuple[str, ...]
    factors: tuple
    L: int
    seeds: tuple
    accuracy: Scores | None = None
    accuracy_beyond: Scores | None = None
    accuracy_both_beyond: Scores | None = None
    loss: Scores | None = None
    loss_beyond: Scores | None = None


def extrapolation_outcome(result: Result) -> ExtrapolationOutcome:
    """The typed view of ``run_extrapolation_order`` (scores: accuracy) or ``run_extrapolation_mlm``
    (scores: masked-token loss)."""
    s = as_record(result, StoredExtrapolation)
    score = "accuracy" if s.accuracy is not None else "loss"
    scores, beyond = (s.accuracy, s.accuracy_beyond) if score == "accuracy" else (s.loss, s.loss_beyond)
    factors = tuple(float(f) if float(f) != int(f) else int(f) for f in s.factors)
    mean, std = _mean_std(scores, s.methods, s.factors)
    mean.columns = std.columns = list(factors)
    longest = str(s.factors[-1])

    def at_longest(table):
        m, sd = _mean_std({k: {longest: table[k][longest]} for k in s.methods}, s.methods, [longest])
        return m[longest], sd[longest]

    both = at_longest(s.accuracy_both_beyond) if s.accuracy_both_beyond is not None else (None, None)
    return ExtrapolationOutcome(score, s.methods, factors, s.L, s.seeds, mean, std, *at_longest(beyond), *both)


def score_table(outcome: ExtrapolationOutcome, fmt: str = "{:.3f}") -> pd.DataFrame:
    """The chapter's table: per method (named by :data:`METHOD_NAMES`), "mean ± sd" at each length factor and
    for the positions beyond L at the longest factor."""
    def cell(mean, sd):
        return "—" if not np.isfinite(mean) else f"{fmt.format(mean)} ± {fmt.format(sd)}"

    f_max = outcome.longest
    beyond = ("later marker ≥ L" if outcome.score == "accuracy" else "positions ≥ L") + f", at {f_max:g}L"
    rows = {}
    for m in outcome.methods:
        row = {f"{outcome.score} at {f:g}L": cell(outcome.mean.loc[m, f], outcome.std.loc[m, f]) for f in outcome.factors}
        row[beyond] = cell(outcome.beyond_mean[m], outcome.beyond_std[m])
        if outcome.both_beyond_mean is not None:
            row[f"both markers ≥ L−1, at {f_max:g}L"] = cell(outcome.both_beyond_mean[m], outcome.both_beyond_std[m])
        rows[METHOD_NAMES[m]] = row
    return pd.DataFrame(rows).T


@dataclass(frozen=True)
class TailsOutcome:
    """A stored ``run_undertrained_tails``, typed: per condition (``"skewed"``, ``"uniform"``) and seed, the
    head and tail accuracy, movement and neighbour cosine; ``reach`` (n_conditions, n) the training sequences
    reaching each position; ``movement`` (n_conditions, n_seeds, n) how far each row moved."""

    conditions: tuple
    boundary: int            # the first position of the tail
    per_seed: dict           # {condition: {quantity: list over seeds}}
    short_fraction: float    # share of short training sequences under the skewed condition
    n_train: int
    reach: np.ndarray
    movement: np.ndarray

    @property
    def n_positions(self) -> int:
        return int(self.reach.shape[1])

    def mean(self, condition: str, quantity: str) -> float:
        return float(np.mean(self.per_seed[condition][quantity]))

    def sd(self, condition: str, quantity: str) -> float:
        return float(np.std(self.per_seed[condition][quantity]))

    def tail_difference(self):
        """Skewed minus uniform tail accuracy, paired by training seed, with its 95% Student-t interval."""
        return paired_difference(self.per_seed["skewed"]["accuracy_tail"], self.per_seed["uniform"]["accuracy_tail"],
                                 bounds=(-1, 1))


_TAIL_QUANTITIES = ("accuracy_head", "accuracy_tail", "movement_head", "movement_tail", "neighbour_cos_head",
                    "neighbour_cos_tail")


def tails_outcome(result: Result) -> TailsOutcome:
    """The typed view of a ``run_undertrained_tails`` result."""
    t = as_record(result, StoredTails)
    by_condition = {c: as_record(result, TailCondition, at=c) for c in t.conditions}
    per_seed = {c: {q: list(getattr(x, q)) for q in _TAIL_QUANTITIES} for c, x in by_condition.items()}
    skewed = by_condition["skewed"]
    return TailsOutcome(t.conditions, t.boundary, per_seed, 1 - skewed.frac_long, skewed.n_train, t.reach, t.movement)


def tails_table(tails: TailsOutcome) -> pd.DataFrame:
    """Mean and standard deviation over seeds of each head and tail quantity, per condition."""
    rows = [{"lengths": c, "quantity": q, "mean": tails.mean(c, q), "sd": tails.sd(c, q)}
            for c in tails.conditions for q in _TAIL_QUANTITIES]
    return pd.DataFrame(rows).pivot(index="quantity", columns="lengths", values=["mean", "sd"])


@dataclass(frozen=True)
class TailsSummary:
    """The under-trained-tails numbers the chapter quotes (means and sds over seeds)."""

    n: int
    half: int
    short_pct: float
    n_train: int
    reach_last: int          # skewed lengths: training sequences reaching the last position
    reach_last_u: int        # uniform lengths
    skewed_accuracy_head: float
    skewed_accuracy_tail: float
    skewed_accuracy_tail_sd: float
    skewed_movement_head: float
    skewed_movement_tail: float
    uniform_accuracy_head: float
    uniform_accuracy_tail: float
    uniform_accuracy_tail_sd: float
    tail_comment: str        # what the tail accuracies say, decided by the interval of their difference


def tails_summary(tails: TailsOutcome) -> TailsSummary:
    """The :class:`TailsSummary`; its sentence follows where the paired interval lies against the smallest deficit
    that counts, ``posgeom.verdicts.TAIL_EFFECT`` (beyond it, excluding it, or neither), as S4's rule reads it."""
    diff = tails.tail_difference()
    drop = {c: tails.mean(c, "accuracy_head") - tails.mean(c, "accuracy_tail") for c in tails.conditions}
    if diff.high < -rules.TAIL_EFFECT:
        comment = (f"Tail accuracy drops by {drop['skewed']:.3f} below the head with skewed lengths and by "
                   f"{drop['uniform']:.3f} with uniform ones: part of the drop is the task (a marker late in a long "
                   "sequence is harder at this size), the rest is the under-trained tail.")
    elif diff.low > -rules.TAIL_EFFECT:
        comment = (f"The difference of the tail accuracies, skewed minus uniform, with its 95% Student-t interval "
                   f"over the seeds, is {diff.text()}: at this scale a tail deficit of {rules.TAIL_EFFECT:g} or more "
                   "is excluded.")
    else:
        comment = (f"The difference of the tail accuracies, skewed minus uniform, with its 95% Student-t interval "
                   f"over the seeds, is {diff.text()}: at this scale the under-training of the tail is not resolved "
                   "in the accuracy.")
    return TailsSummary(
        n=tails.n_positions, half=tails.boundary, short_pct=100 * tails.short_fraction, n_train=tails.n_train,
        reach_last=int(tails.reach[0, -1]), reach_last_u=int(tails.reach[1, -1]),
        skewed_accuracy_head=tails.mean("skewed", "accuracy_head"),
        skewed_accuracy_tail=tails.mean("skewed", "accuracy_tail"),
        skewed_accuracy_tail_sd=tails.sd("skewed", "accuracy_tail"),
        skewed_movement_head=tails.mean("skewed", "movement_head"),
        skewed_movement_tail=tails.mean("skewed", "movement_tail"),
        uniform_accuracy_head=tails.mean("uniform", "accuracy_head"),
        uniform_accuracy_tail=tails.mean("uniform", "accuracy_tail"),
        uniform_accuracy_tail_sd=tails.sd("uniform", "accuracy_tail"), tail_comment=comment,
    )


def _heuristics(outcome: ExtrapolationOutcome) -> dict[str, float]:
    return {h: outcome.at(f"learned:{h}", outcome.longest) for h in HEURISTICS}


@dataclass(frozen=True)
class OrderSummary:
    """The order-task extrapolation numbers and sentences the chapter quotes (means over seeds at the
    longest length, ``*_max``)."""

    L: int
    train_steps: int
    ft_steps: int
    acc_reuse_last_max: float
    acc_interpolate_max: float
    acc_new_rows_max: float
    acc_target_max: float
    acc_rope_max: float
    acc_mds_max: float
    acc_sinusoidal_max: float
    both_reuse_last: float   # reuse, on the sequences whose two markers sit at or beyond L − 1
    best_heur: str
    at_L_comment: str        # which methods solve the task at L
    wallfree_comment: str    # which encodings without a wall keep it at the longest length
    s6_comment: str          # do the heuristics fall short of the table trained at the target length?
    alibi_gap: float         # largest change of a trained ALiBi model's logits under reversal
    gap_sentence: str
    stress_rho: float        # Spearman ρ between stress and accuracy at the longest length, over methods
    stress_mds: float
    stress_rope: float


@dataclass(frozen=True)
class OrderChecks:
    """What a stored ``run_extrapolation_order`` holds besides the scores: per method the scale-free stress of its
    positions at the longest length (per seed), and the largest change of the trained ALiBi models' logits (and of a
    model without positions, where run) under reversal."""

    stress_at_max: dict[str, tuple[float, ...]]
    alibi_reversal_gap: float = float("nan")
    none_reversal_gap: float | None = None


def stress_accuracy(order: Result) -> pd.DataFrame:
    """Per method, the mean scale-free stress of its positions at the longest length and its accuracy there."""
    outcome = extrapolation_outcome(order)
    stress = as_record(order, OrderChecks).stress_at_max
    return pd.DataFrame({METHOD_NAMES[m]: {"stress at 2L (scale_free)": float(np.mean(stress[m])),
                                           "accuracy at 2L": outcome.at(m, outcome.longest)}
                         for m in outcome.methods}).T


def order_summary(order: Result, settings=None) -> OrderSummary:
    """The :class:`OrderSummary` of a ``run_extrapolation_order`` result at the scale in force."""
    from scipy.stats import spearmanr

    conf = CONFIGS[_settings(settings).scale]
    o, checks = extrapolation_outcome(order), as_record(order, OrderChecks)
    f_max = o.longest
    heur = _heuristics(o)
    target = o.at("learned:target", f_max)
    not_below = [h for h in HEURISTICS if heur[h] >= target - rules.SHORTFALL]
    solved = [METHOD_NAMES[m] for m in o.methods if o.at(m, 1) >= SOLVED]
    unsolved = [METHOD_NAMES[m] for m in o.methods if o.at(m, 1) < SOLVED]
    wall_free = [m for m in ("rope", "mds", "sinusoidal", "alibi") if m in o.methods]
    keep = [METHOD_NAMES[m] for m in wall_free if o.at(m, f_max) >= KEEPS]
    lose = [METHOD_NAMES[m] for m in wall_free if o.at(m, f_max) < KEEPS]
    s6 = ("Every heuristic stays below the table trained at the target length." if not not_below else
          f"Not every heuristic falls short here: {', '.join(h.replace('_', ' ') for h in not_below)} matches or "
          f"beats the table trained at the target length ({target:.3f}), which had to learn a harder task (longer "
          "sequences) in the same number of steps.")
    gap, none_gap = checks.alibi_reversal_gap, checks.none_reversal_gap
    sentence = (f"The largest change of the trained ALiBi models' logits under reversal is {gap:.1e}"
                + (f" (a model without positions: {none_gap:.1e})" if none_gap is not None else "") + ".")
    sa = stress_accuracy(order)
    return OrderSummary(
        L=o.L, train_steps=conf.order.train.steps, ft_steps=conf.order.finetune.steps,
        acc_reuse_last_max=heur["reuse_last"], acc_interpolate_max=heur["interpolate"],
        acc_new_rows_max=heur["new_rows"], acc_target_max=target, acc_rope_max=o.at("rope", f_max),
        acc_mds_max=o.at("mds", f_max), acc_sinusoidal_max=o.at("sinusoidal", f_max),
        both_reuse_last=float(o.both_beyond_mean["learned:reuse_last"]),
        best_heur=max(heur, key=heur.get).replace("_", " "),
        at_L_comment=(f"{'; '.join(solved) or 'no method'} — at least {100 * SOLVED:.0f}% accuracy"
                      + (f"; below {100 * SOLVED:.0f}%: {'; '.join(unsolved)}" if unsolved else "") + "."),
        wallfree_comment=(f"{' and '.join(keep) or 'none'} keep at least {100 * KEEPS:.0f}% accuracy"
                          + (f", while {' and '.join(lose)} do not." if lose else ".")),
        s6_comment=s6, alibi_gap=gap, gap_sentence=sentence,
        stress_rho=float(spearmanr(sa["stress at 2L (scale_free)"], sa["accuracy at 2L"]).statistic),
        stress_mds=float(sa.loc[METHOD_NAMES["mds"], "stress at 2L (scale_free)"]),
        stress_rope=float(sa.loc[METHOD_NAMES["rope"], "stress at 2L (scale_free)"]),
    )


@dataclass(frozen=True)
class MLMSummary:
    """The IMDB masked-language-model numbers the chapter quotes (losses in nats, means over seeds)."""

    topk: str                # the vocabulary, formatted
    L: int
    lengths: str             # the evaluation lengths, formatted
    nseeds: int
    unigram: float           # the loss of predicting word frequencies
    none_1: float            # no positions, at L
    spread: float            # largest minus smallest loss over the methods at L
    seed_sd: float           # mean over methods of the seeds' standard deviation at L
    uses_position: bool      # spread > USES_POSITION_SDS × seed_sd: does the model use positions at all?
    comment: str


@dataclass(frozen=True)
class MLMChecks:
    """What a stored ``run_extrapolation_mlm`` holds besides the scores: the loss of predicting word frequencies."""

    unigram_loss: float


def mlm_summary(mlm: Result, settings=None) -> MLMSummary:
    """The :class:`MLMSummary` of a ``run_extrapolation_mlm`` result at the scale in force."""
    c = CONFIGS[_settings(settings).scale].mlm
    o = extrapolation_outcome(mlm)
    at_L = o.mean[1]
    spread = float(at_L.max() - at_L.min())
    seed_sd = float(o.std[1].mean())
    uses = spread > rules.USES_POSITION_SDS * seed_sd
    comment = ("The methods do separate: see the table for which ones degrade beyond L." if uses else
               "At this scale the masked language model has not learned to use positions at all — it predicts word "
               "frequencies — so this task cannot rank the extrapolation methods here; a longer-trained, larger "
               "model (the `paper` configuration) is needed for that.")
    return MLMSummary(topk=f"{c.top_k:,}", L=c.L, lengths=", ".join(str(int(round(f * c.L))) for f in c.factors),
                      nseeds=len(c.seeds), unigram=as_record(mlm, MLMChecks).unigram_loss, none_1=o.at("none", 1),
                      spread=spread, seed_sd=seed_sd, uses_position=uses, comment=comment)


def power_checks(tails: Result, powered: Result | None = None, heuristics_powered: Result | None = None) -> list:
    """This chapter's decisions over seeds (S4's tail accuracy, skewed − uniform lengths; with ``powered``,
    the same in the design sized by its power; with ``heuristics_powered``, S6's best heuristic against the
    target-length table) for its power table (:func:`posgeom.report.power_frame`), each against the smallest
    effect its rule names.

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
    powered : Result, optional
        ``run_tails_powered`` (:mod:`posgeom.experiments.learned_powered`): S4 decided a second time, by the same
        rule, over the seeds a pilot sized.
    heuristics_powered : Result, optional
        ``run_heuristics_powered`` (:mod:`posgeom.experiments.extrapolation_powered`): S6 decided over the seeds a
        pilot sized, on a CPU, against the margin of :func:`posgeom.verdicts.s6_heuristics_powered`.
    wall_error : str or None
        The message of the ``PositionLimitError`` a longer input raised in a learned table of ``table_rows``
        rows (None when it passed).
    settings : Settings, optional
        The scale in force (its settings describe the models).

    Returns
    -------
    list of posgeom.report.ComparisonRow
    """

    settings = _settings(settings)
    conf = CONFIGS[settings.scale]

    def tiny(n_seeds, extra=""):
        m = conf.model
        return f"encoder d={m.d_model}, {m.n_layers} layers, trained from scratch, {n_seeds} seeds{extra}"

    def s4_row():
        t = tails_outcome(tails)
        diff = t.tail_difference()
        return ComparisonRow("S4", ours=(f"tail accuracy {t.mean('skewed', 'accuracy_tail'):.3f} ± {t.sd('skewed', 'accuracy_tail'):.3f} "
                                  f"(90% short) vs {t.mean('uniform', 'accuracy_tail'):.3f} ± "
                                  f"{t.sd('uniform', 'accuracy_tail'):.3f} (uniform lengths); difference "
                                  f"{diff.text()} (95%, paired by seed)"),
                      scale=settings.scale, model=tiny(len(conf.tails.seeds)),
                      corpus=f"synthetic order task, n = {conf.tails.n_positions}", options="learned N(0, 0.02²), AdamW",
                      decision=rules.s4_undertrained_tail(diff))

    def s5_row():
        return ComparisonRow("S5", ours=f"PositionLimitError for a 24-token input to a {table_rows}-row table",
                             scale=settings.scale, model="posgeom encoder, learned table", corpus="none", options="",
                             decision=rules.s5_no_vector_beyond(wall_error is not None))

    def s6_order_row():
        o = extrapolation_outcome(order)
        f_max = o.longest
        heur, target = _heuristics(o), o.at("learned:target", f_max)
        return ComparisonRow("S6", ours=(f"order task at {f_max:g}L: reuse {heur['reuse_last']:.3f}, interpolate "
                                  f"{heur['interpolate']:.3f}, new rows + fine-tune {heur['new_rows']:.3f}; trained at "
                                  f"{f_max:g}L {target:.3f}; RoPE {o.at('rope', f_max):.3f}"),
                      scale=settings.scale, model=tiny(len(o.seeds)), corpus=f"synthetic order task, L = {o.L}",
                      options=f"fine-tune {conf.order.finetune.steps} steps",
                      decision=rules.s6_heuristics_order(heur, target))

    def s6_mlm_row():
        m, s = extrapolation_outcome(mlm), mlm_summary(mlm, settings)
        f_max = extrapolation_outcome(order).longest  # the lengths of the order task's study, as its row
        return ComparisonRow("S6", ours=(f"IMDB MLM loss at {f_max:g}L: reuse {m.at('learned:reuse_last', f_max):.3f}, "
                                  f"interpolate {m.at('learned:interpolate', f_max):.3f}, new rows "
                                  f"{m.at('learned:new_rows', f_max):.3f}; no positions {m.at('none', f_max):.3f}; "
                                  f"unigram {s.unigram:.3f}"),
                      scale=settings.scale, model=tiny(len(m.seeds), f", {conf.mlm.train.steps} steps"),
                      corpus=f"IMDB train windows, L = {conf.mlm.L}", options=f"{conf.mlm.top_k:,}-word-piece vocabulary",
                      decision=rules.s6_heuristics_mlm(s.spread, s.seed_sd, _heuristics(m), m.at("none", f_max)))

    powered_rows = [("S4", lambda: _s4_powered_row(powered))] if powered is not None else []
    powered_s6 = [("S6", lambda: _s6_powered_row(heuristics_powered))] if heuristics_powered is not None else []
    return decided_rows([("S4", s4_row), *powered_rows, ("S5", s5_row), ("S6", s6_order_row), *powered_s6,
                         ("S6", s6_mlm_row)], settings)


def _s4_powered_row(powered: Result):
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


def _s6_powered_row(heuristics_powered: Result):
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


def _study_words(n: int, what: str, block, *, finetunes: bool) -> str:
    """One study's runs in words: how many, for what, the steps, the seeds (and the fine-tunes' steps)."""
    tune = f", fine-tunes of {block.finetune.steps:,}" if finetunes else ""
    return f"{n} for {what} ({block.train.steps:,} steps{tune}; {len(block.seeds)} seeds)"


def _runs(scale: str) -> str:
    """The chapter's training runs at ``scale`` in words, counted as the studies loop: the tails
    (:func:`posgeom.experiments.undertrained_tails.run_undertrained_tails`: each condition and seed), the
    order task and IMDB masked language modelling (``study_plan(...).n_runs`` of
    :func:`~posgeom.experiments.extrapolation.run_extrapolation_order` and
    :func:`~posgeom.experiments.extrapolation_mlm.run_extrapolation_mlm`: each encoding and seed, and for the
    learned table a fine-tune per longer length and a model trained at each target length)."""

    conf = CONFIGS[scale]
    order, mlm = study_plan(conf.order, valid=ORDER_ENCODINGS), study_plan(conf.mlm, valid=MLM_ENCODINGS)
    tails = len(CONDITIONS) * len(conf.tails.seeds)
    studies = [(tails, "the tails", conf.tails, False), (order.n_runs, "the order task", conf.order, True),
               (mlm.n_runs, "IMDB masked language modelling", conf.mlm, True)]
    parts = "; ".join(_study_words(n, what, block, finetunes=f and "learned" in block.encodings)
                      for n, what, block, f in studies)
    # the encoder's shape is said once, in the box's "Model" line (Captions.models)
    return f"{tails + order.n_runs + mlm.n_runs} training runs: {parts}"
