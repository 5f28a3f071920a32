r"""Where a student's function runs while it is graded: a separate Python process that cannot reach the answer.

The grader (:mod:`posgeom.classroom.grading`) never runs student code in its own process. It starts
:class:`Answerer`, a child Python process in a fresh temporary folder, hands it the student's function
(pickled by value from the student's kernel) and then only asks it for answers: the hidden case's
arguments go in, the function's return value comes back as plain data (numbers, strings, arrays of
numbers, lists, tuples, dicts) and the check's comparison with its oracle happens in the grader. What
the child prints goes nowhere, so no line it writes can be taken for a grade.

Inside the child, and every Python process it starts (the blocker is installed by a ``sitecustomize``
module on its ``PYTHONPATH``, which children inherit):

* :mod:`posgeom.checks` (the hidden cases and the oracles) cannot be imported;
* the posgeom functions the exercise is about are blocked: each time a posgeom module is executed (its
  first import, an ``importlib.reload``) the blocked functions it defines or re-exports have their code
  swapped for one that raises, so a private module, a re-export, ``posgeom.<name>``, a reference taken
  earlier or a function rebuilt from the code object all raise;
* the address space is limited (``resource.setrlimit``, where the platform has it);
* under bubblewrap (:func:`resolve_sandbox` chooses it when ``bwrap`` works here), the whole file
  system is read-only except the child's own working folder (and a private ``/tmp``), no capability is
  kept (so nothing can be remounted writable, even as root), other processes are out of sight (its own
  process-ID namespace) and there is no network. :func:`confined_command` builds the same confinement
  for the submission's kernel in :mod:`posgeom.classroom.grading` (which keeps the network: the kernel
  talks to the grader over local ZMQ ports).

What it cannot stop: a student who copies the library's source text into their own function, or starts
a Python without ``site`` (``python -S``/``-I``) with the source on its path. The hidden cases live in an
open package too; the teaching page says so.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import select
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

__all__ = ["Answerer", "StudentError", "SANDBOXES", "confined_command", "confined_environment", "bwrap_works",
           "resolve_sandbox", "encode_answer", "decode_answer", "serve"]

#: Environment variables read by the child's ``sitecustomize``.
BLOCK_ENV = "POSGEOM_GRADING_BLOCK"
REPLY_FD_ENV = "POSGEOM_GRADING_REPLY_FD"
MEMORY_ENV = "POSGEOM_GRADING_MEMORY_MB"
_BLOCKED_MARK = "posgeom-grading:"
#: Seconds allowed for the child to start and load the function (not counted in the per-call limit).
_START_TIMEOUT_S = 300.0

#: The child's ``sitecustomize``: the import blocker (standard library only, so it runs before anything).
SITECUSTOMIZE = r'''
import importlib.abc, json, os, sys, types

_BLOCKED = set(json.loads(os.environ.get("POSGEOM_GRADING_BLOCK", "[]")))
_CLOSED = ("posgeom.checks",)


def _blocked_body(*args, **kwargs):
    raise PermissionError("posgeom-grading: this posgeom function is blocked while your work is graded: "
                          "the exercise asks you to compute it yourself")


def _is_blocked(value):
    return isinstance(value, types.FunctionType) and (
        f"{getattr(value, '__module__', '')}:{getattr(value, '__qualname__', '')}" in _BLOCKED)


def _block(owner, name, value):
    for f in (value, getattr(value, "__wrapped__", None)):
        if isinstance(f, types.FunctionType) and not f.__code__.co_freevars:
            f.__code__ = _blocked_body.__code__
    if value.__code__ is not _blocked_body.__code__:  # a closure: its code cannot be swapped
        setattr(owner, name, _blocked_body)


def _scrub(module):
    for name, value in list(vars(module).items()):
        if _is_blocked(value):
            _block(module, name, value)
        elif isinstance(value, type) and getattr(value, "__module__", "") == module.__name__:
            for attr, member in list(vars(value).items()):
                member = getattr(member, "__func__", member)
                if _is_blocked(member):
                    _block(value, attr, member)


class _Loader(importlib.abc.Loader):
    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        self._loader.exec_module(module)
        _scrub(module)

    def __getattr__(self, name):
        return getattr(self._loader, name)


class _Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == c or name.startswith(c + ".") for c in _CLOSED):
            raise ImportError(f"{name} cannot be imported while your work is graded")
        if not (name == "posgeom" or name.startswith("posgeom.")):
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader)
                return spec
        return None


for _name in [n for n in sys.modules if n == "posgeom" or n.startswith("posgeom.")]:
    del sys.modules[_name]
sys.meta_path.insert(0, _Blocker())
'''

_SERVER = "from posgeom.classroom.sandbox import serve; serve()"


class StudentError(Exception):
    """An exception raised by the student's function (its type name is the class name of a subclass)."""


