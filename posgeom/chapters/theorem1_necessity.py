r"""The chapter "Theorem 1: no position, no order" (:mod:`posgeom.experiments.necessity`): typed reads, the order
task's summary its prose quotes, and the rows for C1."""

from __future__ import annotations

import numpy as np

from ..config import settings_or_default as _settings
from ..experiments.necessity import CONFIGS, MODELS, StoredOrderTask, equivariance_rows, order_task_rows
from ..experiments.settings import find
from ..models.tasks import OrderTaskOutcome, model_label
from ..registry import Result
from .. import verdicts as rules
from ..report import ComparisonRow, decided_rows
from ..wording import describe_model, describe_scales, describe_seeds, describe_training, model_words

__all__ = ["LEARNED_LEVEL", "EXTRA_MODELS", "order_task_outcome", "steps_to_learn", "order_task_summary",
           "seed_spread", "comparison_rows", "captions"]

#: The test accuracy at which a model counts as having learned the order task (for the steps it took).
LEARNED_LEVEL = 0.95

#: The models the chapter trains beyond :data:`posgeom.experiments.necessity.MODELS`: the notebook's rerun of
#: bidirectional ALiBi without ``[CLS]`` (``run_order_task(models=[("alibi", False)], cls_token=False)``), same seeds.
EXTRA_MODELS = (("alibi", False),)


def order_task_outcome(result: Result) -> OrderTaskOutcome:
    """A stored ``run_order_task`` as the :class:`~posgeom.models.tasks.OrderTaskOutcome` that training returns."""
    stored = result.as_(StoredOrderTask)
    order = {m: k for k, m in enumerate(MODELS)}
    rows = sorted(stored.models.values(), key=lambda r: order.get((r.position, r.causal), len(order)))
    curves = {label: stored.curves[label] for label in (model_label(r.position, r.causal) for r in rows)}
    return OrderTaskOutcome(rows=rows, curves=curves, steps=stored.steps, n_test=stored.n_test, seq_len=stored.seq_len)


def steps_to_learn(outcome: OrderTaskOutcome, level: float = LEARNED_LEVEL) -> dict[str, int | None]:
    """Per model, the first evaluated step at which the mean accuracy reaches ``level`` (None when it never does)."""
    reached = {label: np.flatnonzero(curve.mean(axis=0) >= level) for label, curve in outcome.curves.items()}
    return {label: int(outcome.steps[hit[0]]) if hit.size else None for label, hit in reached.items()}


def _worst_encoded(rows: list):
    """The model with a positional encoding whose worst seed is the lowest."""
    return min((r for r in rows if r.position != "none"), key=lambda r: r.min)


def order_task_summary(result: Result) -> dict:
    """The order-task numbers the chapter quotes (glued as ``t1_<name>``)."""
    outcome = order_task_outcome(result)
    nope, causal = (find(outcome.rows, position="none", causal=masked) for masked in (False, True))
    worst, learned = _worst_encoded(outcome.rows), steps_to_learn(outcome)
    return dict(
        nope_mean=nope.mean, nope_std=nope.std, encoded_min=worst.min, encoded_worst=worst.position,
        causal_mean=causal.mean, causal_steps=learned[model_label("none", True)],
        fastest_steps=min((s for s in learned.values() if s is not None), default=None), n_test=outcome.n_test,
        task_positions=outcome.seq_len - 1, n_seeds=len(nope.accuracy))  # task positions: [CLS] excluded


def seed_spread(mean: float, low: float, high: float) -> str:
    """A mean over seeds with their range: ``"0.950 (seeds 0.900–1.000)"``, or ``"1.000 in every seed"``."""
    return f"{low:.3f} in every seed" if f"{low:.3f}" == f"{high:.3f}" else f"{mean:.3f} (seeds {low:.3f}–{high:.3f})"


def _row(settings, detail: str, **fields) -> ComparisonRow:
    """A C1 row at the scale in force, its model the chapter's encoder with ``detail``."""
    return ComparisonRow("C1", scale=settings.scale, model=describe_model(CONFIGS[settings.scale].model, detail=detail),
                         **fields)


def _identity_row(equivariance: Result, settings) -> ComparisonRow:
    """NoPE is permutation-equivariant (:func:`posgeom.verdicts.c1_equivariance`)."""
    gaps = equivariance_rows(equivariance)
    gap = find(gaps, position="none", causal=False)
    # what a broken symmetry looks like at this shape: the bidirectional encoders with a positional encoding
    encoded = [r.perm_gap for r in gaps if r.position != "none" and not r.causal]
    return _row(settings, "random weights", ours=(f"NoPE equivariant to {gap.perm_gap:.1e} (float64, random weights "
                                                  f"and inputs), against {min(encoded):.2g} or more with a positional "
                                                  "encoding"),
                corpus="random inputs and permutations", options="bidirectional, mean pooling, [CLS]",
                decision=rules.c1_equivariance(gap.perm_gap, encoded))


