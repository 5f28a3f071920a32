"""The cost of every paper-scale experiment, its totals, and the tables printed and written into the README."""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
from typing import Any, Callable, Mapping, Sequence

from .catalogue import EXPERIMENTS, RESULT_NAMES
from .measured import MEASUREMENTS, gpu_measurements
from .proposed import PROPOSED, Override, pending_overrides
from .work import ASSUMPTIONS, SLICE_MINUTES, Assumptions, ExperimentCost, peak_memory_gb

__all__ = ["GPU_GOAL_MINUTES", "CPU_FEASIBLE_HOURS", "experiment_costs", "totals", "cost_table", "format_costs",
           "readme_table", "README_MARKERS", "update_readme", "needs_gpu", "paper_settings"]

#: The goal for the whole GPU part at paper scale (minutes on one H200 at the assumed MFU).
GPU_GOAL_MINUTES = 120.0
#: An experiment needs a GPU at paper scale when this CPU would take longer than this (hours).
CPU_FEASIBLE_HOURS = 1.0


def paper_settings(module: str) -> Any:
    """The paper settings of the experiment module ``posgeom.experiments.<module>`` (its ``CONFIGS["paper"]``)."""
    return importlib.import_module(f"posgeom.experiments.{module}").CONFIGS["paper"]


def experiment_costs(*, proposed: bool = False, assumptions: Assumptions = ASSUMPTIONS,
                     overrides: Sequence[Override] = PROPOSED,
                     settings_of: Callable[[str], Any] = paper_settings) -> list[ExperimentCost]:
    """The cost of every paper-scale experiment that runs a model, in book order, under ``assumptions``.

    ``proposed`` applies the ``overrides`` (default :data:`PROPOSED`) not yet in the modules before costing;
    ``settings_of`` maps a module name to its paper settings (default: the module's ``CONFIGS["paper"]``).
    """
    costs, seen = [], set()
    for chapter, module, function, build in EXPERIMENTS:
        if importlib.util.find_spec(f"posgeom.experiments.{module}") is None:
            continue  # an experiment this checkout does not have
        cfg = settings_of(module)
        work = tuple(build(pending_overrides(module, cfg, overrides)[0] if proposed else cfg))
        counted = [w for w in work if not w.share or w.share not in seen]
        shared = tuple(w.share for w in work if w.share and w.share in seen)
        seen.update(w.share for w in work if w.share)
        flops = sum(w.flops(assumptions.bucketed) for w in counted)
        seconds = sum(w.gpu_seconds(assumptions) for w in counted)
        costs.append(ExperimentCost(
            chapter=chapter, experiment=f"{module}:{function}", work=work,
            runs=sum(w.runs for w in counted if w.kind == "train" and w.batch_size > 1),  # not per-example work
            tokens_padded=sum(w.tokens(False) for w in counted), tokens=sum(w.tokens(assumptions.bucketed) for w in counted),
            flops=flops, gpu_memory_gb=max((peak_memory_gb(w) for w in work), default=0.0),
            gpu_minutes=seconds / 60, steps=sum(w.steps for w in counted if w.kind == "train"),
            cpu_hours=flops / assumptions.cpu_flops / 3600, shared=shared,
        ))
    return costs


def totals(costs: Sequence[ExperimentCost]) -> dict[str, float]:
    """Sums over experiments: tokens (padded, counted), FLOPs, GPU minutes, CPU hours, slices; peak memory."""
    sums = {name: sum(getattr(c, name) for c in costs)
            for name in ("tokens_padded", "tokens", "flops", "gpu_minutes", "cpu_hours", "slices")}
    return {**sums, "gpu_memory_gb": max((c.gpu_memory_gb for c in costs), default=0.0)}


def cost_table(*, proposed: bool = False, assumptions: Assumptions = ASSUMPTIONS, **kwargs):
    """:func:`experiment_costs` as a pandas DataFrame (one row per experiment)."""
    import pandas as pd
    rows = [{"chapter": c.chapter, "experiment": c.experiment, "runs": c.runs, "tokens (padded)": c.tokens_padded,
             "tokens": c.tokens, "PFLOP": c.flops / 1e15, "GPU memory (GB)": c.gpu_memory_gb,
             "GPU (min)": c.gpu_minutes, "CPU (h)": c.cpu_hours, "slices": c.slices}
            for c in experiment_costs(proposed=proposed, assumptions=assumptions, **kwargs)]
    return pd.DataFrame(rows)


def _tokens(x: float) -> str:
    for unit, size in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= size:
            return f"{x / size:.1f}{unit}"
    return f"{x:.0f}"


def _minutes(m: float) -> str:
    return f"{m:.1f} min" if m < 90 else f"{m / 60:.1f} h"


def _hours(h: float) -> str:
    return f"{h:.1f} h" if h < 48 else f"{h / 24:.0f} d"