def _limit_memory() -> None:
    megabytes = os.environ.get(MEMORY_ENV)
    if not megabytes:
        return
    try:
        import resource
    except ImportError:  # not on this platform
        return
    limit = int(megabytes) * 1024 * 1024
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ValueError, OSError):  # a lower hard limit is in force already
        pass


# -- confinement under bubblewrap ------------------------------------------------------------------------

#: The values of ``posgeom classroom grade --sandbox``.
SANDBOXES = ("auto", "bwrap", "none")
NOT_CONFINED = ("bubblewrap (bwrap) cannot run here, so code naming absolute paths is not confined: it can "
                "change any file the grader can (use --sandbox bwrap to require it; apt-get install bubblewrap)")


def _needed_paths() -> list[str]:
    """Folders the confined Python must still read: the interpreter, its packages, posgeom, the caches."""
    import posgeom

    paths = [sys.prefix, sys.base_prefix, sys.executable, str(Path(posgeom.__file__).parents[1])]
    paths += [p for p in sys.path if p]
    paths += [os.environ[v] for v in ("PYTHONPATH", "HF_HOME", "XDG_CACHE_HOME", "POSGEOM_CACHE_DIR",
                                      "POSGEOM_DATA_DIR") if os.environ.get(v)]
    return [os.path.realpath(p) for path in paths for p in path.split(os.pathsep) if p]


def _private_tmp() -> bool:
    """Whether ``/tmp`` can be swapped for an empty one (hiding the other sandboxes in it): only when
    nothing the confined Python needs lives there."""
    tmp = os.path.realpath("/tmp")
    return not any(p == tmp or p.startswith(tmp + os.sep) for p in _needed_paths())


def confined_command(command: list[str], writable: list[str | Path], *, cwd: str | Path, readable=(),
                     network: bool = True, unset=()) -> list[str]:
    """``command`` run under bubblewrap: read-only everywhere except the ``writable`` folders.

    Also: a private ``/dev`` and ``/tmp`` (when nothing needed lives in ``/tmp``; ``readable`` folders
    are bound back read-only), its own process-ID namespace (other processes cannot be seen or
    signalled; the whole tree dies with its parent), no capabilities (root cannot remount anything),
    no network unless ``network``, and the environment variables ``unset`` removed.
    """
    args = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    if _private_tmp():
        args += ["--tmpfs", "/tmp"]
    for folder in readable:
        args += ["--ro-bind", os.path.realpath(folder), os.path.realpath(folder)]
    for folder in writable:
        args += ["--bind", os.path.realpath(folder), os.path.realpath(folder)]
    args += ["--unshare-pid", "--unshare-ipc", "--die-with-parent", "--cap-drop", "ALL"]
    if not network:
        args += ["--unshare-net"]
    for name in unset:
        args += ["--unsetenv", name]
    return args + ["--chdir", os.path.realpath(cwd), "--", *command]


def confined_environment(env: dict, home: str | Path) -> dict:
    """``env`` with the places programs write to by default (home, temporary files, IPython, matplotlib,
    numba) moved into the writable ``home``; the caches stay where they are, readable only."""
    home = Path(home)
    for sub in ("tmp", ".config", ".ipython", ".matplotlib", ".numba"):
        (home / sub).mkdir(parents=True, exist_ok=True)
    env = dict(env)
    env.setdefault("XDG_CACHE_HOME", str(Path.home() / ".cache"))  # keep reading the caches (data, models)
    env.update({"HOME": str(home), "TMPDIR": str(home / "tmp"), "XDG_CONFIG_HOME": str(home / ".config"),
                "IPYTHONDIR": str(home / ".ipython"), "MPLCONFIGDIR": str(home / ".matplotlib"),
                "NUMBA_CACHE_DIR": str(home / ".numba")})
    return env


