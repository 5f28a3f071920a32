r"""The chapter "When learned tables fail" (:mod:`posgeom.experiments.extrapolation`, ``extrapolation_mlm``,
``undertrained_tails``): typed reads, captions, the power table and the rows for S4–S6."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, partial

import numpy as np
import pandas as pd

from .. import verdicts as rules
from ..config import settings_or_default as _settings
from ..geometry import SeedInterval, paired_difference
from ..registry import Result
from ..registry.typed import as_record
from ..experiments.extrapolation import CONFIGS, HEURISTICS, MLM_ENCODINGS, ORDER_ENCODINGS, Finetune, study_plan
from ..experiments.extrapolation_powered import StoredHeuristicsPowered
from ..experiments.learned_powered import StoredTailsPowered
from ..experiments.settings import OrderTask
from ..report import ComparisonRow, PowerCheck, decided_rows
from ..wording import describe_model, describe_scales, describe_training, model_words
from ..models.table_studies import CONDITIONS
from .powered import design_check, design_row, design_summary, paired_text
from ..experiments.records.extrapolation import Scores, StoredExtrapolation
from ..experiments.undertrained_tails import TailCondition, TailsRecord

__all__ = ["METHOD_NAMES", "ExtrapolationOutcome", "extrapolation_outcome", "stress_accuracy", "TailsOutcome",
           "tails_outcome", "comparison_rows", "power_checks", "captions"]

#: The chapter's name of each method of the studies.
METHOD_NAMES = {
    "learned:reuse_last": "learned, reuse last row", "learned:interpolate": "learned, interpolated",
    "learned:new_rows": "learned, new rows + fine-tune", "learned:target": "learned, trained at target",
    "sinusoidal": "sinusoidal", "rope": "RoPE", "alibi": "ALiBi", "mds": "MDS (Algorithm 1)", "none": "no positions",
}


def _over_seeds(scores: Scores, methods, factors, statistic) -> pd.DataFrame:
    """``statistic`` (np.mean, np.std) over the seeds that produced a value (NaN: none did), (n_methods, n_factors)."""
    def cell(per_seed):
        x = np.array([v for v in per_seed if v is not None], dtype=float)
        return statistic(x) if x.size else np.nan

    return pd.DataFrame([[cell(scores[m][str(f)]) for f in factors] for m in methods], index=list(methods),
                        columns=list(factors), dtype=float)


@dataclass(frozen=True)
class ExtrapolationOutcome(StoredExtrapolation):
    """A :class:`~posgeom.experiments.records.extrapolation.StoredExtrapolation` with the chapter's readings."""

    @cached_property
    def mean(self) -> pd.DataFrame:
        """The mean score over seeds, (n_methods, n_factors)."""
        return _over_seeds(getattr(self, self.score), self.methods, self.factors, np.mean)

    @cached_property
    def std(self) -> pd.DataFrame:
        """The population sd of the score over seeds, (n_methods, n_factors)."""
        return _over_seeds(getattr(self, self.score), self.methods, self.factors, np.std)

    def beyond(self, both: bool = False) -> tuple[pd.Series, pd.Series]:
        """Mean and sd (n_methods,) at the longest length of the score at positions ≥ L."""
        scores = self.accuracy_both_beyond if both else getattr(self, f"{self.score}_beyond")
        return tuple(_over_seeds(scores, self.methods, self.factors[-1:], s).iloc[:, 0] for s in (np.mean, np.std))

    def at(self, method: str, factor: float) -> float:
        """The mean score of ``method`` at ``factor`` × L (NaN where no seed produced one)."""
        return float(self.mean.loc[method, factor])

    def heuristics(self) -> dict[str, float]:
        """Each heuristic's mean score at the longest length (``experiments.extrapolation.HEURISTICS``)."""
        return {h: self.at(f"learned:{h}", self.longest) for h in HEURISTICS}

    def spread_at_L(self) -> tuple[float, float]:
        """The spread of the methods' mean scores at L and their mean seed sd (does the model use positions?)."""
        return float(self.mean[1].max() - self.mean[1].min()), float(self.std[1].mean())


def extrapolation_outcome(result: Result) -> ExtrapolationOutcome:
    """The record of ``run_extrapolation_order`` or ``run_extrapolation_mlm``, with the chapter's readings."""
    return ExtrapolationOutcome(**vars(as_record(result, StoredExtrapolation)))


def stress_accuracy(order: Result) -> pd.DataFrame:
    """Per method, the mean scale-free stress of its positions at the longest length and its accuracy there."""
    o = extrapolation_outcome(order)
    return pd.DataFrame({METHOD_NAMES[m]: {"stress at 2L (scale_free)": float(np.mean(o.stress_at_max[m])),
                                           "accuracy at 2L": o.at(m, o.longest)} for m in o.methods}).T


