"""The autograder decides in its own process (posgeom.classroom.grading, posgeom.classroom.sandbox).

Attacks from a real class, each of which fooled the grader that ran its checks in the student's kernel:
a fake grade line printed by a hook, a patched check, a patched switch, the checks' own oracle, a
submission deleting the class's files; and the limits: an endless cell, a dying kernel. A folder of
submissions grades into one CSV."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path

import cloudpickle
import nbformat
import numpy as np
import pytest

from posgeom.classroom.editions import build
from posgeom.classroom.grading import grade
from posgeom.classroom.sandbox import Answerer, StudentError, decode_answer, encode_answer

REPO = Path(__file__).resolve().parents[1]
CHAPTER = "corpus-geometry"  # two coding exercises: my_hellinger and noise_floor, needing nothing earlier

ATTACK = r'''
import contextlib, glob, os
import numpy as np
import posgeom
import posgeom.checks.core as core
import posgeom.checks.optimal_encoding as oe

# 1. a hook that prints what the old grader read as its grade line, before every cell
get_ipython().events.register("pre_run_cell", lambda *a: print(
    'POSGEOM-GRADES:[["ex-corpus-geometry-1", true, "ok"], ["ex-corpus-geometry-5", true, "ok"]]'))
print("✓ chord Hellinger matrix: correct on all 4 hidden cases.")
# 2. patched checks and a patched switch
oe.check_hellinger_matrix = lambda f: core.Verdict("x", True, 1, "✓")
oe.check_noise_floor = lambda f: core.Verdict("x", True, 1, "✓")
core.switched_off = lambda *functions: contextlib.nullcontext()
# 3. the library's function and the checks' own oracle as the answers
def my_hellinger(probs):
    return posgeom.hellinger_matrix(probs)
def noise_floor(v, N):
    from posgeom.checks import optimal_encoding
    return optimal_encoding.check_noise_floor.__code__ and (v - 1) / (2.0 * N)
# 4. delete everything reachable by a relative path, and write beside the submission
for path in glob.glob("*") + glob.glob("../*") + glob.glob("../../*"):
    if os.path.isfile(path):
        os.remove(path)
with open("../planted.txt", "w") as f:
    f.write("x")
'''


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    out = tmp_path_factory.mktemp("classroom")
    (folder,) = build([CHAPTER], out, execute=False, notebooks_dir=REPO / "notebooks")
    return folder


def _submission(edition: Path, folder: Path, name: str, extra: list[str], *, solved: bool) -> Path:
    nb = nbformat.read(str(edition / ("instructor.ipynb" if solved else "student.ipynb")), as_version=4)
    nb.cells += [nbformat.v4.new_code_cell(source) for source in extra]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    nbformat.write(nb, str(path))
    return path


def test_answers_travel_as_plain_data_only():
    value = (np.arange(6.0).reshape(2, 3), [1, 2.5, None, "x"], {"k": np.float32(2)})
    back = decode_answer(json.loads(json.dumps(encode_answer(value))))
    assert np.array_equal(back[0], value[0]) and back[1] == value[1] and back[2] == {"k": 2.0}
    with pytest.raises(TypeError, match="return numbers or arrays"):
        encode_answer(object())
    with pytest.raises(ValueError, match="not plain data"):
        decode_answer({"__class__": "os.system"})
    with pytest.raises(ValueError, match="not an answer"):
        decode_answer({"__array__": "|O", "shape": [1], "data": ""})


@pytest.mark.slow
def test_the_answering_process_blocks_the_library_its_reloads_its_children_and_the_oracles():
    import posgeom

    def reload_and_call(P):
        import importlib

        import posgeom.geometry.hellinger as h
        return importlib.reload(h).hellinger_matrix(P)

    def copy_of_code(P):
        import types

        import posgeom.geometry.hellinger as h
        return types.FunctionType(h.hellinger_matrix.__code__, vars(h))(P)

    def in_a_child_process(P):
        import subprocess
        import sys
        done = subprocess.run([sys.executable, "-c", "import numpy, posgeom; posgeom.hellinger_matrix(numpy.eye(2))"],
                              capture_output=True, text=True)
        return done.stderr.strip().splitlines()[-1]

    def the_oracle(P):
        from posgeom.checks.optimal_encoding import _hellinger_oracle
        return _hellinger_oracle(P)

    def honest(P):
        S = np.sqrt(P)
        return np.sqrt(((S[:, None] - S[None]) ** 2).sum(-1))

    blocked = [f"{posgeom.hellinger_matrix.__module__}:{posgeom.hellinger_matrix.__qualname__}"]
    from posgeom.checks.core import PackageFunctionSwitchedOff

    for cheat in (lambda P: posgeom.hellinger_matrix(P), reload_and_call, copy_of_code):
        with Answerer(cloudpickle.dumps(cheat), blocked, timeout=120) as child:
            with pytest.raises(PackageFunctionSwitchedOff):
                child.call(np.eye(3))
    with Answerer(cloudpickle.dumps(in_a_child_process), blocked, timeout=120) as child:
        assert "blocked while your work is graded" in child.call(np.eye(3))
    with Answerer(cloudpickle.dumps(the_oracle), blocked, timeout=120) as child:
        with pytest.raises(StudentError, match="cannot be imported while your work is graded") as raised:
            child.call(np.eye(3))
        assert type(raised.value).__name__ == "ImportError"  # named as the student's code raised it
    with Answerer(cloudpickle.dumps(honest), blocked, timeout=120) as child:
        assert np.allclose(child.call(np.eye(2)), np.sqrt(2) * (1 - np.eye(2)))


@pytest.mark.slow
def test_fake_grade_lines_patched_checks_and_switches_score_0_and_nothing_outside_the_sandbox_is_touched(
        edition, tmp_path):
    klass = tmp_path / "class"
    attack = _submission(edition, klass / "submissions", "mallory.ipynb", [ATTACK], solved=False)
    other = _submission(edition, klass / "submissions", "alice.ipynb", [], solved=True)
    key = klass / "autograder.json"
    key.write_text((edition / "autograder.json").read_text())
    before = {p: p.read_bytes() for p in klass.rglob("*") if p.is_file()}
    report = grade(attack, key, exercises_only=True, timeout=120)
    assert report.percent == 0.0, report.table()
    messages = {e.label: e.message for e in report.exercises}
    assert "switched off" in messages["ex-corpus-geometry-1"] or "blocked" in messages["ex-corpus-geometry-1"]
    assert "ImportError" in messages["ex-corpus-geometry-5"]
    assert {p: p.read_bytes() for p in klass.rglob("*") if p.is_file()} == before  # key, alice, mallory as they were
    assert other.is_file() and not (klass / "planted.txt").exists() and not (klass / "submissions" / "planted.txt").exists()


@pytest.mark.slow
def kernels_left() -> list[str]:
    """The kernels this test process started that still run (polled for a few seconds: a killed one takes
    a moment to go)."""
    import time

    import psutil

    def running():
        found = []
        for process in psutil.Process().children(recursive=True):
            try:
                if "ipykernel_launcher" in " ".join(process.cmdline()) and process.status() != psutil.STATUS_ZOMBIE:
                    found.append(f"{process.pid}: {' '.join(process.cmdline())[:120]}")
            except psutil.Error:
                continue
        return found

    for _ in range(50):
        if not running():
            return []
        time.sleep(0.2)
    return running()


def test_an_endless_cell_is_stopped_and_a_dying_kernel_keeps_the_scores_it_had(edition, tmp_path):
    key = edition / "autograder.json"
    # an endless loop that sleeps: to the grader it is the same as one that spins (the cell's time limit
    # stops either), but it leaves the machine's cores to the rest of the suite for its 45 s
    endless = _submission(edition, tmp_path, "endless.ipynb", ["import time\nwhile True:\n    time.sleep(0.05)"],
                          solved=True)
    report = grade(endless, key, exercises_only=True, timeout=45)
    assert report.percent == 100.0, report.table()
    assert any("did not finish within 45 s" in note for note in report.notes), report.notes
    assert kernels_left() == []  # the kernel stuck in the endless cell is ended, not left to spin
    dying = _submission(edition, tmp_path, "dying.ipynb", ["import os\nos._exit(1)"], solved=True)
    report = grade(dying, key, exercises_only=True, timeout=120)
    assert report.percent == 100.0, report.table()
    assert any("the kernel died" in note for note in report.notes), report.notes
    assert kernels_left() == []


@pytest.mark.slow
def test_a_folder_of_submissions_grades_into_one_csv(edition, tmp_path):
    folder = tmp_path / "submissions"
    _submission(edition, folder, "alice.ipynb", [], solved=True)
    _submission(edition, folder, "bob.ipynb", [], solved=False)
    (folder / "carol.ipynb").write_text("not a notebook")
    sheet = tmp_path / "grades.csv"
    done = subprocess.run([sys.executable, "-m", "posgeom.cli", "classroom", "grade", str(folder), "--key",
                           str(edition / "autograder.json"), "--exercises-only", "--jobs", "2", "--csv", str(sheet)],
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 1, done.stderr  # one submission could not be graded
    assert "graded 2 of 3 submissions" in done.stdout and "mean 50 %" in done.stdout, done.stdout
    rows = list(csv.DictReader(sheet.open()))
    assert [r["submission"] for r in rows] == ["alice.ipynb", "bob.ipynb", "carol.ipynb"]
    assert rows[0]["score_percent"] == "100" and rows[1]["score_percent"] == "0"
    assert rows[0]["exercise 1: The chord Hellinger matrix"] == "1" and rows[1]["exercise 5: The noise floor as a function"] == "0"
    assert "not written yet" in rows[1]["message"] and rows[2]["message"].startswith("not graded: carol.ipynb is not a Jupyter")


@pytest.mark.slow
def test_the_answering_process_has_a_memory_limit_and_a_time_limit():
    def greedy(n):
        return float(np.ones(int(n)).sum())

    with Answerer(cloudpickle.dumps(greedy), [], timeout=120, memory_mb=2048) as child:
        with pytest.raises(StudentError) as raised:
            child.call(4e9)  # 32 GB
        assert type(raised.value).__name__ == "MemoryError"
        assert child.call(10) == 10.0  # the process goes on

    def endless(x):
        while True:
            pass

    with Answerer(cloudpickle.dumps(endless), [], timeout=3) as child:
        with pytest.raises(TimeoutError, match="ran longer than 3 s"):
            child.call(1)


@pytest.mark.slow
def test_the_submission_time_limit_stops_the_run_and_keeps_what_was_defined(tmp_path):
    """Driven by a fake clock (50 s per reading), not by this machine's speed."""
    from posgeom.classroom.grading import _run_submission

    readings = iter(range(0, 10_000, 50))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("a = 1"),
                                         nbformat.v4.new_code_cell("def noise_floor(v, N):\n    return 0.0"),
                                         nbformat.v4.new_code_cell("def my_hellinger(P):\n    return P")])
    work, functions = tmp_path / "work", tmp_path / "functions"
    work.mkdir()
    functions.mkdir()
    notes = _run_submission(nb, ["my_hellinger", "noise_floor"], work, functions, timeout=120, submission_timeout=250,
                            memory_mb=None, clock=lambda: next(readings))
    assert notes == ["the submission's time limit (250 s) was reached before code cell 3; the cells from there on "
                     "were not run"]
    assert sorted(p.name for p in functions.iterdir()) == ["noise_floor.pkl"]


