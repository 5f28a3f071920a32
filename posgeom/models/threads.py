"""``torch_threads``: run a block with a given number of CPU threads (the ``quick`` models run fastest on one)."""

from __future__ import annotations

from contextlib import contextmanager


@contextmanager
def torch_threads(n: int | None, device: str = "cpu"):
    """Use ``n`` intra-op threads inside the block (nothing changes when ``n`` is None or on a GPU)."""
    import torch
    if n is None or not str(device).startswith("cpu"):
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(int(n))
    try:
        yield
    finally:
        torch.set_num_threads(before)


__all__ = ["torch_threads"]
