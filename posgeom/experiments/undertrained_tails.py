r"""Under-trained tails of a learned table (claim S4, chapter "Where learned tables fail").

A row $p_i$ of a learned table receives a gradient only from the sequences that reach position
$i$: with padding masked out of attention and pooling, $\partial \mathcal L / \partial p_i = 0$
for every sequence of length $\le i$ (:func:`posgeom.models.evaluation.row_gradient_norms` shows it). When most training
sequences are short, the rows of the tail are updated by few examples; :func:`tails_study` trains a
table where 90 % of the sequences are shorter than $n/2$ and measures, per row, the number of
training sequences that reach it ($N_i$), how far it moved from its initialisation
$\lVert p_i^{(T)} - p_i^{(0)}\rVert$, the accuracy on sequences whose decisive marker sits in
the head or in the tail, and the similarity of neighbouring rows in each part. The settings are
``CONFIGS[scale].tails`` of :mod:`posgeom.experiments.extrapolation`.
"""

from __future__ import annotations

import numpy as np

from ..config import resolve_device, settings_or_default as _settings
from ..geometry.tables import cosine_similarity_matrix
from ..models.tasks import (
    marker_split_accuracy, order_task_data, position_table_of, tiny_encoder_config, train_order_model,
)
from ..models.threads import torch_threads
from ..registry import Result
from .extrapolation import CONFIGS, TailsOptions
from .settings import ModelShape, as_params, store_result

__all__ = ["tail_geometry", "tails_study", "run_undertrained_tails"]

#: The two length distributions: the share of training sequences shorter than n/2 (None: uniform lengths).
CONDITIONS = {"skewed": "short_fraction", "uniform": None}


def tail_geometry(P, boundary: int) -> dict[str, float]:
    """Mean cosine similarity of neighbouring rows of ``P`` (n, d) before and after ``boundary``."""
    C = cosine_similarity_matrix(P)
    nb = np.diagonal(C, 1)
    return {"neighbour_cos_head": float(nb[: boundary - 1].mean()), "neighbour_cos_tail": float(nb[boundary:].mean())}


def _tails_condition(c: TailsOptions, shape: ModelShape, frac, eval_task, seeds, *, data_seed, device, bar):
    """One length distribution: its reach, per-seed rows, movements and tables."""
    n, half, t = c.n_positions, c.n_positions // 2, c.train
    task = order_task_data(c.n_train, n, c.vocab_size, kind=c.kind, min_length=c.min_length, seed=data_seed,
                           short_fraction=frac)
    # N_i = #{sequences with length > i}
    reach = (task.lengths[:, None] > np.arange(n)[None, :]).sum(axis=0)
    rows = {k: [] for k in ("accuracy_head", "accuracy_tail", "neighbour_cos_head", "neighbour_cos_tail",
                            "movement_head", "movement_tail")}
    mv, fin, ini = [], [], []
    from ..models.encoder import build_model

    for seed in seeds:
        config = tiny_encoder_config(vocab_size=task.vocab_size, max_len=n, position="learned",
                                     position_options={"init": "normal", "sigma": 0.02}, **as_params(shape))
        model = build_model(config, "classification", seed=seed)
        P0 = position_table_of(model)
        model, _ = train_order_model(task.data, config=config, model=model, seed=seed, device=device,
                                     steps=t.steps, batch_size=t.batch_size, lr=t.lr,
                                     weight_decay=t.weight_decay, warmup_ratio=t.warmup_ratio)
        model.to("cpu")
        PT = position_table_of(model)
        # ||p_i(T) - p_i(0)||
        move = np.linalg.norm(PT - P0, axis=1)
        acc = marker_split_accuracy(model, eval_task, half)
        geo_ = tail_geometry(PT, half)
        rows["accuracy_head"].append(acc["head"])
        rows["accuracy_tail"].append(acc["tail"])
        rows["neighbour_cos_head"].append(geo_["neighbour_cos_head"])
        rows["neighbour_cos_tail"].append(geo_["neighbour_cos_tail"])
        rows["movement_head"].append(float(move[:half].mean()))
        rows["movement_tail"].append(float(move[half:].mean()))
        mv.append(move)
        fin.append(PT)
        ini.append(P0)
        bar.update(1)
    summary = {**rows, "frac_long": float(np.mean(task.lengths >= half)), "n_train": int(len(task.lengths))}
    return reach, summary, mv, fin, ini


def tails_study(c: TailsOptions, shape: ModelShape, seeds, *, data_seed: int = 0, device: str = "cpu") -> tuple[dict, dict]:
    """Train learned tables on skewed and on uniform lengths; evaluate on sequences of exactly ``n`` tokens.

    Returns
    -------
    values, arrays : dict
        As :func:`run_undertrained_tails` stores them.
    """
    from ..progress import tqdm

    n, half = c.n_positions, c.n_positions // 2
    values = {"conditions": list(CONDITIONS), "seeds": list(seeds), "boundary": half}
    reach, movement, finals, initials = [], [], [], []
    eval_task = order_task_data(c.n_eval, n, c.vocab_size, kind=c.kind, min_length=n, seed=data_seed + 1000)
    with tqdm(total=len(CONDITIONS) * len(seeds), desc="under-trained tails", unit="run") as bar:
        for cond, frac_field in CONDITIONS.items():
            frac = None if frac_field is None else getattr(c, frac_field)
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


def run_undertrained_tails(settings=None, *, force: bool = False, seeds=None) -> Result:
    r"""Learned tables trained where 90 % of the sequences are shorter than $n/2$, against a control
    with lengths uniform on ``[min_length, n]`` (S4), by :func:`tails_study`, stored.

    Returns
    -------
    Result
        values: ``conditions`` (``["skewed", "uniform"]``), ``seeds``, ``boundary`` ($n/2$), per
        condition lists over seeds of ``accuracy_head`` / ``accuracy_tail`` (sequences of length
        $n$ whose later marker is before / after the boundary), ``neighbour_cos_head`` /
        ``neighbour_cos_tail`` of the final table, ``movement_head`` / ``movement_tail`` (mean row
        movement), and ``frac_long`` (share of training sequences of length at least $n/2$);
        arrays: ``reach`` (conditions, n) — training sequences reaching each position, ``movement``
        (conditions, seeds, n) — $\lVert p_i^{(T)} - p_i^{(0)}\rVert$, ``tables_final``
        (conditions, seeds, n, d), ``tables_initial`` (conditions, seeds, n, d).
    """
    settings = _settings(settings)
    cfg = CONFIGS[settings.scale]
    seeds = tuple(cfg.tails.seeds if seeds is None else seeds)
    device = resolve_device(settings.device)

    def compute():
        with torch_threads(cfg.threads if device == "cpu" else None):
            return tails_study(cfg.tails, cfg.model, seeds, data_seed=settings.seed, device=device)

    params = {"tails": {**as_params(cfg.tails), "seeds": list(seeds)}, "model": as_params(cfg.model),
              "data_seed": settings.seed, "threads": cfg.threads}
    return store_result(settings, "learned_tails", compute, params, force, device=device, model="tiny encoder (posgeom.models), order task")