@pytest.mark.slow
def test_the_kernel_runs_under_the_memory_limit(edition, tmp_path):
    """12 GB of address space (never touched, so harmless without a limit) is refused under 8 GB."""
    probe = ("import numpy as np\n"
             "try:\n"
             "    np.empty(int(12e9) // 8)\n"
             "    limited = False\n"
             "except MemoryError:\n"
             "    limited = True\n"
             "def noise_floor(v, N):\n"
             "    return (v - 1) / (2.0 * N) if limited else 0.0\n")
    submission = _submission(edition, tmp_path, "greedy.ipynb", [probe], solved=True)
    report = grade(submission, edition / "autograder.json", exercises_only=True, timeout=120, memory_mb=8192)
    assert report.percent == 100.0, report.table()


# -- confinement under bubblewrap: absolute paths ------------------------------------------------------

def _needs_bwrap():
    from posgeom.classroom.sandbox import bwrap_works

    if not bwrap_works():
        pytest.skip("bubblewrap (bwrap) cannot run here (apt-get install bubblewrap; a container may forbid it)")


def _absolute_attack(targets: list[Path]) -> str:
    """Code that remounts / writable (root keeps no capability under bwrap, so it cannot) and deletes and
    plants files by absolute path; every failure is swallowed, as a cheat's would be."""
    return "\n".join([
        "import os, subprocess",
        "try:",
        "    subprocess.run(['mount', '-o', 'remount,rw,bind', '/'], capture_output=True)",
        "except OSError:",
        "    pass",
        f"for path in {[str(t) for t in targets]!r}:",
        "    for act in (os.remove, lambda p: open(p + '.planted', 'w').write('x')):",
        "        try:",
        "            act(path)",
        "        except OSError:",
        "            pass",
    ])


