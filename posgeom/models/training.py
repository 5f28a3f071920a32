r"""Training loop: masked language modelling and sequence classification, resumable and reproducible.

**MLM** (Devlin et al. 2019): each non-special token is selected with probability $p = 0.15$;
of the selected ones 80 % become ``[MASK]``, 10 % a uniformly random token, 10 % stay unchanged;
the loss is the cross-entropy at the selected positions only,
$\mathcal L = -\frac{1}{|S|}\sum_{i \in S} \log p_\theta(x_i \mid \tilde x)$.

**Classification**: cross-entropy of the label given the pooled sequence.

**Optimiser**: AdamW (decoupled weight decay, none on biases and LayerNorm weights, as BERT) with
a linear warm-up then linear decay,

.. math:: \eta_t = \eta \cdot \begin{cases} t / w & t < w \\ (T - t) / (T - w) & t \ge w \end{cases}

and gradient clipping $g \leftarrow g \min(1, c / \|g\|)$.

**Reproducibility.** Every source of randomness is a function of ``seed`` and the step: the order
of epoch ``e`` comes from a generator seeded with ``(seed, e)``, the masking of step ``t`` from one
seeded with ``(seed, t)``, and the global RNG (dropout) state is saved in each checkpoint. So on the
CPU two runs with the same seed give identical numbers, and a run interrupted and resumed from its
last checkpoint ends with exactly the numbers of the uninterrupted run (tested).

**Preemption-safe.** :func:`train` saves its full state — weights, optimiser, scheduler, the RNG
streams (torch CPU and CUDA, NumPy's and Python's global generators, of every process), the step (which
fixes the epoch and the position in its order), the loss history and the callbacks' records — every
``checkpoint_seconds`` of training, on ``SIGTERM`` and at a deadline (:func:`deadline`, or the UNIX
time in ``POSGEOM_DEADLINE``), where it then raises :class:`TrainingInterrupted`. Without an explicit
``checkpoint_dir`` the state goes to ``<results>/<scale>/.checkpoints/<key>/``, ``key`` being the digest
of everything that defines the run (:func:`run_key`: initial weights, model config, training settings,
data, callbacks, processes); the next call with the same arguments continues from it and ends with
exactly the numbers of an uninterrupted run (tested, bit for bit on the CPU). A finished run removes its
folder, unless a deadline is set: then it keeps its final state, so that an experiment training several
models and interrupted in a later one skips the finished ones when called again
(:func:`discard_checkpoints` removes them; :func:`checkpoint_progress` lists the stored runs). Files
are written durably (temporary file, fsync, atomic rename) and carry their SHA-256; a damaged one is
ignored with a warning and the run starts over.

**Padding.** ``padding="full"`` trains every batch at the data's length ``L``; ``"trim"`` cuts each
batch to its longest sequence (same batches, same masking: the losses equal the padded ones up to
rounding, since padding keys are masked); ``"bucket"`` also groups rows of similar length (each chunk
of :data:`BUCKET_BATCHES` batches of the epoch's order is sorted by length, cut into batches, and the
batches are shuffled), which changes which rows share a batch.

**CUDA**: bf16 autocast and the fused AdamW kernel (``precision="auto"``, ``fused=None`` pick them
on CUDA only); ``compile=True`` runs the model through ``torch.compile``. Running out of memory
raises :class:`TrainingOOMError` naming the batch size to try.

**Several processes** (``torchrun --nproc_per_node=N``, or any launcher that initialises
``torch.distributed``): when a process group of ``W > 1`` processes is initialised, :func:`train` wraps
the model in :class:`torch.nn.parallel.DistributedDataParallel` and each process takes its contiguous
share of every global batch of ``batch_size`` rows (masked before it is split, so the masking is that of
one process). DDP averages the gradients of the shards, so with equal shards and a loss that is a mean
over examples (classification),

.. math:: \nabla \mathcal L = \frac{1}{W}\sum_{r=1}^{W} \nabla \mathcal L_r ,

the step is the one-process step on the same global batch. When the shards are not equal (MLM: the
masked tokens of each shard; the short last batch of an epoch), shard ``r`` with ``n_r`` of the batch's
``n`` loss terms scales its mean loss by $W n_r / n$, so the averaged gradient is still that of
$\frac1n \sum_i \ell_i$, the one-process loss. Every process records the loss of the whole
batch ($\sum_r n_r \mathcal L_r / n$, one all-reduce per ``log_every`` steps) and runs the callbacks
(their models are identical), so every process returns what a one-process run returns, up to rounding
and dropout (each process draws the dropout of its own shard). Only rank 0 shows progress and writes
checkpoints. On CUDA, process ``r`` uses the GPU ``LOCAL_RANK`` (set by ``torchrun``).
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import random
import shutil
import signal
import threading
import time
import warnings
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import numpy as np
import torch
from torch import nn

from ..config import resolve_device
from ..storage import fsync_dir, write_durably

TASKS = ("mlm", "classification")
PRECISIONS = ("auto", "fp32", "bf16")
SCHEDULES = ("linear", "constant")
PADDINGS = ("full", "trim", "bucket")
#: How each scale pads its training batches: ``quick`` trains at the data's full length (as the book's
#: quick numbers were made); ``paper`` groups rows of similar length so that padding is not trained on
#: (the GPU cost model, :mod:`posgeom.costmodel`, counts the bucketed tokens). Experiments pass
#: ``padding=SCALE_PADDING[settings.scale]``.
SCALE_PADDING = {"quick": "full", "paper": "bucket"}
#: ``padding="bucket"``: batches per chunk of the epoch's order that is sorted by length.
BUCKET_BATCHES = 50
CHECKPOINT_FORMAT = 2
#: Environment variable: a UNIX time by which :func:`train` saves its state and stops (see :func:`deadline`).
DEADLINE_ENV = "POSGEOM_DEADLINE"
#: bert-base-uncased ids: [PAD]=0, [CLS]=101, [SEP]=102, [MASK]=103.
BERT_MASK_ID = 103
BERT_SPECIAL_IDS = (0, 101, 102, 103)
#: Fields of :class:`TrainConfig` that may change between an interrupted run and its resumption.
RESUMABLE_CHANGES = ("progress", "log_every", "checkpoint_dir", "checkpoint_every", "resume", "device",
                     "checkpoint_seconds", "compile")


class TrainingOOMError(RuntimeError):
    """Out of memory during a training step; the message names the batch size to try next."""


class TrainingInterrupted(RuntimeError):
    """Training stopped at a deadline or on ``SIGTERM`` after saving its state; call again to continue.

    Attributes
    ----------
    steps_done, total_steps : int
        Optimiser steps done (all saved) and the run's length.
    reason : str
        ``"deadline"`` or ``"SIGTERM"``.
    checkpoint : pathlib.Path or None
        The saved state (None when nothing had been trained yet).
    """

    def __init__(self, steps_done: int, total_steps: int, reason: str, checkpoint: Path | None):
        self.steps_done, self.total_steps, self.reason, self.checkpoint = steps_done, total_steps, reason, checkpoint
        where = f"its state is saved in {checkpoint}" if checkpoint is not None else "nothing was trained yet"
        super().__init__(
            f"training stopped at step {steps_done} of {total_steps} ({reason}); {where}: "
            "call again with the same arguments to continue"
        )


@dataclass
class TrainConfig:
    """Hyper-parameters of :func:`train`. Invalid values raise :class:`ValueError` at creation.

    ``max_steps`` wins over ``epochs`` when given. ``warmup_steps`` wins over ``warmup_ratio``.
    ``checkpoint_dir`` None saves to the run's own folder under the results (see the module); the state
    is saved every ``checkpoint_seconds`` of training (None: only every ``checkpoint_every`` steps, at a
    deadline and on SIGTERM). ``padding``: one of :data:`PADDINGS` (module docstring).
    """

    task: str = "mlm"
    batch_size: int = 32
    max_steps: int | None = None
    epochs: float = 1.0
    lr: float = 5e-4
    weight_decay: float = 0.01
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-6
    warmup_steps: int | None = None
    warmup_ratio: float = 0.1
    schedule: str = "linear"
    max_grad_norm: float | None = 1.0
    seed: int = 0
    device: str = "auto"
    precision: str = "auto"
    fused: bool | None = None
    mlm_probability: float = 0.15
    mask_token_id: int = BERT_MASK_ID
    special_token_ids: tuple[int, ...] = BERT_SPECIAL_IDS
    log_every: int = 10
    checkpoint_dir: str | None = None
    checkpoint_every: int | None = None
    resume: bool = True
    progress: bool = True
    checkpoint_seconds: float | None = 300.0
    padding: str = "full"
    compile: bool = False

    def __post_init__(self):
        if self.task not in TASKS:
            raise ValueError(f"unknown task {self.task!r}; valid tasks are {', '.join(TASKS)}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"unknown precision {self.precision!r}; valid precisions are {', '.join(PRECISIONS)}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"unknown schedule {self.schedule!r}; valid schedules are {', '.join(SCHEDULES)}")
        if self.padding not in PADDINGS:
            raise ValueError(f"unknown padding {self.padding!r}; valid paddings are {', '.join(PADDINGS)}")
        if self.checkpoint_seconds is not None and not (isinstance(self.checkpoint_seconds, (int, float))
                                                        and not isinstance(self.checkpoint_seconds, bool)
                                                        and self.checkpoint_seconds > 0):
            raise ValueError(f"checkpoint_seconds must be > 0 or None, got {self.checkpoint_seconds!r}")
        for name in ("batch_size", "log_every"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        for name in ("max_steps", "checkpoint_every", "warmup_steps"):
            v = getattr(self, name)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < (0 if name == "warmup_steps" else 1)):
                raise ValueError(f"{name} must be a positive integer or None, got {v!r}")
        if self.max_steps is None and not self.epochs > 0:
            raise ValueError(f"epochs must be > 0 (or give max_steps), got {self.epochs!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr!r}")
        if not 0 <= self.warmup_ratio < 1:
            raise ValueError(f"warmup_ratio must be in [0, 1), got {self.warmup_ratio!r}")
        if self.max_grad_norm is not None and not self.max_grad_norm > 0:
            raise ValueError(f"max_grad_norm must be > 0 or None, got {self.max_grad_norm!r}")
        if not 0 < self.mlm_probability < 1:
            raise ValueError(f"mlm_probability must be in (0, 1), got {self.mlm_probability!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {self.seed!r}")
        self.betas = tuple(float(b) for b in self.betas)
        self.special_token_ids = tuple(int(t) for t in self.special_token_ids)


@dataclass
class TokenData:
    """Token-id sequences for training: plain tensors, no tokenizer or corpus loader needed.

    Attributes
    ----------
    input_ids : LongTensor (N, L)
    attention_mask : LongTensor (N, L) or None — 1 = token, 0 = padding (None: no padding)
    labels : LongTensor (N,) or None — class labels (classification only)
    token_type_ids : LongTensor (N, L) or None
    """

    input_ids: Any
    attention_mask: Any = None
    labels: Any = None
    token_type_ids: Any = None

    def __post_init__(self):
        self.input_ids = self._long(self.input_ids, "input_ids")
        if self.input_ids.dim() != 2 or self.input_ids.shape[0] == 0:
            raise ValueError(f"input_ids must be a non-empty (N, L) array, got shape {tuple(self.input_ids.shape)}")
        N, L = self.input_ids.shape
        for name in ("attention_mask", "token_type_ids"):
            v = getattr(self, name)
            if v is not None:
                v = self._long(v, name)
                if tuple(v.shape) != (N, L):
                    raise ValueError(f"{name} must have the shape of input_ids {(N, L)}, got {tuple(v.shape)}")
                setattr(self, name, v)
        if self.labels is not None:
            self.labels = self._long(self.labels, "labels")
            if tuple(self.labels.shape) != (N,):
                raise ValueError(f"labels must have shape (N,) = ({N},), got {tuple(self.labels.shape)}")

    @staticmethod
    def _long(x, name: str) -> torch.Tensor:
        t = torch.as_tensor(np.asarray(x) if not isinstance(x, torch.Tensor) else x)
        if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
            if t.dtype == torch.bool and name == "attention_mask":
                return t.long()
            raise ValueError(f"{name} must hold integers, got dtype {t.dtype}")
        return t.long()

    def __len__(self) -> int:
        return self.input_ids.shape[0]

    def batch(self, idx: torch.Tensor) -> dict[str, torch.Tensor]:
        """Rows ``idx`` as a dict of tensors (``input_ids``, and the others that exist)."""
        out = {"input_ids": self.input_ids[idx]}
        for name in ("attention_mask", "token_type_ids", "labels"):
            v = getattr(self, name)
            if v is not None:
                out[name] = v[idx]
        return out


_COLUMNS = {"input_ids": "input_ids", "attention_mask": "attention_mask", "token_type_ids": "token_type_ids",
            "labels": "labels", "label": "labels"}


def as_token_data(data) -> TokenData:
    """A :class:`TokenData` from itself, a dict of arrays, a ``datasets.Dataset`` of padded columns,
    or a tuple ``(input_ids, attention_mask, labels)``.

    Dict keys / dataset columns: ``input_ids``, ``attention_mask``, ``token_type_ids``, ``labels`` (or ``label``).
    A dataset's other columns (e.g. ``sentence``) are not used; a dict's unknown keys are an error.
    """
    if isinstance(data, TokenData):
        return data
    if hasattr(data, "column_names") and hasattr(data, "__getitem__"):  # a datasets.Dataset
        cols = [c for c in data.column_names if c in _COLUMNS]
        if "input_ids" not in cols:
            raise ValueError(f"the dataset has no input_ids column (columns: {data.column_names}); tokenise it first")
        if "labels" in cols and "label" in cols:
            raise ValueError("the dataset has both label and labels columns; keep one")
        return TokenData(**{_COLUMNS[c]: np.asarray(data[c]) for c in cols})
    if isinstance(data, dict):
        unknown = sorted(set(data) - set(_COLUMNS))
        if unknown:
            raise ValueError(f"unknown data key(s) {unknown}; valid keys are {', '.join(_COLUMNS)}")
        if "labels" in data and "label" in data:
            raise ValueError("the data has both label and labels keys; keep one")
        return TokenData(**{_COLUMNS[k]: v for k, v in data.items()})
    if isinstance(data, (tuple, list)):
        return TokenData(*data)
    return TokenData(data)


@dataclass
class TrainState:
    """What callbacks see: the model, the step just finished, the loss history and the config.

    ``losses`` is filled at every ``log_every``-th step (and at checkpoints and the end), not at every
    step, so that CUDA runs do not wait for the GPU after each step; use ``log_every=1`` to see each loss.
    """

    model: nn.Module
    config: TrainConfig
    total_steps: int
    step: int = 0
    losses: list[float] = field(default_factory=list)
    lrs: list[float] = field(default_factory=list)
    device: str = "cpu"
    resumed_from: int | None = None


@dataclass
class TrainResult:
    """What :func:`train` returns."""

    steps: int
    losses: list[float]
    lrs: list[float]
    final_loss: float
    runtime_s: float
    tokens_per_s: float
    device: str
    precision: str
    resumed_from: int | None
    eval: dict[str, float] | None = None


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def set_seed(seed: int) -> None:
    """Seed Python's, numpy's and torch's global generators (CPU and CUDA)."""
    import random

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def _derived_seed(seed: int, kind: int, index: int) -> int:
    """A distinct 63-bit seed for (run seed, purpose, step or epoch)."""
    return (seed * 1_000_003 + kind * 7_919 + index * 104_729 + 0x5EED) % (2**63 - 1)


