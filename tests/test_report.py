"""The "Paper vs this book" table builder."""

import pytest

from bs4 import BeautifulSoup

from posgeom import report
from posgeom.report import PAPER_CLAIMS, ComparisonRow, comparison_table, row_record
from posgeom.verdicts import Decision


def test_claims_cover_spec_and_seed():
    assert [f"C{i}" for i in range(1, 12)] == [k for k in PAPER_CLAIMS if k.startswith("C")]
    assert [f"S{i}" for i in range(1, 10)] == [k for k in PAPER_CLAIMS if k.startswith("S")]
    assert PAPER_CLAIMS["C7"].paper_value == "0.563"


def test_table_rows_and_validation():
    table = comparison_table([
        ComparisonRow("C7", ours="0.41", scale="quick", model="none", corpus="SST-2 train",
                      decision=Decision("not reproduced", why="scale-dependent normalisation")),
        ComparisonRow("C5", ours="88.0%", scale="quick", model="none", corpus="synthetic", decision=Decision("reproduced")),
    ])
    assert list(table.columns) == ["verdict", "paper", "this book", "scale", "model", "corpus", "options"]
    assert table.iloc[0]["paper"] == "0.563" and table.iloc[0]["verdict"].startswith("not reproduced — ")
    with pytest.raises(ValueError, match="valid verdicts"):
        Decision("sort of")
    with pytest.raises(ValueError, match="valid claims"):
        ComparisonRow("C99", ours="x", scale="quick", model="m", corpus="c", decision=Decision("reproduced"))
    with pytest.raises(ValueError, match="needs a `why`"):
        Decision("not reproduced")


def test_a_row_never_takes_a_verdict_typed_by_hand():
    with pytest.raises(TypeError, match="never takes a verdict typed by hand"):
        ComparisonRow("C7", ours="x", scale="quick", model="m", corpus="c", decision="reproduced")
    with pytest.raises(TypeError):
        ComparisonRow("C7", ours="x", scale="quick", model="m", corpus="c", verdict="reproduced")


def test_table_displays_cells_in_full():
    why = "a reason long enough to pass pandas' default cut of fifty characters in a cell, ending HERE"
    table = comparison_table([
        ComparisonRow("C7", ours="0.41", scale="quick", model="none", corpus="SST-2",
                      decision=Decision("not reproduced", why=why)),
    ])
    assert why in table._repr_html_() and why in repr(table)
    assert why in table.iloc[:1]._repr_html_()  # slices keep the full display


def test_inconclusive_needs_what_was_not_tested_and_the_run_that_would_decide():
    base = dict(ours="x", scale="quick", model="m", corpus="c")
    with pytest.raises(ValueError, match="needs a `why`"):
        Decision("inconclusive here", would_decide="bert-base at paper scale")
    with pytest.raises(ValueError, match="needs `would_decide`"):
        Decision("inconclusive here", why="a 6-layer stand-in")
    with pytest.raises(ValueError, match="needs a `why`"):
        Decision("depends on an unstated choice", why="  ")
    with pytest.raises(ValueError, match="belongs to an 'inconclusive here'"):
        Decision("reproduced", would_decide="a run")
    with pytest.raises(ValueError, match="needs a `why`"):
        Decision("holds by construction")
    row = ComparisonRow("C1", decision=Decision("inconclusive here", why="a 6-layer stand-in",
                                                would_decide="bert-base-uncased, paper scale, SST-2"),
                        conditions={"attention": "causal mask"}, **base)
    table = comparison_table([row])
    assert table.iloc[0]["verdict"] == ("inconclusive here — a 6-layer stand-in; "
                                        "would decide: bert-base-uncased, paper scale, SST-2")
    assert table.iloc[0]["options"] == ("changed from the claim: attention: causal mask (the claim states "
                                        "bidirectional)")
    # a reproduced row may carry a caveat
    ok = ComparisonRow("C6", decision=Decision("reproduced", why="a caveat"), **base)
    assert comparison_table([ok]).iloc[0]["verdict"] == "reproduced — a caveat"
    built = ComparisonRow("C6", decision=Decision("holds by construction", why="an identity"), **base)
    assert comparison_table([built]).iloc[0]["verdict"] == "holds by construction — an identity"


