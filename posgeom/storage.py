"""Durable file writes and link-refusing reads shared by the results registry and the corpora cache.

A file is written to a temporary name, fsynced, moved over its final name with ``os.replace`` and its folder
fsynced, so an interrupted write leaves the old or the new content (:func:`fault_point` marks each step for the
fault-injection tests). New files and folders get the umask's permissions, not ``tempfile``'s owner-only ones,
so a shared results folder or cache stays readable by a team. Symbolic links are never followed out of a store:
git stores links, so a committed results folder or a shared cache can hold one.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import os
import shutil
import signal
import stat
import tempfile
import threading
import time
import warnings
import zipfile
from pathlib import Path

__all__ = [
    "FAULT_ENV", "fault_point", "sha256_file", "sha256_bytes", "fsync_dir", "write_durably", "TMP_SUFFIX",
    "current_umask", "file_mode", "folder_mode", "make_temp_folder", "read_npz", "SymlinkError", "is_symlink",
    "symlinks_below", "read_nofollow", "remove_tree", "FolderLock", "LockTimeout", "deferred_writes",
]

#: Environment variable naming the step at which a process kills itself (tests only).
FAULT_ENV = "POSGEOM_FAULT_INJECT"
#: Suffix of the temporary files of :func:`write_durably`.
TMP_SUFFIX = ".tmp"
#: Serialises the read-by-setting fallback of :func:`current_umask` (``os.umask`` both reads and sets it).
_UMASK_LOCK = threading.Lock()


def current_umask() -> int:
    """The process's umask, read without changing it where the system tells it (``/proc/self/status``)."""
    with contextlib.suppress(OSError, ValueError, IndexError), open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
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
    """A new uniquely named folder in ``parent`` with the umask's permissions (``mkdtemp`` gives 0700)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    os.chmod(folder, folder_mode())
    return folder


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
        with contextlib.suppress(OSError):
            os.fsync(fd)
    finally:
        os.close(fd)


#: ``O_NOFOLLOW`` where the platform has it (0 elsewhere: there the ``lstat`` check alone guards).
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class SymlinkError(OSError):
    """A symbolic link where posgeom expected a file or folder of its own: never followed."""

    def __init__(self, path: str | os.PathLike):
        super().__init__(errno.ELOOP, f"{os.fspath(path)} is a symbolic link; posgeom never follows a link in the "
                                      "results folder or a cache: delete the link (or move what it points to in its "
                                      "place)")
        self.filename = os.fspath(path)

    def __str__(self) -> str:
        return self.strerror


def is_symlink(path: str | os.PathLike) -> bool:
    """Whether ``path`` itself is a symbolic link (or a Windows junction), read with ``lstat``."""
    return os.path.islink(path) or bool(getattr(os.path, "isjunction", lambda _: False)(path))


def symlinks_below(root: str | os.PathLike) -> list[Path]:
    """Every symbolic link at any depth inside ``root`` (not ``root`` itself), in path order, none followed."""
    def skip_unreadable(err: OSError) -> None:  # a folder removed meanwhile or not readable is skipped
        if not isinstance(err, (FileNotFoundError, NotADirectoryError, PermissionError)):
            raise err

    found = []
    for folder, folders, files in os.walk(root, onerror=skip_unreadable):
        found += [Path(folder, name) for name in folders + files if is_symlink(os.path.join(folder, name))]
        folders[:] = [name for name in folders if not is_symlink(os.path.join(folder, name))]  # never entered
    return sorted(found)


def read_nofollow(path: str | os.PathLike) -> bytes:
    """The bytes of the regular file ``path``; a link is refused (``O_NOFOLLOW``) with :class:`SymlinkError`."""
    if not _O_NOFOLLOW and is_symlink(path):
        raise SymlinkError(path)
    try:
        fd = os.open(path, os.O_RDONLY | _O_NOFOLLOW | getattr(os, "O_BINARY", 0))
    except OSError as err:
        if err.errno == errno.ELOOP or is_symlink(path):
            raise SymlinkError(path) from None
        raise
    with os.fdopen(fd, "rb") as fh:
        mode = os.fstat(fh.fileno()).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "is a folder, not a file", os.fspath(path))
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "is not a regular file", os.fspath(path))
        return fh.read()


def remove_tree(path: str | os.PathLike) -> None:
    """Delete the folder ``path``: a linked ``path`` is refused, a link inside it is removed, never entered."""
    if is_symlink(path):
        raise SymlinkError(path)
    shutil.rmtree(path)


class LockTimeout(TimeoutError):
    """Another process held the lock longer than the timeout."""


class FolderLock:
    """An exclusive cross-process lock on the file ``path`` (``flock``, as ``filelock`` on POSIX), never via a link.

    A file removed meanwhile (``results check`` sweeps an interrupted first write) is locked anew once it is made
    again. Raises :class:`SymlinkError` for a linked ``path`` and ``LockTimeout`` after ``timeout`` seconds.
    """

    def __init__(self, path: str | os.PathLike, timeout: float):
        self.path, self.timeout = Path(path), float(timeout)
        self._fd: int | None = None
        self._fallback = None

    def acquire(self) -> "FolderLock":
        try:
            import fcntl
        except ImportError:  # Windows: filelock (>= 3.20.1) refuses reparse points itself
            return self._acquire_filelock()
        deadline = time.monotonic() + self.timeout
        while True:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            if is_symlink(self.path):
                raise SymlinkError(self.path)
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | _O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), file_mode())
            except FileNotFoundError:
                # the folder was removed between mkdir and open (results check sweeping an interrupted first
                # write): make it again, as a waiter does when the file itself is replaced
                if time.monotonic() >= deadline:
                    raise LockTimeout(f"{self.path.parent} keeps being removed while a lock is taken") from None
                continue
            except OSError as err:
                if err.errno == errno.ELOOP:
                    raise SymlinkError(self.path) from None
                raise
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                if time.monotonic() >= deadline:
                    raise LockTimeout(f"{self.path} is held by another process") from None
                time.sleep(0.05)
                continue
            try:
                same = os.path.samestat(os.lstat(self.path), os.fstat(fd))
            except FileNotFoundError:
                same = False
            if same:
                self._fd = fd
                return self
            os.close(fd)  # the file was removed or replaced while we waited: lock the one there now

    def _acquire_filelock(self) -> "FolderLock":
        from filelock import FileLock, Timeout
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if is_symlink(self.path):
            raise SymlinkError(self.path)
        self._fallback = FileLock(str(self.path), timeout=self.timeout)
        try:
            self._fallback.acquire()
        except Timeout:
            raise LockTimeout(f"{self.path} is held by another process") from None
        return self

    def release(self) -> None:
        if self._fallback is not None:
            self._fallback.release()
            self._fallback = None
        if self._fd is not None:
            os.close(self._fd)  # closing the last descriptor releases the flock
            self._fd = None

    def __enter__(self) -> "FolderLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


#: The folders whose durable writes are held back (:func:`deferred_writes`), innermost last.
_DEFERRED: list[tuple[str, dict]] = []
_DEFERRED_LOCK = threading.Lock()


@contextlib.contextmanager
def deferred_writes(root: str | os.PathLike):
    """Hold back every :func:`write_durably` under ``root`` until the block ends; make them only if it succeeds
    (a held write that then fails is given up with a warning, as a cache does)."""
    held: dict[Path, bytes] = {}
    frame = (os.path.abspath(root), held)
    with _DEFERRED_LOCK:
        _DEFERRED.append(frame)
    try:
        yield held
    finally:
        with _DEFERRED_LOCK:
            _DEFERRED.remove(frame)
    for path, data in held.items():  # reached only when the block succeeded
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_durably(path, data)
        except OSError as err:
            warnings.warn(f"could not write the cache file {path} ({err}); it is recomputed next time", stacklevel=3)


def write_durably(path: str | os.PathLike, data: bytes, *, fault: str | None = None) -> None:
    """Write ``data`` to ``path`` atomically and durably, through ``.<name>.<random>.tmp`` beside it.

    ``fault`` prefixes the steps :func:`fault_point` marks: ``<fault>:partial`` (half the temporary file
    written) and ``<fault>:written`` (complete, not yet renamed). Neither the temporary name (``O_EXCL``)
    nor a link at ``path`` (replaced itself) is followed.
    """
    path, target = Path(path), os.path.abspath(path)
    with _DEFERRED_LOCK:  # the writes held back by the innermost deferred_writes covering path
        held = next((held for root, held in reversed(_DEFERRED) if os.path.commonpath([root, target]) == root), None)
    if held is not None:  # made when the command has succeeded
        held[Path(target)] = bytes(data)
        return
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TMP_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as fh:
            if hasattr(os, "fchmod"):  # mkstemp makes the file owner-only (0600): give it the umask's permissions
                os.fchmod(fh.fileno(), file_mode())
            else:  # Windows before Python 3.13: only the read-only flag exists anyway
                os.chmod(tmp, file_mode())
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
    """One ``.npy`` member, its header and zip sizes checked against its bytes before anything is allocated."""
    import numpy as np
    from numpy.lib import format as npy
    name = info.filename
    if info.header_offset + info.compress_size > archive_size:
        raise ValueError(f"member {name!r} declares more stored bytes than the file holds")
    stored = info.compress_type == zipfile.ZIP_STORED
    if (stored and info.file_size != info.compress_size) or (
            info.file_size > _MAX_DEFLATE_RATIO * info.compress_size + 64):
        raise ValueError(f"member {name!r} declares {info.file_size} bytes, more than it can hold")
    with zf.open(info) as fh:
        version = npy.read_magic(fh)
        read_header = {(1, 0): npy.read_array_header_1_0, (2, 0): npy.read_array_header_2_0}.get(version)
        if read_header is None:
            raise ValueError(f"member {name!r} has .npy format version {version}, not 1.0 or 2.0")
        shape, fortran, dtype = read_header(fh)
        if dtype.hasobject:
            raise ValueError(f"member {name!r} holds Python objects")
        n_bytes = int(np.prod(shape, dtype=object)) * dtype.itemsize  # exact: no overflow on crafted shapes
        if n_bytes != info.file_size - fh.tell():
            raise ValueError(f"member {name!r} declares shape {shape} of {dtype} ({n_bytes} bytes) but holds "
                             f"{info.file_size - fh.tell()} bytes")
        buffer = bytearray(n_bytes)  # filled in place: the array is made from it without a copy
        view, pos = memoryview(buffer), 0
        while pos < n_bytes:
            got = fh.readinto(view[pos: pos + (1 << 24)])
            if not got:
                raise ValueError(f"member {name!r} is truncated")
            pos += got
        if fh.read(1):  # also reaches the end of the member, where its CRC is checked
            raise ValueError(f"member {name!r} holds more bytes than its header declares")
    return np.frombuffer(buffer, dtype=dtype).reshape(shape, order="F" if fortran else "C")


def read_npz(raw: bytes) -> dict:
    """The arrays of an ``.npz`` file's bytes (``raw``), by member name without ``.npy``, headers not trusted.

    ``numpy.load`` allocates the shape a header declares, so a crafted file of a few hundred bytes could ask
    for terabytes; here each declared shape must match the member's bytes, so memory stays proportional to
    the file. Object arrays are refused. Any damage raises a ``ValueError`` with the reason.
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
