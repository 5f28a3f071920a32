"""The names an entry folder uses and what a check reports about one (shared by ``store`` and ``check``)."""

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

    ``status``: ``"ok"``, ``"leftovers"`` (verified, beside leftovers a check without sweeping kept),
    ``"stale"`` (made by other code), ``"damaged"``, ``"incomplete"`` (only an interrupted write), ``"legacy"``
    (unverifiable pre-checksum entry), ``"orphan"`` (left by an older posgeom) or ``"symlink"`` (never followed).
    """

    scale: str
    experiment: str
    key: str
    status: str
    detail: str
    path: Path
