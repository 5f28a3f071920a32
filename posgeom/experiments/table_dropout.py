r"""Dropout on the embedding sum where a learned table can overfit (claim S9, chapter "Learned tables").

A regulariser can only show an effect where the model overfits, and on the order task with thousands of
sequences it does not; this study gives the model room to overfit (few training sequences, many passes, no
weight decay) and trains it from the same seeds with and without dropout. The effect is the per-seed
difference of the held-out loss, with its interval over seeds (:func:`posgeom.geometry.paired_difference`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..config import resolve_device, settings_or_default as _settings
from ..geometry.intervals import SeedInterval, paired_difference
from ..models.table_studies import DropoutRun, train_dropout_study
from ..registry import Result
from .settings import ModelShape, OrderTask, TableTraining, as_params, by_scale, find, records, store_result

__all__ = ["CONFIGS", "DropoutStudySettings", "DropoutStudyRecord", "dropout_runs", "dropout_effect", "run_dropout_study"]


@dataclass(frozen=True)
class DropoutStudySettings:
    """The S9 study (defaults: ``quick``): a small training set, long training, no weight decay."""

    order: OrderTask = OrderTask(n_train=128, n_eval=1000)
    model: ModelShape = ModelShape(d_model=32, n_layers=2, n_heads=2, d_ff=64)
    train: TableTraining = TableTraining(steps=400, weight_decay=0.0)
    dropouts: tuple[float, ...] = (0.0, 0.1)
    seeds: tuple[int, ...] = field(default=(0, 1, 2, 3, 4))


#: ``quick``: 128 training sequences of 16 positions seen 100 times (400 steps of 32), 5 seeds, about
#: 3 s of one CPU core per run. ``paper``: the chapter's paper-scale model and task with 1,000 sequences.
CONFIGS = by_scale(
    DropoutStudySettings(),
    order=dict(n_positions=64, vocab_size=100, n_train=1000, n_eval=4000),
    model=ModelShape(d_model=128, n_layers=4, n_heads=4, d_ff=512),
    train=dict(steps=4000, batch_size=64, lr=1e-3, threads=None),
)


@dataclass(frozen=True)
class DropoutStudyRecord:
    """A stored :func:`run_dropout_study`: every run, the rates and seeds, and how often a sequence was seen."""

    runs: tuple[DropoutRun, ...]
    dropouts: tuple[float, ...]
    seeds: tuple[int, ...]
    n_train: int
    passes: float


def dropout_runs(result: Result) -> list[DropoutRun]:
    """The runs stored by :func:`run_dropout_study`, as typed records."""
    return records(DropoutRun, result.values["runs"])


def dropout_effect(runs, rate: float, *, field_name: str = "eval_loss", level: float = 0.95) -> SeedInterval:
    """Per-seed difference of ``field_name`` between dropout ``rate`` and none, with its interval (< 0: it helps)."""
    seeds = sorted({r.seed for r in runs})
    with_p = [getattr(find(runs, dropout=float(rate), seed=s), field_name) for s in seeds]
    without = [getattr(find(runs, dropout=0.0, seed=s), field_name) for s in seeds]
    bounds = (-1.0, 1.0) if "accuracy" in field_name else None
    return paired_difference(with_p, without, level, bounds=bounds)


def run_dropout_study(settings=None, *, force: bool = False) -> Result:
    """Dropout on the embedding sum of a learned table that can overfit, stored.

    The record: :class:`DropoutStudyRecord` (:func:`dropout_runs` reads its runs back).
    """
    settings = _settings(settings)
    options = CONFIGS[settings.scale]
    if 0.0 not in options.dropouts or len(options.seeds) < 2:
        raise ValueError("the dropout study needs the rate 0.0 among its dropouts and at least 2 seeds")
    device = resolve_device(settings.device)

    def compute():
        runs = train_dropout_study(as_params(options.order), as_params(options.model), as_params(options.train),
                                   options.dropouts, options.seeds, data_seed=settings.seed, device=device)
        t = options.train
        return DropoutStudyRecord(tuple(runs), options.dropouts, options.seeds, options.order.n_train,
                                  t.steps * t.batch_size / options.order.n_train)

    params = {**as_params(options), "data_seed": settings.seed}
    return store_result(settings, "learned_dropout_overfit", compute, params, force, device=device,
                        model="tiny encoder (posgeom.models), order task")
