"""Durable file writes shared by the results registry and the corpora cache.

A file is written to a temporary name, flushed and ``fsync``-ed, then moved over its final name with
``os.replace`` (atomic on POSIX and Windows), and the folder is ``fsync``-ed so that the rename itself
survives a power cut. Files and folders get the permissions the umask allows (``0o666 & ~umask`` and
``0o777 & ~umask``, as ``open`` and ``mkdir`` give them), not the owner-only ones of ``tempfile``, so that a
results folder or a cache on shared storage can be read by a team whose umask says so
(:func:`file_mode`, :func:`folder_mode`, :func:`make_temp_folder`). :func:`fault_point` marks each step of such a write; the fault-injection tests set
:data:`FAULT_ENV` to a step's name and the process kills itself (``SIGKILL``) there, which proves that a
write interrupted at any step leaves the previous complete content or the new complete content.
"""

from __future__ import annotations

import hashlib
import io
import os
import signal
import tempfile
import threading
import zipfile
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
    """A new uniquely named folder in ``parent`` with the umask's permissions (``tempfile.mkdtemp`` makes
    it owner-only, 0700, whatever the umask)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    os.chmod(folder, folder_mode())
    return folder


def _set_file_mode(fd: int, path: str) -> None:
    """Give a ``tempfile.mkstemp`` file (owner-only, 0600) the umask's permissions."""
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


#: Deflate expands a byte into at most 1032: a member declaring more than this per stored byte lies.
_MAX_DEFLATE_RATIO = 1032


def _read_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, archive_size: int):
    """One ``.npy`` member, its header checked against the member's size before anything is allocated.

    The sizes a zip directory declares are checked too: a member's stored bytes lie inside the archive,
    an uncompressed member holds as many bytes as it stores, and a compressed one cannot expand beyond
    what deflate allows. So the one buffer allocated is at most ``_MAX_DEFLATE_RATIO`` times the file.
    """
    import numpy as np
    from numpy.lib import format as npy

    name = info.filename
    if info.header_offset + info.compress_size > archive_size:
        raise ValueError(f"member {name!r} declares more stored bytes than the file holds")
    stored = info.compress_type == zipfile.ZIP_STORED
    if (stored and info.file_size != info.compress_size) or (
        info.file_size > _MAX_DEFLATE_RATIO * info.compress_size + 64
    ):
        raise ValueError(f"member {name!r} declares {info.file_size} bytes, more than it can hold")
    with zf.open(info) as fh:
        version = npy.read_magic(fh)
        if version == (1, 0):
            shape, fortran, dtype = npy.read_array_header_1_0(fh)
        elif version == (2, 0):
            shape, fortran, dtype = npy.read_array_header_2_0(fh)
        else:
            raise ValueError(f"member {name!r} has .npy format version {version}, not 1.0 or 2.0")
        if dtype.hasobject:
            raise ValueError(f"member {name!r} holds Python objects")
        n_bytes = int(np.prod(shape, dtype=object)) * dtype.itemsize  # exact: no overflow on crafted shapes
        if n_bytes != info.file_size - fh.tell():
            raise ValueError(
                f"member {name!r} declares shape {shape} of {dtype} ({n_bytes} bytes) but holds "
                f"{info.file_size - fh.tell()} bytes"
            )
        buffer = bytearray(n_bytes)  # filled in place: the array is made from it without a copy
        view, pos = memoryview(buffer), 0
        while pos < n_bytes:
            chunk = fh.read(min(1 << 24, n_bytes - pos))
            if not chunk:
                raise ValueError(f"member {name!r} is truncated")
            view[pos: pos + len(chunk)] = chunk
            pos += len(chunk)
        if fh.read(1):  # also reaches the end of the member, where its CRC is checked
            raise ValueError(f"member {name!r} holds more bytes than its header declares")
    return np.frombuffer(buffer, dtype=dtype).reshape(shape, order="F" if fortran else "C")


def read_npz(raw: bytes) -> dict:
    """The arrays of an ``.npz`` file's bytes, read without trusting what its headers declare.

    ``numpy.load`` allocates each array at the shape its header declares before reading it, so a crafted
    file of a few hundred bytes can ask for terabytes before any digest is checked. Here every member's
    declared shape must match the bytes the member holds (and a compressed member cannot claim more
    than deflate can expand to), so memory stays proportional to the file's size; object arrays are
    refused (as ``allow_pickle=False``). Each array is read into its own buffer (writeable, no copy).

    Parameters
    ----------
    raw : bytes
        The whole file.

    Returns
    -------
    dict of str to ndarray
        One entry per member, named without its ``.npy`` suffix.

    Raises
    ------
    ValueError
        Whatever the damage (not a zip archive, a member that is not ``.npy``, a header that does not
        match its data, a CRC or decompression error, a truncated member), with the reason.
    """
    if not raw.startswith(b"PK"):
        raise ValueError("not an .npz file (it does not start as a zip archive does)")
    arrays = {}
    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as zf:
            for info in zf.infolist():
                if not info.filename.endswith(".npy"):
                    raise ValueError(f"member {info.filename!r} is not an .npy array")
                arrays[info.filename[: -len(".npy")]] = _read_member(zf, info, len(raw))
    except ValueError:
        raise
    except Exception as err:  # noqa: BLE001 - zlib.error, BadZipFile, EOFError, ...: all mean "damaged"
        raise ValueError(f"{type(err).__name__}: {err}") from None
    return arrays
