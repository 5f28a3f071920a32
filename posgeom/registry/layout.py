"""What the registry's folders hold, shared by :mod:`~posgeom.registry.store` and :mod:`~posgeom.registry.check`:
the names every entry folder uses, and what a check reports about one."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["POINTER", "LOCK", "DamagedEntryError", "EntryStatus"]

#: The pointer file naming an entry's current version.
POINTER = "CURRENT"
#: The per-entry writer lock (:class:`posgeom.storage.FolderLock`).
LOCK = ".lock"


class DamagedEntryError(KeyError):
    """A stored entry whose files do not match its manifest (treated as absent; ``run`` recomputes it)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class EntryStatus:
    """What :meth:`Registry.check` found for one entry folder.

    ``status`` is ``"ok"``, ``"leftovers"`` (a verified entry beside leftovers of interrupted writes or
    replaced versions that a check without sweeping left in place), ``"stale"`` (made by other posgeom code),
    ``"damaged"`` (treated as absent), ``"incomplete"`` (only an interrupted write, no entry), ``"legacy"``
    (stored by a posgeom older than checksummed entries: no way to verify it, so treated as absent),
    ``"orphan"`` (left by an older posgeom) or ``"symlink"`` (a symbolic link where a scale, experiment or
    entry folder belongs: never followed, read or swept).
    """

    scale: str
    experiment: str
    key: str
    status: str
    detail: str
    path: Path
