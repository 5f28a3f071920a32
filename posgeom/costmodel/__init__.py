r"""What the paper scale costs: tokens, training FLOPs, peak memory and time, per experiment.

Each experiment that runs a model at ``paper`` scale is described by its :class:`Work`, read from its module's
own ``CONFIGS["paper"]`` so that the model follows the modules. From the work:

* **tokens** = runs × sequences × tokens per sequence (padded, or the mean real length when bucketed);
* **FLOPs** = tokens × :func:`posgeom.models.encoder.model_flops_per_token` (training = 3 × forward);
* **peak GPU memory**: 16 bytes per parameter (fp32 weights, gradients, two AdamW moments) plus bf16
  activations of one batch, $34\,b L d$ bytes per layer (Korthikanti et al. 2022, flash attention), plus
  the MLM logits (6 bytes each);
* **time** on the GPU = max(FLOPs / (peak × MFU), steps × the least time of a step: small models are
  bound by kernel launches), and on this CPU FLOPs / the measured rate.

Work with the same ``share`` key is counted once. :data:`PROPOSED` records why each paper setting is what
it is; ``experiment_costs(proposed=True)`` costs a proposal before it is applied.
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
