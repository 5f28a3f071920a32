r"""The training comparison of the chapter "The minimal parametrisation" (low-rank tables trained against full
ones: :mod:`posgeom.experiments.lowrank_training`, and C5's powered design) from its stored runs read as typed
records: the accuracy tables, the numbers the prose quotes, the power table's checks and the powered design's C5
row, for :mod:`posgeom.chapters.minimal_parametrisation`. It reads stored results only (no run imports it)."""

from __future__ import annotations

from dataclasses import asdict
from types import SimpleNamespace

import pandas as pd
import scipy.stats

from .. import verdicts as rules
from ..geometry import MIN_SEEDS, SeedInterval
from ..registry import Result
from ..registry.typed import as_record
from ..report import ComparisonRow, PowerCheck
from ..wording import describe_model
from .powered import design_check, design_summary, paired_text, plan_text, stored_design
from .records import StoredLowrankDesign, StoredTraining, TrainedRun

__all__ = ["training_table", "accuracy_by_encoding", "trained_runs", "training_summary", "stall_summary",
           "power_checks", "powered_row"]


def _frames(training: Result) -> dict[str, pd.DataFrame]:
    """Per task, one row per encoding (in the stored order) and one column per stored summary over its seeds."""
    summary = as_record(training, StoredTraining).summary
    return {task: pd.DataFrame({e: asdict(s) for e, s in by_encoding.items()}).T
            for task, by_encoding in summary.items()}


def training_table(training: Result) -> pd.DataFrame:
    """Per task and encoding: accuracy and loss over seeds and trainable positional parameters."""
    return pd.concat(_frames(training))


def accuracy_by_encoding(training: Result) -> dict[str, pd.DataFrame]:
    """Per task, one row per encoding: mean and sd of the test accuracy over seeds and the trainable positional
    parameters, ordered by those parameters (then by name)."""
    return {task: f.infer_objects().loc[sorted(f.index, key=lambda e: (f.at[e, "position_params"], e))]
            for task, f in _frames(training).items()}


def trained_runs(training: Result) -> list[TrainedRun]:
    """The marker-order runs whose trained table has a stress against the task's geometry."""
    return [r for r in as_record(training, StoredTraining).runs
            if r.task == "synthetic" and r.stress_scale_free is not None]


def training_summary(training: Result) -> dict:
    """The comparison's numbers (glued as ``mptr_<key>``): on marker order each table's accuracy (mean, sd over seeds)
    and parameters, the paired gap learned − (r = 1) with its interval; SST-2's range (None without SST-2); and
    Spearman's ρ of a trained table's stress with its test accuracy, over ``rho_n`` runs."""
    t, runs = as_record(training, StoredTraining), trained_runs(training)
    syn, gap, sst = t.summary["synthetic"], t.gap, t.summary.get("sst2")
    r1, learned, small = syn["lowrank r=1"], syn["learned"], syn["lowrank r=1 (σ 0.02)"]
    rho = scipy.stats.spearmanr([r.stress_scale_free for r in runs], [r.test_accuracy for r in runs]).statistic
    accs = {e: v.accuracy_mean for e, v in (sst or {}).items()}
    return dict(
        none=syn["none"].accuracy_mean, sin=syn["sinusoidal"].accuracy_mean, r1=r1.accuracy_mean,
        r1_std=r1.accuracy_std, learned=learned.accuracy_mean, learned_std=learned.accuracy_std,
        r1_params=r1.position_params, r1_small=small.accuracy_mean, r1_small_std=small.accuracy_std,
        learned_params=learned.position_params, gap=gap.mean, gap_lo=gap.low, gap_hi=gap.high, gap_level=t.level,
        sst2_min=min(accs.values(), default=None), sst2_max=max(accs.values(), default=None),
        sst2_std=max((v.accuracy_std for v in (sst or {}).values()), default=None),
        sst2_none=accs["none"] if sst else None, sst2_best=max(accs, key=accs.get, default=None),
        rho=float(rho), rho_n=len(runs),
    )


