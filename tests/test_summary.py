"""Recording the "Paper vs this book" rows, and the summary page built from them (temporary registries)."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from posgeom import summary as sm
from posgeom.summary import page
from posgeom.config import get_settings
from posgeom.registry import Registry
from posgeom.report import (
    CLAIMS_EXPERIMENT,
    PAPER_CLAIMS,
    VERDICTS,
    ComparisonRow,
    comparison_table,
    record_comparison,
)
from posgeom.reproduce import RUNS_EXPERIMENT
from posgeom.verdicts import Decision


def settings_at(tmp_path, scale="quick"):
    return get_settings(scale=scale, device="cpu", results_dir=tmp_path / "results")


def row(claim, ours, verdict="reproduced", *, scale="quick", model="none", corpus="toy", why="", would_decide="",
        stand_in="", **kw):
    if verdict != "reproduced" and not why:
        why = "because of a choice"
    if verdict == "inconclusive here" and not would_decide:
        would_decide = "bert-base-uncased at paper scale on SST-2"
    decision = Decision(verdict, why=why, would_decide=would_decide, stand_in=stand_in)
    return ComparisonRow(claim, ours=ours, scale=scale, model=model, corpus=corpus, decision=decision, **kw)


def stored_rows(tmp_path):
    """The oracle: the rows as written on disk, read without posgeom."""
    out = {}
    for pointer in (tmp_path / "results").glob(f"*/{CLAIMS_EXPERIMENT}/*/CURRENT"):
        path = pointer.parent / json.loads(pointer.read_text())["version"] / "result.json"
        values = json.loads(path.read_text())
        out[(pointer.parts[-4], values["chapter"])] = values["rows"]
    return out


# ------------------------------------------------------------------------------------ recording


def test_record_comparison_stores_every_field_and_the_manifest(tmp_path):
    s = settings_at(tmp_path)
    rows = [row("C7", "0.41", "not reproduced", model="bert", options="kind chord"),
            row("C8", "0.9", model="minilm", paper="a row's own wording")]
    entry = record_comparison("some-chapter", rows, s)
    assert entry.experiment == CLAIMS_EXPERIMENT and entry.scale == "quick"
    assert entry.manifest["params"] == {"chapter": "some-chapter"}
    assert entry.manifest["model"] == "bert; minilm"
    assert entry.manifest["seed"] == 0 and entry.manifest["device"] == "cpu"
    written = stored_rows(tmp_path)[("quick", "some-chapter")]
    assert written[0] == {"claim": "C7", "ours": "0.41", "scale": "quick", "model": "bert", "corpus": "toy",
                          "verdict": "not reproduced", "options": "kind chord", "why": "because of a choice",
                          "paper": PAPER_CLAIMS["C7"].paper_value, "would_decide": "", "changed": "", "stand_in": "",
                          "conditions": {}, "rule": "", "inputs": None, "premise": ""}
    assert written[1]["paper"] == "a row's own wording"
    # recording again replaces the chapter's entry at that scale
    record_comparison("some-chapter", rows[:1], s)
    assert len(Registry(s.results_dir).entries(CLAIMS_EXPERIMENT)) == 1
    assert len(stored_rows(tmp_path)[("quick", "some-chapter")]) == 1


def test_comparison_table_records_only_when_given_a_chapter(tmp_path):
    s = settings_at(tmp_path)
    rows = [row("C5", "88.0%"), row("C7", "0.41", "not reproduced")]
    plain = comparison_table(rows)
    assert not (tmp_path / "results").exists()
    recorded = comparison_table(rows, chapter="chap", settings=s)
    pd.testing.assert_frame_equal(plain, recorded)
    assert [r["claim"] for r in stored_rows(tmp_path)[("quick", "chap")]] == ["C5", "C7"]


@pytest.mark.parametrize("chapter", ["Bad Slug", "a/b", "", "../x", "notebooks/x.md"])
def test_record_comparison_refuses_a_bad_chapter_name(tmp_path, chapter):
    with pytest.raises(ValueError, match="chapter slug"):
        record_comparison(chapter, [row("C7", "1")], settings_at(tmp_path))


def test_record_comparison_refuses_bad_rows_and_stray_settings(tmp_path):
    s = settings_at(tmp_path)
    with pytest.raises(ValueError, match="at least one"):
        record_comparison("chap", [], s)
    with pytest.raises(TypeError, match="ComparisonRow"):
        record_comparison("chap", [{"claim": "C7"}], s)
    with pytest.raises(ValueError, match="pass chapter="):
        comparison_table([row("C7", "1")], settings=s)
    assert not (tmp_path / "results").exists()


# ------------------------------------------------------------------------------------ the summary


def test_empty_registry_every_claim_not_yet_run(tmp_path):
    summaries = sm.claim_summaries(Registry(tmp_path / "results"))
    assert [s.claim.id for s in summaries] == list(PAPER_CLAIMS)
    frame = sm.summary_frame(summaries)
    for column in ("ours (quick)", "ours (paper)", "verdict"):
        assert (frame[column] == sm.NOT_RUN).all()
    assert not frame[["ours (quick)", "ours (paper)", "verdict"]].apply(
        lambda c: c.str.contains(r"\d")).any().any()
    assert frame.loc["C7", "paper"] == "0.563"  # the paper's value is shown, ours is not invented
    counts = sm.verdict_counts(summaries)
    assert counts.loc["claims not yet run"].tolist() == [len(PAPER_CLAIMS)] * 3
    assert counts.drop("claims not yet run").to_numpy().sum() == 0


def _record_many(tmp_path, rng):
    """Random numeric values for some claims, in two chapters, at both scales (paper for one chapter)."""
    recorded = {}
    for scale, chapters in (("quick", ("alpha", "beta")), ("paper", ("alpha",))):
        s = settings_at(tmp_path, scale)
        for chapter in chapters:
            rows = []
            for claim in ("C3", "C7", "S4"):
                for _ in range(int(rng.integers(1, 3))):
                    value = f"{rng.uniform(0, 100):.3f} and {int(rng.integers(0, 10**6))}"
                    verdict = VERDICTS[int(rng.integers(0, len(VERDICTS)))]
                    rows.append(row(claim, value, verdict, scale=scale))
            record_comparison(chapter, rows, s)
            recorded[(scale, chapter)] = rows
    return recorded


def test_summary_shows_exactly_the_recorded_values(tmp_path):
    import numpy as np

    _record_many(tmp_path, np.random.default_rng(7))
    disk = stored_rows(tmp_path)
    summaries = sm.claim_summaries(Registry(tmp_path / "results"))
    number = re.compile(r"\d+(?:\.\d+)?")
    for s in summaries:
        cells = sm.summary_cells(s)
        for scale in ("quick", "paper"):
            shown = [v for v in cells[f"ours ({scale})"] if v != sm.NOT_RUN]
            expected = [r["ours"] for (sc, ch), rows in sorted(disk.items()) if sc == scale
                        for r in rows if r["claim"] == s.claim.id]
            assert sorted(shown) == sorted(expected)
            held = {n for text in expected for n in number.findall(text)}
            for text in cells[f"ours ({scale})"]:
                assert set(number.findall(text)) <= held, (s.claim.id, scale, text)
        if s.claim.id not in ("C3", "C7", "S4"):
            assert not s.recorded and cells["ours (quick)"] == [sm.NOT_RUN]


def test_paper_column_pairs_the_kth_check_of_a_chapter(tmp_path):
    record_comparison("alpha", [row("C7", "q first"), row("C7", "q second")], settings_at(tmp_path, "quick"))
    record_comparison("beta", [row("C7", "q beta")], settings_at(tmp_path, "quick"))
    record_comparison("alpha", [row("C7", "p first", "not reproduced", scale="paper", model="bert-base")],
                      settings_at(tmp_path, "paper"))
    record_comparison("gamma", [row("C7", "p only", scale="paper")], settings_at(tmp_path, "paper"))
    (c7,) = [s for s in sm.claim_summaries(Registry(tmp_path / "results")) if s.claim.id == "C7"]
    cells = sm.summary_cells(c7)
    table = list(zip(cells["chapter"], cells["ours (quick)"], cells["ours (paper)"]))
    # chapters outside the book's list come after it, by name
    assert table == [("alpha", "q first", "p first"), ("alpha", "q second", sm.NOT_RUN),
                     ("beta", "q beta", sm.NOT_RUN), ("gamma", sm.NOT_RUN, "p only")]
    assert cells["verdict"][0] == "quick: reproduced; paper: not reproduced — because of a choice"
    assert cells["setting"][0] == "quick: model: none; corpus: toy; paper: model: bert-base; corpus: toy"
    counts = sm.verdict_counts([c7])
    assert counts.loc["reproduced", "quick"] == 3 and counts.loc["not reproduced", "paper"] == 1


def test_checks_of_other_code_are_marked_stale(tmp_path, monkeypatch):
    from posgeom.registry import store as registry_module  # where save reads the code key

    s = settings_at(tmp_path)
    record_comparison("alpha", [row("C4", "1.5")], s)
    record_comparison("beta", [row("C4", "2.5")], s)
    registry = Registry(s.results_dir)
    fresh = sm.summary_cells(next(x for x in sm.claim_summaries(registry) if x.claim.id == "C4"))
    assert fresh["ours (quick)"] == ["1.5", "2.5"]
    # beta's record is made again by other code: its manifest holds another code key

    def record_by_other_code(chapter, value):
        real = registry_module.code_key
        monkeypatch.setattr(registry_module, "code_key", lambda roots: "0" * 16)
        record_comparison(chapter, [row("C4", value)], s)
        monkeypatch.setattr(registry_module, "code_key", real)

    record_by_other_code("beta", "2.5")
    cells = sm.summary_cells(next(x for x in sm.claim_summaries(registry) if x.claim.id == "C4"))
    assert cells["ours (quick)"] == ["1.5", f"2.5 — {sm.STALE}"]
    assert cells["verdict"][1].endswith(sm.STALE) and not cells["verdict"][0].endswith(sm.STALE)
    record_by_other_code("alpha", "1.5")
    everything = sm.claim_summaries(registry)
    assert sm.verdict_counts(everything).loc["stale", "quick"] == 2


def test_checks_from_a_changed_notebook_are_marked_stale(tmp_path, monkeypatch):
    root = tmp_path / "book"
    (root / "notebooks").mkdir(parents=True)
    (root / "posgeom").mkdir()
    (root / "_toc.yml").write_text("root: intro\n")
    notebook = root / "notebooks" / "alpha.md"
    notebook.write_text("# Alpha\n")
    monkeypatch.chdir(root / "notebooks")  # where a chapter runs: the notebook's hash is recorded
    entry = record_comparison("alpha", [row("C9", "0.22")], settings_at(tmp_path))
    assert entry.values["notebook_sha256"] is not None
    registry = Registry(tmp_path / "results")

    def c9():
        return next(x for x in sm.claim_summaries(registry, notebooks_dir=root / "notebooks") if x.claim.id == "C9")

    assert sm.summary_cells(c9())["ours (quick)"] == ["0.22"]
    notebook.write_text("# Alpha, edited\n")
    assert sm.summary_cells(c9())["ours (quick)"] == [f"0.22 — {sm.STALE}"]
    assert c9().checks[0]["quick"].stale == "notebook changed"


def test_unknown_claim_in_the_registry_is_an_error(tmp_path):
    registry = Registry(tmp_path / "results")
    registry.save(CLAIMS_EXPERIMENT, {"chapter": "old", "rows": [{"claim": "C99", "ours": "1"}]},
                  params={"chapter": "old"}, scale="quick", seed=0, device="cpu")
    with pytest.raises(ValueError, match="C99"):
        sm.claim_summaries(registry)


# ------------------------------------------------------------------------------------ the page's markup


def test_html_escapes_values_and_links_only_book_chapters(tmp_path):
    from bs4 import BeautifulSoup

    value = "a*b_c $x$ [l](u) <br> | {r}`x` 0.5"
    record_comparison("sinusoids-as-mds", [row("C4", value)], settings_at(tmp_path))
    summaries = sm.claim_summaries(Registry(tmp_path / "results"))
    soup = BeautifulSoup(page.summary_html(summaries, documents={"notebooks/sinusoids-as-mds"}), "html.parser")
    assert [th.get_text() for th in soup.select("thead th")] == list(page.SUMMARY_HEADERS)
    rows = soup.select("tbody tr")
    assert len(rows) == len(PAPER_CLAIMS)  # one row per claim
    c4 = next(r for r in rows if r.th.get_text().startswith("C4:"))
    cells = {td["data-label"]: td for td in c4.select("td")}
    assert cells["Ours (quick)"].get_text() == value  # shown as written, nothing parsed
    assert cells["Chapter"].a["href"] == "../notebooks/sinusoids-as-mds.html"
    assert cells["Verdict"].select_one(".posgeom-verdict-reproduced").get_text() == "✓ reproduced"
    # C1 is checked by a chapter the book does not list here: named, not linked
    c1 = next(r for r in rows if r.th.get_text().startswith("C1:"))
    assert c1.select_one("td[data-label=Chapter]").get_text() == "theorem1-necessity (not in the book yet)"
    assert c1.select_one("td[data-label=Chapter] a") is None
    assert c1.select_one("td[data-label=Verdict]").get_text() == f"• {sm.NOT_RUN}"


def test_collapsed_wraps_a_body_in_details():
    from bs4 import BeautifulSoup

    details = BeautifulSoup(page.collapsed("Every check <20>", "<p>x</p>"), "html.parser").details
    assert details.summary.get_text() == "Every check <20>" and details.p.get_text() == "x"
    assert not details.has_attr("open")


def test_book_documents_reads_the_toc(tmp_path):
    (tmp_path / "_toc.yml").write_text(
        "format: jb-book\nroot: book/intro\nparts:\n  - caption: A\n    chapters:\n      - file: notebooks/a\n"
        "        sections:\n          - file: notebooks/b.md\n  - caption: B\n    chapters:\n      - file: summary/s\n")
    assert page.book_documents(tmp_path) == {"book/intro", "notebooks/a", "notebooks/b", "summary/s"}
    assert page.book_documents(tmp_path / "nowhere") == set()


def test_timing_frame_shows_estimates_and_measured_runs(tmp_path):
    from posgeom.reproduce import CHAPTERS

    registry = Registry(tmp_path / "results")
    registry.save(RUNS_EXPERIMENT, {"chapter": "sinusoids-as-mds", "wall_s": 90.0, "peak_rss_gb": 0.5},
                  params={"chapter": "sinusoids-as-mds"}, scale="quick", seed=0, device="cpu")
    frame = sm.timing_frame(registry)
    assert list(frame.index) == [c.slug for c in CHAPTERS]
    assert frame.loc["sinusoids-as-mds", "quick: last run (min)"] == pytest.approx(1.5)
    assert frame["paper: last run (min)"].isna().all()
    assert frame.loc["minimal-parametrisation", "torchrun at paper"] == "yes"
    from posgeom.timings import chapter_times

    # the measured time of book/chapter-times.json (one source), not the hand-written fallback
    assert frame.loc["real-corpora", "quick: estimate (min)"] == pytest.approx(chapter_times()["real-corpora"] / 60)
    from posgeom.costmodel import experiment_costs

    model = sum(c.gpu_minutes for c in experiment_costs() if c.chapter == "theorem4-separation")
    assert frame.loc["theorem4-separation", "paper: estimate (min)"] == pytest.approx(model)  # the cost model's
    assert frame.loc["theorem4-separation", "paper: from"] == "cost model (GPU)"
    # a chapter without model work: its typed estimate until a paper run is recorded, then that run
    assert frame.loc["sinusoids-as-mds", "paper: from"] == "estimate"
    registry.save(RUNS_EXPERIMENT, {"chapter": "sinusoids-as-mds", "wall_s": 120.0, "peak_rss_gb": 0.75},
                  params={"chapter": "sinusoids-as-mds"}, scale="paper", seed=0, device="cpu")
    frame = sm.timing_frame(registry)
    assert frame.loc["sinusoids-as-mds", "paper: from"] == "measured"
    assert frame.loc["sinusoids-as-mds", "paper: estimate (min)"] == pytest.approx(2.0)
    assert frame.loc["sinusoids-as-mds", "paper: memory (GB)"] == pytest.approx(0.75)


# ------------------------------------------------------------------------------------ the bottom line


def check(verdict="reproduced", scale="quick", changed="", stale=None, *, chapter="alpha", row_scale=None, why=None,
          stand_in=""):
    return sm.Check(chapter=chapter, claim="C7", index=0, scale=scale, ours="1", verdict=verdict,
                    why=why if why is not None else ("" if verdict == "reproduced" else f"reason for {verdict}"),
                    model="m", corpus="c", options="", row_scale=row_scale or scale, paper="0.563", stale=stale,
                    would_decide="a run" if verdict == "inconclusive here" else "", changed=changed,
                    stand_in=stand_in)


EVIDENCE = ("reproduced", "depends on an unstated choice", "not reproduced")


def oracle_bottom_line(checks):
    """The rule as written on the page, point by point."""
    if not checks:
        return sm.NOT_RUN
    current = [c for c in checks if c.stale is None]
    if not current:
        return sm.ALL_STALE
    # only evidence at the claim's own conditions on the claim's own model decides
    evidence = [c for c in current if c.verdict in EVIDENCE and not c.changed and not c.stand_in]
    if not evidence:
        if any(c.verdict == "holds by construction" and not c.changed and not c.stand_in for c in current):
            return "holds by construction"
        return "inconclusive here"
    for tier in ("paper", "quick"):
        deciding = [c.verdict for c in evidence if c.scale == tier]
        if deciding:
            for verdict in ("not reproduced", "depends on an unstated choice", "reproduced"):
                if verdict in deciding:
                    return verdict
    raise AssertionError("every counted check is in a tier")


def every_kind_of_check():
    import itertools

    return [check(v, scale, changed, stale, stand_in=stand_in)
            for v, scale, changed, stale, stand_in in itertools.product(
                VERDICTS, ("quick", "paper"), ("", "weight decay 10"), (None, "code changed"), ("", "MiniLM"))]


def test_bottom_line_rule_on_every_pair_of_checks():
    kinds = every_kind_of_check()
    assert len(kinds) == 80
    seen = set()
    for a in kinds:
        assert sm.bottom_line([a]).verdict == oracle_bottom_line([a])
        for b in kinds:
            got = sm.bottom_line([a, b])
            assert got.verdict == oracle_bottom_line([a, b]), (a, b, got)
            assert sm.bottom_line([b, a]).verdict == got.verdict  # order does not matter
            seen.add(got.verdict)
            assert got.sentence.endswith(".")
    assert seen == {*VERDICTS, sm.ALL_STALE}


def test_bottom_line_rule_on_random_sets_of_checks():
    import numpy as np

    kinds = every_kind_of_check()
    rng = np.random.default_rng(0)
    for _ in range(2000):
        picked = [kinds[i] for i in rng.integers(0, len(kinds), size=int(rng.integers(1, 7)))]
        assert sm.bottom_line(picked).verdict == oracle_bottom_line(picked)


def test_bottom_line_worked_cases():
    # rows that break the theorem's hypotheses never decide: the C2 case of issue 27
    b = sm.bottom_line([check("inconclusive here"), check("depends on an unstated choice", changed="stationary corpus"),
                        check("depends on an unstated choice", changed="weight decay")])
    assert b.verdict == "inconclusive here" and "2 changed conditions" in b.sentence
    b = sm.bottom_line([check("reproduced", changed="causal mask"), check("not reproduced")])
    assert b.verdict == "not reproduced" and "alpha: reason for not reproduced" in b.sentence
    assert "quick scale and the claim's own conditions" in b.sentence and "1 changed conditions" in b.sentence
    # a changed-conditions refutation does not overturn evidence at the claim's conditions
    assert sm.bottom_line([check("reproduced"), check("not reproduced", scale="paper", changed="x")]).verdict == "reproduced"
    # a check that cannot fail is counted apart; alone it gives "holds by construction"
    b = sm.bottom_line([check("holds by construction"), check("depends on an unstated choice", changed="x")])
    assert b.verdict == "holds by construction" and "alpha: reason for holds by construction" in b.sentence
    b = sm.bottom_line([check("holds by construction"), check("reproduced")])
    assert b.verdict == "reproduced" and "1 holds by construction" in b.sentence
    # a stand-in never decides, whether it agrees or not
    b = sm.bottom_line([check("reproduced", stand_in="MiniLM"), check("inconclusive here")])
    assert b.verdict == "inconclusive here" and "1 stand-in" in b.sentence
    assert sm.bottom_line([check("not reproduced", stand_in="MiniLM")]).verdict == "inconclusive here"
    # a paper-scale check outweighs any quick check, even a refutation at the claim's conditions
    b = sm.bottom_line([check("not reproduced"), check("reproduced", scale="paper")])
    assert b.verdict == "reproduced" and "paper scale" in b.sentence and "1 outweighed" in b.sentence
    # an exact result weighs as the scale of its run: it does not outweigh the other checks of the claim
    assert sm.bottom_line([check("depends on an unstated choice"),
                           check("reproduced", row_scale="exact")]).verdict == "depends on an unstated choice"
    # inconclusive checks never refute, and never confirm
    b = sm.bottom_line([check("inconclusive here"), check("reproduced")])
    assert b.verdict == "reproduced" and "1 inconclusive" in b.sentence
    b = sm.bottom_line([check("inconclusive here"), check("inconclusive here", scale="paper")])
    assert b.verdict == "inconclusive here" and "would decide: a run" in b.sentence
    # stale checks do not count; all stale says so
    assert sm.bottom_line([check("not reproduced", stale="code changed"), check("reproduced")]).verdict == "reproduced"
    assert sm.bottom_line([check(stale="notebook changed")]).verdict == sm.ALL_STALE
    assert sm.bottom_line([]).verdict == sm.NOT_RUN
    # only changed conditions here and a check waiting for a GPU: the GPU check is what would decide
    b = sm.bottom_line([check("reproduced", scale="paper", changed="a small training set"), check(sm.NEEDS_GPU, scale="paper")])
    assert b.verdict == "inconclusive here" and "reproduced with its conditions changed (a small training set)" in b.sentence
    assert "would decide: the check that waits for a GPU (alpha: " in b.sentence and "1 changed conditions" in b.sentence
    # a check waiting for a GPU is counted once, as waiting, never also as stale
    b = sm.bottom_line([check("reproduced"), check(sm.NEEDS_GPU, scale="paper"), check(sm.NEEDS_GPU, scale="paper")])
    assert b.verdict == "reproduced" and "2 awaiting a GPU" in b.sentence and "stale" not in b.sentence
    b = sm.bottom_line([check("reproduced"), check(sm.NEEDS_GPU, scale="paper"), check("x", stale="code changed")])
    assert "1 awaiting a GPU" in b.sentence and "1 stale" in b.sentence


def test_a_stand_in_value_is_labelled_in_the_paper_column(tmp_path):
    record_comparison("alpha", [row("C9", "0.31", "inconclusive here", scale="paper", model="all-MiniLM-L6-v2",
                                    stand_in="all-MiniLM-L6-v2")], settings_at(tmp_path, "paper"))
    (c9,) = [s for s in sm.claim_summaries(Registry(tmp_path / "results")) if s.claim.id == "C9"]
    assert c9.checks[0]["paper"].stand_in == "all-MiniLM-L6-v2"
    assert sm.summary_cells(c9)["ours (paper)"] == ["stand-in all-MiniLM-L6-v2: 0.31"]


def test_summary_counts_four_verdicts_and_bottom_lines(tmp_path):
    s = settings_at(tmp_path)
    record_comparison("alpha", [row("C7", "1", "inconclusive here"), row("C7", "2", "depends on an unstated choice"),
                                row("C10", "3", "inconclusive here"), row("C5", "4", "not reproduced"),
                                row("C7", "5", conditions={"corpus": "IMDB"})], s)
    summaries = sm.claim_summaries(Registry(s.results_dir))
    counts = sm.verdict_counts(summaries)
    assert list(counts.index[:len(VERDICTS)]) == list(VERDICTS)
    assert counts.loc["inconclusive here", "quick"] == 2 and counts.loc["not reproduced", "quick"] == 1
    lines = sm.bottom_line_frame(summaries)["bottom line"]
    assert lines["C7"] == "depends on an unstated choice" and lines["C10"] == "inconclusive here"
    assert lines["C5"] == "not reproduced" and lines["C1"] == sm.NOT_RUN
    totals = sm.bottom_line_counts(summaries)
    assert totals.sum() == len(PAPER_CLAIMS) and totals["inconclusive here"] == 1
    from bs4 import BeautifulSoup

    table = BeautifulSoup(page.bottom_line_html(summaries), "html.parser")
    assert [th.get_text() for th in table.select("thead th")] == ["Claim", "Bottom line", "Why"]
    assert len(table.select("tbody tr")) == len(PAPER_CLAIMS)
    c5 = next(r for r in table.select("tbody tr") if r.th.get_text().startswith("C5:"))
    assert c5.select_one(".posgeom-verdict-not-reproduced").get_text() == "✗ not reproduced"
    # the detailed table shows the run that would decide, and what a check changed
    cells = sm.summary_cells(next(x for x in summaries if x.claim.id == "C10"))
    assert "would decide: bert-base-uncased at paper scale on SST-2" in cells["verdict"][0]
    cells = sm.summary_cells(next(x for x in summaries if x.claim.id == "C7"))
    assert "changed from the claim: corpus: IMDB (the claim states SST-2)" in cells["setting"][2]


# ------------------------------------------------------------------------------------ measured chapter times


def test_chapter_times_read_the_one_file_and_format_it(tmp_path):
    assert sm.chapter_times(tmp_path) == {}  # nothing measured yet
    assert sm.chapter_time_substitutions({})["time_real_corpora"] == sm.NOT_MEASURED
    (tmp_path / "book").mkdir()
    (tmp_path / sm.CHAPTER_TIMES_FILE).write_text(json.dumps({"seconds": {"real-corpora": 403.2, "encodings-at-a-glance": 55.4}}))
    times = sm.chapter_times(tmp_path)
    assert times == {"real-corpora": 403.2, "encodings-at-a-glance": 55.4}
    subs = sm.chapter_time_substitutions(times)
    assert subs["time_real_corpora"] == "6.7 min" and subs["time_encodings_at_a_glance"] == "55 s"
    assert subs["time_diagnose_your_model"] == sm.NOT_MEASURED  # every chapter of the book has a key
    assert sm.format_duration(119.4) == "119 s" and sm.format_duration(120) == "2.0 min"
    # the peak memory of the same build: a substitution beside each time
    assert subs["memory_real_corpora"] == sm.NOT_MEASURED
    (tmp_path / sm.CHAPTER_TIMES_FILE).write_text(json.dumps({"seconds": {"real-corpora": 403.2},
                                                              "peak_memory_gb": {"real-corpora": 1.94}}))
    from posgeom.timings import chapter_memory

    memory = chapter_memory(tmp_path)
    subs = sm.chapter_time_substitutions(sm.chapter_times(tmp_path), memory=memory)
    assert subs["memory_real_corpora"] == "1.9 GB" and subs["memory_inside_bert"] == sm.NOT_MEASURED
    (tmp_path / sm.CHAPTER_TIMES_FILE).write_text(json.dumps({"seconds": {}, "peak_memory_gb": {"real-corpora": -1}}))
    with pytest.raises(ValueError, match="peak_memory_gb"):
        chapter_memory(tmp_path)
    frame = sm.timing_frame(Registry(tmp_path / "results"), measured=times)
    assert frame.loc["real-corpora", "quick: measured build (min)"] == pytest.approx(403.2 / 60)
    assert pd.isna(frame.loc["inside-bert", "quick: measured build (min)"])
    (tmp_path / sm.CHAPTER_TIMES_FILE).write_text(json.dumps({"seconds": {"real-corpora": "fast"}}))
    with pytest.raises(ValueError, match="benchmarks/chapter_times.py"):
        sm.chapter_times(tmp_path)


def test_every_page_takes_chapter_times_from_the_one_file():
    """The teaching page and the chapters' boxes name the times only through {{ time_<chapter> }}."""
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    keys = set(sm.chapter_time_substitutions({}))
    teaching = (repo / "book" / "teaching.md").read_text()
    table = teaching.split("## How long each chapter runs on a laptop", 1)[1].split("\n## ", 1)[0]
    used = set(re.findall(r"\{\{ (time_\w+) \}\}", table))
    assert len(used) == 13 and used <= keys
    assert not re.search(r"\| \d+(\.\d+)? (s|min) \|", table), "a typed time is left in the teaching table"
    for chapter in (repo / "notebooks").glob("*.md"):
        text = chapter.read_text()
        if "What this chapter needs" not in text or "**Measured.**" not in text:
            continue
        measured = text.split("**Measured.**", 1)[1].split("\n- **", 1)[0]
        assert "{{ time_" + chapter.stem.replace("-", "_") + " }}" in measured, chapter.name
        assert not re.search(r"took [\d.–]+ (s|min) at `quick`", measured), chapter.name


