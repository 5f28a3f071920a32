r"""The autograder: run a completed student notebook and score each coding exercise.

The key (``autograder.json``, written by :func:`~posgeom.classroom.editions.build`) lists the chapter's
coding exercises: label, number, title, the check (``module:function`` in :mod:`posgeom.checks`) and
the name of the function the student writes. :func:`grade` executes the submission in a fresh kernel
(a cell that raises does not stop it), then runs every check itself on the function the notebook
defined, so a deleted or edited check cell changes nothing. Each exercise scores 1 (every hidden case
passes) or 0; the score is their mean, in percent.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["ExerciseScore", "GradeReport", "grade", "exercise_cells"]

_MARK = "POSGEOM-GRADES:"


@dataclass(frozen=True)
class ExerciseScore:
    """One exercise: its label, number and title, 1.0 or 0.0, and the check's verdict line."""

    label: str
    number: int
    title: str
    score: float
    message: str


@dataclass
class GradeReport:
    """Scores of one submission; ``percent`` is the mean score of the exercises times 100."""

    notebook: str
    exercises: list[ExerciseScore] = field(default_factory=list)

    @property
    def percent(self) -> float:
        return 100.0 * sum(e.score for e in self.exercises) / len(self.exercises) if self.exercises else 0.0

    def table(self) -> str:
        """One line per exercise and the total, as printed by ``posgeom classroom grade``."""
        lines = [f"Exercise {e.number} ({e.title}): {e.score:.0f}/1  {e.message}" for e in self.exercises]
        return "\n".join(lines + [f"Score: {self.percent:.0f} %"])


def exercise_cells(nb):
    """The cells needed to grade the exercises alone: the chapter's first code cell (its imports) and
    every cell from the "Exercises" heading on."""
    start = next((i for i, c in enumerate(nb.cells)
                  if c.cell_type == "markdown" and any(line.strip() == "## Exercises" for line in c.source.split("\n"))),
                 None)
    if start is None:
        raise ValueError("the notebook has no '## Exercises' heading; grade it whole (exercises_only=False)")
    first_code = next((c for c in nb.cells[:start] if c.cell_type == "code"), None)
    return ([first_code] if first_code is not None else []) + list(nb.cells[start:])


def _grading_source(exercises: list[dict]) -> str:
    return "\n".join([
        "import contextlib as _c, importlib as _i, io as _io, json as _j",
        "_grades = []",
        f"for _e in {exercises!r}:",
        "    _mod, _, _name = _e['check'].partition(':')",
        "    _check = getattr(_i.import_module(_mod), _name)",
        "    _fn = globals().get(_e['function'])",
        "    if _fn is None:",
        "        _grades.append([_e['label'], False, 'the notebook defines no function ' + _e['function']])",
        "        continue",
        "    with _c.redirect_stdout(_io.StringIO()):",
        "        try:",
        "            _v = _check(_fn)",
        "            _grades.append([_e['label'], bool(_v.passed), _v.message])",
        "        except Exception as _err:",
        "            _grades.append([_e['label'], False, f'the check could not run: {type(_err).__name__}: {_err}'])",
        f"print({_MARK!r} + _j.dumps(_grades))",
    ])


def grade(notebook: str | Path, key: str | Path | dict, *, exercises_only: bool = False,
          timeout: int = 600, workdir: str | Path | None = None) -> GradeReport:
    """Run a submission and score each coding exercise of the key.

    Parameters
    ----------
    notebook : path
        The completed student notebook (``.ipynb``).
    key : path or dict
        The chapter's ``autograder.json`` (or its content).
    exercises_only : bool
        Run only the chapter's first code cell and its exercise section (fast; the exercises' functions
        must not need the chapter's earlier results).
    timeout : int
        Seconds allowed per cell.
    workdir : path, optional
        Folder the notebook runs in (default: the notebook's own folder).

    Returns
    -------
    GradeReport
    """
    from . import require_notebook_tools

    require_notebook_tools()
    import nbformat
    from nbclient import NotebookClient

    notebook = Path(notebook)
    if not notebook.is_file():
        raise FileNotFoundError(f"no notebook at {notebook}; give the path of the completed student notebook")
    key = key if isinstance(key, dict) else json.loads(Path(key).read_text())
    exercises = key.get("exercises", [])
    if not exercises:
        raise ValueError("the key lists no exercises; rebuild it with posgeom classroom build")
    nb = nbformat.read(str(notebook), as_version=4)
    if exercises_only:
        nb.cells = exercise_cells(nb)
    nb.cells.append(nbformat.v4.new_code_cell(_grading_source(exercises)))
    client = NotebookClient(nb, timeout=timeout, allow_errors=True, kernel_name="python3",
                            resources={"metadata": {"path": str(workdir or notebook.parent)}})
    client.execute()
    text = "".join(o.get("text", "") for o in nb.cells[-1].get("outputs", []) if o.get("output_type") == "stream")
    line = next((x for x in text.splitlines() if x.startswith(_MARK)), None)
    if line is None:
        raise RuntimeError(f"the grading cell did not run to the end in {notebook.name}: {text[-300:]!r}")
    verdicts = {label: (passed, message) for label, passed, message in json.loads(line[len(_MARK):])}
    report = GradeReport(str(notebook))
    for e in exercises:
        passed, message = verdicts[e["label"]]
        report.exercises.append(ExerciseScore(e["label"], e["number"], e["title"], 1.0 if passed else 0.0, message))
    return report
