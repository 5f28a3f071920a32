r"""Experiments of the chapter "Theorem 1: no position, no order".

**Theorem 1** (the paper's numbering). Write a sequence of $L$ token vectors as the rows of
$X \in \mathbb R^{L \times d}$ and a permutation $\pi$ of the positions as the matrix $\Pi$,
$(\Pi X)_i = X_{\pi^{-1}(i)}$. An encoder without positional signal and without causal mask is
built from maps that are *permutation-equivariant*, $f(\Pi X) = \Pi f(X)$:

* token-wise maps (embedding, MLP, LayerNorm, output projections): $\phi(\Pi X) = \Pi \phi(X)$;
* content-only attention, because the logits permute on both sides,
  $S(\Pi X) = \Pi X W_Q W_K^\top X^\top \Pi^\top = \Pi S(X) \Pi^\top$, and a row-wise softmax
  commutes with that: $\operatorname{softmax}(\Pi S \Pi^\top)\, \Pi V = \Pi \operatorname{softmax}(S) V$;
* residual sums and compositions of equivariant maps.

A permutation-invariant readout $\rho$ (mean pooling) then gives $\rho(f(\Pi X)) = \rho(f(X))$:
the model cannot tell a sequence from its permutations.

This module measures

* the **equivariance gap** $\max |f(\Pi X) - \Pi f(X)|$ of a model (:func:`equivariance_gap`),
  for random permutations and for the reversal, for every encoding and with a causal mask
  (:func:`run_equivariance`);
* the accuracy of models trained on an **order-only task** — which of two marker tokens comes
  first, every sequence paired with its reversal so that both classes have identical bags of
  words (:func:`posgeom.corpora.synthetic.order_task`) — with and without positional encodings,
  over several seeds (:func:`run_order_task`).

Every ``run_*`` function computes through :meth:`posgeom.registry.Registry.run`.
"""

from __future__ import annotations

import numpy as np
import torch
from ..progress import tqdm

from ..config import resolve_device, settings_or_default as _settings
from ..models.callbacks import Callback
from ..models.threads import torch_threads
from ..models.tasks import order_task_data
from ..registry import Registry, Result

__all__ = [
    "CONFIGS", "ENCODINGS", "MODELS", "PAD_ID", "CLS_ID", "equivariance_gap", "readout_gap", "reversal",
    "order_task_tensors", "model_config", "model_label", "torch_threads", "run_equivariance", "run_order_task",
]

#: The encodings compared in the chapter (names of :data:`posgeom.models.POSITIONAL`).
ENCODINGS = ("none", "learned", "sinusoidal", "rope", "alibi")
#: The models of the order task: each encoding in a bidirectional encoder, and NoPE with a causal mask.
MODELS = tuple((e, False) for e in ENCODINGS) + (("none", True),)
#: Token ids of the models: 0 is padding, 1 is ``[CLS]``, the task's token ``t`` becomes ``t + 2``.
PAD_ID, CLS_ID, OFFSET = 0, 1, 2

#: Per-scale options. ``quick``: a 1-layer, width-32 encoder, 8 content positions, 400 steps, 3 seeds
#: (about 2 s of one CPU core per run). ``paper``: BERT-base's shape (12 layers, width 768, 12 heads) on
#: 126 content positions, for a GPU.
CONFIGS: dict[str, dict] = {
    "quick": dict(
        model=dict(d_model=32, n_layers=1, n_heads=4, d_ff=64),
        task=dict(n_positions=8, vocab_size=20, n_train=4096, n_test=1024),
        train=dict(steps=400, batch_size=64, lr=3e-3, weight_decay=0.0, schedule="linear", eval_every=50),
        seeds=(0, 1, 2),
        threads=1,
        equivariance=dict(length=16, vocab_size=50, n_inputs=4, n_perms=8, init_std=0.5),
    ),
    "paper": dict(
        model=dict(d_model=768, n_layers=12, n_heads=12, d_ff=3072),
        task=dict(n_positions=126, vocab_size=1000, n_train=100_000, n_test=10_000),
        train=dict(steps=5000, batch_size=64, lr=1e-4, weight_decay=0.01, schedule="linear", eval_every=250),
        seeds=(0, 1, 2),
        threads=None,
        equivariance=dict(length=128, vocab_size=30522, n_inputs=4, n_perms=8, init_std=0.5),
    ),
}


def model_label(position: str, causal: bool) -> str:
    """The chapter's name of a model: the encoding, plus ``"+causal"`` with a causal mask."""
    return position + ("+causal" if causal else "")


# ---------------------------------------------------------------------------------------------
# equivariance


