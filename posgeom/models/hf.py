"""Hugging Face BERT ↔ posgeom encoder: config and weight conversion, and a safetensors checkpoint reader.

The posgeom encoder with ``position="learned"`` is BERT's architecture; only the parameter names differ
(``convert_state_dict`` maps them) and Q/K/V are one fused matrix here. Checkpoints are read from
``model.safetensors`` only (never pickled ``.bin`` files).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping

import torch

from .encoder import Encoder, EncoderConfig, EncoderForMaskedLM, EncoderForSequenceClassification
from ..validation import check_choice

_ACT = {"gelu": "gelu", "gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh"}
LOAD_TASKS = ("encoder", "mlm", "classification")


def config_from_hf(hf_config: Any, **overrides) -> EncoderConfig:
    """An :class:`EncoderConfig` equal to a BERT config (``transformers.BertConfig`` or dict), then ``overrides``."""
    c = hf_config.to_dict() if hasattr(hf_config, "to_dict") else dict(hf_config)
    kind = c.get("position_embedding_type", "absolute") or "absolute"
    if kind != "absolute":
        raise ValueError(f"only absolute (learned) BERT position embeddings convert, got {kind!r}")
    if c.get("model_type", "bert") not in ("bert",):
        raise ValueError(f"only BERT-architecture checkpoints convert, got model_type={c.get('model_type')!r}")
    act = c.get("hidden_act", "gelu")
    if act not in _ACT:
        raise ValueError(f"unsupported activation {act!r}; supported: {', '.join(_ACT)}")
    cfg = dict(
        vocab_size=c["vocab_size"], d_model=c["hidden_size"], n_layers=c["num_hidden_layers"],
        n_heads=c["num_attention_heads"], d_ff=c["intermediate_size"], max_len=c["max_position_embeddings"],
        position="learned", dropout=c.get("hidden_dropout_prob", 0.1),
        attention_dropout=c.get("attention_probs_dropout_prob", 0.1), layer_norm_eps=c.get("layer_norm_eps", 1e-12),
        type_vocab_size=c.get("type_vocab_size", 2), pad_token_id=c.get("pad_token_id") or 0,
        activation=_ACT[act], init_std=c.get("initializer_range", 0.02),
        causal=bool(c.get("is_decoder", False)),
    )
    if "n_labels" not in overrides and c.get("id2label"):
        cfg["n_labels"] = max(len(c["id2label"]), 2)
    cfg.update(overrides)
    return EncoderConfig(**cfg)


def _strip_prefix(state: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    out = {}
    for k, v in state.items():
        out[k[len("bert."):] if k.startswith("bert.") else k] = v
    return out


def convert_state_dict(hf_state: Mapping[str, torch.Tensor], config: EncoderConfig, task: str = "encoder"):
    """Rename (and fuse) a Hugging Face BERT state dict into a posgeom one.

    Parameters
    ----------
    hf_state : mapping name → tensor
        From ``BertModel``, ``BertForMaskedLM`` or ``BertForSequenceClassification``.
    task : {"encoder", "mlm", "classification"}

    Returns
    -------
    state : dict name → tensor
    unused : list of str
        Hugging Face names that have no place in the target model.
    """
    check_choice(task, "task", LOAD_TASKS)
    src = _strip_prefix(hf_state)
    body = "" if task == "encoder" else "encoder."
    out: dict[str, torch.Tensor] = {}
    used: set[str] = set()

    def take(hf_name: str, name: str, required: bool = True) -> None:
        if hf_name not in src:
            if required:
                raise KeyError(
                    f"the checkpoint has no {hf_name!r}: it is not a BERT-architecture state dict "
                    f"(or misses layers; the config asks for {config.n_layers})"
                )
            return
        out[name] = src[hf_name]
        used.add(hf_name)

    for p in ("weight",):
        take(f"embeddings.word_embeddings.{p}", f"{body}embeddings.word.{p}")
        take(f"embeddings.position_embeddings.{p}", f"{body}embeddings.position.{p}")
        if config.type_vocab_size:
            take(f"embeddings.token_type_embeddings.{p}", f"{body}embeddings.token_type.{p}")
    for p in ("weight", "bias"):
        take(f"embeddings.LayerNorm.{p}", f"{body}embeddings.norm.{p}")
    for i in range(config.n_layers):
        hf, me = f"encoder.layer.{i}.", f"{body}layers.{i}."
        for p in ("weight", "bias"):
            names = [f"{hf}attention.self.{x}.{p}" for x in ("query", "key", "value")]
            missing = [n for n in names if n not in src]
            if missing:
                raise KeyError(f"the checkpoint has no {missing[0]!r}; the config asks for {config.n_layers} layers")
            # W_qkv = [W_Q; W_K; W_V]
            out[f"{me}attn.qkv.{p}"] = torch.cat([src[n] for n in names], dim=0)
            used.update(names)
            take(f"{hf}attention.output.dense.{p}", f"{me}attn.out.{p}")
            take(f"{hf}attention.output.LayerNorm.{p}", f"{me}norm1.{p}")
            take(f"{hf}intermediate.dense.{p}", f"{me}ff1.{p}")
            take(f"{hf}output.dense.{p}", f"{me}ff2.{p}")
            take(f"{hf}output.LayerNorm.{p}", f"{me}norm2.{p}")
    if task == "mlm":
        for p in ("weight", "bias"):
            take(f"cls.predictions.transform.dense.{p}", f"transform.{p}", required=False)
            take(f"cls.predictions.transform.LayerNorm.{p}", f"transform_norm.{p}", required=False)
        if "cls.predictions.bias" in src:
            take("cls.predictions.bias", "decoder_bias")
        else:
            take("cls.predictions.decoder.bias", "decoder_bias", required=False)
        used.add("cls.predictions.decoder.weight")  # tied to the word embeddings
        used.add("cls.predictions.decoder.bias")
    if task == "classification":
        if config.pooling == "cls":
            for p in ("weight", "bias"):
                take(f"pooler.dense.{p}", f"pooler.{p}", required=False)
        for p in ("weight", "bias"):
            take(f"classifier.{p}", f"classifier.{p}", required=False)
    buffers = {"embeddings.position_ids", "embeddings.token_type_ids"}
    unused = sorted(k for k in src if k not in used and k not in buffers)
    return out, unused


def _build(config: EncoderConfig, task: str):
    return {"encoder": Encoder, "mlm": EncoderForMaskedLM, "classification": EncoderForSequenceClassification}[task](config)


def _load_into(model: torch.nn.Module, state: dict[str, torch.Tensor], unused: list[str]) -> torch.nn.Module:
    result = model.load_state_dict(state, strict=False)
    missing = [k for k in result.missing_keys]
    body_missing = [k for k in missing if k.startswith(("encoder.", "embeddings.", "layers."))]
    if body_missing:
        raise KeyError(f"the checkpoint does not fill the encoder body: missing {body_missing[:5]}")
    #: What the checkpoint did not provide (kept at initialisation) and what it had beyond the model.
    model.load_report = {"initialised": missing, "unused": unused}
    return model


def from_hf(hf_model: torch.nn.Module, task: str | None = None, **overrides):
    """A posgeom model with the weights (and train/eval mode) of a ``transformers`` BERT model.

    ``task`` defaults to the head of ``hf_model``; ``model.load_report`` lists what was not copied.
    """
    name = type(hf_model).__name__
    if task is None:
        task = {"BertForMaskedLM": "mlm", "BertForSequenceClassification": "classification"}.get(name, "encoder")
    config = config_from_hf(hf_model.config, **overrides)
    state, unused = convert_state_dict(hf_model.state_dict(), config, task)
    model = _load_into(_build(config, task), state, unused)
    model.train(hf_model.training)
    return model


def read_checkpoint(folder: str | os.PathLike, task: str = "encoder", **overrides):
    """Read a BERT-family checkpoint folder (``config.json`` + ``model.safetensors``) into posgeom, in eval mode.

    Parameters
    ----------
    task : {"encoder", "mlm", "classification"}
    **overrides
        Config fields to change.

    Returns
    -------
    Encoder, EncoderForMaskedLM or EncoderForSequenceClassification
    """
    from safetensors.torch import load_file
    check_choice(task, "task", LOAD_TASKS)
    folder = Path(folder)
    cfg_file, weights = folder / "config.json", folder / "model.safetensors"
    if not cfg_file.is_file():
        raise ValueError(f"{folder} has no config.json")
    if not weights.is_file():
        raise ValueError(
            f"{folder} has no model.safetensors; posgeom reads safetensors only (never pickled .bin files): "
            "convert the checkpoint with transformers' save_pretrained(safe_serialization=True)"
        )
    config = config_from_hf(json.loads(cfg_file.read_text()), **overrides)
    state, unused = convert_state_dict(load_file(str(weights)), config, task)
    model = _load_into(_build(config, task), state, unused)
    return model.eval()


__all__ = ["config_from_hf", "convert_state_dict", "from_hf", "read_checkpoint", "LOAD_TASKS"]
