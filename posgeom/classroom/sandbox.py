r"""Where a student's code runs while it is graded: a process in which the library and the course files do not exist.

An :class:`Answerer` runs :mod:`posgeom.classroom.answer_server` with the student's definitions and only
answers calls: a hidden case's arguments go in, the value comes back as plain data, and the comparison
happens in the grader. Under bubblewrap (:func:`answer_command`) the process sees only ``/usr``, the Python
runtime read-only (posgeom's own folder covered by an empty one), a private size-limited ``/tmp``, and its own
``/proc`` and ``/dev``: posgeom, the key and the other submissions are absent, not blocked. It has no network,
its own PID, IPC and UTS namespaces, a new session, hard limits on memory, processes and file size, and (where
the grader is root) gives up root first. ``--sandbox none`` runs the same server as an ordinary process
(trusted work only) and ends every process it leaves behind (:func:`end_descendants`).
"""

from __future__ import annotations

import base64
import contextlib
import functools
import json
import os
import secrets
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

__all__ = ["Answerer", "StudentError", "SANDBOXES", "NO_SANDBOX", "answer_command", "bwrap_works",
           "resolve_sandbox", "decode_answer", "end_descendants", "become_subreaper", "MAX_PROCESSES", "MAX_FILE_BYTES",
           "MAX_ANSWER_BYTES", "ANSWER_FD_ENV"]

#: The values of ``posgeom classroom grade --sandbox``.
SANDBOXES = ("auto", "bwrap", "none")
#: Why ``auto`` and ``bwrap`` refuse to grade where bubblewrap cannot run, and what to do.
NO_SANDBOX = ("bubblewrap (bwrap) is not installed or cannot create a sandbox here, so student code could "
              "read the course files and change the installed library; install it (apt-get install bubblewrap) "
              "or, to grade trusted work without a sandbox, say --sandbox none")
#: Environment variable naming the answering process's reply file descriptor.
ANSWER_FD_ENV = "POSGEOM_ANSWER_FD"
#: Processes (threads included) the answering process may run at once.
MAX_PROCESSES = 64
#: Largest file the answering process may write (its output to the feedback file included), in bytes.
MAX_FILE_BYTES = 16 * 2**20
#: Largest answer the grader reads back, in bytes (a larger one is a wrong answer, not a crash here).
MAX_ANSWER_BYTES = 64 * 2**20
_SERVER = Path(__file__).with_name("answer_server.py")


class StudentError(Exception):
    """An exception raised by the student's code (its type name is the class name of a subclass)."""


# -- the sandbox ------------------------------------------------------------------------------------------

def _runtime_paths() -> list[str]:
    """The folders the answering Python needs: the interpreter's prefixes and the environment's packages."""
    import site
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, str(Path(os.path.realpath(sys.executable)).parents[1])}
    paths |= set(site.getsitepackages())
    real = sorted({os.path.realpath(p) for p in paths if os.path.isdir(p)})
    # keep the outermost folders only (a bind inside a bind is redundant)
    return [p for p in real if not any(p != q and p.startswith(q.rstrip(os.sep) + os.sep) for q in real)
            and not p.startswith("/usr" + os.sep) and p != "/usr"]


def _hidden_paths(bound: list[str]) -> list[str]:
    """posgeom's folders that lie inside a bound one (an install into site-packages): covered by empty ones."""
    import posgeom
    package = os.path.realpath(Path(posgeom.__file__).parent)
    return [package] if any(package.startswith(r.rstrip(os.sep) + os.sep) for r in [*bound, "/usr"]) else []


def answer_command(python: list[str], *, memory_mb: int | None, as_root: bool | None = None) -> list[str]:
    """``python`` (an argument list starting with the interpreter) run under bubblewrap (module docstring): as root
    (``as_root``, default: whether this process is) with only the capabilities that give root up, else in a user
    namespace with no capability at all."""
    as_root = os.geteuid() == 0 if as_root is None else as_root
    args = [shutil.which("bwrap") or "bwrap", "--die-with-parent", "--new-session", "--unshare-ipc", "--unshare-pid", "--unshare-net",
            "--unshare-uts", "--unshare-cgroup-try"]
    if as_root:
        args += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_CHOWN"]
    else:
        args += ["--unshare-user", "--cap-drop", "ALL"]
    args += ["--ro-bind", "/usr", "/usr"]
    for top in ("bin", "sbin", "lib", "lib32", "lib64"):
        path = Path("/") / top
        if path.is_symlink():
            args += ["--symlink", os.readlink(path), str(path)]
        elif path.is_dir():
            args += ["--ro-bind", str(path), str(path)]
    args += ["--proc", "/proc", "--dev", "/dev"]
    # the private /tmp first: a runtime that lives under /tmp (a venv in a temporary clone) is bound into it
    # afterwards, where a tmpfs mounted later would hide it
    if memory_mb:
        args += ["--size", str(int(memory_mb) * 2**20)]
    args += ["--tmpfs", "/tmp"]
    bound = _runtime_paths()
    made = {"/tmp"}
    for path in bound:
        # bubblewrap makes the folders above a bind readable by root only: the user the server becomes
        # must pass through them
        for parent in reversed(Path(path).parents[:-1]):
            if str(parent) not in made:
                made.add(str(parent))
                args += ["--perms", "0755", "--dir", str(parent)]
        args += ["--ro-bind", path, path]
    for path in _hidden_paths(bound):
        args += ["--tmpfs", path]
    args += ["--chdir", "/tmp", "--clearenv"]
    for name, value in _environment("/tmp").items():
        args += ["--setenv", name, value]
    return args + ["--", *python]


