r"""The small models of the chapters on learned tables: the order task as model inputs, a tiny encoder,
its training and evaluation, and the position table of a trained model (read, or extended past its wall).

The order task (which of two markers comes first) has an exactly known population geometry, so a table
trained on it can be compared with the table Algorithm 1 would give.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace

import numpy as np

from ..validation import check_positive_int

__all__ = [
    "OrderTaskData", "order_task_data", "order_population_geometry", "tiny_encoder_config", "learned_table_config",
    "set_embedding_dropout", "train_order_model", "train_mlm_model", "evaluate_order_model", "steps_to_threshold",
    "position_table_of", "extend_model", "bag_labels", "marker_split_accuracy",
    "OrderTaskRow", "OrderTaskOutcome", "model_label", "order_task_tensors", "train_order_task",
]


# the synthetic order task as model inputs


@dataclass(frozen=True)
class OrderTaskData:
    """The balanced order task of :func:`posgeom.corpora.synthetic.order_task` as model inputs.

    Token ``w`` becomes id ``w + 1`` (``w + 2`` when id 1 is ``[CLS]``); padding becomes id 0, mask 0.

    Attributes
    ----------
    data : posgeom.models.batches.TokenData
        ``input_ids`` (N, n_positions), ``attention_mask`` (N, n_positions), ``labels`` (N,).
    lengths : ndarray of shape (N,), int64
    marker_positions : ndarray of shape (N, 2), int64
        Columns of ``input_ids`` holding markers A and B.
    vocab_size : int
        The model's vocabulary.
    """

    data: object
    lengths: np.ndarray
    marker_positions: np.ndarray
    vocab_size: int


def _order_corpus(n_sequences, n_positions, vocab_size, kind, min_length, seed):
    from ..corpora.synthetic import order_task
    return order_task(n_sequences, n_positions, vocab_size, kind=kind, min_length=min_length, seed=seed)


def order_task_data(n_sequences: int, n_positions: int, vocab_size: int, *, kind: str = "marker_order",
                    min_length: int | None = 2, seed: int = 0, short_fraction: float | None = None,
                    width: int | None = None, cls_token: bool = False, reserve_cls: bool = False) -> OrderTaskData:
    r"""Model inputs for the order task, optionally with most sequences short (under-trained tails).

    Parameters
    ----------
    n_sequences : int
        Even (sequences come in reversed pairs).
    n_positions : int
        Longest sequence $n$; lengths are uniform on ``[min_length, n]`` (``None``: all of length ``n``).
    vocab_size : int
        Corpus vocabulary $v$ (markers are ``v - 2`` and ``v - 1``).
    kind : {"marker_order", "marker_position"}
    short_fraction : float in (0, 1), optional
        That fraction of the sequences is shorter than ``n/2``, the rest at least ``n/2`` long.
    width : int, optional
        Columns of the arrays (default ``n_positions``; larger pads on the right).
    cls_token : bool
        Prepend ``[CLS]`` (id 1) to every sequence (``width + 1`` columns).
    reserve_cls : bool
        Keep id 1 for ``[CLS]`` even when it is not prepended.
    """
    from ..corpora.synthetic import PAD
    from .batches import TokenData
    width = n_positions if width is None else int(width)
    if width < n_positions:
        raise ValueError(f"width={width} is smaller than n_positions={n_positions}")
    if short_fraction is None:
        parts = [_order_corpus(n_sequences, n_positions, vocab_size, kind, min_length, seed)]
    else:
        if not 0 < short_fraction < 1:
            raise ValueError(f"short_fraction must lie in (0, 1); got {short_fraction!r}")
        half = n_positions // 2
        lo = 2 if min_length is None else int(min_length)
        if half - 1 < lo:
            raise ValueError(f"n_positions={n_positions} is too short to split at n/2 = {half} with min_length={lo}")
        n_short = 2 * int(round(short_fraction * n_sequences / 2))
        n_long = n_sequences - n_short
        if n_short < 2 or n_long < 2 or n_long % 2:
            raise ValueError(
                f"n_sequences={n_sequences} with short_fraction={short_fraction} leaves {n_short} short and {n_long} "
                "long sequences; both must be even and >= 2"
            )
        parts = [_order_corpus(n_short, half - 1, vocab_size, kind, lo, seed),
                 _order_corpus(n_long, n_positions, vocab_size, kind, half, seed + 7919)]
    tokens, lengths, labels = [], [], []
    for c in parts:
        t = np.full((c.n_sequences, width), PAD, dtype=np.int64)
        t[:, : c.n_positions] = c.tokens
        tokens.append(t)
        lengths.append(c.lengths)
        labels.append(c.labels)
    tokens, lengths, labels = np.concatenate(tokens), np.concatenate(lengths), np.concatenate(labels)
    A, B = vocab_size - 2, vocab_size - 1
    markers = np.stack([np.argmax(tokens == A, axis=1), np.argmax(tokens == B, axis=1)], axis=1)
    # ids: 0 = padding, then [CLS] = 1 when asked, then the corpus's tokens
    offset = 2 if cls_token or reserve_cls else 1
    ids = np.where(tokens == PAD, 0, tokens + offset)
    mask = (tokens != PAD).astype(np.int64)
    if cls_token:
        ids = np.concatenate([np.full((ids.shape[0], 1), 1, dtype=ids.dtype), ids], axis=1)
        mask = np.concatenate([np.ones((mask.shape[0], 1), dtype=np.int64), mask], axis=1)
        markers = markers + 1
    return OrderTaskData(TokenData(ids, mask, labels), lengths, markers, vocab_size + offset)


def order_population_geometry(n_positions: int, vocab_size: int, *, kind: str = "marker_order",
                              min_length: int | None = 2, rank_tol: float = 1e-6) -> dict[str, np.ndarray]:
    r"""The order task's exact geometry: Hellinger distances of its marginals and their classical MDS.

    Returns
    -------
    dict
        ``D`` (n, n) and ``mds`` (n, r), the MDS keeping the eigenvalues above ``rank_tol`` $\lambda_1$.
    """
    from .. import geometry as geo
    from ..corpora.synthetic import population_marginals
    mu = population_marginals("order", n_positions=n_positions, vocab_size=vocab_size, kind=kind, min_length=min_length)
    D = geo.hellinger_matrix(mu)
    full = geo.classical_mds(D)
    r = max(1, geo.effective_rank(full.eigenvalues, "tol", tol=rank_tol))
    return {"D": D, "mds": full.embedding[:, :r] if full.k >= r else geo.classical_mds(D, r).embedding}


# a tiny encoder and its training on the order task


def tiny_encoder_config(*, vocab_size: int, max_len: int, position: str = "learned", position_options=None,
                        d_model: int = 32, n_layers: int = 2, n_heads: int = 2, d_ff: int = 64, causal: bool = False,
                        init_std: float = 0.02, pooling: str = "mean"):
    """The ``EncoderConfig`` of the chapters' small models: no dropout, padding id 0, no token types, two labels."""
    from .encoder import get_config
    return get_config(
        "quick", vocab_size=vocab_size, d_model=d_model, n_layers=n_layers, n_heads=n_heads, d_ff=d_ff,
        max_len=max_len, position=position, position_options=dict(position_options or {}), dropout=0.0,
        attention_dropout=0.0, pooling=pooling, pad_token_id=0, type_vocab_size=0,
        n_labels=2, causal=causal, init_std=init_std,
    )