def mask_tokens(input_ids: torch.Tensor, *, vocab_size: int, mask_token_id: int = BERT_MASK_ID,
                special_token_ids: Sequence[int] = BERT_SPECIAL_IDS, attention_mask: torch.Tensor | None = None,
                probability: float = 0.15, generator: torch.Generator | None = None):
    """BERT's 80/10/10 masking.

    Parameters
    ----------
    input_ids : LongTensor (B, L)
    attention_mask : LongTensor (B, L) or None — padding (0) is never selected.

    Returns
    -------
    inputs : LongTensor (B, L) — corrupted copy
    labels : LongTensor (B, L) — original id where selected, -100 elsewhere
    """
    if not 0 <= mask_token_id < vocab_size:
        raise ValueError(f"mask_token_id={mask_token_id} is not a token id below vocab_size={vocab_size}")
    labels = input_ids.clone()
    prob = torch.full(input_ids.shape, float(probability))
    never = torch.isin(input_ids, torch.tensor(list(special_token_ids), dtype=input_ids.dtype))
    if attention_mask is not None:
        never |= attention_mask == 0
    prob.masked_fill_(never, 0.0)
    # selected ~ Bernoulli(p) on non-special tokens
    selected = torch.bernoulli(prob, generator=generator).bool()
    labels[~selected] = -100
    inputs = input_ids.clone()
    # 80 % of the selected → [MASK]
    to_mask = torch.bernoulli(torch.full(input_ids.shape, 0.8), generator=generator).bool() & selected
    inputs[to_mask] = mask_token_id
    # half of the remaining 20 % → a uniformly random token; the other 10 % stay unchanged
    to_random = torch.bernoulli(torch.full(input_ids.shape, 0.5), generator=generator).bool() & selected & ~to_mask
    random_ids = torch.randint(vocab_size, input_ids.shape, generator=generator, dtype=input_ids.dtype)
    inputs[to_random] = random_ids[to_random]
    return inputs, labels


