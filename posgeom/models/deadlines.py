"""Deadlines and ``SIGTERM``: when :func:`posgeom.models.training.train` saves its state and stops.

A deadline is the earliest of the active :func:`deadline` blocks and ``POSGEOM_DEADLINE`` (set by
``posgeom reproduce --budget``). Training stops before a step that, with a save, would not end by then.
"""

from __future__ import annotations

import math
import os
import signal
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

#: Environment variable: a UNIX time by which :func:`~posgeom.models.training.train` saves its state and stops
#: (see :func:`deadline`).
DEADLINE_ENV = "POSGEOM_DEADLINE"


class TrainingInterrupted(RuntimeError):
    """Training stopped at a deadline or on ``SIGTERM`` after saving its state; call again to continue.

    Attributes
    ----------
    steps_done, total_steps : int
    reason : str
        ``"deadline"`` or ``"SIGTERM"``.
    checkpoint : pathlib.Path or None
        The saved state (None when nothing had been trained yet).
    """

    def __init__(self, steps_done: int, total_steps: int, reason: str, checkpoint: Path | None):
        self.steps_done, self.total_steps, self.reason, self.checkpoint = steps_done, total_steps, reason, checkpoint
        where = f"its state is saved in {checkpoint}" if checkpoint is not None else "nothing was trained yet"
        super().__init__(
            f"training stopped at step {steps_done} of {total_steps} ({reason}); {where}: "
            "call again with the same arguments to continue"
        )


_DEADLINES: list[float] = []
#: The clock deadlines are compared with (:func:`deadline_clock` replaces it; tests move time with it).
_now = time.time


@contextmanager
def deadline_clock(now: Callable[[], float]) -> Iterator[None]:
    """Within the block, deadlines are compared with ``now()`` instead of ``time.time()`` (tests count steps).

    Examples
    --------
    >>> steps = [0]
    >>> with deadline_clock(lambda: 1_000.0 + 60.0 * steps[0]):   # one minute per step
    ...     with deadline(seconds=300):                             # stops after about five steps
    ...         pass
    """
    global _now
    previous, _now = _now, now
    try:
        yield
    finally:
        _now = previous


def _env_deadline() -> float | None:
    raw = os.environ.get(DEADLINE_ENV, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{DEADLINE_ENV}={raw!r} is not a UNIX time in seconds; set it to e.g. "
                         f"$(( $(date +%s) + 540 )), or unset it") from None
    if not math.isfinite(value):
        raise ValueError(f"{DEADLINE_ENV}={raw!r} is not a finite UNIX time; set a number of seconds since 1970")
    return value


def current_deadline() -> float | None:
    """The UNIX time by which training stops, or None when no deadline is set."""
    times = [*_DEADLINES, *([d] if (d := _env_deadline()) is not None else [])]
    return min(times) if times else None


@contextmanager
def deadline(at: float | None = None, *, seconds: float | None = None) -> Iterator[float]:
    """Within the block, training saves and raises :class:`TrainingInterrupted` rather than run past the deadline.

    ``at`` is a UNIX time, ``seconds`` counts from now; nested blocks and ``POSGEOM_DEADLINE`` combine.

    Examples
    --------
    >>> with deadline(seconds=540):          # doctest: +SKIP
    ...     run_separation(settings)
    """
    if (at is None) == (seconds is None):
        raise ValueError("give the deadline as at= (a UNIX time) or seconds= (from now), one of the two")
    value = float(at) if at is not None else _now() + float(seconds)
    if not math.isfinite(value):
        raise ValueError(f"the deadline must be a finite time, got {value!r}")
    _DEADLINES.append(value)
    try:
        yield value
    finally:
        _DEADLINES.remove(value)


class StopSignal:
    """Turns SIGTERM into a flag read between steps (main thread only; the old handler is restored)."""

    def __init__(self):
        self.received = False
        self._old = None

    def __enter__(self):
        if threading.current_thread() is threading.main_thread() and hasattr(signal, "SIGTERM"):
            try:
                self._old = signal.signal(signal.SIGTERM, self._handle)
            except (ValueError, OSError):
                self._old = None
        return self

    def _handle(self, signum, frame):
        self.received = True

    def __exit__(self, *exc):
        if self._old is not None:
            signal.signal(signal.SIGTERM, self._old)
        return False


def would_pass(stop_at: float, seconds: float) -> bool:
    """Whether work of ``seconds`` started now would end at or after the UNIX time ``stop_at``."""
    return _now() + seconds >= stop_at


__all__ = ["DEADLINE_ENV", "TrainingInterrupted", "current_deadline", "deadline", "deadline_clock", "StopSignal",
           "would_pass"]
