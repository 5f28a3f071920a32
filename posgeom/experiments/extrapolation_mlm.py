r"""Extrapolation of learned tables with masked language modelling on IMDB windows (claim S6, chapter
"Where learned tables fail").

Models trained on windows of $L$ tokens are evaluated at $L$, $1.5L$, $2L$ with the
methods of :func:`posgeom.experiments.extrapolation.run_extrapolation_order` (the learned table's
heuristics, sinusoidal, RoPE, ALiBi, MDS, no positions). The settings are ``CONFIGS[scale].mlm`` of
:mod:`posgeom.experiments.extrapolation`.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..config import resolve_device, settings_or_default as _settings
from ..models.evaluation import mlm_loss_by_position
from ..models.tasks import tiny_encoder_config
from ..models.threads import torch_threads
from ..registry import Registry, Result
from .extrapolation import (
    CONFIGS, MLM_ENCODINGS, MLMExtrapolation, StudyPlan, StudyTraining, learned_methods, position_options, study_plan,
)
from .settings import ModelShape, as_params

__all__ = ["IMDBWindows", "imdb_windows", "train_mlm_model", "mds_of_windows",
           "unigram_loss", "mlm_extrapolation", "run_extrapolation_mlm"]


class IMDBWindows:
    r"""Fixed-length windows of IMDB reviews for masked language modelling, with a reduced vocabulary.

    Reviews are tokenised by ``posgeom.corpora.stats.corpus_tokens`` (bert-base-uncased WordPiece,
    policy ``"model"``: ``[CLS]`` at position 0, 512 positions, ``<br />`` as spaces); only reviews longer
    than the longest window are kept, so every window of length $m$ is ``[CLS]`` followed by the
    first $m - 1$ word pieces (no ``[SEP]``, no padding). The vocabulary is reduced to the ``top_k``
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


def _mlm_train_config(t: StudyTraining, seed: int, device: str):
    from ..models.training import TrainConfig

    return TrainConfig(task="mlm", batch_size=t.batch_size, max_steps=t.steps, lr=t.lr, weight_decay=t.weight_decay,
                       warmup_ratio=t.warmup_ratio, seed=seed, device=device, progress=False,
                       log_every=max(1, t.steps), mask_token_id=IMDBWindows.MASK, special_token_ids=IMDBWindows.SPECIAL)


def train_mlm_model(windows: np.ndarray, *, config=None, model=None, train: StudyTraining, seed: int = 0,
                    device: str = "cpu"):
    """Build (or continue) and train a masked LM on windows with :func:`posgeom.models.training.train`.

    Parameters
    ----------
    windows : ndarray of shape (N, m), ids of an :class:`IMDBWindows` vocabulary.
    config : EncoderConfig, used when ``model`` is None.
    train : StudyTraining

    Returns
    -------
    model : EncoderForMaskedLM
    result : TrainResult
    """
    from ..models.encoder import build_model
    from ..models.batches import TokenData
    from ..models.training import train as fit

    if model is None:
        model = build_model(config, "mlm", seed=seed)
    result = fit(model, TokenData(windows), _mlm_train_config(train, seed, device))
    return model, result


def mds_of_windows(win: IMDBWindows, rank: int) -> np.ndarray:
    """Classical MDS (rank ``rank``) of the Hellinger geometry of the training windows' positions.

    Returns
    -------
    ndarray of shape (n_max, rank)
    """
    from .. import geometry as geo

    counts = geo.positional_counts(win.train, win.n_max, win.vocab_size)
    D = geo.hellinger_matrix(geo.positional_marginals(counts))
    return geo.classical_mds(D, rank).embedding


def unigram_loss(win: IMDBWindows, L: int) -> float:
    """Cross-entropy of the training unigram distribution on the evaluation tokens before ``L`` (no context)."""
    # -mean log q(x), q the training frequencies of the maskable ids
    freq = np.bincount(win.train[:, 1:].ravel(), minlength=win.vocab_size).astype(np.float64)
    q = freq / freq.sum()
    return float(-np.mean(np.log(np.maximum(q[win.eval[:, 1:L].ravel()], 1e-12))))


