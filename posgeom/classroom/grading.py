r"""The autograder: each coding exercise decided on its own, from the student's definitions, outside their reach.

For each coding exercise of the key (``autograder.json``), :func:`grade` reads the function and what it uses
from the notebook (:func:`~posgeom.classroom.extract.exercise_program`), runs them in an answering process
where posgeom and the course files are absent (:mod:`posgeom.classroom.sandbox`), and decides in a worker
process under a memory limit (:mod:`posgeom.classroom.worker`) with cases drawn from the key's seed. Nothing
the submission prints is trusted; a message names the property that failed, never the case.
"""

from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
import tempfile
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from ..validation import printable

__all__ = ["ExerciseScore", "GradeReport", "grade", "grade_folder", "write_grades_csv", "read_key"]

#: Seconds the grader's worker may take beyond the student's limits (starting Python, importing the checks).
WORKER_GRACE_S = 60.0
#: Characters of a student's printed output kept in the feedback file, per exercise.
MAX_OUTPUT_CHARS = 20_000


@dataclass(frozen=True)
class ExerciseScore:
    """One coding exercise: its label, number, title and points, the share earned (0 to 1), the verdict."""

    label: str
    number: int | None
    title: str
    score: float
    message: str
    points: float = 1.0
    output: str = ""

    @property
    def earned(self) -> float:
        return self.score * self.points


@dataclass
class GradeReport:
    """Scores of one submission; ``error`` is set, with no exercises, when it could not be graded at all."""

    notebook: str
    exercises: list[ExerciseScore] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def percent(self) -> float:
        possible = sum(e.points for e in self.exercises)
        return 100.0 * sum(e.earned for e in self.exercises) / possible if possible else 0.0

    def table(self) -> str:
        """One line per coding exercise and the total, escaped for a terminal (``posgeom classroom grade``)."""
        name = printable(Path(self.notebook).name)
        if self.error:
            return f"{name}: not graded: {_line(self.error)}"
        lines = [f"Exercise {e.number or ''} ({_line(e.title)}): {e.earned:.3g}/{e.points:g}  {_line(e.message)}"
                 for e in self.exercises]
        lines += [f"Note: {_line(note)}" for note in self.notes]
        return "\n".join(lines + [f"Score: {self.percent:.0f} %"])

    def feedback(self) -> str:
        """The student's feedback file: the grade lines, then what their code printed for each exercise."""
        printed = [f"\n--- What your code printed while exercise {e.number or e.label} was graded ---\n"
                   + printable(e.output) for e in self.exercises if e.output]
        return "\n".join([self.table(), *printed]) + "\n"


def _line(text) -> str:
    """Student-derived text on one terminal line: control characters escaped, newlines folded."""
    return printable(" ".join(str(text).split()))


def read_key(key) -> dict:
    """The key (a path to ``autograder.json`` or its content) as a dict, checked; errors name the fix."""
    fix, name = "give the autograder.json that posgeom classroom build wrote", "the key"
    if not isinstance(key, dict):
        path = Path(key)
        name = f"--key {path}"
        if not path.is_file():
            raise FileNotFoundError(f"{name}: no such file; {fix}")
        try:
            key = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise ValueError(f"{name} is not JSON ({err}); {fix}") from None
    exercises = key.get("exercises") if isinstance(key, dict) else None
    if not exercises or not isinstance(exercises, list) or not all(isinstance(e, dict) for e in exercises):
        raise ValueError(f"{name} lists no exercises; {fix}")
    for e in exercises:
        if not {"label", "title"} <= set(e):
            raise ValueError(f"{name}: an exercise has no label or title; {fix}")
        if e.get("check") and not (isinstance(e.get("function"), str) and e["function"].isidentifier()):
            raise ValueError(f"{name}: exercise {e['label']!r} has a check but no function name; {fix}")
        points = e.get("points", 1)
        if not isinstance(points, (int, float)) or not math.isfinite(points) or points < 0:
            raise ValueError(f"{name}: exercise {e['label']!r} has points {points!r}; give a number >= 0")
        weights = [c.get("weight", 1) for c in e.get("cases", [])]
        if any(not isinstance(w, (int, float)) or not math.isfinite(w) or w < 0 for w in weights):
            raise ValueError(f"{name}: exercise {e['label']!r} has a case weight that is not a number >= 0")
    seed = key.get("seed")
    if seed is not None and not (isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0):
        raise ValueError(f"{name}: the seed must be a whole number >= 0, got {seed!r}")
    return key


