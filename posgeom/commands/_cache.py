"""The corpora caches as the counting commands use them: never through a symbolic link, never written by a
command that fails.

A link in a cache folder is reported and the command then runs without that cache. The guard stands here,
not in the cache's own modules, because those are part of the committed results' code key.
"""

from __future__ import annotations

import functools
import warnings
from contextlib import ExitStack, contextmanager
from pathlib import Path

__all__ = ["CACHE_KINDS", "cache_folders", "usable_cache", "writes_only_on_success", "on_success"]

#: The cache folders under ``posgeom.config.default_cache_dir()``: counted corpora, and a sharded corpus's shards.
CACHE_KINDS = ("corpora", "shards")


def cache_folders(cache_dir: str | Path | None = None) -> list[Path]:
    """``cache_dir`` when given, else each of :data:`CACHE_KINDS` under the posgeom cache."""
    from ..config import default_cache_dir
    if cache_dir is not None:
        return [Path(cache_dir).expanduser()]
    return [default_cache_dir() / kind for kind in CACHE_KINDS]


def usable_cache(folders: list[Path]) -> bool:
    """False, with one warning per link, when a symbolic link stands in (or is one of) ``folders``."""
    from ..storage import is_symlink, symlinks_below
    links = [link for folder in folders for link in ([folder] if is_symlink(folder) else symlinks_below(folder))]
    for link in links:
        warnings.warn(
            f"{link} in the cache is a symbolic link: never followed, so this run neither reads nor writes the "
            "cache; delete the link to use the cache again", stacklevel=2)
    return not links


@contextmanager
def writes_only_on_success(folders: list[Path]):
    """Hold back every cache write under ``folders`` until the block succeeds (then they are made)."""
    from ..storage import deferred_writes
    with ExitStack() as stack:
        for folder in folders:
            stack.enter_context(deferred_writes(folder))
        yield


def on_success(handler):
    """``handler`` with the writes it makes to the corpora caches held back until it succeeds."""

    @functools.wraps(handler)
    def run(args) -> int:
        with writes_only_on_success(cache_folders()):
            return handler(args)

    return run
