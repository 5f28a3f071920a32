r"""Chapter IV, part 2 — where learned position tables fail: the chapter's settings and the extrapolation study.

The under-trained tails (S4) are :mod:`posgeom.experiments.undertrained_tails` and masked language
modelling on IMDB (S6) is :mod:`posgeom.experiments.extrapolation_mlm`; both read their settings here.
A table of $N_{max}$ rows has no vector at position $N_{max}$ (S5,
:class:`posgeom.models.positional.PositionLimitError`); the heuristics past that wall
(:meth:`posgeom.models.positional.LearnedPositional.extended`) are compared with a table trained at the
target length and with encodings that have no wall, all trained at $L$ and evaluated at $L$, $1.5L$, $2L$.
The MDS table needs no heuristic: its rows come from the unlabelled corpus up to the longest length.
An encoder's ALiBi, $-m_h |i - j|$, is symmetric, so on the balanced order task (every sequence paired
with its reversal) it is at chance at every length (:func:`posgeom.models.equivariance.reversal_gap`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace

import numpy as np

from ..config import resolve_device, settings_or_default as _settings
from ..encodings.identifiers import Encoding
from ..registry import Result
from ..registry.typed import stored
from ..models.equivariance import reversal_gap
from ..models.tasks import (
    extend_model, marker_split_accuracy, order_population_geometry, order_task_data, tiny_encoder_config,
    train_order_model,
)
from ..models.threads import torch_threads
from ..validation import check_choices
from .settings import AdamWTraining, ModelShape, OrderTask, as_params, by_scale, store_result

__all__ = [
    "CONFIGS", "ExtrapolationSettings", "Finetune", "TailsOptions", "OrderExtrapolation",
    "MLMExtrapolation", "StudyPlan", "study_plan", "HEURISTICS", "ORDER_ENCODINGS", "MLM_ENCODINGS",
    "method_names", "position_options", "learned_methods", "train_and_score", "Scores", "ExtrapolationRecord",
    "ExtrapolationOrderRecord", "order_extrapolation", "run_extrapolation_order",
]

#: The extrapolation heuristics of the second seed (names of LearnedPositional.extended's methods).
HEURISTICS = ("reuse_last", "interpolate", "new_rows")
#: Encodings trained at length L and compared on the order task / on MLM.
ORDER_ENCODINGS = (Encoding.LEARNED, Encoding.SINUSOIDAL, Encoding.ROPE, Encoding.ALIBI, Encoding.MDS, Encoding.NONE)
MLM_ENCODINGS = ORDER_ENCODINGS


# per-scale settings


@dataclass(frozen=True)
class Finetune:
    """The fine-tune of the ``new_rows`` heuristic: steps and learning rate (the rest as the training)."""

    steps: int = 80
    lr: float = 1e-3


@dataclass(frozen=True)
class TailsOptions(OrderTask):
    """S4: the order task at ``n_positions``, ``short_fraction`` of the training sequences shorter than n/2."""

    n_positions: int = 32
    n_eval: int = 2000
    short_fraction: float = 0.9
    #: S4's interval is over seeds: at least posgeom.geometry.MIN_SEEDS of them
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    train: AdamWTraining = field(default_factory=AdamWTraining)


@dataclass(frozen=True)
class OrderExtrapolation:
    """S6 on the order task: trained at ``L``, evaluated at ``round(f L)`` for each factor."""

    L: int = 16
    vocab_size: int = 20
    n_train: int = 4000
    n_eval: int = 1000
    min_length: int = 2
    kind: str = "marker_order"
    factors: tuple[float, ...] = (1.0, 1.5, 2.0)
    seeds: tuple[int, ...] = (0, 1, 2)
    encodings: tuple[str, ...] = ORDER_ENCODINGS[:-1]
    train: AdamWTraining = field(default_factory=AdamWTraining)
    finetune: Finetune = field(default_factory=Finetune)
    target_baseline: bool = True
    target_factors: tuple[float, ...] = (2.0,)


@dataclass(frozen=True)
class MLMExtrapolation:
    """S6 with masked language modelling on IMDB windows (``top_k`` word pieces kept)."""

    L: int = 32
    top_k: int = 2000
    n_train: int = 3000
    n_eval: int = 300
    factors: tuple[float, ...] = (1.0, 1.5, 2.0)
    seeds: tuple[int, ...] = (0, 1, 2)
    encodings: tuple[str, ...] = MLM_ENCODINGS
    mds_rank: int = 16
    # 90 steps at quick (fine-tune 20): enough for a model of this size to reach the unigram loss (it learns
    # word frequencies, and no positions at any length of training this size affords: the row stays
    # inconclusive), so the 120 steps run before bought nothing; the paper configuration trains 2,500 steps
    train: AdamWTraining = AdamWTraining(steps=90)
    finetune: Finetune = Finetune(steps=20, lr=1e-3)
    target_baseline: bool = False
    target_factors: tuple[float, ...] = (2.0,)


@dataclass(frozen=True)
class ExtrapolationSettings:
    """The chapter's options (defaults: ``quick``); ``threads`` caps torch's CPU threads (None: all)."""

    model: ModelShape = ModelShape(d_model=32, n_layers=2, n_heads=2, d_ff=64)
    tails: TailsOptions = field(default_factory=TailsOptions)
    order: OrderExtrapolation = field(default_factory=OrderExtrapolation)
    mlm: MLMExtrapolation = field(default_factory=MLMExtrapolation)
    threads: int | None = 1


#: ``quick``: width-32 two-layer encoders, a few hundred steps, 3 seeds (5 for the
#: under-trained tails, whose interval is over seeds); ``paper``: width 128, four
#: layers, thousands of steps, 5 seeds on the order task (a GPU helps).
CONFIGS = by_scale(
    ExtrapolationSettings(),
    # paper steps and batch sized by posgeom.costmodel.PROPOSED (the reason of each change is there)
    model=ModelShape(d_model=128, n_layers=4, n_heads=4, d_ff=512),
    tails=dict(n_positions=128, vocab_size=100, n_train=40_000, n_eval=8000, seeds=(0, 1, 2, 3, 4),
               train=dict(steps=4000, batch_size=64, lr=1e-3)),
    order=dict(L=64, vocab_size=100, n_train=40_000, n_eval=4000, seeds=(0, 1, 2, 3, 4), encodings=ORDER_ENCODINGS,
               train=dict(steps=1000, batch_size=256, lr=1e-3), finetune=dict(steps=100, lr=3e-4),
               target_factors=(1.5, 2.0)),
    mlm=dict(L=128, top_k=30_000, n_train=20_000, n_eval=2000, mds_rank=64,
             train=dict(steps=2500, batch_size=256, lr=5e-4), finetune=dict(steps=250, lr=2e-4),
             target_baseline=True, target_factors=(1.5, 2.0)),
    threads=None,
)


@dataclass(frozen=True)
class StudyPlan:
    """What an extrapolation study runs (:func:`study_plan`).

    ``lengths`` is ``round(f L)`` per factor, ``n_max`` the longest, ``methods`` the rows of the table
    (:func:`method_names`); ``n_runs`` counts trainings: each encoding and seed once, and for ``learned`` a
    fine-tune per longer length and a model trained at each target length when ``target_baseline``.
    """

    encodings: tuple
    seeds: tuple
    L: int
    factors: tuple
    lengths: list
    n_max: int
    methods: list
    n_runs: int

    def stored(self) -> dict:
        """The values a study stores of its plan (:class:`ExtrapolationRecord`)."""
        return {"methods": self.methods, "factors": list(self.factors), "lengths": self.lengths,
                "seeds": list(self.seeds), "L": self.L}

    def table(self, scores: Scores) -> np.ndarray:
        """``scores`` as an array (methods, factors, seeds), NaN where not run."""
        return np.asarray([[[np.nan if x is None else x for x in scores[k][str(f)]] for f in self.factors]
                           for k in self.methods], dtype=np.float64)


def study_plan(block, encodings=None, seeds=None, valid=ORDER_ENCODINGS) -> StudyPlan:
    """The :class:`StudyPlan` of an :class:`OrderExtrapolation` or :class:`MLMExtrapolation` block, with
    ``encodings`` and ``seeds`` (default: the block's) checked against ``valid``."""
    encodings = check_choices(block.encodings if encodings is None else encodings, "encoding", valid)
    seeds = tuple(block.seeds if seeds is None else seeds)
    L = block.L
    factors = tuple(float(f) for f in block.factors)
    lengths = [int(round(f * L)) for f in factors]
    longer = [m_ for m_ in lengths if m_ > L]
    n_target = len([m_ for f, m_ in zip(factors, lengths) if m_ > L and f in block.target_factors])
    n_runs = len(encodings) * len(seeds) + ("learned" in encodings) * len(seeds) * (
        len(longer) + n_target * int(block.target_baseline))
    return StudyPlan(encodings, seeds, L, factors, lengths, max(lengths), method_names(encodings, block.target_baseline),
                     n_runs)


def method_names(encodings, target_baseline: bool = True) -> list[str]:
    """The rows of an extrapolation table: ``learned`` expands into its heuristics (and ``learned:target``)."""
    out = []
    for name in encodings:
        if name == "learned":
            out += [f"learned:{h}" for h in HEURISTICS]
            if target_baseline:
                out.append("learned:target")
        else:
            out.append(name)
    return out


def position_options(name: str, mds_table=None) -> dict:
    """The position options of an encoding in the studies: N(0, 0.02²) rows for ``learned``, the MDS table
    for ``mds``, the defaults otherwise."""
    if name == "learned":
        return {"init": "normal", "sigma": 0.02}
    if name == "mds":
        return {"table": mds_table}
    return {}


def learned_methods(model, length: int, L: int, factor: float, *, block, seed: int, finetune, train_target):
    """The learned table's ``(method, model)`` pairs at one evaluation ``length``, built lazily.

    At ``length <= L`` every method is the trained model itself; beyond, each heuristic extends the table
    (``new_rows`` then goes through ``finetune(model, length)``), and ``"learned:target"`` is
    ``train_target(length)`` at ``block.target_factors`` and None at the other factors.
    """
    for h in HEURISTICS:
        if length <= L:
            yield f"learned:{h}", model
            continue
        ext = extend_model(model, length, h, seed=seed)
        yield f"learned:{h}", finetune(ext, length) if h == "new_rows" else ext
    if block.target_baseline:
        if length <= L:
            yield "learned:target", model
        elif factor not in block.target_factors:
            yield "learned:target", None
        else:
            yield "learned:target", train_target(length)


def train_and_score(plan: StudyPlan, block, *, shape: ModelShape, vocab_size: int, mds_table, fit, record,
                    desc: str) -> dict[str, list]:
    """Train every encoding and seed of ``plan`` at ``L`` and score it at every length; the trained models by encoding.

    ``fit(length, seed, config, model=None, finetune=False)`` trains on sequences of ``length`` (continuing
    ``model`` with ``block.finetune`` when ``finetune``); ``record(method, factor, length, model, seed)`` scores a
    model of :func:`learned_methods` (None: not run) or of another encoding.
    """
    from ..progress import tqdm
    L, models = plan.L, {}
    with tqdm(total=plan.n_runs, desc=desc, unit="run") as bar:
        def counted(*args, **kw):
            out = fit(*args, **kw)
            bar.update(1)
            return out.to("cpu")

        for name in plan.encodings:
            # the MDS table holds every position up to the longest evaluated length
            config = tiny_encoder_config(vocab_size=vocab_size, max_len=plan.n_max if name == "mds" else L,
                                         position=name, position_options=position_options(name, mds_table),
                                         **as_params(shape))
            models[name] = []
            for seed in plan.seeds:
                model = counted(L, seed, config)
                models[name].append(model)
                for f, m_ in zip(plan.factors, plan.lengths):
                    pairs = [(name, model)] if name != "learned" else learned_methods(
                        model, m_, L, f, block=block, seed=seed,
                        finetune=lambda ext, n, s=seed: counted(n, s, ext.config, ext, finetune=True),
                        train_target=lambda n, s=seed, c=config: counted(n, s, replace(c, max_len=n)))
                    for method, mod in pairs:
                        record(method, f, m_, mod, seed)
    return models


# extrapolation on the order task


#: Scores as an extrapolation study stores them: per method and length factor (as text), one per seed (None: none).
Scores = dict[str, dict[str, list[float | None]]]


@dataclass(frozen=True, kw_only=True)
class ExtrapolationRecord:
    """What both extrapolation studies store first: their plan (:meth:`StudyPlan.stored`)."""

    methods: list[str]
    factors: list[float]
    lengths: list[int]            # round(f L) per factor
    seeds: list[int]
    L: int


@dataclass(frozen=True, kw_only=True)
class ExtrapolationOrderRecord(ExtrapolationRecord):
    """A stored :func:`run_extrapolation_order`; accuracies beyond ``L`` are None where no sequence qualifies."""

    accuracy: Scores
    loss: Scores
    accuracy_beyond: Scores       # the later marker at or beyond L
    accuracy_both_beyond: Scores  # both markers at or beyond L - 1, the positions reuse_last merges
    stress_at_max: dict[str, list[float]]  # per method and seed: scale-free stress at the longest length
    alibi_reversal_gap: float | None = stored("alibi_reversal_gap", omit_none=True, default=None)
    none_reversal_gap: float | None = stored("none_reversal_gap", omit_none=True, default=None)
    mds_rank: int
    accuracy_table: np.ndarray = stored("accuracy")  # (methods, factors, seeds), NaN where not run
    mds_table: np.ndarray


class _OrderScores:
    """Accuracies and losses per method and factor (lists over seeds), and the stress at the longest length."""

    KEYS = ("accuracy", "loss", "accuracy_beyond", "accuracy_both_beyond")

    def __init__(self, methods, factors, L: int, n_max: int, D_max):
        self.tables = {key: {k: {str(f): [] for f in factors} for k in methods} for key in self.KEYS}
        self.stress_at_max = {k: [] for k in methods}
        self.L, self.n_max, self.D_max = L, n_max, D_max

    def record(self, method, f, length, model, task):
        from .. import geometry as geo
        if model is None:
            for table in self.tables.values():
                table[method][str(f)].append(None)
            return
        split = marker_split_accuracy(model, task, self.L, both_from=self.L - 1)
        t = self.tables
        t["accuracy"][method][str(f)].append(split["accuracy"])
        t["loss"][method][str(f)].append(split["loss"])
        t["accuracy_beyond"][method][str(f)].append(None if np.isnan(split["tail"]) else split["tail"])
        t["accuracy_both_beyond"][method][str(f)].append(None if np.isnan(split["both"]) else split["both"])
        if length == self.n_max:
            # stress of the positional geometry the model uses at the longest length
            Dhat = model.distance_matrix(self.n_max)
            self.stress_at_max[method].append(geo.stress(self.D_max, Dhat, "scale_free", as_distances=True))


def order_extrapolation(options: OrderExtrapolation, shape: ModelShape, plan: StudyPlan, *, data_seed: int = 0,
                        device: str = "cpu") -> tuple[dict, dict]:
    """Train every encoding of ``plan`` at ``L`` on the order task and evaluate it at every length of ``plan``.

    Training data come from ``data_seed`` (``data_seed + m`` at a longer length ``m``), evaluation data of
    exactly length ``m`` from ``data_seed + 1000 + m``. Returns ``(values, arrays)``, the dicts
    :func:`run_extrapolation_order` stores.
    """
    o, L, v = options, plan.L, options.vocab_size
    task = dict(kind=o.kind, min_length=o.min_length)
    geom = order_population_geometry(plan.n_max, v, **task)
    mds_table = geom["mds"]
    train_task = order_task_data(o.n_train, L, v, seed=data_seed, **task)
    evals = {m_: order_task_data(o.n_eval, m_, v, kind=o.kind, min_length=m_, seed=data_seed + 1000 + m_)
             for m_ in plan.lengths}
    train_at = functools.cache(lambda m_: order_task_data(o.n_train, m_, v, seed=data_seed + m_, **task))
    scores = _OrderScores(plan.methods, plan.factors, L, plan.n_max, geom["D"])

    def fit(length, seed, config, model=None, finetune=False):
        data = train_task if length == L else train_at(length)
        train = {**as_params(o.train), **(as_params(o.finetune) if finetune else {})}
        return train_order_model(data.data, config=config, model=model, device=device, seed=seed, **train)[0]

    models = train_and_score(plan, o, shape=shape, vocab_size=train_task.vocab_size, mds_table=mds_table, fit=fit,
                             record=lambda method, f, m_, mod, seed: scores.record(method, f, m_, mod, evals[m_]),
                             desc="extrapolation (order task)")
    gaps = {f"{name}_reversal_gap": max(reversal_gap(mod, evals[L].data) for mod in models[name])
            for name in (Encoding.ALIBI, Encoding.NONE) if name in plan.encodings}
    t = scores.tables
    values = {**plan.stored(), **t, "stress_at_max": scores.stress_at_max, **gaps, "mds_rank": int(mds_table.shape[1])}
    arrays = {"accuracy": plan.table(t["accuracy"]), "mds_table": mds_table}
    return values, arrays


def run_extrapolation_order(settings=None, *, force: bool = False, encodings=None, seeds=None) -> Result:
    r"""Accuracy on the order task at $L$, $1.5L$, $2L$ of models trained at $L$ (S6), stored.

    Returns
    -------
    Result
        Of an :class:`ExtrapolationOrderRecord`; ``stress_at_max`` is against the task's exact geometry.
    """
    settings = _settings(settings)
    cfg = CONFIGS[settings.scale]
    plan = study_plan(cfg.order, encodings, seeds, ORDER_ENCODINGS)
    device = resolve_device(settings.device)

    def compute():
        with torch_threads(cfg.threads if device == "cpu" else None):
                values, arrays = order_extrapolation(cfg.order, cfg.model, plan, data_seed=settings.seed, device=device)
        return ExtrapolationOrderRecord(**values, accuracy_table=arrays["accuracy"], mds_table=arrays["mds_table"])

    params = {"order": {**as_params(cfg.order), "encodings": list(plan.encodings), "seeds": list(plan.seeds)},
              "model": as_params(cfg.model), "data_seed": settings.seed, "threads": cfg.threads}
    return store_result(settings, "learned_extrapolation_order", compute, params, force, device=device,
                        model="tiny encoder (posgeom.models), order task")
