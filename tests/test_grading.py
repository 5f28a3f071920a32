"""The autograder decides each exercise on its own, outside the student's reach (posgeom.classroom.grading,
posgeom.classroom.sandbox, posgeom.classroom.extract, posgeom.classroom.worker).

From a class of real submissions: an endless or dying cell before correct exercises, definitions that never
finish, cheats that reach the library, the checks, the instructor edition or a classmate's notebook,
forged grade lines and terminal escapes, hard-coded hidden cases, a sandbox that cannot run, bad limits
and a folder graded into a grade sheet with a column for every exercise."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pytest

from posgeom.classroom.editions import build
from posgeom.classroom.grading import grade, read_key
from posgeom.classroom.sandbox import Answerer, StudentError, bwrap_works, decode_answer
from posgeom.classroom.answer_server import encode_answer

REPO = Path(__file__).resolve().parents[1]
CHAPTER = "corpus-geometry"  # six exercises: 1 (my_hellinger) and 5 (noise_floor) coding, four by hand

HELLINGER = ("import numpy as np\n"
             "def my_hellinger(probs):\n"
             "    S = np.sqrt(probs)\n"
             "    return np.sqrt(((S[:, None, :] - S[None, :, :]) ** 2).sum(axis=-1))\n")
NOISE = "def noise_floor(v, N):\n    return (v - 1) / (2.0 * N)\n"


def _needs_bwrap():
    if not bwrap_works():
        pytest.skip("bubblewrap (bwrap) cannot run here (apt-get install bubblewrap; a container may forbid it)")


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    out = tmp_path_factory.mktemp("classroom")
    (folder,) = build([CHAPTER], out, execute=False, notebooks_dir=REPO / "notebooks", seed=20260)
    return folder


def _submission(edition: Path, folder: Path, name: str, extra: list[str], *, solved: bool = False,
                first: list[str] = ()) -> Path:
    """The student (or instructor) edition with cells ``first`` after its first code cell and ``extra`` at the end."""
    nb = nbformat.read(str(edition / ("instructor.ipynb" if solved else "student.ipynb")), as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code") + 1
    nb.cells[at:at] = [nbformat.v4.new_code_cell(source) for source in first]
    nb.cells += [nbformat.v4.new_code_cell(source) for source in extra]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    nbformat.write(nb, str(path))
    return path


def _scores(report) -> dict:
    return {e.label: e.score for e in report.exercises}


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


# -- 1. a hanging or crashing cell costs only what depends on it --------------------------------------

@pytest.mark.parametrize("cell", ["import time\nwhile True:\n    time.sleep(0.05)", "import os\nos._exit(1)",
                                  "raise SystemExit('the notebook ends here')"],
                         ids=["endless", "dying", "exiting"])
def test_a_hanging_or_dying_cell_before_two_correct_exercises_costs_nothing(edition, tmp_path, cell):
    _needs_bwrap()
    submission = _submission(edition, tmp_path, "s.ipynb", [HELLINGER, NOISE], first=[cell])
    report = grade(submission, edition / "autograder.json", timeout=20)
    assert report.percent == 100.0, report.table()


def test_definitions_that_never_finish_cost_only_the_exercise_that_uses_them(edition, tmp_path):
    """A global that never finishes computing, used by one function: that exercise is stopped at --timeout
    (no fixed start-up limit), the other scores; and --submission-timeout bounds it too."""
    _needs_bwrap()
    slow = "import time\nSLOW = time.sleep(10 ** 6)\n"
    uses_it = "def noise_floor(v, N):\n    return SLOW or (v - 1) / (2.0 * N)\n"
    submission = _submission(edition, tmp_path, "s.ipynb", [slow, uses_it, HELLINGER])
    report = grade(submission, edition / "autograder.json", timeout=3)
    scores = {e.label: e for e in report.exercises}
    assert scores["ex-corpus-geometry-1"].score == 1.0, report.table()
    assert scores["ex-corpus-geometry-5"].score == 0.0
    assert "did not finish running" in scores["ex-corpus-geometry-5"].message
    assert "the 3 s limit" in scores["ex-corpus-geometry-5"].message
    report = grade(submission, edition / "autograder.json", timeout=600, submission_timeout=4)
    message = {e.label: e.message for e in report.exercises}["ex-corpus-geometry-5"]
    assert "time limit" in message, report.table()


# -- 3. the answering process reaches neither the library nor the course files -------------------------

def _cheats(instructor: Path, classmate: Path) -> dict[str, str]:
    """Each defines my_hellinger through something the student must not reach."""
    return {
        "meta_path": ("import sys, numpy as np\n"
                      "def my_hellinger(probs):\n"
                      "    sys.meta_path[:] = [f for f in sys.meta_path if 'Blocker' not in type(f).__name__]\n"
                      "    for name in [n for n in sys.modules if n.startswith('posgeom')]:\n"
                      "        del sys.modules[name]\n"
                      "    import posgeom\n"
                      "    return posgeom.hellinger_matrix(probs)\n"),
        "child_python": ("import sys, subprocess, numpy as np, io\n"
                         "def my_hellinger(probs):\n"
                         "    buffer = io.BytesIO(); np.save(buffer, probs)\n"
                         "    code = ('import sys, io, numpy, posgeom; P = numpy.load(io.BytesIO(sys.stdin.buffer.read()));'\n"
                         "            'out = io.BytesIO(); numpy.save(out, posgeom.hellinger_matrix(P)); sys.stdout.buffer.write(out.getvalue())')\n"
                         "    done = subprocess.run([sys.executable, '-I', '-c', code], input=buffer.getvalue(),\n"
                         "                          capture_output=True, env={})\n"
                         "    return np.load(io.BytesIO(done.stdout))\n"),
        "private_helper": ("import numpy as np\n"
                           "def my_hellinger(probs):\n"
                           "    from posgeom.geometry import hellinger as h\n"
                           "    return h.hellinger_matrix.__wrapped__(probs) if hasattr(h.hellinger_matrix, '__wrapped__') "
                           "else h.hellinger_matrix(probs)\n"),
        "code_object": ("import types, numpy as np\n"
                        "def my_hellinger(probs):\n"
                        "    import posgeom.geometry.hellinger as h\n"
                        "    f = h.hellinger_matrix\n"
                        "    return types.FunctionType(f.__code__, vars(h), None, f.__defaults__)(probs)\n"),
        "the_oracle": ("import numpy as np\n"
                       "def my_hellinger(probs):\n"
                       "    from posgeom.checks.optimal_encoding import _hellinger_oracle\n"
                       "    return _hellinger_oracle(probs)\n"),
        "instructor_edition": ("import json, numpy as np\n"
                               "def my_hellinger(probs):\n"
                               f"    cells = json.load(open({str(instructor)!r}))['cells']\n"
                               "    space = {}\n"
                               "    for cell in cells:\n"
                               "        source = ''.join(cell['source'])\n"
                               "        if cell['cell_type'] == 'code' and 'def my_hellinger' in source and 'NotImpl' not in source:\n"
                               "            exec(source, space)\n"
                               "    return space['my_hellinger'](probs)\n"),
        "classmate": ("import json, numpy as np\n"
                      "def my_hellinger(probs):\n"
                      f"    cells = json.load(open({str(classmate)!r}))['cells']\n"
                      "    space = {}\n"
                      "    exec(''.join(cells[-2]['source']), space)\n"
                      "    return space['my_hellinger'](probs)\n"),
    }


def test_cheats_that_reach_the_library_the_checks_or_the_course_files_score_0(edition, tmp_path):
    """Under the default sandbox; each cheat passes when its target is reachable (the control below)."""
    _needs_bwrap()
    klass = tmp_path / "class"
    instructor = klass / "editions" / "instructor.ipynb"
    instructor.parent.mkdir(parents=True)
    instructor.write_text((edition / "instructor.ipynb").read_text())
    alice = _submission(edition, klass / "submissions", "alice.ipynb", [HELLINGER, NOISE])
    key = klass / "autograder.json"
    key.write_text((edition / "autograder.json").read_text())
    cheats = _cheats(instructor, alice)
    for name, source in cheats.items():
        path = _submission(edition, klass / "submissions", f"{name}.ipynb", [source, NOISE])
        report = grade(path, key, timeout=60)
        assert _scores(report)["ex-corpus-geometry-1"] == 0.0, (name, report.table())
        assert _scores(report)["ex-corpus-geometry-5"] == 1.0, (name, report.table())
    # the control: without the sandbox the same files and the library are there, and the reading cheats pass
    for name in ("instructor_edition", "classmate", "meta_path"):
        report = grade(klass / "submissions" / f"{name}.ipynb", key, timeout=60, sandbox="none")
        assert _scores(report)["ex-corpus-geometry-1"] == 1.0, (name, report.table())


def test_the_answering_process_has_no_network_a_process_cap_and_a_memory_limit(tmp_path):
    _needs_bwrap()
    import socket

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    probe = ("import os, socket, time\n"
             "def probe(n):\n"
             "    try:\n"
             f"        socket.create_connection(('127.0.0.1', {port}), timeout=5).close()\n"
             "        reached = True\n"
             "    except OSError:\n"
             "        reached = False\n"
             "    children = 0\n"
             "    try:\n"
             "        for _ in range(n):\n"
             "            if os.fork() == 0:\n"
             "                time.sleep(5)\n"
             "                os._exit(0)\n"
             "            children += 1\n"
             "    except OSError:\n"
             "        pass\n"
             "    return [reached, children]\n")
    try:
        with Answerer(probe, "probe", timeout=60, sandbox="bwrap") as child:
            reached, children = child.call(500)
        assert reached is False and children < 100
        with Answerer(probe, "probe", timeout=60, sandbox="none") as child:
            assert child.call(0)[0] is True  # the same probe reaches the port without the sandbox
    finally:
        listener.close()
    greedy = "import numpy as np\ndef greedy(n):\n    return float(np.ones(int(n)).sum())\n"
    with Answerer(greedy, "greedy", timeout=60, memory_mb=1024, sandbox="bwrap") as child:
        with pytest.raises(StudentError) as raised:
            child.call(4e9)  # 32 GB
        assert type(raised.value).__name__ == "MemoryError"
        assert child.call(10) == 10.0
    with Answerer("def endless(x):\n    while True:\n        pass\n", "endless", timeout=2, sandbox="bwrap") as child:
        with pytest.raises(TimeoutError, match="ran past the 2 s limit"):
            child.call(1)


def test_without_a_sandbox_every_process_a_submission_started_is_ended(edition, tmp_path):
    """--sandbox none (trusted work): a daemon that left the session is still ended with its exercise."""
    pids = tmp_path / "pids.txt"
    daemon = ("import os, time\n"
              "def noise_floor(v, N):\n"
              "    if os.fork() == 0:\n"
              "        os.setsid()\n"
              "        if os.fork() == 0:\n"
              f"            open({str(pids)!r}, 'a').write(f'{{os.getpid()}}\\n')\n"
              "            time.sleep(600)\n"
              "        os._exit(0)\n"
              "    time.sleep(0.5)\n"
              "    return (v - 1) / (2.0 * N)\n")
    submission = _submission(edition, tmp_path, "daemon.ipynb", [HELLINGER, daemon])
    report = grade(submission, edition / "autograder.json", timeout=60, sandbox="none")
    assert report.percent == 100.0, report.table()
    started = [int(p) for p in pids.read_text().split()]
    assert started
    import time

    for _ in range(50):
        alive = [p for p in started if Path(f"/proc/{p}").exists() and "Z" not in Path(f"/proc/{p}/stat").read_text().split()[2]]
        if not alive:
            break
        time.sleep(0.1)
    assert not alive


# -- 4 and 7. hidden cases drawn from the instructor's seed, weighted; feedback names the property ------

def test_hidden_cases_are_drawn_from_the_keys_seed_and_weighted(edition, tmp_path):
    _needs_bwrap()
    hard_coded = ("def noise_floor(v, N):\n"
                  "    return {(2, 10): 0.05, (100, 10_000): 99 / 20_000, (30_000, 8_000): 29_999 / 16_000, (7, 1): 3.0}[(v, N)]\n")
    submission = _submission(edition, tmp_path, "hard.ipynb", [HELLINGER, hard_coded])
    key = json.loads((edition / "autograder.json").read_text())
    practice = dict(key, seed=None)
    assert _scores(grade(submission, practice, timeout=60))["ex-corpus-geometry-5"] == 1.0  # the open cases
    report = grade(submission, key, timeout=60)
    message = {e.label: e.message for e in report.exercises}["ex-corpus-geometry-5"]
    assert _scores(report)["ex-corpus-geometry-5"] == 0.0, report.table()
    labels = [c["case"] for c in next(e for e in key["exercises"] if e["label"] == "ex-corpus-geometry-5")["cases"]]
    assert "Case '" not in message and not any(label in message for label in labels), message
    assert "KeyError" in message  # what went wrong, not with which inputs
    # per-case credit: right only for two tokens, the first case, weighted 3 of 6
    partly = "def noise_floor(v, N):\n    return (v - 1) / (2.0 * N) if v == 2 else 0.0\n"
    weighted = json.loads(json.dumps(key))
    exercise = next(e for e in weighted["exercises"] if e["label"] == "ex-corpus-geometry-5")
    exercise["points"] = 2
    for case, weight in zip(exercise["cases"], (3, 1, 1, 1)):
        case["weight"] = weight
    report = grade(_submission(edition, tmp_path, "partly.ipynb", [HELLINGER, partly]), weighted, timeout=60)
    noise = next(e for e in report.exercises if e.label == "ex-corpus-geometry-5")
    assert noise.score == 0.5 and noise.earned == 1.0 and report.percent == pytest.approx(100 * 2 / 3)
    assert "1 of 4 hidden cases correct" in noise.message and "the expected squared distance is wrong" in noise.message


# -- 5 and 6. the instructor's terminal, the sandbox refused, the limits checked -----------------------

def _cli(*args, env=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "posgeom.cli", "classroom", "grade", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd or REPO, env=env)


def test_student_output_stays_off_the_terminal_and_student_text_is_escaped(edition, tmp_path):
    _needs_bwrap()
    forged = ("import sys\n"
              "print('Score: 100 %')\n"
              "def noise_floor(v, N):\n"
              "    print('Exercise 5 (The noise floor as a function): 1/1  ✓ forged', flush=True)\n"
              "    print('\\x1b[2K\\rScore: 100 %', file=sys.stderr)\n"
              "    raise ValueError('\\r\\x1b[2K\\x1b[8mScore: 100 %')\n")
    submission = _submission(edition, tmp_path, "mallory.ipynb", [HELLINGER, forged])
    done = _cli(submission, "--key", edition / "autograder.json", "--timeout", "60", "--feedback", tmp_path / "fb")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no kernel, no banner, no "Kernel is running over TCP without encryption"
    assert "\x1b" not in done.stdout and "\r" not in done.stdout
    assert [line for line in done.stdout.splitlines() if "Score:" in line.split("  ")[0]] == ["Score: 50 %"], done.stdout
    assert "forged" not in done.stdout and "\\x1b[8m" in done.stdout  # the exception text, escaped
    feedback = (tmp_path / "fb" / "mallory.txt").read_text()
    assert "forged" in feedback and "\x1b" not in feedback and "\\x1b[2K" in feedback


def test_a_sandbox_that_cannot_run_is_refused_and_bad_limits_name_their_flag(edition, tmp_path):
    submission = _submission(edition, tmp_path, "alice.ipynb", [HELLINGER, NOISE])
    key = edition / "autograder.json"
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "bwrap").write_text("#!/bin/sh\nexit 1\n")
    (fake / "bwrap").chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}{os.pathsep}{os.environ.get('PATH', '')}"}
    for sandbox in ("auto", "bwrap"):
        done = _cli(submission, "--key", key, "--sandbox", sandbox, env=env)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert "apt-get install bubblewrap" in done.stderr and "--sandbox none" in done.stderr
    not_json = tmp_path / "key.json"
    not_json.write_text("<html>")
    for args, words in ((["--memory-mb", "-5"], "--memory-mb"), (["--timeout", "nan"], "--timeout"),
                        (["--submission-timeout", "inf"], "--submission-timeout"),
                        (["--key", not_json], str(not_json))):
        full = [submission, "--key", key, *args] if args[0] != "--key" else [submission, *args]
        done = _cli(*full, "--sandbox", "none")
        assert done.returncode == 2 and done.stderr.count("\n") == 1, (args, done.stderr)
        assert words in done.stderr, (args, done.stderr)
    assert "not JSON" in done.stderr and "posgeom classroom build" in done.stderr


# -- 7. the grade sheet ------------------------------------------------------------------------------

def test_a_folder_grades_into_a_sheet_with_a_column_for_every_exercise_and_feedback_files(edition, tmp_path):
    _needs_bwrap()
    folder = tmp_path / "submissions"
    _submission(edition, folder, "alice.ipynb", [HELLINGER, NOISE])
    _submission(edition, folder, "bob.ipynb", [])
    (folder / "carol.ipynb").write_text("not a notebook")
    sheet, feedback = tmp_path / "grades.csv", tmp_path / "feedback"
    done = _cli(folder, "--key", edition / "autograder.json", "--jobs", "2", "--csv", sheet, "--feedback", feedback)
    assert done.returncode == 1, done.stderr  # one submission could not be graded
    assert "graded 2 of 3 submissions" in done.stdout and "mean 50 %" in done.stdout, done.stdout
    rows = list(csv.DictReader(sheet.open()))
    key = read_key(edition / "autograder.json")
    columns = [f"exercise {e['number']}: {e['title']}" for e in key["exercises"]]
    assert len(columns) == 6 and list(rows[0]) == ["submission", "score_percent", *columns, "message"]
    assert [r["submission"] for r in rows] == ["alice.ipynb", "bob.ipynb", "carol.ipynb"]
    assert rows[0]["score_percent"] == "100" and rows[1]["score_percent"] == "0"
    assert rows[0]["exercise 1: The chord Hellinger matrix"] == "1" and rows[1]["exercise 5: The noise floor as a function"] == "0"
    assert rows[0]["exercise 2: Predict the noise"] == "" and rows[0]["exercise 6: More sequences, less noise"] == ""
    assert "not written yet" in rows[1]["message"] and rows[2]["message"].startswith("not graded: carol.ipynb is not a Jupyter")
    assert sorted(p.name for p in feedback.iterdir()) == ["alice.txt", "bob.txt", "carol.txt"]
    assert "Score: 100 %" in (feedback / "alice.txt").read_text()


def test_the_graders_worker_limits_its_own_memory_and_reads_no_oversized_answer():
    done = subprocess.run([sys.executable, "-c", "import resource; from posgeom.classroom.worker import _limit_memory; "
                           "_limit_memory(3000); print(resource.getrlimit(resource.RLIMIT_AS)[0] // 2**20)"],
                          capture_output=True, text=True)
    assert done.stdout.split() == ["3000"], done.stderr
    huge = "import numpy as np\ndef huge(n):\n    return np.zeros(int(n))\n"
    with Answerer(huge, "huge", timeout=60, sandbox="none") as child:
        with pytest.raises(StudentError, match="more than 64 MiB"):
            child.call(2e7)  # 160 MB of answer: refused before it is read


def test_an_unknown_sandbox_is_named():
    from posgeom.classroom.sandbox import resolve_sandbox

    with pytest.raises(ValueError, match="unknown sandbox 'jail'; choose one of auto, bwrap, none"):
        resolve_sandbox("jail")
    assert resolve_sandbox("none") == "none"


def test_a_runtime_under_tmp_is_bound_into_the_private_tmp(tmp_path, monkeypatch):
    """A venv inside a temporary clone (/tmp/…/.venv, as CI or a student's checkout may have) stays visible:
    the answering process's private /tmp is mounted before the runtime is bound, not over it."""
    _needs_bwrap()
    from posgeom.classroom import sandbox

    runtime = tmp_path / "runtime"
    runtime.mkdir()
    (runtime / "hello.py").write_text("print('bound')\n")
    real = sandbox._runtime_paths()
    monkeypatch.setattr(sandbox, "_runtime_paths", lambda: real + [str(runtime)])
    command = sandbox.answer_command([sys.executable, "-I", str(runtime / "hello.py")], memory_mb=256)
    done = subprocess.run(command, capture_output=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 0 and done.stdout.strip() == b"bound", done.stderr[-500:]
