"""The results registry: every experiment's numbers, arrays and manifest on disk, verified on read.

Layout (one folder per result)::

    <results_dir>/<scale>/<experiment>/<key>/
        CURRENT                 # pointer: {"version": "v-<sha>", "manifest_sha256": ...}
        v-<sha>/                # one complete version, named after its manifest's sha256
            result.json         # the scalar results (JSON-serialisable dict)
            arrays.npz          # named numpy arrays (optional)
            manifest.json       # versions, git commit, the command as typed, seed, device, scale, model,
                                # runtime, params, and the sha256 of every other file of the version
        .lock                   # the per-entry writer lock (filelock)

``key`` is a short hash of the parameters. A writer builds a version folder, then replaces ``CURRENT`` in one
``os.replace``, so a reader sees the whole previous or the whole new result; reads verify every checksum and
treat a mismatch as absent (docs/ARCHITECTURE.md, "The results registry").
"""
from .manifest import (
    ALLOW_DIRTY_ENV, COMMAND_ENV, UncommittedChangesError, code_changed, command_line, git_commit, package_versions,
    params_key, require_committed, uncommitted_changes,
)
from .pending import GPU_SLICE, GPU_WORK_ENV, NeedsGPU, Pending, gpu_work_minutes
from .store import DamagedEntryError, EntryStatus, Registry, Result
from .stored import NotStoredError, stored_at_scale, stored_only, stored_text

__all__ = [
    "Registry", "Result", "EntryStatus", "DamagedEntryError", "NotStoredError", "stored_only", "stored_at_scale",
    "stored_text", "params_key", "package_versions", "git_commit", "code_changed", "command_line", "COMMAND_ENV",
    "ALLOW_DIRTY_ENV", "require_committed", "uncommitted_changes", "UncommittedChangesError", "NeedsGPU", "Pending",
    "gpu_work_minutes", "GPU_WORK_ENV", "GPU_SLICE",
]
