"""The results registry: every experiment's numbers, arrays and manifest on disk, verified on read.

Layout (one folder per result)::

    <results_dir>/<scale>/<experiment>/<key>/
        CURRENT                 # pointer: {"version": "v-<sha>", "manifest_sha256": ...}
        v-<sha>/                # one complete version, named after its manifest's sha256
            result.json         # the scalar results (JSON-serialisable dict)
            arrays.npz          # named numpy arrays (optional)
            manifest.json       # versions, git commit, seed, device, scale, model, runtime, params,
                                # and the sha256 of every other file of the version
        .lock                   # the per-entry writer lock (filelock)

``key`` is a short hash of the experiment's parameters, so the same experiment with other
options is a different entry and nothing stale is ever read back for new options.

Writing (:meth:`Registry.save`, under the entry's lock): the files go to a temporary folder, are
fsynced, the folder is renamed to ``v-<sha>`` and the pointer file is replaced in one ``os.replace``.
A reader therefore sees the whole previous result or the whole new one, never half of a write, and a
writer killed at any step leaves the previous result visible. Versions the pointer no longer names
and leftovers of killed writers are swept only after a complete entry is visible.

Reading verifies every file against the manifest's sha256 (and the manifest against the pointer); an
entry that does not match is treated as absent: :meth:`Registry.run` recomputes it with a warning and
:meth:`Registry.check` (``posgeom results check``) reports it.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from .codekey import code_key, code_roots
from .config import get_settings, validate_scale
from .storage import TMP_SUFFIX, fault_point, fsync_dir, sha256_bytes, write_durably

#: Layout version written into every manifest and pointer.
FORMAT = 2
POINTER = "CURRENT"
MANIFEST = "manifest.json"
LOCK = ".lock"
#: The files a version folder may hold besides its manifest.
ENTRY_FILES = ("result.json", "arrays.npz")
#: Files of the layout before checksummed entries (stored directly in the entry folder).
LEGACY_FILES = ("result.json", "arrays.npz", "manifest.json")
#: How long a writer waits for another writer of the same entry.
LOCK_TIMEOUT_S = 600.0
#: Reads retried when a writer replaces the entry meanwhile.
READ_ATTEMPTS = 20

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


@dataclass
class Result:
    """One registry entry, as read back (and verified against its manifest's checksums)."""

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
        runtime = m.get("runtime_s")
        runtime_text = f"{runtime:.1f} s" if isinstance(runtime, (int, float)) else "not recorded"
        return (
            f"scale={m.get('scale')}, model={model}, device={m.get('device')}, seed={m.get('seed')}, "
            f"runtime={runtime_text}, posgeom {m.get('versions', {}).get('posgeom', '?')}"
        )


class NotStoredError(KeyError):
    """Raised by :meth:`Registry.run` inside :func:`stored_only` when the entry is not stored."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


#: True inside :func:`stored_only`: :meth:`Registry.run` reads and never computes.
_STORED_ONLY: ContextVar[bool] = ContextVar("posgeom_stored_only", default=False)


@contextmanager
def stored_only():
    """Inside this block :meth:`Registry.run` only reads: a stored entry is returned (even one made by
    other code: check :func:`code_changed` on its manifest), a missing one raises :class:`NotStoredError`.

    This is how a chapter built at ``quick`` shows the committed ``paper`` results beside its own without
    ever starting a paper-scale computation.
    """
    token = _STORED_ONLY.set(True)
    try:
        yield
    finally:
        _STORED_ONLY.reset(token)


class DamagedEntryError(KeyError):
    """A stored entry whose files do not match its manifest (treated as absent; ``run`` recomputes it)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class EntryStatus:
    """What :meth:`Registry.check` found for one entry folder.

    ``status`` is ``"ok"``, ``"stale"`` (made by other posgeom code), ``"damaged"`` (treated as absent),
    ``"incomplete"`` (only an interrupted write, no entry) or ``"legacy"`` (stored by a posgeom older than
    checksummed entries: no way to verify it, so treated as absent).
    """

    scale: str
    experiment: str
    key: str
    status: str
    detail: str
    path: Path


class Registry:
    """Save and load experiment results under ``root`` (default: the configured results folder)."""

    def __init__(self, root: str | os.PathLike | None = None):
        self.root = Path(root) if root is not None else get_settings().results_dir

    def _folder(self, experiment: str, scale: str, key: str) -> Path:
        if not experiment or any(c in experiment for c in "/\\") or experiment.startswith("."):
            raise ValueError(f"experiment name {experiment!r} must be a non-empty name without slashes")
        return self.root / validate_scale(scale) / experiment / key

    # ------------------------------------------------------------------------------------- writing

    def _lock(self, folder: Path):
        from filelock import FileLock, Timeout

        folder.mkdir(parents=True, exist_ok=True)
        lock = FileLock(str(folder / LOCK), timeout=LOCK_TIMEOUT_S)
        try:
            lock.acquire()
        except Timeout:
            raise RuntimeError(
                f"another process has held the lock of the registry entry {folder} for {LOCK_TIMEOUT_S:.0f} s; "
                f"if no posgeom process is running, delete {folder / LOCK} and try again"
            ) from None
        return lock

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
        """Write one result atomically and durably, and return it as read back.

        ``values`` must be JSON-serialisable; ``arrays`` are stored in one ``.npz``. The files go to a
        temporary folder, are fsynced and renamed to a version folder named after the manifest's
        sha256, and become visible when the pointer file is replaced (one ``os.replace``); a per-entry
        lock serialises writers. The previous version is deleted only after the new one is visible.
        ``code``: the posgeom module(s) that made the result (their :func:`~posgeom.codekey.code_key` is
        recorded, so :func:`code_changed` can tell later whether that code changed); None stands for the
        whole package.
        """
        key = params_key(params)
        folder = self._folder(experiment, scale, key)
        roots = code_roots(code) if code is None or isinstance(code, str) else tuple(code)
        manifest = {
            "format": FORMAT,
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
        # everything that can fail on the caller's input fails before anything is written
        payload = {"result.json": json.dumps(_canonical(values), indent=1, sort_keys=True).encode()}
        if arrays:
            buffer = io.BytesIO()
            # compressed: committed paper-scale results stay small (distance matrices halve or better)
            np.savez_compressed(buffer, **{k: np.asarray(v) for k, v in arrays.items()})
            payload["arrays.npz"] = buffer.getvalue()
        manifest["files"] = {name: sha256_bytes(data) for name, data in payload.items()}
        manifest_bytes = json.dumps(manifest, indent=1, sort_keys=True).encode()
        digest = sha256_bytes(manifest_bytes)
        version = f"v-{digest[:16]}"
        lock = self._lock(folder)
        try:
            self._sweep(folder, keep=self._pointer_version(folder))  # leftovers of killed writers
            tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=folder))
            try:
                fault_point("registry-save:tmp-created")
                for name, data in {**payload, MANIFEST: manifest_bytes}.items():
                    with open(tmp / name, "wb") as fh:
                        fh.write(data)
                        fh.flush()
                        os.fsync(fh.fileno())
                fsync_dir(tmp)
                fault_point("registry-save:files-written")
                target = folder / version
                if target.exists():  # same content written before: keep it if whole, else replace it
                    try:
                        self._read_version(target, digest)
                        shutil.rmtree(tmp)
                    except Exception:  # noqa: BLE001 - damaged in any way: the new copy replaces it
                        shutil.rmtree(target)
                if tmp.exists():
                    os.replace(tmp, target)
                fsync_dir(folder)
                fault_point("registry-save:version-renamed")
                pointer = {"format": FORMAT, "version": version, "manifest_sha256": digest}
                write_durably(folder / POINTER, json.dumps(pointer).encode(), fault="registry-pointer")
                fault_point("registry-save:pointer-replaced")
                self._sweep(folder, keep=version)
            finally:
                if tmp.exists():
                    shutil.rmtree(tmp, ignore_errors=True)
        finally:
            lock.release()
        return self.load(experiment, params=params, scale=scale)

    @staticmethod
    def _sweep(folder: Path, keep: str | None) -> list[str]:
        """Remove what a complete, visible version ``keep`` has replaced: interrupted writes, older versions and
        files of the pre-checksum layout; with ``keep=None`` only interrupted writes. Call under the entry's lock."""
        removed = []
        for child in folder.iterdir() if folder.is_dir() else ():
            old_version = keep is not None and child.name.startswith("v-") and child.name != keep
            legacy = keep is not None and child.name in LEGACY_FILES
            interrupted = child.name.startswith(".tmp-") or (
                child.name.startswith(f".{POINTER}.") and child.name.endswith(TMP_SUFFIX)
            )
            if interrupted or old_version or legacy:
                if child.is_dir():
                    shutil.rmtree(child, ignore_errors=True)
                else:
                    child.unlink(missing_ok=True)
                removed.append(child.name)
        return removed

    # ------------------------------------------------------------------------------------- reading

    @staticmethod
    def _read_pointer(folder: Path) -> tuple[bytes, dict] | None:
        """The pointer file's bytes and content; None when there is none; ``ValueError`` when unreadable."""
        try:
            raw = (folder / POINTER).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None
        try:
            pointer = json.loads(raw)
            version, digest = pointer["version"], pointer["manifest_sha256"]
            if not (isinstance(version, str) and version == f"v-{str(digest)[:16]}"):
                raise ValueError("the version does not match the manifest checksum")
        except Exception as err:  # noqa: BLE001 - any damage means "no valid entry"
            raise ValueError(f"pointer file {POINTER} is unreadable ({type(err).__name__}: {err})") from None
        return raw, pointer

    def _pointer_version(self, folder: Path) -> str | None:
        try:
            found = self._read_pointer(folder)
        except ValueError:
            return None
        return found[1]["version"] if found else None

    @staticmethod
    def _read_version(version_dir: Path, digest: str) -> Result:
        """Read and verify one version folder: the manifest's sha256 is ``digest``, every file it lists
        has the sha256 it records. Any failure raises (of whatever type)."""
        manifest_bytes = (version_dir / MANIFEST).read_bytes()
        if sha256_bytes(manifest_bytes) != digest:
            raise ValueError(f"{MANIFEST} does not have the checksum the pointer records")
        manifest = json.loads(manifest_bytes)
        files = manifest["files"]
        if "result.json" not in files:
            raise ValueError("the manifest lists no result.json")
        contents = {}
        for name, expected in files.items():
            if name not in ENTRY_FILES:
                raise ValueError(f"the manifest lists an unknown file {name!r}")
            data = (version_dir / name).read_bytes()
            if sha256_bytes(data) != expected:
                raise ValueError(f"{name} does not match the sha256 in the manifest")
            contents[name] = data
        values = json.loads(contents["result.json"])
        arrays: dict[str, np.ndarray] = {}
        if "arrays.npz" in contents:
            with np.load(io.BytesIO(contents["arrays.npz"]), allow_pickle=False) as data:
                arrays = {k: data[k] for k in data.files}
        return Result(
            manifest["experiment"], manifest["scale"], manifest["key"], values, arrays, manifest, version_dir
        )

    def _read(self, folder: Path) -> Result:
        """The verified entry in ``folder``; :class:`KeyError` when absent, :class:`DamagedEntryError` when
        its files do not match its manifest (or cannot be read for any reason)."""
        last_error = None
        for _ in range(READ_ATTEMPTS):
            try:
                found = self._read_pointer(folder)
            except ValueError as err:
                raise DamagedEntryError(f"the registry entry {folder} is damaged: {err}") from None
            if found is None:
                if any((folder / name).is_file() for name in LEGACY_FILES):
                    raise DamagedEntryError(
                        f"the registry entry {folder} was stored by an older posgeom without checksums and cannot "
                        "be verified; run the experiment again to replace it"
                    )
                raise KeyError(folder)
            raw, pointer = found
            try:
                result = self._read_version(folder / pointer["version"], pointer["manifest_sha256"])
            except Exception as err:  # noqa: BLE001 - any failure to read means "not a valid entry"
                last_error = err
                try:
                    again = (folder / POINTER).read_bytes()
                except OSError:
                    again = None
                if again != raw:  # a writer replaced the entry while we read it: read the new one
                    continue
                break
            if (result.key, result.scale, result.experiment) != (folder.name, folder.parent.parent.name,
                                                                 folder.parent.name):
                raise DamagedEntryError(f"the registry entry {folder} holds the manifest of another entry")
            return result
        raise DamagedEntryError(
            f"the registry entry {folder} is damaged ({type(last_error).__name__}: {last_error})"
        )

    def has(self, experiment: str, *, params: Mapping[str, Any], scale: str) -> bool:
        """True when a complete entry whose files match its manifest's checksums is stored."""
        try:
            self._read(self._folder(experiment, scale, params_key(params)))
        except KeyError:
            return False
        return True

    def load(self, experiment: str, *, params: Mapping[str, Any], scale: str) -> Result:
        """Read one result back, verified; a missing or damaged entry raises :class:`KeyError` saying how to
        produce it."""
        key = params_key(params)
        folder = self._folder(experiment, scale, key)
        try:
            return self._read(folder)
        except DamagedEntryError as err:
            raise DamagedEntryError(f"{err}; run the experiment again to replace it") from None
        except KeyError:
            raise KeyError(
                f"no result for experiment {experiment!r} at scale {scale!r} with these parameters "
                f"(key {key}) under {self.root}; run the experiment first"
            ) from None

    def _entry_folders(self, experiment: str | None = None, scale: str | None = None) -> list[Path]:
        if not self.root.is_dir():
            return []
        out = []
        for folder in sorted(self.root.glob("*/*/*")):
            if not folder.is_dir() or any(part.startswith(".") for part in folder.relative_to(self.root).parts):
                continue
            sc, exp = folder.parent.parent.name, folder.parent.name
            if (experiment is None or exp == experiment) and (scale is None or sc == scale):
                out.append(folder)
        return out

    def entries(self, experiment: str | None = None, scale: str | None = None) -> list[Result]:
        """Every complete, verified result, optionally filtered by experiment and scale (damaged ones are
        left out with a warning; :meth:`check` lists them)."""
        out = []
        for folder in self._entry_folders(experiment, scale):
            try:
                out.append(self._read(folder))
            except DamagedEntryError as err:
                warnings.warn(f"{err}; it is left out (posgeom results check lists such entries)", stacklevel=2)
            except KeyError:
                continue
        return out

    def check(self, *, sweep: bool = True, scale: str | None = None) -> list[EntryStatus]:
        """Verify every entry folder; with ``sweep=True`` remove the leftovers of interrupted writes and the
        versions a complete entry has replaced (under each entry's lock).

        Returns
        -------
        list of EntryStatus
            One per entry folder, in path order. Leftovers of an older posgeom (hidden ``.KEY-*`` folders next
            to entries) are reported as ``"orphan"`` and never deleted: they may hold the only copy of a result.
        """
        report = []
        for folder in self._entry_folders(scale=scale):
            sc, exp, key = folder.parent.parent.name, folder.parent.name, folder.name
            swept: list[str] = []
            if sweep:
                lock = self._lock(folder)
                try:
                    swept = self._sweep(folder, keep=self._pointer_version(folder) if self._verifies(folder) else None)
                finally:
                    lock.release()
            note = f"; removed {', '.join(sorted(swept))}" if swept else ""
            try:
                result = self._read(folder)
            except DamagedEntryError as err:
                status = "legacy" if "older posgeom" in str(err) else "damaged"
                report.append(EntryStatus(sc, exp, key, status, str(err) + note, folder))
                continue
            except KeyError:
                leftovers = [c.name for c in folder.iterdir() if c.name != LOCK]
                detail = "no entry: only an interrupted write" if leftovers or swept else "no entry"
                report.append(EntryStatus(sc, exp, key, "incomplete", detail + note, folder))
                continue
            if code_changed(result.manifest):
                report.append(EntryStatus(
                    sc, exp, key, "stale",
                    f"made by other code (code key {result.manifest.get('code_key')} of "
                    f"{', '.join(result.manifest.get('code_modules') or ['?'])[:120]} no longer matches); "
                    "run reuses it only with same_code=False" + note, folder,
                ))
            else:
                report.append(EntryStatus(sc, exp, key, "ok", "verified" + note, folder))
        for hidden in sorted(self.root.glob("*/*/.*")) if self.root.is_dir() else ():
            if hidden.is_dir() and not hidden.parent.name.startswith("."):
                report.append(EntryStatus(
                    hidden.parent.parent.name, hidden.parent.name, hidden.name, "orphan",
                    "left by an interrupted write of an older posgeom; inspect it and delete it by hand", hidden,
                ))
        return report

    def _verifies(self, folder: Path) -> bool:
        try:
            self._read(folder)
        except KeyError:
            return False
        return True

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

        A stored result is reused when its parameters match, its files match its manifest's checksums, it
        was made with the same ``seed`` (so an experiment whose randomness comes from the seed need not list
        it in ``params``) and (with ``same_code=True``) by the same code: the code key of the module that defines ``compute`` (the experiment's
        module) and of every posgeom module it imports (:mod:`posgeom.codekey`), so an edit elsewhere leaves the
        result fresh. ``force=True`` always recomputes. A damaged entry is recomputed (with a warning). A recomputed
        result replaces the stored one.
        """
        if not force or _STORED_ONLY.get():
            try:
                stored = self.load(experiment, params=params, scale=scale)
            except DamagedEntryError as err:
                warnings.warn(f"{err}; recomputing it", stacklevel=2)
                stored = None
            except KeyError:
                stored = None
            if stored is not None:
                same_seed = stored.manifest.get("seed") == seed
                if same_seed and (not same_code or not code_changed(stored.manifest) or _STORED_ONLY.get()):
                    return stored
        if _STORED_ONLY.get():
            raise NotStoredError(
                f"{experiment} (scale {scale}, seed {seed}) is not stored under {self.root}; "
                "run it outside stored_only() to compute it"
            )
        start = time.perf_counter()
        out = compute()
        values, arrays = out if isinstance(out, tuple) else (out, None)
        return self.save(
            experiment, values, params=params, scale=scale, seed=seed, device=device, model=model,
            runtime_s=time.perf_counter() - start, arrays=arrays, code=getattr(compute, "__module__", None),
        )


def stored_at_scale(run, settings, *, scale: str = "paper", **kwargs) -> Result | None:
    """What ``run(settings at scale, **kwargs)`` has stored, or None; never computes.

    ``run`` is an experiment's ``run_*`` function. A chapter built at ``quick`` calls this to show the
    committed ``paper`` results beside its own (check ``code_changed(result.manifest)`` to mark a stale one).
    """
    with stored_only():
        try:
            return run(settings.with_(scale=validate_scale(scale)), **kwargs)
        except NotStoredError:
            return None


def stored_text(run, settings, pick, *, scale: str = "paper", **kwargs) -> str:
    """``pick(result)`` for what ``run`` has stored at ``scale`` (:func:`stored_at_scale`), for a chapter's
    paper-scale column: ``"not yet run at paper scale"`` when nothing is stored, and the text marked
    ``"(stale: made by other code)"`` when :func:`code_changed` says the code has changed since."""
    result = stored_at_scale(run, settings, scale=scale, **kwargs)
    if result is None:
        return f"not yet run at {scale} scale"
    return str(pick(result)) + (" (stale: made by other code)" if code_changed(result.manifest) else "")


__all__ = [
    "Registry", "Result", "EntryStatus", "DamagedEntryError", "NotStoredError", "stored_only", "stored_at_scale",
    "stored_text", "params_key", "package_versions", "git_commit",
    "code_changed",
]