def _chance_row(order: Result, settings) -> ComparisonRow:
    """NoPE is at chance on the order-only task (:func:`posgeom.verdicts.c1_nope_at_chance`)."""
    rows = order_task_rows(order)
    nope, worst = find(rows, position="none", causal=False), _worst_encoded(rows)
    return _row(settings, "from scratch", ours=(f"order-only task: NoPE {nope.mean:.3f} ± {nope.std:.3f} (exactly "
                                                f"1/2 in every seed: no interval needed), every encoding ≥ "
                                                f"{worst.min:.3f} (worst of {len(nope.accuracy)} seeds)"),
                corpus="synthetic order task (marker order, reversal pairs)",
                options="bidirectional, mean pooling, [CLS]", decision=rules.c1_nope_at_chance(nope.accuracy))


def _causal_row(order: Result, settings) -> ComparisonRow:
    """A causal mask carries order without a positional encoding (:func:`posgeom.verdicts.c1_causal_mask`)."""
    causal = find(order_task_rows(order), position="none", causal=True)
    spread = seed_spread(causal.mean, causal.min, causal.max)
    return _row(settings, "causal mask", ours=f"NoPE with a causal mask: {spread}",
                corpus="synthetic order task", options="causal mask, mean pooling",
                decision=rules.c1_causal_mask(causal.accuracy), conditions={"attention": "causal mask"})


def _symmetric_row(equivariance: Result, order_without_cls: Result, settings) -> ComparisonRow:
    """ALiBi without [CLS] keeps the reversal (:func:`posgeom.verdicts.c1_symmetric_signal`)."""
    gaps = equivariance_rows(equivariance)
    alibi_gap = find(gaps, position="alibi", causal=False)
    # the encoders whose encoding breaks the reversal (all but ALiBi's |i - j|)
    breaking = [r.reversal_gap for r in gaps if r.position not in ("none", "alibi") and not r.causal]
    alibi = find(order_task_rows(order_without_cls), position="alibi", causal=False)
    return _row(settings, "ALiBi", ours=(f"ALiBi without [CLS]: {seed_spread(alibi.mean, alibi.min, alibi.max)}; "
                                         f"reversal gap {alibi_gap.reversal_gap:.1e}"),
                corpus="synthetic order task", options="bidirectional, no [CLS], mean pooling",
                decision=rules.c1_symmetric_signal(alibi.accuracy, alibi_gap.reversal_gap, breaking),
                conditions={"positional signal": "ALiBi's |i − j|, which keeps the reversal"})


def comparison_rows(equivariance: Result, order: Result, order_without_cls: Result, settings=None) -> list:
    """The chapter's rows for C1, each decided on its own (:func:`posgeom.report.decided_rows`)."""
    settings = _settings(settings)
    return decided_rows([("C1", lambda: _identity_row(equivariance, settings)),
                         ("C1", lambda: _chance_row(order, settings)), ("C1", lambda: _causal_row(order, settings)),
                         ("C1", lambda: _symmetric_row(equivariance, order_without_cls, settings))], settings)


def captions(settings=None) -> dict:
    """The captions' facts at ``settings.scale`` (glued as ``t1cap_<name>``), and the box's at both scales."""
    settings = _settings(settings)
    conf = CONFIGS[settings.scale]
    eq, task = conf.equivariance, conf.task
    return dict(
        scale=settings.scale, model=describe_model(conf.model),
        # the random inputs and permutations of the equivariance check, and the weights' standard deviation there
        equivariance=(f"{eq.n_perms} random permutations and the reversal, {eq.n_inputs} random inputs of "
                      f"{eq.length} tokens"), init_std=f"{eq.init_std:g}",
        task=(f"{task.n_positions} task positions plus [CLS], {task.vocab_size:,} token ids, {task.n_train:,} "
              f"training and {task.n_test:,} test sequences"),
        training=describe_training(conf.train), weight_decay=f"{conf.train.weight_decay:g}",
        seeds=describe_seeds(conf.seeds), quick_runs=_runs("quick"), paper_runs=_runs("paper"),
        models=describe_scales(*(model_words(CONFIGS[s].model) for s in ("quick", "paper"))))


def _runs(scale: str) -> str:
    """The chapter's training runs at ``scale`` in words."""
    conf = CONFIGS[scale]
    n = (len(MODELS) + len(EXTRA_MODELS)) * len(conf.seeds)
    return f"{n} training runs of {conf.train.steps:,} steps each on {conf.task.n_positions} task positions"
