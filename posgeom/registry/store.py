"""The :class:`Registry`: save (atomically, durably) and load (verified) one folder per result."""

from __future__ import annotations

import io
import json
import os
import shutil
import time
import warnings
from dataclasses import dataclass, field, is_dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

from ..codekey import code_key, code_roots
from ..config import get_settings, validate_scale
from ..storage import (TMP_SUFFIX, FolderLock, LockTimeout, SymlinkError, fault_point, fsync_dir, is_symlink,
                       make_temp_folder, read_nofollow, read_npz, remove_tree, sha256_bytes, symlinks_below,
                       write_durably)
from .layout import LOCK, POINTER, DamagedEntryError, EntryStatus
from .manifest import canonical, code_changed, command_line, git_commit, package_versions, params_key, require_committed
from .pending import NeedsGPU, Pending, gpu_work_minutes
from .stored import NotStoredError, reading_stored_only
from .typed import as_record, as_settings, convert, has_path, named_record_type, record_name, to_stored

__all__ = ["Registry", "Result", "EntryStatus", "DamagedEntryError"]

#: Layout version written into every manifest and pointer.
FORMAT = 2
MANIFEST = "manifest.json"
#: Manifest fields that name an entry or its content: ``Registry.restamp`` leaves them as they are.
_IDENTITY = frozenset({"format", "experiment", "key", "params", "scale", "files"})
#: The files a version folder may hold besides its manifest.
ENTRY_FILES = ("result.json", "arrays.npz")
#: Files of the layout before checksummed entries (stored directly in the entry folder).
LEGACY_FILES = (*ENTRY_FILES, MANIFEST)
#: How long a writer waits for another writer of the same entry.
LOCK_TIMEOUT_S = 600.0
#: Reads retried when a writer replaces the entry meanwhile.
READ_ATTEMPTS = 20


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

    @property
    def record(self) -> Any:
        """The record the experiment stored (the type its manifest names), read back typed; a ``ValueError`` for a
        result stored before experiments returned records (no ``record`` in its manifest): read it with :meth:`as_`."""
        name = self.manifest.get("record")
        if not name:
            raise ValueError(f"{self.experiment} ({self.scale}/{self.key}) was stored as values, not as a record; "
                             "read it with Result.as_(<a record type>)")
        return as_record(self, named_record_type(name))

    def as_(self, record_type: type, **options: Any) -> Any:
        """This result read into ``record_type`` (:func:`posgeom.registry.typed.as_record`, with its ``options``)."""
        return as_record(self, record_type, **options)

    @property
    def model(self) -> str | None:
        """The model the manifest records (the ``model`` given to :meth:`Registry.save`); None when it records none."""
        return convert(self.manifest.get("model"), str | None, f"{self._name()}: the manifest's model")

    @property
    def runtime_s(self) -> float | None:
        """The seconds the computation took, as the manifest records them; None when they were not recorded."""
        return convert(self.manifest.get("runtime_s"), float | None, f"{self._name()}: the manifest's runtime_s")

    def has_params(self, at: str) -> bool:
        """Whether the stored parameters hold something at the dotted path ``at`` (``"design.paired"``)."""
        return has_path(self._params(), at)

    def params_as(self, settings_type: type, at: str | None = None) -> Any:
        """The stored parameters, or their block at the dotted path ``at`` (``"design"``, ``"order.finetune"``), read
        into ``settings_type``, the settings dataclass the experiment stored it from
        (:func:`~posgeom.registry.typed.as_settings`: every field must be stored; undeclared keys are left unread).

        A ``KeyError`` names the experiment, the path and the keys stored there when nothing is stored at ``at`` or a
        field is missing; a ``ValueError`` when a value is not of its field's type.

        >>> result.params_as(PairedDesign, "design").max_seeds  # doctest: +SKIP
        100
        """
        return as_settings(self._params(), settings_type, at, where=f"{self._name()} params")

    def _name(self) -> str:
        """How an error names the entry: ``"<experiment> (<scale>/<key>)"``."""
        return f"{self.experiment} ({self.scale}/{self.key})"

    def _params(self) -> Mapping[str, Any]:
        """The parameters the manifest stores; a ``KeyError`` when it stores none."""
        params = self.manifest.get("params")
        if not isinstance(params, Mapping):
            raise KeyError(f"{self._name()}: the manifest stores no parameters (its keys: "
                           f"{', '.join(sorted(map(str, self.manifest)))})")
        return params

    def provenance(self) -> str:
        """One line saying what produced the result, for captions and tables."""
        m = self.manifest
        model = m.get("model") or "no pretrained model"
        runtime = m.get("runtime_s")
        runtime_text = f"{runtime:.1f} s" if isinstance(runtime, (int, float)) else "not recorded"
        return (f"scale={m.get('scale')}, model={model}, device={m.get('device')}, seed={m.get('seed')}, "
                f"runtime={runtime_text}, posgeom {m.get('versions', {}).get('posgeom', '?')}")


