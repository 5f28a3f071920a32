r"""Chapter IV, part 2 — where learned position tables fail (Part IV of the book).

**Under-trained tails (S4).** A row :math:`p_i` of a learned table receives a gradient only from the
sequences that reach position :math:`i`: with padding masked out of attention and pooling,
:math:`\partial \mathcal L / \partial p_i = 0` for every sequence of length :math:`\le i`. When most
training sequences are short, the rows of the tail are updated by few examples; the experiment trains a
table where 90 % of the sequences are shorter than :math:`n/2` and measures, per row, the number of
training sequences that reach it (:math:`N_i`), how far it moved from its initialisation
:math:`\lVert p_i^{(T)} - p_i^{(0)}\rVert`, the accuracy on sequences whose decisive marker sits in
the head or in the tail, and the similarity of neighbouring rows in each part.

**The N_max wall (S5).** A table of :math:`N_{max}` rows has no vector at position :math:`N_{max}`;
:class:`posgeom.models.positional.PositionLimitError` says so and lists the ways out.

**Extrapolation heuristics (S6)** (:meth:`posgeom.models.positional.LearnedPositional.extended`), for an
evaluation length :math:`m > N`:

* *reuse the last vector*: :math:`p'_i = p_{N-1}` for :math:`i \ge N`;
* *linear interpolation*: :math:`p'_i = (1 - t)\, p_{\lfloor s \rfloor} + t\, p_{\lceil s \rceil}`,
  :math:`s = i (N - 1)/(m - 1)`, :math:`t = s - \lfloor s \rfloor` (positions compressed into the trained range);
* *new rows and a short fine-tune*: rows :math:`N, \dots, m - 1` drawn from :math:`\mathcal N(0, \sigma^2)`,
  then ``finetune_steps`` steps of training on sequences of the target length.

They are compared with a learned table trained directly at the target length and with encodings that
have no wall — sinusoidal, RoPE, ALiBi — and with the MDS table of Algorithm 1, all trained at length
:math:`L` and evaluated at :math:`L`, :math:`1.5L` and :math:`2L`. The MDS table is fixed: its rows come
from the positional statistics of the *unlabelled* corpus up to the longest evaluated length (the
statistics exist there even though the model never trained on those positions), so it has rows beyond
:math:`L` without any heuristic. Two tasks: the balanced order task (accuracy) and masked language
modelling on IMDB windows (loss).

The ALiBi of an encoder is symmetric, :math:`-m_h |i - j|`: it cannot tell left from right, so on the
balanced order task (every sequence paired with its reversal, opposite label) it is at chance at every
length — a property of symmetric ALiBi, not of extrapolation (:func:`reversal_gap` measures it).
"""

from __future__ import annotations

import functools
from dataclasses import replace

import numpy as np

from ..config import resolve_device, settings_or_default as _settings
from ..registry import Registry, Result
from ..geometry.tables import cosine_similarity_matrix
from ..models.tasks import (
    extend_model, order_population_geometry, order_task_data, position_table_of, tiny_encoder_config,
    train_order_model,
)
from ..models.threads import torch_threads

__all__ = [
    "CONFIGS", "HEURISTICS", "ORDER_ENCODINGS", "MLM_ENCODINGS", "method_names",
    "reversal_gap", "marker_split_accuracy", "row_gradient_norms",
    "IMDBWindows", "imdb_windows", "mlm_loss_by_position", "train_mlm_model",
    "run_undertrained_tails", "run_extrapolation_order", "run_extrapolation_mlm",
]

#: The extrapolation heuristics of the second seed (names of LearnedPositional.extended's methods).
HEURISTICS = ("reuse_last", "interpolate", "new_rows")
#: Encodings trained at length L and compared on the order task / on MLM.
ORDER_ENCODINGS = ("learned", "sinusoidal", "rope", "alibi", "mds", "none")
MLM_ENCODINGS = ("learned", "sinusoidal", "rope", "alibi", "mds", "none")

