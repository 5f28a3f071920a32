r"""Training loop: masked language modelling and sequence classification, resumable and reproducible.

**MLM** (Devlin et al. 2019): each non-special token is selected with probability :math:`p = 0.15`;
of the selected ones 80 % become ``[MASK]``, 10 % a uniformly random token, 10 % stay unchanged;
the loss is the cross-entropy at the selected positions only,
:math:`\mathcal L = -\frac{1}{|S|}\sum_{i \in S} \log p_\theta(x_i \mid \tilde x)`.

**Classification**: cross-entropy of the label given the pooled sequence.

**Optimiser**: AdamW (decoupled weight decay, none on biases and LayerNorm weights, as BERT) with
a linear warm-up then linear decay,

.. math:: \eta_t = \eta \cdot \begin{cases} t / w & t < w \\ (T - t) / (T - w) & t \ge w \end{cases}

and gradient clipping :math:`g \leftarrow g \min(1, c / \|g\|)`.

**Reproducibility.** Every source of randomness is a function of ``seed`` and the step: the order
of epoch ``e`` comes from a generator seeded with ``(seed, e)``, the masking of step ``t`` from one
seeded with ``(seed, t)``, and the global RNG (dropout) state is saved in each checkpoint. So on the
CPU two runs with the same seed give identical numbers, and a run interrupted and resumed from its
last checkpoint ends with exactly the numbers of the uninterrupted run (tested).

**CUDA**: bf16 autocast and the fused AdamW kernel (``precision="auto"``, ``fused=None`` pick them
on CUDA only). Running out of memory raises :class:`TrainingOOMError` naming the batch size to try.

**Several processes** (``torchrun --nproc_per_node=N``, or any launcher that initialises
``torch.distributed``): when a process group of ``W > 1`` processes is initialised, :func:`train` wraps
the model in :class:`torch.nn.parallel.DistributedDataParallel` and each process takes its contiguous
share of every global batch of ``batch_size`` rows (masked before it is split, so the masking is that of
one process). DDP averages the gradients of the shards, so with equal shards and a loss that is a mean
over examples (classification),

.. math:: \nabla \mathcal L = \frac{1}{W}\sum_{r=1}^{W} \nabla \mathcal L_r ,

the step is the one-process step on the same global batch. Nothing else is exchanged: the progress bar,
the checkpoints and the callbacks run on rank 0 only, and each process records the losses of its own
shard. On CUDA, process ``r`` uses the GPU ``LOCAL_RANK`` (set by ``torchrun``).
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import torch
from torch import nn

from ..config import resolve_device

TASKS = ("mlm", "classification")
PRECISIONS = ("auto", "fp32", "bf16")
SCHEDULES = ("linear", "constant")
CHECKPOINT_FORMAT = 1
#: bert-base-uncased ids: [PAD]=0, [CLS]=101, [SEP]=102, [MASK]=103.
BERT_MASK_ID = 103
BERT_SPECIAL_IDS = (0, 101, 102, 103)
#: Fields of :class:`TrainConfig` that may change between an interrupted run and its resumption.
RESUMABLE_CHANGES = ("progress", "log_every", "checkpoint_dir", "checkpoint_every", "resume", "device")


class TrainingOOMError(RuntimeError):
    """Out of memory during a training step; the message names the batch size to try next."""


@dataclass
class TrainConfig:
    """Hyper-parameters of :func:`train`. Invalid values raise :class:`ValueError` at creation.

    ``max_steps`` wins over ``epochs`` when given. ``warmup_steps`` wins over ``warmup_ratio``.
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

    def __post_init__(self):
        if self.task not in TASKS:
            raise ValueError(f"unknown task {self.task!r}; valid tasks are {', '.join(TASKS)}")
        if self.precision not in PRECISIONS:
            raise ValueError(f"unknown precision {self.precision!r}; valid precisions are {', '.join(PRECISIONS)}")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"unknown schedule {self.schedule!r}; valid schedules are {', '.join(SCHEDULES)}")
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
        if self.checkpoint_every is not None and self.checkpoint_dir is None:
            raise ValueError("checkpoint_every needs checkpoint_dir (where to write the checkpoints)")
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
# Checkpoints
# --------------------------------------------------------------------------------------------

CHECKPOINT_NAME = "last.pt"


def _config_record(config: TrainConfig) -> dict:
    out = asdict(config)
    out["betas"] = list(out["betas"])
    out["special_token_ids"] = list(out["special_token_ids"])
    return out