class _MLMScores:
    """Mean masked-LM loss per method and factor (all tokens, before L, at or beyond L; lists over seeds),
    and the per-position loss at the longest length."""

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

    Returns
    -------
    values, arrays : dict
        As :func:`run_extrapolation_mlm` stores them.
    """
    from ..progress import tqdm

    c, L = options, plan.L
    mds_table = mds_of_windows(win, min(c.mds_rank, plan.n_max, shape.d_model))
    scores = _MLMScores(win, plan)
    with tqdm(total=plan.n_runs, desc="extrapolation (IMDB MLM)", unit="run") as bar:
        def fit(length, seed, train, config=None, model=None):
            out, _ = train_mlm_model(win.train[:, :length], config=config, model=model, train=train, seed=seed,
                                     device=device)
            bar.update(1)
            return out.to("cpu")

        for name in plan.encodings:
            for seed in plan.seeds:
                config = tiny_encoder_config(vocab_size=win.vocab_size, max_len=plan.n_max if name == "mds" else L,
                                             position=name, position_options=position_options(name, mds_table),
                                             **as_params(shape))
                model = fit(L, seed, c.train, config=config)
                for f, m_ in zip(plan.factors, plan.lengths):
                    if name != "learned":
                        scores.record(name, f, m_, model, seed)
                        continue
                    pairs = learned_methods(
                        model, m_, L, f, block=c, seed=seed,
                        finetune=lambda ext, n, s=seed: fit(n, s, replace(c.train, **as_params(c.finetune)), model=ext),
                        train_target=lambda n, s=seed, cf=config: fit(n, s, c.train, config=replace(cf, max_len=n)))
                    for method, mod in pairs:
                        scores.record(method, f, m_, mod, seed)
    t = scores.tables
    values = {"methods": plan.methods, "factors": list(plan.factors), "lengths": plan.lengths, "seeds": list(plan.seeds),
              "L": L, **t, "vocab_size": win.vocab_size, "rare_fraction": win.rare_fraction,
              "unigram_loss": unigram_loss(win, L),
              "data": {k: (str(v) if v is not None else None) for k, v in win.info.items()},
              "n_train": int(win.train.shape[0]), "n_eval": int(win.eval.shape[0])}
    arrays = {"loss": np.asarray([[[np.nan if x is None else x for x in t["loss"][k][str(f)]] for f in plan.factors]
                                  for k in plan.methods], dtype=np.float64),
              "loss_by_position": np.asarray([scores.by_pos[k] for k in plan.methods]), "mds_table": mds_table}
    return values, arrays


def run_extrapolation_mlm(settings=None, *, force: bool = False, encodings=None, seeds=None) -> Result:
    r"""Masked-LM loss on IMDB windows of length $L$, $1.5L$, $2L$ for models trained at
    $L$ (S6), by :func:`mlm_extrapolation`, stored.

    The fine-tune of ``new_rows`` and the ``learned:target`` baseline (when ``target_baseline``, at the
    factors of ``target_factors``) train on windows of the target length from the same training reviews.
    The MDS table is classical MDS (rank ``mds_rank``) of the Hellinger geometry of the training windows'
    positions up to the longest evaluated length (:func:`mds_of_windows`).

    Returns
    -------
    Result
        values: ``methods``, ``factors``, ``lengths``, ``seeds``, ``L``, ``loss`` (method → factor → list
        over seeds: mean cross-entropy over all masked tokens), ``loss_head`` / ``loss_beyond`` (tokens at
        positions $< L$ / $\ge L$), ``vocab_size``, ``rare_fraction``, ``unigram_loss``
        (:func:`unigram_loss`: a model that ignores context), ``data`` (provenance); arrays: ``loss``
        (methods, factors, seeds), ``loss_by_position`` (methods, seeds, n_max) at the longest length.
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
            return mlm_extrapolation(c, cfg.model, plan, win, device=device)

    params = {"mlm": {**as_params(c), "encodings": list(plan.encodings), "seeds": list(plan.seeds)},
              "model": as_params(cfg.model), "data_seed": settings.seed, "threads": cfg.threads,
              "corpus": "imdb train (posgeom.corpora.corpus_tokens, 512, model policy)"}
    return Registry(settings.results_dir).run(
        "learned_extrapolation_mlm", compute, params=params, scale=settings.scale, seed=settings.seed, device=device,
        model="tiny encoder (posgeom.models), IMDB MLM", force=force,
    )
