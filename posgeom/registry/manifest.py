"""What a registry entry records about how it was made: parameters key, versions, git commit, command, code key.

Committed provenance holds no machine path (:func:`command_line`) and no unreproducible commit
(:func:`require_committed`).
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shlex
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from ..codekey import code_key, package_root

__all__ = [
    "canonical", "params_key", "package_versions", "code_changed", "git_commit", "command_line", "COMMAND_ENV",
    "ALLOW_DIRTY_ENV", "SOURCE_FOLDERS", "uncommitted_changes", "require_committed", "UncommittedChangesError",
]

#: The command that started a run, as typed; ``posgeom reproduce`` sets it for the kernels it starts.
COMMAND_ENV = "POSGEOM_COMMAND"
#: ``1`` lets a checkout with uncommitted changes write paper-scale results (with a ``+dirty`` commit).
ALLOW_DIRTY_ENV = "POSGEOM_ALLOW_DIRTY"
#: The checkout's folders whose uncommitted changes make a result unreproducible from its commit.
SOURCE_FOLDERS = ("posgeom", "notebooks")
#: Seconds a git command may take (a limit a loaded machine does not reach; it only guards a hung git).
_GIT_TIMEOUT_S = 600
#: An absolute path inside a word (POSIX, home-relative or Windows), for :func:`command_line`.
_SEPARATOR = re.compile(r"[/\\]")
_ABSOLUTE = re.compile(r"(?:(?<=^)|(?<=[\s=:,\"'(]))(?:~|[A-Za-z]:)?[/\\][^\s=,\"')]*")

_VERSION_PACKAGES = ("numpy", "scipy", "scikit-learn", "torch", "transformers", "tokenizers", "datasets", "matplotlib")


def canonical(obj: Any) -> Any:
    """Turn params into something ``json.dumps(sort_keys=True)`` writes the same way every time."""
    if isinstance(obj, Mapping):
        return {str(k): canonical(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [canonical(v) for v in obj]
    if isinstance(obj, (Path, str)):
        return str(obj)  # an identifier (a StrEnum member) is recorded as its text
    if isinstance(obj, (np.integer, np.floating)):
        return obj.item()
    if isinstance(obj, (int, float, bool)) or obj is None:
        return obj
    raise TypeError(f"parameter value {obj!r} of type {type(obj).__name__} cannot be recorded; use strings, "
                    "numbers, booleans, None, lists or dicts of those")


def params_key(params: Mapping[str, Any]) -> str:
    """A 16-hex-digit hash of the parameters (order of keys does not matter)."""
    text = json.dumps(canonical(params), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def package_versions() -> dict[str, str]:
    """Versions of Python, posgeom and the scientific stack (``"absent"`` when not installed)."""
    versions = {"python": platform.python_version(), "platform": platform.platform()}
    for name in ("posgeom", *_VERSION_PACKAGES):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "absent"
    return versions


def code_changed(manifest: Mapping[str, Any]) -> bool:
    """Whether the code key of the entry's ``code_modules`` differs from the recorded one (or none was recorded)."""
    stored, roots = manifest.get("code_key"), manifest.get("code_modules")
    if not stored or roots is None:
        return True
    if not roots:  # saved with code=(): a record that depends on no code (how a chapter run went)
        return False
    try:
        return code_key(roots) != stored
    except ValueError:  # a module that no longer exists
        return True


