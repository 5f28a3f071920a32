"""Chapters as plain notebooks (posgeom.notebooks): what the site's .ipynb downloads contain."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

from posgeom.notebooks import glue_values, plain_markdown, plain_notebook, write_plain_notebook

REPO = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((REPO / "notebooks").glob("*.md"))
_SOLUTION = re.compile(r"^(?P<fence>`{3,})\{solution\}.*?\n(?P<body>.*?)^(?P=fence)[ \t]*$", re.S | re.M)


def solution_lines(source: str) -> list[str]:
    """Long lines that occur only inside the chapter's solutions."""
    bodies = [m.group("body") for m in _SOLUTION.finditer(source)]
    outside = _SOLUTION.sub("", source)
    return [line.strip() for body in bodies for line in body.splitlines()
            if len(line.strip()) >= 30 and not line.strip().startswith(":") and line.strip() not in outside]


def test_every_chapter_is_found():
    assert len(CHAPTERS) >= 13


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_download_has_no_myst_left_and_no_solutions(chapter, tmp_path):
    target = write_plain_notebook(chapter, tmp_path / f"{chapter.stem}.ipynb")
    nb = nbformat.read(str(target), as_version=4)
    nbformat.validate(nb)
    text = target.read_text()
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "{glue" not in text
    assert "```{prf:" not in markdown and "{prf:" not in markdown
    assert "{solution" not in markdown and "{exercise" not in markdown and "{admonition" not in markdown
    assert "from myst_nb import" not in text
    source = chapter.read_text()
    hidden = solution_lines(source)
    if "{solution}" in source:
        assert hidden, "the solutions of this chapter have no distinctive line to look for"
    leaked = [line for line in hidden if line in markdown or json.dumps(line)[1:-1] in text]
    assert not leaked, leaked[:3]
    if "{exercise}" in source:
        assert "**Exercise 1" in markdown
    assert all(not o for c in nb.cells if c.cell_type == "code" for o in [c.outputs])


def test_blocks_become_plain_markdown():
    source = "\n".join([
        "(sec-x)=",
        "## Result",
        "% a comment",
        "```{prf:theorem} Order",
        ":label: thm-order",
        "",
        "For all $i$, $$a_i \\le b_i.$$",
        "```",
        "",
        "```{prf:proof}",
        "Obvious, see {prf:ref}`thm-order` and {cite:p}`vaswani2017`.",
        "```",
        "",
        "````{exercise} Try it",
        ":label: ex-1",
        "Compute $x$.",
        "```{note}",
        "Nested.",
        "```",
        "````",
        "",
        "````{solution} ex-1",
        ":class: dropdown",
        "The answer is 42.",
        "~~~python",
        "print(42)",
        "~~~",
        "````",
        "```{admonition} Careful",
        ":class: warning",
        "Two lines",
        "of text.",
        "```",
    ])
    out = plain_markdown(source, labels={"thm-order": "Theorem 1"})
    assert "**Theorem 1 (Order).**" in out and "For all $i$, $$a_i \\le b_i.$$" in out
    assert "*Proof.*" in out and "Obvious, see Theorem 1 and [vaswani2017]." in out and "$\\blacksquare$" in out
    assert "**Exercise 1 (Try it).**" in out and "> **Note**" in out and "> Nested." in out
    assert "42" not in out and "dropdown" not in out and ":label:" not in out
    assert "> **Careful**" in out and "> Two lines\n> of text." in out
    assert "(sec-x)=" not in out and "a comment" not in out
    kept = plain_markdown(source, solutions=True)
    assert "**Solution.**" in kept and "The answer is 42." in kept and "print(42)" in kept


def test_glued_numbers_are_written_out_or_their_cell_named(tmp_path):
    chapter = tmp_path / "chapter.md"
    chapter.write_text("\n".join([
        "---", "jupytext:", "  text_representation:", "    extension: .md", "    format_name: myst", "kernelspec:",
        "  name: python3", "  display_name: Python 3", "---", "",
        "```{code-cell} ipython3", "from myst_nb import glue", "x = 1", "```", "",
        "```{code-cell} ipython3", "for name in ('a', 'b'):", "    glue(f\"rate_{name}\", 0.1234, display=False)",
        "glue('count', 7)", "```", "",
        "The rate is {glue:text}`rate_a:.1%` over {glue:text}`count` runs, b is {glue:text}`rate_b:.2f`.", "",
    ]))
    named = plain_notebook(chapter)
    text = named.cells[-1].source
    assert "`rate_a`" in text and "`count`" in text and "code cell 2" in text and "{glue" not in text
    assert named.cells[0].source.startswith("from posgeom.notebooks import glue")
    executed = {"cells": [{"cell_type": "code", "outputs": [
        {"output_type": "display_data", "metadata": {"scrapbook": {"name": "rate_a", "mime_prefix": "application/papermill.record/"}},
         "data": {"application/papermill.record/text/plain": "0.1234"}},
        {"output_type": "display_data", "metadata": {"scrapbook": {"name": "count", "mime_prefix": ""}},
         "data": {"text/plain": "7"}},
    ]}]}
    assert glue_values(executed) == {"rate_a": "0.1234", "count": "7"}
    text = plain_notebook(chapter, executed=executed).cells[-1].source
    assert text.startswith("The rate is 12.3% over 7 runs, b is `rate_b`.")
    assert "code cell 2" in text  # rate_b had no value: its cell is named


def test_glue_fallback_shows_the_value(capsys):
    from posgeom.notebooks import glue

    glue("posgeom_test_value", 3, display=False)  # with or without myst-nb: no error