CONFIGS: dict[str, dict] = {
    "quick": dict(
        model=dict(d_model=32, n_layers=2, n_heads=2, d_ff=64),
        tails=dict(n_positions=32, vocab_size=20, n_train=4000, n_eval=2000, short_fraction=0.9, min_length=2,
                   kind="marker_order", seeds=(0, 1, 2),
                   train=dict(steps=400, batch_size=32, lr=3e-3, weight_decay=0.01, warmup_ratio=0.1)),
        order=dict(L=16, vocab_size=20, n_train=4000, n_eval=1000, min_length=2, kind="marker_order",
                   factors=(1.0, 1.5, 2.0), seeds=(0, 1, 2), encodings=ORDER_ENCODINGS[:-1],
                   train=dict(steps=400, batch_size=32, lr=3e-3, weight_decay=0.01, warmup_ratio=0.1),
                   finetune=dict(steps=80, lr=1e-3), target_baseline=True, target_factors=(2.0,)),
        mlm=dict(L=32, top_k=2000, n_train=3000, n_eval=300, factors=(1.0, 1.5, 2.0), seeds=(0, 1, 2),
                 encodings=MLM_ENCODINGS, mds_rank=16,
                 train=dict(steps=120, batch_size=32, lr=3e-3, weight_decay=0.01, warmup_ratio=0.1),
                 finetune=dict(steps=30, lr=1e-3), target_baseline=False, target_factors=(2.0,)),
        threads=1,
    ),
    "paper": dict(
        model=dict(d_model=128, n_layers=4, n_heads=4, d_ff=512),
        tails=dict(n_positions=128, vocab_size=100, n_train=40_000, n_eval=8000, short_fraction=0.9, min_length=2,
                   kind="marker_order", seeds=(0, 1, 2, 3, 4),
                   train=dict(steps=4000, batch_size=64, lr=1e-3, weight_decay=0.01, warmup_ratio=0.1)),
        order=dict(L=64, vocab_size=100, n_train=40_000, n_eval=4000, min_length=2, kind="marker_order",
                   factors=(1.0, 1.5, 2.0), seeds=(0, 1, 2, 3, 4), encodings=ORDER_ENCODINGS,
                   train=dict(steps=4000, batch_size=64, lr=1e-3, weight_decay=0.01, warmup_ratio=0.1),
                   finetune=dict(steps=400, lr=3e-4), target_baseline=True, target_factors=(1.5, 2.0)),
        mlm=dict(L=128, top_k=30_000, n_train=20_000, n_eval=2000, factors=(1.0, 1.5, 2.0), seeds=(0, 1, 2),
                 encodings=MLM_ENCODINGS, mds_rank=64,
                 train=dict(steps=10_000, batch_size=64, lr=5e-4, weight_decay=0.01, warmup_ratio=0.1),
                 finetune=dict(steps=1000, lr=2e-4), target_baseline=True, target_factors=(1.5, 2.0)),
        threads=None,
    ),
}


def _plan(block: dict, encodings, seeds, valid) -> tuple:
    """What an extrapolation study runs, from its config ``block`` (``order`` or ``mlm``).

    Returns ``(encodings, seeds, L, factors, lengths, n_max, methods, n_runs)``: the lengths
    ``round(f L)`` tested, those past ``L``, the table's rows (:func:`method_names`) and the number of
    trainings (each encoding and seed once; for ``learned`` also a fine-tune per longer length, and a
    model trained at each target length when ``target_baseline``).
    """
    encodings = tuple(block["encodings"] if encodings is None else encodings)
    seeds = tuple(block["seeds"] if seeds is None else seeds)
    bad = sorted(set(encodings) - set(valid))
    if bad:
        raise ValueError(f"unknown encoding(s) {bad}; valid ones are {', '.join(valid)}")
    L = block["L"]
    factors = tuple(float(f) for f in block["factors"])
    lengths = [int(round(f * L)) for f in factors]
    longer = [m_ for m_ in lengths if m_ > L]
    n_target = len([m_ for f, m_ in zip(factors, lengths) if m_ > L and f in block["target_factors"]])
    n_runs = len(encodings) * len(seeds) + ("learned" in encodings) * len(seeds) * (
        len(longer) + n_target * int(block["target_baseline"]))
    methods = method_names(encodings, block["target_baseline"])
    return encodings, seeds, L, factors, lengths, max(lengths), methods, n_runs


def method_names(encodings, target_baseline: bool = True) -> list[str]:
    """The rows of an extrapolation table: ``learned`` expands into its heuristics (and the baseline).

    Returns
    -------
    list of str, e.g. ``["learned:reuse_last", "learned:interpolate", "learned:new_rows",
    "learned:target", "sinusoidal", ...]``.
    """
    out = []
    for name in encodings:
        if name == "learned":
            out += [f"learned:{h}" for h in HEURISTICS]
            if target_baseline:
                out.append("learned:target")
        else:
            out.append(name)
    return out


# ---------------------------------------------------------------------------------------------
# heuristics and diagnostics


def reversal_gap(model, data, batch_size: int = 256) -> float:
    r"""Largest change of a classifier's logits when each sequence is reversed (padding kept at the end).

    0 (up to rounding) for a model that cannot see direction: symmetric ALiBi, no positions.

    Parameters
    ----------
    data : TokenData with ``input_ids`` and ``attention_mask`` of shape (N, L).

    Returns
    -------
    float: :math:`\max |f(x) - f(\mathrm{rev}(x))|` over the batch entries.
    """
    import torch

    ids, mask = data.input_ids, data.attention_mask
    lengths = mask.sum(dim=1)
    # rev(x)_i = x_{len - 1 - i} for i < len
    idx = (lengths[:, None] - 1 - torch.arange(ids.shape[1])[None, :]).clamp(min=0)
    rev = torch.where(mask.bool(), torch.gather(ids, 1, idx), ids)
    gap = 0.0
    model.eval()
    with torch.no_grad():
        for s in range(0, ids.shape[0], batch_size):
            a = model(ids[s:s + batch_size], mask[s:s + batch_size]).logits
            b = model(rev[s:s + batch_size], mask[s:s + batch_size]).logits
            gap = max(gap, float((a - b).abs().max()))
    return gap