def _param_groups(model: nn.Module, weight_decay: float):
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


def _is_oom(err: BaseException) -> bool:
    if isinstance(err, torch.OutOfMemoryError):
        return True
    text = str(err).lower()
    return isinstance(err, RuntimeError) and ("out of memory" in text or "can't allocate memory" in text)


def _oom_message(batch_size: int, seq_len: int, device: str) -> str:
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


# --------------------------------------------------------------------------------------------
# Deadlines and SIGTERM
# --------------------------------------------------------------------------------------------

_DEADLINES: list[float] = []
#: The clock deadlines are compared with (a module attribute, so that tests can move time).
_now = time.time


def _env_deadline() -> float | None:
    raw = os.environ.get(DEADLINE_ENV, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{DEADLINE_ENV}={raw!r} is not a UNIX time in seconds; set it to e.g. "
                         f"$(( $(date +%s) + 540 )), or unset it") from None
    if not math.isfinite(value):
        raise ValueError(f"{DEADLINE_ENV}={raw!r} is not a finite UNIX time; set a number of seconds since 1970")
    return value


def current_deadline() -> float | None:
    """The UNIX time by which :func:`train` stops: the earliest of the active :func:`deadline` contexts
    and ``POSGEOM_DEADLINE``; None when neither is set."""
    times = [*_DEADLINES, *([d] if (d := _env_deadline()) is not None else [])]
    return min(times) if times else None


