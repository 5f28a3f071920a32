"""Classroom editions (posgeom.classroom): student and instructor notebooks, and the autograder scoring
the instructor notebook of every chapter 100 % (its solutions answering from the sandbox, where posgeom
is absent, on cases drawn from the key's seed) and a student notebook with the stubs left in 0 %."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from posgeom.classroom.editions import build, chapters_with_exercises, exercise_key
from posgeom.classroom.grading import grade

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
#: Every chapter with coding exercises.
GRADED = chapters_with_exercises(NOTEBOOKS)


@pytest.fixture(scope="module")
def editions(tmp_path_factory):
    out = tmp_path_factory.mktemp("classroom")
    build(GRADED, out, execute=False, notebooks_dir=NOTEBOOKS)
    return out


def _needs_bwrap():
    from posgeom.classroom.sandbox import bwrap_works

    if not bwrap_works():
        pytest.skip("bubblewrap (bwrap) cannot run here (apt-get install bubblewrap; a container may forbid it)")


def test_every_chapter_with_exercises_has_a_key_with_every_exercise():
    exercise = re.compile(r"^(`{3,}|:{3,})\{exercise\}[ \t]*(?P<title>.*)\n(?P<opts>(?::[\w-]+:.*\n)*)", re.M)

    def source_exercises(source):
        numbered = [m.group("title").strip() for m in exercise.finditer(source) if ":nonumber:" not in m.group("opts")]
        return list(enumerate(numbered, start=1))

    chapters = chapters_with_exercises(NOTEBOOKS)
    assert len(chapters) >= 12
    for slug in chapters:
        key = exercise_key(NOTEBOOKS / f"{slug}.md", seed=3)
        assert key["seed"] == 3
        numbered = [(e["number"], e["title"]) for e in key["exercises"] if e["number"] is not None]
        assert numbered == source_exercises((NOTEBOOKS / f"{slug}.md").read_text()), slug
        coding = [e for e in key["exercises"] if e["check"]]
        assert len(coding) >= 2 and all(e["points"] == 1 for e in key["exercises"]), slug
        for e in coding:
            module, _, name = e["check"].partition(":")
            assert module.startswith("posgeom.checks.") and name.startswith("check_")
            assert e["label"].startswith(f"ex-{slug}-") and e["function"].isidentifier()
            assert e["cases"] and all(c["weight"] == 1 and c["case"] for c in e["cases"])


@pytest.mark.parametrize("slug", GRADED)
def test_every_solution_passes_cases_drawn_from_any_seed(slug):
    """The instructor's solution of every coding exercise, read from the notebook as the grader reads it,
    passes the check's cases drawn from five seeds (a draw never makes a case an honest answer fails)."""
    import contextlib
    import io
    from importlib import import_module

    from posgeom.checks.core import grading
    from posgeom.classroom.extract import exercise_program
    from posgeom.notebooks import plain_notebook

    nb = plain_notebook(NOTEBOOKS / f"{slug}.md", solutions=True)
    for e in exercise_key(NOTEBOOKS / f"{slug}.md")["exercises"]:
        if not e["check"]:
            continue
        space: dict = {}
        exec(exercise_program(nb, e["function"]).source, space)  # noqa: S102 - the book's own solution
        module, _, name = e["check"].partition(":")
        check = getattr(import_module(module), name)
        for seed in range(5):
            with grading([seed, 47]), contextlib.redirect_stdout(io.StringIO()):
                verdict = check(space[e["function"]])
            assert verdict.score == 1.0, (e["label"], seed, verdict.message)


@pytest.mark.parametrize("slug", ["corpus-geometry", "theorem4-separation"])
def test_student_edition_has_stubs_and_checks_but_no_solutions(editions, slug):
    student = nbformat.read(str(editions / slug / "student.ipynb"), as_version=4)
    instructor = nbformat.read(str(editions / slug / "instructor.ipynb"), as_version=4)
    key = json.loads((editions / slug / "autograder.json").read_text())
    code = "\n".join(c.source for c in student.cells if c.cell_type == "code")
    solution_code = "\n".join(c.source for c in instructor.cells if c.cell_type == "code")
    key["exercises"] = [e for e in key["exercises"] if e["check"]]
    for e in key["exercises"]:
        assert f'raise NotImplementedError("write {e["function"]}")' in code
        assert f'raise NotImplementedError("write {e["function"]}")' not in solution_code
        assert f"{e['check'].partition(':')[2]}({e['function']})" in code
    for e in key["exercises"]:
        def solved(cell, name=e["function"]):
            return cell.cell_type == "code" and f"def {name}(" in cell.source and "NotImplementedError" not in cell.source

        assert any(solved(c) for c in instructor.cells) and not any(solved(c) for c in student.cells)
    text = "\n".join(c.source for c in student.cells)
    assert "Solution." not in text and "{solution" not in text
    assert "**Solution.**" in "\n".join(c.source for c in instructor.cells)


