"""Durable file writes shared by the results registry and the corpora cache.

A file is written to a temporary name, flushed and ``fsync``-ed, then moved over its final name with
``os.replace`` (atomic on POSIX and Windows), and the folder is ``fsync``-ed so that the rename itself
survives a power cut. Files and folders get the permissions the umask allows (``0o666 & ~umask`` and
``0o777 & ~umask``, as ``open`` and ``mkdir`` give them), not the owner-only ones of ``tempfile``, so that a
results folder or a cache on shared storage can be read by a team whose umask says so
(:func:`file_mode`, :func:`folder_mode`, :func:`make_temp_folder`). :func:`fault_point` marks each step of such a write; the fault-injection tests set
:data:`FAULT_ENV` to a step's name and the process kills itself (``SIGKILL``) there, which proves that a
write interrupted at any step leaves the previous complete content or the new complete content.

Symbolic links are never followed out of a store (git stores links, so a committed results folder or a
shared cache can hold one): :func:`symlinks_below` finds them without following any, :func:`read_nofollow`
and :class:`FolderLock` open a file only when its own name is no link (``O_NOFOLLOW`` where the platform has
it, after an ``lstat`` check), and :func:`remove_tree` refuses a linked folder and unlinks the links inside
one instead of descending through them. :func:`deferred_writes` holds back the durable writes under a
folder (a cache) until a command has succeeded, so that a command that fails writes nothing there.
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


#: ``O_NOFOLLOW`` where the platform has it (0 elsewhere: there the ``lstat`` check alone guards).
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


class SymlinkError(OSError):
    """A symbolic link where posgeom expected a file or folder of its own: never followed."""

    def __init__(self, path: str | os.PathLike):
        super().__init__(errno.ELOOP, f"{os.fspath(path)} is a symbolic link; posgeom never follows a link in the "
                                      "results folder or a cache: delete the link (or move what it points to in its place)")
        self.filename = os.fspath(path)

    def __str__(self) -> str:
        return self.strerror


def is_symlink(path: str | os.PathLike) -> bool:
    """Whether ``path`` itself is a symbolic link (or a Windows junction), read with ``lstat``."""
    return os.path.islink(path) or bool(getattr(os.path, "isjunction", lambda _: False)(path))


def symlinks_below(root: str | os.PathLike) -> list[Path]:
    """Every symbolic link inside the folder ``root`` (at any depth, hidden names included), in path order.

    No link is followed: a linked folder is listed, not entered. ``root`` itself is not examined (a
    results folder or cache reached through a link of the user's own is theirs to choose)."""
    found = []

    def walk(folder: str) -> None:
        try:
            with os.scandir(folder) as it:
                children = sorted(it, key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            return
        for child in children:
            if child.is_symlink() or is_symlink(child.path):
                found.append(Path(child.path))
            elif child.is_dir(follow_symlinks=False):
                walk(child.path)

    walk(os.fspath(root))
    return found


def read_nofollow(path: str | os.PathLike) -> bytes:
    """The bytes of the regular file ``path``, opened only when ``path`` is no symbolic link.

    Raises
    ------
    SymlinkError
        ``path`` is a link (refused by ``O_NOFOLLOW`` in the open itself, so a link planted after any
        check is refused too).
    FileNotFoundError, IsADirectoryError, OSError
        As ``open`` (a folder or another kind of file is refused as :class:`IsADirectoryError` / ``OSError``).
    """
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
    """Delete the folder ``path`` and everything in it, never through a symbolic link: a linked ``path`` is
    refused (:class:`SymlinkError`) and a link inside it is removed itself, never entered (``shutil.rmtree``
    opens each folder relative to its parent's descriptor where the platform allows, so a link planted
    meanwhile is not followed either)."""
    if is_symlink(path):
        raise SymlinkError(path)
    shutil.rmtree(path)


class LockTimeout(TimeoutError):
    """Another process held the lock longer than the timeout."""


class FolderLock:
    """An exclusive, cross-process lock held on the file ``path`` (created when absent), never through a link.

    The lock file is opened with ``O_NOFOLLOW`` and locked with ``flock`` (as ``filelock`` does on POSIX,
    so both exclude each other); ``filelock`` elsewhere, after an ``lstat`` check. Once locked, the file
    must still be the one at ``path``: a process that removed it meanwhile (``results check`` removes
    the folder of an interrupted first write) makes the waiter lock the new file instead.

    Raises
    ------
    SymlinkError
        ``path`` is a symbolic link (no file anywhere is opened, truncated or changed).
    LockTimeout
        Not acquired within ``timeout`` seconds.
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
                now = os.lstat(self.path)
            except FileNotFoundError:
                now = None
            held = os.fstat(fd)
            if now is not None and (now.st_ino, now.st_dev) == (held.st_ino, held.st_dev):
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


def _held_for(path: Path) -> dict | None:
    """The dictionary holding back writes to ``path``, or None when its writes are made at once."""
    with _DEFERRED_LOCK:
        frames = list(_DEFERRED)
    target = os.path.abspath(path)
    for root, held in reversed(frames):
        if os.path.commonpath([root, target]) == root:
            return held
    return None


@contextlib.contextmanager
def deferred_writes(root: str | os.PathLike):
    """Hold back every :func:`write_durably` under the folder ``root`` (in this process) until the block ends.

    When the block ends normally the held writes are made (the last one per file; a write that fails
    is given up with one warning line, as a cache does); when it raises, none is. A command that counts
    a corpus and then refuses its options (or its corpus) thus leaves no cache entry behind.
    """
    held: dict[Path, bytes] = {}
    frame = (os.path.abspath(root), held)
    with _DEFERRED_LOCK:
        _DEFERRED.append(frame)
    try:
        yield held
    finally:
        with _DEFERRED_LOCK:
            _DEFERRED.remove(frame)
    import warnings

    for path, data in held.items():  # reached only when the block succeeded
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            write_durably(path, data)
        except OSError as err:
            warnings.warn(f"could not write the cache file {path} ({err}); it is recomputed next time", stacklevel=3)


def write_durably(path: str | os.PathLike, data: bytes, *, fault: str | None = None) -> None:
    """Write ``data`` to ``path`` atomically and durably (temporary file, fsync, ``os.replace``, fsync folder).

    The temporary file is ``.<name>.<random>.tmp`` beside ``path``; the file gets the umask's permissions
    (:func:`file_mode`). ``fault`` is the prefix of the steps
    :func:`fault_point` marks: ``<fault>:partial`` (half the temporary file written) and ``<fault>:written``
    (the temporary file complete, not yet renamed). The temporary name is created exclusively
    (``O_EXCL``: a link planted there is refused, never followed) and ``os.replace`` replaces a link at
    ``path`` itself, never what it points to. Inside :func:`deferred_writes` for a folder holding ``path``
    the write is held back until that block succeeds.
    """
    path = Path(path)
    held = _held_for(path)
    if held is not None:  # inside deferred_writes: made when the command has succeeded
        held[Path(os.path.abspath(path))] = bytes(data)
        return
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
