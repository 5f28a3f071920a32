r"""Training loop: masked language modelling and sequence classification, resumable and reproducible.

MLM (Devlin et al. 2019) uses BERT's 80/10/10 masking of 15 % of the tokens, with the loss at the selected
positions only, $\mathcal L = -\frac{1}{|S|}\sum_{i \in S} \log p_\theta(x_i \mid \tilde x)$; AdamW with
BERT's weight-decay groups, linear warm-up and decay, and clipping $g \leftarrow g \min(1, c / \|g\|)$.
All randomness is a function of ``seed`` and the step, and the RNG state is checkpointed, so a run resumed
from its checkpoint (saved periodically, on SIGTERM and at a deadline) ends with the uninterrupted run's
numbers (:mod:`posgeom.models.checkpoints`). On CUDA: bf16 autocast and fused AdamW; under ``torchrun``:
DistributedDataParallel with the numbers of one process (:mod:`posgeom.models.distributed`).
"""

from __future__ import annotations

import math
import shutil
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import torch
from torch import nn

from ..config import resolve_device
from ..storage import fsync_dir
from .batches import (BERT_MASK_ID, BERT_SPECIAL_IDS, PADDINGS, Batch, TokenData, as_token_data, epoch_batches,
                      sequence_lengths, step_batch)
from .checkpoints import (CHECKPOINT_NAME, check_resumable, checkpoint_root, read_checkpoint, rng_state, run_key,
                          save_checkpoint, set_rng_state, training_origin)
from .deadlines import StopSignal, TrainingInterrupted, current_deadline, would_pass
from .distributed import (any_process, barrier, batch_losses, check_shards, distributed_context, gather,
                          process_device, wrap_model)
from .optim import build_optimizer
from .precision import PRECISIONS, TrainingOOMError, autocast, is_oom, oom_message, resolve_precision
from ..validation import check_choice, check_int, check_optional_int, check_positive_int, check_real


TASKS = ("mlm", "classification")
SCHEDULES = ("linear", "constant")


@dataclass
class TrainConfig:
    """Hyper-parameters of :func:`train`; invalid values raise :class:`ValueError` at creation.

    ``max_steps`` wins over ``epochs``, ``warmup_steps`` over ``warmup_ratio``. ``checkpoint_dir`` None saves
    to the run's own folder; ``checkpoint_seconds`` None saves only by step count, at a deadline and on SIGTERM.
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
        check_choice(self.task, "task", TASKS)
        check_choice(self.precision, "precision", PRECISIONS)
        check_choice(self.schedule, "schedule", SCHEDULES)
        check_choice(self.padding, "padding", PADDINGS)
        if self.checkpoint_seconds is not None and not (isinstance(self.checkpoint_seconds, (int, float))
                                                        and not isinstance(self.checkpoint_seconds, bool)
                                                        and self.checkpoint_seconds > 0):
            raise ValueError(f"checkpoint_seconds must be > 0 or None, got {self.checkpoint_seconds!r}")
        for name in ("batch_size", "log_every"):
            check_positive_int(getattr(self, name), name)
        self.max_steps = check_optional_int(self.max_steps, "max_steps", 1, none="run for epochs")
        self.checkpoint_every = check_optional_int(self.checkpoint_every, "checkpoint_every", 1,
                                                   none="no checkpoints by step count")
        self.warmup_steps = check_optional_int(self.warmup_steps, "warmup_steps", 0, none="use warmup_ratio")
        if self.max_steps is None:
            check_real(self.epochs, "epochs (or give max_steps)", 0, open_lo=True)
        check_real(self.lr, "lr", 0, open_lo=True)
        if not 0 <= self.warmup_ratio < 1:
            raise ValueError(f"warmup_ratio must be in [0, 1), got {self.warmup_ratio!r}")
        if self.max_grad_norm is not None and not self.max_grad_norm > 0:
            raise ValueError(f"max_grad_norm must be > 0 or None, got {self.max_grad_norm!r}")
        if not 0 < self.mlm_probability < 1:
            raise ValueError(f"mlm_probability must be in (0, 1), got {self.mlm_probability!r}")
        self.seed = check_int(self.seed, "seed", 0)
        self.betas = tuple(float(b) for b in self.betas)
        self.special_token_ids = tuple(int(t) for t in self.special_token_ids)


@dataclass
class TrainState:
    """What callbacks see: the model, the step just finished, the loss history and the config.

    ``losses`` is filled every ``log_every`` steps only, so that CUDA runs do not sync after each step.
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