@contextmanager
def deadline(at: float | None = None, *, seconds: float | None = None) -> Iterator[float]:
    """Within the block, :func:`train` saves its state and raises :class:`TrainingInterrupted` rather
    than run past ``at`` (a UNIX time, as ``time.time()``) or ``seconds`` from now.

    It stops before a step when the step and a save would not end by then (it times both). Nested
    blocks and ``POSGEOM_DEADLINE`` combine: the earliest wins.

    Examples
    --------
    >>> with deadline(seconds=540):          # doctest: +SKIP
    ...     run_separation(settings)
    """
    if (at is None) == (seconds is None):
        raise ValueError("give the deadline as at= (a UNIX time) or seconds= (from now), one of the two")
    value = float(at) if at is not None else time.time() + float(seconds)
    if not math.isfinite(value):
        raise ValueError(f"the deadline must be a finite time, got {value!r}")
    _DEADLINES.append(value)
    try:
        yield value
    finally:
        _DEADLINES.remove(value)


class _StopSignal:
    """Turns SIGTERM into a flag read between steps (main thread only; the old handler is restored)."""

    def __init__(self):
        self.received = False
        self._old = None

    def __enter__(self):
        if threading.current_thread() is threading.main_thread() and hasattr(signal, "SIGTERM"):
            try:
                self._old = signal.signal(signal.SIGTERM, self._handle)
            except (ValueError, OSError):
                self._old = None
        return self

    def _handle(self, signum, frame):
        self.received = True

    def __exit__(self, *exc):
        if self._old is not None:
            signal.signal(signal.SIGTERM, self._old)
        return False


# --------------------------------------------------------------------------------------------
# Checkpoints
# --------------------------------------------------------------------------------------------

CHECKPOINT_NAME = "last.pt"
#: File of a run's progress beside its state (read by :func:`checkpoint_progress` without loading the state).
CHECKPOINT_META = "meta.json"
#: Folder of the automatic checkpoints inside ``<results>/<scale>/`` (hidden: the registry does not list it).
CHECKPOINT_FOLDER = ".checkpoints"
_MAGIC = b"POSGEOM-TRAINING-CHECKPOINT\n"


class DamagedCheckpointError(ValueError):
    """A checkpoint file that is truncated, altered or of another format."""


def _config_record(config: TrainConfig) -> dict:
    out = asdict(config)
    out["betas"] = list(out["betas"])
    out["special_token_ids"] = list(out["special_token_ids"])
    return out


def _hash_tensor(h, t: torch.Tensor) -> None:
    t = t.detach().cpu().contiguous()
    h.update(f"{t.dtype}{tuple(t.shape)}".encode())
    if t.numel():
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())


def _hash_value(h, value, depth: int = 0) -> None:
    """Feed ``value`` into ``h``: numbers, strings, arrays, tensors and containers of them by content,
    any other object by its type (a registry, a model ...)."""
    if isinstance(value, torch.Tensor):
        _hash_tensor(h, value)
    elif isinstance(value, np.ndarray):
        _hash_tensor(h, torch.from_numpy(np.ascontiguousarray(value)))
    elif value is None or isinstance(value, (bool, int, float, str, np.generic)):
        h.update(repr(value).encode())
    elif isinstance(value, dict) and depth < 4:
        for k in sorted(value, key=repr):
            h.update(repr(k).encode())
            _hash_value(h, value[k], depth + 1)
    elif isinstance(value, (list, tuple)) and depth < 4:
        h.update(f"{type(value).__name__}{len(value)}".encode())
        for v in value:
            _hash_value(h, v, depth + 1)
    else:
        h.update(f"<{type(value).__module__}.{type(value).__qualname__}>".encode())


