"""Positional encodings as PyTorch modules, a BERT-style encoder and its training loop.

* :mod:`posgeom.models.positional` — one module per encoding (none, learned, sinusoidal, MDS,
  low-rank, RoPE, ALiBi), each with ``distance_matrix()`` for the geometry core. A new encoding goes
  in :data:`~posgeom.models.positional.POSITIONAL` (its geometry in :data:`posgeom.encodings.ENCODINGS`).
* :mod:`posgeom.models.encoder` — the encoder, its MLM and classification heads, ``quick``/``paper`` configs.
* :mod:`posgeom.models.hf` — Hugging Face BERT ↔ posgeom conversion and the safetensors checkpoint reader.
* :mod:`posgeom.models.pretrained` — pretrained models by name: the one resolver (re-exported from
  :mod:`posgeom.config`), :func:`~posgeom.models.pretrained.load_hf` (the Hugging Face model: table and
  attention weights), :func:`~posgeom.models.pretrained.load_encoder` (as a posgeom encoder) and
  :func:`~posgeom.models.pretrained.position_table`.
* :mod:`posgeom.models.training` — the MLM/classification training loop (:func:`~posgeom.models.training.train`,
  :func:`~posgeom.models.training.evaluate`, :class:`~posgeom.models.training.TrainConfig`).
* :mod:`posgeom.models.batches` — token data and the batches of each step: order, BERT masking, padding.
* :mod:`posgeom.models.optim` — AdamW with BERT's weight-decay groups and its warm-up/decay schedule.
* :mod:`posgeom.models.checkpoints` — the training state on disk: keys, durable saves, resumption, progress.
* :mod:`posgeom.models.deadlines` — deadlines and SIGTERM: when training saves its state and stops.
* :mod:`posgeom.models.distributed` — several processes: DistributedDataParallel with one process's numbers.
* :mod:`posgeom.models.callbacks` — geometry of the positional table recorded during training.
"""

from .callbacks import Callback, PositionGeometry
from .encoder import (
    CONFIGS,
    Encoder,
    EncoderConfig,
    EncoderForMaskedLM,
    EncoderForSequenceClassification,
    ModelOutput,
    build_model,
    get_config,
    model_flops_per_token,
)
from .hf import config_from_hf, convert_state_dict, from_hf, read_checkpoint
from .pretrained import (
    AttentionWeights,
    ModelLocation,
    ModelUnavailableError,
    PretrainedModel,
    load_encoder,
    load_hf,
    model_folder,
    position_table,
    resolve_model,
)
from .positional import (
    POSITIONAL,
    ALiBiPositional,
    LearnedPositional,
    LowRankPositional,
    MDSPositional,
    NoPE,
    NoPositional,
    PositionalEncoding,
    PositionLimitError,
    RotaryPositional,
    SinusoidalPositional,
    build_positional,
)
from .batches import TokenData, as_token_data, mask_tokens
from .checkpoints import CheckpointProgress, checkpoint_progress, discard_checkpoints, load_checkpoint
from .deadlines import TrainingInterrupted, deadline
from .training import TrainConfig, TrainingOOMError, TrainResult, evaluate, set_seed, train

from .threads import torch_threads
from .comparison import accuracy_gaps, summarise_seeds, train_one
from .layers import LayerMeans, collect_layer_means, group_means, layer_inputs, static_positions

__all__ = [
    "Callback", "PositionGeometry",
    "CONFIGS", "Encoder", "EncoderConfig", "EncoderForMaskedLM", "EncoderForSequenceClassification", "ModelOutput",
    "build_model", "get_config", "model_flops_per_token",
    "config_from_hf", "convert_state_dict", "from_hf", "read_checkpoint",
    "AttentionWeights", "ModelLocation", "ModelUnavailableError", "PretrainedModel", "load_encoder", "load_hf",
    "model_folder", "resolve_model", "position_table",
    "POSITIONAL", "ALiBiPositional", "LearnedPositional", "LowRankPositional", "MDSPositional", "NoPE",
    "NoPositional", "PositionalEncoding", "PositionLimitError", "RotaryPositional", "SinusoidalPositional",
    "build_positional",
    "TokenData", "TrainConfig", "TrainingOOMError", "TrainResult", "as_token_data", "evaluate", "load_checkpoint", "mask_tokens",
    "TrainingInterrupted", "deadline", "checkpoint_progress", "discard_checkpoints", "CheckpointProgress",
    "set_seed", "train",
    "torch_threads",
    "train_one", "summarise_seeds", "accuracy_gaps",
    "LayerMeans", "layer_inputs", "collect_layer_means", "group_means", "static_positions",
]
