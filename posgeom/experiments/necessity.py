r"""Experiments of the chapter "Theorem 1: no position, no order".

Without positional signal and causal mask an encoder is permutation-equivariant, $f(\Pi X) = \Pi f(X)$
(token-wise maps, and content-only attention, whose logits permute on both sides), so a
permutation-invariant readout cannot tell a sequence from its permutations. :func:`run_equivariance`
measures the gap $\max |f(\Pi X) - \Pi f(X)|$; :func:`run_order_task` trains models on an order-only task
(which of two markers comes first, every sequence paired with its reversal so both classes have the same
bags of words) with and without positional encodings.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from ..config import resolve_device, settings_or_default as _settings
from ..models.equivariance import EquivarianceRow, equivariance_gaps
from ..models.tasks import OrderTaskRow, model_label, train_order_task
from ..encodings.identifiers import Encoding
from ..registry import Result
from ..registry.typed import stored
from ..validation import check_choice
from .settings import ModelShape, OrderTraining, as_params, by_scale, records, store_result

__all__ = [
    "CONFIGS", "NecessitySettings", "OrderTaskSize", "OrderTraining", "EquivarianceOptions", "ENCODINGS", "MODELS",
    "PAD_ID", "CLS_ID", "StoredEquivariance", "StoredOrderTask", "equivariance_rows", "order_task_rows", "run_equivariance", "run_order_task",
]

#: The encodings compared in the chapter (names of :data:`posgeom.models.POSITIONAL`).
ENCODINGS = (Encoding.NONE, Encoding.LEARNED, Encoding.SINUSOIDAL, Encoding.ROPE, Encoding.ALIBI)
#: The models of the order task: each encoding in a bidirectional encoder, and NoPE with a causal mask.
MODELS = tuple((e, False) for e in ENCODINGS) + ((Encoding.NONE, True),)
#: Token ids of the models: 0 is padding, 1 is ``[CLS]``, the task's token ``t`` becomes ``t + 2``.
PAD_ID, CLS_ID, OFFSET = 0, 1, 2


@dataclass(frozen=True)
class OrderTaskSize:
    """The order-only task: content positions, vocabulary, training and test sequences."""

    n_positions: int = 8
    vocab_size: int = 20
    n_train: int = 4096
    n_test: int = 1024


@dataclass(frozen=True)
class EquivarianceOptions:
    """Random inputs and permutations of the equivariance check; weights drawn N(0, init_std^2)."""

    length: int = 16
    vocab_size: int = 50
    n_inputs: int = 4
    n_perms: int = 8
    init_std: float = 0.5


@dataclass(frozen=True)
class NecessitySettings:
    """The chapter's options (defaults: ``quick``); ``threads`` caps torch's CPU threads (None: all)."""

    model: ModelShape = field(default_factory=ModelShape)
    task: OrderTaskSize = field(default_factory=OrderTaskSize)
    train: OrderTraining = field(default_factory=OrderTraining)
    seeds: tuple[int, ...] = (0, 1, 2)
    threads: int | None = 1
    equivariance: EquivarianceOptions = field(default_factory=EquivarianceOptions)


#: Per-scale options. ``quick``: a 1-layer, width-32 encoder, 8 content positions, 300 steps, 3 seeds
#: (300, not 400: at 400 every model with positions had a mean test accuracy of at least 0.987 by step 250 —
#: the curves had flattened — and the NoPE and causal checks do not depend on the steps)
#: (about 2 s of one CPU core per run). ``paper``: BERT-base's shape (12 layers, width 768, 12 heads) on
#: 126 content positions, for a GPU.
CONFIGS = by_scale(
    NecessitySettings(),
    model=dict(d_model=768, n_layers=12, n_heads=12, d_ff=3072),
    task=dict(n_positions=126, vocab_size=1000, n_train=100_000, n_test=10_000),
    train=dict(steps=5000, lr=1e-4, weight_decay=0.01, eval_every=250),
    threads=None,
    equivariance=dict(length=128, vocab_size=30522),
)


@dataclass(frozen=True)
class StoredEquivariance:
    """A stored :func:`run_equivariance`, per model label; ``machine_epsilon``: the scale of rounding."""

    models: dict[str, EquivarianceRow]
    machine_epsilon: float


@dataclass(frozen=True)
class StoredOrderTask:
    """A stored :func:`run_order_task`: a row per model label, and its test accuracy along training."""

    models: dict[str, OrderTaskRow]
    chance: float
    n_test: int
    seq_len: int
    curves: dict[str, np.ndarray] = stored("{}__curve")  # per model label: (n_seeds, n_evals), at ``steps``
    steps: np.ndarray


def equivariance_rows(result: Result) -> list[EquivarianceRow]:
    """The rows stored by :func:`run_equivariance`, as typed records (in the order of its ``models``)."""
    return records(EquivarianceRow, result.values["models"].values())


def run_equivariance(settings=None, *, force: bool = False, models=MODELS, length: int | None = None,
                     vocab_size: int | None = None, n_inputs: int | None = None, n_perms: int | None = None,
                     init_std: float | None = None, dtype: str = "float64") -> Result:
    r"""Equivariance gaps of randomly initialised encoders, per encoding, stored.

    The options default to ``CONFIGS[scale].equivariance``. Weights are drawn larger than BERT's 0.02 so that
    attention is far from uniform and the check is not trivially passed. The record: :class:`StoredEquivariance`
    (:func:`equivariance_rows` reads its rows).
    """
    settings = _settings(settings)
    conf = CONFIGS[settings.scale]
    given = dict(length=length, vocab_size=vocab_size, n_inputs=n_inputs, n_perms=n_perms, init_std=init_std)
    eq = dataclasses.replace(conf.equivariance, **{k: v for k, v in given.items() if v is not None})
    check_choice(dtype, "dtype", ("float32", "float64"))
    models = [(str(p), bool(c)) for p, c in models]
    params = dict(models=[list(m) for m in models], **as_params(eq), dtype=dtype, model=as_params(conf.model),
                  seed=settings.seed)

    def compute():
        rows, eps = equivariance_gaps(models, **as_params(eq), shape=as_params(conf.model), seed=settings.seed,
                                      dtype=dtype, threads=conf.threads)
        return StoredEquivariance({model_label(r.position, r.causal): r for r in rows}, eps)

    return store_result(settings, "necessity.equivariance", compute, params, force)


# the order-only task


def order_task_rows(result: Result) -> list[OrderTaskRow]:
    """The rows stored by :func:`run_order_task`, as typed records."""
    return records(OrderTaskRow, result.values["models"].values())


def run_order_task(settings=None, *, force: bool = False, models=MODELS, seeds=None, cls_token: bool = True,
                   steps: int | None = None, pooling: str = "mean", progress: bool = True) -> Result:
    r"""Train each model on the order-only task over several seeds, stored.

    A model that ignores order is at exactly 1/2 in expectation. ``cls_token`` prepends ``[CLS]`` at position 0,
    which is not reversed with the content, so the reversal is not a symmetry of the data. The record:
    :class:`StoredOrderTask` (:func:`order_task_rows` reads its rows).
    """
    settings = _settings(settings)
    conf = CONFIGS[settings.scale]
    training = conf.train if steps is None else dataclasses.replace(conf.train, steps=steps)
    seeds = tuple(conf.seeds if seeds is None else seeds)
    models = [(str(p), bool(c)) for p, c in models]
    device = resolve_device(settings.device)
    params = dict(models=[list(m) for m in models], seeds=list(seeds), cls_token=bool(cls_token), pooling=pooling,
                  model=as_params(conf.model), task=as_params(conf.task), train=as_params(training),
                  base_seed=settings.seed)

    def compute():
        out = train_order_task(models, seeds, **as_params(conf.task), shape=as_params(conf.model),
                               **as_params(training), data_seed=settings.seed, cls_token=cls_token, pooling=pooling, device=device, threads=conf.threads,
                               progress=progress)
        return StoredOrderTask(models={model_label(r.position, r.causal): r for r in out.rows}, chance=0.5,
                               n_test=out.n_test, seq_len=out.seq_len, curves=out.curves, steps=out.steps)

    return store_result(settings, f"necessity.order_task{'' if cls_token else '_nocls'}", compute, params, force,
                        device=device)