def test_row_record_flattens_the_decision_and_names_a_stand_in():
    row = ComparisonRow("C9", ours="0.31", scale="paper", model="all-MiniLM-L6-v2", corpus="SST-2",
                        decision=Decision("inconclusive here", why="a stand-in", would_decide="bert-base",
                                          stand_in="all-MiniLM-L6-v2"))
    record = row_record(row)
    assert "decision" not in record
    assert record["verdict"] == "inconclusive here" and record["why"] == "a stand-in"
    assert record["would_decide"] == "bert-base" and record["stand_in"] == "all-MiniLM-L6-v2"
    assert record["paper"] == PAPER_CLAIMS["C9"].paper_value and record["model"] == "all-MiniLM-L6-v2"


def test_a_claim_checked_twice_states_its_text_once():
    rows = [ComparisonRow(claim, ours=ours, scale="quick", model="m", corpus="c", decision=Decision("reproduced"))
            for claim, ours in (("C7", "1"), ("C8", "2"), ("C7", "3"))]
    index = list(comparison_table(rows).index)
    assert index == [f"C7: {PAPER_CLAIMS['C7'].statement}", f"C8: {PAPER_CLAIMS['C8'].statement}", "C7 (check 2)"]


def _soup(html: str) -> BeautifulSoup:
    return BeautifulSoup(html, "html.parser")


def test_table_html_puts_the_verdict_second_with_a_word_a_mark_and_a_class():
    table = comparison_table([
        ComparisonRow("C7", ours="0.41", scale="quick", model="none", corpus="SST-2",
                      decision=Decision("not reproduced", why="scale-dependent normalisation")),
        ComparisonRow("C5", ours="88.0%", scale="quick", model="none", corpus="synthetic",
                      decision=Decision("reproduced"), options="rank 3"),
    ])
    soup = _soup(table._repr_html_())
    assert [th.get_text() for th in soup.select("thead th")] == ["Claim", "Verdict", "Paper", "This book", "Setting"]
    first, second = soup.select("tbody tr")
    verdict = first.select("td")[0]
    assert verdict["data-label"] == "Verdict"
    badge = verdict.select_one(".posgeom-verdict")
    assert "posgeom-verdict-not-reproduced" in badge["class"]
    assert badge.get_text() == "✗ not reproduced"  # a word and a mark, never colour alone
    assert verdict.get_text().endswith("— scale-dependent normalisation")
    assert second.select_one(".posgeom-verdict-reproduced").get_text() == "✓ reproduced"
    # what every row shares is said once above the table; the Setting cell holds what differs
    assert second.select("td")[-1].get_text() == "corpus: synthetic; options: rank 3"
    assert soup.select_one("p.posgeom-shared-setting").get_text() == "Setting of every row: scale: quick; model: none."
    # every cell names its column, for the stacked layout on a phone
    assert all(cell.get("data-label") for cell in soup.select("tbody th, tbody td"))


def test_every_verdict_gets_a_class_and_a_mark_even_one_added_later():
    assert report.verdict_slug("depends on an unstated choice") == "posgeom-verdict-depends-on-an-unstated-choice"
    assert report.verdict_slug("Holds by construction!") == "posgeom-verdict-holds-by-construction"
    assert report.verdict_mark("holds by construction") == "≡"
    assert report.verdict_mark("a verdict added later") == report.OTHER_VERDICT_MARK
    assert {report.verdict_mark(v) for v in report.VERDICTS} == set(report.VERDICT_MARKS.values())
    assert len(set(report.VERDICT_MARKS.values())) == len(report.VERDICT_MARKS)
    badge = _soup(report.verdict_html("holds by construction", "a <b>tag</b>"))
    assert badge.select_one(".posgeom-verdict.posgeom-verdict-holds-by-construction")
    assert "a <b>tag</b>" in badge.get_text()  # the reason is escaped, not parsed


def test_split_verdict_finds_the_longest_known_verdict():
    assert report.split_verdict("not reproduced — why") == ("not reproduced", "why")
    assert report.split_verdict("reproduced") == ("reproduced", "")
    assert report.split_verdict("inconclusive here — a; would decide: b") == ("inconclusive here",
                                                                              "a; would decide: b")
    assert report.split_verdict("holds by construction — proved") == ("holds by construction", "proved")


