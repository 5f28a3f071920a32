"""The chapters read as lectures: what a reader sees is the argument, not the plumbing.

Three counts per chapter, read from its MyST source (no execution):

* ``glue`` calls in code cells the reader sees (not tagged ``remove-cell`` / ``remove-input``): a number
  quoted in the prose is glued from a typed summary in a hidden cell
  (:func:`posgeom.notebooks.glue_fields`), not by a screen of ``glue(...)`` lines;
* look-ups of stored results by string key (``result.values[...]``, ``result.arrays[...]``): the
  experiment modules return typed records instead;
* ``ComparisonRow(`` in the chapter: the "Paper vs this book" rows are built by the experiment module,
  each decided by its rule in :mod:`posgeom.verdicts`.

The lecture issue's targets: at most 30 visible glue calls and 40 look-ups by string key in all chapters,
no chapter assembling rows. :data:`CEILINGS` holds each chapter's counts today (no visible glue and no
rows anywhere; the few look-ups left read a stored array for a figure), so that no chapter can slide back.
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
    "corpus-geometry": (0, 3, 0),
    "diagnose-your-model": (0, 0, 0),
    "encodings-at-a-glance": (0, 0, 0),
    "getting-started": (0, 0, 0),
    "inside-bert": (0, 0, 0),
    "learned-tables-fail": (0, 5, 0),
    "learned-tables": (0, 1, 0),
    "minimal-parametrisation": (0, 0, 0),
    "monotonicity": (0, 0, 0),
    "optimal-encoding": (0, 7, 0),
    "real-corpora": (0, 7, 0),
    "sinusoids-as-mds": (0, 0, 0),
    "theorem1-necessity": (0, 0, 0),
    "theorem4-separation": (0, 0, 0),
    "your-own-corpus": (0, 0, 0),
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


def test_the_lecture_targets_hold_over_all_chapters():
    glue, lookups, rows = (sum(shape(p.read_text(encoding="utf-8"))[k] for p in CHAPTERS) for k in range(3))
    assert glue <= 30 and lookups <= 40 and rows == 0, (
        f"in all chapters: {glue} visible glue calls (at most 30), {lookups} look-ups by string key (at most 40), "
        f"{rows} ComparisonRow calls (none)")


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


# ---------------------------------------------------------------------------------------------
# captions from the settings in force (the lecture issue's fourth part)

#: The chapters whose figure captions state their settings through a typed ``captions(settings)`` record
#: (glued from a hidden cell), never as fixed text: (glue prefix, module of posgeom.chapters).
CAPTIONS_FROM_SETTINGS = {
    "encodings-at-a-glance": ("zcap", "encodings_at_a_glance"),
    "theorem1-necessity": ("t1cap", "theorem1_necessity"),
    "theorem4-separation": ("t4cap", "theorem4_separation"),
    "corpus-geometry": ("cgcap", "corpus_geometry"),
    "optimal-encoding": ("oecap", "optimal_encoding"),
    "minimal-parametrisation": ("mpcap", "minimal_parametrisation"),
    "sinusoids-as-mds": ("smcap", "sinusoids_as_mds"),
    "real-corpora": ("rccap", "real_corpora"),
    "monotonicity": ("mocap", "monotonicity"),
    "inside-bert": ("ibcap", "inside_bert"),
    "learned-tables": ("ltcap", "learned_tables"),
    "learned-tables-fail": ("ltfcap", "learned_tables_fail"),
}


def test_every_chapter_with_scale_dependent_runs_is_listed():
    """A chapter whose figures come from runs at a scale states that scale from a record: every chapter
    that has figure captions and reads settings at a scale is listed (the three how-to pages run one
    fixed small example and say so)."""
    listed = set(CAPTIONS_FROM_SETTINGS) | {"getting-started", "your-own-corpus", "diagnose-your-model"}
    chapters = {p.stem for p in (ROOT / "notebooks").glob("*.md")}
    assert chapters <= listed, f"chapters whose captions are not checked: {sorted(chapters - listed)}"
_CAPTION = re.compile(r"^    caption: (.*?)\n    name:", re.S | re.M)


@pytest.mark.parametrize("slug", sorted(CAPTIONS_FROM_SETTINGS))
def test_captions_state_the_settings_in_force_not_fixed_text(slug):
    """Every caption of the chapter names its scale through the record (no fixed "quick"), every role it
    uses is a field of the record or a glued summary, and the record is glued by a hidden cell."""
    import dataclasses
    import importlib

    prefix, module = CAPTIONS_FROM_SETTINGS[slug]
    source = (ROOT / "notebooks" / f"{slug}.md").read_text()
    captions = _CAPTION.findall(source)
    assert captions, f"{slug}: no figure caption found"
    fields = {f.name for f in dataclasses.fields(importlib.import_module(f"posgeom.chapters.{module}").Captions)}
    for caption in captions:
        text = " ".join(caption.split())
        assert not re.search(r"\bquick\b", text), f"{slug}: a caption states the scale as fixed text: {text[:120]}"
        assert f"{{glue:text}}`{prefix}_scale`" in text, f"{slug}: a caption does not name the scale in force"
        used = re.findall(rf"\{{glue:text\}}`{prefix}_(\w+)", text)
        assert set(used) <= fields, f"{slug}: captions quote {sorted(set(used) - fields)}, not fields of Captions"
    assert re.search(rf'glue_fields\("{prefix}", \w+\.captions\(settings\)\)', source)


@pytest.mark.parametrize("slug", sorted(CAPTIONS_FROM_SETTINGS))
def test_caption_records_follow_the_settings_of_each_scale(slug):
    """Each record names its scale, and has a value for every fact at both scales."""
    import dataclasses
    import importlib

    from posgeom.config import get_settings

    _, module = CAPTIONS_FROM_SETTINGS[slug]
    make = importlib.import_module(f"posgeom.chapters.{module}").captions
    quick, paper = (dataclasses.asdict(make(get_settings(scale=s))) for s in ("quick", "paper"))
    assert quick["scale"] == "quick" and paper["scale"] == "paper"
    assert all(v not in ("", None) for v in (*quick.values(), *paper.values()))


def test_caption_records_quote_the_configuration():
    """Spot checks against the configurations themselves (the closed form of each phrase)."""
    from posgeom.chapters import learned_tables_fail, theorem1_necessity, theorem4_separation
    from posgeom.config import get_settings
    from posgeom.experiments import extrapolation, necessity, separation

    paper = get_settings(scale="paper")
    t4 = theorem4_separation.captions(paper)
    conf = separation.CONFIGS["paper"]
    assert t4.model == f"posgeom encoder, {conf.model.n_layers} layers, width {conf.model.d_model}, {conf.model.n_heads} heads"
    assert f"{conf.train.steps:,} steps" in t4.training and "IMDB train" in t4.corpora
    assert "IMDB" not in theorem4_separation.captions(get_settings(scale="quick")).corpora
    t1 = theorem1_necessity.captions(paper)
    assert f"{necessity.CONFIGS['paper'].task.n_positions} task positions" in t1.task
    ltf = learned_tables_fail.captions(paper)
    assert ltf.mlm_windows.startswith(f"{2 * extrapolation.CONFIGS['paper'].mlm.L}-token windows")
    assert ltf.order_target == "1.5 L and 2 L" and ltf.order_lengths == "L, 1.5 L and 2 L"
