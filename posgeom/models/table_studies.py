r"""Training studies of a learned position table on the order task, each a loop over variants and seeds.

Initialisations and embedding dropout (:func:`train_init_study`, S7–S9), dropout where the model can overfit
(:func:`train_dropout_study`, S9), and tables trained where most sequences are short (:func:`tails_study`, S4).
``shape`` is always the keywords of :func:`~posgeom.models.tasks.tiny_encoder_config`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import geometry as geo
from ..encodings.identifiers import Encoding
from ..geometry.tables import cosine_similarity_matrix
from ..progress import tqdm
from .tasks import (
    OrderTaskData, evaluate_order_model, learned_table_config, marker_split_accuracy, order_task_data,
    position_table_of, steps_to_threshold, tiny_encoder_config, train_order_model,
)
from .threads import torch_threads

__all__ = [
    "INITS", "InitRun", "InitStudy", "train_init_study", "DropoutRun", "train_dropout_study", "CONDITIONS",
    "tail_geometry", "tails_study",
]


#: The settings of :func:`~posgeom.models.tasks.train_order_model` that a study's ``training`` mapping holds.
_TRAINING = ("steps", "batch_size", "lr", "weight_decay", "warmup_ratio")


def _trained_table(data, config, *, seed: int, device: str, **training):
    """A model built from ``seed`` and trained on ``data``: the model (on the CPU), its training result and its
    position table before and after."""
    from .encoder import build_model
    model = build_model(config, "classification", seed=seed)
    P0 = position_table_of(model)
    model, result = train_order_model(data, config=config, model=model, seed=seed, device=device, **training)
    return model.to("cpu"), result, P0, position_table_of(model)


# initialisation and dropout (S7-S9)


#: Initialisations of a learned table compared by :func:`train_init_study`: name → position options.
INITS = {
    "normal_0.02": dict(init="normal", sigma=0.02),
    "normal_1": dict(init="normal", sigma=1.0),
    Encoding.SINUSOIDAL: dict(init=Encoding.SINUSOIDAL),
    Encoding.MDS: dict(init=Encoding.TABLE),  # table= the MDS of the task's geometry, filled in by the caller
}


@dataclass(frozen=True)
class InitRun:
    """One training run of the initialisation study (``steps_to_threshold`` is None when never reached); ``initial``
    and ``final``: its table against the task's geometry before and after training."""

    init: str
    dropout: float
    seed: int
    steps_to_threshold: int | None
    final_loss: float
    eval_loss: float
    eval_accuracy: float
    initial: geo.TableGeometry
    final: geo.TableGeometry
    relative_change: float


@dataclass(frozen=True)
class InitStudy:
    """The runs, the loss curves (variants, seeds, steps) and the tables before and after (variants, seeds, n, d)."""

    runs: list
    losses: np.ndarray
    tables_initial: np.ndarray
    tables_final: np.ndarray


