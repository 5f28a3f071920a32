r"""The empirical neural tangent kernel of a classifier's logit margin, and how far it moves in training.

For the logit margin $f(x) = z_1(x) - z_0(x)$ of a two-class classifier and probe inputs $x_1, \dots, x_m$,
the empirical tangent kernel over a set of parameters $\theta$ is $K = J J^\top$ with
$J_{a,:} = \nabla_\theta f(x_a)$ (:func:`logit_margin_ntk`); training is in the kernel (lazy) regime when
$\|K_t - K_0\|_F / \|K_0\|_F \ll 1$ (:func:`relative_change`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

__all__ = ["logit_margin_ntk", "relative_change"]


def logit_margin_ntk(model, input_ids, attention_mask, names) -> torch.Tensor:
    r"""Empirical tangent kernel of the logit margin $f(x) = z_1(x) - z_0(x)$ on probe sequences.

    $K = J J^\top$ with $J_{a,:} = \nabla_\theta f(x_a)$ over the parameters ``names``; the gradients come
    from ``torch.func.grad`` of a ``torch.func.functional_call`` per probe (the model in eval mode).

    Parameters
    ----------
    model : EncoderForSequenceClassification
    input_ids, attention_mask : Tensor of shape (m, L)
    names : sequence of str
        Parameter names to differentiate (e.g. every parameter except the word embeddings).

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
