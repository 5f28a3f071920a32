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
    """Inside this block :meth:`Registry.run` only reads: a stored entry is returned (even one made by
    other code: check :func:`code_changed` on its manifest), a missing one raises :class:`NotStoredError`.

    This is how a chapter built at ``quick`` shows the committed ``paper`` results beside its own without
    ever starting a paper-scale computation.
    """
    token = _STORED_ONLY.set(True)
    try:
        yield
    finally:
        _STORED_ONLY.reset(token)


def reading_stored_only() -> bool:
    """Whether the caller is inside :func:`stored_only` (:meth:`Registry.run` then never computes)."""
    return _STORED_ONLY.get()


def stored_at_scale(run, settings, *, scale: str = "paper", **kwargs) -> Result | None:
    """What ``run(settings at scale, **kwargs)`` has stored, or None; never computes.

    ``run`` is an experiment's ``run_*`` function. A chapter built at ``quick`` calls this to show the
    committed ``paper`` results beside its own (check ``code_changed(result.manifest)`` to mark a stale one).
    """
    with stored_only():
        try:
            return run(settings.with_(scale=validate_scale(scale)), **kwargs)
        except NotStoredError:
            return None


def stored_text(run, settings, pick, *, scale: str = "paper", **kwargs) -> str:
    """``pick(result)`` for what ``run`` has stored at ``scale`` (:func:`stored_at_scale`), for a chapter's
    paper-scale column: ``"not yet run at paper scale"`` when nothing is stored, and the text marked
    ``"(stale: made by other code)"`` when :func:`code_changed` says the code has changed since."""
    result = stored_at_scale(run, settings, scale=scale, **kwargs)
    if result is None:
        return f"not yet run at {scale} scale"
    return str(pick(result)) + (" (stale: made by other code)" if code_changed(result.manifest) else "")