def _check_limits(timeout, submission_timeout, memory_mb) -> None:
    for flag, value in (("--timeout", timeout), ("--submission-timeout", submission_timeout)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise ValueError(f"{flag} must be a positive number of seconds, got {value!r}")
    if memory_mb is not None and (isinstance(memory_mb, bool) or not isinstance(memory_mb, int) or memory_mb < 64):
        raise ValueError(f"--memory-mb must be a whole number of MiB, at least 64 (or 0 for no limit), got {memory_mb!r}")


def _decide(exercise: dict, source: str, key: dict, *, folder: Path, timeout: float, seconds_left: float,
            memory_mb: int | None, sandbox: str) -> tuple[float, str, str]:
    """Run the worker for one exercise; return (score, message, what the student's code printed)."""
    output, cases, label = folder / f"{exercise['label']}.out", exercise.get("cases"), exercise["label"]
    # the cases are drawn from the instructor's seed with the exercise folded in
    seed = None if key.get("seed") is None else [int(key["seed"]), zlib.crc32(label.encode())]
    request = {"check": exercise["check"], "source": source, "function": exercise["function"], "timeout": timeout,
               "seconds_left": seconds_left, "memory_mb": memory_mb, "sandbox": sandbox, "seed": seed,
               "output": str(output), "weights": [c.get("weight", 1) for c in cases] if cases else None}
    try:
        done = subprocess.run([sys.executable, "-c", "from posgeom.classroom.worker import main; main()"],
                              input=json.dumps(request), capture_output=True, text=True, cwd=folder,
                              timeout=seconds_left + WORKER_GRACE_S)
        if done.returncode != 0 or not done.stdout.strip():
            last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
            score, message = 0.0, f"the grader could not decide this exercise ({last})"
        else:
            decision = json.loads(done.stdout)
            score, message = float(decision["score"]), str(decision["message"])
    except subprocess.TimeoutExpired:
        score, message = 0.0, "the submission's time limit was reached while this exercise was graded"
    printed = output.read_text(errors="replace") if output.is_file() else ""
    if len(printed) > MAX_OUTPUT_CHARS:
        printed = printed[:MAX_OUTPUT_CHARS] + f"\n[... {len(printed) - MAX_OUTPUT_CHARS} more characters]"
    return score, message, printed


def grade(notebook: str | Path, key: str | Path | dict, *, timeout: float = 120, submission_timeout: float = 1800,
          memory_mb: int | None = 8192, sandbox: str = "auto") -> GradeReport:
    """Score each coding exercise of the key (``autograder.json`` or its content) in the student notebook
    ``notebook`` (read, never run).

    ``timeout`` is the seconds allowed to run the definitions an exercise needs, and each call on a hidden case;
    ``submission_timeout`` those for all of one submission's exercises together; ``memory_mb`` the address-space
    limit of the answering processes and (at least 2 GiB) of the workers, in MiB; ``sandbox`` as
    :func:`~posgeom.classroom.sandbox.resolve_sandbox` (``"none"`` is for trusted work only).
    """
    from . import require_notebook_tools
    require_notebook_tools()
    import nbformat
    from .extract import code_cells, exercise_program
    from .sandbox import resolve_sandbox
    _check_limits(timeout, submission_timeout, memory_mb)
    sandbox = resolve_sandbox(sandbox)
    key = read_key(key)
    notebook = Path(notebook)
    if not notebook.is_file():
        raise FileNotFoundError(f"no notebook at {notebook}; give the path of the completed student notebook")
    try:
        nb = nbformat.read(str(notebook), as_version=4)
    except Exception as err:  # noqa: BLE001 - any unreadable file is the same answer to the instructor
        raise ValueError(f"{notebook.name} is not a Jupyter notebook ({type(err).__name__}: {err})") from None
    report = GradeReport(str(notebook))
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="posgeom-grade-") as folder:
        for exercise in key["exercises"]:
            if not exercise.get("check"):
                continue  # graded by hand
            program = exercise_program(nb, exercise["function"])
            left = submission_timeout - (time.monotonic() - started)
            if not program.defined:
                share, message, printed = 0.0, f"the notebook defines no function {exercise['function']}", ""
            elif left <= 0:
                share, message, printed = 0.0, (f"not graded: the submission's time limit ({submission_timeout:g} s) "
                                                "was reached before it"), ""
            else:
                share, message, printed = _decide(exercise, program.source, key, folder=Path(folder), timeout=timeout,
                                                  seconds_left=left, memory_mb=memory_mb, sandbox=sandbox)
            report.exercises.append(ExerciseScore(exercise["label"], exercise.get("number"), exercise["title"], share,
                                                  message, float(exercise.get("points", 1)), printed))
        _, skipped = code_cells(nb)
        if skipped:
            report.notes.append(f"code cell(s) {', '.join(map(str, skipped))} are not valid Python and were not read")
    return report