def marker_split_accuracy(model, task, boundary: int, both_from: int | None = None,
                          batch_size: int = 256) -> dict[str, float]:
    """Loss and accuracy on order-task sequences, overall and split by where their markers sit.

    Parameters
    ----------
    task : :class:`~posgeom.models.tasks.OrderTaskData`
    boundary : int
        ``head``: the later marker is before ``boundary``; ``tail``: at or after it.
    both_from : int, optional
        ``both``: both markers at or after ``both_from`` (default ``boundary``).

    Returns
    -------
    dict with ``loss`` (mean cross-entropy) and ``accuracy`` over all sequences, ``head``, ``tail`` and
    ``both`` accuracies (NaN where no sequence falls) and ``n_head``, ``n_tail``, ``n_both``.
    """
    import torch
    import torch.nn.functional as F

    both_from = boundary if both_from is None else int(both_from)
    later = task.marker_positions.max(axis=1)
    earlier = task.marker_positions.min(axis=1)
    data = task.data
    preds, losses = [], []
    model.eval()
    with torch.no_grad():
        for s in range(0, len(data), batch_size):
            logits = model(data.input_ids[s:s + batch_size], data.attention_mask[s:s + batch_size]).logits.float()
            preds.append(logits.argmax(-1).cpu().numpy())
            losses.append(F.cross_entropy(logits, data.labels[s:s + batch_size], reduction="none").cpu().numpy())
    correct = np.concatenate(preds) == data.labels.numpy()
    groups = {"head": later < boundary, "tail": later >= boundary, "both": earlier >= both_from}
    out = {"loss": float(np.concatenate(losses).mean()), "accuracy": float(correct.mean())}
    out.update({k: float(correct[g].mean()) if g.any() else float("nan") for k, g in groups.items()})
    out.update({f"n_{k}": int(g.sum()) for k, g in groups.items()})
    return out


# ---------------------------------------------------------------------------------------------
# under-trained tails


def _tail_geometry(P, boundary: int) -> dict[str, float]:
    C = cosine_similarity_matrix(P)
    nb = np.diagonal(C, 1)
    return {"neighbour_cos_head": float(nb[: boundary - 1].mean()), "neighbour_cos_tail": float(nb[boundary:].mean())}


def run_undertrained_tails(settings=None, *, force: bool = False, seeds=None) -> Result:
    r"""Learned tables trained where 90 % of the sequences are shorter than :math:`n/2`, against a control
    with lengths uniform on ``[min_length, n]`` (S4).

    Returns
    -------
    Result
        values: ``conditions`` (``["skewed", "uniform"]``), ``seeds``, ``boundary`` (:math:`n/2`), per
        condition lists over seeds of ``accuracy_head`` / ``accuracy_tail`` (sequences of length
        :math:`n` whose later marker is before / after the boundary), ``neighbour_cos_head`` /
        ``neighbour_cos_tail`` of the final table, ``movement_head`` / ``movement_tail`` (mean row
        movement), and ``frac_long`` (share of training sequences of length at least :math:`n/2`);
        arrays: ``reach`` (conditions, n) — training sequences reaching each position, ``movement``
        (conditions, seeds, n) — :math:`\lVert p_i^{(T)} - p_i^{(0)}\rVert`, ``tables_final``
        (conditions, seeds, n, d), ``tables_initial`` (conditions, seeds, n, d).
    """
    from ..progress import tqdm

    from ..models.encoder import build_model

    settings = _settings(settings)
    cfg = CONFIGS[settings.scale]
    c, m, t = cfg["tails"], cfg["model"], cfg["tails"]["train"]
    seeds = tuple(c["seeds"] if seeds is None else seeds)
    n, half = c["n_positions"], c["n_positions"] // 2
    device = resolve_device(settings.device)
    conditions = {"skewed": c["short_fraction"], "uniform": None}

    def compute():
        values = {"conditions": list(conditions), "seeds": list(seeds), "boundary": half}
        reach, movement, finals, initials = [], [], [], []
        eval_task = order_task_data(c["n_eval"], n, c["vocab_size"], kind=c["kind"], min_length=n,
                                    seed=settings.seed + 1000)
        with torch_threads(cfg["threads"] if device == "cpu" else None), \
                tqdm(total=len(conditions) * len(seeds), desc="under-trained tails", unit="run") as bar:
            for cond, frac in conditions.items():
                task = order_task_data(c["n_train"], n, c["vocab_size"], kind=c["kind"], min_length=c["min_length"],
                                       seed=settings.seed, short_fraction=frac)
                # N_i = #{sequences with length > i}
                reach.append((task.lengths[:, None] > np.arange(n)[None, :]).sum(axis=0))
                rows = {k: [] for k in ("accuracy_head", "accuracy_tail", "neighbour_cos_head", "neighbour_cos_tail",
                                        "movement_head", "movement_tail")}
                mv, fin, ini = [], [], []
                for seed in seeds:
                    config = tiny_encoder_config(vocab_size=task.vocab_size, max_len=n, position="learned",
                                                 position_options={"init": "normal", "sigma": 0.02}, **m)
                    model = build_model(config, "classification", seed=seed)
                    P0 = position_table_of(model)
                    model, _ = train_order_model(task.data, config=config, model=model, seed=seed, device=device,
                                                 steps=t["steps"], batch_size=t["batch_size"], lr=t["lr"],
                                                 weight_decay=t["weight_decay"], warmup_ratio=t["warmup_ratio"])
                    model.to("cpu")
                    PT = position_table_of(model)
                    # ||p_i(T) - p_i(0)||
                    move = np.linalg.norm(PT - P0, axis=1)
                    acc = marker_split_accuracy(model, eval_task, half)
                    geo_ = _tail_geometry(PT, half)
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
                values[cond] = {**rows, "frac_long": float(np.mean(task.lengths >= half)),
                                "n_train": int(len(task.lengths))}
                movement.append(mv)
                finals.append(fin)
                initials.append(ini)
        arrays = {"reach": np.asarray(reach), "movement": np.asarray(movement), "tables_final": np.asarray(finals),
                  "tables_initial": np.asarray(initials)}
        return values, arrays

    params = {"tails": {**c, "seeds": list(seeds)}, "model": m, "data_seed": settings.seed, "threads": cfg["threads"]}
    return Registry(settings.results_dir).run(
        "learned_tails", compute, params=params, scale=settings.scale, seed=settings.seed, device=device,
        model="tiny encoder (posgeom.models), order task", force=force,
    )