@dataclass(frozen=True)
class TailsOutcome(TailsRecord):
    """A stored ``run_undertrained_tails`` (:class:`~posgeom.experiments.undertrained_tails.TailsRecord`) with the
    chapter's readings."""

    @property
    def by_condition(self) -> dict[str, TailCondition]:
        """Each condition's per-seed quantities, by its name."""
        return {c: getattr(self, c) for c in self.conditions}

    @property
    def n_positions(self) -> int:
        return int(self.reach.shape[1])

    def tail_difference(self) -> SeedInterval:
        """Skewed minus uniform tail accuracy, paired by training seed, with its 95% Student-t interval."""
        return paired_difference(*(self.by_condition[c].accuracy_tail for c in ("skewed", "uniform")), bounds=(-1, 1))


def tails_outcome(result: Result) -> TailsOutcome:
    """The record of a ``run_undertrained_tails`` result, with the chapter's readings."""
    return as_record(result, TailsOutcome)


def _model(scale: str, n_seeds: int, steps: str = "") -> str:
    model = CONFIGS[scale].model
    return f"encoder d={model.d_model}, {model.n_layers} layers, trained from scratch, {n_seeds} seeds{steps}"


def _s4_row(tails: Result, scale: str) -> ComparisonRow:
    """S4 from the tails study: skewed against uniform tail accuracy, paired by seed."""
    t, conf = tails_outcome(tails), CONFIGS[scale].tails
    diff, tail = t.tail_difference(), {c: t.by_condition[c].accuracy_tail for c in ("skewed", "uniform")}
    skewed, uniform = (f"{np.mean(tail[c]):.3f} ± {np.std(tail[c]):.3f}" for c in ("skewed", "uniform"))
    return ComparisonRow("S4", ours=f"tail accuracy {skewed} (90% short) vs {uniform} (uniform lengths); difference "
                         f"{diff.text()} (95%, paired by seed)", scale=scale, model=_model(scale, len(conf.seeds)),
                         corpus=f"synthetic order task, n = {conf.n_positions}", options="learned N(0, 0.02²), AdamW",
                         decision=rules.s4_undertrained_tail(diff))


def _s5_row(wall_error: str | None, table_rows: int, scale: str) -> ComparisonRow:
    """S5: a longer input to a learned table raised ``wall_error`` (None: it passed)."""
    return ComparisonRow("S5", ours=f"PositionLimitError for a 24-token input to a {table_rows}-row table",
                         scale=scale, model="posgeom encoder, learned table", corpus="none", options="",
                         decision=rules.s5_no_vector_beyond(wall_error is not None))


def _s6_order_row(order: Result, scale: str) -> ComparisonRow:
    """S6 on the order task: each heuristic at the longest length against the table trained there."""
    o = extrapolation_outcome(order)
    f_max, heur, target = o.longest, o.heuristics(), o.at("learned:target", o.longest)
    return ComparisonRow("S6", ours=f"order task at {f_max:g}L: reuse {heur['reuse_last']:.3f}, interpolate "
                         f"{heur['interpolate']:.3f}, new rows + fine-tune {heur['new_rows']:.3f}; trained at "
                         f"{f_max:g}L {target:.3f}; RoPE {o.at('rope', f_max):.3f}", scale=scale,
                         model=_model(scale, len(o.seeds)), corpus=f"synthetic order task, L = {o.L}",
                         options=f"fine-tune {CONFIGS[scale].order.finetune.steps} steps",
                         decision=rules.s6_heuristics_order(heur, target))


def _s6_mlm_row(mlm: Result, order: Result, scale: str) -> ComparisonRow:
    """S6 on IMDB masked language modelling, at the longest length of the order task's study (as its row)."""
    m, conf = extrapolation_outcome(mlm), CONFIGS[scale].mlm
    f_max = extrapolation_outcome(order).longest
    return ComparisonRow("S6", ours=f"IMDB MLM loss at {f_max:g}L: reuse {m.at('learned:reuse_last', f_max):.3f}, "
                         f"interpolate {m.at('learned:interpolate', f_max):.3f}, new rows "
                         f"{m.at('learned:new_rows', f_max):.3f}; no positions {m.at('none', f_max):.3f}; unigram "
                         f"{m.unigram_loss:.3f}", scale=scale,
                         model=_model(scale, len(m.seeds), f", {conf.train.steps} steps"),
                         corpus=f"IMDB train windows, L = {conf.L}", options=f"{conf.top_k:,}-word-piece vocabulary",
                         decision=rules.s6_heuristics_mlm(*m.spread_at_L(), m.heuristics(), m.at("none", f_max)))


