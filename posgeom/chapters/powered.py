"""How a chapter shows a decision sized by its power (:func:`posgeom.experiments.paired_design.run_paired_design`):
its figures for the text, its two stages as a table, its row of the power table."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..registry import code_changed, Result
from ..geometry.intervals import SeedInterval
from ..timings import format_duration
from ..report import ComparisonRow, PowerCheck
from ..experiments.paired_design import PairedDesign, PairedOutcome

__all__ = ["DesignSummary", "design_summary", "design_stages", "design_check", "design_row", "plan_text",
           "paired_text"]


@dataclass(frozen=True)
class DesignSummary:
    """A powered design as a chapter quotes it (glued as ``<prefix>_<field>``)."""

    scale: str           # where the result was computed
    effect: float        # the smallest difference that matters
    pilot_n: int
    pilot_sd: float
    sd_level: float
    sd_bound: float      # the pilot sd's upper bound the design is sized for
    needed: str          # seeds for 80% power at that bound ("more than N" past the cap)
    seeds: int           # seeds the decision ran
    max_seeds: int
    design_power: float  # the decision's power at the bound
    mean_a: float        # the two variants' means over the decision's seeds
    mean_b: float
    difference: float    # the paired difference a − b: mean, interval, sd
    low: float
    high: float
    sd: float
    cpu_minutes: float   # pilot and decision
    stale: str           # " (stale: made by other code)" when the code has changed since


def _paired_design(result: Result) -> PairedDesign:
    """The :class:`PairedDesign` a stored design ran: its ``design`` parameters, or their ``paired`` block in a design
    that wraps its PairedDesign (C2's ``ConvergedDesign``, C5's ``PoweredDesign``)."""
    return result.params_as(PairedDesign, "design.paired" if result.has_params("design.paired") else "design")


def design_summary(result: Result) -> DesignSummary:
    """The :class:`DesignSummary` of a stored design."""
    d = result.as_(PairedOutcome)
    plan, diff, design = d.plan, d.difference, _paired_design(result)
    return DesignSummary(
        scale=result.scale, effect=plan.effect, pilot_n=plan.pilot_n, pilot_sd=plan.pilot_sd, sd_level=plan.sd_level,
        sd_bound=plan.sd_bound,
        needed=str(plan.needed) if plan.needed is not None else f"more than {design.max_seeds}",
        seeds=plan.seeds, max_seeds=design.max_seeds, design_power=plan.design_power,
        mean_a=float(np.mean([r.a for r in d.runs])), mean_b=float(np.mean([r.b for r in d.runs])),
        difference=diff.mean, low=diff.low, high=diff.high, sd=diff.std, cpu_minutes=sum(d.seconds.values()) / 60,
        stale=" (stale: made by other code)" if code_changed(result.manifest) else "")


def plan_text(result: Result) -> str:
    """``"seeds sized before the run: a 20-seed pilot (sd …) sizes the design at N seeds: power …"``."""
    return f"seeds sized before the run: {result.as_(PairedOutcome).plan.text()}"


def paired_text(interval: SeedInterval | dict, fmt: str = "{:+.4f}") -> str:
    """A paired interval over seeds as a row states it: ``"-0.0123 [-0.0200, -0.0046] (95% interval over 24 seeds,
    paired)"``."""
    iv = interval if isinstance(interval, SeedInterval) else SeedInterval.from_dict(interval)
    return f"{iv.text(fmt, with_t=False)} ({iv.level:.0%} interval over {iv.n} seeds, paired)"


def design_stages(result: Result, labels: tuple[str, str], fmt: str = "{:.4f}") -> pd.DataFrame:
    """The design's two stages (pilot, decision): seeds, means, the paired difference and the time they took."""
    d = result.as_(PairedOutcome)
    rows = []
    for stage, runs, key in (("pilot (sizes the design)", d.pilot, "pilot"), ("decision", d.runs, "decision")):
        diff = np.array([r.difference for r in runs])
        rows.append({"stage": stage, "seeds": len(runs),
                     labels[0]: fmt.format(np.mean([r.a for r in runs])),
                     labels[1]: fmt.format(np.mean([r.b for r in runs])),
                     "difference mean": ("{:+" + fmt[2:]).format(diff.mean()),
                     "difference sd": fmt.format(diff.std(ddof=1)) if diff.size > 1 else "—",
                     "time": format_duration(d.seconds[key])})
    return pd.DataFrame(rows).set_index("stage")


def design_row(claim: str, result: Result, ours: str, corpus: str, decision, options: str = "",
               model: str | None = None, **fields) -> ComparisonRow:
    """A row decided by a powered design: ``ours`` (marked when stale), at the design's scale, its model (``model``,
    by default the stored one) on the CPU, and how its seeds were sized after ``options``; ``fields``: the row's
    others (``paper``)."""
    plan = plan_text(result)
    return ComparisonRow(claim, ours=ours + design_summary(result).stale, scale=result.scale,
                         model=(model or result.model) + " (CPU)", corpus=corpus, decision=decision,
                         options=f"{options}; {plan}" if options else plan, **fields)


def design_check(claim: str, measure: str, result: Result, effect: float) -> PowerCheck:
    """The design's row of a chapter's power table (:class:`posgeom.report.PowerCheck`; the decision's time)."""
    d = result.as_(PairedOutcome)
    return PowerCheck(claim, measure, d.difference, effect, d.seconds["decision"])