def _git(checkout: Path, *args: str) -> str | None:
    """``git args`` in ``checkout``: its output, or None when git fails or is missing."""
    try:
        done = subprocess.run(["git", *args], cwd=checkout, capture_output=True, text=True, timeout=_GIT_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def _checkout(path: Path | None) -> Path | None:
    """The git checkout holding the posgeom package (or ``path``); None for an installed copy or without git."""
    start = Path(path) if path is not None else package_root().parent
    top = _git(start if start.is_dir() else start.parent, "rev-parse", "--show-toplevel")
    if top is None:
        return None
    top_path = Path(top.strip()).resolve()
    if path is None and top_path != package_root().parent.resolve():
        return None  # posgeom installed inside another repository (a venv in it): not this package's checkout
    return top_path


def uncommitted_changes(path: Path | None = None) -> list[str] | None:
    """The ``git status --porcelain`` lines of ``SOURCE_FOLDERS`` in the package's checkout (or ``path``'s);
    None when there is no checkout."""
    checkout = _checkout(path)
    if checkout is None:
        return None
    status = _git(checkout, "status", "--porcelain", "--untracked-files=normal", "--", *SOURCE_FOLDERS)
    return None if status is None else [line.strip() for line in status.splitlines() if line.strip()]


def git_commit(path: Path | None = None) -> str | None:
    """The commit of the package's checkout (or ``path``'s), ``+dirty`` with uncommitted changes; None outside git."""
    checkout = _checkout(path)
    head = None if checkout is None else _git(checkout, "rev-parse", "HEAD")
    return None if head is None else head.strip() + ("+dirty" if uncommitted_changes(checkout) else "")


class UncommittedChangesError(RuntimeError):
    """A paper-scale result would be written from a checkout with uncommitted changes."""


def require_committed(scale: str) -> None:
    """Raise :class:`UncommittedChangesError` for ``scale="paper"`` from a checkout with uncommitted changes,
    unless ``POSGEOM_ALLOW_DIRTY=1``: committed paper results must record a commit that reproduces them."""
    if scale != "paper" or os.environ.get(ALLOW_DIRTY_ENV, "").strip().lower() in ("1", "true", "yes", "on"):
        return
    changes = uncommitted_changes()
    if not changes:
        return
    shown = ", ".join(changes[:3]) + (f" and {len(changes) - 3} more" if len(changes) > 3 else "")
    raise UncommittedChangesError(
        f"refusing to write paper-scale results: the checkout has uncommitted changes in "
        f"{' or '.join(f + '/' for f in SOURCE_FOLDERS)} ({shown}), so the results would record no commit that "
        f"reproduces them; commit the changes first, or pass --allow-dirty ({ALLOW_DIRTY_ENV}=1 in a kernel) to "
        "write them with a +dirty commit"
    )


def _without_paths(word: str) -> str:
    """``word`` with every absolute path replaced by its last part (``…/name``)."""
    return _ABSOLUTE.sub(lambda m: "…/" + _SEPARATOR.split(m.group(0).rstrip("/\\"))[-1], word)


def _join(words: list[str]) -> str:
    """Words joined as a shell would read them (quoted only where a shell needs it)."""
    return " ".join(shlex.quote(w) if not w or re.search(r"[\s'\"\\$`;&|<>*?!#]", w) else w for w in words)


def command_line(argv: list[str] | None = None, environ: Mapping[str, str] | None = None) -> str:
    """The command that started this run, as the user typed it, every absolute path shown as ``…/name``.

    ``POSGEOM_COMMAND`` when set; else ``posgeom …``, ``notebook NAME`` for a Jupyter kernel that knows its
    notebook, ``Jupyter kernel (…)`` for one that does not, or the script's name and arguments.
    """
    environ = os.environ if environ is None else environ
    if environ.get(COMMAND_ENV, "").strip():
        return _without_paths(environ[COMMAND_ENV].strip())
    argv = list(sys.argv if argv is None else argv)
    program = argv[0] if argv else ""
    parts = _SEPARATOR.split(program)
    name, parent = parts[-1], (parts[-2] if len(parts) > 1 else "")
    args = [_without_paths(a) for a in argv[1:]]
    if "ipykernel" in name or name == "kernel_launcher.py" or (name == "__main__.py" and parent == "ipykernel"):
        session = environ.get("JPY_SESSION_NAME", "").strip()
        return (f"notebook {_SEPARATOR.split(session)[-1]}" if session
                else "Jupyter kernel (jupyter-book build, nbclient or Jupyter; notebook not named)")
    if name in ("posgeom", "posgeom.exe") or (parent == "posgeom" and name in ("cli.py", "__main__.py")):
        return _join(["posgeom", *args])
    if parent == "experiments" and name == "__main__.py":
        return _join(["posgeom", "experiments", *args])
    if name == "-c":
        return "python -c …"
    if not name:
        return "python (interactive)"
    if name == "__main__.py" and parent:
        return _join(["python", "-m", parent, *args])
    return _join([_without_paths(name), *args])