def _manifest(experiment: str, key: str, params: Mapping[str, Any], *, scale: str, seed: int | None, device: str,
              model: str | None, runtime_s: float | None, code: str | Sequence[str] | None) -> dict[str, Any]:
    """The manifest of a new entry, without its ``files`` (see :meth:`Registry.save`)."""
    roots = code_roots(code) if code is None or isinstance(code, str) else tuple(code)
    return {
        "format": FORMAT, "experiment": experiment, "key": key, "params": canonical(params), "scale": scale,
        "seed": seed, "device": device, "model": model, "runtime_s": runtime_s,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "git_commit": git_commit(), "code_modules": list(roots),
        "code_key": code_key(roots), "versions": package_versions(),
        "command": command_line(),  # as the user typed it, without absolute paths
    }


def _payload(values: Mapping[str, Any], arrays: Mapping[str, np.ndarray] | None) -> dict[str, bytes]:
    """The files of a new entry besides its manifest: ``result.json`` and, with ``arrays``, ``arrays.npz``."""
    payload = {"result.json": json.dumps(canonical(values), indent=1, sort_keys=True).encode()}
    if arrays:
        buffer = io.BytesIO()
        # compressed: committed paper-scale results stay small (distance matrices halve or better)
        np.savez_compressed(buffer, **{k: np.asarray(v) for k, v in arrays.items()})
        payload["arrays.npz"] = buffer.getvalue()
    return payload


