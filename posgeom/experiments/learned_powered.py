r"""S4, S7 and S9 decided by designs sized by their power before they run (chapters on learned tables).

The claims are about training a learned table, not about BERT-base, so each design runs at the quick
study's model and task (the smallest that keeps the claim's conditions) on one CPU core, over the seeds a
pilot says resolve the claim's smallest effect (:func:`posgeom.experiments.paired_design.run_paired_design`).
Differences a − b, paired by seed: S4, tail accuracy with 90 % short sequences − with uniform lengths; S7,
final training loss from N(0, 0.02²) − from N(0, 1); S9, held-out loss with dropout 0.1 − without.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config import resolve_device, settings_or_default as _settings
from ..models.table_studies import tails_study, train_dropout_study, train_init_study
from ..models.tasks import order_population_geometry, order_task_data
from ..models.threads import torch_threads
from ..registry import Result
from . import extrapolation as ex, learned_tables as lt, table_dropout as td
from .paired_design import PairedDesign, PairedOutcome, PairedSeed, run_paired_design
from .settings import as_params, store_result

__all__ = ["TAILS_DESIGN", "INIT_DESIGN", "DROPOUT_DESIGN", "SMALL_INIT", "LARGE_INIT", "TailsSeed",
           "StoredTailsPowered", "InitSeed", "StoredInitPowered", "DropoutSeed", "StoredDropoutPowered",
           "run_tails_powered", "run_init_powered", "run_dropout_powered"]

#: S4: the tail-accuracy deficit that counts (posgeom.verdicts.TAIL_EFFECT; a test keeps them equal).
TAILS_DESIGN = PairedDesign(effect=0.02)
#: S7: the final-loss difference that counts (posgeom.verdicts.LOSS_EFFECT; a test keeps them equal).
INIT_DESIGN = PairedDesign(effect=0.01)
#: S9: the held-out-loss difference that counts (posgeom.verdicts.LOSS_EFFECT; a test keeps them equal).
DROPOUT_DESIGN = PairedDesign(effect=0.01)

#: S7's two initialisations, names of posgeom.models.table_studies.INITS.
SMALL_INIT, LARGE_INIT = "normal_0.02", "normal_1"

_QUICK = "quick"  # the smallest model and task that keep each claim's conditions: the quick studies'


@dataclass(frozen=True, kw_only=True)
class TailsSeed(PairedSeed):
    """A seed of S4's design: ``a``, ``b`` tail accuracies (skewed, uniform lengths), and the head accuracies."""

    head_skewed: float
    head_uniform: float


@dataclass(frozen=True, kw_only=True)
class StoredTailsPowered(PairedOutcome):
    """A stored :func:`run_tails_powered`."""

    pilot: tuple[TailsSeed, ...]
    runs: tuple[TailsSeed, ...]
    device: str


@dataclass(frozen=True, kw_only=True)
class InitSeed(PairedSeed):
    """A seed of S7's design: ``a``, ``b`` final losses; each initialisation's steps to the threshold (None: never)."""

    steps_small: int | None
    steps_large: int | None


@dataclass(frozen=True, kw_only=True)
class StoredInitPowered(PairedOutcome):
    """A stored :func:`run_init_powered`."""

    pilot: tuple[InitSeed, ...]
    runs: tuple[InitSeed, ...]
    loss_threshold: float
    device: str


@dataclass(frozen=True, kw_only=True)
class DropoutSeed(PairedSeed):
    """A seed of S9's design: ``a``, ``b`` held-out losses; the gap without dropout and both held-out accuracies."""

    gap_none: float
    accuracy_dropout: float
    accuracy_none: float


@dataclass(frozen=True, kw_only=True)
class StoredDropoutPowered(PairedOutcome):
    """A stored :func:`run_dropout_powered`; ``rate`` the dropout compared with none."""

    pilot: tuple[DropoutSeed, ...]
    runs: tuple[DropoutSeed, ...]
    rate: float
    device: str


def _describe(shape) -> str:
    return f"{shape.n_layers}-layer encoder of width {shape.d_model} (posgeom.models), marker-order task"


def _store(settings, name, design, measure, params, force, *, record, shape, desc, bounds=None,
           extra=None) -> Result:
    """Run ``measure(seed, device)`` through the design inside a stored computation, stored as a ``record``."""
    device = resolve_device(settings.device)

    def compute():
        with torch_threads(1, device):  # tiny models: one thread is as fast and leaves the other core free
            values = run_paired_design(lambda seed: measure(seed, device), design, bounds=bounds, desc=desc)
        return record.of(values, **(extra or {}), device=device)

    return store_result(settings, name, compute, {"design": as_params(design), **params}, force, device=device,
                        model=_describe(shape))


