r"""Classifiers that differ only in their positional encoding: train and score one, compare them over seeds."""

from __future__ import annotations

import numpy as np

from ..geometry.intervals import draws_summary
from ..geometry.stress import stress

__all__ = ["train_one", "summarise_seeds", "accuracy_gaps"]


def train_one(train_data, test_data, D_task, *, position, options, model_cfg, vocab_size, n_positions, steps,
               batch_size, lr, seed, device, padding: str = "full") -> dict:
    """Train one classifier; return test loss/accuracy, positional parameter count and the table's stress.

    Parameters
    ----------
    train_data, test_data : posgeom.models.batches.TokenData
    D_task : ndarray of shape (n, n) or None
        The corpus's geometry the trained table is compared with (None: no stress).
    position, options
        ``EncoderConfig.position`` and its ``position_options``.
    model_cfg : dict
        The other :class:`posgeom.models.encoder.EncoderConfig` fields.
    vocab_size, n_positions, steps, batch_size, lr, seed, device, padding
        As :class:`posgeom.models.encoder.EncoderConfig` and :class:`posgeom.models.training.TrainConfig`.

    Returns
    -------
    dict
        ``test_loss``, ``test_accuracy``, ``final_train_loss``, ``position_params``, ``runtime_s``,
        ``stress_scale_free`` (None for a relative encoding or without ``D_task``).
    """
    import torch

    from .encoder import EncoderConfig, build_model
    from .training import TrainConfig, evaluate, train
    cfg = EncoderConfig(vocab_size=vocab_size, max_len=n_positions, position=position, position_options=dict(options),
                        pad_token_id=0, **model_cfg)
    model = build_model(cfg, "classification", seed=seed)
    tcfg = TrainConfig(task="classification", batch_size=batch_size, max_steps=steps, lr=lr, seed=seed,
                       device=device, progress=False, log_every=max(1, steps // 10), padding=padding)
    result = train(model, train_data, tcfg)
    ev = evaluate(model, test_data, tcfg)
    pos = model.positional
    out = dict(
        test_loss=float(ev["loss"]), test_accuracy=float(ev["accuracy"]), final_train_loss=float(result.final_loss),
        position_params=int(sum(p.numel() for p in pos.parameters() if p.requires_grad)),
        runtime_s=float(result.runtime_s),
    )
    if pos.kind == "absolute" and D_task is not None:
        with torch.no_grad():
            Dhat = pos.distance_matrix(D_task.shape[0])
        out["stress_scale_free"] = stress(D_task, Dhat, "scale_free", as_distances=True)
    else:
        out["stress_scale_free"] = None
    return out


def accuracy_gaps(runs: list[dict], pairs, level: float = 0.95) -> dict:
    """Paired accuracy differences (same seed) of the encodings ``pairs``, summarised over seeds.

    Parameters
    ----------
    runs : list of dict
        One record per encoding and seed: ``encoding``, ``seed``, ``test_accuracy``.
    pairs : sequence of (str, str)
        ``(a, b)`` for accuracy(a) - accuracy(b).
    level : float in (0, 1)

    Returns
    -------
    dict
        ``{a: {b: summary}}``, :func:`posgeom.geometry.draws_summary` of the differences (no interval from few seeds).
    """
    out: dict = {}
    for a, b in pairs:
        acc = {e: {r["seed"]: r["test_accuracy"] for r in runs if r["encoding"] == e} for e in (a, b)}
        seeds = sorted(set(acc[a]) & set(acc[b]))
        if seeds:
            out.setdefault(a, {})[b] = draws_summary([acc[a][s] - acc[b][s] for s in seeds], level, bounds=(-1.0, 1.0))
    return out


def summarise_seeds(runs: list[dict]) -> dict:
    """Mean and standard deviation over seeds, per encoding.

    Parameters
    ----------
    runs : list of dict
        One record per encoding and seed: ``encoding``, ``test_accuracy``, ``test_loss``, ``position_params``.

    Returns
    -------
    dict
        ``{encoding: {position_params, accuracy_mean, accuracy_std, loss_mean, loss_std, n_seeds}}``.
    """
    out = {}
    for label in dict.fromkeys(r["encoding"] for r in runs):
        rs = [r for r in runs if r["encoding"] == label]
        acc = np.array([r["test_accuracy"] for r in rs])
        loss = np.array([r["test_loss"] for r in rs])
        out[label] = dict(position_params=rs[0]["position_params"], accuracy_mean=float(acc.mean()),
                          accuracy_std=float(acc.std(ddof=1)) if acc.size > 1 else 0.0,
                          loss_mean=float(loss.mean()), loss_std=float(loss.std(ddof=1)) if loss.size > 1 else 0.0,
                          n_seeds=int(acc.size))
    return out
