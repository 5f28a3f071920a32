"""Checkpoints of training and their resumption: the state of a run, durably written, found again by key.

A checkpoint holds weights, optimiser, scheduler, every process's RNG streams, the step, the losses and the
callbacks' records. Without an explicit ``checkpoint_dir`` it goes to ``<results>/<scale>/.checkpoints/<key>/``,
``key`` the digest of everything that defines the run (:func:`run_key`), so the next call with the same
arguments resumes it. A finished run removes its folder unless a deadline is set (then finished models are
skipped on rerun). Files carry their SHA-256; a damaged one is ignored with a warning and the run starts over.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import shutil
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

import numpy as np
import torch
from torch import nn

from ..storage import fsync_dir, write_durably
from .batches import as_token_data

if TYPE_CHECKING:
    from .training import TrainConfig, TrainState

CHECKPOINT_FORMAT = 2
#: Fields of :class:`~posgeom.models.training.TrainConfig` that may change between an interrupted run and its
#: resumption.
RESUMABLE_CHANGES = ("progress", "log_every", "checkpoint_dir", "checkpoint_every", "resume", "device",
                     "checkpoint_seconds", "compile")
CHECKPOINT_NAME = "last.pt"
#: File of a run's progress beside its state (read by :func:`checkpoint_progress` without loading the state).
CHECKPOINT_META = "meta.json"
#: Folder of the automatic checkpoints inside ``<results>/<scale>/`` (hidden: the registry does not list it).
CHECKPOINT_FOLDER = ".checkpoints"
_MAGIC = b"POSGEOM-TRAINING-CHECKPOINT\n"


class DamagedCheckpointError(ValueError):
    """A checkpoint file that is truncated, altered or of another format."""


def _config_record(config: TrainConfig) -> dict:
    """The training settings as plain JSON data (tuples as lists), as a checkpoint stores them."""
    out = asdict(config)
    out["betas"] = list(out["betas"])
    out["special_token_ids"] = list(out["special_token_ids"])
    return out


def _hash_tensor(h, t: torch.Tensor) -> None:
    t = t.detach().cpu().contiguous()
    h.update(f"{t.dtype}{tuple(t.shape)}".encode())
    if t.numel():
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())


def _plain_repr(value) -> str:
    """``repr(value)``, an identifier (a ``StrEnum`` member) as its text, so that run keys do not depend on it."""
    return repr(str(value) if isinstance(value, str) else value)


def _hash_value(h, value, depth: int = 0) -> None:
    """Feed ``value`` into ``h``: plain data, arrays and containers by content, other objects by type."""
    if isinstance(value, torch.Tensor):
        _hash_tensor(h, value)
    elif isinstance(value, np.ndarray):
        _hash_tensor(h, torch.from_numpy(np.ascontiguousarray(value)))
    elif value is None or isinstance(value, (bool, int, float, str, np.generic)):
        h.update(_plain_repr(value).encode())
    elif isinstance(value, dict) and depth < 4:
        for k in sorted(value, key=_plain_repr):
            h.update(_plain_repr(k).encode())
            _hash_value(h, value[k], depth + 1)
    elif isinstance(value, (list, tuple)) and depth < 4:
        h.update(f"{type(value).__name__}{len(value)}".encode())
        for v in value:
            _hash_value(h, v, depth + 1)
    else:
        h.update(f"<{type(value).__module__}.{type(value).__qualname__}>".encode())


def run_key(model: nn.Module, data, config: TrainConfig, callbacks: Sequence = (), *, world_size: int = 1) -> str:
    """The digest (24 hex digits) of everything that defines a training run.

    That is the model's class, config and initial weights, the training settings but those of
    :data:`RESUMABLE_CHANGES`, the data, the callbacks' settings and the number of processes.
    """
    h = hashlib.sha256(f"posgeom-train-{CHECKPOINT_FORMAT}".encode())
    h.update(f"{type(model).__module__}.{type(model).__qualname__}".encode())
    cfg = getattr(model, "config", None)
    _hash_value(h, asdict(cfg) if hasattr(cfg, "__dataclass_fields__") else repr(cfg))
    for name, tensor in model.state_dict().items():
        h.update(name.encode())
        _hash_tensor(h, tensor)
    record = {k: v for k, v in _config_record(config).items() if k not in RESUMABLE_CHANGES}
    h.update(json.dumps(record, sort_keys=True).encode())
    data = as_token_data(data)
    for name in ("input_ids", "attention_mask", "labels", "token_type_ids"):
        h.update(name.encode())
        _hash_value(h, getattr(data, name))
    for cb in callbacks:
        h.update(f"{type(cb).__module__}.{type(cb).__qualname__}".encode())
        _hash_value(h, {k: v for k, v in vars(cb).items()}, 1)
    h.update(f"world={world_size}".encode())
    return h.hexdigest()[:24]


def checkpoint_root(results_dir=None, scale: str | None = None) -> Path:
    """``<results>/<scale>/.checkpoints``, where training keeps the state of unfinished runs."""
    from ..config import default_results_dir, validate_scale
    if results_dir is None:
        raw = os.environ.get("POSGEOM_RESULTS_DIR")
        results_dir = Path(raw).expanduser() if raw else default_results_dir()
    scale = validate_scale(scale if scale is not None else os.environ.get("POSGEOM_SCALE", "quick"))
    return Path(results_dir) / scale / CHECKPOINT_FOLDER


def _encode(payload: dict) -> bytes:
    buffer = io.BytesIO()
    torch.save(payload, buffer)
    body = buffer.getvalue()
    return _MAGIC + hashlib.sha256(body).hexdigest().encode() + b"\n" + body


def _decode(raw: bytes, path: Path) -> dict:
    if not raw.startswith(_MAGIC):
        raise DamagedCheckpointError(f"{path} is not a posgeom training checkpoint of format {CHECKPOINT_FORMAT}")
    start = len(_MAGIC)
    digest, body = raw[start:start + 64].decode("ascii", "replace"), raw[start + 65:]
    if hashlib.sha256(body).hexdigest() != digest:
        raise DamagedCheckpointError(f"{path} does not match its checksum (truncated or altered)")
    try:
        payload = torch.load(io.BytesIO(body), map_location="cpu", weights_only=True)
    except Exception as err:  # a valid checksum over an unreadable body: another torch, or written by hand
        raise DamagedCheckpointError(f"{path} cannot be read ({type(err).__name__}: {err})") from None
    if not isinstance(payload, dict) or payload.get("format") != CHECKPOINT_FORMAT:
        raise DamagedCheckpointError(f"{path} is not a posgeom training checkpoint of format {CHECKPOINT_FORMAT}")
    return payload


def rng_state(device: str = "cpu") -> dict:
    """This process's generators: torch's CPU one, the training GPU's only, NumPy's and Python's."""
    np_state = np.random.get_state()
    py_state = random.getstate()
    return {
        "torch": torch.get_rng_state(),
        "cuda": [torch.cuda.get_rng_state(device)] if device.startswith("cuda") else [],
        "numpy": [np_state[0], torch.from_numpy(np_state[1].astype(np.int64)), int(np_state[2]), int(np_state[3]),
                  float(np_state[4])],
        "python": [py_state[0], list(py_state[1]), py_state[2]],
    }