def learned_table_config(*, vocab_size: int, max_len: int, sigma: float = 0.02, **shape):
    r""":func:`tiny_encoder_config` with a learned table whose rows start $\mathcal N(0, \sigma^2)$."""
    return tiny_encoder_config(vocab_size=vocab_size, max_len=max_len, position="learned",
                               position_options={"init": "normal", "sigma": sigma}, **shape)


def set_embedding_dropout(model, p: float):
    r"""Put dropout on the embedding sum only, $h^{(0)} = \mathrm{Dropout}_p(\mathrm{LN}(E_x + p_i))$; the model."""
    from torch import nn
    if not 0 <= p < 1:
        raise ValueError(f"dropout rate must lie in [0, 1); got {p!r}")
    model.encoder.embeddings.dropout = nn.Dropout(p)
    return model


def train_order_model(train_data, *, config, steps: int, batch_size: int, lr: float, weight_decay: float = 0.01,
                      warmup_ratio: float = 0.1, seed: int = 0, device: str = "cpu", embedding_dropout: float = 0.0,
                      model=None):
    """Build (or continue) and train a classifier on the order task with :func:`posgeom.models.training.train`.

    Parameters
    ----------
    train_data : TokenData
    config : EncoderConfig
        Used when ``model`` is None.
    steps, batch_size, lr, weight_decay, warmup_ratio, seed, device
        As :class:`posgeom.models.training.TrainConfig`.
    embedding_dropout : float
        Dropout on the embedding sum.
    model : nn.Module, optional
        Continue training this model instead of building one.

    Returns
    -------
    model : EncoderForSequenceClassification
    result : posgeom.models.training.TrainResult
    """
    from .encoder import build_model
    from .training import TrainConfig, train
    if model is None:
        model = build_model(config, "classification", seed=seed)
    set_embedding_dropout(model, embedding_dropout)
    tc = TrainConfig(task="classification", batch_size=batch_size, max_steps=steps, lr=lr, weight_decay=weight_decay,
                     warmup_ratio=warmup_ratio, seed=seed, device=device, progress=False, log_every=max(1, steps))
    result = train(model, train_data, tc)
    return model, result


