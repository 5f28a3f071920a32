"""Single tensors read from safetensors checkpoints (sharded or not), without loading the model.

Only the shard holding a tensor is opened (and, for a hub id, downloaded), so a table of a 7B model costs
megabytes. Pickled weights are never opened: a checkpoint that has only those is refused.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

__all__ = ["INDEX_FILE", "SINGLE_FILE", "PICKLE_PATTERNS", "TensorReader"]

INDEX_FILE = "model.safetensors.index.json"
SINGLE_FILE = "model.safetensors"
PICKLE_PATTERNS = ("*.bin", "*.pt", "*.pth", "*.ckpt", "*.pkl")


def _refuse_pickles(folder: Path, name: str) -> ValueError:
    pickles = sorted(p.name for pattern in PICKLE_PATTERNS for p in folder.glob(pattern))
    if pickles:
        return ValueError(
            f"model {name!r} has only pickled weights ({', '.join(pickles[:3])}); posgeom never unpickles a "
            "checkpoint: convert it with model.save_pretrained(folder, safe_serialization=True) and diagnose that folder"
        )
    return ValueError(
        f"model {name!r} has no safetensors weights ({SINGLE_FILE} or {INDEX_FILE}); this mechanism needs them "
        "(rotary and ALiBi models need only config.json)"
    )


class TensorReader:
    """Read named tensors from a checkpoint's safetensors files in ``folder``; ``name`` is the model's, for messages;
    with ``hub_id``, missing files are downloaded when first needed."""

    def __init__(self, folder: Path, name: str, hub_id: str | None = None):
        self.folder, self.name, self.hub_id = Path(folder), name, hub_id
        self._map: dict[str, str] | None = None

    def _file(self, fname: str) -> Path | None:
        path = self.folder / fname
        if path.is_file():
            return path
        if self.hub_id is None:
            return None
        from huggingface_hub import hf_hub_download
        try:
            return Path(hf_hub_download(self.hub_id, fname))
        except Exception:  # not in the repository, or offline and not cached
            return None

    def weight_map(self) -> dict[str, str]:
        """Tensor name → file name (relative to the folder)."""
        if self._map is None:
            index = self._file(INDEX_FILE)
            if index is not None:
                self._map = dict(json.loads(index.read_text())["weight_map"])
            else:
                single = self._file(SINGLE_FILE)
                if single is None:
                    raise _refuse_pickles(self.folder, self.name)
                from safetensors import safe_open

                with safe_open(str(single), framework="pt") as f:
                    self._map = {k: SINGLE_FILE for k in f.keys()}
                self.folder = single.parent
        return self._map

    def find(self, suffix: str, *, required: bool = True) -> str | None:
        """The full name of the tensor called ``suffix`` (exactly, or after a prefix such as ``"bert."``)."""
        names = [k for k in self.weight_map() if k == suffix or k.endswith("." + suffix)]
        if len(names) > 1 and suffix not in names:
            found = ", ".join(sorted(names)[:4])
            raise ValueError(f"model {self.name!r} has several tensors named {suffix!r} ({found}); "
                             "save the model alone with save_pretrained")
        if not names and required:
            raise ValueError(f"model {self.name!r} has no tensor {suffix!r}; is the config's model_type right?")
        return suffix if suffix in names else next(iter(names), None)

    def get(self, suffix: str, *, required: bool = True) -> np.ndarray | None:
        """One tensor as float64 numpy, read alone from its file (bf16 and fp16 are upcast)."""
        from safetensors import safe_open
        key = self.find(suffix, required=required)
        if key is None:
            return None
        fname = self.weight_map()[key]
        path = self._file(fname)
        if path is None:
            raise ValueError(f"model {self.name!r}: the shard {fname} holding {key} is not available")
        with safe_open(str(path), framework="pt") as f:
            return f.get_tensor(key).double().numpy()