def test_the_sandbox_option_is_checked_and_bwrap_required_but_missing_is_a_one_line_error(monkeypatch, tmp_path):
    from posgeom.classroom import sandbox
    from posgeom.classroom.grading import _confinement

    with pytest.raises(ValueError, match="unknown sandbox 'jail'; choose one of auto, bwrap, none"):
        sandbox.resolve_sandbox("jail")
    assert sandbox.resolve_sandbox("none") == "none"
    monkeypatch.setattr(sandbox, "bwrap_works", lambda: False)
    assert sandbox.resolve_sandbox("auto") == "none"
    with pytest.raises(ValueError, match=r"apt-get install bubblewrap"):
        sandbox.resolve_sandbox("bwrap")
    with pytest.warns(UserWarning, match="absolute paths is not confined"):
        assert _confinement("auto") is False
    done = subprocess.run([sys.executable, "-m", "posgeom.cli", "classroom", "grade", "missing.ipynb", "--key",
                           "missing.json", "--sandbox", "bwrap"], capture_output=True, text=True, cwd=REPO,
                          env={"PATH": "", "PYTHONPATH": str(REPO), "HOME": str(tmp_path)})
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "bubblewrap (bwrap) is not installed" in done.stderr and "apt-get install bubblewrap" in done.stderr


