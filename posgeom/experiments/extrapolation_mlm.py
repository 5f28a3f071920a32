r"""Extrapolation of learned tables with masked language modelling on IMDB windows (S6, "Where learned tables fail").

The methods and settings are those of :mod:`posgeom.experiments.extrapolation` (``CONFIGS[scale].mlm``);
the windows and their vocabulary are :mod:`posgeom.corpora.mlm_windows`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..config import resolve_device, settings_or_default as _settings
from ..corpora.mlm_windows import IMDBWindows, imdb_windows, mds_of_windows, unigram_loss
from ..models.evaluation import mlm_loss_by_position
from ..models.tasks import train_mlm_model
from ..models.threads import torch_threads
from ..registry import Result
from ..registry.typed import build, stored
from .extrapolation import (
    CONFIGS, MLM_ENCODINGS, ExtrapolationRecord, MLMExtrapolation, Scores, StudyPlan, study_plan, train_and_score,
)
from .settings import ModelShape, as_params, store_result

__all__ = ["ExtrapolationMLMRecord", "mlm_extrapolation", "run_extrapolation_mlm"]


@dataclass(frozen=True, kw_only=True)
class ExtrapolationMLMRecord(ExtrapolationRecord):
    """A stored :func:`run_extrapolation_mlm`; losses beyond ``L`` are None at lengths up to ``L``."""

    loss: Scores
    loss_head: Scores             # over positions < L
    loss_beyond: Scores           # over positions >= L
    vocab_size: int               # the ids of the reduced vocabulary
    rare_fraction: float          # the share of training word pieces mapped to "rare"
    unigram_loss: float           # a model that ignores context
    data: dict[str, str | None]   # where the windows came from
    n_train: int
    n_eval: int
    loss_table: np.ndarray = stored("loss")  # (methods, factors, seeds), NaN where not run
    loss_by_position: np.ndarray  # (methods, seeds, n_max) at the longest length
    mds_table: np.ndarray


class _MLMScores:
    """Mean masked-LM loss per method and factor (all, before L, beyond L) and per position at the longest length."""

    KEYS = ("loss", "loss_head", "loss_beyond")

    def __init__(self, win: IMDBWindows, plan: StudyPlan):
        self.win, self.L, self.n_max = win, plan.L, plan.n_max
        self.tables = {key: {k: {str(f): [] for f in plan.factors} for k in plan.methods} for key in self.KEYS}
        self.by_pos = {k: [] for k in plan.methods}

    def record(self, method, f, length, model, seed):
        t, L = self.tables, self.L
        if model is None:
            for key in self.KEYS:
                t[key][method][str(f)].append(None)
            return
        s, n = mlm_loss_by_position(model, self.win.eval[:, :length], mask_token_id=IMDBWindows.MASK,
                                    special_token_ids=IMDBWindows.SPECIAL, seed=10_000 + seed)
        t["loss"][method][str(f)].append(float(s.sum() / n.sum()))
        t["loss_head"][method][str(f)].append(float(s[:L].sum() / n[:L].sum()))
        t["loss_beyond"][method][str(f)].append(float(s[L:].sum() / n[L:].sum()) if length > L else None)
        if length == self.n_max:
            self.by_pos[method].append(s / np.maximum(n, 1))


def mlm_extrapolation(options: MLMExtrapolation, shape: ModelShape, plan: StudyPlan, win: IMDBWindows, *,
                      device: str = "cpu") -> tuple[dict, dict]:
    """Train every encoding of ``plan`` on windows of ``L`` and evaluate it at every length of ``plan``.

    Returns ``(values, arrays)``, the dicts :func:`run_extrapolation_mlm` stores.
    """
    c, L = options, plan.L
    mds_table = mds_of_windows(win, min(c.mds_rank, plan.n_max, shape.d_model))
    scores = _MLMScores(win, plan)

    def fit(length, seed, config, model=None, finetune=False):
        train = replace(c.train, **as_params(c.finetune)) if finetune else c.train
        return train_mlm_model(win.train[:, :length], config=config, model=model, **as_params(train), seed=seed,
                               device=device, mask_token_id=IMDBWindows.MASK, special_token_ids=IMDBWindows.SPECIAL)[0]

    train_and_score(plan, c, shape=shape, vocab_size=win.vocab_size, mds_table=mds_table, fit=fit, record=scores.record,
                    desc="extrapolation (IMDB MLM)")
    t = scores.tables
    values = {**plan.stored(), **t, "vocab_size": win.vocab_size, "rare_fraction": win.rare_fraction,
              "unigram_loss": unigram_loss(win, L),
              "data": {k: (str(v) if v is not None else None) for k, v in win.info.items()},
              "n_train": int(win.train.shape[0]), "n_eval": int(win.eval.shape[0])}
    arrays = {"loss": plan.table(t["loss"]), "loss_by_position": np.asarray([scores.by_pos[k] for k in plan.methods]),
              "mds_table": mds_table}
    return values, arrays


def run_extrapolation_mlm(settings=None, *, force: bool = False, encodings=None, seeds=None) -> Result:
    r"""Masked-LM loss on IMDB windows of length $L$, $1.5L$, $2L$ of models trained at $L$ (S6), stored.

    Fine-tunes and target baselines train on windows of the target length from the same reviews; the MDS table
    comes from the training windows' positions up to the longest evaluated length. The record:
    :class:`ExtrapolationMLMRecord`.
    """
    settings = _settings(settings)
    cfg = CONFIGS[settings.scale]
    c = cfg.mlm
    plan = study_plan(c, encodings, seeds, MLM_ENCODINGS)
    device = resolve_device(settings.device)

    def compute():
        win = imdb_windows(settings, n_max=plan.n_max, top_k=c.top_k, n_train=c.n_train, n_eval=c.n_eval,
                           seed=settings.seed)
        with torch_threads(cfg.threads if device == "cpu" else None):
            values, arrays = mlm_extrapolation(c, cfg.model, plan, win, device=device)
        return build(ExtrapolationMLMRecord, values, arrays)

    params = {"mlm": {**as_params(c), "encodings": list(plan.encodings), "seeds": list(plan.seeds)},
              "model": as_params(cfg.model), "data_seed": settings.seed, "threads": cfg.threads,
              "corpus": "imdb train (posgeom.corpora.corpus_tokens, 512, model policy)"}
    return store_result(settings, "learned_extrapolation_mlm", compute, params, force, device=device,
                        model="tiny encoder (posgeom.models), IMDB MLM")