def _save_estimate(model: nn.Module) -> float:
    """Seconds a first save may take: weights and two Adam moments at 100 MB/s, plus 0.2 s."""
    nbytes = sum(p.numel() * p.element_size() for p in model.parameters())
    return 0.2 + 3 * nbytes / 100e6


# The loop: a plan fixed before the first step, then one run of steps


@dataclass
class _Plan:
    """What a call of :func:`train` fixes before its first step."""

    device: str
    precision: str
    rank: int
    world: int
    vocab_size: int
    seq_len: int
    stop_at: float | None
    steps_per_epoch: int
    total: int
    warmup: int
    lengths: torch.Tensor | None
    explicit: bool
    folder: Path
    extra: dict[str, Any]

    @property
    def checkpoint(self) -> Path:
        return self.folder / CHECKPOINT_NAME


def _plan(model: nn.Module, data: TokenData, config: TrainConfig, callbacks: list) -> _Plan:
    """Devices and processes, checks of model and data, the schedule's length and the checkpoint folder."""
    device = resolve_device(config.device)
    rank, world = distributed_context()
    if world > 1:
        device = process_device(device)
    precision = resolve_precision(config.precision, device)
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
        check_shards(N if total >= steps_per_epoch else bs * total, bs, world)
    lengths = sequence_lengths(data.attention_mask) if config.padding == "bucket" and data.attention_mask is not None else None

    explicit = config.checkpoint_dir is not None
    key = None if explicit else run_key(model, data, config, callbacks, world_size=world)
    folder = Path(config.checkpoint_dir) if explicit else checkpoint_root() / key
    shape = getattr(model.config, "to_params", dict)() if hasattr(model, "config") else {}
    extra = {"key": key, "origin": training_origin(), "world": world,
             "model_config": {k: v for k, v in shape.items() if k != "position_options"}}
    return _Plan(device=device, precision=precision, rank=rank, world=world, vocab_size=vocab_size, seq_len=L,
                 stop_at=stop_at, steps_per_epoch=steps_per_epoch, total=total, warmup=warmup, lengths=lengths,
                 explicit=explicit, folder=folder, extra=extra)


