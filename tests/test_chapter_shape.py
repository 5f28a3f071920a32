"""The chapters read as lectures: what a reader sees is the argument, not the plumbing.

Three counts per chapter, read from its MyST source (no execution), each zero in every chapter:

* ``glue`` calls in code cells the reader sees (not tagged ``remove-cell`` / ``remove-input``): a number
  quoted in the prose is glued from a typed record in a hidden cell
  (:func:`posgeom.notebooks.glue_fields`), not by a screen of ``glue(...)`` lines;
* look-ups of stored results by string key (``result.values[...]``, ``result.arrays.get(...)``): a page reads
  a result into its typed record (``posgeom.experiments.records``) instead (issue #46: no page looks a stored
  value up by a string key);
* ``ComparisonRow(`` in the chapter: the "Paper vs this book" rows are built by the chapter's module, each
  decided by its rule in :mod:`posgeom.verdicts`.
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
    lookups = sum(len(re.findall(r"\.(?:values|arrays)(?:\[|\.get\()", body)) for _, body in cells)
    return glue, lookups, source.count("ComparisonRow(")


def test_the_counter_sees_hidden_cells_and_lookups():
    source = ("```{code-cell} ipython3\nglue('a', 1)\nx = r.values['k']\n```\n\n"
              "```{code-cell} ipython3\n:tags: [remove-cell]\n\nglue('b', 2)\nglue('c', 3)\n```\n\n"
              "```{code-cell} ipython3\n---\nmystnb:\n  figure:\n    caption: c\ntags: [remove-input]\n---\n"
              "glue('d', 4)\ny = r.arrays[f'{n}__curve']\nz = r.values.get('k')\n```\n")
    assert shape(source) == (1, 3, 0)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_shows_no_plumbing(path):
    glue, lookups, rows = shape(path.read_text(encoding="utf-8"))
    assert (glue, lookups, rows) == (0, 0, 0), (
        f"{path.name}: {glue} visible glue calls, {lookups} look-ups by string key, {rows} ComparisonRow calls; "
        "glue a typed record in a hidden cell (posgeom.notebooks.glue_fields), read results as typed records "
        "(posgeom.experiments.records), and build the comparison rows in the chapter's module")


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


def _captions(module, settings=None) -> dict:
    """A chapter's captions (``module``: the module or its name in posgeom.chapters): every chapter returns a
    mapping of plain values."""
    import importlib

    if isinstance(module, str):
        module = importlib.import_module(f"posgeom.chapters.{module}")
    record = module.captions(settings)
    assert isinstance(record, dict), f"{module.__name__}.captions returns {type(record).__name__}, not a mapping"
    return record
_SOLUTION = re.compile(r"^```\{solution-start\}.*?^```\{solution-end\}", re.S | re.M)


@pytest.mark.parametrize("slug", sorted(CAPTIONS_FROM_SETTINGS))
def test_captions_state_the_settings_in_force_not_fixed_text(slug):
    """Every caption of the chapter names its scale through the record (no fixed "quick"), every role it
    uses is a field of the record or a glued summary, and the record is glued by a hidden cell."""
    prefix, module = CAPTIONS_FROM_SETTINGS[slug]
    source = (ROOT / "notebooks" / f"{slug}.md").read_text()
    captions = _CAPTION.findall(source)
    assert captions, f"{slug}: no figure caption found"
    # an exercise's solution draws its own fixed example (its sizes are in its code), not a run at a scale
    in_solutions = set(_CAPTION.findall("".join(_SOLUTION.findall(source))))
    fields = set(_captions(module))
    for caption in captions:
        text = " ".join(caption.split())
        assert not re.search(r"\bquick\b", text), f"{slug}: a caption states the scale as fixed text: {text[:120]}"
        if caption in in_solutions:
            continue
        assert f"{{glue:text}}`{prefix}_scale`" in text, f"{slug}: a caption does not name the scale in force"
        used = re.findall(rf"\{{glue:text\}}`{prefix}_(\w+)", text)
        assert set(used) <= fields, f"{slug}: captions quote {sorted(set(used) - fields)}, not keys of the captions"
    assert re.search(rf'glue_fields\("{prefix}", \w+\.captions\(settings\)\)', source)


@pytest.mark.parametrize("slug", sorted(CAPTIONS_FROM_SETTINGS))
def test_caption_records_follow_the_settings_of_each_scale(slug):
    """Each record names its scale, and has a value for every fact at both scales."""
    from posgeom.config import get_settings

    _, module = CAPTIONS_FROM_SETTINGS[slug]
    quick, paper = (_captions(module, get_settings(scale=s)) for s in ("quick", "paper"))
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
    assert t4["model"] == (f"posgeom encoder, {conf.model.n_layers} layers, width {conf.model.d_model}, "
                           f"{conf.model.n_heads} heads")
    assert f"{conf.train.steps:,} steps" in t4["training"] and "IMDB train" in t4["corpora"]
    assert "IMDB" not in theorem4_separation.captions(get_settings(scale="quick"))["corpora"]
    t1 = theorem1_necessity.captions(paper)
    assert f"{necessity.CONFIGS['paper'].task.n_positions} task positions" in t1["task"]
    ltf = learned_tables_fail.captions(paper)
    assert ltf["mlm_windows"].startswith(f"{2 * extrapolation.CONFIGS['paper'].mlm.L}-token windows")
    assert ltf["order_target"] == "1.5 L and 2 L" and ltf["order_lengths"] == "L, 1.5 L and 2 L"


# ---------------------------------------------------------------------------------------------
# the "What this chapter needs" boxes state their counts from the settings of both scales (issue #29, part 4)

_BOX = re.compile(r"^```\{admonition\} What this (?:chapter|page) needs", re.M)
_DIRECTIVE = re.compile(r"^```\{posgeom-needs\}[ \t]*\n```[ \t]*$", re.M)
_NUMBER = r"(?<![\w.-])(?:\d[\d,]*|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty)"
_COUNTED = (r"(?:[\w-]+\s+){0,2}(?:runs?|seeds?|steps?|redraws?|half-splits?|splits?|subsets?|groups?|models?|"
            r"sequences|phrases|sentences|reviews|positions|draws|times|batch(?:es)?)\b")
#: Facts of a box that no setting holds: the size of a data split, the shape of a pretrained model.
_NOT_SETTINGS = (r"\d+ learned positions", r"872 SST-2 validation sentences", r"25,000 reviews")
#: Counts the boxes once typed by hand (some wrong), which must not come back.
_HAND_TYPED = {
    "learned-tables-fail": ("about 55 short", "6 for the tails", "thousands of steps, 5 seeds"),
    "minimal-parametrisation": ("33 tiny models", "five seeds", "8,000 phrases"),
    "learned-tables": ("15 training runs", "4000 steps, 5 seeds"),
    "theorem1-necessity": ("21 small training runs", "5,000 steps per run", "4 heads at"),
    "monotonicity": ("eleven small", "width-2048", "256 training sentences", "seeded 5,000", "20 random"),
    "corpus-geometry": ("10,000 sequences", "100,000 at"),
    "sinusoids-as-mds": ("200 and 1,000", "10,000 sequences"),
    "optimal-encoding": ("200 and 1,000",),
    "real-corpora": ("50 half-splits", "five cross-half", "five IMDB subsets", "5,000 of its"),
    "inside-bert": ("24 groups", "200 redraws", "batches of 128"),
    "encodings-at-a-glance": ("512 positions instead of 128",),
}


def _facts_source(slug: str) -> str:
    """The text a chapter's box facts are written from (the templates of posgeom.reproduce.facts), with every value
    filled in from a record (a template's fields) left out: what is typed by hand."""
    from posgeom.reproduce.facts import CHAPTER_FACTS

    return " ".join(re.sub(r"\{[^{}]*\}", "<glued>", text) for text in CHAPTER_FACTS[slug].values())


@pytest.mark.parametrize("slug", sorted(CAPTIONS_FROM_SETTINGS))
def test_box_quotes_its_counts_from_the_captions_record(slug):
    """The chapter shows its box through the one directive (no hand-written copy of it), and no count of runs,
    seeds, steps, redraws or sequences is typed in the text the box is written from (beyond the facts of a
    data split or a pretrained model): each comes from the chapter's Captions, whose fields the box reads."""
    from posgeom.reproduce.facts import chapter_facts
    from posgeom.config import get_settings

    source = (ROOT / "notebooks" / f"{slug}.md").read_text()
    assert len(_DIRECTIVE.findall(source)) == 1 and not _BOX.search(source), (
        f"{slug}: expected the box as one {{posgeom-needs}} directive, and no hand-written box")
    written = " ".join(_facts_source(slug).split())
    for phrase in _HAND_TYPED.get(slug, ()):
        assert phrase not in written, f"{slug}: the box still types {phrase!r}"
    text = written
    for allowed in _NOT_SETTINGS:
        text = re.sub(allowed, "<data>", text)
    typed = [m.group(0) for m in re.finditer(rf"{_NUMBER}\s+{_COUNTED}", text, re.I)]
    assert not typed, f"{slug}: counts typed in the box instead of read from the settings: {typed}"
    for scale in ("quick", "paper"):  # every field the box reads exists in the record, at both scales
        assert all(chapter_facts(slug, get_settings(scale=scale)).values())


def _order_study_runs(block) -> int:
    """The trainings of an extrapolation study, counted as its loops run: each encoding and seed once;
    for the learned table, per seed and longer length, the fine-tune of ``new_rows`` and (with
    ``target_baseline``) a model trained at each target length."""
    n = 0
    for name in block.encodings:
        for _seed in block.seeds:
            n += 1
            if name != "learned":
                continue
            for f in block.factors:
                if round(f * block.L) > block.L:
                    n += 1
                    n += int(block.target_baseline and f in block.target_factors)
    return n


@pytest.mark.parametrize("scale", ["quick", "paper"])
def test_box_counts_follow_the_settings_of_each_scale(scale):
    """Each box field against the configurations themselves, counted independently of the chapter modules'
    helpers (naive loops over what each run_* function iterates)."""
    from posgeom.chapters import (
        corpus_geometry, encodings_at_a_glance, inside_bert, learned_tables, learned_tables_fail,
        minimal_parametrisation, monotonicity, optimal_encoding, real_corpora, sinusoids_as_mds,
        theorem1_necessity,
    )
    from posgeom.config import get_settings
    from posgeom.experiments import corpus_geometry as cg, extrapolation as ex, inside_bert as ib
    from posgeom.experiments import learned_tables as lt, lowrank_training as lr, monotonicity as mo
    from posgeom.experiments import necessity as nec, optimal_encoding as oe, real_corpora as rc
    from posgeom.experiments import sinusoids_as_mds as sm, table_dropout as td, zoo

    settings = get_settings(scale=scale)  # every record states both scales, whichever is in force
    other = {"quick": "paper", "paper": "quick"}[scale]

    def runs(module):
        c = _captions(module, settings)
        return {"quick": c["quick_runs"], "paper": c["paper_runs"]}

    # learned tables fail: 2 conditions × seeds for the tails, then the two extrapolation studies
    for s, text in runs(learned_tables_fail).items():
        c = ex.CONFIGS[s]
        tails, order, mlm = 2 * len(c.tails.seeds), _order_study_runs(c.order), _order_study_runs(c.mlm)
        assert text.startswith(f"{tails + order + mlm} training runs: ")  # the shape is said once, in words
        assert "posgeom encoder" not in text and "width" not in text
        assert f"{tails} for the tails ({c.tails.train.steps:,} steps; {len(c.tails.seeds)} seeds)" in text
        assert f"{order} for the order task ({c.order.train.steps:,} steps" in text
        assert f"{mlm} for IMDB masked language modelling ({c.mlm.train.steps:,} steps" in text
    assert runs(learned_tables_fail)["quick"].startswith("58 training runs")  # 10 + 24 + 24

    # learned tables: every initialisation, plus normal_0.02 at each non-zero dropout, over seeds; then the dropout study
    for s, text in runs(learned_tables).items():
        c, d = lt.CONFIGS[s], td.CONFIGS[s]
        variants = len(c.init.inits) + sum(1 for p in c.init.dropouts if p > 0)
        assert text.startswith(f"{variants * len(c.init.seeds)} training runs of {c.train.steps:,} steps each")
        assert "posgeom encoder" not in text and "width" not in text
        assert f"and {len(d.dropouts) * len(d.seeds)} more" in text and f"{d.order.n_train:,} sequences" in text

    # theorem 1: six models (five encodings and causal NoPE) and the rerun of ALiBi without [CLS], over seeds
    for s, text in runs(theorem1_necessity).items():
        c = nec.CONFIGS[s]
        assert text == (f"{(len(nec.ENCODINGS) + 1 + 1) * len(c.seeds)} training runs of {c.train.steps:,} steps "
                        f"each on {c.task.n_positions} task positions")
    paper_shape = nec.CONFIGS["paper"].model  # the box calls it BERT-base's shape
    assert (paper_shape.n_layers, paper_shape.d_model, paper_shape.n_heads) == (12, 768, 12)

    # minimal parametrisation: marker order over every encoding and seed, SST-2 over its own
    for s, text in runs(minimal_parametrisation).items():
        t = lr.TRAIN_CONFIGS[s]
        n = len(lr.TrainedTable) * len(t.seeds) + len(t.sst2_encodings) * len(t.sst2_seeds)
        assert text.startswith(f"{n} models: ")
        assert f"{t.steps.synthetic:,} steps each" in text and f"{t.steps.sst2:,} steps each" in text
    mp = minimal_parametrisation.captions(settings)
    assert mp["quick_c5_draws"] == 5 == len(minimal_parametrisation.CONFIGS["quick"].c5_seeds)
    assert mp["sst2_training"] == "8,000 random phrases at quick, all phrases at paper"

    # monotonicity: the lazy regime over its seeds, the two contrasts over theirs
    m = monotonicity.captions(settings)
    for s, text in {"quick": m["quick_ntk"], "paper": m["paper_ntk"]}.items():
        ntk = mo.CONFIGS[s].ntk
        assert text.startswith(f"{len(ntk.seeds) + 2 * len(ntk.contrast_seeds)} SGD runs of {ntk.steps:,} steps "
                               f"on SST-2 with n = {ntk.n_positions}: {len(ntk.seeds)} seeds of the lazy regime "
                               f"(width {ntk.lazy.d_model})")
        assert f"rich, width {ntk.rich.d_model}" in text
    assert m["quick_ntk"].startswith("11 SGD runs") and m["paper_ntk"].startswith("15 SGD runs")
    assert m["paper_random_seeds"] == len(mo.CONFIGS["paper"].random_seeds)
    assert m["paper_imdb_ranks"] == "every MDS rank" and mo.CONFIGS["paper"].mds_ranks_imdb is None
    quick_ntk, paper_ntk = mo.CONFIGS["quick"].ntk, mo.CONFIGS["paper"].ntk
    assert m["ntk_data"] == (f"{quick_ntk.train_sequences} training sentences and {quick_ntk.probe_sequences} probe "
                             f"sentences at quick, all training sentences and {paper_ntk.probe_sequences} probe "
                             "sentences at paper")
    imdb_quick = rc.CONFIGS["quick"].imdb.max_sequences
    assert m["imdb_reviews"] == f"{imdb_quick:,} random reviews at quick, all reviews at paper"

    # the corpora and the bootstraps
    g = corpus_geometry.captions(settings)
    assert (g["quick_sequences"], g["paper_sequences"]) == tuple(
        f"{cg.CONFIGS[s].synthetic.n_sequences:,} sequences" for s in ("quick", "paper"))
    assert g["sst2_scales"] == "all phrases at both scales"
    redraws = f"{oe.CONFIGS['quick'].intervals.n_boot:,} at quick, {oe.CONFIGS['paper'].intervals.n_boot:,} at paper"
    assert optimal_encoding.captions(settings)["redraws"] == redraws
    sin = sinusoids_as_mds.captions(settings)
    assert sin["redraws"] == (f"{sm.CONFIGS['quick'].intervals.n_boot:,} at quick, "
                           f"{sm.CONFIGS['paper'].intervals.n_boot:,} at paper")
    assert sin["samples"] == f"{g['quick_sequences']} at quick, {g['paper_sequences']} at paper"
    r = real_corpora.captions(settings)
    quick = rc.CONFIGS["quick"]
    assert r["quick_rank"] == f"{quick.imdb.n_positions} positions, {rc.RANK_OPTIONS['n_resamples']} half-splits"
    assert r["quick_splits"] == quick.draws.n_splits
    assert r["quick_subsets"] == f"{len(quick.draws.subset_seeds)} IMDB subsets"
    assert r["sst2_size"] == "all sequences at both scales"
    assert r["imdb_size"] == f"{imdb_quick:,} random reviews at quick, all reviews at paper"
    b = inside_bert.captions(settings)
    assert (b["quick_batch"], b["paper_batch"]) == (ib.CONFIGS["quick"].batch_size, ib.CONFIGS["paper"].batch_size)
    assert (b["peak_groups"], b["peak_redraws"]) == (24, 200)  # run_local_peak_test's defaults, at both scales
    z = encodings_at_a_glance.captions(settings)
    assert (z["quick_positions"], z["paper_positions"]) == (zoo.CONFIGS["quick"].n, zoo.CONFIGS["paper"].n)

    # the encoders' shape, said once for both scales in words (docs/STYLE.md, rule 3)
    for module, shape_at in ((learned_tables_fail, lambda s: ex.CONFIGS[s].model),
                             (learned_tables, lambda s: lt.CONFIGS[s].model),
                             (theorem1_necessity, lambda s: nec.CONFIGS[s].model),
                             (minimal_parametrisation, lambda s: lr.TRAIN_CONFIGS[s].model)):
        models = _captions(module, settings)["models"]
        for s in ("quick", "paper"):
            shape = shape_at(s)
            assert f"of width {shape.d_model} with {shape.n_heads} heads at {s}" in models, (module.__name__, models)
    assert theorem1_necessity.captions(settings)["models"].startswith("one layer of width 32")

    # a record made at either scale states the same box facts
    for module in (learned_tables_fail, learned_tables, theorem1_necessity, minimal_parametrisation):
        made_at_other = _captions(module, get_settings(scale=other))
        assert runs(module) == {"quick": made_at_other["quick_runs"], "paper": made_at_other["paper_runs"]}