def stall_summary(powered: Result) -> dict:
    """What C5's powered design adds to its :func:`posgeom.chapters.powered.design_summary` (glued as ``mpst_<key>``):
    the steps, the loss above which a run stalled, the seeds whose run stalled per table, the gap where both fitted
    (as text), what these say (``_stall_reading``) and the rule's verdict."""
    d = as_record(powered, StoredLowrankDesign)
    design = powered.manifest.get("params", {}).get("design", {})
    fitted, stalled_r1, stalled_learned = d.fitted_gap, len(d.stalled["lowrank r=1"]), len(d.stalled["learned"])
    return dict(
        steps=int(design["steps"]), stalled_loss=float(design["stalled_loss"]), stalled_r1=stalled_r1,
        stalled_learned=stalled_learned,
        fitted_text=(f"fewer than {MIN_SEEDS} seeds" if fitted is None else
                     f"{fitted.mean:+.4f} [{fitted.low:+.4f}, {fitted.high:+.4f}] over {fitted.n} seeds"),
        reading=_stall_reading(stalled_r1, stalled_learned, fitted, d.plan.effect),
        verdict=rules.c5_lowrank_performance(d.difference).verdict)


def powered_row(powered: Result) -> ComparisonRow:
    """C5's performance decided by the powered design (``run_lowrank_powered``, trained until the tables fit)."""
    p, st, gap = design_summary(powered), stall_summary(powered), stored_design(powered).difference
    return ComparisonRow(
        "C5", paper="no loss of performance with the low-rank table (seed summary)",
        ours=(f"{st['steps']:,} steps: r = 1 {p.mean_b:.3f} vs learned {p.mean_a:.3f}; gap learned − (r = 1) "
              f"{paired_text(gap)}; stalled: r = 1 in {st['stalled_r1']}, learned in {st['stalled_learned']} of "
              f"{p.seeds} seeds; where both fitted: {st['fitted_text']}{p.stale}"),
        scale=p.scale, model=describe_model(SimpleNamespace(**powered.manifest["params"]["model"])) + " (CPU)",
        corpus="marker-order task", options=plan_text(powered),
        decision=rules.c5_lowrank_performance(gap))


def _stall_reading(stalled_r1: int, stalled_learned: int, fitted: SeedInterval | None, effect: float) -> str:
    """One sentence on where the powered gap comes from: the stalled runs of each table and the gap where both
    fitted (its interval against the smallest effect that matters)."""
    if not stalled_r1 and not stalled_learned:
        return "Neither table stalled in any seed: the gap is the tables' own."
    if fitted is None:
        return "Too few seeds fitted with both tables to say what the gap is without the stalled runs."
    fit = (f"where both fitted, the rank-1 table loses less than {effect:g} of accuracy" if fitted.high <= effect
           else f"even where both fitted, a loss of {effect:g} of accuracy is not excluded")
    more = ("the rank-1 table stalls more often than the full one" if stalled_r1 > stalled_learned else
            "the rank-1 table stalls no more often than the full one")
    return f"{fit.capitalize()}; {more}, and the claim as stated is about the average over seeds, stalls included."


def power_checks(training: Result, powered: Result | None = None) -> list[PowerCheck]:
    """This chapter's decisions over seeds for its power table (:func:`posgeom.report.power_frame`), against the
    one-point margin of its rule: C5's accuracy gap, learned − rank-1 table, on the marker-order task, and with
    ``powered`` the same gap in the powered design."""
    gap = as_record(training, StoredTraining).gap
    checks = [PowerCheck("C5", "accuracy, learned − rank-1 table, paired by seed", gap, rules.ACCURACY_MARGIN,
                         training.manifest.get("runtime_s"))]
    if powered is not None:
        checks.append(design_check("C5", "the same, trained to fit the task (powered design)", powered,
                                   rules.ACCURACY_MARGIN))
    return checks