class _Run:
    """One call of :func:`train`: the optimiser, the resumed state, the loop's clocks and its saves."""

    def __init__(self, model: nn.Module, data: TokenData, config: TrainConfig, callbacks: list, plan: _Plan):
        self.model, self.data, self.config, self.callbacks, self.plan = model, data, config, callbacks, plan
        self.lead = plan.rank == 0  # progress bar and the checkpoint files
        model.to(plan.device)
        self.optimizer, self.scheduler = build_optimizer(model, config, plan.device, plan.warmup, plan.total)
        self.state = TrainState(model=model, config=config, total_steps=plan.total, device=plan.device)
        self.done_seconds, self.done_tokens, self.step_seconds = 0.0, 0, 0.0
        self.save_seconds: float | None = None  # the last save's duration, once measured
        self.saved_step: int | None = None  # the step of the state on disk
        self.start_step = 0
        self.pending: list[torch.Tensor] = []
        self.epoch_of, self.batches = -1, []
        self.tokens = 0  # positions computed by the steps run here, all processes together
        self.stop_signal: StopSignal | None = None

    # -- resumption ---------------------------------------------------------------------------

    def resume(self) -> None:
        """Continue from the stored state when there is one (and ``resume``), else seed the global RNG."""
        saved = read_checkpoint(self.plan.checkpoint, stacklevel=4) if self.config.resume else None
        if saved is not None:
            self._load(saved)
        else:
            torch.manual_seed(self.config.seed)
        self.start_step = self.state.step
        self.saved_step = self.state.step if saved is not None else None

    def _load(self, saved: dict) -> None:
        plan, state, path = self.plan, self.state, self.plan.checkpoint
        if plan.explicit:
            check_resumable(saved["train_config"], self.config, path)
        if len(saved["rng"]) != plan.world:
            raise ValueError(f"the checkpoint {path} was written by {len(saved['rng'])} processes, this run has "
                             f"{plan.world}; resume with as many processes, another checkpoint_dir, or resume=False")
        if len(saved["callbacks"]) != len(self.callbacks):
            raise ValueError(
                f"the checkpoint holds the state of {len(saved['callbacks'])} callbacks, {len(self.callbacks)} were "
                "given; resume with the same callbacks"
            )
        self.model.load_state_dict(saved["model"])
        self.optimizer.load_state_dict(saved["optimizer"])
        self.scheduler.load_state_dict(saved["scheduler"])
        state.step, state.losses, state.lrs = saved["step"], list(saved["losses"]), list(saved["lrs"])
        set_rng_state(saved["rng"][plan.rank], plan.device)
        for cb, cb_state in zip(self.callbacks, saved["callbacks"]):
            cb.load_state_dict(cb_state)
        state.resumed_from = state.step
        self.done_seconds, self.done_tokens = float(saved.get("seconds", 0.0)), int(saved.get("tokens", 0))
        self.step_seconds = float(saved.get("step_seconds", 0.0))
        self.save_seconds = saved.get("save_seconds")

    # -- losses and saves ---------------------------------------------------------------------

    def flush(self) -> None:
        """Move the losses of the steps since the last flush (on the device) into ``state.losses``."""
        if self.pending:
            values = batch_losses(torch.stack(self.pending).float(), self.plan.world)
            self.state.losses.extend(values.cpu().tolist())
            self.pending.clear()

    def save(self, final: bool = False) -> Path | None:
        """Every process: the losses and RNG states gathered; rank 0 writes."""
        plan = self.plan
        self.flush()
        t0 = time.perf_counter()
        rngs = gather(rng_state(plan.device), plan.world)
        written = None
        if self.lead:
            info = {**plan.extra, "seconds": self.done_seconds + time.perf_counter() - self.start,
                    "tokens": self.done_tokens + self.tokens, "step_seconds": self.step_seconds,
                    "save_seconds": self.save_seconds}
            try:
                written = save_checkpoint(plan.checkpoint, self.model, self.optimizer, self.scheduler, self.state,
                                          self.callbacks, rng=rngs, extra=info)
            except OSError as err:
                if final:
                    raise
                warnings.warn(f"could not save the training state to {plan.checkpoint} ({err}); training goes on",
                              stacklevel=5)
        barrier(plan.world)
        self.save_seconds = time.perf_counter() - t0
        self.last_save = time.monotonic()
        self.saved_step = self.state.step
        return written if self.lead else plan.checkpoint

    # -- stopping -----------------------------------------------------------------------------

    def _should_stop(self) -> tuple[str | None, bool]:
        """(reason to stop now or None, whether a timed save is due), the same in every process."""
        plan, config = self.plan, self.config
        reason = "SIGTERM" if self.stop_signal.received else None
        if reason is None and plan.stop_at is not None:
            save = self.save_seconds if self.save_seconds is not None else _save_estimate(self.model)
            if would_pass(plan.stop_at, 1.5 * self.step_seconds + save):
                reason = "deadline"
        due = config.checkpoint_seconds is not None and time.monotonic() - self.last_save >= config.checkpoint_seconds
        if plan.world > 1:
            sig, late, due = any_process([reason == "SIGTERM", reason == "deadline", due and self.lead], plan.device)
            reason = "SIGTERM" if sig else ("deadline" if late else None)
        return reason, due

    def _stop_or_save(self) -> None:
        """Before a step: raise ``TrainingInterrupted`` (state saved) if it is time to stop, or save if due."""
        reason, due = self._should_stop()
        state = self.state
        if reason is not None:
            if state.step == self.start_step:  # nothing trained in this call: what is stored stays
                path = self.plan.checkpoint if self.saved_step is not None else None
            else:
                path = self.save() if self.saved_step != state.step else self.plan.checkpoint
            raise TrainingInterrupted(state.step, self.plan.total, reason, path)
        if due and self.saved_step != state.step:
            self.save()

    # -- steps --------------------------------------------------------------------------------

    def _rows(self) -> torch.Tensor:
        """The rows of this step's batch: ``(epoch, i) = divmod(step, steps_per_epoch)``."""
        config, plan = self.config, self.plan
        epoch, i = divmod(self.state.step, plan.steps_per_epoch)
        if epoch != self.epoch_of:
            self.batches = epoch_batches(len(self.data), config.batch_size, seed=config.seed, epoch=epoch,
                                         padding=config.padding, lengths=plan.lengths)
            self.epoch_of = epoch
        return self.batches[i]

    def _update(self, batch: Batch, rows: int) -> torch.Tensor:
        """Forward, backward, clipping and the optimiser's step on ``batch``; the (weighted) loss."""
        config, plan, b = self.config, self.plan, batch.tensors
        try:
            with autocast(plan.device, plan.precision):
                out = self.forward(b["input_ids"], b.get("attention_mask"), b.get("token_type_ids"), labels=b["labels"])
            loss = out.loss if batch.weight == 1.0 else out.loss * batch.weight
            loss.backward()
            if config.max_grad_norm is not None:
                # g <- g min(1, c / ||g||)
                torch.nn.utils.clip_grad_norm_(self.model.parameters(), config.max_grad_norm)
            self.optimizer.step()
            self.tokens += batch.tokens
        except (RuntimeError, torch.OutOfMemoryError) as err:
            if is_oom(err):
                self.optimizer.zero_grad(set_to_none=True)
                raise TrainingOOMError(oom_message(rows, plan.seq_len, plan.device)) from err
            raise
        return loss

    def _step(self) -> None:
        """One optimiser step, then the logging, callbacks and step-counted checkpoint that follow it."""
        config, plan, state = self.config, self.plan, self.state
        t_step = time.perf_counter()
        idx = self._rows()
        shard = (plan.rank, plan.world) if plan.world > 1 else None
        batch = step_batch(self.data, config, plan.vocab_size, state.step, idx, plan.device, shard)
        loss = self._update(batch, len(idx))
        state.lrs.append(self.optimizer.param_groups[0]["lr"])
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        state.step += 1
        self.pending.append(loss.detach())
        self.bar.update(1)
        ckpt_due = config.checkpoint_every is not None and state.step % config.checkpoint_every == 0
        if state.step % config.log_every == 0 or state.step == plan.total or ckpt_due:
            self.flush()
            if self.lead:
                self.bar.set_postfix(loss=f"{state.losses[-1]:.4f}", lr=f"{state.lrs[-1]:.2e}")
        for cb in self.callbacks:
            cb.on_step_end(state)
        if ckpt_due:
            self.save()
        elapsed = time.perf_counter() - t_step
        self.step_seconds = elapsed if self.step_seconds == 0.0 else 0.8 * self.step_seconds + 0.2 * elapsed

    def run(self) -> float:
        """The steps left, between ``on_train_begin`` and ``on_train_end``; the seconds they took."""
        from ..progress import tqdm
        config, plan, state = self.config, self.plan, self.state
        self.forward = wrap_model(self.model, plan.device, plan.world)
        if config.compile:
            self.forward = torch.compile(self.forward)
        self.model.train()
        for cb in self.callbacks:
            cb.on_train_begin(state)
        self.start = time.perf_counter()
        self.last_save = time.monotonic()
        self.bar = tqdm(total=plan.total, initial=state.step, disable=not (config.progress and self.lead),
                        desc=f"train {config.task}", unit="step")
        completed = False
        try:
            with StopSignal() as self.stop_signal:
                while state.step < plan.total:
                    self._stop_or_save()
                    self._step()
                completed = True
        finally:
            if plan.world == 1 or completed:
                self.flush()
            self.bar.close()
        if plan.device.startswith("cuda"):
            torch.cuda.synchronize()
        runtime = time.perf_counter() - self.start
        for cb in self.callbacks:
            cb.on_train_end(state)
        return runtime

    def keep_or_remove_state(self) -> None:
        """Keep the final state in an explicit folder or under a deadline (finished models are skipped on rerun)."""
        plan = self.plan
        if plan.explicit or current_deadline() is not None:
            if self.saved_step != self.state.step:
                self.save(final=True)
        else:
            if self.lead and plan.folder.is_dir():
                shutil.rmtree(plan.folder, ignore_errors=True)
                fsync_dir(plan.folder.parent)
            barrier(plan.world)  # every rank returns after the finished run's state is gone, never before

    def result(self, runtime: float) -> TrainResult:
        state = self.state
        total_runtime = self.done_seconds + runtime
        return TrainResult(
            steps=state.step, losses=list(state.losses), lrs=list(state.lrs),
            final_loss=state.losses[-1] if state.losses else float("nan"), runtime_s=total_runtime,
            tokens_per_s=(self.done_tokens + self.tokens) / total_runtime if total_runtime > 0 else float("nan"),
            device=self.plan.device, precision=self.plan.precision, resumed_from=state.resumed_from,
        )


