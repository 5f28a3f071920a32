r"""What the paper scale costs: tokens, training FLOPs, peak memory and time, per experiment.

Every experiment of :data:`posgeom.reproduce.CHAPTERS` that trains or runs a model at ``paper`` scale
is described by its **work** (:class:`Work`): an encoder shape, the padded sequence length, the mean
number of real tokens per sequence, how many sequences one run processes and how many runs (seeds ×
variants). The numbers are read from the experiment modules' own paper settings (``CONFIGS["paper"]``,
a dict or a typed settings dataclass), so the model follows the modules when they change.

From the work:

* **tokens** = runs × sequences × tokens per sequence: the padded length without length bucketing,
  the mean real length with it (:data:`CORPUS_LENGTHS`, measured on the corpora by
  :func:`measure_corpus_lengths`: SST-2 sentences are about 13 WordPiece tokens with ``[CLS]``/``[SEP]``);
* **FLOPs** = tokens × :func:`posgeom.models.encoder.model_flops_per_token` (training: forward + backward =
  3 × forward, matmuls only, PaLM's MFU convention; a forward-only pass is a third of it);
* **peak GPU memory**: fp32 weights, gradients and two AdamW moments (16 bytes per parameter) plus bf16
  activations of one batch, $34\,b L d$ bytes per layer (Korthikanti et al. 2022, flash attention:
  no $L^2$ term), plus the logits of the MLM head (6 bytes each);
* **time** on the GPU = FLOPs / (peak × MFU) (:class:`Assumptions`: 989 TFLOP/s dense bf16, the H100/H200
  SXM datasheet figure, at 40 % MFU) and on this CPU = FLOPs / the measured rate
  (:data:`CPU_FLOPS`, :func:`measure_cpu_rate`).

Work with the same ``share`` key is one computation (the same pretraining read by several chapters
through the registry) and is counted once, by the first experiment that needs it.

**A step has a least time.** Small models (width 128) and short sequences (a bucketed batch of 64
SST-2 sentences is 850 tokens) do not keep a GPU busy: their steps cost the kernel launches of the
forward, the backward and the optimiser, whatever their FLOPs. The GPU time of a work is therefore
the larger of its FLOPs at the assumed MFU and its steps at :meth:`Assumptions.step_seconds`.

**Sizing.** :data:`PROPOSED` lists the paper-scale changes (module, field, old → new, why) that bring
the GPU part under :data:`GPU_GOAL_MINUTES` (:func:`readme_table`: padded, bucketed, proposed): 4x
larger batches and 4x fewer steps for the step-bound runs, every run seeing the same sequences, and
half the steps for Theorem 4's runs (the largest FLOP-bound item, weight decay doubled to keep its
documented decay factor). They are applied in the experiment modules' paper settings, so the list is
now the record of why each paper value is what it is; :func:`experiment_costs` with ``proposed=True``
applies any not yet in the modules (none today), so a new proposal can be costed before it is applied.

The package, by concern: ``work`` (the arithmetic: shapes, work, time and memory),
``measured`` (measured inputs), ``catalogue`` (each
experiment's work, read from its settings), ``proposed`` (the sizing and its
reasons), ``access`` (settings as dicts or dataclasses) and
``table`` (the costs, totals and tables). ``posgeom costs`` prints the table and
``posgeom costs --write-readme`` rewrites the README's (:mod:`posgeom.commands.costs`).
"""

from __future__ import annotations

from .access import plain, setting, with_setting
from .catalogue import EXPERIMENTS, RESULT_NAMES
from .measured import (
    CORPUS_LENGTHS, CPU_FLOPS, MEASUREMENTS, Measurement, gpu_measurements, mean_tokens, measure_corpus_lengths,
    measure_cpu_rate,
)
from .proposed import PROPOSED, Override, apply_overrides, pending_overrides
from .table import (
    CPU_FEASIBLE_HOURS, GPU_GOAL_MINUTES, README_MARKERS, cost_table, experiment_costs, format_costs, gpu_work, needs_gpu,
    paper_settings, readme_table, totals, update_readme,
)
from .work import (
    ASSUMPTIONS, BERT_BASE, SLICE_MINUTES, Assumptions, ExperimentCost, Shape, Work, parameter_count, peak_memory_gb,
)

__all__ = [
    "Assumptions", "ASSUMPTIONS", "Shape", "BERT_BASE", "Work", "ExperimentCost", "Override", "PROPOSED",
    "CORPUS_LENGTHS", "CPU_FLOPS", "GPU_GOAL_MINUTES", "SLICE_MINUTES", "setting", "with_setting", "experiment_costs",
    "cost_table", "totals", "format_costs", "readme_table", "measure_corpus_lengths", "measure_cpu_rate",
    "mean_tokens", "parameter_count", "peak_memory_gb", "apply_overrides", "MEASUREMENTS", "Measurement",
    "gpu_measurements", "README_MARKERS", "update_readme", "EXPERIMENTS", "RESULT_NAMES", "CPU_FEASIBLE_HOURS",
    "needs_gpu", "gpu_work", "paper_settings", "pending_overrides", "plain",
]
