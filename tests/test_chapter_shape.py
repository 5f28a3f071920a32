"""The chapters read as lectures: what a reader sees is the argument, not the plumbing.

Three counts per chapter, read from its MyST source (no execution):

* ``glue`` calls in code cells the reader sees (not tagged ``remove-cell`` / ``remove-input``): a number
  quoted in the prose is glued from a typed summary in a hidden cell
  (:func:`posgeom.notebooks.glue_fields`), not by a screen of ``glue(...)`` lines;
* look-ups of stored results by string key (``result.values[...]``, ``result.arrays[...]``): the
  experiment modules return typed records instead;
* ``ComparisonRow(`` in the chapter: the "Paper vs this book" rows are built by the experiment module,
  each decided by its rule in :mod:`posgeom.verdicts`.

The targets of the lecture issue (at most 30 visible glue calls and 40 look-ups in all chapters, no
chapter assembling rows) are reached chapter by chapter; :data:`CEILINGS` holds each chapter's counts
today, so that a converted chapter cannot slide back and an unconverted one cannot grow.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "notebooks").glob("*.md")) + sorted((ROOT / "summary").glob("*.md"))

_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
_TAGS = re.compile(r"^(?::tags:|\s*tags:)\s*\[(.*?)\]", re.M)
_HIDDEN = {"remove-cell", "remove-input"}

#: (visible glue calls, look-ups by string key, ComparisonRow calls) allowed per chapter.
CEILINGS = {
    "corpus-geometry": (18, 65, 1),
    "diagnose-your-model": (0, 0, 0),
    "encodings-at-a-glance": (22, 14, 1),
    "getting-started": (5, 0, 0),
    "inside-bert": (24, 2, 1),
    "learned-tables-fail": (36, 4, 4),
    "learned-tables": (67, 45, 6),
    "minimal-parametrisation": (12, 54, 3),
    "monotonicity": (17, 40, 5),
    "optimal-encoding": (15, 33, 5),
    "real-corpora": (47, 65, 5),
    "sinusoids-as-mds": (10, 20, 2),
    "theorem1-necessity": (2, 0, 0),
    "theorem4-separation": (0, 0, 0),
    "your-own-corpus": (7, 0, 0),
    "does-the-paper-hold-up": (0, 0, 0),
}


def code_cells(source: str) -> list[tuple[set[str], str]]:
    """(tags, source) of every code cell of a MyST notebook."""
    cells = []
    for m in _CELL.finditer(source):
        body = m.group(1)
        tags = {t.strip().strip("'\"") for found in _TAGS.findall(body) for t in found.split(",")}
        cells.append((tags, body))
    return cells


def shape(source: str) -> tuple[int, int, int]:
    """(visible glue calls, look-ups of stored results by string key, ComparisonRow calls) of a chapter."""
    cells = code_cells(source)
    glue = sum(len(re.findall(r"\bglue\(", body)) for tags, body in cells if not tags & _HIDDEN)
    lookups = sum(len(re.findall(r"\.(?:values|arrays)\[", body)) for _, body in cells)
    return glue, lookups, source.count("ComparisonRow(")


def test_the_counter_sees_hidden_cells_and_lookups():
    source = ("```{code-cell} ipython3\nglue('a', 1)\nx = r.values['k']\n```\n\n"
              "```{code-cell} ipython3\n:tags: [remove-cell]\n\nglue('b', 2)\nglue('c', 3)\n```\n\n"
              "```{code-cell} ipython3\n---\nmystnb:\n  figure:\n    caption: c\ntags: [remove-input]\n---\n"
              "glue('d', 4)\ny = r.arrays[f'{n}__curve']\n```\n")
    assert shape(source) == (1, 2, 0)


def test_every_chapter_has_a_ceiling():
    assert {p.stem for p in CHAPTERS} == set(CEILINGS)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_shows_no_more_plumbing_than_its_ceiling(path):
    glue, lookups, rows = shape(path.read_text(encoding="utf-8"))
    most = CEILINGS[path.stem]
    assert all(a <= b for a, b in zip((glue, lookups, rows), most)), (
        f"{path.name}: {glue} visible glue calls, {lookups} look-ups by string key, {rows} ComparisonRow calls; "
        f"at most {most}: glue a typed summary in a hidden cell (posgeom.notebooks.glue_fields), read results "
        "as typed records, and build the comparison rows in the experiment module")