# ---------------------------------------------------------------------------------------------
# extrapolation on the order task


def _position_options(name: str, mds_table=None) -> dict:
    if name == "learned":
        return {"init": "normal", "sigma": 0.02}
    if name == "mds":
        return {"table": mds_table}
    return {}


def _order_models(encodings, seeds, o, m, L, n_max, train_task, mds_table, device, bar):
    """Train one model per (encoding, seed) at length L → dict name → list of models."""
    out = {}
    for name in encodings:
        out[name] = []
        for seed in seeds:
            # the MDS table holds every position up to the longest evaluated length
            max_len = n_max if name == "mds" else L
            config = tiny_encoder_config(vocab_size=train_task.vocab_size, max_len=max_len, position=name,
                                         position_options=_position_options(name, mds_table), **m)
            model, _ = train_order_model(train_task.data, config=config, seed=seed, device=device,
                                         **_train_kw(o["train"]))
            out[name].append(model.to("cpu"))
            bar.update(1)
    return out


def _train_kw(t: dict) -> dict:
    return {k: t[k] for k in ("steps", "batch_size", "lr", "weight_decay", "warmup_ratio")}


def run_extrapolation_order(settings=None, *, force: bool = False, encodings=None, seeds=None) -> Result:
    r"""Accuracy on the order task at :math:`L`, :math:`1.5L`, :math:`2L` for models trained at :math:`L` (S6).

    The learned table goes past its wall by each heuristic of :data:`HEURISTICS` (``new_rows`` followed by
    ``finetune["steps"]`` steps on sequences of the target length) and, as the reference the seed names,
    a learned table trained from scratch at the target length (``"learned:target"``, at the factors of
    ``target_factors``; ``None`` at the others). Sinusoidal, RoPE,
    ALiBi, MDS and no positions are evaluated at every length as trained. Evaluation sequences all have
    exactly the evaluated length.

    Returns
    -------
    Result
        values: ``methods``, ``factors``, ``lengths``, ``seeds``, ``accuracy`` / ``loss`` (method →
        factor-string → list over seeds), ``accuracy_beyond`` (method → factor → list: sequences whose
        later marker is at or beyond :math:`L`; ``None`` where there is none), ``accuracy_both_beyond``
        (both markers at or beyond :math:`L - 1`, the positions that share one vector under
        ``reuse_last``), ``stress_at_max`` (method → list over seeds: scale-free stress of the
        positional distances the model uses at the longest length against the task's exact Hellinger
        geometry there), ``alibi_reversal_gap`` and ``none_reversal_gap`` (:func:`reversal_gap`);
        arrays: ``accuracy`` (methods, factors, seeds), ``mds_table``.
    """
    from ..progress import tqdm

    from .. import geometry as geo

    settings = _settings(settings)
    cfg = CONFIGS[settings.scale]
    o, m = cfg["order"], cfg["model"]
    encodings, seeds, L, factors, lengths, n_max, methods, n_runs = _plan(o, encodings, seeds, ORDER_ENCODINGS)
    v = o["vocab_size"]
    device = resolve_device(settings.device)

    def compute():
        geom = order_population_geometry(n_max, v, kind=o["kind"], min_length=o["min_length"])
        mds_table, D_max = geom["mds"], geom["D"]
        train_task = order_task_data(o["n_train"], L, v, kind=o["kind"], min_length=o["min_length"], seed=settings.seed)
        evals = {m_: order_task_data(o["n_eval"], m_, v, kind=o["kind"], min_length=m_, seed=settings.seed + 1000 + m_)
                 for m_ in lengths}

        @functools.cache
        def train_at(m_):  # the training data at a longer length, built once for every seed and use
            return order_task_data(o["n_train"], m_, v, kind=o["kind"], min_length=o["min_length"],
                                   seed=settings.seed + m_)
        acc = {k: {str(f): [] for f in factors} for k in methods}
        loss = {k: {str(f): [] for f in factors} for k in methods}
        beyond = {k: {str(f): [] for f in factors} for k in methods}
        both = {k: {str(f): [] for f in factors} for k in methods}
        stress_max = {k: [] for k in methods}
        gaps = {}
        with torch_threads(cfg["threads"] if device == "cpu" else None), \
                tqdm(total=n_runs, desc="extrapolation (order task)", unit="run") as bar:
            models = _order_models(encodings, seeds, o, m, L, n_max, train_task, mds_table, device, bar)

            def record(method, f, m_, model):
                split = marker_split_accuracy(model, evals[m_], L, both_from=L - 1)
                acc[method][str(f)].append(split["accuracy"])
                loss[method][str(f)].append(split["loss"])
                beyond[method][str(f)].append(None if np.isnan(split["tail"]) else split["tail"])
                both[method][str(f)].append(None if np.isnan(split["both"]) else split["both"])
                if m_ == n_max:
                    # stress of the positional geometry the model uses at the longest length
                    Dhat = model.distance_matrix(n_max)
                    stress_max[method].append(geo.stress(D_max, Dhat, "scale_free", as_distances=True))

            def skip(method, f):
                for table in (acc, loss, beyond, both):
                    table[method][str(f)].append(None)

            for name in encodings:
                for s_i, seed in enumerate(seeds):
                    model = models[name][s_i]
                    for f, m_ in zip(factors, lengths):
                        if name != "learned":
                            record(name, f, m_, model)
                            continue
                        for h in HEURISTICS:
                            if m_ <= L:
                                record(f"learned:{h}", f, m_, model)
                                continue
                            ext = extend_model(model, m_, h, seed=seed)
                            if h == "new_rows":
                                ext, _ = train_order_model(train_at(m_).data, config=ext.config, model=ext, seed=seed,
                                                           device=device, **{**_train_kw(o["train"]), **o["finetune"]})
                                ext.to("cpu")
                                bar.update(1)
                            record(f"learned:{h}", f, m_, ext)
                        if o["target_baseline"]:
                            if m_ <= L:
                                record("learned:target", f, m_, model)
                            elif f not in o["target_factors"]:
                                skip("learned:target", f)
                            else:
                                config = replace(model.config, max_len=m_)
                                target, _ = train_order_model(train_at(m_).data, config=config, seed=seed, device=device,
                                                              **_train_kw(o["train"]))
                                record("learned:target", f, m_, target.to("cpu"))
                                bar.update(1)
            for name in ("alibi", "none"):
                if name in encodings:
                    gaps[f"{name}_reversal_gap"] = max(reversal_gap(mod, evals[L].data) for mod in models[name])
        values = {"methods": methods, "factors": list(factors), "lengths": lengths, "seeds": list(seeds), "L": L,
                  "accuracy": acc, "loss": loss, "accuracy_beyond": beyond, "accuracy_both_beyond": both,
                  "stress_at_max": stress_max, **gaps,
                  "mds_rank": int(mds_table.shape[1])}
        arrays = {"accuracy": np.asarray([[[np.nan if a is None else a for a in acc[k][str(f)]] for f in factors]
                                          for k in methods], dtype=np.float64),
                  "mds_table": mds_table}
        return values, arrays

    params = {"order": {**o, "encodings": list(encodings), "seeds": list(seeds)}, "model": m,
              "data_seed": settings.seed, "threads": cfg["threads"]}
    return Registry(settings.results_dir).run(
        "learned_extrapolation_order", compute, params=params, scale=settings.scale, seed=settings.seed, device=device,
        model="tiny encoder (posgeom.models), order task", force=force,
    )


