"""Progress bars: ``tqdm.auto.tqdm`` without its "IProgress not found" warning, off when ``POSGEOM_PROGRESS=0``
(as the book's build sets it: a static page has no use for a finished bar)."""

from __future__ import annotations

import os
import warnings

from tqdm import TqdmWarning

# tqdm.auto warns once, at its first import in Jupyter without ipywidgets: import it here, quietly.
with warnings.catch_warnings():
    warnings.simplefilter("ignore", TqdmWarning)
    from tqdm.auto import tqdm as _auto_tqdm


def progress_enabled() -> bool:
    """False when ``POSGEOM_PROGRESS`` is ``0``, ``false``, ``no`` or ``off``."""
    return os.environ.get("POSGEOM_PROGRESS", "1").strip().lower() not in ("0", "false", "no", "off")


def tqdm(*args, **kwargs):
    """:func:`tqdm.auto.tqdm` with the same arguments, honouring ``POSGEOM_PROGRESS``."""
    if not progress_enabled():
        kwargs["disable"] = True
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TqdmWarning)
        return _auto_tqdm(*args, **kwargs)


__all__ = ["tqdm", "progress_enabled"]