def run_key(model: nn.Module, data, config: TrainConfig, callbacks: Sequence = (), *, world_size: int = 1) -> str:
    """The digest (24 hex digits) of everything that defines a training run: the model's class, config
    and initial weights, the training settings (those of :data:`RESUMABLE_CHANGES` aside), the data's
    tensors, each callback's class and settings, and the number of processes.

    Two calls of :func:`train` with equal arguments have equal keys, so the second finds the first's
    checkpoint; a change to any of them gives another key (another folder: a fresh run).
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
    """``<results>/<scale>/.checkpoints``: where :func:`train` keeps the state of unfinished runs
    (defaults: ``POSGEOM_RESULTS_DIR`` and ``POSGEOM_SCALE`` as :func:`posgeom.config.get_settings`)."""
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


def _rng_state(device: str = "cpu") -> dict:
    """This process's generators: torch's CPU one, the training GPU's (only that one: reading every GPU's
    would open a CUDA context on each), NumPy's and Python's global ones."""
    np_state = np.random.get_state()
    py_state = random.getstate()
    return {
        "torch": torch.get_rng_state(),
        "cuda": [torch.cuda.get_rng_state(device)] if device.startswith("cuda") else [],
        "numpy": [np_state[0], torch.from_numpy(np_state[1].astype(np.int64)), int(np_state[2]), int(np_state[3]),
                  float(np_state[4])],
        "python": [py_state[0], list(py_state[1]), py_state[2]],
    }


def _set_rng_state(rng: dict, device: str = "cpu") -> None:
    torch.set_rng_state(rng["torch"])
    if rng["cuda"] and device.startswith("cuda"):
        torch.cuda.set_rng_state(rng["cuda"][0], device)
    name, keys, pos, has_gauss, gauss = rng["numpy"]
    np.random.set_state((name, keys.numpy().astype(np.uint32), pos, has_gauss, gauss))
    version, internal, gauss_next = rng["python"]
    random.setstate((version, tuple(internal), gauss_next))


def _origin() -> str:
    """``module:function`` of the experiment (else the first caller outside this package) training now."""
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
    """Write everything needed to resume durably: one file holding its SHA-256 (temporary file, fsync,
    atomic rename, fsync of the folder), then the small ``meta.json`` beside it.

    ``rng``: the RNG states of every process (default: this one's).
    """
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
        "rng": list(rng) if rng is not None else [_rng_state(state.device)],
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
    """Read a checkpoint written by :func:`save_checkpoint`, verifying its checksum first
    (``weights_only=True``: tensors and plain data only).

    Raises
    ------
    DamagedCheckpointError
        The file is truncated, altered or not a checkpoint of this format; nothing of it is used.
    """
    path = Path(path)
    return _decode(path.read_bytes(), path)


def _check_resumable(saved: dict, config: TrainConfig, path: Path) -> None:
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
    """The training runs with a stored state under ``<results>/<scale>/.checkpoints``, oldest first.

    ``origin`` is the ``module:function`` of the experiment that trained (e.g.
    ``posgeom.experiments.separation:run_separation``), ``complete`` whether the run had finished (kept
    because a deadline was set; :func:`discard_checkpoints` removes those). Folders without a readable
    ``meta.json`` (a save interrupted before its first write) are left out.
    """
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
    """Remove stored training states: those of finished runs (``complete_only=True``, what a budgeted
    driver calls once the experiment that trained them has stored its result), or all of them.

    Returns the folders removed.
    """
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


def _read_checkpoint(path: Path, explicit: bool) -> dict | None:
    """The checkpoint at ``path``, or None when absent or damaged (a warning says so: the run starts over)."""
    if not path.is_file():
        return None
    try:
        return load_checkpoint(path)
    except (DamagedCheckpointError, OSError) as err:
        warnings.warn(f"ignoring the training checkpoint: {err}; the run starts over", stacklevel=3)
        return None


# --------------------------------------------------------------------------------------------
# Data path: batches of an epoch, padding
# --------------------------------------------------------------------------------------------


def sequence_lengths(attention_mask: torch.Tensor) -> torch.Tensor:
    """``(N,)``: one past the last position holding a token (mask 1) in each row of ``attention_mask`` (N, L)."""
    positions = torch.arange(1, attention_mask.shape[1] + 1, device=attention_mask.device)
    # length_r = max_i { i + 1 : mask_{r,i} = 1 }
    return (attention_mask.long() * positions).amax(dim=1)


def epoch_batches(n_rows: int, batch_size: int, *, seed: int, epoch: int, padding: str = "full",
                  lengths: torch.Tensor | None = None) -> list[torch.Tensor]:
    """The row indices of each batch of epoch ``epoch``, a function of ``(seed, epoch)`` only.

    ``padding="bucket"`` (with ``lengths``): every chunk of :data:`BUCKET_BATCHES` batches of the
    shuffled order is sorted by length (longest first), cut into batches, and the batches are shuffled;
    otherwise consecutive slices of the shuffled order. Either way there are ``ceil(n_rows / batch_size)``
    batches, one of them short when ``batch_size`` does not divide ``n_rows``.
    """
    gen = torch.Generator().manual_seed(_derived_seed(seed, 1, epoch))
    perm = torch.randperm(n_rows, generator=gen)
    if padding != "bucket" or lengths is None:
        return list(perm.split(batch_size))
    batches: list[torch.Tensor] = []
    for part in perm.split(BUCKET_BATCHES * batch_size):
        order = torch.argsort(lengths[part], descending=True, stable=True)
        batches.extend(part[order].split(batch_size))
    shuffle = torch.randperm(len(batches), generator=gen)
    return [batches[int(i)] for i in shuffle]


def _trim(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Cut the (B, L) tensors of ``batch`` to its longest sequence (trailing padding of every row)."""
    mask = batch.get("attention_mask")
    if mask is None:
        return batch
    Lb = max(1, int(sequence_lengths(mask).max()))
    if Lb == mask.shape[1]:
        return batch
    return {k: (v[:, :Lb] if v.dim() == 2 else v) for k, v in batch.items()}


# --------------------------------------------------------------------------------------------
# Training and evaluation
# --------------------------------------------------------------------------------------------


def _autocast(device: str, precision: str):
    if precision == "bf16":
        return torch.autocast(device_type=device.split(":")[0], dtype=torch.bfloat16)
    return torch.autocast(device_type=device.split(":")[0], enabled=False)


def _resolve_precision(precision: str, device: str) -> str:
    if precision == "auto":
        return "bf16" if device.startswith("cuda") else "fp32"
    return precision


def distributed_context() -> tuple[int, int]:
    """``(rank, world_size)`` of the initialised ``torch.distributed`` process group, else ``(0, 1)``."""
    dist = torch.distributed
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def _distributed_device(device: str) -> str:
    """The device of this process: on CUDA the GPU ``LOCAL_RANK`` (``torchrun``), else ``device``."""
    if not device.startswith("cuda"):
        return device
    local = os.environ.get("LOCAL_RANK")
    index = int(local) if local is not None else torch.distributed.get_rank() % max(1, torch.cuda.device_count())
    return f"cuda:{index}"


def _check_shards(n_rows: int, batch_size: int, world: int) -> None:
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


@dataclass
class _Batch:
    tensors: dict[str, torch.Tensor]
    tokens: int  # positions computed for this step, all processes together
    weight: float  # W n_r / n: this shard's share of the batch's loss terms (1 in one process)


def _step_batch(data: TokenData, config: TrainConfig, vocab_size: int, step: int, idx: torch.Tensor, device: str,
                shard: tuple[int, int] | None = None) -> _Batch:
    """The batch of rows ``idx`` (masked for MLM), trimmed when ``config.padding`` says so, then — with
    ``shard=(rank, world)`` — this process's share and its loss weight."""
    batch = data.batch(idx)
    trim = config.padding != "full"
    if not trim and "attention_mask" in batch and bool(batch["attention_mask"].all()):
        del batch["attention_mask"]  # no padding in this batch: no mask, the fastest attention kernels
    if config.task == "mlm":
        # masked at the data's full length, so that every padding choice masks the same tokens
        gen = torch.Generator().manual_seed(_derived_seed(config.seed, 2, step))
        batch["input_ids"], batch["labels"] = mask_tokens(
            batch["input_ids"], vocab_size=vocab_size, mask_token_id=config.mask_token_id,
            special_token_ids=config.special_token_ids, attention_mask=batch.get("attention_mask"),
            probability=config.mlm_probability, generator=gen,
        )
    elif "labels" not in batch:
        raise ValueError("classification needs labels: TokenData(input_ids, attention_mask, labels)")
    weight = 1.0
    if shard is None:
        if trim:
            batch = _trim(batch)
            if "attention_mask" in batch and bool(batch["attention_mask"].all()):
                del batch["attention_mask"]
        parts = [batch]
    else:
        rank, world = shard
        parts = [{k: v for k, v in zip(batch, chunk)}
                 for chunk in zip(*(torch.tensor_split(v, world) for v in batch.values()))]
        if config.task == "mlm":
            counts = [int((p["labels"] != -100).sum()) for p in parts]
        else:
            counts = [int(p["labels"].shape[0]) for p in parts]
        total = sum(counts)
        # DDP averages the W shard gradients: W n_r / n makes that the gradient of the batch's mean loss
        weight = world * counts[rank] / total if total else 1.0
        if trim:
            parts = [_trim(p) for p in parts]
        batch = parts[rank]
        if trim and "attention_mask" in batch and bool(batch["attention_mask"].all()):
            del batch["attention_mask"]
    tokens = sum(int(p["input_ids"].numel()) for p in parts)
    nb = device.startswith("cuda")
    return _Batch({k: v.to(device, non_blocking=nb) for k, v in batch.items()}, tokens, weight)


def _gather(obj, world: int) -> list:
    if world == 1:
        return [obj]
    out = [None] * world
    torch.distributed.all_gather_object(out, obj)
    return out


def _save_estimate(model: nn.Module) -> float:
    """Seconds a first save may take: weights and two Adam moments at 100 MB/s, plus 0.2 s."""
    nbytes = sum(p.numel() * p.element_size() for p in model.parameters())
    return 0.2 + 3 * nbytes / 100e6


def train(model: nn.Module, data, config: TrainConfig | None = None, *, callbacks: Iterable = (),
          eval_data=None) -> TrainResult:
    """Train ``model`` (an :class:`~posgeom.models.encoder.EncoderForMaskedLM` or
    ``EncoderForSequenceClassification``) on token ids; resumable (see the module).

    Parameters
    ----------
    model : nn.Module
        Called as ``model(input_ids, attention_mask, token_type_ids, labels)`` → output with ``.loss``.
    data : TokenData, dict or tuple
        ``input_ids`` (N, L), optional ``attention_mask`` (N, L), ``labels`` (N,) for classification.
    config : TrainConfig
    callbacks : iterable of :class:`~posgeom.models.callbacks.Callback`
        Called in every process when ``torch.distributed`` is initialised with several processes.
    eval_data : like ``data``, optional — evaluated once at the end (:func:`evaluate`).

    Returns
    -------
    TrainResult
        Per-step losses and learning rates, final loss, runtime, tokens/s (padded positions counted),
        all over the whole run when it was resumed.

    Raises
    ------
    TrainingInterrupted
        At the deadline (:func:`deadline`, ``POSGEOM_DEADLINE``) or on SIGTERM, once the state is saved.
    """
    config = config or TrainConfig()
    data = as_token_data(data)
    callbacks = list(callbacks)
    device = resolve_device(config.device)
    rank, world = distributed_context()
    if world > 1:
        device = _distributed_device(device)
    precision = _resolve_precision(config.precision, device)
    vocab_size = model.config.vocab_size
    L = data.input_ids.shape[1]
    if hasattr(model, "positional"):
        model.positional.check_length(L)  # the N_max wall, before any work
    if config.task == "classification" and data.labels is None:
        raise ValueError("task='classification' needs labels in the data")
    if config.task == "mlm" and not hasattr(model, "logits"):
        raise ValueError("task='mlm' needs a masked-LM model (build_model(config, 'mlm'))")
    stop_at = current_deadline()

    N, bs = len(data), config.batch_size
    steps_per_epoch = math.ceil(N / bs)
    total = config.max_steps if config.max_steps is not None else max(1, math.ceil(config.epochs * steps_per_epoch))
    warmup = config.warmup_steps if config.warmup_steps is not None else int(round(config.warmup_ratio * total))
    if world > 1:
        # the short last batch of an epoch is reached only when the run is at least one epoch long
        _check_shards(N if total >= steps_per_epoch else bs * total, bs, world)
    lengths = sequence_lengths(data.attention_mask) if config.padding == "bucket" and data.attention_mask is not None else None

    explicit = config.checkpoint_dir is not None
    key = None if explicit else run_key(model, data, config, callbacks, world_size=world)
    folder = Path(config.checkpoint_dir) if explicit else checkpoint_root() / key
    ckpt_path = folder / CHECKPOINT_NAME
    shape = getattr(model.config, "to_params", dict)() if hasattr(model, "config") else {}
    extra = {"key": key, "origin": _origin(), "world": world,
             "model_config": {k: v for k, v in shape.items() if k != "position_options"}}

    model.to(device)
    fused = config.fused if config.fused is not None else device.startswith("cuda")
    optimizer = torch.optim.AdamW(
        _param_groups(model, config.weight_decay), lr=config.lr, betas=config.betas, eps=config.eps,
        **({"fused": True} if fused else {"foreach": True}),
    )
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda t: lr_factor(t, warmup, total, config.schedule)
    )
    state = TrainState(model=model, config=config, total_steps=total, device=device)

    saved = _read_checkpoint(ckpt_path, explicit) if config.resume else None
    done_seconds, done_tokens, step_seconds = 0.0, 0, 0.0
    save_seconds = None  # the last save's duration, once measured
    if saved is not None:
        if explicit:
            _check_resumable(saved["train_config"], config, ckpt_path)
        if len(saved["rng"]) != world:
            raise ValueError(f"the checkpoint {ckpt_path} was written by {len(saved['rng'])} processes, this run has "
                             f"{world}; resume with as many processes, another checkpoint_dir, or resume=False")
        if len(saved["callbacks"]) != len(callbacks):
            raise ValueError(
                f"the checkpoint holds the state of {len(saved['callbacks'])} callbacks, {len(callbacks)} were given; "
                "resume with the same callbacks"
            )
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        state.step, state.losses, state.lrs = saved["step"], list(saved["losses"]), list(saved["lrs"])
        _set_rng_state(saved["rng"][rank], device)
        for cb, cb_state in zip(callbacks, saved["callbacks"]):
            cb.load_state_dict(cb_state)
        state.resumed_from = state.step
        done_seconds, done_tokens = float(saved.get("seconds", 0.0)), int(saved.get("tokens", 0))
        step_seconds = float(saved.get("step_seconds", 0.0))
        save_seconds = saved.get("save_seconds")
    else:
        torch.manual_seed(config.seed)
    start_step = state.step
    saved_step = state.step if saved is not None else None  # the step of the state on disk

    # Several processes: DDP averages the gradients of the shards (its parameters start from rank 0's).
    # find_unused_parameters: a model may hold parameters its loss does not use (they then get no
    # gradient, and DDP must not wait for one); the search costs one walk over the graph per step.
    forward = model
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel

        forward = DistributedDataParallel(
            model, device_ids=[torch.device(device).index] if device.startswith("cuda") else None,
            find_unused_parameters=True,
        )
    if config.compile:
        forward = torch.compile(forward)
    shard = (rank, world) if world > 1 else None
    lead = rank == 0  # progress bar and the checkpoint files
    model.train()
    for cb in callbacks:
        cb.on_train_begin(state)

    from ..progress import tqdm

    pending: list[torch.Tensor] = []
    epoch_of, batches = -1, []
    start = time.perf_counter()
    tokens = 0  # positions computed by the steps run here, all processes together
    last_save = time.monotonic()
    bar = tqdm(total=total, initial=state.step, disable=not (config.progress and lead), desc=f"train {config.task}",
               unit="step")

    def flush():
        if pending:
            values = torch.stack(pending).float()
            if world > 1:
                # the batch's loss: sum_r n_r L_r / n = (1/W) sum_r (W n_r / n) L_r
                torch.distributed.all_reduce(values)
                values = values / world
            state.losses.extend(values.cpu().tolist())
            pending.clear()

    def save(final: bool = False) -> Path | None:
        """Every process: the losses and RNG states gathered; rank 0 writes."""
        nonlocal save_seconds, last_save, saved_step
        flush()
        t0 = time.perf_counter()
        rngs = _gather(_rng_state(device), world)
        written = None
        if lead:
            info = {**extra, "seconds": done_seconds + time.perf_counter() - start, "tokens": done_tokens + tokens,
                    "step_seconds": step_seconds, "save_seconds": save_seconds}
            try:
                written = save_checkpoint(ckpt_path, model, optimizer, scheduler, state, callbacks, rng=rngs, extra=info)
            except OSError as err:
                if final:
                    raise
                warnings.warn(f"could not save the training state to {ckpt_path} ({err}); training goes on", stacklevel=3)
        if world > 1:
            torch.distributed.barrier()
        save_seconds = time.perf_counter() - t0
        last_save = time.monotonic()
        saved_step = state.step
        return written if lead else ckpt_path

    def should_stop() -> tuple[str | None, bool]:
        """(reason to stop now or None, whether a timed save is due), the same in every process."""
        reason = "SIGTERM" if stop_signal.received else None
        if reason is None and stop_at is not None:
            need = 1.5 * step_seconds + (save_seconds if save_seconds is not None else _save_estimate(model))
            if _now() + need >= stop_at:
                reason = "deadline"
        due = config.checkpoint_seconds is not None and time.monotonic() - last_save >= config.checkpoint_seconds
        if world > 1:
            flags = torch.tensor([reason == "SIGTERM", reason == "deadline", due and lead], dtype=torch.int32,
                                 device=device)
            torch.distributed.all_reduce(flags, op=torch.distributed.ReduceOp.MAX)
            sig, late, due = (bool(f) for f in flags.tolist())
            reason = "SIGTERM" if sig else ("deadline" if late else None)
        return reason, due

    completed = False
    try:
        with _StopSignal() as stop_signal:
            while state.step < total:
                reason, due = should_stop()
                if reason is not None:
                    if state.step == start_step:  # nothing trained in this call: what is stored stays
                        path = ckpt_path if saved_step is not None else None
                    else:
                        path = save() if saved_step != state.step else ckpt_path
                    raise TrainingInterrupted(state.step, total, reason, path)
                if due and saved_step != state.step:
                    save()
                t_step = time.perf_counter()
                epoch, i = divmod(state.step, steps_per_epoch)
                if epoch != epoch_of:
                    batches = epoch_batches(N, bs, seed=config.seed, epoch=epoch, padding=config.padding,
                                            lengths=lengths)
                    epoch_of = epoch
                idx = batches[i]
                batch = _step_batch(data, config, vocab_size, state.step, idx, device, shard)
                b = batch.tensors
                try:
                    with _autocast(device, precision):
                        out = forward(b["input_ids"], b.get("attention_mask"), b.get("token_type_ids"),
                                      labels=b["labels"])
                    loss = out.loss if batch.weight == 1.0 else out.loss * batch.weight
                    loss.backward()
                    if config.max_grad_norm is not None:
                        # g <- g min(1, c / ||g||)
                        torch.nn.utils.clip_grad_norm_(model.parameters(), config.max_grad_norm)
                    optimizer.step()
                    tokens += batch.tokens
                except (RuntimeError, torch.OutOfMemoryError) as err:
                    if _is_oom(err):
                        optimizer.zero_grad(set_to_none=True)
                        raise TrainingOOMError(_oom_message(len(idx), L, device)) from err
                    raise
                state.lrs.append(optimizer.param_groups[0]["lr"])
                scheduler.step()
                optimizer.zero_grad(set_to_none=True)
                state.step += 1
                pending.append(loss.detach())
                bar.update(1)
                ckpt_due = config.checkpoint_every is not None and state.step % config.checkpoint_every == 0
                if state.step % config.log_every == 0 or state.step == total or ckpt_due:
                    flush()
                    if lead:
                        bar.set_postfix(loss=f"{state.losses[-1]:.4f}", lr=f"{state.lrs[-1]:.2e}")
                for cb in callbacks:
                    cb.on_step_end(state)
                if ckpt_due:
                    save()
                elapsed = time.perf_counter() - t_step
                step_seconds = elapsed if step_seconds == 0.0 else 0.8 * step_seconds + 0.2 * elapsed
            completed = True
    finally:
        if world == 1 or completed:
            flush()
        bar.close()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    runtime = time.perf_counter() - start
    for cb in callbacks:
        cb.on_train_end(state)
    # an explicit folder keeps the final state (as before); the run's own folder only while a deadline is
    # set, so that an experiment training several models skips the finished ones when called again
    if explicit or current_deadline() is not None:
        if saved_step != state.step:
            save(final=True)
    else:
        if lead and folder.is_dir():
            shutil.rmtree(folder, ignore_errors=True)
            fsync_dir(folder.parent)
        if world > 1:  # every rank returns after the finished run's state is gone, never before
            torch.distributed.barrier()
    total_runtime = done_seconds + runtime
    result = TrainResult(
        steps=state.step, losses=list(state.losses), lrs=list(state.lrs),
        final_loss=state.losses[-1] if state.losses else float("nan"), runtime_s=total_runtime,
        tokens_per_s=(done_tokens + tokens) / total_runtime if total_runtime > 0 else float("nan"), device=device,
        precision=precision, resumed_from=state.resumed_from,
    )
    if eval_data is not None:
        result.eval = evaluate(model, eval_data, config)
    return result