# ---------------------------------------------------------------------------------------------
# masked language modelling on IMDB windows


class IMDBWindows:
    r"""Fixed-length windows of IMDB reviews for masked language modelling, with a reduced vocabulary.

    Reviews are tokenised by ``posgeom.corpora.stats.corpus_tokens`` (bert-base-uncased WordPiece,
    policy ``"model"``: ``[CLS]`` at position 0, 512 positions, ``<br />`` as spaces); only reviews longer
    than the longest window are kept, so every window of length :math:`m` is ``[CLS]`` followed by the
    first :math:`m - 1` word pieces (no ``[SEP]``, no padding). The vocabulary is reduced to the ``top_k``
    most frequent word pieces of the training windows: id 0 ``[PAD]`` (unused), 1 ``[CLS]``, 2 ``[MASK]``,
    3 every other word piece ("rare"), ``4 …`` the ``top_k`` kept ones in decreasing frequency.

    Attributes
    ----------
    train, eval : ndarray of shape (n_train, n_max) / (n_eval, n_max), int64
        Windows of the longest length, disjoint sets of reviews; shorter windows are their prefixes.
    vocab_size : int
        ``top_k + 4``.
    rare_fraction : float
        Share of the training word pieces mapped to the "rare" id.
    info : dict
        Provenance of the tokens (source, tokenizer, cache key).
    """

    PAD, CLS, MASK, RARE = 0, 1, 2, 3
    SPECIAL = (0, 1, 2)

    def __init__(self, train, eval, vocab_size, rare_fraction, info):
        self.train, self.eval = train, eval
        self.vocab_size, self.rare_fraction, self.info = int(vocab_size), float(rare_fraction), info

    @property
    def n_max(self) -> int:
        return int(self.train.shape[1])


