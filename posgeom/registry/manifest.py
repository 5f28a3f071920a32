"""What a registry entry records about how it was made: the key of its parameters, the package
versions, the git commit, and whether the code that made it has changed since."""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ..codekey import code_key

__all__ = ["canonical", "params_key", "package_versions", "code_changed", "git_commit"]

_VERSION_PACKAGES = (
    "numpy", "scipy", "scikit-learn", "torch", "transformers", "tokenizers", "datasets", "matplotlib",
)


def canonical(obj: Any) -> Any:
    """Turn params into something ``json.dumps(sort_keys=True)`` writes the same way every time."""
    if isinstance(obj, Mapping):
        return {str(k): canonical(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [canonical(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, (str, int, float, bool)) or obj is None:
        return obj
    raise TypeError(
        f"parameter value {obj!r} of type {type(obj).__name__} cannot be recorded; "
        "use strings, numbers, booleans, None, lists or dicts of those"
    )


def params_key(params: Mapping[str, Any]) -> str:
    """A 16-hex-digit hash of the parameters (order of keys does not matter)."""
    text = json.dumps(canonical(params), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def package_versions() -> dict[str, str]:
    """Versions of Python, posgeom and the scientific stack (``"absent"`` when not installed)."""
    from importlib import metadata

    versions = {"python": platform.python_version(), "platform": platform.platform()}
    for name in ("posgeom", *_VERSION_PACKAGES):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "absent"
    return versions


def code_changed(manifest: Mapping[str, Any]) -> bool:
    """Whether the code an entry was made by has changed since (or was never recorded).

    Compares the entry's ``code_key`` with :func:`posgeom.codekey.code_key` of its ``code_modules``
    now: only the source of those modules and of what they import counts.
    """
    stored, roots = manifest.get("code_key"), manifest.get("code_modules")
    if not stored or roots is None:
        return True
    if not roots:  # saved with code=(): a record that depends on no code (how a chapter run went)
        return False
    try:
        return code_key(roots) != stored
    except ValueError:  # a module that no longer exists
        return True


def git_commit(path: Path | None = None) -> str | None:
    """The commit of the checkout holding ``path`` (with ``+dirty`` if it has changes), or None."""
    cwd = Path(path or Path(__file__).parent)
    try:
        head = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=10
        )
        if head.returncode != 0:
            return None
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=cwd, capture_output=True, text=True, timeout=10,
        )
        return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None
