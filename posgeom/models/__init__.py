"""Positional encodings as PyTorch modules, a BERT-style encoder and its training loop.

:mod:`posgeom.models.positional` holds one module per encoding, :mod:`posgeom.models.encoder` the encoder and
its heads, :mod:`posgeom.models.training` the resumable MLM/classification loop, :mod:`posgeom.models.pretrained`
the pretrained models by name.
"""

from .callbacks import Callback, PositionGeometry
from .encoder import (CONFIGS, Encoder, EncoderConfig, EncoderForMaskedLM, EncoderForSequenceClassification,
                      ModelOutput, build_model, get_config, model_flops_per_token)
from .hf import config_from_hf, convert_state_dict, from_hf, read_checkpoint
from .pretrained import (AttentionWeights, ModelLocation, ModelUnavailableError, PretrainedModel, load_encoder,
                         load_hf, model_folder, position_table, resolve_model)
from .positional import (POSITIONAL, ALiBiPositional, LearnedPositional, LowRankPositional, MDSPositional, NoPE,
                         NoPositional, PositionalEncoding, PositionLimitError, RotaryPositional, SinusoidalPositional,
                         build_positional)
from .batches import TokenData, as_token_data, mask_tokens
from .checkpoints import CheckpointProgress, checkpoint_progress, discard_checkpoints, load_checkpoint
from .deadlines import TrainingInterrupted, deadline
from .training import TrainConfig, TrainingOOMError, TrainResult, evaluate, train
from .threads import torch_threads
from .comparison import accuracy_gaps, summarise_seeds, train_one
from .layers import LayerMeans, collect_layer_means, group_means, layer_inputs, static_positions

__all__ = [
    "Callback", "PositionGeometry", "CONFIGS", "Encoder", "EncoderConfig", "EncoderForMaskedLM",
    "EncoderForSequenceClassification", "ModelOutput", "build_model", "get_config", "model_flops_per_token",
    "config_from_hf", "convert_state_dict", "from_hf", "read_checkpoint", "AttentionWeights", "ModelLocation",
    "ModelUnavailableError", "PretrainedModel", "load_encoder", "load_hf", "model_folder", "resolve_model",
    "position_table", "POSITIONAL", "ALiBiPositional", "LearnedPositional", "LowRankPositional", "MDSPositional",
    "NoPE", "NoPositional", "PositionalEncoding", "PositionLimitError", "RotaryPositional", "SinusoidalPositional",
    "build_positional", "TokenData", "TrainConfig", "TrainingOOMError", "TrainResult", "as_token_data", "evaluate",
    "load_checkpoint", "mask_tokens", "TrainingInterrupted", "deadline", "checkpoint_progress", "discard_checkpoints",
    "CheckpointProgress", "train", "torch_threads", "train_one", "summarise_seeds", "accuracy_gaps", "LayerMeans",
    "layer_inputs", "collect_layer_means", "group_means", "static_positions",
]