@pytest.mark.parametrize("slug", GRADED)
def test_autograder_scores_instructor_100_and_stubs_0(editions, slug):
    """Under the default sandbox: the solutions answer without posgeom, on the key's drawn cases."""
    _needs_bwrap()
    key = editions / slug / "autograder.json"
    full = grade(editions / slug / "instructor.ipynb", key, timeout=600)
    assert full.percent == 100.0, full.table()
    empty = grade(editions / slug / "student.ipynb", key, timeout=600)
    assert empty.percent == 0.0, empty.table()
    assert all("not written yet" in e.message for e in empty.exercises)
    assert "Score: 0 %" in empty.table()


def test_grade_runs_the_checks_itself_even_when_the_check_cell_is_deleted(editions, tmp_path):
    _needs_bwrap()
    slug = "corpus-geometry"
    nb = nbformat.read(str(editions / slug / "instructor.ipynb"), as_version=4)
    nb.cells = [c for c in nb.cells if "exercise-check" not in c.metadata.get("tags", [])]
    nb.cells.append(nbformat.v4.new_code_cell("1 / 0  # a broken cell does not stop the grading"))
    path = tmp_path / "submission.ipynb"
    nbformat.write(nb, str(path))
    assert grade(path, editions / slug / "autograder.json", timeout=600).percent == 100.0


def test_cli_build_refuses_an_unknown_chapter(tmp_path):
    done = subprocess.run([sys.executable, "-m", "posgeom.cli", "classroom", "build", "--chapters", "no-such",
                           "--out", str(tmp_path), "--no-execute"], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 2
    assert "no chapter with coding exercises named no-such" in done.stderr


def test_blocks_titled_with_the_papers_number_are_not_counted():
    from posgeom.notebooks import plain_markdown

    counts: dict = {}
    text = plain_markdown("```{prf:theorem} Separation (Theorem 4 of the paper)\n:nonumber:\n:label: t\n\nBody.\n```\n\n"
                          "```{prf:theorem} Another\n:label: u\n\nBody.\n```", counts=counts)
    assert "**Theorem (Separation (Theorem 4 of the paper)).**" in text
    assert "**Theorem 1 (Another).**" in text


@pytest.mark.parametrize("slug", chapters_with_exercises(NOTEBOOKS))
def test_chapter_exercises_meet_the_house_rules(slug):
    """At least three exercises, at least two coding exercises with checks, and no solution code left
    in a Markdown fence (the build executes every solution's code)."""
    source = (NOTEBOOKS / f"{slug}.md").read_text()
    assert source.count("{exercise}") >= 3
    assert len(exercise_key(NOTEBOOKS / f"{slug}.md")["exercises"]) >= 2
    fenced = re.findall(r"^(`{3,})\{solution\}.*?\n(.*?)^\1$", source, re.S | re.M)
    assert not [body for _, body in fenced if re.search(r"^(```|~~~)python$", body, re.M)], \
        f"{slug}: a solution holds code in a Markdown fence; put it in a code cell between solution-start/end"


def test_build_executes_the_instructor_edition(tmp_path, monkeypatch, capfd):
    """The default build runs the instructor notebook: its check cells print a passing verdict. (The chapter
    with exercises that runs quickest: this test executes a whole chapter, as the strict build does.)"""
    monkeypatch.setenv("POSGEOM_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    (folder,) = build(["encodings-at-a-glance"], tmp_path / "out", notebooks_dir=NOTEBOOKS, timeout=600)
    nb = nbformat.read(str(folder / "instructor.ipynb"), as_version=4)
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    # One print may reach the notebook as several stream outputs (the kernel flushes its text and its
    # newline apart when the machine is busy): a cell's verdict is the text of all its outputs.
    verdicts = ["".join(o.get("text", "") for o in c.get("outputs", []) if o.get("output_type") == "stream")
                for c in nb.cells if "exercise-check" in c.metadata.get("tags", [])]
    assert len(verdicts) == 2 and all(v.startswith("✓ ") for v in verdicts), verdicts
    assert "without encryption" not in capfd.readouterr().err  # the kernel's start-up noise is filtered
