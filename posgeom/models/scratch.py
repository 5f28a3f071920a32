r"""A learned position table trained from scratch by MLM on a corpus, its geometry recorded against the corpus's.

The corpus's $D$ covers the kept positions only, so the geometry is that of the same rows of the table.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import geometry as geo
from .callbacks import PositionGeometry

__all__ = ["RowGeometry", "train_scratch_table"]


class RowGeometry(PositionGeometry):
    """``PositionGeometry`` of the table's rows ``rows`` (k,) against ``target`` (k, k)."""

    def __init__(self, rows, every: int = 10, *, target, **kwargs):
        super().__init__(every, target=target, **kwargs)
        self.rows = np.asarray(rows)

    def measure(self, model) -> dict[str, float]:
        P = model.positional.table().detach().double().cpu().numpy()[self.rows]
        sep = geo.separation(P)
        out = {"separation": sep.raw, "separation_normalized": sep.normalized, "median_distance": sep.median}
        for z in self.normalizations:
            out[f"stress_{z}"] = geo.stress(self.target, P, z)
        out["violation_rate"] = geo.violation_rate(self.target, P)
        out["spearman"] = geo.spearman(self.target, P)
        return out


def train_scratch_table(tokens, D, rows, n: int, cfg: dict[str, Any], seed: int, device: str,
                        progress: bool, padding: str = "full") -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Train an MLM encoder from scratch on ``tokens`` and record its table's geometry against ``D``.

    Parameters
    ----------
    tokens : posgeom.corpora.tokenize.TokenizedCorpus
    D : ndarray of shape (k, k)
        The corpus geometry on the rows ``rows`` (k,) of the table, each below ``n``.
    n : int
        Positions of the model (``max_len``).
    cfg : dict
        :class:`posgeom.experiments.real_corpora.ScratchTraining` as a dict.

    Returns
    -------
    values : dict
        ``final_loss``, ``tokens_per_s``, ``runtime_s``, ``steps``, ``device`` and ``final`` geometry.
    arrays : dict
        ``table`` (n, d), ``table_init`` (n, d), ``losses`` (steps,) and the series of :class:`RowGeometry`.
    """
    import torch

    from .batches import TokenData
    from .encoder import build_model, get_config
    from .threads import torch_threads
    from .training import TrainConfig, train
    if np.max(rows) >= n:
        # the "content" policy counts position 0 as the first content token, table row 1
        raise ValueError(f"table row {int(np.max(rows))} is needed but the model has {n} positions: the content "
                         "policy needs one more table row than positions; lower n_positions")
    ids, mask = tokens.model_inputs()
    model = build_model(get_config("quick", **{**cfg["model"], "max_len": n}), "mlm", seed=seed)
    table0 = model.positional.table().detach().double().cpu().numpy().copy()
    cb = RowGeometry(rows, every=cfg["every"], target=D)
    with torch_threads(cfg.get("threads"), device):
        result = train(model, TokenData(ids, mask),
                       TrainConfig(task="mlm", batch_size=cfg["batch_size"], max_steps=cfg["max_steps"], lr=cfg["lr"],
                                   warmup_steps=cfg["warmup_steps"], seed=seed, device=device, progress=progress,
                                   padding=padding),
                       callbacks=[cb])
    with torch.no_grad():
        table = model.positional.table().detach().double().cpu().numpy()
    series = cb.as_arrays()
    values = {"final_loss": result.final_loss, "tokens_per_s": result.tokens_per_s, "runtime_s": result.runtime_s,
              "steps": result.steps, "device": result.device, "final": {k: float(v[-1]) for k, v in series.items()}}
    return values, {"table": table, "table_init": table0, "losses": np.asarray(result.losses), **series}