def _s4_powered_row(powered: Result) -> ComparisonRow:
    """S4 decided by the design sized by its power (:func:`posgeom.experiments.learned_powered.run_tails_powered`)."""
    p, difference = design_summary(powered), powered.as_(StoredTailsPowered).difference
    # the task's block is a TailsOptions less its seeds (the design picks them): read as the OrderTask it extends
    task = powered.params_as(OrderTask, "tails")
    return design_row("S4", powered, f"tail accuracy {p.mean_a:.4f} (90% short) vs {p.mean_b:.4f} (uniform lengths); "
                      f"difference {paired_text(difference)}",
                      f"synthetic order task, n = {task.n_positions}",
                      rules.s4_undertrained_tail(difference))


def _s6_powered_row(result: Result) -> ComparisonRow:
    """S6 decided by the design sized by its power: each heuristic at 2L minus the target-length table, by seed."""
    p, d = design_summary(result), result.as_(StoredHeuristicsPowered)
    diffs = {h: d.heuristics[h] for h in HEURISTICS if h in d.heuristics}  # in the order of METHOD_NAMES
    means = "; ".join(f"{METHOD_NAMES['learned:' + h]} {np.mean([getattr(r, h) for r in d.runs]):.4f}, difference "
                      f"{diffs[h].text('{:+.4f}', with_t=False)}" for h in diffs)
    steps = result.params_as(Finetune, "order.finetune").steps  # of the new rows, at the target length
    return design_row("S6", result, f"order task at {d.length} positions (trained at {d.L}): trained at {d.length} "
                      f"{p.mean_b:.4f}; {means} (95% intervals over {p.seeds} seeds, paired)",
                      f"synthetic order task, L = {d.L}", rules.s6_heuristics_powered(diffs),
                      options=f"fine-tune {steps} steps")


def comparison_rows(tails: Result, order: Result, mlm: Result, wall_error: str | None, table_rows: int,
                    settings=None, powered: Result | None = None, heuristics_powered: Result | None = None) -> list:
    """The chapter's rows for S4, S5 and S6 (:class:`posgeom.report.ComparisonRow`); ``wall_error`` is the
    ``PositionLimitError`` a longer input raised (None: it passed); the powered designs decide S4 and S6 again."""
    settings = _settings(settings)
    scale = settings.scale  # the models the rows describe
    s4_design = [("S4", partial(_s4_powered_row, powered))] if powered is not None else []
    s6_design = [("S6", partial(_s6_powered_row, heuristics_powered))] if heuristics_powered is not None else []
    return decided_rows([("S4", partial(_s4_row, tails, scale)), *s4_design,
                         ("S5", partial(_s5_row, wall_error, table_rows, scale)),
                         ("S6", partial(_s6_order_row, order, scale)), *s6_design,
                         ("S6", partial(_s6_mlm_row, mlm, order, scale))], settings)


def power_checks(tails: Result, powered: Result | None = None, heuristics_powered: Result | None = None) -> list:
    """The chapter's decisions over seeds (:class:`posgeom.report.PowerCheck`): S4, and the powered designs."""
    checks = [PowerCheck("S4", "tail accuracy, skewed − uniform lengths, paired by seed",
                         tails_outcome(tails).tail_difference(), rules.TAIL_EFFECT, tails.runtime_s)]
    if powered is not None:
        checks.append(design_check("S4", "the same, over the seeds a pilot sized (powered design)", powered,
                                   rules.TAIL_EFFECT))
    if heuristics_powered is not None:
        checks.append(design_check("S6", "accuracy at 2L, best heuristic − table trained at 2L, paired by seed "
                                   "(powered design)", heuristics_powered, rules.SHORTFALL))
    return checks


def captions(settings=None) -> dict:
    """The captions' facts at ``settings.scale`` (glued as ``ltfcap_<name>``), and the box's at both scales."""
    settings = _settings(settings)
    conf = CONFIGS[settings.scale]
    order, tails, mlm = conf.order, conf.tails, conf.mlm

    def lengths(factors):  # (1.0, 1.5, 2.0) → "L, 1.5 L and 2 L"
        words = ["L" if float(f) == 1.0 else f"{float(f):g} L" for f in factors]
        return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]

    return dict(
        scale=settings.scale, model=describe_model(conf.model),
        order_task=f"{order.vocab_size:,} tokens, L = {order.L} positions",  # of the headline figure
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
    """The chapter's training runs at ``scale`` in words, counted as the studies loop."""
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