def imdb_windows(settings=None, *, n_max: int, top_k: int, n_train: int, n_eval: int, seed: int = 0) -> IMDBWindows:
    """Build :class:`IMDBWindows` from the IMDB train split (see its docstring).

    Parameters
    ----------
    n_max : int
        Longest window (``<= 511``).
    top_k : int
        Word pieces kept in the vocabulary.
    n_train, n_eval : int
        Reviews for training and for evaluation (a seeded random split of the eligible ones).

    Returns
    -------
    IMDBWindows
    """
    from ..corpora.stats import corpus_tokens
    from ..corpora.tokenize import load_tokenizer

    settings = _settings(settings)
    if not 2 <= n_max <= 511:
        raise ValueError(f"n_max must lie in [2, 511]; got {n_max}")
    if top_k < 1:
        raise ValueError(f"top_k must be >= 1; got {top_k}")
    tc = corpus_tokens("imdb", "train", 512, special="model", data_dir=settings.data_dir, progress=False)
    eligible = np.flatnonzero(tc.lengths > n_max)
    if eligible.size < n_train + n_eval:
        raise ValueError(
            f"only {eligible.size} IMDB reviews are longer than {n_max} tokens; ask for at most that many "
            f"windows (n_train + n_eval = {n_train + n_eval}) or a shorter n_max"
        )
    rows = np.random.default_rng(seed).permutation(eligible)[: n_train + n_eval]
    X = tc.padded(pad_id=0)[rows, :n_max]
    train, ev = X[:n_train], X[n_train:]
    ids, counts = np.unique(train[:, 1:], return_counts=True)
    order = np.argsort(-counts, kind="stable")
    kept = ids[order][:top_k]
    mapping = np.full(tc.vocab_size, IMDBWindows.RARE, dtype=np.int64)
    mapping[kept] = np.arange(kept.size) + 4
    mapping[load_tokenizer().cls_token_id] = IMDBWindows.CLS  # the tokenizer corpus_tokens used
    rare = float(counts[order][top_k:].sum() / counts.sum())
    info = {k: tc.info.get(k) for k in ("corpus", "split", "tokenizer", "cache_key", "source")}
    return IMDBWindows(mapping[train], mapping[ev], kept.size + 4, rare, info)


def _mlm_train_config(t: dict, seed: int, device: str):
    from ..models.training import TrainConfig

    return TrainConfig(task="mlm", batch_size=t["batch_size"], max_steps=t["steps"], lr=t["lr"],
                       weight_decay=t["weight_decay"], warmup_ratio=t.get("warmup_ratio", 0.1), seed=seed,
                       device=device, progress=False, log_every=max(1, t["steps"]), mask_token_id=IMDBWindows.MASK,
                       special_token_ids=IMDBWindows.SPECIAL)


def train_mlm_model(windows: np.ndarray, *, config=None, model=None, train: dict, seed: int = 0, device: str = "cpu"):
    """Build (or continue) and train a masked LM on windows with :func:`posgeom.models.training.train`.

    Parameters
    ----------
    windows : ndarray of shape (N, m), ids of an :class:`IMDBWindows` vocabulary.
    config : EncoderConfig, used when ``model`` is None.
    train : dict with ``steps``, ``batch_size``, ``lr``, ``weight_decay`` (and ``warmup_ratio``).

    Returns
    -------
    model : EncoderForMaskedLM
    result : TrainResult
    """
    from ..models.encoder import build_model
    from ..models.training import TokenData
    from ..models.training import train as fit

    if model is None:
        model = build_model(config, "mlm", seed=seed)
    result = fit(model, TokenData(windows), _mlm_train_config(train, seed, device))
    return model, result