def test_the_build_time_is_measured_once_and_quoted_from_that_record(tmp_path):
    """The whole cold build's time is in the one file; the pages quote it as {{ time_book_build }} and the
    README (plain Markdown, no substitutions) states the same figure."""
    from pathlib import Path

    from posgeom.timings import BOOK_BUILD

    (tmp_path / "book").mkdir()
    (tmp_path / sm.CHAPTER_TIMES_FILE).write_text(json.dumps({"seconds": {"real-corpora": 100.0},
                                                              "book_build_seconds": 563.0}))
    times = sm.chapter_times(tmp_path)
    assert times[BOOK_BUILD] == 563.0
    assert sm.chapter_time_substitutions(times)["time_book_build"] == "9.4 min"
    assert sm.chapter_time_substitutions({})["time_book_build"] == sm.NOT_MEASURED
    (tmp_path / sm.CHAPTER_TIMES_FILE).write_text(json.dumps({"seconds": {}, "book_build_seconds": "quick"}))
    with pytest.raises(ValueError, match="book_build_seconds"):
        sm.chapter_times(tmp_path)

    repo = Path(__file__).resolve().parents[1]
    measured = sm.chapter_times(repo)
    assert BOOK_BUILD in measured, "book/chapter-times.json has no build time: bench_book_build.py --write-times"
    readme = (repo / "README.md").read_text()
    assert f"**{sm.format_duration(measured[BOOK_BUILD])}**" in readme, "the README's build time is not the measured one"
    assert "{{ time_book_build }}" in (repo / "book" / "how-to-use.md").read_text()