def save_checkpoint(path, model, optimizer, scheduler, state: TrainState, callbacks: Sequence) -> Path:
    """Write everything needed to resume, atomically (temporary file, then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": CHECKPOINT_FORMAT,
        "step": state.step,
        "model": model.state_dict(),
        "optimizer": optimizer.state_dict(),
        "scheduler": scheduler.state_dict(),
        "losses": list(state.losses),
        "lrs": list(state.lrs),
        "rng_cpu": torch.get_rng_state(),
        "rng_cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        "callbacks": [cb.state_dict() for cb in callbacks],
        "train_config": _config_record(state.config),
    }
    tmp = path.with_name(path.name + ".tmp")
    torch.save(payload, tmp)
    os.replace(tmp, path)
    return path


def load_checkpoint(path) -> dict:
    """Read a checkpoint written by :func:`save_checkpoint` (``weights_only=True``: tensors and plain data only)."""
    payload = torch.load(Path(path), map_location="cpu", weights_only=True)
    if payload.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{path} is not a posgeom training checkpoint of format {CHECKPOINT_FORMAT}")
    return payload


def _check_resumable(saved: dict, config: TrainConfig, path: Path) -> None:
    now = _config_record(config)
    diff = sorted(k for k in now if k not in RESUMABLE_CHANGES and saved.get(k) != now[k])
    if diff:
        details = ", ".join(f"{k}: {saved.get(k)!r} → {now[k]!r}" for k in diff)
        raise ValueError(
            f"the checkpoint {path} was written with other training settings ({details}); resuming would not "
            "reproduce that run. Use the same settings, another checkpoint_dir, or resume=False to start over"
        )


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


def _step_batch(data: TokenData, config: TrainConfig, vocab_size: int, step: int, idx: torch.Tensor, device: str,
                shard: tuple[int, int] | None = None):
    """The batch of rows ``idx`` (masked for MLM), then — with ``shard=(rank, world)`` — this process's share."""
    batch = data.batch(idx)
    if "attention_mask" in batch and bool(batch["attention_mask"].all()):
        del batch["attention_mask"]  # no padding in this batch: no mask, the fastest attention kernels
    if config.task == "mlm":
        gen = torch.Generator().manual_seed(_derived_seed(config.seed, 2, step))
        batch["input_ids"], batch["labels"] = mask_tokens(
            batch["input_ids"], vocab_size=vocab_size, mask_token_id=config.mask_token_id,
            special_token_ids=config.special_token_ids, attention_mask=batch.get("attention_mask"),
            probability=config.mlm_probability, generator=gen,
        )
    elif "labels" not in batch:
        raise ValueError("classification needs labels: TokenData(input_ids, attention_mask, labels)")
    if shard is not None:
        rank, world = shard
        batch = {k: torch.tensor_split(v, world)[rank] for k, v in batch.items()}
    nb = device.startswith("cuda")
    return {k: v.to(device, non_blocking=nb) for k, v in batch.items()}


