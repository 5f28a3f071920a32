"""The results registry: every experiment's numbers, arrays and manifest on disk.

Layout (one folder per result, written atomically)::

    <results_dir>/<scale>/<experiment>/<key>/
        result.json     # the scalar results (JSON-serialisable dict)
        arrays.npz      # named numpy arrays (optional)
        manifest.json   # versions, git commit, seed, device, scale, model, runtime, params

``key`` is a short hash of the experiment's parameters, so the same experiment with other
options is a different entry and nothing stale is ever read back for new options.

Writes go to a temporary sibling folder first and are renamed into place in one step: a reader
sees either the whole previous result or the whole new one, never half of a write.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from .codekey import code_key, code_roots
from .config import get_settings, validate_scale

_VERSION_PACKAGES = (
    "numpy", "scipy", "scikit-learn", "torch", "transformers", "tokenizers", "datasets", "matplotlib",
)


def _canonical(obj: Any) -> Any:
    """Turn params into something ``json.dumps(sort_keys=True)`` writes the same way every time."""
    if isinstance(obj, Mapping):
        return {str(k): _canonical(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_canonical(v) for v in obj]
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
    text = json.dumps(_canonical(params), sort_keys=True, separators=(",", ":"))
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
    if not stored or not roots:
        return True
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


@dataclass
class Result:
    """One registry entry, as read back."""

    experiment: str
    scale: str
    key: str
    values: dict[str, Any]
    arrays: dict[str, np.ndarray]
    manifest: dict[str, Any]
    path: Path = field(repr=False, default=Path())

    def provenance(self) -> str:
        """One line saying what produced the result, for captions and tables."""
        m = self.manifest
        model = m.get("model") or "no pretrained model"
        return (
            f"scale={m.get('scale')}, model={model}, device={m.get('device')}, seed={m.get('seed')}, "
            f"runtime={m.get('runtime_s', float('nan')):.1f} s, posgeom {m.get('versions', {}).get('posgeom', '?')}"
        )


class Registry:
    """Save and load experiment results under ``root`` (default: the configured results folder)."""

    def __init__(self, root: str | os.PathLike | None = None):
        self.root = Path(root) if root is not None else get_settings().results_dir

    def _folder(self, experiment: str, scale: str, key: str) -> Path:
        if not experiment or any(c in experiment for c in "/\\") or experiment.startswith("."):
            raise ValueError(f"experiment name {experiment!r} must be a non-empty name without slashes")
        return self.root / validate_scale(scale) / experiment / key

    def save(
        self,
        experiment: str,
        values: Mapping[str, Any],
        *,
        params: Mapping[str, Any],
        scale: str,
        seed: int | None,
        device: str,
        model: str | None = None,
        runtime_s: float | None = None,
        arrays: Mapping[str, np.ndarray] | None = None,
        code: str | Sequence[str] | None = None,
    ) -> Result:
        """Write one result atomically and return it as read back.

        ``values`` must be JSON-serialisable; ``arrays`` are stored in one ``.npz``. ``code``: the
        posgeom module(s) that made the result (their :func:`~posgeom.codekey.code_key` is recorded, so
        :func:`code_changed` can tell later whether that code changed); None stands for the whole package.
        """
        key = params_key(params)
        folder = self._folder(experiment, scale, key)
        roots = code_roots(code) if code is None or isinstance(code, str) else tuple(code)
        manifest = {
            "experiment": experiment,
            "key": key,
            "params": _canonical(params),
            "scale": scale,
            "seed": seed,
            "device": device,
            "model": model,
            "runtime_s": runtime_s,
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "git_commit": git_commit(),
            "code_modules": list(roots),
            "code_key": code_key(roots),
            "versions": package_versions(),
            "argv": sys.argv[:1],
        }
        values = _canonical(values)
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=folder.parent))
        try:
            (tmp / "result.json").write_text(json.dumps(values, indent=1, sort_keys=True))
            if arrays:
                np.savez(tmp / "arrays.npz", **{k: np.asarray(v) for k, v in arrays.items()})
            (tmp / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
            if folder.exists():
                # Swap the old folder out first, so the new one appears in a single rename.
                trash = Path(tempfile.mkdtemp(prefix=f".{key}-old-", dir=folder.parent))
                os.replace(folder, trash / "old")
                os.replace(tmp, folder)
                shutil.rmtree(trash, ignore_errors=True)
            else:
                os.replace(tmp, folder)
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return self.load(experiment, params=params, scale=scale)

    def has(self, experiment: str, *, params: Mapping[str, Any], scale: str) -> bool:
        folder = self._folder(experiment, scale, params_key(params))
        return (folder / "manifest.json").is_file() and (folder / "result.json").is_file()

    def load(self, experiment: str, *, params: Mapping[str, Any], scale: str) -> Result:
        """Read one result back; a missing entry raises :class:`KeyError` saying how to produce it."""
        key = params_key(params)
        folder = self._folder(experiment, scale, key)
        if not self.has(experiment, params=params, scale=scale):
            raise KeyError(
                f"no result for experiment {experiment!r} at scale {scale!r} with these parameters "
                f"(key {key}) under {self.root}; run the experiment first"
            )
        return self._read(folder)

    def _read(self, folder: Path) -> Result:
        manifest = json.loads((folder / "manifest.json").read_text())
        values = json.loads((folder / "result.json").read_text())
        arrays: dict[str, np.ndarray] = {}
        if (folder / "arrays.npz").is_file():
            with np.load(folder / "arrays.npz", allow_pickle=False) as data:
                arrays = {k: data[k] for k in data.files}
        return Result(
            manifest["experiment"], manifest["scale"], manifest["key"], values, arrays, manifest, folder
        )

    def entries(self, experiment: str | None = None, scale: str | None = None) -> list[Result]:
        """Every complete result, optionally filtered by experiment and scale."""
        if not self.root.is_dir():
            return []
        out = []
        for manifest in sorted(self.root.glob("*/*/*/manifest.json")):
            folder = manifest.parent
            if folder.name.startswith("."):
                continue
            exp, sc = folder.parent.name, folder.parent.parent.name
            if (experiment is None or exp == experiment) and (scale is None or sc == scale):
                if (folder / "result.json").is_file():
                    out.append(self._read(folder))
        return out

    def run(
        self,
        experiment: str,
        compute,
        *,
        params: Mapping[str, Any],
        scale: str,
        seed: int | None,
        device: str,
        model: str | None = None,
        force: bool = False,
        same_code: bool = True,
    ) -> Result:
        """Return the stored result, or call ``compute()`` → ``(values, arrays)`` and store it.

        A stored result is reused when its parameters match, it was made with the same ``seed`` (so an
        experiment whose randomness comes from the seed need not list it in ``params``) and (with
        ``same_code=True``) by the same code: the code key of the module that defines ``compute`` (the
        experiment's module) and of every posgeom module it imports (:mod:`posgeom.codekey`), so an edit
        elsewhere leaves the result fresh. ``force=True`` always recomputes. A recomputed result
        replaces the stored one.
        """
        if not force and self.has(experiment, params=params, scale=scale):
            stored = self.load(experiment, params=params, scale=scale)
            same_seed = stored.manifest.get("seed") == seed
            if same_seed and (not same_code or not code_changed(stored.manifest)):
                return stored
        start = time.perf_counter()
        out = compute()
        values, arrays = out if isinstance(out, tuple) else (out, None)
        return self.save(
            experiment, values, params=params, scale=scale, seed=seed, device=device, model=model,
            runtime_s=time.perf_counter() - start, arrays=arrays, code=getattr(compute, "__module__", None),
        )


__all__ = ["Registry", "Result", "params_key", "package_versions", "git_commit", "code_changed"]