def train_init_study(variants, seeds, geom: dict, train_set: OrderTaskData, eval_set: OrderTaskData, *,
                     shape: dict, steps: int, batch_size: int, lr: float, weight_decay: float, warmup_ratio: float,
                     loss_threshold: float, smooth: int, device: str = "cpu") -> InitStudy:
    """Train a small encoder with a learned table once per (initialisation, dropout) variant and seed.

    Parameters
    ----------
    variants : sequence of (str, float)
        ``(init, dropout)`` pairs, ``init`` a name of :data:`INITS`.
    geom : dict
        :func:`posgeom.models.tasks.order_population_geometry` of the task.
    steps, batch_size, lr, weight_decay, warmup_ratio
        As :func:`~posgeom.models.tasks.train_order_model`.
    loss_threshold, smooth
        Convergence: the first step whose running-mean loss over ``smooth`` steps falls below the threshold.
    """
    runs, losses, P0s, PTs = [], [], [], []
    D = geom["D"]
    with tqdm(total=len(variants) * len(seeds), desc="init study", unit="run") as bar:
        for name, p in variants:
            row_l, row_0, row_T = [], [], []
            for seed in seeds:
                opts = dict(INITS[name])
                if name == Encoding.MDS:
                    opts["table"] = geom[Encoding.MDS]
                config = tiny_encoder_config(vocab_size=train_set.vocab_size, max_len=train_set.data.input_ids.shape[1],
                                             position="learned", position_options=opts, **shape)
                model, res, P0, PT = _trained_table(train_set.data, config, seed=seed, device=device, steps=steps,
                                                    batch_size=batch_size, lr=lr, weight_decay=weight_decay,
                                                    warmup_ratio=warmup_ratio, embedding_dropout=p)
                ev = evaluate_order_model(model, eval_set.data)
                L = np.asarray(res.losses)
                runs.append(InitRun(
                    init=name, dropout=p, seed=seed,
                    steps_to_threshold=steps_to_threshold(L, loss_threshold, smooth),
                    final_loss=float(L[-smooth:].mean()), eval_loss=ev["loss"], eval_accuracy=ev["accuracy"],
                    initial=geo.table_geometry(P0, D), final=geo.table_geometry(PT, D),
                    relative_change=float(np.linalg.norm(PT - P0) / np.linalg.norm(P0)),
                ))
                row_l.append(L)
                row_0.append(P0)
                row_T.append(PT)
                bar.update(1)
            losses.append(row_l)
            P0s.append(row_0)
            PTs.append(row_T)
    return InitStudy(runs, np.asarray(losses), np.asarray(P0s), np.asarray(PTs))


@dataclass(frozen=True)
class DropoutRun:
    """One run: the dropout rate, the seed, loss and accuracy on the training and held-out sequences."""

    dropout: float
    seed: int
    train_loss: float
    train_accuracy: float
    eval_loss: float
    eval_accuracy: float
    gap: float


def train_dropout_study(order: dict, shape: dict, training: dict, dropouts, seeds, *, data_seed: int = 0,
                        device: str = "cpu") -> list[DropoutRun]:
    """Train the learned-table encoder once per dropout rate and seed on the small training set.

    Parameters
    ----------
    order : dict
        The order task: ``n_positions``, ``vocab_size``, ``n_train``, ``n_eval``, ``min_length``, ``kind``.
    training : dict
        ``steps``, ``batch_size``, ``lr``, ``weight_decay``, ``warmup_ratio`` and ``threads``.

    Returns
    -------
    list of DropoutRun
        Dropout-major.
    """
    o, t = order, training
    task = dict(kind=o["kind"], min_length=o["min_length"])
    train_set = order_task_data(o["n_train"], o["n_positions"], o["vocab_size"], seed=data_seed, **task)
    eval_set = order_task_data(o["n_eval"], o["n_positions"], o["vocab_size"], seed=data_seed + 1000, **task)
    config = learned_table_config(vocab_size=train_set.vocab_size, max_len=o["n_positions"], **shape)
    runs = []
    grid = [(float(p), s) for p in dropouts for s in seeds]
    with torch_threads(t["threads"] if device == "cpu" else None):
        for p, seed in tqdm(grid, desc="dropout study", unit="run"):
            model, _ = train_order_model(train_set.data, config=config, seed=seed, device=device, embedding_dropout=p,
                                         **{k: t[k] for k in _TRAINING})
            model.to("cpu")
            fit, held = evaluate_order_model(model, train_set.data), evaluate_order_model(model, eval_set.data)
            # generalisation gap: held-out loss - training loss
            runs.append(DropoutRun(dropout=p, seed=seed, train_loss=fit["loss"], train_accuracy=fit["accuracy"],
                                   eval_loss=held["loss"], eval_accuracy=held["accuracy"],
                                   gap=held["loss"] - fit["loss"]))
    return runs


# under-trained tails (S4)


