r"""Precision and memory on the training device: bf16 autocast on CUDA, and out-of-memory advice."""

from __future__ import annotations

import torch

__all__ = ["PRECISIONS", "TrainingOOMError", "autocast", "is_oom", "oom_message", "resolve_precision"]

#: Numeric precisions of a run: ``"auto"`` is bf16 autocast on CUDA and fp32 elsewhere.
PRECISIONS = ("auto", "fp32", "bf16")


class TrainingOOMError(RuntimeError):
    """Out of memory during a training step; the message names the batch size to try next."""


def is_oom(err: BaseException) -> bool:
    """Whether ``err`` is the device (or the host) running out of memory."""
    if isinstance(err, torch.OutOfMemoryError):
        return True
    text = str(err).lower()
    return isinstance(err, RuntimeError) and ("out of memory" in text or "can't allocate memory" in text)


def oom_message(batch_size: int, seq_len: int, device: str) -> str:
    """What ran out, and the batch size (or the change) to try next."""
    if batch_size > 1:
        nxt = batch_size // 2
        return (
            f"out of memory on {device} at batch_size={batch_size} (sequence length {seq_len}); "
            f"try batch_size={nxt} (and, to keep the effective batch, twice as many steps or a larger lr schedule), "
            "or a shorter max_len"
        )
    return (
        f"out of memory on {device} even at batch_size=1 (sequence length {seq_len}); "
        "use a shorter max_len, a smaller model (get_config overrides) or precision='bf16' on CUDA"
    )


def autocast(device: str, precision: str):
    """bf16 autocast under ``"bf16"``; otherwise a context that turns autocast off."""
    if precision == "bf16":
        return torch.autocast(device_type=device.split(":")[0], dtype=torch.bfloat16)
    return torch.autocast(device_type=device.split(":")[0], enabled=False)


def resolve_precision(precision: str, device: str) -> str:
    """``"auto"`` read on ``device``: bf16 on CUDA, fp32 elsewhere."""
    if precision == "auto":
        return "bf16" if device.startswith("cuda") else "fp32"
    return precision
