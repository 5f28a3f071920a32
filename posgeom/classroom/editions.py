r"""Build the classroom editions of the chapters (see :mod:`posgeom.classroom`).

Both editions are :func:`posgeom.notebooks.plain_notebook` (the writer of the book's downloads) with the glued
values written out: the student's without solutions, the instructor's with them, executed. The key is read
from the check cells (tagged ``exercise-check``); it holds the instructor's secret ``seed`` for the hidden
cases, and points and case weights to edit at will.
"""

from __future__ import annotations

import ast
import json
import os
import pkgutil
import re
import secrets
from pathlib import Path

__all__ = ["chapters_with_exercises", "exercise_key", "build"]

_EXERCISE = re.compile(r"^(?P<fence>`{3,})\{exercise\}[ \t]*(?P<title>.*)\n(?P<opts>(?::[\w-]+:.*\n)*)", re.M)


def _notebooks_dir(notebooks_dir) -> Path:
    """``notebooks_dir``, or (None) the checkout's ``notebooks/``."""
    from ..reproduce import project_root
    return Path(notebooks_dir) if notebooks_dir is not None else project_root() / "notebooks"


def chapters_with_exercises(notebooks_dir: str | Path | None = None) -> list[str]:
    """Slugs of the chapters that have coding exercises with checks, in file-name order."""
    folder = _notebooks_dir(notebooks_dir)
    return sorted(p.stem for p in folder.glob("*.md") if "exercise-check" in p.read_text())


def _cases(check: str) -> list[dict]:
    """One ``{"case", "weight": 1}`` per hidden case of a check."""
    from ..checks.core import case_labels
    return [{"case": label, "weight": 1} for label in case_labels(pkgutil.resolve_name(check))]


def exercise_key(chapter: str | Path, *, seed: int | None = None) -> dict:
    """The autograder's key of a chapter (its MyST source): every exercise, and the checks of the coding ones.

    ``seed`` is the one the grader draws the hidden cases from (default: none, the practice cases). The key is
    ``{"chapter", "seed", "exercises"}``; each exercise has ``label``, ``number``, ``title``, ``points`` and
    ``check`` (``"posgeom.checks.<module>:<function>"``, None when graded by hand); a coding one also ``function``
    and ``cases``.
    """
    import jupytext
    path = Path(chapter)
    nb = jupytext.read(path)
    exercises, current, count = [], None, 0
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for m in _EXERCISE.finditer(cell.source):
                numbered = ":nonumber:" not in m.group("opts")  # the book numbers the others 1, 2, ...
                count += numbered
                label = re.search(r":label:[ \t]*(\S+)", m.group("opts"))
                current = {"label": label.group(1) if label else f"exercise-{count}",
                           "number": count if numbered else None, "title": m.group("title").strip(),
                           "points": 1, "check": None}
                exercises.append(current)
            continue
        if "exercise-check" not in cell.metadata.get("tags", []):
            continue
        if current is None:
            raise ValueError(f"{path.name}: a check cell comes before any exercise")
        tree = ast.parse(cell.source)
        imported = {alias.asname or alias.name: f"{node.module}:{alias.name}" for node in ast.walk(tree)
                    if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("posgeom.checks")
                    for alias in node.names}
        calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                 and node.func.id in imported and node.args and isinstance(node.args[0], ast.Name)]
        if len(calls) != 1:
            raise ValueError(f"{path.name}: a check cell must call one posgeom.checks function on the student's "
                             f"function, as in check_x(my_function); found {len(calls)} such calls")
        if current["check"] is not None:
            raise ValueError(f"{path.name}: exercise {current['label']} has two check cells; give each its own exercise")
        check = imported[calls[0].func.id]
        current.update(check=check, function=calls[0].args[0].id, cases=_cases(check))
    return {"chapter": path.stem, "seed": seed, "exercises": exercises}


def _executed_instructor(source: Path, values: dict, folder: Path, timeout: int):
    """Execute the instructor edition (without its install cell); return it with the values it glued."""
    from ..notebooks import INSTALL_TAG, glue_values, plain_notebook
    from ..reproduce.notebook import run_kernel
    run = plain_notebook(source, solutions=True, executed=values or None)
    run.cells = [c for c in run.cells if INSTALL_TAG not in c.metadata.get("tags", [])]
    # a failing solution raises nbclient's error; the kernel has nbclient's default 60 s to start
    run_kernel(run, folder, env=dict(os.environ), timeout=timeout, kernel_name="python3", startup_timeout=60)
    values = {**values, **glue_values(run)}
    instructor = plain_notebook(source, solutions=True, executed=values)  # the text with the numbers written out
    ran = iter(c for c in run.cells if c.cell_type == "code")
    for cell in instructor.cells:
        if cell.cell_type == "code" and INSTALL_TAG not in cell.metadata.get("tags", []):
            done = next(ran)
            cell.outputs, cell.execution_count = done.outputs, done.execution_count
    return instructor, values


def build(chapters=None, out: str | Path = "classroom", *, execute: bool = True, timeout: int = 1800,
          notebooks_dir: str | Path | None = None, cache: str | Path | None = None,
          seed: int | None = None) -> list[Path]:
    """Write the three editions of each chapter under ``out/<chapter>/``; return the chapter folders written.

    ``chapters`` are slugs (default: every chapter with coding exercises); ``execute`` runs the instructor edition
    (a solution that fails raises here) with ``timeout`` seconds per cell; ``notebooks_dir`` is the chapters' folder
    (default: the checkout's ``notebooks/``), ``cache`` the book's jupyter-cache (default: ``_build/.jupyter_cache``
    beside it); ``seed`` the keys' seed (default: a new secret one per chapter; keep the keys from the students).
    """
    from . import require_notebook_tools
    require_notebook_tools()
    import nbformat
    from ..notebooks import cached_execution, glue_values, plain_notebook
    folder = _notebooks_dir(notebooks_dir)
    cache = Path(cache) if cache is not None else folder.parent / "_build" / ".jupyter_cache"
    available = chapters_with_exercises(folder)
    chapters = list(chapters) if chapters else available
    unknown = [c for c in chapters if c not in available]
    if unknown:
        raise ValueError(f"no chapter with coding exercises named {', '.join(unknown)}; choose from {', '.join(available)}")
    written = []
    for slug in chapters:
        source = folder / f"{slug}.md"
        target = Path(out) / slug
        target.mkdir(parents=True, exist_ok=True)
        executed = cached_execution(source, cache)  # None unless the cache holds the current chapter
        values = glue_values(executed) if executed is not None else {}
        if execute:
            instructor, values = _executed_instructor(source, values, folder, timeout)
        else:
            instructor = plain_notebook(source, solutions=True, executed=values or None)
        nbformat.write(plain_notebook(source, solutions=False, executed=values or None), str(target / "student.ipynb"))
        nbformat.write(instructor, str(target / "instructor.ipynb"))
        chapter_seed = secrets.randbits(63) if seed is None else int(seed)
        (target / "autograder.json").write_text(json.dumps(exercise_key(source, seed=chapter_seed), indent=2) + "\n")
        written.append(target)
    return written