@torch.no_grad()
def evaluate(model: nn.Module, data, config: TrainConfig | None = None, batch_size: int | None = None) -> dict[str, float]:
    """Mean loss and accuracy (classification: of the label; MLM: of the masked tokens, fixed seeded masking).

    Returns
    -------
    dict with ``loss``, ``accuracy`` and ``n`` (examples, or masked tokens for MLM).
    """
    config = config or TrainConfig()
    data = as_token_data(data)
    device = str(next(model.parameters()).device)  # "cuda:1" stays "cuda:1": batches go where the model is
    precision = _resolve_precision(config.precision, device)
    bs = batch_size or config.batch_size
    was_training = model.training
    model.eval()
    total_loss, correct, count = 0.0, 0, 0
    try:
        for b, start in enumerate(range(0, len(data), bs)):
            idx = torch.arange(start, min(start + bs, len(data)))
            batch = _step_batch(data, config, model.config.vocab_size, -1 - b, idx, device).tensors
            with _autocast(device, precision):
                out = model(batch["input_ids"], batch.get("attention_mask"), batch.get("token_type_ids"),
                            labels=batch["labels"])
            if config.task == "mlm":
                target = batch["labels"][batch["labels"] != -100]
            else:
                target = batch["labels"]
            k = target.numel()
            if k == 0:
                continue
            total_loss += float(out.loss) * k
            correct += int((out.logits.argmax(-1) == target).sum())
            count += k
    finally:
        model.train(was_training)
    if count == 0:
        raise ValueError("nothing to evaluate: no labels (or no maskable tokens for MLM) in the data")
    return {"loss": total_loss / count, "accuracy": correct / count, "n": count}


__all__ = [
    "SCALE_PADDING", "TrainConfig", "TokenData", "TrainState", "TrainResult", "TrainingOOMError", "TrainingInterrupted", "train",
    "evaluate", "mask_tokens", "set_seed", "lr_factor", "save_checkpoint", "load_checkpoint", "as_token_data",
    "CHECKPOINT_NAME", "BERT_MASK_ID", "BERT_SPECIAL_IDS", "TASKS", "PRECISIONS", "PADDINGS", "distributed_context",
    "deadline", "current_deadline", "DEADLINE_ENV", "run_key", "checkpoint_root", "checkpoint_progress",
    "CheckpointProgress", "discard_checkpoints", "DamagedCheckpointError", "epoch_batches", "sequence_lengths",
    "BUCKET_BATCHES",
]