class Registry:
    """Save and load experiment results under ``root`` (default: the configured results folder)."""

    def __init__(self, root: str | os.PathLike | None = None):
        self.root = Path(root) if root is not None else get_settings().results_dir

    def _folder(self, experiment: str, scale: str, key: str) -> Path:
        if not experiment or any(c in experiment for c in "/\\") or experiment.startswith("."):
            raise ValueError(f"experiment name {experiment!r} must be a non-empty name without slashes")
        return self.root / validate_scale(scale) / experiment / key

    def _symlink_in(self, folder: Path) -> Path | None:
        """The first symbolic link among ``folder`` and its parents below the root, or None."""
        try:
            parts = folder.relative_to(self.root).parts
        except ValueError:
            return folder
        below_root = [self.root.joinpath(*parts[:k]) for k in range(1, len(parts) + 1)]
        return next((path for path in below_root if path.is_symlink()), None)

    def _refuse_symlink(self, folder: Path) -> None:
        link = self._symlink_in(folder)
        inside = symlinks_below(folder) if link is None else []
        if inside:  # a .lock, CURRENT, version or temporary name that is a link: nothing is written through it
            names = ", ".join(str(p.relative_to(folder)) for p in inside)
            raise ValueError(f"the registry entry {folder} holds symbolic link(s) {names}; posgeom never locks, reads "
                             "or writes through a link: delete them and save again")
        if link is not None:
            raise ValueError(f"{link} is a symbolic link; a registry entry must be a real folder inside {self.root} "
                             "(posgeom never writes or sweeps through a link): delete the link, or move the folder it "
                             "points to in its place")

    # ------------------------------------------------------------------------------------- writing

    def _lock(self, folder: Path) -> FolderLock:
        """The entry's writer lock, acquired (so never used in a ``with`` block, which would acquire it again)."""
        lock = FolderLock(folder / LOCK, timeout=LOCK_TIMEOUT_S)  # makes the folder
        try:
            lock.acquire()
        except LockTimeout:
            raise RuntimeError(f"another process has held the lock of the registry entry {folder} for "
                               f"{LOCK_TIMEOUT_S:.0f} s; if no posgeom process is running, delete {folder / LOCK} "
                               "and try again") from None
        return lock

    def save(self, experiment: str, values: Mapping[str, Any], *, params: Mapping[str, Any], scale: str,
             seed: int | None, device: str, model: str | None = None, runtime_s: float | None = None,
             arrays: Mapping[str, np.ndarray] | None = None, code: str | Sequence[str] | None = None,
             record: str | None = None) -> Result:
        """Write one result atomically and durably, and return it as read back.

        ``values`` must be JSON-serialisable; ``arrays`` go to one ``.npz``. ``code`` names the posgeom module(s)
        that made the result, whose code key is recorded (None: the whole package). ``record`` names the record
        type the values were stored from (``record_name``; :attr:`Result.record` reads it back). At
        ``scale="paper"`` an uncommitted checkout is refused (``POSGEOM_ALLOW_DIRTY=1`` allows it).
        """
        key = params_key(params)
        folder = self._folder(experiment, scale, key)
        self._refuse_symlink(folder)
        require_committed(scale)  # committed paper results record a commit that reproduces them
        manifest = _manifest(experiment, key, params, scale=scale, seed=seed, device=device, model=model,
                             runtime_s=runtime_s, code=code)
        if record is not None:
            manifest["record"] = record
        # everything that can fail on the caller's input fails before anything is written
        payload = _payload(values, arrays)
        manifest["files"] = {name: sha256_bytes(data) for name, data in payload.items()}
        lock = self._lock(folder)
        try:
            self._write_version(folder, payload, manifest)
        finally:
            lock.release()
        return self.load(experiment, params=params, scale=scale)

    def restamp(self, result: Result, **fields: Any) -> Result:
        """``result`` stored again with ``fields`` changed in its manifest and its files byte for byte as they are.

        How stored results move to a new code key without being recomputed (``scripts/rekey_results.py``). What
        names the entry or its content (``_IDENTITY``) cannot change: save the result again for that."""
        fixed = sorted(set(fields) & _IDENTITY)
        if fixed:
            raise ValueError(f"restamp changes a manifest's metadata, not {', '.join(fixed)}; save the result again")
        folder = self._folder(result.experiment, result.scale, result.key)
        self._refuse_symlink(folder)
        lock = self._lock(folder)
        try:
            current = self._read(folder)  # verified, as stored now (not as the caller read it)
            files = {name: read_nofollow(current.path / name) for name in current.manifest["files"]}
            self._write_version(folder, files, {**current.manifest, **fields})
        finally:
            lock.release()
        return self._read(folder)

    def remove(self, experiment: str, *, params: Mapping[str, Any], scale: str) -> bool:
        """Delete the stored entry under its lock; False when there is none, ``ValueError`` through a link."""
        folder = self._folder(experiment, scale, params_key(params))
        self._refuse_symlink(folder)
        if not folder.is_dir():
            return False
        lock = self._lock(folder)
        try:
            remove_tree(folder)  # the lock file with it: a waiting writer locks a new one (FolderLock)
        finally:
            lock.release()
        fsync_dir(folder.parent)
        return True

    def _write_version(self, folder: Path, payload: Mapping[str, bytes], manifest: Mapping[str, Any]) -> None:
        """Write ``payload`` with ``manifest`` as the version ``v-<manifest sha256>`` and point the entry at it
        (under the entry's lock)."""
        manifest_bytes = json.dumps(manifest, indent=1, sort_keys=True).encode()
        files, digest = {**payload, MANIFEST: manifest_bytes}, sha256_bytes(manifest_bytes)
        version = f"v-{digest[:16]}"
        self._sweep(folder, keep=self._pointer_version(folder))  # leftovers of killed writers
        tmp = make_temp_folder(folder, ".tmp-")  # the umask's permissions: a team can read a shared registry
        try:
            fault_point("registry-save:tmp-created")
            for name, data in files.items():
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
                    remove_tree(tmp)
                except Exception:  # noqa: BLE001 - damaged in any way: the new copy replaces it
                    remove_tree(target)
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

    @staticmethod
    def _leftovers(folder: Path, keep: str | None) -> list[Path]:
        """Interrupted writes and, when ``keep`` is a complete version, what it replaced."""
        children = folder.iterdir() if folder.is_dir() and not folder.is_symlink() else ()
        return sorted(child for child in children if Registry._is_interrupted(child) or (
            keep is not None and (child.name in LEGACY_FILES or (child.name.startswith("v-") and child.name != keep))))

    @classmethod
    def _sweep(cls, folder: Path, keep: str | None) -> list[str]:
        """Remove :meth:`_leftovers` (links themselves, never followed), under the entry's lock."""
        leftovers = cls._leftovers(folder, keep)
        for child in leftovers:
            if child.is_dir() and not is_symlink(child):
                shutil.rmtree(child, ignore_errors=True)  # never through a link inside (remove_tree)
            else:
                child.unlink(missing_ok=True)
        return [child.name for child in leftovers]

    # ------------------------------------------------------------------------------------- reading

    @staticmethod
    def _read_pointer(folder: Path) -> tuple[bytes, dict] | None:
        """The pointer file's bytes and content; None when there is none; ``ValueError`` when unreadable."""
        try:
            raw = read_nofollow(folder / POINTER)
        except (FileNotFoundError, NotADirectoryError):
            return None
        except SymlinkError:
            raise ValueError(f"pointer file {POINTER} is a symbolic link (never followed)") from None
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
        """Read one version folder, verified against ``digest`` and its manifest's checksums (any failure raises)."""
        if is_symlink(version_dir):
            raise SymlinkError(version_dir)
        manifest_bytes = read_nofollow(version_dir / MANIFEST)
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
            data = read_nofollow(version_dir / name)
            if sha256_bytes(data) != expected:
                raise ValueError(f"{name} does not match the sha256 in the manifest")
            contents[name] = data
        values = json.loads(contents["result.json"])
        # read_npz checks the sizes before anything is allocated
        arrays = read_npz(contents["arrays.npz"]) if "arrays.npz" in contents else {}
        return Result(manifest["experiment"], manifest["scale"], manifest["key"], values, arrays, manifest, version_dir)

    def _read(self, folder: Path) -> Result:
        """The verified entry in ``folder``; :class:`KeyError` when absent, :class:`DamagedEntryError` when damaged."""
        link = self._symlink_in(folder)
        if link is not None:
            raise DamagedEntryError(f"the registry entry {folder} is not a registry entry: {link} is a symbolic link "
                                    "(never followed); delete the link")
        last_error = None
        for _ in range(READ_ATTEMPTS):
            try:
                found = self._read_pointer(folder)
            except ValueError as err:
                raise DamagedEntryError(f"the registry entry {folder} is damaged: {err}") from None
            if found is None:
                if any((folder / name).is_file() for name in LEGACY_FILES):
                    raise DamagedEntryError(f"the registry entry {folder} was stored by an older posgeom without "
                                            "checksums and cannot be verified; run the experiment again to replace it")
                raise KeyError(folder)
            raw, pointer = found
            if (folder / pointer["version"]).is_symlink():
                raise DamagedEntryError(f"the registry entry {folder} is damaged: its version {pointer['version']} is "
                                        "a symbolic link (never followed)")
            try:
                result = self._read_version(folder / pointer["version"], pointer["manifest_sha256"])
            except Exception as err:  # noqa: BLE001 - any failure to read means "not a valid entry"
                last_error = err
                try:
                    again = read_nofollow(folder / POINTER)
                except OSError:
                    again = None
                if again != raw:  # a writer replaced the entry while we read it: read the new one
                    continue
                break
            if (result.key, result.scale, result.experiment) != (folder.name, folder.parent.parent.name,
                                                                 folder.parent.name):
                raise DamagedEntryError(f"the registry entry {folder} holds the manifest of another entry")
            return result
        raise DamagedEntryError(f"the registry entry {folder} is damaged ({type(last_error).__name__}: {last_error})")

    def has(self, experiment: str, *, params: Mapping[str, Any], scale: str) -> bool:
        """True when a complete entry whose files match its manifest's checksums is stored."""
        return self._verifies(self._folder(experiment, scale, params_key(params)))

    def load(self, experiment: str, *, params: Mapping[str, Any], scale: str) -> Result:
        """Read one result back, verified; a missing or damaged entry raises :class:`KeyError` saying what to run."""
        key = params_key(params)
        folder = self._folder(experiment, scale, key)
        try:
            return self._read(folder)
        except DamagedEntryError as err:
            raise DamagedEntryError(f"{err}; run the experiment again to replace it") from None
        except KeyError:
            raise KeyError(f"no result for experiment {experiment!r} at scale {scale!r} with these parameters "
                           f"(key {key}) under {self.root}; run the experiment first") from None

    @staticmethod
    def _subfolders(folders: list[Path], name: str | None = None, *, hidden: bool = False) -> list[Path]:
        """The subfolders of ``folders`` called ``name`` (None: any), hidden or not, in path order; links left out."""
        return [child for folder in folders for child in sorted(folder.iterdir())
                if child.name.startswith(".") == hidden and name in (None, child.name) and child.is_dir()
                and not is_symlink(child)]

    def _entry_folders(self, experiment: str | None = None, scale: str | None = None, *,
                       hidden: bool = False) -> list[Path]:
        """The entry folders ``<scale>/<experiment>/<key>``, or with ``hidden=True`` the hidden folders beside them
        (``.name``: left by an older posgeom); links and hidden scales and experiments are left out."""
        scales = self._subfolders([self.root] if self.root.is_dir() else [], scale)
        return self._subfolders(self._subfolders(scales, experiment), hidden=hidden)

    def entries(self, experiment: str | None = None, scale: str | None = None) -> list[Result]:
        """Every verified result, optionally filtered (damaged ones are left out with a warning)."""
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
        """Verify every entry folder and, with ``sweep=True``, remove what interrupted writes left."""
        from .check import check_registry
        return check_registry(self, sweep=sweep, scale=scale)

    @staticmethod
    def _is_interrupted(child: Path) -> bool:
        """Whether ``child`` is a temporary name left by an interrupted write."""
        name = child.name
        return name.startswith(".tmp-") or (name.startswith(f".{POINTER}.") and name.endswith(TMP_SUFFIX))

    def _verifies(self, folder: Path) -> bool:
        try:
            self._read(folder)
        except KeyError:
            return False
        return True

    def run(self, experiment: str, compute, *, params: Mapping[str, Any], scale: str, seed: int | None, device: str,
            model: str | None = None, force: bool = False, same_code: bool = True) -> Result:
        """Return the stored result, or call ``compute()`` → ``(values, arrays)`` and store it.

        A stored result is reused when it verifies, has the same ``seed`` and (with ``same_code=True``) the
        same code key of ``compute``'s module and what it imports; ``force=True`` always recomputes. GPU work
        on a CPU at paper scale with nothing stored, or a computation raising
        :class:`~posgeom.registry.NeedsGPU`, returns a :class:`~posgeom.registry.Pending` and stores nothing.
        """
        if not force or reading_stored_only():
            stored = None
            try:
                stored = self.load(experiment, params=params, scale=scale)
            except DamagedEntryError as err:
                warnings.warn(f"{err}; recomputing it", stacklevel=2)
            except KeyError:
                pass
            if stored is not None and stored.manifest.get("seed") == seed and (
                    not same_code or not code_changed(stored.manifest) or reading_stored_only()):
                return stored
        if reading_stored_only():
            raise NotStoredError(f"{experiment} (scale {scale}, seed {seed}) is not stored under {self.root}; "
                                 "run it outside stored_only() to compute it")
        minutes = gpu_work_minutes(experiment, scale, device)
        if minutes is not None:  # GPU work asked for on a CPU: report it, do not train for days
            return Pending(experiment, minutes)
        require_committed(scale)  # before the computation, not after hours of it
        start = time.perf_counter()
        try:
            out = compute()
        except NeedsGPU as err:  # computed from a result that waits for a GPU: it waits too, nothing stored
            return Pending.of(err)
        record = None
        if is_dataclass(out) and not isinstance(out, type):  # a record: stored as to_stored writes it
            record = record_name(type(out))
            out = to_stored(out)
        values, arrays = out if isinstance(out, tuple) else (out, None)
        return self.save(experiment, values, params=params, scale=scale, seed=seed, device=device, model=model,
                         runtime_s=time.perf_counter() - start, arrays=arrays,
                         code=getattr(compute, "__module__", None), record=record)

