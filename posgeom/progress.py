"""Progress bars for long work, in one place.

``tqdm(...)`` here is :func:`tqdm.auto.tqdm` (a widget in Jupyter when ipywidgets is installed, a
text bar otherwise — without tqdm's "IProgress not found" warning), switched off when the
environment variable ``POSGEOM_PROGRESS`` is ``0``. The book's build sets it to ``0``: a static
page has no use for a progress bar that has already finished.
"""

from __future__ import annotations

import os
import warnings

from tqdm import TqdmWarning

# tqdm.auto warns "IProgress not found" when it is first imported in Jupyter without ipywidgets,
# then falls back to a text bar. Import it once here, quietly; later imports (ours, or those of
# datasets / transformers) reuse the module and do not warn again.
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
