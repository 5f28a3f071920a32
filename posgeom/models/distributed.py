r"""Several processes: the plumbing of :class:`torch.nn.parallel.DistributedDataParallel` in training.

With ``torchrun --nproc_per_node=N`` (or any launcher that initialises ``torch.distributed``), when a
process group of ``W > 1`` processes is initialised, :func:`posgeom.models.training.train` wraps the
model in DDP (:func:`wrap_model`) and each process takes its contiguous share of every global batch of
``batch_size`` rows (masked before it is split, so the masking is that of one process:
:func:`posgeom.models.batches.step_batch`). DDP averages the gradients of the shards, so with equal
shards and a loss that is a mean over examples (classification),
$\nabla \mathcal L = \frac{1}{W}\sum_{r=1}^{W} \nabla \mathcal L_r$, the step is the one-process step
on the same global batch. When the shards are not equal (MLM: the masked tokens of each shard; the short
last batch of an epoch), shard ``r`` with ``n_r`` of the batch's ``n`` loss terms scales its mean loss by
$W n_r / n$, so the averaged gradient is still that of $\frac1n \sum_i \ell_i$, the one-process loss.
Every process records the loss of the whole batch ($\sum_r n_r \mathcal L_r / n$, one all-reduce per
``log_every`` steps: :func:`batch_losses`) and runs the callbacks (their models are identical), so every
process returns what a one-process run returns, up to rounding and dropout (each process draws the
dropout of its own shard). Only rank 0 shows progress and writes checkpoints. On CUDA, process ``r``
uses the GPU ``LOCAL_RANK`` (set by ``torchrun``: :func:`process_device`).
"""

from __future__ import annotations

import math
import os

import torch
from torch import nn


def distributed_context() -> tuple[int, int]:
    """``(rank, world_size)`` of the initialised ``torch.distributed`` process group, else ``(0, 1)``."""
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def process_device(device: str) -> str:
    """The device of this process: on CUDA the GPU ``LOCAL_RANK`` (``torchrun``), else ``device``."""
    if not device.startswith("cuda"):
        return device
    local = os.environ.get("LOCAL_RANK")
    index = int(local) if local is not None else torch.distributed.get_rank() % max(1, torch.cuda.device_count())
    return f"cuda:{index}"


def check_shards(n_rows: int, batch_size: int, world: int) -> None:
    """Every process must get at least one row of every batch of the ``n_rows`` visited, the short last one included."""
    if batch_size % world:
        raise ValueError(
            f"batch_size={batch_size} is not divisible by the {world} processes of the process group; "
            f"use a batch size that is a multiple of {world}, or launch {math.gcd(batch_size, world)} processes"
        )
    short = n_rows % batch_size  # the last batch of an epoch (the only one when n_rows < batch_size)
    if 0 < short < world:
        raise ValueError(
            f"a batch of {short} rows cannot be shared by {world} processes (N = {n_rows} rows, batch_size = "
            f"{batch_size}); use fewer processes, or a number of rows whose remainder modulo batch_size is 0 or ≥ {world}"
        )


def wrap_model(model: nn.Module, device: str, world: int) -> nn.Module:
    """``model`` itself in one process; in ``world > 1`` processes, wrapped in DDP (whose parameters start
    from rank 0's), which averages the gradients of the shards.

    ``find_unused_parameters``: a model may hold parameters its loss does not use (they then get no
    gradient, and DDP must not wait for one); the search costs one walk over the graph per step.
    """
    if world == 1:
        return model
    from torch.nn.parallel import DistributedDataParallel

    return DistributedDataParallel(
        model, device_ids=[torch.device(device).index] if device.startswith("cuda") else None,
        find_unused_parameters=True,
    )


def batch_losses(values: torch.Tensor, world: int) -> torch.Tensor:
    """The losses of whole batches from each process's weighted shard losses ``values`` (S,)."""
    if world > 1:
        # the batch's loss: sum_r n_r L_r / n = (1/W) sum_r (W n_r / n) L_r
        torch.distributed.all_reduce(values)
        values = values / world
    return values


def any_process(flags: list[bool], device: str) -> list[bool]:
    """Each flag true in some process, in every process (one all-reduce)."""
    tensor = torch.tensor(flags, dtype=torch.int32, device=device)
    torch.distributed.all_reduce(tensor, op=torch.distributed.ReduceOp.MAX)
    return [bool(f) for f in tensor.tolist()]


def gather(obj, world: int) -> list:
    """``obj`` of every process, by rank (``[obj]`` in one process)."""
    if world == 1:
        return [obj]
    out = [None] * world
    torch.distributed.all_gather_object(out, obj)
    return out


def barrier(world: int) -> None:
    """Wait for every process (nothing to wait for in one)."""
    if world > 1:
        torch.distributed.barrier()


__all__ = ["distributed_context", "process_device", "check_shards", "wrap_model", "batch_losses", "any_process",
           "gather", "barrier"]