def train(model: nn.Module, data, config: TrainConfig | None = None, *, callbacks: Iterable = (),
          eval_data=None) -> TrainResult:
    """Train ``model`` (an :class:`~posgeom.models.encoder.EncoderForMaskedLM` or
    ``EncoderForSequenceClassification``) on token ids.

    Parameters
    ----------
    model : nn.Module
        Called as ``model(input_ids, attention_mask, token_type_ids, labels)`` → output with ``.loss``.
    data : TokenData, dict or tuple
        ``input_ids`` (N, L), optional ``attention_mask`` (N, L), ``labels`` (N,) for classification.
    config : TrainConfig
    callbacks : iterable of :class:`~posgeom.models.callbacks.Callback`
        Called on rank 0 only when ``torch.distributed`` is initialised with several processes.
    eval_data : like ``data``, optional — evaluated once at the end (:func:`evaluate`).

    Returns
    -------
    TrainResult
        Per-step losses and learning rates, final loss, runtime, tokens/s (padded positions counted).
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

    N, bs = len(data), config.batch_size
    steps_per_epoch = math.ceil(N / bs)
    total = config.max_steps if config.max_steps is not None else max(1, math.ceil(config.epochs * steps_per_epoch))
    warmup = config.warmup_steps if config.warmup_steps is not None else int(round(config.warmup_ratio * total))
    if world > 1:
        # the short last batch of an epoch is reached only when the run is at least one epoch long
        _check_shards(N if total >= steps_per_epoch else bs * total, bs, world)

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

    ckpt_path = Path(config.checkpoint_dir) / CHECKPOINT_NAME if config.checkpoint_dir else None
    if ckpt_path is not None and config.resume and ckpt_path.is_file():
        saved = load_checkpoint(ckpt_path)
        _check_resumable(saved["train_config"], config, ckpt_path)
        model.load_state_dict(saved["model"])
        optimizer.load_state_dict(saved["optimizer"])
        scheduler.load_state_dict(saved["scheduler"])
        state.step, state.losses, state.lrs = saved["step"], list(saved["losses"]), list(saved["lrs"])
        torch.set_rng_state(saved["rng_cpu"])
        if saved["rng_cuda"] and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(saved["rng_cuda"])
        if len(saved["callbacks"]) != len(callbacks):
            raise ValueError(
                f"the checkpoint holds the state of {len(saved['callbacks'])} callbacks, {len(callbacks)} were given; "
                "resume with the same callbacks"
            )
        for cb, cb_state in zip(callbacks, saved["callbacks"]):
            cb.load_state_dict(cb_state)
        state.resumed_from = state.step
    else:
        torch.manual_seed(config.seed)

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
    shard = (rank, world) if world > 1 else None
    lead = rank == 0  # progress bar, checkpoints and callbacks
    model.train()
    if lead:
        for cb in callbacks:
            cb.on_train_begin(state)

    from ..progress import tqdm

    pending: list[torch.Tensor] = []
    perm_epoch, perm = -1, None
    start = time.perf_counter()
    tokens = 0  # rows x L of the steps run here, all processes together (each handles bs / W rows of a step)
    bar = tqdm(total=total, initial=state.step, disable=not (config.progress and lead), desc=f"train {config.task}",
               unit="step")

    def flush():
        if pending:
            state.losses.extend(torch.stack(pending).float().cpu().tolist())
            pending.clear()

    try:
        while state.step < total:
            epoch, i = divmod(state.step, steps_per_epoch)
            if epoch != perm_epoch:
                gen = torch.Generator().manual_seed(_derived_seed(config.seed, 1, epoch))
                perm, perm_epoch = torch.randperm(N, generator=gen), epoch
            idx = perm[i * bs:(i + 1) * bs]
            batch = _step_batch(data, config, vocab_size, state.step, idx, device, shard)
            try:
                with _autocast(device, precision):
                    out = forward(batch["input_ids"], batch.get("attention_mask"), batch.get("token_type_ids"),
                                  labels=batch["labels"])
                loss = out.loss
                loss.backward()
                if config.max_grad_norm is not None:
                    # g <- g min(1, c / ||g||)
                    torch.nn.utils.clip_grad_norm_(model.parameters(), config.max_grad_norm)
                optimizer.step()
                tokens += len(idx) * L  # the last batch of an epoch may be short
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
            if lead:
                for cb in callbacks:
                    cb.on_step_end(state)
                if ckpt_due:
                    save_checkpoint(ckpt_path, model, optimizer, scheduler, state, callbacks)
    finally:
        flush()
        bar.close()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    runtime = time.perf_counter() - start
    if lead:
        for cb in callbacks:
            cb.on_train_end(state)
        if ckpt_path is not None and (config.checkpoint_every is None or state.step % config.checkpoint_every):
            save_checkpoint(ckpt_path, model, optimizer, scheduler, state, callbacks)
    result = TrainResult(
        steps=state.step, losses=list(state.losses), lrs=list(state.lrs),
        final_loss=state.losses[-1] if state.losses else float("nan"), runtime_s=runtime,
        tokens_per_s=tokens / runtime if runtime > 0 else float("nan"), device=device, precision=precision,
        resumed_from=state.resumed_from,
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
            batch = _step_batch(data, config, model.config.vocab_size, -1 - b, idx, device)
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
    "TrainConfig", "TokenData", "TrainState", "TrainResult", "TrainingOOMError", "train", "evaluate",
    "mask_tokens", "set_seed", "lr_factor", "save_checkpoint", "load_checkpoint", "as_token_data",
    "CHECKPOINT_NAME", "BERT_MASK_ID", "BERT_SPECIAL_IDS", "TASKS", "PRECISIONS", "distributed_context",
]
