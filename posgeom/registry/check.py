"""``Registry.check``: verify every entry, sweep interrupted writes, report (never follow) every symbolic link."""

from __future__ import annotations

import os
from pathlib import Path

from ..storage import SymlinkError, fsync_dir, symlinks_below
from .manifest import code_changed
from .layout import LOCK, POINTER, DamagedEntryError, EntryStatus

__all__ = ["check_registry"]


def check_registry(registry: "Registry",  # noqa: F821 - posgeom.registry.store imports this module
                   *, sweep: bool = True, scale: str | None = None) -> list[EntryStatus]:
    """Verify every entry folder; with ``sweep=True`` remove, under each entry's lock, the leftovers of
    interrupted writes, replaced versions and the folder of an interrupted first write.

    Returns
    -------
    list of EntryStatus
        One per entry folder, in path order, then one per symbolic link (never followed) and per hidden
        folder of an older posgeom (``"orphan"``, never deleted: it may hold the only copy of a result).
    """
    folders = registry._entry_folders(scale=scale)
    parts = {link: link.relative_to(registry.root).parts
             for link in (symlinks_below(registry.root) if registry.root.is_dir() else ())}
    parts = {link: names for link, names in parts.items() if scale is None or names[0] == scale}
    held = {folder: [link for link in parts if folder in link.parents] for folder in folders}
    report = [_status(folder, *_check_entry(registry, folder, held[folder], sweep)) for folder in folders]
    # a link in place of a scale, experiment or entry folder
    in_place = [link for link, names in parts.items() if len(names) <= 3 and not any(n.startswith(".") for n in names)]
    for link in in_place:
        what = ("a scale", "an experiment", "an entry")[len(parts[link]) - 1]
        report.append(EntryStatus(*[*parts[link], "", ""][:3], "symlink", f"not a registry entry (symlink in place of "
                                  f"{what} folder): never followed, read or swept; delete the link or move the folder "
                                  "it points to in its place", link))
    reported = set(in_place).union(*held.values())
    for link, names in parts.items():
        if link not in reported:  # .checkpoints, a hidden folder's content, a file beside the entries, ...
            report.append(EntryStatus(names[0], names[1] if len(names) > 1 else "", "/".join(names[2:]), "symlink",
                                      "a symbolic link in the results folder: never followed (no command reads, "
                                      "writes or deletes through it); delete the link or move what it points to in "
                                      "its place", link))
    report += [_status(hidden, "orphan", "left by an interrupted write of an older posgeom; inspect it and delete it "
                                         "by hand") for hidden in registry._entry_folders(scale=scale, hidden=True)]
    return report


def _status(folder: Path, status: str, detail: str) -> EntryStatus:
    """The ``EntryStatus`` of the folder ``<scale>/<experiment>/<key>``."""
    return EntryStatus(folder.parent.parent.name, folder.parent.name, folder.name, status, detail, folder)


def _check_entry(registry: "Registry", folder: Path, links: list[Path], sweep: bool) -> tuple[str, str]:  # noqa: F821
    """``(status, detail)`` of one entry folder holding the symbolic ``links``, swept first with ``sweep``."""
    if links:
        names = ", ".join(str(link.relative_to(folder)) for link in links)
        return "symlink", (f"holds symbolic link(s) {names}: never followed (the entry is not locked, read or swept, "
                           "and a save to it is refused); delete the link(s)")
    swept: list[str] = []
    removed = False
    if sweep:
        try:
            lock = registry._lock(folder)
        except SymlinkError as err:  # a link planted since the scan: reported all the same
            return "symlink", f"{err}; the entry is not locked, read or swept"
        try:
            keep = registry._pointer_version(folder) if registry._verifies(folder) else None
            swept = registry._sweep(folder, keep=keep)
            removed = _remove_if_incomplete(folder)
        finally:
            lock.release()
    note = f"; removed {', '.join(sorted(swept))}" if swept else ""
    if removed:
        return "incomplete", "no entry: only an interrupted first write; removed its folder" + note
    try:
        result = registry._read(folder)
    except DamagedEntryError as err:
        return "legacy" if "older posgeom" in str(err) else "damaged", str(err) + note
    except KeyError:
        leftovers = [c.name for c in folder.iterdir() if c.name != LOCK]
        detail = "no entry: only an interrupted write" if leftovers or swept else "no entry"
        if not sweep and all(registry._is_interrupted(folder / c) for c in leftovers):
            detail += " (run without --no-sweep to remove it)"
        return "incomplete", detail + note
    left = [] if sweep else [c.name for c in registry._leftovers(folder, keep=result.path.name)]
    if left:
        note += (f"; leftovers of interrupted writes or replaced versions: {', '.join(left)} "
                 "(run without --no-sweep to remove them)")
    if code_changed(result.manifest):
        return "stale", (f"made by other code (code key {result.manifest.get('code_key')} of "
                         f"{', '.join(result.manifest.get('code_modules') or ['?'])[:120]} no longer matches); "
                         "run reuses it only with same_code=False" + note)
    return ("leftovers" if left else "ok"), "verified" + note


def _remove_if_incomplete(folder: Path) -> bool:
    """Remove the folder of a swept first write that never wrote its pointer (under the entry's lock)."""
    if os.path.lexists(folder / POINTER) or any(c.name != LOCK for c in folder.iterdir()):
        return False
    (folder / LOCK).unlink(missing_ok=True)
    folder.rmdir()
    fsync_dir(folder.parent)
    return True

