"""The arithmetic: a model's shape, the work of an experiment (tokens, FLOPs, steps), its time on the
GPU under stated assumptions, and its peak memory."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .access import setting
from .measured import CPU_FLOPS

__all__ = ["SLICE_MINUTES", "Assumptions", "ASSUMPTIONS", "Shape", "BERT_BASE", "Work", "ExperimentCost",
           "parameter_count", "peak_memory_gb"]

#: The longest slice ``posgeom reproduce --budget`` plans (minutes): a GPU window of about a quarter hour.
SLICE_MINUTES = 9.0


@dataclass(frozen=True)
class Assumptions:
    """The hardware and the training tricks the times assume.

    ``peak_flops``: dense bf16 peak (989 TFLOP/s: H100 SXM and H200 datasheets); ``mfu``: the model-FLOPs
    utilisation reached; ``bucketed``: batches of similar lengths, padding not trained on.
    """

    gpu: str = "one H100/H200-class GPU"
    peak_flops: float = 989e12
    mfu: float = 0.40
    cpu_flops: float = CPU_FLOPS
    bucketed: bool = True
    step_s: float = 2e-3
    layer_step_s: float = 0.3e-3

    def step_seconds(self, n_layers: int) -> float:
        """The least time of one training step whatever its FLOPs (eager PyTorch launches kernels one by one)."""
        return self.step_s + n_layers * self.layer_step_s

    def describe(self) -> str:
        return (f"{self.gpu} at {self.peak_flops / 1e12:.0f} TFLOP/s dense bf16 peak and {self.mfu:.0%} MFU, "
                f"and at least {self.step_s * 1e3:g} ms + {self.layer_step_s * 1e3:g} ms per layer per training "
                f"step (a third per forward batch: kernel launches bound small models); this CPU at a measured "
                f"{self.cpu_flops / 1e9:.0f} GFLOP/s; "
                + ("length-bucketed batches (mean real tokens)" if self.bucketed else "padded batches")
                + "; FLOPs: posgeom.models.model_flops_per_token (matmuls, training = 3 x forward)")


ASSUMPTIONS = Assumptions()


@dataclass(frozen=True)
class Shape:
    """An encoder's shape: width, layers, MLP width, vocabulary (embeddings and MLM head)."""

    d_model: int
    n_layers: int
    d_ff: int
    vocab_size: int

    @classmethod
    def of(cls, model: Any, vocab_size: int) -> "Shape":
        return cls(int(setting(model, "d_model")), int(setting(model, "n_layers")), int(setting(model, "d_ff")),
                   int(vocab_size))


BERT_BASE = Shape(768, 12, 3072, 30522)


@dataclass(frozen=True)
class Work:
    """One kind of computation an experiment repeats ``runs`` times.

    ``kind``: ``"train"`` or ``"forward"``; ``sequences``: per run (steps × batch for training);
    ``real_tokens``: mean real tokens per sequence of padded length ``n_positions``; ``mlm_fraction``: share of
    tokens the MLM head predicts (0: a classification head); ``share``: work with the same key is done once.
    """

    what: str
    shape: Shape
    kind: str
    n_positions: int
    real_tokens: float
    sequences: int
    runs: int
    batch_size: int = 64
    mlm_fraction: float = 0.0
    share: str = ""

    def tokens(self, bucketed: bool) -> float:
        return self.runs * self.sequences * (min(self.real_tokens, self.n_positions) if bucketed else self.n_positions)

    @property
    def steps(self) -> int:
        """Optimiser steps (training) or batches (forward) over all runs."""
        return self.runs * math.ceil(self.sequences / self.batch_size)

    def gpu_seconds(self, assumptions: "Assumptions") -> float:
        """max(FLOPs at the assumed MFU, steps at the least time of a step)."""
        floor = self.steps * assumptions.step_seconds(self.shape.n_layers) / (1.0 if self.kind == "train" else 3.0)
        return max(self.flops(assumptions.bucketed) / (assumptions.peak_flops * assumptions.mfu), floor)

    def flops(self, bucketed: bool) -> float:
        from ..models.encoder import EncoderConfig, model_flops_per_token
        length = min(self.real_tokens, self.n_positions) if bucketed else self.n_positions
        config = EncoderConfig(vocab_size=self.shape.vocab_size, d_model=self.shape.d_model,
                               n_layers=self.shape.n_layers, n_heads=1, d_ff=self.shape.d_ff, max_len=self.n_positions)
        per_token = model_flops_per_token(config, max(1, round(length)), mlm_fraction=self.mlm_fraction)
        return self.tokens(bucketed) * per_token / (1.0 if self.kind == "train" else 3.0)


@dataclass(frozen=True)
class ExperimentCost:
    """The cost of one paper-scale experiment (``chapter``, ``experiment`` = ``module:function``)."""

    chapter: str
    experiment: str
    work: tuple[Work, ...]
    runs: int
    tokens_padded: float
    tokens: float
    flops: float
    gpu_memory_gb: float
    gpu_minutes: float
    cpu_hours: float
    steps: int = 0
    shared: tuple[str, ...] = ()

    @property
    def slices(self) -> int:
        """Slices of at most :data:`SLICE_MINUTES` on the GPU (training checkpoints at slice ends)."""
        return max(1, math.ceil(self.gpu_minutes / SLICE_MINUTES)) if self.gpu_minutes > 0 else 0


def parameter_count(shape: Shape, n_positions: int) -> int:
    """Parameters of an encoder: per layer 4 d² + 2 d d_ff (+ biases), embeddings (V + n) d."""
    d = shape.d_model
    per_layer = 4 * d * d + 2 * d * shape.d_ff + 9 * d + shape.d_ff
    return shape.n_layers * per_layer + (shape.vocab_size + n_positions) * d


def peak_memory_gb(work: Work) -> float:
    """Peak GPU memory of one run of ``work`` in GB (the formula is in the package docstring)."""
    params = parameter_count(work.shape, work.n_positions)
    b, L, d = work.batch_size, work.n_positions, work.shape.d_model
    if work.kind == "train":
        state = 16 * params  # fp32 weights + gradients + AdamW's two moments
        activations = 34 * b * L * d * work.shape.n_layers  # bf16, flash attention
        logits = 6 * b * L * work.shape.vocab_size if work.mlm_fraction else 0
    else:
        state, activations, logits = 4 * params, 4 * 34 * b * L * d, 4 * b * L * work.shape.vocab_size
    return (state + activations + logits) / 1e9
