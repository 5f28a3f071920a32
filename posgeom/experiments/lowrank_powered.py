r"""C5's training row sized by its power before it runs (chapter *Minimal parametrisation*).

The claim: a rank-1 table $P = a c^\top$ loses no accuracy against a full learned table. The quick comparison
(:mod:`posgeom.experiments.lowrank_training`) leaves it undecided: its gap varies by several points from seed
to seed, partly because neither table has finished learning. :func:`run_lowrank_powered` trains until a table
that can fit the task has, sizes the seeds on a pilot
(:func:`posgeom.experiments.paired_design.run_paired_design`), and counts the runs that stalled, to say where
a gap comes from. The model and task are the quick comparison's, so it runs on one CPU core at either scale.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..config import resolve_device, settings_or_default as _settings
from ..geometry.intervals import MIN_SEEDS, SeedInterval, paired_difference
from ..models.batches import SCALE_PADDING
from ..models.comparison import train_one
from ..models.threads import torch_threads
from ..registry import Result
from ..validation import check_choices
from . import lowrank_training as lt
from .lowrank_training import TrainedTable
from .paired_design import PairedDesign, PairedOutcome, PairedSeed, run_paired_design
from .settings import as_params, store_result

__all__ = ["PoweredDesign", "POWERED_DESIGN", "run_lowrank_powered", "table_runs", "PoweredSeed",
           "LowrankPoweredRecord"]


@dataclass(frozen=True)
class PoweredDesign:
    """The design of :func:`run_lowrank_powered`, fixed before it runs."""

    #: Training steps of each run, where a table that can fit the task has fitted it (the gap's sd over seeds
    #: falls from 0.066 at the quick comparison's 350 steps to 0.005 at 2,000 in the seeds that fit; a rank-1
    #: table that stalls is not rescued by more steps).
    steps: int = 2_000
    #: The paired design: the smallest loss of accuracy that matters (posgeom.verdicts.ACCURACY_MARGIN; a test
    #: keeps them equal), the pilot, the cap of posgeom.verdicts.MAX_SEEDS seeds.
    paired: PairedDesign = field(default_factory=lambda: PairedDesign(effect=0.01))
    #: A run "stalled" when its final training loss stays above this many nats: a table that fits the task
    #: ends below 0.015, a stalled one above 0.2.
    stalled_loss: float = 0.05
    #: The two tables of the gap, a - b (:class:`~posgeom.experiments.lowrank_training.TrainedTable`).
    encodings: tuple[TrainedTable, TrainedTable] = (TrainedTable.LEARNED, TrainedTable.LOWRANK_R1)


#: The design, the same at every scale (the smallest model that keeps C5's conditions is a CPU model).
POWERED_DESIGN = PoweredDesign()


@dataclass(frozen=True, kw_only=True)
class PoweredSeed(PairedSeed):
    """One seed of the design: both tables trained from it, ``a`` and ``b`` their test accuracies."""

    tables: tuple[lt.TableRun, ...]  # in the order of PoweredDesign.encodings


@dataclass(frozen=True, kw_only=True)
class LowrankPoweredRecord(PairedOutcome):
    """A stored ``run_lowrank_powered``: the paired design's pilot, plan and decision, and the stalled runs."""

    pilot: tuple[PoweredSeed, ...]
    runs: tuple[PoweredSeed, ...]
    stalled: dict[TrainedTable, tuple[int, ...]]  # per table, the seeds whose run stalled
    fitted_gap: SeedInterval | None  # the interval where neither table stalled; None under MIN_SEEDS seeds
    device: str


def table_runs(records) -> list[dict]:
    """The training runs of a design's per-seed records, one per table and seed (with ``encoding`` and ``seed``)."""
    return [run for record in records for run in record["tables"]]


def run_lowrank_powered(settings=None, *, force: bool = False, design: PoweredDesign | None = None) -> Result:
    r"""C5's paired accuracy gap learned − rank-1 table, over the seeds a pilot sizes, stored.

    The record: :class:`LowrankPoweredRecord`, a :class:`PoweredSeed` per seed (:func:`table_runs` reads their
    tables).
    """
    settings = _settings(settings)
    design = POWERED_DESIGN if design is None else design
    cfg = lt.TRAIN_CONFIGS["quick"]  # the smallest model and task that keep the claim's conditions
    tables = [TrainedTable(e) for e in check_choices(design.encodings, "encoding", tuple(TrainedTable))]
    design.paired.check()
    device = resolve_device(settings.device)
    # no data key: the task is synthetic, so a result stored with the book's copies is found with the hub too
    params = dict(design=as_params(design), task=as_params(cfg.synthetic), model=as_params(cfg.model),
                  batch_size=cfg.batch_size, lr=cfg.lr, seed=settings.seed)

    def compute():
        with torch_threads(1, device):  # a tiny model: one thread is as fast and leaves the other core free
            return _compute()

    def _compute():
        train_data, test_data, D_task, vocab, n = lt.task_data("synthetic", settings, cfg)

        def measure(seed: int) -> dict:
            """Both tables trained from the same seed: ``a``, ``b`` their test accuracies."""
            trained = []
            for table in tables:
                r = train_one(train_data, test_data, D_task, position=table.encoding, options=table.options,
                              model_cfg=as_params(cfg.model), vocab_size=vocab, n_positions=n, steps=design.steps,
                              batch_size=cfg.batch_size, lr=cfg.lr, seed=settings.seed + seed, device=device,
                              padding=SCALE_PADDING["quick"])
                trained.append(dict(r, encoding=table, seed=int(seed)))
            return dict(a=trained[0]["test_accuracy"], b=trained[1]["test_accuracy"], tables=trained)

        values = run_paired_design(measure, design.paired, bounds=(-1.0, 1.0), desc="C5 design")
        runs = table_runs(values["runs"])
        stalled = {e: sorted(r["seed"] for r in runs if r["encoding"] == e and r["final_train_loss"] > design.stalled_loss)
                   for e in tables}
        fitted = [r for r in values["runs"] if not any(r["seed"] in seeds for seeds in stalled.values())]
        # the gap where both tables fitted the task: where the gap over all seeds comes from
        fitted_gap = (paired_difference([r["a"] for r in fitted], [r["b"] for r in fitted], design.paired.level,
                                        bounds=(-1.0, 1.0)) if len(fitted) >= MIN_SEEDS else None)
        return LowrankPoweredRecord.of(values, stalled=stalled, fitted_gap=fitted_gap, device=device)

    return store_result(settings, "minimal_parametrisation.lowrank_powered", compute, params, force, device=device,
                        model="1-layer encoder of width 32 (posgeom.models), marker-order task")