@functools.lru_cache(maxsize=None)
def bwrap_works() -> bool:
    """Whether bubblewrap can confine a process here (it is installed and the kernel lets it)."""
    if shutil.which("bwrap") is None:
        return False
    with tempfile.TemporaryDirectory(prefix="posgeom-probe-") as folder:
        probe = confined_command([sys.executable, "-c", "open('probe', 'w').write('ok')"], [folder], cwd=folder,
                                 network=False)
        try:
            done = subprocess.run(probe, capture_output=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return False
        return done.returncode == 0 and (Path(folder) / "probe").read_text() == "ok"


def resolve_sandbox(sandbox: str = "auto") -> str:
    """``"bwrap"`` or ``"none"`` for ``--sandbox`` ``auto``, ``bwrap`` or ``none`` (see :data:`SANDBOXES`).

    ``auto`` is ``bwrap`` where :func:`bwrap_works`, else ``none`` (the caller warns with
    :data:`NOT_CONFINED`); ``bwrap`` where it does not work is an error saying how to install it.
    """
    if sandbox not in SANDBOXES:
        raise ValueError(f"unknown sandbox {sandbox!r}; choose one of {', '.join(SANDBOXES)}")
    if sandbox == "none":
        return "none"
    if bwrap_works():
        return "bwrap"
    if sandbox == "bwrap":
        raise ValueError("--sandbox bwrap: bubblewrap (bwrap) is not installed or cannot create a sandbox here; "
                           "install it (apt-get install bubblewrap) or grade with --sandbox none")
    return "none"


# -- answers as plain data (the only thing the grader accepts back) ------------------------------------

_MAX_DEPTH = 8


def encode_answer(value, depth: int = 0):
    """A return value as JSON-able data: numbers, strings, None, numeric arrays, lists, tuples, dicts."""
    if depth > _MAX_DEPTH:
        raise TypeError("the answer is nested too deeply")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor
        value = value.detach().cpu().numpy()
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in "biufc":
            raise TypeError(f"the answer is an array of {value.dtype}, not of numbers")
        array = np.ascontiguousarray(value)
        return {"__array__": array.dtype.str, "shape": list(array.shape),
                "data": base64.b64encode(array.tobytes()).decode("ascii")}
    if isinstance(value, tuple):
        return {"__tuple__": [encode_answer(v, depth + 1) for v in value]}
    if isinstance(value, list):
        return [encode_answer(v, depth + 1) for v in value]
    if isinstance(value, dict):
        return {"__dict__": [[encode_answer(k, depth + 1), encode_answer(v, depth + 1)] for k, v in value.items()]}
    raise TypeError(f"the answer is a {type(value).__name__}; return numbers or arrays")


def decode_answer(data, depth: int = 0):
    """The inverse of :func:`encode_answer`, accepting nothing else (no code, no objects)."""
    if depth > _MAX_DEPTH:
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


# -- the child ------------------------------------------------------------------------------------------

def _read_message(stream) -> bytes | None:
    head = stream.read(4)
    if len(head) < 4:
        return None
    (size,) = struct.unpack(">I", head)
    return stream.read(size)


def serve() -> None:
    """The child's loop: load the student's function, then answer calls until stdin closes.

    Requests (from the grader, on stdin) are pickles; replies (on the file descriptor named by
    ``POSGEOM_GRADING_REPLY_FD``) are JSON. The child's own stdout and stderr go nowhere the grader reads.
    """
    import pickle

    _limit_memory()
    reply = os.fdopen(int(os.environ[REPLY_FD_ENV]), "wb", buffering=0)
    requests = sys.stdin.buffer
    function = None
    while True:
        message = _read_message(requests)
        if message is None:
            return
        request = pickle.loads(message)  # from the grader: trusted
        try:
            if request["op"] == "load":
                function = pickle.loads(request["function"])  # the student's function, by value
                answer = {"ok": None}
            else:
                answer = {"ok": encode_answer(function(*request["args"]))}
        except BaseException as err:  # noqa: BLE001 - every failure of student code is an answer
            text = str(err)
            answer = {"error": type(err).__name__, "message": text[:500],
                      "blocked": isinstance(err, PermissionError) and text.startswith(_BLOCKED_MARK)}
        data = json.dumps(answer).encode()
        reply.write(struct.pack(">I", len(data)) + data)


class Answerer:
    """A child process holding one student function; :meth:`call` returns its answer as plain data.

    Parameters
    ----------
    function : bytes
        The student's function, pickled by value (cloudpickle) in their kernel.
    blocked : iterable of str
        ``"module:qualname"`` of the posgeom functions blocked in the child (and its children).
    timeout : float
        Seconds one call may take; past it the child is ended and the call raises ``TimeoutError``.
    memory_mb : int, optional
        Address-space limit of the child, in MiB.
    confine : bool
        Run the child under bubblewrap (:func:`confined_command`: only its working folder writable, no
        network); :func:`resolve_sandbox` says whether it can.
    """

    def __init__(self, function: bytes, blocked=(), *, timeout: float = 60.0, memory_mb: int | None = None,
                 confine: bool = False):
        self._function, self._blocked = function, sorted(blocked)
        self.timeout, self.memory_mb, self.confine = float(timeout), memory_mb, bool(confine)
        self._folder = tempfile.TemporaryDirectory(prefix="posgeom-answer-")
        self._process = None

    def _start(self) -> None:
        import pickle

        site = Path(self._folder.name) / "site"
        work = Path(self._folder.name) / "work"
        site.mkdir(parents=True, exist_ok=True)
        work.mkdir(parents=True, exist_ok=True)
        (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
        read_fd, write_fd = os.pipe()
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(site)] + [p for p in [env.get("PYTHONPATH", "")] if p])
        env[BLOCK_ENV] = json.dumps(self._blocked)
        env[REPLY_FD_ENV] = str(write_fd)
        if self.memory_mb:
            env[MEMORY_ENV] = str(int(self.memory_mb))
        env.pop("PYTHONSAFEPATH", None)
        command = [sys.executable, "-c", _SERVER]
        if self.confine:  # the blocker in site/ stays read-only: only work/ can be written
            command = confined_command(command, [work], cwd=work, readable=[site], network=False)
            env = confined_environment(env, work / "home")
        # a new session: no controlling terminal to type into the grader's shell through
        self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                         stderr=subprocess.DEVNULL, cwd=work, env=env, pass_fds=(write_fd,),
                                         start_new_session=True)
        os.close(write_fd)
        self._reply = os.fdopen(read_fd, "rb", buffering=0)
        # starting Python and unpickling (imports included) is not the student's time
        self._request({"op": "load", "function": self._function}, pickle, timeout=max(self.timeout, _START_TIMEOUT_S))

    def _request(self, request: dict, pickle_module, timeout: float | None = None):
        data = pickle_module.dumps(request)
        try:
            self._process.stdin.write(struct.pack(">I", len(data)) + data)
            self._process.stdin.flush()
        except (BrokenPipeError, OSError):
            return self._ended()
        answer = self._read_reply(self.timeout if timeout is None else timeout)
        if "error" in answer:
            if answer.get("blocked"):
                from ..checks.core import PackageFunctionSwitchedOff  # the grader's side only

                raise PackageFunctionSwitchedOff(answer["message"][len(_BLOCKED_MARK):].strip())
            if answer["error"] == "NotImplementedError":
                raise NotImplementedError(answer["message"])
            raise type(str(answer["error"])[:60] or "Error", (StudentError,), {})(answer["message"])
        return decode_answer(answer["ok"])

    def _read_exactly(self, size: int, deadline: float, timeout: float) -> bytes:
        import time

        chunks, left = [], size
        while left:
            wait = deadline - time.monotonic()
            ready, _, _ = select.select([self._reply], [], [], max(wait, 0.0))
            if not ready:
                self._stop()
                raise TimeoutError(f"it ran longer than {timeout:g} s")
            chunk = self._reply.read(left)
            if not chunk:
                return self._ended()
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _read_reply(self, timeout: float) -> dict:
        import time

        deadline = time.monotonic() + timeout
        (size,) = struct.unpack(">I", self._read_exactly(4, deadline, timeout))
        return json.loads(self._read_exactly(size, deadline, timeout))

    def _ended(self):
        code = self._process.wait() if self._process is not None else None
        self._stop()
        reason = "ran out of memory or was killed" if code is not None and code < 0 else f"exited with status {code}"
        raise RuntimeError(f"the process running your function ended ({reason})")

    def call(self, *args):
        """The student's function applied to ``args``, as plain data."""
        import cloudpickle

        if self._process is None:
            self._start()
        return self._request({"op": "call", "args": args}, cloudpickle)

    def _stop(self) -> None:
        if self._process is not None:
            if self._process.poll() is None:
                self._process.kill()
            self._process.wait()
            if self._process.stdin:
                self._process.stdin.close()
            self._reply.close()
            self._process = None

    def close(self) -> None:
        """End the child and remove its folder."""
        self._stop()
        self._folder.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
