r"""On-disk cache of token arrays and positional counts that never serves a stale or damaged entry.

An entry is named by :func:`cache_key`: the sha256 of everything its content depends on (the texts read,
the tokenizer's fingerprint, every option, :data:`CACHE_VERSION`), so a change is never looked up again.
Each file stores a JSON header with the key and the sha256 of its arrays and metadata; a file that cannot
be read, or whose key or checksums do not match, is reported, deleted and recomputed by the caller.
Written atomically (``posgeom.storage.write_durably``) under ``default_cache_dir() / "corpora"``.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import time
import warnings
from pathlib import Path

import numpy as np

from ..config import default_cache_dir
from ..storage import TMP_SUFFIX, read_npz, sha256_bytes, write_durably

#: A temporary file this old belongs to a writer that died (a write takes seconds).
STALE_TMP_S = 3600.0

__all__ = ["CACHE_VERSION", "cache_key", "ArrayCache", "arrays_digest"]

#: Bumped whenever what is stored, or how it is computed, changes; part of every key.
CACHE_VERSION = 2
_META = "__posgeom_meta__"


def cache_key(**parts) -> str:
    """sha256 (hex) of the JSON of ``parts`` (sorted keys) together with :data:`CACHE_VERSION`."""
    payload = json.dumps({"cache_version": CACHE_VERSION, **parts}, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode()).hexdigest()


def arrays_digest(arrays: dict) -> str:
    """sha256 over the names, dtypes, shapes and bytes of ``arrays`` (in sorted name order)."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"{name}|{a.dtype.str}|{a.shape}|".encode())
        h.update(a.reshape(-1).view(np.uint8) if a.size else b"")
    return h.hexdigest()


def _meta_digest(meta: dict) -> str:
    return sha256_bytes(json.dumps(meta, sort_keys=True).encode())


class ArrayCache:
    """A folder ``root`` (default ``default_cache_dir() / "corpora"``) of ``<kind>-<key>.npz`` files."""

    def __init__(self, root: str | Path | None = None):
        self.root = Path(root) if root is not None else default_cache_dir() / "corpora"

    def path(self, kind: str, key: str) -> Path:
        return self.root / f"{kind}-{key}.npz"

    def load(self, kind: str, key: str) -> tuple[dict, dict] | None:
        """``(arrays, meta)`` stored under ``(kind, key)``, or None when absent or damaged."""
        path = self.path(kind, key)
        try:
            with open(path, "rb") as fh:
                identity = os.fstat(fh.fileno())
                raw = fh.read()
        except (FileNotFoundError, NotADirectoryError):
            return None
        except OSError as err:
            warnings.warn(f"cannot read the cache file {path} ({err}); recomputing it", stacklevel=3)
            return None
        try:
            arrays = read_npz(raw)
            if _META not in arrays:
                raise ValueError("no header")
            header = json.loads(str(arrays.pop(_META)))
            if header.get("key") != key or header.get("cache_version") != CACHE_VERSION:
                raise ValueError("header does not match the key")
            meta = header["meta"]
            if header.get("sha256") != arrays_digest(arrays) or header.get("meta_sha256") != _meta_digest(meta):
                raise ValueError("checksum mismatch")
        except Exception as err:  # noqa: BLE001 - whatever the damage, the answer is "recompute and replace"
            warnings.warn(f"cache file {path} is damaged ({type(err).__name__}: {err}); recomputing it", stacklevel=3)
            try:  # delete it unless another process has meanwhile replaced it by a good file
                if os.stat(path).st_ino == identity.st_ino:
                    path.unlink()
            except OSError:
                pass
            return None
        return arrays, meta

    def save(self, kind: str, key: str, arrays: dict, meta: dict | None = None) -> Path | None:
        """Store ``arrays`` atomically; returns the path, or None (with a warning) if the folder is not writable."""
        arrays = {name: np.ascontiguousarray(a) for name, a in arrays.items()}
        meta = json.loads(json.dumps(meta or {}, default=str))  # as it will read back
        header = {
            "key": key, "cache_version": CACHE_VERSION, "sha256": arrays_digest(arrays), "meta": meta,
            "meta_sha256": _meta_digest(meta),
        }
        final = self.path(kind, key)
        buffer = io.BytesIO()
        np.savez(buffer, **arrays, **{_META: np.array(json.dumps(header))})
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            self._sweep_temporaries()
            write_durably(final, buffer.getvalue(), fault="cache-save")
        except OSError as err:
            warnings.warn(f"could not write the cache file {final} ({err}); continuing without caching", stacklevel=3)
            return None
        return final

    def _sweep_temporaries(self, older_than_s: float = STALE_TMP_S) -> int:
        """Delete temporary files left by writers killed at least ``older_than_s`` seconds ago."""
        n = 0
        now = time.time()
        for p in self.root.glob(f".*{TMP_SUFFIX}"):
            try:
                if now - p.stat().st_mtime >= older_than_s:
                    p.unlink()
                    n += 1
            except OSError:
                pass
        return n

    def clear(self) -> int:
        """Delete every cache file; returns how many were removed."""
        n = 0
        if self.root.is_dir():
            for p in self.root.glob("*.npz"):
                p.unlink(missing_ok=True)
                n += 1
            self._sweep_temporaries(older_than_s=0)
        return n
