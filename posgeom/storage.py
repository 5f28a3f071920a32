"""Durable file writes shared by the results registry and the corpora cache.

A file is written to a temporary name, flushed and ``fsync``-ed, then moved over its final name with
``os.replace`` (atomic on POSIX and Windows), and the folder is ``fsync``-ed so that the rename itself
survives a power cut. Files and folders get the permissions the umask allows (``0o666 & ~umask`` and
``0o777 & ~umask``, as ``open`` and ``mkdir`` give them), not the owner-only ones of :mod:`tempfile`, so that a
results folder or a cache on shared storage can be read by a team whose umask says so
(:func:`file_mode`, :func:`folder_mode`, :func:`make_temp_folder`). :func:`fault_point` marks each step of such a write; the fault-injection tests set
:data:`FAULT_ENV` to a step's name and the process kills itself (``SIGKILL``) there, which proves that a
write interrupted at any step leaves the previous complete content or the new complete content.
"""

from __future__ import annotations

import hashlib
import os
import signal
import tempfile
import threading
from pathlib import Path

__all__ = [
    "FAULT_ENV", "fault_point", "sha256_file", "sha256_bytes", "fsync_dir", "write_durably", "TMP_SUFFIX",
    "current_umask", "file_mode", "folder_mode", "make_temp_folder", "read_npz",
]

#: Environment variable naming the step at which a process kills itself (tests only).
FAULT_ENV = "POSGEOM_FAULT_INJECT"
#: Suffix of the temporary files of :func:`write_durably`.
TMP_SUFFIX = ".tmp"


#: Serialises the read-by-setting fallback of :func:`current_umask` (``os.umask`` both reads and sets it).
_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process's umask, read without changing it where the system tells it (``/proc/self/status``)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:  # elsewhere the only way to read it is to set it (and set it back at once)
        mask = os.umask(0o077)
        os.umask(mask)
    return mask


def file_mode() -> int:
    """The permissions of a new file under the current umask (``0o666 & ~umask``, as ``open`` gives)."""
    return 0o666 & ~current_umask()


def folder_mode() -> int:
    """The permissions of a new folder under the current umask (``0o777 & ~umask``, as ``mkdir`` gives)."""
    return 0o777 & ~current_umask()


def make_temp_folder(parent: str | os.PathLike, prefix: str) -> Path:
    """A new uniquely named folder in ``parent`` with the umask's permissions (:func:`tempfile.mkdtemp` makes
    it owner-only, 0700, whatever the umask)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    os.chmod(folder, folder_mode())
    return folder


def _set_file_mode(fd: int, path: str) -> None:
    """Give a :func:`tempfile.mkstemp` file (owner-only, 0600) the umask's permissions."""
    if hasattr(os, "fchmod"):
        os.fchmod(fd, file_mode())
    else:  # Windows before Python 3.13: only the read-only flag exists anyway
        os.chmod(path, file_mode())


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

    The temporary file is ``.<name>.<random>.tmp`` beside ``path``; the file gets the umask's permissions
    (:func:`file_mode`). ``fault`` is the prefix of the steps
    :func:`fault_point` marks: ``<fault>:partial`` (half the temporary file written) and ``<fault>:written``
    (the temporary file complete, not yet renamed).
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as fh:
            _set_file_mode(fh.fileno(), tmp)
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


def read_npz(data: bytes) -> dict:
    """The arrays of an ``.npz`` held in ``data``, each checked before it is read: a member whose header
    declares more bytes than the member holds (a crafted or damaged file asking for terabytes) raises
    ``ValueError`` instead of allocating that memory. Pickled (object) arrays are refused.

    Returns
    -------
    dict of name → numpy.ndarray
    """
    import io
    import zipfile

    import numpy as np

    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as err:
        raise ValueError(f"not an .npz archive ({err})") from None
    out = {}
    with archive:
        for info in archive.infolist():
            name = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            with archive.open(info) as member:
                version = np.lib.format.read_magic(member)
                if version == (1, 0):
                    shape, fortran, dtype = np.lib.format.read_array_header_1_0(member)
                else:
                    shape, fortran, dtype = np.lib.format.read_array_header_2_0(member)
                if dtype.hasobject:
                    raise ValueError(f"array {name!r} holds Python objects (pickled); refused")
                declared = int(np.prod(shape, dtype=object)) * dtype.itemsize
                if declared > info.file_size - member.tell():
                    raise ValueError(
                        f"array {name!r} declares {declared:,} bytes of data but its member holds "
                        f"{max(info.file_size - member.tell(), 0):,}: the file is damaged or crafted"
                    )
            with archive.open(info) as member:
                out[name] = np.lib.format.read_array(member, allow_pickle=False)
    return out