def run_tails_powered(settings=None, *, force: bool = False, design: PairedDesign | None = None) -> Result:
    r"""S4 over the seeds a pilot sizes: tail accuracy with 90 % short training sequences minus uniform lengths.

    The record: :class:`StoredTailsPowered`, a :class:`TailsSeed` per seed.
    """
    settings = _settings(settings)
    design = TAILS_DESIGN if design is None else design
    cfg = ex.CONFIGS[_QUICK]
    task = {k: v for k, v in as_params(cfg.tails).items() if k != "seeds"}  # the design picks the seeds

    def measure(seed: int, device: str) -> dict:
        values, _ = tails_study(task, as_params(cfg.model), (seed,), data_seed=settings.seed, device=device)
        return dict(a=values["skewed"]["accuracy_tail"][0], b=values["uniform"]["accuracy_tail"][0],
                    head_skewed=values["skewed"]["accuracy_head"][0], head_uniform=values["uniform"]["accuracy_head"][0])

    params = dict(tails=task, model=as_params(cfg.model), data_seed=settings.seed)
    return _store(settings, "learned_tables_fail.tails_powered", design, measure, params, force, record=StoredTailsPowered,
                  shape=cfg.model, desc="S4 design", bounds=(-1.0, 1.0))


def run_init_powered(settings=None, *, force: bool = False, design: PairedDesign | None = None) -> Result:
    r"""S7 over the seeds a pilot sizes: the final training loss of a N(0, 0.02²) table minus a N(0, 1) one.

    The record: :class:`StoredInitPowered`, an :class:`InitSeed` per seed.
    """
    settings = _settings(settings)
    design = INIT_DESIGN if design is None else design
    cfg = lt.CONFIGS[_QUICK]
    o, t, ic = cfg.order, cfg.train, cfg.init
    kind = dict(kind=o.kind, min_length=o.min_length)
    data = {}

    def measure(seed: int, device: str) -> dict:
        if not data:  # the task is the same for every seed: built once, inside the stored computation
            data.update(geom=order_population_geometry(o.n_positions, o.vocab_size, **kind),
                        train=order_task_data(o.n_train, o.n_positions, o.vocab_size, seed=settings.seed, **kind),
                        eval=order_task_data(o.n_eval, o.n_positions, o.vocab_size, seed=settings.seed + 1000, **kind))
        study = train_init_study([(SMALL_INIT, 0.0), (LARGE_INIT, 0.0)], (seed,), data["geom"], data["train"],
                                 data["eval"], shape=as_params(cfg.model), steps=t.steps, batch_size=t.batch_size,
                                 lr=t.lr, weight_decay=t.weight_decay, warmup_ratio=t.warmup_ratio,
                                 loss_threshold=ic.loss_threshold, smooth=ic.smooth, device=device)
        small, large = study.runs
        return dict(a=small.final_loss, b=large.final_loss, steps_small=small.steps_to_threshold,
                    steps_large=large.steps_to_threshold)

    params = dict(order=as_params(o), model=as_params(cfg.model), train=as_params(t),
                  loss_threshold=ic.loss_threshold, smooth=ic.smooth, inits=[SMALL_INIT, LARGE_INIT],
                  data_seed=settings.seed)
    return _store(settings, "learned_tables.init_powered", design, measure, params, force, record=StoredInitPowered,
                  shape=cfg.model, desc="S7 design", extra={"loss_threshold": ic.loss_threshold})


def run_dropout_powered(settings=None, *, force: bool = False, design: PairedDesign | None = None) -> Result:
    r"""S9 over the seeds a pilot sizes: held-out loss with dropout on the embedding sum minus without.

    The record: :class:`StoredDropoutPowered`, a :class:`DropoutSeed` per seed.
    """
    settings = _settings(settings)
    design = DROPOUT_DESIGN if design is None else design
    cfg = td.CONFIGS[_QUICK]
    rate = max(cfg.dropouts)

    def measure(seed: int, device: str) -> dict:
        none, dropped = train_dropout_study(as_params(cfg.order), as_params(cfg.model), as_params(cfg.train),
                                            (0.0, rate), (seed,), data_seed=settings.seed, device=device)
        return dict(a=dropped.eval_loss, b=none.eval_loss, gap_none=none.gap, accuracy_dropout=dropped.eval_accuracy,
                    accuracy_none=none.eval_accuracy)

    params = dict(order=as_params(cfg.order), model=as_params(cfg.model), train=as_params(cfg.train), rate=rate,
                  data_seed=settings.seed)
    return _store(settings, "learned_tables.dropout_powered", design, measure, params, force, record=StoredDropoutPowered,
                  shape=cfg.model, desc="S9 design", extra={"rate": rate})