def reversal(L: int) -> np.ndarray:
    """The reversal permutation ``(L-1, ..., 1, 0)``.

    Returns
    -------
    ndarray of shape (L,), int64
    """
    if isinstance(L, bool) or not isinstance(L, (int, np.integer)) or L < 1:
        raise ValueError(f"L must be a positive integer, got {L!r}")
    return np.arange(L - 1, -1, -1, dtype=np.int64)


def _check_perm(perm, L: int) -> torch.Tensor:
    p = np.asarray(perm)
    valid = p.ndim == 1 and p.size == L and np.issubdtype(p.dtype, np.integer)
    if not valid or not np.array_equal(np.sort(p), np.arange(L)):
        raise ValueError(
            f"perm must be a permutation of 0..{L - 1} (a 1-D integer array holding each index once), got {p!r}"
        )
    return torch.as_tensor(p, dtype=torch.long)


def _encoder(model):
    """The encoder body of a posgeom model (the model itself when it is an :class:`~posgeom.models.encoder.Encoder`)."""
    enc = getattr(model, "encoder", model)
    if not hasattr(enc, "embeddings") or not hasattr(enc, "layers"):
        raise TypeError(
            f"expected a posgeom Encoder or a model with an .encoder (build_model(...)), got {type(model).__name__}"
        )
    return enc


@torch.no_grad()
def equivariance_gap(model, input_ids, perm) -> float:
    r"""$\max |f(\Pi X) - \Pi f(X)|$: how far a model's hidden states are from permutation-equivariant.

    ``f`` is the model's encoder (hidden states of the last layer) in its current train/eval mode;
    put it in ``eval()`` mode first so that dropout does not add noise.

    Parameters
    ----------
    model : posgeom Encoder, or a model built by :func:`posgeom.models.encoder.build_model`
    input_ids : LongTensor of shape (B, L)
    perm : array of shape (L,)
        A permutation of ``0 … L-1``; position ``i`` of the permuted input holds token ``perm[i]``.

    Returns
    -------
    float
        0 up to floating-point rounding for an equivariant model.
    """
    enc = _encoder(model)
    x = torch.as_tensor(input_ids)
    if x.dim() != 2:
        raise ValueError(f"input_ids must have shape (batch, length), got {tuple(x.shape)}")
    p = _check_perm(perm, x.shape[1]).to(x.device)
    # f(Pi X) and Pi f(X)
    h_of_permuted = enc(x[:, p])
    permuted_h = enc(x)[:, p]
    return float((h_of_permuted - permuted_h).abs().max())


@torch.no_grad()
def readout_gap(model, input_ids, perm) -> float:
    r"""$\max |g(\Pi X) - g(X)|$ for a classification model's logits ``g`` (an invariant readout gives 0).

    Parameters
    ----------
    model : a classification model of :func:`posgeom.models.encoder.build_model`
    input_ids : LongTensor of shape (B, L)
    perm : array of shape (L,)

    Returns
    -------
    float
    """
    x = torch.as_tensor(input_ids)
    if x.dim() != 2:
        raise ValueError(f"input_ids must have shape (batch, length), got {tuple(x.shape)}")
    if not hasattr(model, "pool"):
        raise TypeError("readout_gap needs a classification model (build_model(config, 'classification'))")
    p = _check_perm(perm, x.shape[1]).to(x.device)
    return float((model(x[:, p]).logits - model(x).logits).abs().max())


def model_config(position: str, causal: bool, *, vocab_size: int, max_len: int, d_model: int, n_layers: int,
                 n_heads: int, d_ff: int, init_std: float = 0.02, pooling: str = "mean"):
    """The encoder config of the chapter: no dropout, no token types, padding id 0, the given encoding.

    Returns
    -------
    posgeom.models.encoder.EncoderConfig
    """
    from ..models import EncoderConfig

    return EncoderConfig(
        vocab_size=vocab_size, d_model=d_model, n_layers=n_layers, n_heads=n_heads, d_ff=d_ff, max_len=max_len,
        position=position, causal=causal, dropout=0.0, attention_dropout=0.0, type_vocab_size=0,
        pad_token_id=PAD_ID, init_std=init_std, n_labels=2, pooling=pooling,
    )


