"""The "Paper vs this book" table builder."""

import pytest

from posgeom.report import PAPER_CLAIMS, ComparisonRow, comparison_table


def test_claims_cover_spec_and_seed():
    assert [f"C{i}" for i in range(1, 12)] == [k for k in PAPER_CLAIMS if k.startswith("C")]
    assert [f"S{i}" for i in range(1, 10)] == [k for k in PAPER_CLAIMS if k.startswith("S")]
    assert PAPER_CLAIMS["C7"].paper_value == "0.563"


def test_table_rows_and_validation():
    table = comparison_table([
        ComparisonRow("C7", ours="0.41", scale="quick", model="none", corpus="SST-2 train", verdict="not reproduced",
                      why="scale-dependent normalisation"),
        ComparisonRow("C5", ours="88.0%", scale="quick", model="none", corpus="synthetic", verdict="reproduced"),
    ])
    assert list(table.columns) == ["paper", "this book", "scale", "model", "corpus", "options", "verdict"]
    assert table.iloc[0]["paper"] == "0.563" and table.iloc[0]["verdict"].startswith("not reproduced — ")
    with pytest.raises(ValueError, match="valid verdicts"):
        ComparisonRow("C7", ours="x", scale="quick", model="m", corpus="c", verdict="sort of")
    with pytest.raises(ValueError, match="valid claims"):
        ComparisonRow("C99", ours="x", scale="quick", model="m", corpus="c", verdict="reproduced")
    with pytest.raises(ValueError, match="needs a `why`"):
        ComparisonRow("C7", ours="x", scale="quick", model="m", corpus="c", verdict="not reproduced")


def test_table_displays_cells_in_full():
    why = "a reason long enough to pass pandas' default cut of fifty characters in a cell, ending HERE"
    table = comparison_table([
        ComparisonRow("C7", ours="0.41", scale="quick", model="none", corpus="SST-2", verdict="not reproduced", why=why),
    ])
    assert why in table._repr_html_() and why in repr(table)
    assert why in table.iloc[:1]._repr_html_()  # slices keep the full display


def test_inconclusive_needs_what_was_not_tested_and_the_run_that_would_decide():
    base = dict(ours="x", scale="quick", model="m", corpus="c")
    with pytest.raises(ValueError, match="needs a `why`"):
        ComparisonRow("C10", verdict="inconclusive here", would_decide="bert-base at paper scale", **base)
    with pytest.raises(ValueError, match="needs `would_decide`"):
        ComparisonRow("C10", verdict="inconclusive here", why="a 6-layer stand-in", **base)
    with pytest.raises(ValueError, match="needs a `why`"):
        ComparisonRow("C10", verdict="depends on an unstated choice", why="  ", **base)
    with pytest.raises(ValueError, match="inconclusive here' verdict only"):
        ComparisonRow("C10", verdict="reproduced", would_decide="a run", **base)
    row = ComparisonRow("C10", verdict="inconclusive here", why="a 6-layer stand-in",
                        would_decide="bert-base-uncased, paper scale, SST-2", changed="another model", **base)
    table = comparison_table([row])
    assert table.iloc[0]["verdict"] == ("inconclusive here — a 6-layer stand-in; "
                                        "would decide: bert-base-uncased, paper scale, SST-2")
    assert table.iloc[0]["options"] == "changed from the claim: another model"
    # a reproduced row may carry a caveat
    ok = ComparisonRow("C6", verdict="reproduced", why="holds by construction", **base)
    assert comparison_table([ok]).iloc[0]["verdict"] == "reproduced — holds by construction"


def test_a_claim_checked_twice_states_its_text_once():
    rows = [ComparisonRow(claim, ours=ours, scale="quick", model="m", corpus="c", verdict="reproduced")
            for claim, ours in (("C7", "1"), ("C8", "2"), ("C7", "3"))]
    index = list(comparison_table(rows).index)
    assert index == [f"C7: {PAPER_CLAIMS['C7'].statement}", f"C8: {PAPER_CLAIMS['C8'].statement}", "C7 (check 2)"]
