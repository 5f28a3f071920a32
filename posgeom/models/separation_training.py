r"""Learned tables trained from scratch while their separation $\operatorname{sep}(P) = \min_{i \ne j} \|p_i - p_j\|$
(Theorem 4 of the paper) is recorded, raw and over the median pairwise distance.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import geometry as geo
from ..progress import tqdm
from . import evaluation as mlm_eval
from .mlm_inputs import MASK_ID
from .tasks import tiny_encoder_config
from .threads import torch_threads

__all__ = ["SeparationData", "SeparationRuns", "train_separation", "summarise_separation"]


@dataclass(frozen=True)
class SeparationData:
    """The training and held-out data of one separation run.

    Attributes
    ----------
    train, held : dict
        ``input_ids`` LongTensor (N, n), and ``attention_mask`` (real corpora) or ``labels`` (bag task).
    special_ids : tuple of int
        Ids never masked.
    facts : dict
        What the chapter reports about the data.
    """

    train: dict
    held: dict
    vocab_size: int
    special_ids: tuple
    n_positions: int
    facts: dict


@dataclass(frozen=True)
class SeparationRuns:
    """The records of :func:`train_separation`, one row per seed.

    Attributes
    ----------
    step : ndarray of shape (T,)
    separation, separation_normalized, median_distance, order_spearman : ndarray of shape (n_seeds, T)
    loss : ndarray of shape (n_seeds, steps)
    evals : list of dict
        Held-out loss and accuracy per seed.
    masked_loss : list of float
        :func:`posgeom.models.evaluation.masked_position_loss` per seed (MLM), else empty.
    final_distances : ndarray of shape (n_seeds, n, n)
        The trained table's distances at the end of each seed's run.
    """

    step: np.ndarray
    separation: np.ndarray
    separation_normalized: np.ndarray
    median_distance: np.ndarray
    order_spearman: np.ndarray
    loss: np.ndarray
    evals: list
    masked_loss: list
    final_distances: np.ndarray


def train_separation(data: SeparationData, *, task: str, init: str, weight_decay: float, seeds, shape: dict,
                     steps: int, batch_size: int, lr: float, every: int, device: str = "cpu",
                     threads: int | None = 1, progress: bool = True, desc: str = "separation",
                     padding: str = "full") -> SeparationRuns:
    r"""Train a learned table from scratch once per seed, recording its separation along training.

    Parameters
    ----------
    task : {"mlm", "bag"}
    init : {"normal", "tied"}
        Rows $\mathcal N(0, 0.02^2)$, or every row 0.
    shape : dict
        Keywords of :func:`~posgeom.models.tasks.tiny_encoder_config`.
    every : int
        The table's geometry is recorded every ``every`` steps.
    """
    from .callbacks import PositionGeometry
    from .encoder import build_model
    from .training import TrainConfig, train
    n = data.n_positions
    pos_opts = {"init": "table", "table": np.zeros((n, shape["d_model"]))} if init == "tied" else {"sigma": 0.02}
    line = np.abs(np.arange(n)[:, None] - np.arange(n)[None, :]).astype(np.float64)
    kind = "mlm" if task == "mlm" else "classification"
    rec_all, losses, evals, probes, finals = [], [], [], [], []
    for seed in tqdm(seeds, desc=desc, disable=not progress):
        config = tiny_encoder_config(vocab_size=data.vocab_size, max_len=n, position="learned",
                                     position_options=pos_opts, **shape)
        model = build_model(config, kind, seed=seed)
        tc = TrainConfig(task=kind, batch_size=batch_size, max_steps=steps, lr=lr,
                         weight_decay=weight_decay, seed=seed, device=device, progress=False, padding=padding,
                         mask_token_id=MASK_ID, special_token_ids=tuple(data.special_ids))
        # target |i - j|: the callback's Spearman says how much the table's geometry follows the order
        geom = PositionGeometry(every=every, target=line, normalizations=("scale_free",))
        train_data = (data.train["input_ids"], data.train.get("attention_mask"), data.train.get("labels"))
        eval_data = (data.held["input_ids"], data.held.get("attention_mask"), data.held.get("labels"))
        with torch_threads(threads, device):
            result = train(model, train_data, tc, callbacks=[geom], eval_data=eval_data)
        rec_all.append(geom.as_arrays())
        finals.append(model.distance_matrix(n))
        losses.append(np.asarray(result.losses))
        evals.append(result.eval)
        if task == "mlm":
            probes.append(mlm_eval.masked_position_loss(model, data.held["input_ids"], data.held.get("attention_mask"),
                                                        mask_id=MASK_ID, special_ids=tuple(data.special_ids),
                                                        seed=seed))
    stack = {k: np.asarray([r[k] for r in rec_all]) for k in ("separation", "separation_normalized",
                                                              "median_distance", "spearman")}
    return SeparationRuns(step=rec_all[-1]["step"], separation=stack["separation"],
                          separation_normalized=stack["separation_normalized"],
                          median_distance=stack["median_distance"], order_spearman=stack["spearman"],
                          loss=np.asarray(losses), evals=evals, masked_loss=probes,
                          final_distances=np.asarray(finals))


def _spread(x) -> dict:
    """:func:`posgeom.geometry.spread` of ``x``, the standard deviation stored as ``std``."""
    s = geo.spread(x)
    return dict(mean=s["mean"], std=s["sd"], min=s["min"], max=s["max"])


def summarise_separation(runs: SeparationRuns) -> dict:
    """The stored summary of :class:`SeparationRuns`: spreads over seeds of separation, loss and accuracy."""
    S, SN, MED, RHO = runs.separation, runs.separation_normalized, runs.median_distance, runs.order_spearman
    return dict(
        final=dict(raw=_spread(S[:, -1]), normalized=_spread(SN[:, -1]), median=_spread(MED[:, -1]),
                   order_spearman=_spread(RHO[:, -1]) if np.all(np.isfinite(RHO[:, -1])) else None),
        initial=dict(raw=_spread(S[:, 0]), normalized=_spread(SN[:, 0]), median=_spread(MED[:, 0])),
        peak_raw=_spread(S.max(axis=1)),
        eval_loss=_spread([e["loss"] for e in runs.evals]), eval_accuracy=_spread([e["accuracy"] for e in runs.evals]),
        masked_loss=_spread(runs.masked_loss) if runs.masked_loss else None,
    )