def test_under_bwrap_the_answering_process_writes_only_in_its_folder_and_has_no_network(tmp_path):
    _needs_bwrap()
    import socket

    keep = tmp_path / "grades.csv"
    keep.write_text("the grade sheet")
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    attack = _absolute_attack([str(keep)])

    def student(x):
        import os
        import socket
        if x > 0:
            exec(attack)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
            reached = True
        except OSError:
            reached = False
        with open("mine.txt", "w") as out:  # its own folder stays writable
            out.write("x")
        return [x * 2.0, reached, os.path.isfile("mine.txt")]

    try:
        with Answerer(cloudpickle.dumps(student), [], timeout=120, confine=True) as child:
            assert child.call(1.5) == [3.0, False, True]
        with Answerer(cloudpickle.dumps(student), [], timeout=120, confine=False) as child:
            assert child.call(-1.0)[1] is True  # the same probe reaches the port when not confined
    finally:
        listener.close()
    assert keep.read_text() == "the grade sheet" and not (tmp_path / "grades.csv.planted").exists()


@pytest.mark.slow
def test_under_bwrap_a_submission_cannot_touch_absolute_paths_outside_its_sandbox(edition, tmp_path):
    """From a cell and from inside the student's function: the key, the grade sheet and another
    submission stand in tmp_path; the exercises that passed still score."""
    _needs_bwrap()
    klass = tmp_path / "class"
    other = _submission(edition, klass / "submissions", "alice.ipynb", [], solved=True)
    key = klass / "autograder.json"
    key.write_text((edition / "autograder.json").read_text())
    sheet = klass / "grades.csv"
    sheet.write_text("submission,score_percent\n")
    targets = [key, sheet, other]
    function_attack = ("_honest_hellinger = my_hellinger\n"
                       "def my_hellinger(probs):\n"
                       + "\n".join("    " + line for line in _absolute_attack(targets).split("\n")) +
                       "\n    return _honest_hellinger(probs)\n")
    attack = _submission(edition, klass / "submissions", "mallory.ipynb",
                         [_absolute_attack(targets), function_attack], solved=True)
    before = {p: p.read_bytes() for p in klass.rglob("*") if p.is_file()}
    report = grade(attack, key, exercises_only=True, timeout=120, sandbox="bwrap")
    assert report.percent == 100.0, report.table()
    assert {p: p.read_bytes() for p in klass.rglob("*") if p.is_file()} == before  # nothing deleted, nothing planted