def train_mlm_model(windows: np.ndarray, *, config=None, model=None, steps: int, batch_size: int, lr: float,
                    weight_decay: float = 0.01, warmup_ratio: float = 0.1, seed: int = 0, device: str = "cpu",
                    mask_token_id: int, special_token_ids):
    """Build (or continue) and train a masked LM on windows with :func:`posgeom.models.training.train`.

    Parameters
    ----------
    windows : ndarray of shape (N, m)
        Token ids.
    config : EncoderConfig
        Used when ``model`` is None.
    steps, batch_size, lr, weight_decay, warmup_ratio, seed, device, mask_token_id, special_token_ids
        As :class:`posgeom.models.training.TrainConfig`.

    Returns
    -------
    model : EncoderForMaskedLM
    result : TrainResult
    """
    from .batches import TokenData
    from .encoder import build_model
    from .training import TrainConfig, train
    if model is None:
        model = build_model(config, "mlm", seed=seed)
    tc = TrainConfig(task="mlm", batch_size=batch_size, max_steps=steps, lr=lr, weight_decay=weight_decay,
                     warmup_ratio=warmup_ratio, seed=seed, device=device, progress=False, log_every=max(1, steps),
                     mask_token_id=mask_token_id, special_token_ids=special_token_ids)
    result = train(model, TokenData(windows), tc)
    return model, result


def evaluate_order_model(model, data, batch_size: int = 256) -> dict[str, float]:
    """Loss, accuracy and ``n`` of a classifier on order-task data (:func:`posgeom.models.training.evaluate`)."""
    from .training import TrainConfig, evaluate
    config = TrainConfig(task="classification", device="cpu", progress=False)
    return evaluate(model, data, config, batch_size=batch_size)