def train(model: nn.Module, data, config: TrainConfig | None = None, *, callbacks: Iterable = (),
          eval_data=None) -> TrainResult:
    """Train a masked-LM or sequence-classification encoder on token ids; resumable.

    Parameters
    ----------
    model : nn.Module
        Called as ``model(input_ids, attention_mask, token_type_ids, labels)`` → output with ``.loss``.
    data : TokenData, dict or tuple
        ``input_ids`` (N, L), optional ``attention_mask`` (N, L), ``labels`` (N,) for classification.
    callbacks : iterable of :class:`~posgeom.models.callbacks.Callback`
    eval_data : like ``data``, optional
        Evaluated once at the end (:func:`evaluate`).

    Returns
    -------
    TrainResult
        Losses and learning rates, runtime and tokens/s, over the whole run when it was resumed.

    Raises
    ------
    TrainingInterrupted
        At the deadline (:func:`~posgeom.models.deadlines.deadline`, ``POSGEOM_DEADLINE``) or on SIGTERM,
        once the state is saved.
    """
    config = config or TrainConfig()
    data = as_token_data(data)
    callbacks = list(callbacks)
    run = _Run(model, data, config, callbacks, _plan(model, data, config, callbacks))
    run.resume()
    runtime = run.run()
    run.keep_or_remove_state()
    result = run.result(runtime)
    if eval_data is not None:
        result.eval = evaluate(model, eval_data, config)
    return result


@torch.no_grad()
def evaluate(model: nn.Module, data, config: TrainConfig | None = None, batch_size: int | None = None) -> dict[str, float]:
    """Mean loss and accuracy (classification: of the label; MLM: of the masked tokens, fixed seeded masking).

    Returns
    -------
    dict
        ``loss``, ``accuracy`` and ``n`` (examples, or masked tokens for MLM).
    """
    config = config or TrainConfig()
    data = as_token_data(data)
    device = str(next(model.parameters()).device)  # "cuda:1" stays "cuda:1": batches go where the model is
    precision = resolve_precision(config.precision, device)
    bs = batch_size or config.batch_size
    was_training = model.training
    model.eval()
    total_loss, correct, count = 0.0, 0, 0
    try:
        for b, start in enumerate(range(0, len(data), bs)):
            idx = torch.arange(start, min(start + bs, len(data)))
            batch = step_batch(data, config, model.config.vocab_size, -1 - b, idx, device).tensors
            with autocast(device, precision):
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
    "TASKS", "PRECISIONS", "SCHEDULES", "TrainConfig", "TrainState", "TrainResult", "TrainingOOMError", "train",
    "evaluate",
]
