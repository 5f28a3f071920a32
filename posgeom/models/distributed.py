r"""Several processes: the plumbing of :class:`torch.nn.parallel.DistributedDataParallel` in training.

Each of the ``W`` processes takes a contiguous share of every global batch, masked before it is split. DDP
averages the shards' gradients; shard ``r`` with ``n_r`` of the batch's ``n`` loss terms scales its mean
loss by $W n_r / n$, so the step is that of the one-process loss $\frac1n \sum_i \ell_i$. Every process
returns what a one-process run returns (up to rounding and dropout); only rank 0 shows progress and saves.
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
    """Every process must get at least one row of every batch, the short last one included."""
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
    """``model`` itself in one process, else wrapped in DDP (with ``find_unused_parameters``: some get no gradient)."""
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