def _environment(home: str) -> dict:
    """The answering process's whole environment: nothing of the grader's (no paths, no tokens)."""
    return {"HOME": home, "TMPDIR": home, "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1",
            "MPLCONFIGDIR": home, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


@functools.lru_cache(maxsize=None)
def bwrap_works() -> bool:
    """Whether bubblewrap can start the answering Python here (installed, and the kernel lets it)."""
    if shutil.which("bwrap") is None:
        return False
    probe = answer_command([sys.executable, "-I", "-c", "import numpy; open('probe', 'w').write('ok'); "
                            "print(open('probe').read())"], memory_mb=256)
    try:
        done = subprocess.run(probe, capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and done.stdout.strip() == b"ok"


def resolve_sandbox(sandbox: str = "auto") -> str:
    """``"bwrap"`` or ``"none"`` for ``--sandbox`` ``auto``, ``bwrap`` or ``none``; ``auto`` and ``bwrap`` raise a
    ValueError where bubblewrap cannot run (one submission could change the library every later one is graded with)."""
    if sandbox not in SANDBOXES:
        raise ValueError(f"unknown sandbox {sandbox!r}; choose one of {', '.join(SANDBOXES)}")
    if sandbox == "none":
        return "none"
    if bwrap_works():
        return "bwrap"
    raise ValueError(f"--sandbox {sandbox}: {NO_SANDBOX}")


def end_descendants(root: int | None = None) -> int:
    """Kill every process descended from ``root`` (default: this one, a child subreaper that adopts orphans); return
    how many were signalled. Reads ``/proc`` (Linux); elsewhere it kills nothing."""
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*") if Path("/proc/self/stat").exists() else []:
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat[stat.rindex(")") + 2:].split()[1])
        children.setdefault(parent, []).append(int(entry.name))
    found = list(children.get(root, []))
    for pid in found:  # the list grows as it is read: every descendant, generation by generation
        found.extend(children.get(pid, []))
    for pid in found:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    for pid in found:
        with contextlib.suppress(OSError):  # ChildProcessError, not our child: its own parent (or init) reaps it
            os.waitpid(pid, 0)
    return len(found)


def become_subreaper() -> bool:
    """Make this process adopt the orphans of its descendants (Linux ``PR_SET_CHILD_SUBREAPER``)."""
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


# -- answers as plain data (the only thing the grader accepts back) ------------------------------------

def decode_answer(data, depth: int = 0):
    """The inverse of :func:`~posgeom.classroom.answer_server.encode_answer`, accepting nothing else."""
    from .answer_server import MAX_DEPTH
    if depth > MAX_DEPTH:
        raise ValueError("the answer is nested too deeply")
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [decode_answer(v, depth + 1) for v in data]
    if isinstance(data, dict) and set(data) == {"__array__", "shape", "data"}:
        dtype = np.dtype(str(data["__array__"]))
        if dtype.kind not in "biufc":
            raise ValueError(f"an array of {dtype} is not an answer")
        shape = tuple(int(n) for n in data["shape"])
        return np.frombuffer(base64.b64decode(data["data"]), dtype=dtype).reshape(shape).copy()
    if isinstance(data, dict) and set(data) == {"__tuple__"}:
        return tuple(decode_answer(v, depth + 1) for v in data["__tuple__"])
    if isinstance(data, dict) and set(data) == {"__dict__"}:
        return {decode_answer(k, depth + 1): decode_answer(v, depth + 1) for k, v in data["__dict__"]}
    raise ValueError("the answer is not plain data")


# -- the grader's side ------------------------------------------------------------------------------------

class Answerer:
    """A sandboxed process holding one student function; :meth:`call` returns its answer as plain data.

    ``source`` is the student's program (:func:`~posgeom.classroom.extract.exercise_program`), ``function`` the
    function's name; ``timeout`` the seconds the program may take to run, and each call (past it a call raises
    ``TimeoutError``); ``memory_mb`` the process's address-space limit (and size of its ``/tmp``) in MiB;
    ``sandbox`` ``"bwrap"`` or ``"none"`` (resolved by :func:`resolve_sandbox`); ``output`` the file that receives
    what the student's code prints (default: nowhere); ``deadline`` the ``time.monotonic()`` past which nothing
    more runs (the submission's time limit).
    """

    def __init__(self, source: str, function: str, *, timeout: float = 60.0, memory_mb: int | None = None,
                 sandbox: str = "bwrap", output: str | Path | None = None, deadline: float | None = None):
        if sandbox not in ("bwrap", "none"):
            raise ValueError(f"sandbox must be 'bwrap' or 'none' (resolve 'auto' first), got {sandbox!r}")
        self.source, self.function = source, function
        self.timeout, self.memory_mb, self.sandbox = float(timeout), memory_mb, sandbox
        self.output, self.deadline = output, deadline
        self._process = self._folder = None

    def _limit(self) -> tuple[float, str]:
        """Seconds the next stage may take, and the limit's name."""
        left = float("inf") if self.deadline is None else self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the submission's time limit was reached")
        if left < self.timeout:
            return left, "the submission's time limit"
        return self.timeout, f"the {self.timeout:g} s limit"

    def start(self) -> None:
        """Start the process and run the student's program (also done by the first :meth:`call`)."""
        if self._process is not None:
            return
        read_fd, write_fd = os.pipe()
        python = [sys.executable, "-I", "-c", _SERVER.read_text()]
        limits = {"memory_bytes": int(self.memory_mb) * 2**20 if self.memory_mb else None, "file_bytes": MAX_FILE_BYTES}
        if self.sandbox == "bwrap":
            # counted per sandbox: in its user namespace, or for the user ID it takes as root (without a
            # sandbox the count would be of all the grading account's processes)
            limits["processes"] = MAX_PROCESSES
            command, cwd, env = answer_command(python, memory_mb=self.memory_mb), None, {ANSWER_FD_ENV: str(write_fd)}
            after_clearenv = command.index("--clearenv") + 1
            command[after_clearenv:after_clearenv] = ["--setenv", ANSWER_FD_ENV, str(write_fd)]
            if os.geteuid() == 0:
                # a user of no account, one per process (far above any system's or person's user ID)
                limits["uid"] = 2_000_000_000 + secrets.randbelow(100_000_000)
        else:
            self._folder = tempfile.TemporaryDirectory(prefix="posgeom-answer-")
            cwd = self._folder.name
            command, env = python, {**_environment(cwd), ANSWER_FD_ENV: str(write_fd)}
        out = open(self.output, "ab") if self.output else subprocess.DEVNULL
        try:
            self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=out, stderr=out, cwd=cwd, env=env,
                                             pass_fds=(write_fd,), start_new_session=True)
        finally:
            os.close(write_fd)
            if out is not subprocess.DEVNULL:
                out.close()
        self._reply = os.fdopen(read_fd, "rb", buffering=0)
        self._request(json.dumps(limits).encode(), *self._limit())  # the sandbox's start-up
        self._request(json.dumps({"source": self.source, "function": self.function}).encode(), *self._limit())

    def _request(self, data: bytes, timeout: float, limit: str):
        try:
            self._process.stdin.write(struct.pack(">I", len(data)) + data)
            self._process.stdin.flush()
        except (BrokenPipeError, OSError):
            return self._ended()
        answer = self._read_reply(timeout, limit)
        if "error" in answer:
            name, message = str(answer["error"])[:60] or "Error", str(answer.get("message", ""))
            if name == "NotImplementedError":
                raise NotImplementedError(message)
            raise type(name if name.isidentifier() else "Error", (StudentError,), {})(message)
        return decode_answer(answer["ok"])

    def _read_exactly(self, size: int, deadline: float, limit: str) -> bytes:
        chunks, left = [], size
        while left:
            ready, _, _ = select.select([self._reply], [], [], max(deadline - time.monotonic(), 0.0))
            if not ready:
                self._stop()
                raise TimeoutError(f"it ran past {limit}")
            chunk = self._reply.read(left)
            if not chunk:
                return self._ended()
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _read_reply(self, timeout: float, limit: str) -> dict:
        deadline = time.monotonic() + timeout
        (size,) = struct.unpack(">I", self._read_exactly(4, deadline, limit))
        if size > MAX_ANSWER_BYTES:
            self._stop()
            raise type("AnswerTooLarge", (StudentError,), {})(
                f"the answer takes more than {MAX_ANSWER_BYTES // 2**20} MiB")
        return json.loads(self._read_exactly(size, deadline, limit))

    def _ended(self):
        code = self._process.wait() if self._process is not None else None
        self._stop()
        reason = "ran out of memory or was killed" if code is not None and code < 0 else f"exited with status {code}"
        raise RuntimeError(f"the process running your code ended ({reason})")

    def call(self, *args):
        """The student's function applied to ``args``, as plain data."""
        import cloudpickle
        self.start()
        return self._request(cloudpickle.dumps(args), *self._limit())

    def _stop(self) -> None:
        if self._process is not None:
            if self.sandbox == "none":
                end_descendants(self._process.pid)  # under bwrap its process namespace dies with it
            try:
                os.killpg(self._process.pid, signal.SIGKILL)  # the session it leads: its children too
            except OSError:
                self._process.kill()
            self._process.wait()
            if self._process.stdin:
                with contextlib.suppress(OSError):
                    self._process.stdin.close()
            self._reply.close()
            self._process = None

    def close(self) -> None:
        """End the process (and, without a sandbox, every process it started) and remove its folder."""
        self._stop()
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
