"""Budgets: a deadline for training, the slices that fit, and the progress of what a deadline stopped."""

from __future__ import annotations

import os
import re
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..registry import Registry
from .chapters import PROGRESS_EXPERIMENT, Chapter, format_minutes

#: The environment variable holding the training deadline (a UNIX time), read by the training loop.
DEADLINE_ENV = "POSGEOM_DEADLINE"
#: Seconds kept back from a budget for the training loop to save its state and the kernel to stop.
BUDGET_MARGIN_S = 20.0

_BUDGET = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h)\s*$")
_UNIT_S = {"s": 1.0, "m": 60.0, "h": 3600.0}


def parse_budget(text: str | float | int) -> float:
    """A budget such as ``"90s"``, ``"9m"``, ``"2h"`` (or a number of seconds) in seconds; ValueError if not."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        seconds = float(text)
    else:
        found = _BUDGET.match(str(text).lower())
        if not found:
            raise ValueError(f"budget {text!r} is not a duration: write a number followed by s, m or h "
                             "(for example 90s, 9m, 2h)")
        seconds = float(found.group(1)) * _UNIT_S[found.group(2)]
    if not 0 < seconds < float("inf"):  # NaN fails both comparisons
        raise ValueError(f"budget {text!r} must be a positive duration (for example 90s, 9m, 2h)")
    return seconds


@contextmanager
def training_deadline(at: float | None):
    """Within the block, :func:`posgeom.models.training.train` saves its state and stops at UNIX time ``at``.

    The one adapter to the training loop's deadline: it sets ``POSGEOM_DEADLINE`` (inherited by the kernels
    and ``torchrun`` processes) and enters the loop's ``deadline(at)``. ``None``: no deadline.
    """
    if at is None:
        yield
        return
    previous = os.environ.get(DEADLINE_ENV)
    os.environ[DEADLINE_ENV] = repr(float(at))
    try:
        manager = getattr(_training_module(), "deadline", None)
        with manager(float(at)) if callable(manager) else nullcontext():
            yield
    finally:
        if previous is None:
            os.environ.pop(DEADLINE_ENV, None)
        else:
            os.environ[DEADLINE_ENV] = previous


@dataclass(frozen=True)
class RunProgress:
    """One training run with a saved state: its experiment (``module:function``), steps done and total, finished."""

    experiment: str
    step: int
    total_steps: int
    complete: bool


def _training_module():
    try:
        from .. import models
    except ImportError:  # no deep-learning stack: nothing can have been trained
        return None
    return models


def _cost_label(origin: str) -> str:
    """The cost model's ``module:function`` for a training run's origin, matched by the function's name."""
    from ..costmodel import EXPERIMENTS
    function = origin.rpartition(":")[2]
    labels = [f"{module}:{name}" for _, module, name, _ in EXPERIMENTS if name == function]
    return labels[0] if labels else origin.removeprefix("posgeom.experiments.")


def checkpoint_progress(results_dir: str | Path, scale: str) -> list[RunProgress]:
    """The training runs with a saved state under ``results_dir`` at ``scale`` (empty without the models)."""
    report = getattr(_training_module(), "checkpoint_progress", None)
    rows = (report(results_dir=results_dir, scale=scale) or ()) if callable(report) else ()
    return [RunProgress(_cost_label(str(getattr(row, "origin", None) or "?")), int(row.step), int(row.total_steps),
                        bool(getattr(row, "complete", False)))
            for row in rows if getattr(row, "step", None) is not None and getattr(row, "total_steps", None) is not None]


def experiment_progress(runs: Sequence[RunProgress]) -> dict[str, str]:
    """Per experiment, its saved runs as text: ``"2 runs finished, 1 at step 400 of 2500"``."""
    out = {}
    for experiment in dict.fromkeys(r.experiment for r in runs):
        rows = [r for r in runs if r.experiment == experiment]
        done = sum(r.complete for r in rows)
        out[experiment] = ", ".join(([f"{done} run(s) finished"] if done else [])
                                    + [f"1 at step {r.step} of {r.total_steps}" for r in rows if not r.complete])
    return out


#: Where training keeps its states under ``<results>/<scale>`` (``posgeom.models.checkpoints.CHECKPOINT_FOLDER``,
#: repeated so that a run without the deep-learning stack needs no import of it).
CHECKPOINT_FOLDER = ".checkpoints"


def checkpoint_links(results_dir: str | Path, scale: str) -> list[Path]:
    """The symbolic links among ``<results>/<scale>``, its training states' folder and what it holds (none followed)."""
    from ..storage import is_symlink, symlinks_below
    root = Path(results_dir) / scale / CHECKPOINT_FOLDER
    return [p for p in (root.parent, root) if is_symlink(p)] or symlinks_below(root)


def discard_finished_checkpoints(results_dir: str | Path, scale: str) -> int:
    """Remove the saved states of finished training runs; how many. Nothing is discarded (a warning says why)
    while a symbolic link stands among the states' folders: deleting through it would reach outside the results."""
    import warnings
    discard = getattr(_training_module(), "discard_checkpoints", None)
    if not callable(discard):
        return 0
    links = checkpoint_links(results_dir, scale)
    if links:
        warnings.warn(f"kept the saved training states under {Path(results_dir) / scale / CHECKPOINT_FOLDER}: "
                      f"{links[0]} is a symbolic link (never followed, so nothing is discarded through it); delete the "
                      "link (posgeom results check lists every link)", stacklevel=2)
        return 0
    return len(discard(results_dir=results_dir, scale=scale, complete_only=True))


def chapter_progress(chapter: Chapter, scale: str, registry: Registry) -> str | None:
    """What a budgeted run recorded when it stopped ``chapter`` at the deadline (None: nothing recorded)."""
    params = {"chapter": chapter.slug}
    if not registry.has(PROGRESS_EXPERIMENT, params=params, scale=scale):
        return None
    v = registry.load(PROGRESS_EXPERIMENT, params=params, scale=scale).values
    steps = f", training at step {v['steps_done']} of {v['total_steps']}" if v.get("total_steps") else ""
    return f"{v.get('slices', 1)} slice(s), {format_minutes(v.get('wall_s', 0.0) / 60)} so far{steps}"


#: The least time left (minutes) for which a budgeted run still starts a chapter longer than that.
MIN_SLICE_MINUTES = 1.0


def slice_minutes(chapter: Chapter, scale: str) -> float:
    """The minutes a budgeted run needs left to start ``chapter``: its estimate, at most :data:`MIN_SLICE_MINUTES`
    (a slice that ends at the deadline is progress: training resumes)."""
    return min(chapter.estimate(scale).minutes, MIN_SLICE_MINUTES)
