"""Reading without computing: :func:`stored_only`, and what a ``run_*`` has stored at another scale."""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

from ..config import validate_scale
from .manifest import code_changed

if TYPE_CHECKING:
    from .store import Result

__all__ = ["NotStoredError", "stored_only", "reading_stored_only", "stored_at_scale", "stored_text"]


class NotStoredError(KeyError):
    """Raised by :meth:`Registry.run` inside :func:`stored_only` when the entry is not stored."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


#: True inside :func:`stored_only`: :meth:`Registry.run` reads and never computes.
_STORED_ONLY: ContextVar[bool] = ContextVar("posgeom_stored_only", default=False)


@contextmanager
def stored_only():
    """Inside this block :meth:`Registry.run` only reads: a stored entry is returned (even a stale one), a
    missing one raises :class:`NotStoredError`."""
    token = _STORED_ONLY.set(True)
    try:
        yield
    finally:
        _STORED_ONLY.reset(token)


def reading_stored_only() -> bool:
    """Whether the caller is inside :func:`stored_only`."""
    return _STORED_ONLY.get()


def stored_at_scale(run, settings, *, scale: str = "paper", **kwargs) -> Result | None:
    """What the experiment function ``run(settings at scale, **kwargs)`` has stored, or None; never computes."""
    with stored_only():
        try:
            return run(settings.with_(scale=validate_scale(scale)), **kwargs)
        except NotStoredError:
            return None


def stored_text(run, settings, pick, *, scale: str = "paper", **kwargs) -> str:
    """``pick(result)`` for what ``run`` has stored at ``scale``, marked when stale; a placeholder when absent."""
    result = stored_at_scale(run, settings, scale=scale, **kwargs)
    if result is None:
        return f"not yet run at {scale} scale"
    return str(pick(result)) + (" (stale: made by other code)" if code_changed(result.manifest) else "")