def _grade_or_error(notebook: Path, key: dict, options: dict) -> GradeReport:
    try:
        return grade(notebook, key, **options)
    except (ValueError, OSError) as err:
        return GradeReport(str(notebook), error=str(err).splitlines()[0] if str(err) else type(err).__name__)


def grade_folder(folder: str | Path, key: str | Path | dict, *, jobs: int | None = None, **options) -> list[GradeReport]:
    """Grade every ``*.ipynb`` of ``folder`` with :func:`grade` and ``options``, ``jobs`` at once (default: half the
    CPUs, at least 1); ``sandbox`` is resolved once, before any submission is read. One report per submission, in
    file-name order; one that could not be graded has ``error`` set."""
    import os
    from concurrent.futures import ThreadPoolExecutor
    from .sandbox import resolve_sandbox
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no folder at {folder}; give the folder that holds the submitted notebooks")
    _check_limits(options.get("timeout", 120), options.get("submission_timeout", 1800), options.get("memory_mb", 8192))
    key = read_key(key)
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise ValueError(f"--jobs must be a whole number, at least 1, got {jobs!r}")
    options["sandbox"] = resolve_sandbox(options.get("sandbox", "auto"))
    submissions = sorted(folder.glob("*.ipynb"))
    if not submissions:
        raise ValueError(f"{folder} holds no .ipynb submission")
    jobs = jobs or max(1, (os.cpu_count() or 2) // 2)
    # each submission's work runs in its worker and answering processes: threads only wait for them
    with ThreadPoolExecutor(max_workers=min(jobs, len(submissions))) as pool:
        return list(pool.map(lambda path: _grade_or_error(path, key, dict(options)), submissions))


def _column(exercise: dict) -> str:
    number = exercise.get("number")
    return f"exercise {number}: {exercise['title']}" if number is not None else f"exercise: {exercise['title']}"


def write_grades_csv(reports: list[GradeReport], key: str | Path | dict, target: str | Path,
                     feedback: str | Path | None = None) -> str:
    """Write the grade sheet, one row per submission and one column per exercise of the chapter (empty for those
    graded by hand), and with ``feedback`` one feedback file per submission; return the summary."""
    exercises = read_key(key)["exercises"]
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("w", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["submission", "score_percent", *[_column(e) for e in exercises], "message"])
        for r in reports:
            name = printable(Path(r.notebook).name)
            if r.error:
                writer.writerow([name, "", *[""] * len(exercises), f"not graded: {_line(r.error)}"])
                continue
            scores = {e.label: e for e in r.exercises}
            cells = [f"{scores[e['label']].earned:.4g}" if e["label"] in scores else "" for e in exercises]
            failing = [_line(s.message) for s in r.exercises if s.score < 1]
            writer.writerow([name, f"{r.percent:.0f}", *cells, " | ".join(failing + [_line(n) for n in r.notes])])
    if feedback is not None:
        folder = Path(feedback)
        folder.mkdir(parents=True, exist_ok=True)
        for r in reports:
            (folder / f"{Path(r.notebook).stem}.txt").write_text(r.feedback() if not r.error else r.table() + "\n")
    graded = [r for r in reports if not r.error]
    mean = sum(r.percent for r in graded) / len(graded) if graded else 0.0
    full = sum(1 for r in graded if r.percent == 100.0)
    summary = f"graded {len(graded)} of {len(reports)} submissions into {target}: mean {mean:.0f} %, {full} at 100 %"
    if feedback is not None:
        summary += f"; feedback files in {feedback}"
    if len(graded) < len(reports):
        summary += f", {len(reports) - len(graded)} not graded (see the message column)"
    return summary
