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
* :mod:`posgeom.models.training` — MLM/classification training, checkpoints and resumption, deadlines.
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
from .training import (
    CheckpointProgress,
    TokenData,
    TrainConfig,
    TrainingInterrupted,
    TrainingOOMError,
    TrainResult,
    checkpoint_progress,
    deadline,
    discard_checkpoints,
    as_token_data,
    evaluate,
    load_checkpoint,
    mask_tokens,
    set_seed,
    train,
)

from .threads import torch_threads

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
]