def test_html_table_shows_a_dash_for_missing_values_and_refuses_ragged_rows():
    table = comparison_table([ComparisonRow("C5", ours="x", scale="quick", model="m", corpus="c",
                                            decision=Decision("reproduced"))])
    table.loc[table.index[0], "this book"] = float("nan")
    cells = [td.get_text() for td in _soup(table._repr_html_()).select("tbody td")]
    assert cells[2] == report.MISSING and "NaN" not in "".join(cells)
    with pytest.raises(ValueError, match="2 cells for 3 columns"):
        report.html_table(["a", "b", "c"], [["1", "2"]], css_class="x")


def test_describe_seeds_sequences_and_training():
    from types import SimpleNamespace

    from posgeom.wording import describe_seeds, describe_sequences, describe_training, short_float

    assert describe_seeds([0, 1, 2, 3, 4]) == "seeds 0–4"
    assert describe_seeds((0, 1, 2)) == "seeds 0, 1, 2" and describe_seeds([3]) == "seed 3"
    assert describe_seeds([0, 2, 4, 6]) == "seeds 0, 2, 4, 6"
    with pytest.raises(ValueError, match="at least one seed"):
        describe_seeds([])
    assert describe_sequences(4096) == "4,096 sequences"
    assert describe_sequences(8192, "phrases", random=True) == "8,192 random phrases"
    assert describe_sequences(None, "reviews") == "all reviews"
    from posgeom.wording import describe_scales

    assert describe_scales("200", "1,000") == "200 at quick, 1,000 at paper"
    assert describe_scales("all phrases", "all phrases") == "all phrases at both scales"
    train = SimpleNamespace(lr=2.5e-4, batch_size=64, steps=10_000)
    assert describe_training(train) == "AdamW lr 2.5e-4, batch 64, 10,000 steps"
    assert [short_float(x) for x in (3e-3, 1e-12, 0.2)] == ["3e-3", "1e-12", "2e-1"]


def test_long_cells_show_forty_words_and_fold_the_rest_and_template_plurals_agree():
    ours = "; ".join(f"variant {k}: 0.{k}1 [0.{k}0, 0.{k}2]" for k in range(1, 10)) + "; 90 % interval"
    rows = [ComparisonRow("C7", ours=ours, scale="quick", model="m", corpus="SST-2",
                          decision=Decision("depends on an unstated choice", why="ALiBi, RoPE reach(es) it")),
            ComparisonRow("C8", ours="0.1", scale="quick", model="m", corpus="IMDB", decision=Decision("reproduced"))]
    soup = _soup(comparison_table(rows)._repr_html_())
    cell = soup.select("tbody tr")[0].select("td")[2]
    folded = cell.select_one("details.posgeom-more")
    shown = cell.get_text(" ").replace(folded.get_text(" "), "")
    assert len(shown.split()) <= report.CELL_WORDS and folded.summary.get_text() == "more"
    assert " ".join(cell.get_text(" ").replace("more", "", 1).split()) == ours.replace("90 %", "90%")  # all kept
    assert "[0.40, 0.42]" in cell.get_text() and "[0.4" not in shown.split(";")[-1]  # never cut in an interval
    verdict = soup.select("tbody tr")[0].select("td")[0].get_text()
    assert verdict.endswith("ALiBi, RoPE reach it") and "(es)" not in verdict


def test_clauses_every_row_shares_are_said_once_above_the_table():
    base = dict(scale="quick", model="m", decision=Decision("reproduced"))
    rows = [ComparisonRow("C7", ours="1", corpus="SST-2", options="n = 64 (SST-2) / 512 (IMDB), chord Hellinger, alpha 0", **base),
            ComparisonRow("C8", ours="2", corpus="IMDB", options="n = 64 (SST-2) / 512 (IMDB), chord Hellinger", **base)]
    soup = _soup(comparison_table(rows)._repr_html_())
    above = soup.select_one("p.posgeom-shared-setting").get_text()
    assert above == ("Setting of every row: scale: quick; model: m; "
                     "options, in every row: n = 64 (SST-2) / 512 (IMDB), chord Hellinger.")
    settings = [tr.select("td")[-1].get_text() for tr in soup.select("tbody tr")]
    assert settings == ["corpus: SST-2; options: alpha 0", "corpus: IMDB"]
