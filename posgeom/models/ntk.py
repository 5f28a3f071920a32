r"""The empirical neural tangent kernel of a classifier's logit margin, and how far it moves in training.

Training is in the kernel (lazy) regime when $\|K_t - K_0\|_F / \|K_0\|_F \ll 1$. :func:`ntk_training`
trains a [CLS] classifier by plain SGD, lazily (Chizat, Oyallon and Bach 2019) or not, and records the
kernel's change and the order of its position table against a corpus geometry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import geometry as geo

if TYPE_CHECKING:
    import torch

__all__ = ["logit_margin_ntk", "relative_change", "ntk_classifier", "ntk_data", "ntk_training"]


def logit_margin_ntk(model, input_ids, attention_mask, names) -> torch.Tensor:
    r"""Empirical tangent kernel of the logit margin $f(x) = z_1(x) - z_0(x)$ on probe sequences.

    $K = J J^\top$ with $J_{a,:} = \nabla_\theta f(x_a)$ over the parameters ``names``.

    Parameters
    ----------
    model : EncoderForSequenceClassification
    input_ids, attention_mask : Tensor of shape (m, L)
    names : sequence of str
        Parameter names to differentiate.

    Returns
    -------
    K : Tensor of shape (m, m), float64
    """
    import torch
    from torch.func import functional_call, grad
    params = {k: v.detach() for k, v in model.named_parameters()}
    wrt = {k: params[k] for k in names}
    fixed = {k: v for k, v in params.items() if k not in wrt}

    def margin(p, ids, mask):
        out = functional_call(model, {**fixed, **p}, (ids[None], mask[None]))
        return out.logits[0, 1] - out.logits[0, 0]

    g = grad(margin)
    rows = []
    for a in range(input_ids.shape[0]):
        ga = g(wrt, input_ids[a], attention_mask[a])
        rows.append(torch.cat([ga[k].reshape(-1) for k in names]))
    J = torch.stack(rows)
    # float64 on the CPU (exact enough for tiny kernel changes); float32 on a GPU, where J can be large
    if J.device.type == "cpu":
        J = J.double()
    return (J @ J.T).double().cpu()


def relative_change(K, K0) -> float:
    r"""$\|K - K_0\|_F / \|K_0\|_F$ of two kernels (tensors)."""
    import torch
    return float(torch.linalg.norm(K - K0) / torch.linalg.norm(K0))


def ntk_classifier(vocab_size: int, reg: dict[str, Any], n_positions: int, seed: int):
    r"""The [CLS] classifier of one regime ``reg``: no dropout, a learned table of ``n_positions`` rows."""
    from .encoder import EncoderConfig, build_model
    config = EncoderConfig(vocab_size=vocab_size, d_model=reg["d_model"], n_layers=reg["n_layers"],
                           n_heads=reg["n_heads"], d_ff=reg["d_ff"], max_len=n_positions, dropout=0.0,
                           attention_dropout=0.0, pooling="cls", init_std=reg.get("init_std") or 0.02,
                           position_options={"sigma": reg.get("table_sigma") or 0.02})
    return build_model(config, "classification", seed=seed)


class _ScaledLogits:
    r"""The logits trained on: $f_\theta(x)$, or with lazy training $\alpha (f_\theta(x) - f_{\theta_0}(x))$."""

    def __init__(self, model, alpha):
        import copy
        self.model, self.alpha = model, alpha
        self.model0 = copy.deepcopy(model).eval() if alpha else None

    def __call__(self, x, m):
        import torch
        if not self.alpha:
            return self.model(x, m).logits
        with torch.no_grad():
            z0 = self.model0(x, m).logits
        # f_alpha(x) = alpha (f_theta(x) - f_theta0(x))
        return self.alpha * (self.model(x, m).logits - z0)


class _NTKRecorder:
    """Records, at chosen steps, the kernel's change, the table's order against ``D`` and the training loss."""

    KEYS = ("step", "kernel_change", "kernel_change_table", "violation", "spearman", "violation_delta",
            "spearman_delta", "table_motion", "train_loss")

    def __init__(self, model, logits, D, positions, probe, names, table_name, train):
        self.model, self.logits, self.D, self.positions = model, logits, D, positions
        self.probe, self.names, self.table_name, self.train = probe, names, table_name, train
        self.P0 = self._table().copy()
        model.eval()
        self.K0 = logit_margin_ntk(model, *probe, names)
        self.K0p = logit_margin_ntk(model, *probe, [table_name])
        self.rec = {k: [] for k in self.KEYS}

    def _table(self) -> np.ndarray:
        return self.model.encoder.positional.table().detach().double().cpu().numpy()[self.positions]

    def train_loss(self) -> float:
        """Mean cross-entropy over the training pool, in batches of 256."""
        import torch
        X, M, Y = self.train
        with torch.no_grad():
            return float(sum(torch.nn.functional.cross_entropy(self.logits(X[i:i + 256], M[i:i + 256]), Y[i:i + 256],
                                                               reduction="sum") for i in range(0, X.shape[0], 256))
                         / X.shape[0])

    def record(self, step: int) -> None:
        self.model.eval()
        P = self._table()
        dP = P - self.P0
        rec = self.rec
        rec["step"].append(step)
        rec["kernel_change"].append(relative_change(logit_margin_ntk(self.model, *self.probe, self.names), self.K0))
        rec["kernel_change_table"].append(
            relative_change(logit_margin_ntk(self.model, *self.probe, [self.table_name]), self.K0p))
        a = geo.monotonicity_of(self.D, geo.euclidean_distances(P))
        b = geo.monotonicity_of(self.D, geo.euclidean_distances(dP)) if np.any(dP) else \
            {"violation_rate": float("nan"), "spearman": float("nan")}
        rec["violation"].append(a["violation_rate"])
        rec["spearman"].append(a["spearman"])
        rec["violation_delta"].append(b["violation_rate"])
        rec["spearman_delta"].append(b["spearman"])
        rec["table_motion"].append(float(np.linalg.norm(dP) / np.linalg.norm(self.P0)))
        rec["train_loss"].append(self.train_loss())
        self.model.train()


def ntk_data(tokens, probe_sequences: int, train_sequences: int | None, seed: int,
             name: str = "the corpus") -> dict[str, Any]:
    """The ``data`` of :func:`ntk_training`: seeded probe sequences and a training pool from a labelled corpus.

    Parameters
    ----------
    tokens : posgeom.corpora.tokenize.TokenizedCorpus
        With ``labels``.
    train_sequences : int or None
        None: all the rest.
    name : str
        The corpus, in the error raised when it has no labels.

    Returns
    -------
    dict
        ``ids``, ``mask`` (N, L), ``labels`` (N,), ``probe`` (m,) and ``pool`` row indices, ``vocab_size``.
    """
    ids, mask = tokens.model_inputs()
    if tokens.labels is None:
        raise ValueError(f"{name} has no labels: the [CLS] classifier needs them")
    order = np.random.default_rng(seed).permutation(ids.shape[0])
    probe, pool = order[:probe_sequences], order[probe_sequences:]
    if train_sequences is not None:
        pool = pool[:train_sequences]
    return {"ids": ids, "mask": mask, "labels": tokens.labels, "probe": probe, "pool": pool,
            "vocab_size": tokens.vocab_size}


def ntk_training(data: dict[str, np.ndarray], D, positions, reg: dict[str, Any], opts, seed: int,
                 device: str, progress: bool = True) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    r"""Train one [CLS] classifier by plain SGD and record its tangent kernel and its table's order against ``D``.

    Not :func:`posgeom.models.training.train`: the NTK argument is about gradient descent (AdamW rescales each
    coordinate), and lazy training needs the output $\alpha (f_\theta - f_{\theta_0})$ with the loss divided
    by $\alpha^2$.

    Parameters
    ----------
    data : dict
        From :func:`ntk_data`.
    D : ndarray of shape (k, k)
        The corpus geometry on ``positions`` (k,).
    reg : dict
        :class:`~posgeom.experiments.monotonicity_ntk.NTKRegime` fields.
    opts : posgeom.experiments.monotonicity_ntk.NTKOptions

    Returns
    -------
    values, arrays
        As stored by :func:`posgeom.experiments.monotonicity_ntk.run_ntk`.
    """
    from .threads import torch_threads

    # a model this small runs faster on one CPU thread than on two (posgeom.models.threads)
    with torch_threads(opts.threads, device):
        return _sgd_training(data, D, positions, reg, opts, seed, device, progress)


def _sgd_training(data, D, positions, reg, opts, seed, device, progress):
    """The body of :func:`ntk_training` (its threads set)."""
    import torch

    from ..progress import tqdm
    ids, mask, labels, probe, pool = (data[k] for k in ("ids", "mask", "labels", "probe", "pool"))
    model = ntk_classifier(data["vocab_size"], reg, opts.n_positions, seed)
    names = [k for k, _ in model.named_parameters() if "embeddings.word" not in k]
    table_name = next(k for k in names if k.endswith("embeddings.position.weight"))
    model.to(device)
    alpha = reg.get("output_scale")
    logits = _ScaledLogits(model, alpha)
    t_ids, t_mask = torch.as_tensor(ids[probe], device=device), torch.as_tensor(mask[probe], device=device)
    X, M, Y = (torch.as_tensor(t, device=device) for t in (ids[pool], mask[pool], labels[pool]))
    recorder = _NTKRecorder(model, logits, D, positions, (t_ids, t_mask), names, table_name, (X, M, Y))
    opt = torch.optim.SGD(model.parameters(), lr=reg["lr"])
    gen = torch.Generator().manual_seed(seed)
    losses = []
    recorder.record(0)
    model.train()
    for step in tqdm(range(1, opts.steps + 1), desc="SGD", unit="step", disable=not progress):
        idx = torch.randint(0, X.shape[0], (opts.batch_size,), generator=gen).to(device)
        loss = torch.nn.functional.cross_entropy(logits(X[idx], M[idx]), Y[idx])
        opt.zero_grad(set_to_none=True)
        # lazy training: the loss of f_alpha divided by alpha^2
        (loss / alpha**2 if alpha else loss).backward()
        opt.step()
        losses.append(float(loss.detach()))
        if step % opts.record_every == 0 or step == opts.steps:
            recorder.record(step)
    model.eval()
    with torch.no_grad():
        acc = float((logits(t_ids, t_mask).argmax(-1).cpu().numpy() == labels[probe]).mean())
    rec = recorder.rec
    arrays = {k: np.asarray(v, dtype=np.float64) for k, v in rec.items()}
    arrays.update(loss=np.asarray(losses), D=D, positions=positions)
    values = {"n_params_kernel": int(sum(p.numel() for k, p in model.named_parameters() if k in names)),
              "final": {k: float(v[-1]) for k, v in rec.items()}, "probe_accuracy": acc,
              "final_loss": float(np.mean(losses[-20:])), "final_train_loss": rec["train_loss"][-1]}
    return values, arrays