def steps_to_threshold(losses, threshold: float, smooth: int = 20) -> int | None:
    r"""First step at which the running mean of the last ``smooth`` losses is below ``threshold``.

    Parameters
    ----------
    losses : array-like of shape (T,)

    Returns
    -------
    int or None
        The 1-based step, or None when the running mean never gets there.
    """
    x = np.asarray(losses, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise ValueError("losses must be a non-empty 1-D sequence")
    smooth = check_positive_int(smooth, "smooth")
    if x.size < smooth:
        return None
    # m_t = (1/w) sum_{s = t-w+1}^{t} loss_s
    c = np.cumsum(np.concatenate([[0.0], x]))
    run = (c[smooth:] - c[:-smooth]) / smooth
    hit = np.flatnonzero(run < threshold)
    return int(hit[0] + smooth) if hit.size else None


def position_table_of(model) -> np.ndarray:
    """The position table of a posgeom model with an absolute encoding, as a CPU copy of shape (N_max, d)."""
    import torch
    with torch.no_grad():
        return model.positional.table().detach().to("cpu", torch.float64).numpy().copy()


def extend_model(model, n: int, method: str, *, seed: int = 0):
    """A copy of ``model`` whose learned table has ``n`` rows, past its wall by a heuristic.

    Parameters
    ----------
    model : nn.Module
        A posgeom encoder with a ``"learned"`` positional table of ``N_max < n`` rows.
    method : {"reuse_last", "interpolate", "new_rows"}
        See :meth:`posgeom.models.positional.LearnedPositional.extended`.
    seed : int
        Seed of the new rows (``"new_rows"``).

    Returns
    -------
    nn.Module
        A deep copy with ``config.max_len = n``.
    """
    from .positional import LearnedPositional
    pos = model.positional
    if not isinstance(pos, LearnedPositional):
        raise ValueError(
            f"extend_model needs a learned positional table; this model uses {pos.name!r}, which "
            + ("has no wall" if pos.max_positions is None else "is not a learned table")
        )
    new = copy.deepcopy(model)
    new.encoder.embeddings.position = pos.extended(n, method=method, seed=seed)
    new.config = replace(new.config, max_len=int(n))
    new.encoder.config = new.config
    return new


def bag_labels(tokens, vocab_size: int) -> np.ndarray:
    r"""An order-insensitive label: 1 iff the sequence has at least the median count of ids below $v/2$.

    Parameters
    ----------
    tokens : array of shape (N, L)
        Token ids (padding negative, not counted).

    Returns
    -------
    ndarray of shape (N,), int64
    """
    tokens = np.asarray(tokens)
    low = np.sum((tokens >= 0) & (tokens < vocab_size // 2), axis=1)
    return (low >= np.median(low)).astype(np.int64)


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
    dict
        ``loss`` and ``accuracy`` overall, ``head``, ``tail``, ``both`` accuracies (NaN when empty) and
        their counts ``n_head``, ``n_tail``, ``n_both``.
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


# the order-only task of Theorem 1: encodings with and without a causal mask, over seeds


@dataclass(frozen=True)
class OrderTaskRow:
    """Final test accuracy of one model on the order task, over seeds (``std`` with ``ddof=1``)."""

    position: str
    causal: bool
    accuracy: list
    mean: float
    std: float
    min: float
    max: float


@dataclass(frozen=True)
class OrderTaskOutcome:
    """What :func:`train_order_task` returns.

    Attributes
    ----------
    rows : list of OrderTaskRow
    curves : dict of str to ndarray of shape (n_seeds, n_evals)
        Test accuracy along training, keyed by :func:`model_label`.
    steps : ndarray of shape (n_evals,)
    """

    rows: list
    curves: dict
    steps: np.ndarray
    n_test: int
    seq_len: int


def model_label(position: str, causal: bool) -> str:
    """The chapter's name of a model: the encoding, plus ``"+causal"`` with a causal mask."""
    return position + ("+causal" if causal else "")


def order_task_tensors(n_sequences: int, n_positions: int, vocab_size: int, *, seed: int, cls_token: bool = True):
    """The order-only task (every sequence of length ``n_positions``, id 1 for ``[CLS]``) as tensors.

    Returns
    -------
    input_ids : LongTensor of shape (n_sequences, n_positions + cls_token)
    labels : LongTensor of shape (n_sequences,)
    """
    import torch
    task = order_task_data(n_sequences, n_positions, vocab_size, min_length=None, seed=seed, cls_token=cls_token,
                           reserve_cls=True)
    return (torch.as_tensor(task.data.input_ids, dtype=torch.long), torch.as_tensor(task.data.labels, dtype=torch.long))


def train_order_task(models, seeds, *, n_positions: int, vocab_size: int, n_train: int, n_test: int, shape: dict,
                     steps: int, batch_size: int, lr: float, weight_decay: float, schedule: str, eval_every: int,
                     data_seed: int, cls_token: bool = True, pooling: str = "mean", device: str = "cpu",
                     threads: int | None = 1, progress: bool = True) -> OrderTaskOutcome:
    r"""Train each model on the order-only task once per seed; test accuracy along training.

    Test data are drawn from ``data_seed + 10000``.

    Parameters
    ----------
    models : sequence of (str, bool)
        ``(encoding, causal)`` pairs.
    shape : dict
        Keywords of :func:`tiny_encoder_config`.
    steps, batch_size, lr, weight_decay, schedule
        As :class:`posgeom.models.training.TrainConfig`.
    """
    from ..progress import tqdm
    from .callbacks import AccuracyCurve
    from .encoder import build_model
    from .threads import torch_threads
    from .training import TrainConfig, train
    n, v = n_positions, vocab_size
    x_tr, y_tr = order_task_tensors(n_train, n, v, seed=data_seed, cls_token=cls_token)
    x_te, y_te = order_task_tensors(n_test, n, v, seed=data_seed + 10_000, cls_token=cls_token)
    L = x_tr.shape[1]
    curves: dict[str, list] = {}
    steps_axis = None
    bar = tqdm([(m, s) for m in models for s in seeds], desc="order task", disable=not progress)
    for (position, causal), seed in bar:
        label = model_label(position, causal)
        bar.set_postfix(model=label, seed=seed)
        # ids: 0 padding, 1 [CLS], the task's token t becomes t + 2 (order_task_data's reserve_cls)
        config = tiny_encoder_config(vocab_size=v + 2, max_len=L, position=position, causal=causal,
                                     pooling=pooling, **shape)
        model = build_model(config, "classification", seed=seed)
        tc = TrainConfig(task="classification", batch_size=batch_size, max_steps=steps,
                         lr=lr, weight_decay=weight_decay, schedule=schedule, seed=seed,
                         device=device, progress=False)
        curve = AccuracyCurve(x_te, y_te, eval_every)
        with torch_threads(threads, device):
            train(model, (x_tr, None, y_tr), tc, callbacks=[curve])
        curves.setdefault(label, []).append(curve.accuracy)
        steps_axis = curve.steps
    rows = []
    for position, causal in models:
        final = np.asarray(curves[model_label(position, causal)])[:, -1]
        rows.append(OrderTaskRow(
            position=position, causal=causal, accuracy=final.tolist(), mean=float(final.mean()),
            std=float(final.std(ddof=1)) if final.size > 1 else 0.0, min=float(final.min()), max=float(final.max()),
        ))
    return OrderTaskOutcome(rows=rows, curves={k: np.asarray(c) for k, c in curves.items()},
                            steps=np.asarray(steps_axis), n_test=int(len(y_te)), seq_len=int(L))