def format_costs(costs: Sequence[ExperimentCost], *, assumptions: Assumptions = ASSUMPTIONS,
                 progress: Mapping[str, str] | None = None) -> str:
    """The cost table as text, then the totals and the assumptions; ``progress`` fills a last column."""
    progress = progress or {}
    head = (f"{'experiment':44} {'runs':>5} {'steps':>7} {'tokens pad→real':>16} {'PFLOP':>8} {'GPU mem':>8} {'GPU':>9} "
            f"{'CPU':>7} {'slices':>6}" + ("  progress" if progress else ""))
    lines, chapter = [head], None
    for c in costs:
        if c.chapter != chapter:
            chapter = c.chapter
            lines.append(f"{chapter}")
        note = f" (shares {', '.join(c.shared)})" if c.shared else ""
        lines.append(f"  {c.experiment:42} {c.runs:>5} {_tokens(c.steps):>7} {_tokens(c.tokens_padded) + '→' + _tokens(c.tokens):>16} "
                     f"{c.flops / 1e15:>8.1f} {c.gpu_memory_gb:>6.1f}GB {_minutes(c.gpu_minutes):>9} "
                     f"{_hours(c.cpu_hours):>7} {c.slices:>6}" + (f"  {progress[c.experiment]}"
                                                                      if c.experiment in progress else "") + note)
    t, measured = totals(costs), gpu_measurements()
    lines.append(f"total: {_tokens(t['tokens_padded'])} padded → {_tokens(t['tokens'])} tokens, "
                 f"{t['flops'] / 1e18:.2f} EFLOP, {_minutes(t['gpu_minutes'])} on the GPU in {t['slices']} slices "
                 f"of at most {SLICE_MINUTES:g} min, {_hours(t['cpu_hours'])} on this CPU, "
                 f"peak GPU memory {t['gpu_memory_gb']:.0f} GB")
    lines.append(f"assumptions: {assumptions.describe()}")
    if not measured:
        return "\n".join([*lines, f"measured: no GPU window recorded yet ({MEASUREMENTS}, written by scripts/gpu-slice)"])
    last = measured[-1]
    at = dataclasses.replace(assumptions, mfu=last.mfu)
    minutes = sum(w.gpu_seconds(at) for c in costs for w in c.work if not w.share or w.share not in c.shared) / 60
    return "\n".join([*lines, f"measured: {last.mfu:.0%} MFU on {last.device} ({last.started}, {MEASUREMENTS}): "
                              f"{_minutes(minutes)} on the GPU at that MFU"])


def readme_table(assumptions: Assumptions = ASSUMPTIONS) -> str:
    """The README's table of the paper scale's cost per chapter (current settings and with :data:`PROPOSED`)."""
    now, then = experiment_costs(assumptions=assumptions), experiment_costs(proposed=True, assumptions=assumptions)
    padded = experiment_costs(assumptions=dataclasses.replace(assumptions, bucketed=False))

    def row(label: str, chapter: str | None = None) -> str:
        tp, tn, tt = (totals([c for c in costs if chapter in (None, c.chapter)]) for costs in (padded, now, then))
        return (f"| {label} | {_minutes(tp['gpu_minutes'])} | {_minutes(tn['gpu_minutes'])} | "
                f"{_minutes(tt['gpu_minutes'])} | {tt['slices']} | {_hours(tn['cpu_hours'])} |")

    return "\n".join(["| chapter | GPU, padded | GPU, bucketed | GPU, proposed settings | slices (proposed) | "
                      "CPU, bucketed |", "|---|---|---|---|---|---|",
                      *(row(ch, ch) for ch in dict.fromkeys(c.chapter for c in now)), row("**total**")])


#: The markers around the README's generated cost table.
README_MARKERS = ("<!-- cost-table: generated by posgeom.costmodel.readme_table(); tests/test_costmodel.py checks it -->",
                  "<!-- end cost-table -->")


def update_readme(path) -> bool:
    """Rewrite the cost table and the assumptions line of the README at ``path``; whether it changed."""
    import re
    from pathlib import Path
    path = Path(path)
    text, table = path.read_text(), "(?s)" + ".*?".join(re.escape(m) for m in README_MARKERS)
    if not re.search(table, text):
        raise ValueError(f"{path} has no cost table between the markers {README_MARKERS[0]!r} and "
                         f"{README_MARKERS[1]!r}")
    new = re.sub(table, lambda _: f"{README_MARKERS[0]}\n{readme_table()}\n{README_MARKERS[1]}", text)
    new = re.sub(r"\nAssumptions: [^\n]*\n", lambda _: f"\nAssumptions: {ASSUMPTIONS.describe()}.\n", new)
    if new != text:
        path.write_text(new)
    return new != text


def gpu_work(costs: Sequence[ExperimentCost] | None = None) -> dict[str, float]:
    """``{registry name pattern: GPU minutes}`` of the experiments this CPU would take more than
    :data:`CPU_FEASIBLE_HOURS` on; a heavy experiment missing from :data:`RESULT_NAMES` raises ValueError."""
    work: dict[str, float] = {}
    for cost in (c for c in (experiment_costs() if costs is None else costs) if c.cpu_hours > CPU_FEASIBLE_HOURS):
        if cost.experiment not in RESULT_NAMES:
            raise ValueError(f"{cost.experiment} needs a GPU at paper scale but costmodel.RESULT_NAMES does not say "
                             "which registry entries it writes; add them there")
        for pattern in RESULT_NAMES[cost.experiment]:
            work[pattern] = max(work.get(pattern, 0.0), cost.gpu_minutes)
    return work


def needs_gpu(registry_experiment: str, costs: Sequence[ExperimentCost] | None = None) -> bool:
    """Whether recomputing the paper-scale registry entry ``registry_experiment`` needs a GPU (:func:`gpu_work`)."""
    from fnmatch import fnmatchcase
    return any(fnmatchcase(registry_experiment, pattern) for pattern in gpu_work(costs))