def run_equivariance(settings=None, *, force: bool = False, models=MODELS, length: int | None = None,
                     vocab_size: int | None = None, n_inputs: int | None = None, n_perms: int | None = None,
                     init_std: float | None = None, dtype: str = "float64") -> Result:
    r"""Equivariance gaps of randomly initialised encoders, per encoding, for permutations and the reversal.

    For each model (``(encoding, causal)`` pairs): ``n_inputs`` random sequences of ``length`` tokens,
    ``n_perms`` random permutations, and the reversal. Reported per model: the largest hidden-state gap
    $\max|f(\Pi X) - \Pi f(X)|$ over random permutations (``perm_gap``) and for the reversal
    (``reversal_gap``), the same for the mean-pooled logits $\max|g(\Pi X) - g(X)|$ (``perm_readout_gap``,
    ``reversal_readout_gap``), and the typical size of the hidden states (``hidden_scale``, the RMS) so
    that a gap can be read relative to it. Weights are drawn $\mathcal N(0, \text{init\_std}^2)$ —
    larger than BERT's 0.02 at ``quick`` so that attention is far from uniform and the check is not
    trivially passed. Computed in ``dtype`` (float64: rounding near $10^{-15}$).

    Returns
    -------
    Result
        ``values["models"][label]`` with the gaps above; ``values["machine_epsilon"]``.
    """
    settings = _settings(settings)
    cfg = dict(CONFIGS[settings.scale]["model"])
    eq = dict(CONFIGS[settings.scale]["equivariance"])
    conf_threads = CONFIGS[settings.scale]["threads"]
    length = eq["length"] if length is None else length
    vocab_size = eq["vocab_size"] if vocab_size is None else vocab_size
    n_inputs = eq["n_inputs"] if n_inputs is None else n_inputs
    n_perms = eq["n_perms"] if n_perms is None else n_perms
    init_std = eq["init_std"] if init_std is None else init_std
    if dtype not in ("float32", "float64"):
        raise ValueError(f"dtype must be 'float32' or 'float64', got {dtype!r}")
    models = [(str(p), bool(c)) for p, c in models]
    params = dict(models=[list(m) for m in models], length=length, vocab_size=vocab_size, n_inputs=n_inputs,
                  n_perms=n_perms, init_std=init_std, dtype=dtype, model=cfg, seed=settings.seed)

    def compute():
        from ..models import build_model

        torch_dtype = getattr(torch, dtype)
        rng = np.random.default_rng(settings.seed)
        x = torch.as_tensor(rng.integers(1, vocab_size, size=(n_inputs, length)))
        perms = [rng.permutation(length) for _ in range(n_perms)]
        rev = reversal(length)
        out = {}
        for position, causal in tqdm(models, desc="equivariance", leave=False):
            config = model_config(position, causal, vocab_size=vocab_size, max_len=length, init_std=init_std, **cfg)
            model = build_model(config, "classification", seed=settings.seed).to(torch_dtype).eval()
            with torch.no_grad(), torch_threads(conf_threads):
                h = model.encoder(x)
            with torch_threads(conf_threads):
                gaps = dict(
                    perm_gap=max(equivariance_gap(model, x, p) for p in perms),
                    reversal_gap=equivariance_gap(model, x, rev),
                    perm_readout_gap=max(readout_gap(model, x, p) for p in perms),
                    reversal_readout_gap=readout_gap(model, x, rev),
                )
            out[model_label(position, causal)] = dict(
                position=position, causal=causal, **gaps, hidden_scale=float(h.pow(2).mean().sqrt()),
            )
        return {"models": out, "machine_epsilon": float(torch.finfo(torch_dtype).eps)}, {}

    return Registry(settings.results_dir).run(
        "necessity.equivariance", compute, params=params, scale=settings.scale, seed=settings.seed,
        device="cpu", model=None, force=force,
    )


# ---------------------------------------------------------------------------------------------
# the order-only task


def order_task_tensors(n_sequences: int, n_positions: int, vocab_size: int, *, seed: int, cls_token: bool = True):
    """The order-only task (:func:`posgeom.models.tasks.order_task_data`, every sequence of length
    ``n_positions``, ids shifted by 2: 0 padding, 1 ``[CLS]``, prepended with ``cls_token``) as tensors.

    Returns
    -------
    input_ids : LongTensor of shape (n_sequences, n_positions + cls_token)
    labels : LongTensor of shape (n_sequences,)
    """
    task = order_task_data(n_sequences, n_positions, vocab_size, min_length=None, seed=seed, cls_token=cls_token,
                           reserve_cls=True)
    return (torch.as_tensor(task.data.input_ids, dtype=torch.long),
            torch.as_tensor(task.data.labels, dtype=torch.long))