# ------------------------------------------------------------------------------------ the answer at the top


def test_the_summary_opens_with_the_tally_and_a_short_why(tmp_path):
    """The counts of claims per verdict (every verdict named, with its meaning), and one short "Why" per
    claim that names the chapter; the bookkeeping sentence goes to the list below."""
    from bs4 import BeautifulSoup

    from posgeom.wording import WHY_WORDS_MAX

    s = settings_at(tmp_path)
    long_why = ("the stress is 0.0173 above MDS's (bootstrap bias 0.001, 95% interval [0.01, 0.02]); "
                + ", ".join(f"frequency {k} of 25 below 2π/n" for k in range(20)))
    record_comparison("sinusoids-as-mds", [row("C4", "1", "depends on an unstated choice", why=long_why, scale="quick")], s)
    record_comparison("learned-tables", [row("S5", "2", "holds by construction", why="exact: the table has 16 rows")], s)
    summaries = sm.claim_summaries(Registry(s.results_dir))
    tally = BeautifulSoup(page.tally_html(summaries), "html.parser")
    shown = {li["data-verdict"]: int(li.select_one(".posgeom-tally-count").get_text()) for li in tally.select("li")}
    assert set(VERDICTS) <= set(shown) and shown["depends on an unstated choice"] == 1
    assert shown["holds by construction"] == 1 and shown[sm.NOT_RUN] == len(PAPER_CLAIMS) - 2
    assert all(li.select_one(".posgeom-tally-gloss").get_text() for li in tally.select("li"))
    table = BeautifulSoup(page.bottom_line_html(summaries, documents={"notebooks/sinusoids-as-mds"}), "html.parser")
    for tr in table.select("tbody tr"):
        why = tr.select("td")[-1].get_text(" ", strip=True)
        assert len(why.split()) <= WHY_WORDS_MAX, why
    c4 = next(tr for tr in table.select("tbody tr") if tr.th.get_text().startswith("C4:"))
    why = c4.select("td")[-1]
    assert why.strong.get_text() == "0.0173"  # the deciding number, in bold, and only it
    assert len(why.select("strong")) == 1
    assert why.a["href"].endswith("notebooks/sinusoids-as-mds.html") and "bootstrap" not in why.get_text()
    decisions = page.decisions_html(summaries)
    assert "decided by 1 check at quick scale" in decisions  # the bookkeeping is kept, below


