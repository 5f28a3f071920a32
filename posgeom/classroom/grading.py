r"""The autograder: run a submission in a sandbox and score each coding exercise in the grader's own process.

The key (``autograder.json``, written by :func:`~posgeom.classroom.editions.build`) lists the chapter's
coding exercises: label, number, title, the check (``module:function`` in :mod:`posgeom.checks`) and
the name of the function the student writes. :func:`grade` decides in three steps, none of which
trusts what the submission prints:

1. **Run.** The notebook runs in a fresh kernel whose working folder is a new temporary folder holding
   a copy of it (nothing beside the submission is reachable by a relative path), with a time limit per
   cell and per submission and, where the platform has ``resource``, an address-space limit. Under
   bubblewrap (``sandbox="bwrap"``, or ``"auto"`` where it works) the kernel and everything it starts
   see the whole file system read-only except that temporary folder, so no absolute path reaches the
   key, the grade sheet or the other submissions either (:func:`~posgeom.classroom.sandbox.confined_command`). A cell
   that raises does not stop it; a cell that runs past its limit, or a kernel that dies, stops the run.
   After every cell that mentions an exercise's function, that function is pickled by value
   (cloudpickle) out of the kernel, so an exercise keeps what it had when a later cell never ends.
2. **Answer.** Each exercise's function is loaded into its own child process
   (:class:`~posgeom.classroom.sandbox.Answerer`) in which :mod:`posgeom.checks` and the posgeom
   functions the exercise is about are blocked at import, for it and every process it starts.
3. **Decide.** The check runs here, in the grader's process, calling the child only for the answers
   (plain data) and comparing them with its oracle. The grade lines are written here; nothing the
   student's code prints, patches or hooks in its kernel reaches them.

Each exercise scores 1 (every hidden case passes) or 0; the score is their mean, in percent.
:func:`grade_folder` grades a folder of submissions in parallel (each in its own sandbox) into one CSV.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import shutil
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path

__all__ = ["ExerciseScore", "GradeReport", "grade", "grade_folder", "write_grades_csv", "exercise_cells"]


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
    """Scores of one submission; ``percent`` is the mean score of the exercises times 100.

    ``notes`` say what stopped the run early (a cell past its time limit, a dead kernel); ``error`` is
    set, with no exercises, when the submission could not be graded at all (not a notebook ...).
    """

    notebook: str
    exercises: list[ExerciseScore] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def percent(self) -> float:
        return 100.0 * sum(e.score for e in self.exercises) / len(self.exercises) if self.exercises else 0.0

    def table(self) -> str:
        """One line per exercise and the total, as printed by ``posgeom classroom grade``."""
        if self.error:
            return f"{Path(self.notebook).name}: not graded: {self.error}"
        lines = [f"Exercise {e.number} ({e.title}): {e.score:.0f}/1  {e.message}" for e in self.exercises]
        lines += [f"Note: {note}" for note in self.notes]
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


def _snapshot_source(names: list[str], folder: Path) -> str:
    """Kernel code that pickles each named function by value into ``folder`` (and leaves no name behind)."""
    return "\n".join([
        f"def __posgeom_snapshot(names={names!r}, folder={str(folder)!r}):",
        "    import os",
        "    import cloudpickle",
        "    for name in names:",
        "        function = globals().get(name)",
        "        if not callable(function):",
        "            continue",
        "        try:",
        "            data = cloudpickle.dumps(function)",
        "        except Exception:",
        "            continue",
        "        with open(os.path.join(folder, name + '.pkl'), 'wb') as out:",
        "            out.write(data)",
        "__posgeom_snapshot()",
        "del __posgeom_snapshot",
    ])


def _memory_source(memory_mb: int | None) -> str:
    if not memory_mb:
        return "pass"
    limit = int(memory_mb) * 1024 * 1024
    return "\n".join([
        "try:",
        "    import resource as __posgeom_resource",
        f"    __posgeom_resource.setrlimit(__posgeom_resource.RLIMIT_AS, ({limit}, {limit}))",
        "    del __posgeom_resource",
        "except Exception:",
        "    pass",
    ])


def _confined_kernel_manager(folder: Path, work: Path):
    """A kernel manager whose kernel (and everything it starts) runs under bubblewrap, writing only in
    ``folder``; the connection file lives there too (a kernel cannot read another's from a shared folder)."""
    import os

    from jupyter_client.manager import AsyncKernelManager

    from .sandbox import confined_command

    class ConfinedKernelManager(AsyncKernelManager):
        def format_kernel_cmd(self, extra_arguments=None):
            # the kernel is not bwrap's child: its parent-process watch would take that for its parent's
            # death, so it goes (bwrap --die-with-parent ends the kernel with the grader instead)
            return confined_command(super().format_kernel_cmd(extra_arguments), [folder], cwd=work,
                                    unset=["JPY_PARENT_PID"])

    manager = ConfinedKernelManager(kernel_name="python3")
    manager.connection_file = os.path.join(os.path.realpath(folder), "kernel-connection.json")
    return manager


def _run_submission(nb, names: list[str], work: Path, snapshots: Path, *, timeout: float,
                    submission_timeout: float, memory_mb: int | None, confine_to: Path | None = None,
                    clock=time.monotonic) -> list[str]:
    """Run ``nb`` in a kernel working in ``work``; pickle the functions ``names`` into ``snapshots``.

    With ``confine_to`` (a folder holding ``work`` and ``snapshots``) the kernel runs under bubblewrap and
    can write nowhere else. Returns the notes on what stopped the run early (empty when every cell ran).
    """
    import os

    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellTimeoutError, DeadKernelError

    from .sandbox import confined_environment

    start: dict = {"cwd": str(work)}
    manager = None
    if confine_to is not None:
        manager = _confined_kernel_manager(confine_to, work)
        start["env"] = confined_environment(os.environ, confine_to / "home")
    client = NotebookClient(nb, km=manager, timeout=int(timeout), allow_errors=True, kernel_name="python3",
                            shutdown_kernel="immediate", resources={"metadata": {"path": str(work)}})
    notes: list[str] = []
    started = clock()
    number = 0

    def hidden(source: str) -> None:
        nb.cells.append(nbformat.v4.new_code_cell(source))  # nbclient stores the cell back at its index
        try:
            client.execute_cell(nb.cells[-1], len(nb.cells) - 1, store_history=False)
        finally:
            nb.cells.pop()

    def limit() -> int:
        return max(1, int(min(timeout, submission_timeout - (clock() - started))))

    snapshot = _snapshot_source(names, snapshots)
    # cleanup_kc: nbclient ends only the kernels of managers it made itself; the confined one is ours, and a
    # kernel left running (one stuck in an endless cell keeps a core busy) would outlive every submission
    with client.setup_kernel(cleanup_kc=True, **start):
        try:
            hidden(_memory_source(memory_mb))
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                number += 1
                if clock() - started >= submission_timeout:
                    notes.append(f"the submission's time limit ({submission_timeout:g} s) was reached before code "
                                 f"cell {number}; the cells from there on were not run")
                    return notes
                client.timeout = limit()
                try:
                    client.execute_cell(cell, index)
                except CellTimeoutError:
                    notes.append(f"code cell {number} did not finish within {client.timeout} s and was stopped; "
                                 "the cells after it were not run")
                    return notes
                if any(name in cell.source for name in names):
                    client.timeout = int(timeout)  # the grader's own code: the cell limit, not what is left
                    hidden(snapshot)
            client.timeout = int(timeout)
            hidden(snapshot)
        except CellTimeoutError:
            notes.append("the submission's time limit was reached while its functions were being collected")
        except DeadKernelError:
            notes.append(f"the kernel died at code cell {number} (out of memory, or the notebook ended it); "
                         "the cells after it were not run")
    return notes


def _score_exercise(exercise: dict, snapshots: Path, *, timeout: float, memory_mb: int | None,
                    confine: bool = False) -> ExerciseScore:
    """Check one exercise here, with the student's function answering from its own blocked process."""
    from ..checks.core import functions_switched_off
    from .sandbox import Answerer

    title = exercise["title"]

    def score(passed: bool, message: str) -> ExerciseScore:
        return ExerciseScore(exercise["label"], exercise["number"], title, 1.0 if passed else 0.0, message)

    pickled = snapshots / f"{exercise['function']}.pkl"
    if not pickled.is_file():
        return score(False, f"✗ {title}: the notebook defines no function {exercise['function']} "
                            "(or it was not defined when the run stopped)")
    module, _, name = exercise["check"].partition(":")
    if not module.startswith("posgeom.checks."):
        raise ValueError(f"the key names the check {exercise['check']!r}, which is not in posgeom.checks; "
                         "rebuild the key with posgeom classroom build")
    check = getattr(import_module(module), name)
    with Answerer(pickled.read_bytes(), functions_switched_off(check), timeout=timeout, memory_mb=memory_mb,
                  confine=confine) as child:
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                verdict = check(child.call)
            except Exception as err:  # noqa: BLE001 - a check that cannot run is a verdict for this exercise
                return score(False, f"✗ {title}: the check could not run: {type(err).__name__}: {err}")
    return score(bool(verdict.passed), verdict.message)


def _confinement(sandbox: str) -> bool:
    """Whether to confine under bubblewrap (see :func:`~posgeom.classroom.sandbox.resolve_sandbox`);
    ``"auto"`` where bwrap cannot run warns that absolute paths are not confined."""
    from .sandbox import NOT_CONFINED, resolve_sandbox

    if resolve_sandbox(sandbox) == "bwrap":
        return True
    if sandbox == "auto":
        warnings.warn(NOT_CONFINED, stacklevel=3)
    return False


def _read_key(key) -> dict:
    key = key if isinstance(key, dict) else json.loads(Path(key).read_text())
    if not key.get("exercises"):
        raise ValueError("the key lists no exercises; rebuild it with posgeom classroom build")
    return key


def grade(notebook: str | Path, key: str | Path | dict, *, exercises_only: bool = False, timeout: float = 120,
          submission_timeout: float = 1800, memory_mb: int | None = 8192, sandbox: str = "auto") -> GradeReport:
    """Run a submission in a sandbox and score each coding exercise of the key (see the module docstring).

    Parameters
    ----------
    notebook : path
        The completed student notebook (``.ipynb``); it is copied, never run in place.
    key : path or dict
        The chapter's ``autograder.json`` (or its content).
    exercises_only : bool
        Run only the chapter's first code cell and its exercise section (fast; the exercises' functions
        must not need the chapter's earlier results).
    timeout : float
        Seconds allowed per cell, and per call of a student's function on a hidden case.
    submission_timeout : float
        Seconds allowed for the whole run of the notebook.
    memory_mb : int, optional
        Address-space limit of the kernel and of the answering processes, in MiB (None: no limit).
    sandbox : {"auto", "bwrap", "none"}
        ``"bwrap"``: the kernel and the answering processes run under bubblewrap, writing only in their
        temporary folders (an error where bwrap cannot run); ``"none"``: ordinary processes in those
        folders (absolute paths reach anything the grader can change); ``"auto"``: bwrap where it
        works, else ``"none"`` with a warning.

    Returns
    -------
    GradeReport
    """
    from . import require_notebook_tools

    require_notebook_tools()
    import nbformat

    from ..notebooks import INSTALL_TAG

    notebook = Path(notebook)
    if not notebook.is_file():
        raise FileNotFoundError(f"no notebook at {notebook}; give the path of the completed student notebook")
    if timeout <= 0 or submission_timeout <= 0:
        raise ValueError(f"time limits must be positive, got --timeout {timeout} and {submission_timeout} s per submission")
    confine = _confinement(sandbox)
    exercises = _read_key(key)["exercises"]
    try:
        nb = nbformat.read(str(notebook), as_version=4)
    except Exception as err:  # noqa: BLE001 - any unreadable file is the same answer to the instructor
        raise ValueError(f"{notebook.name} is not a Jupyter notebook ({type(err).__name__}: {err})") from None
    nb.cells = [c for c in nb.cells if INSTALL_TAG not in c.get("metadata", {}).get("tags", [])]
    if exercises_only:
        nb.cells = exercise_cells(nb)
    sandbox_folder = Path(tempfile.mkdtemp(prefix="posgeom-grade-"))
    try:
        work, snapshots = sandbox_folder / "submission", sandbox_folder / "functions"
        work.mkdir()
        snapshots.mkdir()
        shutil.copy2(notebook, work / notebook.name)
        names = sorted({e["function"] for e in exercises})
        notes = _run_submission(nb, names, work, snapshots, timeout=timeout, submission_timeout=submission_timeout,
                                memory_mb=memory_mb, confine_to=sandbox_folder if confine else None)
        report = GradeReport(str(notebook), notes=notes)
        for e in exercises:
            report.exercises.append(_score_exercise(e, snapshots, timeout=timeout, memory_mb=memory_mb,
                                                    confine=confine))
        return report
    finally:
        shutil.rmtree(sandbox_folder, ignore_errors=True)


def _grade_or_error(notebook: Path, key: dict, options: dict) -> GradeReport:
    try:
        return grade(notebook, key, **options)
    except (ValueError, OSError, RuntimeError) as err:
        return GradeReport(str(notebook), error=str(err).splitlines()[0] if str(err) else type(err).__name__)


def grade_folder(folder: str | Path, key: str | Path | dict, *, jobs: int | None = None, **options) -> list[GradeReport]:
    """Grade every ``*.ipynb`` of ``folder`` in parallel, each in its own sandbox (:func:`grade`).

    Parameters
    ----------
    folder : path
        The submissions (one notebook each; other files are left alone).
    key : path or dict
        The chapter's ``autograder.json``.
    jobs : int, optional
        Submissions graded at once (default: half the CPUs, at least 1).
    **options
        Passed to :func:`grade` (``exercises_only``, ``timeout``, ``submission_timeout``, ``memory_mb``,
        ``sandbox``: resolved here once, so ``"auto"`` warns once for the folder).

    Returns
    -------
    list of GradeReport
        One per submission, in file-name order; a submission that could not be graded has ``error`` set.
    """
    import multiprocessing
    import os
    from concurrent.futures import ProcessPoolExecutor

    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no folder at {folder}; give the folder that holds the submitted notebooks")
    key = _read_key(key)
    submissions = sorted(folder.glob("*.ipynb"))
    if not submissions:
        raise ValueError(f"{folder} holds no .ipynb submission")
    options["sandbox"] = "bwrap" if _confinement(options.get("sandbox", "auto")) else "none"
    jobs = jobs or max(1, (os.cpu_count() or 2) // 2)
    if jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {jobs}")
    if jobs == 1 or len(submissions) == 1:
        return [_grade_or_error(path, key, options) for path in submissions]
    with ProcessPoolExecutor(max_workers=min(jobs, len(submissions)),
                             mp_context=multiprocessing.get_context("spawn")) as pool:
        return list(pool.map(_grade_or_error, submissions, [key] * len(submissions), [options] * len(submissions)))


def write_grades_csv(reports: list[GradeReport], key: str | Path | dict, target: str | Path) -> str:
    """Write one row per submission (score, one column per exercise, the messages); return the summary line."""
    exercises = _read_key(key)["exercises"]
    columns = [f"exercise {e['number']}: {e['title']}" for e in exercises]
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["submission", "score_percent", *columns, "message"])
        for r in reports:
            if r.error:
                writer.writerow([Path(r.notebook).name, "", *[""] * len(columns), f"not graded: {r.error}"])
                continue
            scores = {e.label: e for e in r.exercises}
            failing = [scores[e["label"]].message for e in exercises if scores[e["label"]].score < 1]
            writer.writerow([Path(r.notebook).name, f"{r.percent:.0f}",
                             *[f"{scores[e['label']].score:.0f}" for e in exercises], " | ".join(failing + r.notes)])
    graded = [r for r in reports if not r.error]
    mean = sum(r.percent for r in graded) / len(graded) if graded else 0.0
    full = sum(1 for r in graded if r.percent == 100.0)
    summary = (f"graded {len(graded)} of {len(reports)} submissions into {target}: mean {mean:.0f} %, "
               f"{full} at 100 %")
    if len(graded) < len(reports):
        summary += f", {len(reports) - len(graded)} not graded (see the message column)"
    return summary
