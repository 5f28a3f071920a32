r"""Pretrained models by name: where a name points (the one resolver, :mod:`posgeom.config`) and the
learned position table of the model it names.

Name resolution lives at the bottom layer (:func:`posgeom.config.resolve_model`,
:func:`posgeom.config.model_folder`) so that :mod:`posgeom.corpora.pretrained` (the Hugging Face loader)
and :mod:`posgeom.models.hf` (posgeom's own encoder) resolve names the same way; this module
re-exports them beside :func:`position_table`.

The position table is $P \in \mathbb R^{N_{max} \times d}$, row $i$ the vector added to the token at
position $i$ (``embeddings.position_embeddings.weight`` in BERT, ``wpe`` in GPT-2).
"""

from __future__ import annotations

import os

import numpy as np

from ..config import (
    CHECKPOINT_FILES,
    PACKAGED_NAMES,
    ModelLocation,
    model_folder,
    packaged_model_folder,
    resolve_model,
)

__all__ = ["PACKAGED_NAMES", "CHECKPOINT_FILES", "ModelLocation", "resolve_model", "model_folder",
           "packaged_model_folder", "HUB_ALIASES", "load_hf", "position_table"]

#: Short names read as hub ids by :func:`position_table` (GPT-2 moved under its owner on the hub).
HUB_ALIASES = {"gpt2": "openai-community/gpt2"}


def load_hf(name: str | os.PathLike | None = None, *, device: str | None = "cpu"):
    """A pretrained Hugging Face encoder with its tokenizer, by name (the one way the experiments load one).

    ``"gpt2"`` is read as :data:`HUB_ALIASES` says; loading is
    :func:`posgeom.corpora.pretrained.load_pretrained` (safetensors only, no remote code), which raises
    :class:`posgeom.corpora.pretrained.ModelUnavailableError` with its advice when the model is not here.

    Parameters
    ----------
    name : str or path, optional
        Default ``get_settings().pretrained``.
    device : str, optional
        Default ``"cpu"``.

    Returns
    -------
    posgeom.corpora.pretrained.PretrainedModel
    """
    from ..corpora.pretrained import load_pretrained

    if name is not None:
        name = HUB_ALIASES.get(str(name), str(name))
    return load_pretrained(name, device=device)


def position_table(name: str | os.PathLike | None = None) -> np.ndarray:
    """The learned absolute position table of a pretrained model.

    Loaded safely through :func:`posgeom.corpora.pretrained.load_pretrained` (safetensors only, no
    remote code) on the CPU. ``"gpt2"`` is read as :data:`HUB_ALIASES` says. Raises
    :class:`posgeom.corpora.pretrained.ModelUnavailableError` with the loader's advice when the model is
    not here, and ``ValueError`` when it has no learned absolute table.

    Parameters
    ----------
    name : str or path, optional
        Default ``get_settings().pretrained``.

    Returns
    -------
    P : ndarray of shape (N_max, d), float64
        Row ``i`` is the vector added at position ``i``.
    """
    return load_hf(name, device="cpu").position_table()