def test_a_why_about_the_designs_power_names_the_finding_instead(tmp_path):
    from posgeom.wording import WHY_WORDS_MAX

    s = settings_at(tmp_path)
    ours = "tail accuracy 0.7641 (90% short) vs 0.9237 (uniform lengths); difference -0.1596 [-0.1733, -0.1460]"
    record_comparison("learned-tables-fail", [row("S4", ours, "reproduced",
                                                  why="power 82% for the smallest effect that matters, 0.02")], s)
    summary = next(x for x in sm.claim_summaries(Registry(s.results_dir)) if x.claim.id == "S4")
    sentence, chapter = page.short_why(summary)
    assert sentence == "Tail accuracy 0.7641 vs 0.9237." and chapter == "learned-tables-fail"
    assert len(sentence.split()) <= WHY_WORDS_MAX


def test_a_stand_in_checks_why_names_the_stand_in_model(tmp_path):
    s = settings_at(tmp_path)
    record_comparison("inside-bert", [row("C10", "0.3", "inconclusive here", model="none", why="a stand-in",
                                          stand_in="all-MiniLM-L6-v2")], s)
    summary = next(x for x in sm.claim_summaries(Registry(s.results_dir)) if x.claim.id == "C10")
    sentence, chapter = page.short_why(summary)
    assert sentence == "Checked only on a stand-in model, all-MiniLM-L6-v2; the claim is about another model."
    assert chapter == "inside-bert"