def set_rng_state(rng: dict, device: str = "cpu") -> None:
    """Put back the generators :func:`rng_state` read (the CUDA one only when training on CUDA)."""
    torch.set_rng_state(rng["torch"])
    if rng["cuda"] and device.startswith("cuda"):
        torch.cuda.set_rng_state(rng["cuda"][0], device)
    name, keys, pos, has_gauss, gauss = rng["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), pos, has_gauss, gauss))
    version, internal, gauss_next = rng["python"]
    random.setstate((version, tuple(internal), gauss_next))


def training_origin() -> str:
    """``module:function`` of the experiment (else the first caller outside ``posgeom.models``) training now."""
    import sys
    frame, first = sys._getframe(1), None
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        qualname = getattr(frame.f_code, "co_qualname", frame.f_code.co_name)  # Python 3.11+: the qualified name
        name = f"{module}:{qualname.split('.<locals>')[0]}"
        if module.startswith("posgeom.experiments."):
            return name
        if first is None and not module.startswith("posgeom.models"):
            first = name
        frame = frame.f_back
    return first or "?"


def save_checkpoint(path, model, optimizer, scheduler, state: TrainState, callbacks: Sequence, *,
                    rng: Sequence[dict] | None = None, extra: dict | None = None) -> Path:
    """Durably write everything needed to resume (``rng``: every process's RNG states), then ``meta.json``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    extra = dict(extra or {})
    payload = {
        "format": CHECKPOINT_FORMAT,
        "step": state.step,
        "total_steps": state.total_steps,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "losses": list(state.losses),
        "lrs": list(state.lrs),
        "rng": list(rng) if rng is not None else [rng_state(state.device)],
        "callbacks": [cb.state_dict() for cb in callbacks],
        "train_config": _config_record(state.config),
        **extra,
    }
    data = _encode(payload)
    write_durably(path, data, fault="checkpoint")
    meta = {
        "format": CHECKPOINT_FORMAT, "file": path.name, "step": state.step, "total_steps": state.total_steps,
        "complete": state.step >= state.total_steps, "saved_at": time.time(), "bytes": len(data),
        "task": state.config.task, **{k: v for k, v in extra.items() if k in ("key", "origin", "model_config", "world",
                                                                                "seconds", "tokens")},
    }
    write_durably(path.parent / CHECKPOINT_META, json.dumps(meta, indent=1).encode())
    return path


def load_checkpoint(path) -> dict:
    """Read a checkpoint written by :func:`save_checkpoint`, verifying its checksum first.

    Raises
    ------
    DamagedCheckpointError
        The file is truncated, altered or not a checkpoint of this format; nothing of it is used.
    """
    path = Path(path)
    return _decode(path.read_bytes(), path)


def check_resumable(saved: dict, config: TrainConfig, path: Path) -> None:
    now = _config_record(config)
    diff = sorted(k for k in now if k not in RESUMABLE_CHANGES and saved.get(k) != now[k])
    if diff:
        details = ", ".join(f"{k}: {saved.get(k)!r} → {now[k]!r}" for k in diff)
        raise ValueError(
            f"the checkpoint {path} was written with other training settings ({details}); resuming would not "
            "reproduce that run. Use the same settings, another checkpoint_dir, or resume=False to start over"
        )


@dataclass(frozen=True)
class CheckpointProgress:
    """A stored training run (:func:`checkpoint_progress`)."""

    key: str
    folder: Path
    step: int
    total_steps: int
    complete: bool
    saved_at: float
    origin: str
    task: str
    bytes: int
    seconds: float | None = None

    @property
    def fraction(self) -> float:
        """Steps done over the run's steps."""
        return self.step / self.total_steps if self.total_steps else 0.0


def checkpoint_progress(results_dir=None, scale: str | None = None) -> list[CheckpointProgress]:
    """The training runs with a stored state under ``<results>/<scale>/.checkpoints``, oldest first."""
    root = checkpoint_root(results_dir, scale)
    out = []
    for meta_path in sorted(root.glob(f"*/{CHECKPOINT_META}")) if root.is_dir() else ():
        try:
            meta = json.loads(meta_path.read_text())
            out.append(CheckpointProgress(
                key=meta_path.parent.name, folder=meta_path.parent, step=int(meta["step"]),
                total_steps=int(meta["total_steps"]), complete=bool(meta["complete"]),
                saved_at=float(meta["saved_at"]), origin=str(meta.get("origin", "?")), task=str(meta.get("task", "?")),
                bytes=int(meta.get("bytes", 0)), seconds=meta.get("seconds"),
            ))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return sorted(out, key=lambda p: p.saved_at)


def discard_checkpoints(results_dir=None, scale: str | None = None, *, complete_only: bool = True) -> list[Path]:
    """Remove the stored states of finished runs (or all, ``complete_only=False``); the folders removed."""
    root = checkpoint_root(results_dir, scale)
    removed = []
    for folder in sorted(root.iterdir()) if root.is_dir() else ():
        if not folder.is_dir():
            continue
        if complete_only:
            try:
                if not json.loads((folder / CHECKPOINT_META).read_text()).get("complete"):
                    continue
            except (OSError, ValueError):
                continue
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    if removed:
        fsync_dir(root)
    return removed


def read_checkpoint(path: Path, *, stacklevel: int = 2) -> dict | None:
    """The checkpoint at ``path``, or None (with a warning when damaged) so that the run starts over."""
    if not path.is_file():
        return None
    try:
        return load_checkpoint(path)
    except (DamagedCheckpointError, OSError) as err:
        warnings.warn(f"ignoring the training checkpoint: {err}; the run starts over", stacklevel=stacklevel)
        return None


__all__ = [
    "CHECKPOINT_FORMAT", "CHECKPOINT_NAME", "CHECKPOINT_META", "CHECKPOINT_FOLDER", "RESUMABLE_CHANGES",
    "DamagedCheckpointError", "run_key", "checkpoint_root", "rng_state", "set_rng_state", "training_origin",
    "save_checkpoint", "load_checkpoint", "read_checkpoint", "check_resumable", "CheckpointProgress",
    "checkpoint_progress", "discard_checkpoints",
]
