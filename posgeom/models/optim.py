r"""The optimiser of training: AdamW with BERT's weight-decay groups and a warm-up then decay schedule.

The rate is $\eta f(t)$ with $f(t) = t / w$ for $t < w$, then $(T - t) / (T - w)$ (``"linear"``) or 1.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn

if TYPE_CHECKING:
    from .training import TrainConfig


def param_groups(model: nn.Module, weight_decay: float):
    """AdamW groups: no decay on biases and LayerNorm weights (as BERT)."""
    decay, no_decay, seen = [], [], set()
    norm_params = {id(p) for m in model.modules() if isinstance(m, nn.LayerNorm) for p in m.parameters()}
    for name, p in model.named_parameters():
        if not p.requires_grad or id(p) in seen:
            continue
        seen.add(id(p))
        (no_decay if (name.endswith("bias") or id(p) in norm_params) else decay).append(p)
    return [{"params": decay, "weight_decay": weight_decay}, {"params": no_decay, "weight_decay": 0.0}]


def lr_factor(step: int, warmup: int, total: int, schedule: str = "linear") -> float:
    """The multiplier of the base learning rate after ``step`` optimiser steps."""
    if step < warmup:
        # eta_t = eta t / w
        return step / warmup
    if schedule == "constant":
        return 1.0
    # eta_t = eta (T - t) / (T - w)
    return max(0.0, (total - step) / max(1, total - warmup))


def build_optimizer(model: nn.Module, config: TrainConfig, device: str, warmup: int, total: int):
    """AdamW over :func:`param_groups` (fused on CUDA unless ``config.fused`` says) and its :func:`lr_factor` schedule.

    Returns
    -------
    optimizer : torch.optim.AdamW
    scheduler : torch.optim.lr_scheduler.LambdaLR
    """
    fused = config.fused if config.fused is not None else device.startswith("cuda")
    optimizer = torch.optim.AdamW(
        param_groups(model, config.weight_decay), lr=config.lr, betas=config.betas, eps=config.eps,
        **({"fused": True} if fused else {"foreach": True}),
    )
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda t: lr_factor(t, warmup, total, config.schedule))
    return optimizer, scheduler


__all__ = ["param_groups", "lr_factor", "build_optimizer"]