def mlm_loss_by_position(model, windows: np.ndarray, *, seed: int = 0, probability: float = 0.15,
                         batch_size: int = 128) -> tuple[np.ndarray, np.ndarray]:
    r"""Cross-entropy of a masked LM at each position, with BERT's 80/10/10 masking drawn once from ``seed``.

    Parameters
    ----------
    windows : ndarray of shape (N, m)

    Returns
    -------
    loss_sum : ndarray of shape (m,)
        :math:`\sum` of :math:`-\log p(x_i \mid \tilde x)` over the selected tokens at each position.
    count : ndarray of shape (m,)
        Number of selected tokens at each position.
    """
    import torch
    import torch.nn.functional as F

    from ..models.training import mask_tokens

    X = torch.as_tensor(np.asarray(windows), dtype=torch.long)
    gen = torch.Generator().manual_seed(int(seed))
    inputs, labels = mask_tokens(X, vocab_size=model.config.vocab_size, mask_token_id=IMDBWindows.MASK,
                                 special_token_ids=IMDBWindows.SPECIAL, probability=probability, generator=gen)
    m = X.shape[1]
    loss_sum, count = np.zeros(m), np.zeros(m)
    model.eval()
    with torch.no_grad():
        for s in range(0, X.shape[0], batch_size):
            h = model.encoder(inputs[s:s + batch_size])
            lab = labels[s:s + batch_size]
            sel = lab != -100
            if not bool(sel.any()):
                continue
            # -log p(x_i | x~) at every selected token
            ce = F.cross_entropy(model.logits(h[sel]).float(), lab[sel], reduction="none").numpy()
            pos = sel.nonzero()[:, 1].numpy()
            np.add.at(loss_sum, pos, ce)
            np.add.at(count, pos, 1)
    return loss_sum, count


