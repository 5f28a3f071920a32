r"""The grader's worker: decide one exercise of one submission, in a process of its own under a memory limit.

It reads a JSON request on stdin and writes the decision on stdout; it adopts every orphan below it (so that
with ``--sandbox none`` nothing a submission started outlives the exercise) and runs the check in grading
mode against an :class:`~posgeom.classroom.sandbox.Answerer`.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from importlib import import_module

__all__ = ["decide", "main"]

#: Address space the worker needs for itself (torch and the checks' oracles), in MiB, at least.
WORKER_MEMORY_MB = 2048


def _limit_memory(memory_mb: int | None) -> None:
    if not memory_mb:
        return
    try:
        import resource
    except ImportError:  # not on this platform
        return
    limit = max(int(memory_mb), WORKER_MEMORY_MB) * 2**20
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def _load_problem(err: BaseException) -> str:
    """What to tell a student whose definitions could not run."""
    text = f"{type(err).__name__}: {err}"
    if type(err).__name__ in ("ModuleNotFoundError", "ImportError") and "posgeom" in str(err):
        return (f"your code could not run ({text}): posgeom is not available while your work is graded; "
                "the exercise asks you to compute it yourself, with NumPy")
    if isinstance(err, TimeoutError):
        return f"your definitions did not finish running ({err})"
    return f"your code could not run ({text})"


def decide(request: dict) -> dict:
    """Check one exercise; return ``{"score", "message"}``. ``request`` holds ``check``, ``source``, ``function``,
    ``timeout``, ``seconds_left``, ``memory_mb``, ``sandbox``, ``seed`` (None: practice), ``weights``, ``output``."""
    import time
    import cloudpickle
    import posgeom
    from ..checks.core import grading
    from .sandbox import Answerer
    module, _, name = request["check"].partition(":")
    if not module.startswith("posgeom.checks."):
        raise ValueError(f"the key names the check {request['check']!r}, which is not in posgeom.checks; "
                         "rebuild the key with posgeom classroom build")
    check = getattr(import_module(module), name)
    # a case may hold a posgeom object (a model): it travels by value, for posgeom is not where it answers
    cloudpickle.register_pickle_by_value(posgeom)
    deadline = time.monotonic() + float(request["seconds_left"])
    with Answerer(request["source"], request["function"], timeout=request["timeout"], memory_mb=request["memory_mb"],
                  sandbox=request["sandbox"], output=request.get("output"), deadline=deadline) as child:
        try:
            child.start()
        except Exception as err:  # noqa: BLE001 - the student's definitions failing is this exercise's verdict
            return {"score": 0.0, "message": _load_problem(err)}
        seed = request.get("seed")
        context = grading(seed, request.get("weights")) if seed is not None else contextlib.nullcontext()
        with context, contextlib.redirect_stdout(io.StringIO()):
            try:
                verdict = check(child.call)
            except Exception as err:  # noqa: BLE001 - a check that cannot run is a verdict for this exercise
                return {"score": 0.0, "message": f"the check could not run: {type(err).__name__}: {err}"}
    return {"score": float(verdict.score), "message": verdict.message}


def main() -> None:
    """Read a request on stdin, write the decision on stdout."""
    from .sandbox import become_subreaper, end_descendants
    request = json.loads(sys.stdin.read())
    _limit_memory(request.get("memory_mb"))
    become_subreaper()
    out = sys.stdout
    try:
        decision = decide(request)
    finally:
        end_descendants()
    out.write(json.dumps(decision))
    out.flush()
