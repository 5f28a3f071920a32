r"""Typed per-scale settings and typed result records, shared by every experiment module.

An experiment's options are a frozen dataclass whose defaults are the ``quick`` scale; ``paper`` is written
as the changes to quick (:func:`by_scale`), so a reader sees at once what it does differently.
:func:`as_params` gives the plain dictionary the registry keys on. A list of rows is stored as JSON
dictionaries and read back as typed records (:func:`records`, :func:`find`).

Example
-------
>>> from dataclasses import dataclass
>>> @dataclass(frozen=True)
... class Walk:
...     n: int = 64
...     seeds: tuple[int, ...] = (0, 1)
>>> WALK = by_scale(Walk(), n=512)
>>> WALK["paper"].n, WALK["paper"].seeds
(512, (0, 1))
>>> as_params(WALK["quick"])
{'n': 64, 'seeds': (0, 1)}
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from ..config import validate_scale
from ..registry import Registry, Result

__all__ = [
    "ByScale", "by_scale", "as_params", "params_of", "records", "find", "ModelShape", "EncoderShape",
    "TrainingOptions", "AdamWTraining", "TableTraining", "OrderTraining", "SeparationTraining", "ScratchTraining",
    "NoiseOptions", "IntervalOptions", "SmacofOptions", "OrderTask", "store_result",
]


@dataclass(frozen=True)
class ByScale:
    """The settings of one experiment at each scale; ``SETTINGS[scale]`` picks one."""

    quick: Any
    paper: Any

    def __getitem__(self, scale: str) -> Any:
        return getattr(self, validate_scale(scale))

    def __iter__(self):
        yield from ("quick", "paper")

    def changes(self) -> dict[str, tuple[Any, Any]]:
        """``{field: (quick value, paper value)}`` for the fields the paper scale changes (top level)."""
        return {
            f.name: (getattr(self.quick, f.name), getattr(self.paper, f.name))
            for f in dataclasses.fields(self.quick)
            if getattr(self.quick, f.name) != getattr(self.paper, f.name)
        }


def _replace(base, changes: Mapping[str, Any]):
    """``dataclasses.replace`` that also accepts a mapping of changes for a nested dataclass field."""
    names = {f.name for f in dataclasses.fields(base)}
    unknown = sorted(set(changes) - names)
    if unknown:
        raise TypeError(
            f"{type(base).__name__} has no field {', '.join(map(repr, unknown))}; its fields are {', '.join(sorted(names))}"
        )
    resolved = {}
    for name, value in changes.items():
        current = getattr(base, name)
        if dataclasses.is_dataclass(current) and isinstance(value, Mapping):
            value = _replace(current, value)
        resolved[name] = value
    return dataclasses.replace(base, **resolved)


def by_scale(quick: Any, **paper_changes: Any) -> ByScale:
    """Settings at both scales: ``quick`` as given, ``paper`` = quick with ``paper_changes`` applied.

    A change to a nested dataclass field may be a mapping of its own changes
    (``by_scale(Options(), model={"d_model": 768})``); an unknown field raises :class:`TypeError`.
    """
    if not dataclasses.is_dataclass(quick) or isinstance(quick, type):
        raise TypeError(f"by_scale needs a dataclass instance for the quick scale, got {type(quick).__name__}")
    return ByScale(quick=quick, paper=_replace(quick, paper_changes))


def as_params(settings: Any) -> dict[str, Any]:
    """The registry parameters of a settings dataclass (nested dataclasses → nested dictionaries)."""
    if not dataclasses.is_dataclass(settings) or isinstance(settings, type):
        raise TypeError(f"as_params needs a dataclass instance, got {type(settings).__name__}")
    return dataclasses.asdict(settings)


def params_of(*mappings: Mapping[str, Any], **values: Any) -> dict[str, Any]:
    """Registry parameters from mappings and keyword values, settings dataclasses turned into dictionaries."""
    merged: dict[str, Any] = {}
    for m in (*mappings, values):
        merged.update(m)
    return {k: as_params(v) if dataclasses.is_dataclass(v) and not isinstance(v, type) else v
            for k, v in merged.items()}


def store_result(settings, name: str, compute, params: Mapping[str, Any], force: bool = False, *,
                 device: str = "cpu", model: str | None = None) -> Result:
    """:meth:`posgeom.registry.Registry.run` of ``compute`` as ``name``: the call every ``run_*`` ends with.

    The code key is that of ``compute``'s module, so define ``compute`` in the experiment module.
    """
    return Registry(settings.results_dir).run(name, compute, params=params, scale=settings.scale, seed=settings.seed,
                                              device=device, model=model, force=force)


def records(cls: type, rows: Iterable[Mapping[str, Any]]) -> list:
    """Stored rows (dictionaries) as typed records of the dataclass ``cls``; extra keys are an error."""
    names = [f.name for f in dataclasses.fields(cls)]
    out = []
    for i, row in enumerate(rows):
        extra = sorted(set(row) - set(names))
        if extra:
            raise ValueError(f"row {i} has fields {extra} that {cls.__name__} does not declare")
        out.append(cls(**{k: row[k] for k in names if k in row}))
    return out


def find(rows: Iterable[Any], **match: Any) -> Any:
    """The one record whose fields equal ``match``; a :class:`KeyError` naming the choices otherwise."""
    rows = list(rows)
    hits = [r for r in rows if all(getattr(r, k) == v for k, v in match.items())]
    if len(hits) != 1:
        keys = ", ".join(match)
        choices = sorted({tuple(getattr(r, k) for k in match) for r in rows}, key=str)
        what = "no record" if not hits else f"{len(hits)} records"
        raise KeyError(f"{what} with {match}; the values of ({keys}) present are {choices}")
    return hits[0]


@dataclass(frozen=True)
class ModelShape:
    """The shape of a chapter's small encoder: width, depth, heads, feed-forward width."""

    d_model: int = 32
    n_layers: int = 1
    n_heads: int = 4
    d_ff: int = 64