def run_extrapolation_mlm(settings=None, *, force: bool = False, encodings=None, seeds=None) -> Result:
    r"""Masked-LM loss on IMDB windows of length :math:`L`, :math:`1.5L`, :math:`2L` for models trained at
    :math:`L` (S6), with the same methods as :func:`run_extrapolation_order`.

    The fine-tune of ``new_rows`` and the ``learned:target`` baseline (when ``target_baseline``, at the
    factors of ``target_factors``) train on windows of the target length from the same training reviews.
    The MDS table is classical MDS (rank ``mds_rank``) of the Hellinger
    geometry of the training windows' positions up to the longest evaluated length.

    Returns
    -------
    Result
        values: ``methods``, ``factors``, ``lengths``, ``seeds``, ``L``, ``loss`` (method → factor → list
        over seeds: mean cross-entropy over all masked tokens), ``loss_head`` / ``loss_beyond`` (tokens at
        positions :math:`< L` / :math:`\ge L`), ``vocab_size``, ``rare_fraction``, ``unigram_loss`` (the
        cross-entropy of the training unigram distribution on the evaluation tokens: a model that ignores
        context), ``data`` (provenance); arrays: ``loss`` (methods, factors, seeds), ``loss_by_position``
        (methods, seeds, n_max) at the longest length.
    """
    from ..progress import tqdm

    from .. import geometry as geo

    settings = _settings(settings)
    cfg = CONFIGS[settings.scale]
    c, m = cfg["mlm"], cfg["model"]
    encodings, seeds, L, factors, lengths, n_max, methods, n_runs = _plan(c, encodings, seeds, MLM_ENCODINGS)
    device = resolve_device(settings.device)

    def compute():
        win = imdb_windows(settings, n_max=n_max, top_k=c["top_k"], n_train=c["n_train"], n_eval=c["n_eval"],
                           seed=settings.seed)
        counts = geo.positional_counts(win.train, n_max, win.vocab_size)
        D = geo.hellinger_matrix(geo.positional_marginals(counts))
        mds_table = geo.classical_mds(D, min(c["mds_rank"], n_max, m["d_model"])).embedding
        # unigram reference: -mean log q(x), q the training frequencies of the maskable ids
        freq = np.bincount(win.train[:, 1:].ravel(), minlength=win.vocab_size).astype(np.float64)
        q = freq / freq.sum()
        ev_tok = win.eval[:, 1:L].ravel()
        unigram = float(-np.mean(np.log(np.maximum(q[ev_tok], 1e-12))))
        res = {k: {key: {str(f): [] for f in factors} for key in ("loss", "loss_head", "loss_beyond")} for k in methods}
        by_pos = {k: [] for k in methods}

        def record(method, f, m_, model, seed):
            s, n = mlm_loss_by_position(model, win.eval[:, :m_], seed=10_000 + seed)
            r = res[method]
            r["loss"][str(f)].append(float(s.sum() / n.sum()))
            r["loss_head"][str(f)].append(float(s[:L].sum() / n[:L].sum()))
            r["loss_beyond"][str(f)].append(float(s[L:].sum() / n[L:].sum()) if m_ > L else None)
            if m_ == n_max:
                by_pos[method].append(s / np.maximum(n, 1))

        with torch_threads(cfg["threads"] if device == "cpu" else None), \
                tqdm(total=n_runs, desc="extrapolation (IMDB MLM)", unit="run") as bar:
            for name in encodings:
                for seed in seeds:
                    max_len = n_max if name == "mds" else L
                    config = tiny_encoder_config(vocab_size=win.vocab_size, max_len=max_len, position=name,
                                                 position_options=_position_options(name, mds_table), **m)
                    model, _ = train_mlm_model(win.train[:, :L], config=config, train=c["train"], seed=seed,
                                               device=device)
                    model.to("cpu")
                    bar.update(1)
                    for f, m_ in zip(factors, lengths):
                        if name != "learned":
                            record(name, f, m_, model, seed)
                            continue
                        for h in HEURISTICS:
                            if m_ <= L:
                                record(f"learned:{h}", f, m_, model, seed)
                                continue
                            ext = extend_model(model, m_, h, seed=seed)
                            if h == "new_rows":
                                ext, _ = train_mlm_model(win.train[:, :m_], model=ext, seed=seed, device=device,
                                                         train={**c["train"], **c["finetune"]})
                                ext.to("cpu")
                                bar.update(1)
                            record(f"learned:{h}", f, m_, ext, seed)
                        if c["target_baseline"]:
                            if m_ <= L:
                                record("learned:target", f, m_, model, seed)
                            elif f not in c["target_factors"]:
                                for key in ("loss", "loss_head", "loss_beyond"):
                                    res["learned:target"][key][str(f)].append(None)
                            else:
                                target, _ = train_mlm_model(win.train[:, :m_], config=replace(config, max_len=m_),
                                                            train=c["train"], seed=seed, device=device)
                                record("learned:target", f, m_, target.to("cpu"), seed)
                                bar.update(1)
        values = {"methods": methods, "factors": list(factors), "lengths": lengths, "seeds": list(seeds), "L": L,
                  **{key: {k: res[k][key] for k in methods} for key in ("loss", "loss_head", "loss_beyond")},
                  "vocab_size": win.vocab_size, "rare_fraction": win.rare_fraction, "unigram_loss": unigram,
                  "data": {k: (str(v) if v is not None else None) for k, v in win.info.items()},
                  "n_train": int(win.train.shape[0]), "n_eval": int(win.eval.shape[0])}
        arrays = {"loss": np.asarray([[[np.nan if x is None else x for x in res[k]["loss"][str(f)]] for f in factors]
                                      for k in methods], dtype=np.float64),
                  "loss_by_position": np.asarray([by_pos[k] for k in methods]), "mds_table": mds_table}
        return values, arrays

    params = {"mlm": {**c, "encodings": list(encodings), "seeds": list(seeds)}, "model": m, "data_seed": settings.seed,
              "threads": cfg["threads"], "corpus": "imdb train (posgeom.corpora.corpus_tokens, 512, model policy)"}
    return Registry(settings.results_dir).run(
        "learned_extrapolation_mlm", compute, params=params, scale=settings.scale, seed=settings.seed, device=device,
        model="tiny encoder (posgeom.models), IMDB MLM", force=force,
    )


def row_gradient_norms(model, data) -> np.ndarray:
    r"""Norm of the loss gradient with respect to each row of a learned table,
    :math:`\lVert \partial\mathcal L / \partial p_i\rVert`.

    One forward and backward pass of the classification loss on all of ``data`` (no optimiser step; the
    model's gradients are cleared afterwards).

    Parameters
    ----------
    model : a posgeom classifier with an absolute positional table.
    data : TokenData with ``input_ids``, ``attention_mask`` (N, L) and ``labels`` (N,).

    Returns
    -------
    ndarray of shape (N_max,): zero for every row that no sequence of ``data`` reaches.
    """
    pos = model.positional
    if pos.kind != "absolute" or not hasattr(pos, "weight"):
        raise ValueError(f"row_gradient_norms needs a learned absolute table; the model uses {pos.name!r}")
    was = model.training
    model.eval()
    model.zero_grad(set_to_none=True)
    try:
        out = model(data.input_ids, data.attention_mask, labels=data.labels)
        out.loss.backward()
        grad = pos.weight.grad
        norms = np.zeros(pos.weight.shape[0]) if grad is None else grad.detach().norm(dim=1).cpu().double().numpy()
    finally:
        model.zero_grad(set_to_none=True)
        model.train(was)
    return norms
