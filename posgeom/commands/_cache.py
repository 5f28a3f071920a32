"""The corpora caches as the commands that count a corpus use them (``counts``, ``corpus-report``, ``stress``,
``diagnose``): never through a symbolic link, and never written by a command that fails.

A symbolic link in a cache folder (an entry, a temporary name, the folder of one cache kind) is reported,
one warning line each, and the command then neither reads nor writes that cache: nothing is opened,
replaced or deleted through the link, and the answer is computed afresh. The cache's own modules
(:mod:`posgeom.corpora.cache`, :mod:`posgeom.corpora.stats`) are part of the committed results' code key,
so the guard stands here, before they are called. The writes a command makes to a cache are held back
until it succeeds (:func:`posgeom.storage.deferred_writes`): a command that counts a corpus and then
refuses it (no text in it, no position reached ``--min-count`` times) leaves no cache entry behind.
"""

from __future__ import annotations

import warnings
from contextlib import ExitStack, contextmanager
from pathlib import Path

__all__ = ["CACHE_KINDS", "cache_folders", "usable_cache", "writes_only_on_success"]

#: The cache folders under ``posgeom.config.default_cache_dir()``: counted corpora, and a sharded corpus's shards.
CACHE_KINDS = ("corpora", "shards")


def cache_folders(cache_dir: str | Path | None = None) -> list[Path]:
    """The folders a counting command may read and write: ``cache_dir`` when given, else each of
    :data:`CACHE_KINDS` under the posgeom cache (``POSGEOM_CACHE_DIR``, else the user's cache folder)."""
    from ..config import default_cache_dir

    if cache_dir is not None:
        return [Path(cache_dir).expanduser()]
    base = default_cache_dir()
    return [base / kind for kind in CACHE_KINDS]


def usable_cache(folders: list[Path]) -> bool:
    """False, with one warning line per link, when a symbolic link stands in ``folders`` (or is one of
    them): the command then runs without its cache. True otherwise."""
    from ..storage import is_symlink, symlinks_below

    links = [link for folder in folders for link in ([folder] if is_symlink(folder) else symlinks_below(folder))]
    for link in links:
        warnings.warn(
            f"{link} in the cache is a symbolic link: never followed, so this run neither reads nor writes the "
            "cache; delete the link to use the cache again", stacklevel=2,
        )
    return not links


@contextmanager
def writes_only_on_success(folders: list[Path]):
    """Hold back every cache write under ``folders`` until the block succeeds (then they are made)."""
    from ..storage import deferred_writes

    with ExitStack() as stack:
        for folder in folders:
            stack.enter_context(deferred_writes(folder))
        yield
