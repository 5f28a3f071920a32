"""Several GPUs: the ``torchrun`` step of a chapter (``Chapter.ddp``) and one of its processes."""

from __future__ import annotations

import importlib
import os
import sys
from contextlib import contextmanager
from typing import Callable, Sequence

from ..codekey import code_key, code_roots
from ..config import get_settings, resolve_device
from ..registry import Registry, Result, params_key

#: Exit status of a ``torchrun`` worker whose training stopped at the deadline (EX_TEMPFAIL: call again).
INTERRUPTED_EXIT = 75


def ddp_command(entry_points: Sequence[str], nproc: int, *, printable: bool = False) -> list[str]:
    """The ``torchrun`` command running ``entry_points`` in ``nproc`` processes (``printable``: as typed)."""
    if nproc < 2:
        raise ValueError(f"torchrun is for several processes; got nproc={nproc}")
    launcher = ["torchrun"] if printable else [sys.executable, "-m", "torch.distributed.run"]
    return [*launcher, "--standalone", f"--nproc_per_node={nproc}", "-m", "posgeom.cli", "--debug", "reproduce",
            "--ddp-worker", *entry_points]


def _resolve_entry_point(entry_point: str) -> Callable:
    module, sep, name = entry_point.partition(":")
    if not sep or not module or not name:
        raise ValueError(f"entry point {entry_point!r} must read 'package.module:function'")
    function = getattr(importlib.import_module(module), name, None)
    if not callable(function):
        raise ValueError(f"entry point {entry_point!r}: {module} has no function {name!r}")
    return function


@contextmanager
def _registry_written_by(rank: int):
    """On ranks other than 0, ``Registry.save`` returns the result without writing it."""
    if rank == 0:
        yield
        return
    original = Registry.save

    def save_in_memory(self, experiment, values, *, params, scale, seed, device, model=None, runtime_s=None,
                       arrays=None, code=None, record=None):
        roots = code_roots(code) if code is None or isinstance(code, str) else tuple(code)
        manifest = {"experiment": experiment, "key": params_key(params), "scale": scale, "seed": seed,
                    "device": device, "model": model, "runtime_s": runtime_s, "code_modules": list(roots),
                    "code_key": code_key(roots), "written": False, "rank": rank,
                    **({"record": record} if record else {})}
        return Result(experiment, scale, manifest["key"], dict(values), dict(arrays or {}), manifest)

    Registry.save = save_in_memory
    try:
        yield
    finally:
        Registry.save = original


def run_ddp_worker(entry_points: Sequence[str], settings=None) -> None:
    """One ``torchrun`` process: join the group (NCCL on CUDA, gloo on the CPU), call each ``function(settings)``."""
    import torch
    import torch.distributed as dist
    functions = [_resolve_entry_point(e) for e in entry_points]
    settings = settings if settings is not None else get_settings()
    cuda = resolve_device(settings.device).startswith("cuda")
    if cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl" if cuda else "gloo")
    try:
        with _registry_written_by(dist.get_rank()):
            for function in functions:
                function(settings)
                dist.barrier()
    finally:
        dist.destroy_process_group()


def default_nproc(scale: str, device: str) -> int:
    """Processes for torchrun: the number of CUDA devices at ``paper`` scale on CUDA, else 1."""
    if scale != "paper" or not resolve_device(device).startswith("cuda") or device.startswith("cuda:"):
        return 1
    import torch
    return torch.cuda.device_count()