class _AccuracyCurve(Callback):
    """Callback: test accuracy every ``every`` steps (and before the first and after the last)."""

    def __init__(self, x, y, every: int):
        self.x, self.y, self.every = x, y, every
        self.steps: list[int] = []
        self.accuracy: list[float] = []

    @torch.no_grad()
    def _record(self, state):
        if self.steps and self.steps[-1] == state.step:
            return
        model = state.model
        was = model.training
        model.eval()
        dev = next(model.parameters()).device
        pred = torch.cat([model(self.x[i:i + 1024].to(dev)).logits.argmax(-1).cpu()
                          for i in range(0, len(self.x), 1024)])
        model.train(was)
        self.steps.append(int(state.step))
        self.accuracy.append(float((pred == self.y).float().mean()))

    def on_train_begin(self, state):
        self._record(state)

    def on_step_end(self, state):
        if state.step % self.every == 0:
            self._record(state)

    def on_train_end(self, state):
        self._record(state)

    def state_dict(self):
        return {"steps": list(self.steps), "accuracy": list(self.accuracy)}

    def load_state_dict(self, state):
        self.steps, self.accuracy = list(state["steps"]), list(state["accuracy"])


def run_order_task(settings=None, *, force: bool = False, models=MODELS, seeds=None, cls_token: bool = True,
                   steps: int | None = None, pooling: str = "mean", progress: bool = True) -> Result:
    r"""Train each model on the order-only task over several seeds; test accuracy and learning curves.

    Every sequence of the task has a twin — its reversal — with the opposite label, so both classes
    have the same bags of words and any model that ignores order is at exactly 1/2 in expectation
    (Theorem 1 for NoPE with the mean-pooled readout). Train and test sets are drawn with different
    seeds. ``cls_token`` prepends ``[CLS]`` at position 0 (BERT's convention; it is not reversed with
    the content, so the reversal is not a symmetry of the data).

    Returns
    -------
    Result
        ``values["models"][label]``: ``accuracy`` (list over seeds), ``mean``, ``std`` (over seeds,
        ``ddof=1``), ``min``, ``max``; ``values["chance"]`` = 0.5. Arrays ``"<label>__curve"``
        (n_seeds, n_evals) of test accuracy at the steps in ``"steps"``.
    """
    settings = _settings(settings)
    conf = CONFIGS[settings.scale]
    cfg, task, tr = dict(conf["model"]), dict(conf["task"]), dict(conf["train"])
    if steps is not None:
        tr["steps"] = steps
    seeds = tuple(conf["seeds"] if seeds is None else seeds)
    models = [(str(p), bool(c)) for p, c in models]
    device = resolve_device(settings.device)
    params = dict(models=[list(m) for m in models], seeds=list(seeds), cls_token=bool(cls_token), pooling=pooling,
                  model=cfg, task=task, train=tr, base_seed=settings.seed)

    def compute():
        from ..models import TrainConfig, build_model, train

        n, v = task["n_positions"], task["vocab_size"]
        x_tr, y_tr = order_task_tensors(task["n_train"], n, v, seed=settings.seed, cls_token=cls_token)
        x_te, y_te = order_task_tensors(task["n_test"], n, v, seed=settings.seed + 10_000, cls_token=cls_token)
        L = x_tr.shape[1]
        values, arrays = {}, {}
        runs = [(m, s) for m in models for s in seeds]
        bar = tqdm(runs, desc="order task", disable=not progress)
        curves: dict[str, list] = {}
        steps_axis = None
        for (position, causal), seed in bar:
            label = model_label(position, causal)
            bar.set_postfix(model=label, seed=seed)
            config = model_config(position, causal, vocab_size=v + OFFSET, max_len=L, pooling=pooling, **cfg)
            model = build_model(config, "classification", seed=seed)
            tc = TrainConfig(task="classification", batch_size=tr["batch_size"], max_steps=tr["steps"], lr=tr["lr"],
                             weight_decay=tr["weight_decay"], schedule=tr["schedule"], seed=seed, device=device,
                             progress=False)
            curve = _AccuracyCurve(x_te, y_te, tr["eval_every"])
            with torch_threads(conf["threads"], device):
                train(model, (x_tr, None, y_tr), tc, callbacks=[curve])
            curves.setdefault(label, []).append(curve.accuracy)
            steps_axis = curve.steps
        for label, cs in curves.items():
            c = np.asarray(cs)
            final = c[:, -1]
            position, causal = next(m for m in models if model_label(*m) == label)
            values[label] = dict(
                position=position, causal=causal, accuracy=final.tolist(), mean=float(final.mean()),
                std=float(final.std(ddof=1)) if final.size > 1 else 0.0, min=float(final.min()), max=float(final.max()),
            )
            arrays[f"{label}__curve"] = c
        arrays["steps"] = np.asarray(steps_axis)
        return {"models": values, "chance": 0.5, "n_test": int(len(y_te)), "seq_len": int(L)}, arrays

    return Registry(settings.results_dir).run(
        f"necessity.order_task{'' if cls_token else '_nocls'}", compute, params=params, scale=settings.scale,
        seed=settings.seed, device=device, model=None, force=force,
    )
