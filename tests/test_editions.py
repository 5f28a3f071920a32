"""Student editions (the chapter downloads and the classroom's student.ipynb, one writer) are complete
and clean: every exercise of the source under the book's number and title, and no line of any solution."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from posgeom.notebooks import plain_notebook

REPO = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((REPO / "notebooks").glob("*.md"))
_EXERCISE = re.compile(r"^(`{3,}|:{3,})\{exercise\}[ \t]*(?P<title>.*)\n(?P<opts>(?::[\w-]+:.*\n)*)", re.M)
_SOLUTION = re.compile(r"^(?P<fence>`{3,}|:{3,})\{solution\}.*?\n(?P<body>.*?)^(?P=fence)[ \t]*$", re.S | re.M)
_GATED = re.compile(r"^(?P<fence>`{3,}|:{3,})\{solution-start\}.*?\n(?P<body>.*?)^(?P=fence)\{solution-end\}", re.S | re.M)
_FENCE_OR_OPTION = re.compile(r"^(`{3,}|:{3,}|:[\w-]+:|\+\+\+)")
_ROLE = re.compile(r"\{[\w:-]+\}`[^`]*`|\$[^$]*\$")


def source_exercises(source: str) -> list[tuple[int, str]]:
    """(book number, title) of every numbered exercise, in order (the book numbers them per page)."""
    numbered = [m.group("title").strip() for m in _EXERCISE.finditer(source) if ":nonumber:" not in m.group("opts")]
    return list(enumerate(numbered, start=1))


_CELL_OPTIONS = re.compile(r"(^```\{code-cell\}[^\n]*\n)---\n.*?^---\n", re.S | re.M)


def solution_lines(source: str) -> list[str]:
    """Every line of every solution ({solution} blocks, and all between solution-start and -end) that
    appears nowhere else in the chapter, as the fragments an edition would show."""
    bodies = [m.group("body") for m in _SOLUTION.finditer(source)] + [m.group("body") for m in _GATED.finditer(source)]
    # a code cell's YAML options (its figure's caption and alt text) become cell metadata, not text
    bodies = [_CELL_OPTIONS.sub(r"\1", body) for body in bodies]
    outside = _GATED.sub("", _SOLUTION.sub("", source))
    lines = []
    for body in bodies:
        for line in body.splitlines():
            line = line.strip()
            if not line or _FENCE_OR_OPTION.match(line) or line in outside:
                continue
            fragments = [f.strip(" .,;:()") for f in _ROLE.split(line)]
            longest = max(fragments, key=len)
            if len(longest) >= 8 and longest not in outside:
                lines.append(longest)
    return lines


def test_the_solution_finder_sees_gated_solutions():
    source = ("```{exercise} A\n:label: a\n\nDo it.\n```\n\n```{solution-start} a\n:class: dropdown\n```\n\n"
              "The hidden reasoning of this solution.\n\n```{code-cell} ipython3\nanswer_is_here = 42\n```\n\n"
              "```{solution-end}\n```\n")
    assert solution_lines(source) == ["The hidden reasoning of this solution", "answer_is_here = 42"]
    assert source_exercises(source) == [(1, "A")]


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_student_edition_has_every_exercise_and_no_solution(chapter):
    source = chapter.read_text()
    nb = plain_notebook(chapter)
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    text = "\n".join(c.source for c in nb.cells)
    shown = [(int(n), title) for n, title in re.findall(r"\*\*Exercise (\d+) \((.*?)\)\.\*\*", markdown)]
    assert shown == source_exercises(source)
    leaked = [line for line in solution_lines(source) if line in text or json.dumps(line)[1:-1] in text]
    assert not leaked, leaked[:5]
    assert "Solution." not in markdown


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_instructor_edition_keeps_every_solution(chapter):
    source = chapter.read_text()
    nb = plain_notebook(chapter, solutions=True)
    text = "\n".join(c.source for c in nb.cells)
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    shown = [(int(n), title) for n, title in re.findall(r"\*\*Exercise (\d+) \((.*?)\)\.\*\*", markdown)]
    assert shown == source_exercises(source)
    # every solution line is there (maths and roles are rewritten, so look for the plain fragments)
    missing = [line for line in solution_lines(source) if line not in text]
    assert not missing, missing[:5]


def _bib_keys() -> list[str]:
    return re.findall(r"^@\w+\{([^,]+),", (REPO / "book" / "references.bib").read_text(), re.M)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_export_holds_no_glue_name_no_citation_key_and_no_myst(chapter):
    source = chapter.read_text()
    keys = {m.rpartition(":")[0] if ":" in m else m for m in re.findall(r"\{glue:text\}`([^`]+)`", source)}
    values = {key: "1" for key in keys}
    for nb in (plain_notebook(chapter), plain_notebook(chapter, executed=values)):
        markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
        named = sorted(k for k in keys if re.search(rf"(?<![\w/]){re.escape(k)}(?![\w/])", markdown))
        assert not named, named[:5]
        cited = [k for k in _bib_keys() if re.search(rf"(?<![\w/]){re.escape(k)}(?![\w/])", markdown)]
        assert not cited, cited
        for myst in ("{glue", "{cite", "{prf:", "{exercise", "{solution", "{ref}", "{numref}", "{doc}", ":::", "```{"):
            assert myst not in markdown, myst
        assert not re.search(r"^\([\w.:-]+\)=", markdown, re.M)
        assert not re.search(r"\]\((?!https?:|#)[^)]*\.md[)#]", markdown), "a link to a .md file is left"
    if "{cite" in source:
        assert nb.cells[-1].source.startswith("## References")
    first_code = next(c for c in nb.cells if c.cell_type == "code")
    assert "%pip install" in first_code.source and "git+https://github.com/posgeom/posgeom@main" in first_code.source