@dataclass(frozen=True)
class EncoderShape:
    """The width and heads an encoding is built for (an encoding's table needs no depth)."""

    d_model: int = 768
    n_heads: int = 12


@dataclass(frozen=True)
class TrainingOptions:
    """The root of the training-settings family: every optimiser run of an experiment is configured by a subclass.

    Members add how long they run and how they schedule and record, keeping the field names the registry
    recorded for the blocks they replaced (so stored parameters stay the same). Not members: a fine-tune
    (:class:`posgeom.experiments.extrapolation.Finetune`, a phase of a member run) and the NTK regimes (SGD,
    :class:`posgeom.experiments.monotonicity_ntk.NTKRegime`).
    """

    batch_size: int = 32
    lr: float = 3e-3


@dataclass(frozen=True)
class AdamWTraining(TrainingOptions):
    """AdamW with a linear warm-up (``warmup_ratio`` of the steps) and linear decay: the learned-table studies."""

    steps: int = 400
    weight_decay: float = 0.01
    warmup_ratio: float = 0.1


@dataclass(frozen=True)
class TableTraining(AdamWTraining):
    """:class:`AdamWTraining` and the CPU threads of torch (None: all)."""

    threads: int | None = 1


@dataclass(frozen=True)
class OrderTraining(TrainingOptions):
    """AdamW training of Theorem 1's order-task models (test accuracy every ``eval_every`` steps)."""

    batch_size: int = 64
    steps: int = 300
    weight_decay: float = 0.0
    schedule: str = "linear"
    eval_every: int = 50


@dataclass(frozen=True)
class SeparationTraining(TrainingOptions):
    """AdamW training (linear schedule) of Theorem 4's tables, the geometry recorded every ``every`` steps."""

    batch_size: int = 64
    # 200 steps at quick (300 before): the drift table's separation, median distance and order correlation
    # are flat from about step 150 (they moved by 0.004, 0.005 and 0.002 over the last 100 of 300 steps),
    # and every verdict of the chapter is the one 300 steps gave. What it costs: SST-2's table, still
    # moving, ends less ordered (order correlation 0.26 against 0.31); the drift corpus's masked-token loss
    # is 3.133 nats against 3.130. The chapter says so.
    steps: int = 200
    every: int = 10


@dataclass(frozen=True)
class ScratchTraining(TrainingOptions):
    """MLM training of an encoder with a learned table from scratch, the geometry recorded every ``every`` steps."""

    lr: float = 2e-3
    model: ModelShape = ModelShape(d_model=64, n_layers=2, n_heads=2, d_ff=256)
    max_steps: int = 100
    warmup_steps: int = 10
    every: int = 20
    # CPU threads (None: keep torch's setting); a model this small runs faster on one (posgeom.models.threads)
    threads: int | None = 1


@dataclass(frozen=True)
class OrderTask:
    """The synthetic order task of the training studies (:func:`posgeom.models.tasks.order_task_data`)."""

    n_positions: int = 16
    vocab_size: int = 20
    n_train: int = 4000
    n_eval: int = 1000
    min_length: int = 2
    kind: str = "marker_order"


@dataclass(frozen=True)
class NoiseOptions:
    """The sampling-noise floor of a distance matrix (:func:`posgeom.geometry.noise_floor`) and its redraws."""

    method: str = "bootstrap"
    n_rep: int = 20


@dataclass(frozen=True)
class IntervalOptions:
    """Bootstrap intervals over a corpus's sequences: ``n_boot`` redraws of ``n_folds`` clusters of sequences."""

    n_boot: int = 200
    n_folds: int = 100
    level: float = 0.95


@dataclass(frozen=True)
class SmacofOptions:
    """SMACOF's stopping rule: at most ``max_iter`` iterations, or a relative stress change below ``eps``."""

    max_iter: int = 3000
    eps: float = 1e-9
