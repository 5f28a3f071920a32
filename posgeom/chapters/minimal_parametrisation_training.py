r"""What the chapter "The minimal parametrisation" reports of its training comparison, from its stored runs.

The runs of :mod:`posgeom.experiments.lowrank_training` (low-rank tables trained against full ones, on the
marker-order task and SST-2) and of :mod:`posgeom.experiments.lowrank_powered` (C5's powered design) are read
back as typed records (:mod:`posgeom.chapters.records`); this module builds the chapter's accuracy tables, the
numbers it quotes of the comparison (glued by :func:`posgeom.notebooks.glue_fields`) and its power table's
checks. :mod:`posgeom.chapters.minimal_parametrisation` re-exports them beside its other sections and decides
the C5 rows.

It reads the stored results only: none of the modules that compute them imports it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import pandas as pd
import scipy.stats

from .. import verdicts as rules
from ..geometry import MIN_SEEDS, SeedInterval
from ..registry import Result
from ..registry.typed import as_record
from ..report import PowerCheck
from .powered import design_check
from .records import StoredLowrankDesign, StoredTraining, TrainedRun

__all__ = [
    "training_table", "trained_runs", "TrainingSummary", "training_summary", "StallSummary", "stall_summary",
    "accuracy_by_encoding", "power_checks", "EncodingSummary", "StoredTrainingSummary",
]


@dataclass(frozen=True)
class EncodingSummary:
    """One encoding of ``run_lowrank_training`` on one task over its seeds, every stored summary (in the stored
    order: the chapter's tables list them so)."""

    accuracy_mean: float
    accuracy_std: float
    loss_mean: float
    loss_std: float
    n_seeds: int
    position_params: int


@dataclass(frozen=True)
class StoredTrainingSummary:
    """A stored ``run_lowrank_training``'s summaries, typed: per task and encoding, its :class:`EncodingSummary`."""

    summary: dict[str, dict[str, EncodingSummary]]


def training_table(training: Result) -> pd.DataFrame:
    """Per task and encoding: accuracy over seeds and trainable positional parameters."""
    summary = as_record(training, StoredTrainingSummary).summary
    return pd.concat({t: pd.DataFrame({e: asdict(s) for e, s in by_encoding.items()}).T
                      for t, by_encoding in summary.items()})


def trained_runs(training: Result) -> list[TrainedRun]:
    """The marker-order runs whose trained table has a stress against the task's geometry."""
    return _stressed(as_record(training, StoredTraining))


def _stressed(t: StoredTraining) -> list[TrainedRun]:
    return [r for r in t.runs if r.task == "synthetic" and r.stress_scale_free is not None]


@dataclass(frozen=True)
class TrainingSummary:
    """The training comparison: accuracies (means and sds over seeds) on the marker-order task, the paired gap
    learned − (r = 1) with its interval, SST-2's range, and the correlation of stress with accuracy."""

    none: float
    sin: float
    r1: float
    r1_std: float
    learned: float
    learned_std: float
    r1_params: int
    r1_small: float
    r1_small_std: float
    learned_params: int
    gap: float
    gap_lo: float
    gap_hi: float
    gap_level: float
    sst2_min: float | None
    sst2_max: float | None
    sst2_std: float | None
    sst2_none: float | None
    sst2_best: str | None
    rho: float                 # Spearman ρ of a trained table's stress with its test accuracy
    rho_n: int


def training_summary(training: Result) -> TrainingSummary:
    """The :class:`TrainingSummary` of a ``run_lowrank_training`` result."""
    t = as_record(training, StoredTraining)
    syn, gap, sst = t.summary["synthetic"], t.gap, t.summary.get("sst2")
    accs = [v.accuracy_mean for v in sst.values()] if sst else None
    runs = _stressed(t)
    rho = scipy.stats.spearmanr([r.stress_scale_free for r in runs], [r.test_accuracy for r in runs]).statistic
    return TrainingSummary(
        none=syn["none"].accuracy_mean, sin=syn["sinusoidal"].accuracy_mean,
        r1=syn["lowrank r=1"].accuracy_mean, r1_std=syn["lowrank r=1"].accuracy_std,
        learned=syn["learned"].accuracy_mean, learned_std=syn["learned"].accuracy_std,
        r1_params=syn["lowrank r=1"].position_params, r1_small=syn["lowrank r=1 (σ 0.02)"].accuracy_mean,
        r1_small_std=syn["lowrank r=1 (σ 0.02)"].accuracy_std, learned_params=syn["learned"].position_params,
        gap=gap.mean, gap_lo=gap.low, gap_hi=gap.high, gap_level=t.level,
        sst2_min=min(accs) if sst else None, sst2_max=max(accs) if sst else None,
        sst2_std=max(v.accuracy_std for v in sst.values()) if sst else None,
        sst2_none=sst["none"].accuracy_mean if sst else None,
        sst2_best=max(sst, key=lambda e: sst[e].accuracy_mean) if sst else None,
        rho=float(rho), rho_n=len(runs),
    )



@dataclass(frozen=True)
class StallSummary:
    """What is particular to C5's powered design, beside its :class:`posgeom.chapters.powered.DesignSummary`
    (glued as ``mpst_<field>``): the steps, the runs that stalled and the gap where both tables fitted."""

    steps: int
    stalled_loss: float
    stalled_r1: int     # decision seeds whose run stalled, per table
    stalled_learned: int
    fitted_text: str    # the gap over the seeds where both fitted, as text
    reading: str        # what the stalls and the fitted gap say, in a sentence (_stall_reading)
    verdict: str


def stall_summary(powered: Result) -> StallSummary:
    """The :class:`StallSummary` of a ``run_lowrank_powered`` result."""
    d = as_record(powered, StoredLowrankDesign)
    fitted, effect = d.fitted_gap, d.plan.effect
    design = powered.manifest.get("params", {}).get("design", {})
    fitted_text = (f"fewer than {MIN_SEEDS} seeds" if fitted is None else
                   f"{fitted.mean:+.4f} [{fitted.low:+.4f}, {fitted.high:+.4f}] over {fitted.n} seeds")
    stalled_r1, stalled_learned = len(d.stalled["lowrank r=1"]), len(d.stalled["learned"])
    return StallSummary(
        steps=int(design["steps"]), stalled_loss=float(design["stalled_loss"]), stalled_r1=stalled_r1,
        stalled_learned=stalled_learned, fitted_text=fitted_text,
        reading=_stall_reading(stalled_r1, stalled_learned, fitted, effect),
        verdict=rules.c5_lowrank_performance(d.difference).verdict)


def _stall_reading(stalled_r1: int, stalled_learned: int, fitted: SeedInterval | None, effect: float) -> str:
    """One sentence on where the powered gap comes from: the stalled runs of each table and the gap where both
    fitted (its interval against the smallest effect that matters)."""
    if not stalled_r1 and not stalled_learned:
        return "Neither table stalled in any seed: the gap is the tables' own."
    if fitted is None:
        return "Too few seeds fitted with both tables to say what the gap is without the stalled runs."
    within = fitted.high <= effect
    fit = (f"where both fitted, the rank-1 table loses less than {effect:g} of accuracy" if within else
           f"even where both fitted, a loss of {effect:g} of accuracy is not excluded")
    more = ("the rank-1 table stalls more often than the full one" if stalled_r1 > stalled_learned else
            "the rank-1 table stalls no more often than the full one")
    return f"{fit.capitalize()}; {more}, and the claim as stated is about the average over seeds, stalls included."



def accuracy_by_encoding(training: Result) -> dict[str, pd.DataFrame]:
    """Per task, one row per encoding: mean and sd of the test accuracy over seeds and the trainable positional
    parameters, ordered by those parameters."""
    out = {}
    for task, summary in as_record(training, StoredTrainingSummary).summary.items():
        frame = pd.DataFrame({e: asdict(s) for e, s in summary.items()}).T.infer_objects()
        out[task] = frame.loc[sorted(frame.index, key=lambda e: (summary[e].position_params, e))]
    return out


def power_checks(training: Result, powered: Result | None = None) -> list:
    """This chapter's decisions over seeds (C5's accuracy gap, learned − rank-1 table, on the marker-order task;
    with ``powered``, the same gap in the powered design) for its power table (:func:`posgeom.report.power_frame`),
    against the one-point margin of its rule.

    Returns
    -------
    list of posgeom.report.PowerCheck
    """

    gap = as_record(training, StoredTraining).gap
    checks = [PowerCheck("C5", "accuracy, learned − rank-1 table, paired by seed", gap, rules.ACCURACY_MARGIN,
                         training.manifest.get("runtime_s"))]
    if powered is not None:
        checks.append(design_check("C5", "the same, trained to fit the task (powered design)", powered,
                                   rules.ACCURACY_MARGIN))
    return checks
