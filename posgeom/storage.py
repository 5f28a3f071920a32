"""Durable file writes shared by the results registry and the corpora cache.

A file is written to a temporary name, flushed and ``fsync``-ed, then moved over its final name with
``os.replace`` (atomic on POSIX and Windows), and the folder is ``fsync``-ed so that the rename itself
survives a power cut. :func:`fault_point` marks each step of such a write; the fault-injection tests set
:data:`FAULT_ENV` to a step's name and the process kills itself (``SIGKILL``) there, which proves that a
write interrupted at any step leaves the previous complete content or the new complete content.
"""

from __future__ import annotations

import hashlib
import os
import signal
import tempfile
from pathlib import Path

__all__ = ["FAULT_ENV", "fault_point", "sha256_file", "sha256_bytes", "fsync_dir", "write_durably", "TMP_SUFFIX"]

#: Environment variable naming the step at which a process kills itself (tests only).
FAULT_ENV = "POSGEOM_FAULT_INJECT"
#: Suffix of the temporary files of :func:`write_durably`.
TMP_SUFFIX = ".tmp"


def fault_point(step: str) -> None:
    """Kill this process with ``SIGKILL`` when :data:`FAULT_ENV` names ``step`` (a test hook; no-op otherwise)."""
    if os.environ.get(FAULT_ENV) == step:
        os.kill(os.getpid(), getattr(signal, "SIGKILL", signal.SIGTERM))


def sha256_bytes(data: bytes) -> str:
    """The sha256 hex digest of ``data``."""
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | os.PathLike, chunk: int = 1 << 22) -> str:
    """The sha256 hex digest of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def fsync_dir(folder: str | os.PathLike) -> None:
    """Flush a folder's entries (new and renamed names) to disk; a no-op where folders cannot be opened."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # Windows cannot open a folder; its renames are durable once they return
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_durably(path: str | os.PathLike, data: bytes, *, fault: str | None = None) -> None:
    """Write ``data`` to ``path`` atomically and durably (temporary file, fsync, ``os.replace``, fsync folder).

    The temporary file is ``.<name>.<random>.tmp`` beside ``path``. ``fault`` is the prefix of the steps
    :func:`fault_point` marks: ``<fault>:partial`` (half the temporary file written) and ``<fault>:written``
    (the temporary file complete, not yet renamed).
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as fh:
            half = len(data) // 2
            fh.write(data[:half])
            if fault:
                fh.flush()
                fault_point(f"{fault}:partial")
            fh.write(data[half:])
            fh.flush()
            os.fsync(fh.fileno())
        if fault:
            fault_point(f"{fault}:written")
        os.replace(tmp, path)
        tmp = None
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
    fsync_dir(path.parent)
