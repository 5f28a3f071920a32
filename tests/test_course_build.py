"""The course build of the book (``posgeom book --course``, posgeom.classroom.course): the site without the
exercises' solutions, gated ones and their code included, and without the buttons leading to the sources."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from posgeom.classroom.course import course_config, write_course_config

REPO = Path(__file__).resolve().parents[1]

PAGE = """# A page

```{exercise} Add
:label: ex-add

Write `add(a, b)`.
```

```{solution-start} ex-add
:class: dropdown
```

The gated reasoning, secret-gated.

```python
def add(a, b):
    return a + b  # secret-code
```

```{solution-end}
```

```{exercise} Say
:label: ex-say

Say why.
```

```{solution} ex-say
:class: dropdown

Because secret-plain.
```

After the exercises.
"""


def _sphinx(tmp_path: Path, course: bool) -> str:
    source = tmp_path / "src"
    source.mkdir(exist_ok=True)
    (source / "conf.py").write_text('extensions = ["myst_parser", "sphinx_exercise", "posgeom.classroom.course"]\n')
    (source / "index.md").write_text(PAGE)
    out = tmp_path / ("course" if course else "site")
    done = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-q", "-W", "-D",
                           f"posgeom_course={int(course)}", str(source), str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return (out / "index.html").read_text()


def test_the_course_extension_removes_every_solution_gated_ones_included(tmp_path):
    site = _sphinx(tmp_path, course=False)
    assert all(word in site for word in ("secret-gated", "secret-code", "secret-plain"))  # the control
    course = _sphinx(tmp_path, course=True)
    assert not any(word in course for word in ("secret-gated", "secret-code", "secret-plain")), course
    assert "Write" in course and "Say why" in course and "After the exercises" in course


def test_the_course_config_is_the_books_without_links_to_the_sources(tmp_path):
    from jupyter_book.config import get_final_config

    config = course_config(REPO)
    assert "posgeom.classroom.course" in config["sphinx"]["extra_extensions"]
    assert config["sphinx"]["config"]["posgeom_course"] is True
    assert not any(config["html"][b] for b in ("use_repository_button", "use_issues_button", "use_edit_page_button"))
    assert config["launch_buttons"] == {}
    assert all(Path(folder).is_dir() for folder in config["sphinx"]["local_extensions"].values())
    path = write_course_config(REPO, tmp_path / "course")
    final, _ = get_final_config(user_yaml=path, cli_config={"latex_individualpages": False}, sourcedir=REPO)
    assert "posgeom.classroom.course" in final["extensions"] and final["posgeom_course"] is True
    assert final["html_title"] == course_config(REPO)["title"] and final["bibtex_bibfiles"] == ["book/references.bib"]


def test_posgeom_book_course_builds_with_the_course_config(tmp_path, monkeypatch):
    from posgeom.cli import main
    from posgeom.reproduce import book

    monkeypatch.setattr(book, "execute_book", lambda *a, **k: book.BookExecution())
    commands = []
    # the build step's runner (jupyter-book under it): the command is recorded, nothing is built
    monkeypatch.setattr(book, "run_quietly", lambda command, cwd: commands.append(command) or 0)
    monkeypatch.setattr("posgeom.reproduce.chapters.project_root", lambda: REPO)
    assert main(["book", "--course", "--path-output", str(tmp_path / "site")]) == 0
    (command,) = commands
    config = Path(command[command.index("--config") + 1])
    assert config.is_file() and config.parent == tmp_path / "site"
    assert command[command.index("--path-output") + 1] == str(tmp_path / "site")
    assert main(["book", "--path-output", str(tmp_path / "full")]) == 0
    assert "--config" not in commands[-1]


def test_the_teaching_page_describes_the_course_build():
    text = (REPO / "book" / "teaching.md").read_text()
    assert "posgeom book --course" in text
    section = text[text.index("posgeom book --course") - 2000:text.index("posgeom book --course") + 2000]
    assert "public" in section and "seed" in text


@pytest.mark.parametrize("flag", ["--course"])
def test_the_book_command_documents_the_course_option(flag):
    done = subprocess.run([sys.executable, "-m", "posgeom.cli", "book", "--help"], capture_output=True, text=True,
                          cwd=REPO)
    assert flag in done.stdout and "solutions" in done.stdout