#: The two length distributions: the share of training sequences shorter than n/2 (None: uniform lengths).
CONDITIONS = {"skewed": "short_fraction", "uniform": None}


def tail_geometry(P, boundary: int) -> dict[str, float]:
    """Mean cosine similarity of neighbouring rows of ``P`` (n, d) before and after ``boundary``."""
    C = cosine_similarity_matrix(P)
    nb = np.diagonal(C, 1)
    return {"neighbour_cos_head": float(nb[: boundary - 1].mean()), "neighbour_cos_tail": float(nb[boundary:].mean())}


def _tails_condition(c: dict, shape: dict, frac, eval_task, seeds, *, data_seed, device, bar):
    """One length distribution: its reach, per-seed rows, movements and tables."""
    n, half, t = c["n_positions"], c["n_positions"] // 2, c["train"]
    task = order_task_data(c["n_train"], n, c["vocab_size"], kind=c["kind"], min_length=c["min_length"],
                           seed=data_seed, short_fraction=frac)
    # N_i = #{sequences with length > i}
    reach = (task.lengths[:, None] > np.arange(n)[None, :]).sum(axis=0)
    rows = {k: [] for k in ("accuracy_head", "accuracy_tail", "neighbour_cos_head", "neighbour_cos_tail",
                            "movement_head", "movement_tail")}
    mv, fin, ini = [], [], []
    for seed in seeds:
        config = learned_table_config(vocab_size=task.vocab_size, max_len=n, **shape)
        model, _, P0, PT = _trained_table(task.data, config, seed=seed, device=device, **{k: t[k] for k in _TRAINING})
        # ||p_i(T) - p_i(0)||
        move = np.linalg.norm(PT - P0, axis=1)
        acc = marker_split_accuracy(model, eval_task, half)
        row = {"accuracy_head": acc["head"], "accuracy_tail": acc["tail"], **tail_geometry(PT, half),
               "movement_head": float(move[:half].mean()), "movement_tail": float(move[half:].mean())}
        for k, v in row.items():
            rows[k].append(v)
        mv.append(move)
        fin.append(PT)
        ini.append(P0)
        bar.update(1)
    summary = {**rows, "frac_long": float(np.mean(task.lengths >= half)), "n_train": int(len(task.lengths))}
    return reach, summary, mv, fin, ini


def tails_study(options: dict, shape: dict, seeds, *, data_seed: int = 0, device: str = "cpu") -> tuple[dict, dict]:
    """Train learned tables on skewed and on uniform lengths; evaluate on sequences of exactly ``n`` tokens.

    Parameters
    ----------
    options : dict
        The order task (with ``short_fraction``) and ``train``, the training settings.

    Returns
    -------
    values, arrays : dict
        As :func:`posgeom.experiments.undertrained_tails.run_undertrained_tails` stores them.
    """
    c = options
    n, half = c["n_positions"], c["n_positions"] // 2
    values = {"conditions": list(CONDITIONS), "seeds": list(seeds), "boundary": half}
    reach, movement, finals, initials = [], [], [], []
    eval_task = order_task_data(c["n_eval"], n, c["vocab_size"], kind=c["kind"], min_length=n, seed=data_seed + 1000)
    with tqdm(total=len(CONDITIONS) * len(seeds), desc="under-trained tails", unit="run") as bar:
        for cond, frac_field in CONDITIONS.items():
            frac = None if frac_field is None else c[frac_field]
            r, summary, mv, fin, ini = _tails_condition(c, shape, frac, eval_task, seeds, data_seed=data_seed,
                                                        device=device, bar=bar)
            values[cond] = summary
            reach.append(r)
            movement.append(mv)
            finals.append(fin)
            initials.append(ini)
    arrays = {"reach": np.asarray(reach), "movement": np.asarray(movement), "tables_final": np.asarray(finals),
              "tables_initial": np.asarray(initials)}
    return values, arrays
