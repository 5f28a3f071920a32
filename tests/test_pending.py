"""GPU work asked for on a CPU at paper scale: reported where it is needed, never trained for days.

The registry returns a Pending for it (and for whatever is computed from it), a notebook run with GPU work
reported goes on past the cells that need it, and a chapter's rows record what the CPU decides and, for the
other checks, what they wait for; the summary never counts a waiting check as a verdict."""

from __future__ import annotations

import json
import textwrap

import pytest

from posgeom.config import get_settings
from posgeom.registry import GPU_WORK_ENV, NeedsGPU, Pending, Registry, gpu_work_minutes
from posgeom.registry.pending import assigned_names
from posgeom.report import NEEDS_GPU, PAPER_CLAIMS, ComparisonRow, decided_rows, row_record
from posgeom.verdicts import Decision

GPU_WORK = json.dumps({"toy.gpu": 12.0})


@pytest.fixture
def gpu_work_reported(monkeypatch):
    monkeypatch.setenv(GPU_WORK_ENV, GPU_WORK)


def test_pending_says_what_it_needs_and_refuses_every_use():
    p = Pending("toy.gpu", 12.0)
    assert repr(p) == "<needs a GPU (about 12 GPU-minutes for toy.gpu; scripts/gpu-slice)>"
    assert "about 12 GPU-minutes" in p._repr_html_()
    for use in (lambda: p.values, lambda: p["x"], lambda: list(p), lambda: len(p), lambda: p + 1, lambda: 1.0 * p,
                lambda: f"{p:.3f}", lambda: bool(p), lambda: str(p), lambda: p < 1, lambda: float(p)):
        with pytest.raises(NeedsGPU, match="toy.gpu"):
            use()
    assert not hasattr(p, "_repr_latex_")  # display probes private names: absent, not an error
    err = NeedsGPU("x", None)
    assert str(err) == "needs a GPU (x; scripts/gpu-slice)"
    import pickle

    assert pickle.loads(pickle.dumps(err)).text == err.text


def test_gpu_work_is_reported_only_at_paper_scale_on_a_cpu(monkeypatch):
    assert gpu_work_minutes("toy.gpu", "paper", "cpu") is None  # no GPU work named: run everything
    monkeypatch.setenv(GPU_WORK_ENV, GPU_WORK)
    assert gpu_work_minutes("toy.gpu", "paper", "cpu") == 12.0
    monkeypatch.setenv(GPU_WORK_ENV, json.dumps({"toy.gpu*": 12.0}))
    assert gpu_work_minutes("toy.gpu.sst2", "paper", "cpu") == 12.0  # by pattern
    assert gpu_work_minutes("toy.cpu", "paper", "cpu") is None
    assert gpu_work_minutes("toy.gpu", "quick", "cpu") is None
    assert gpu_work_minutes("toy.gpu", "paper", "cuda:0") is None
    monkeypatch.setenv(GPU_WORK_ENV, "{not json")
    with pytest.raises(ValueError, match="JSON object"):
        gpu_work_minutes("toy.gpu", "paper", "cpu")


def test_registry_returns_pending_for_gpu_work_and_for_what_reads_it(tmp_path, gpu_work_reported):
    registry, calls = Registry(tmp_path), []

    def gpu():
        calls.append("trained")
        return {"x": 1}

    kw = dict(params={}, scale="paper", seed=0, device="cpu")
    table = registry.run("toy.gpu", gpu, **kw)
    assert isinstance(table, Pending) and calls == []  # never trained on the CPU
    derived = registry.run("toy.cpu", lambda: {"y": table.values["x"] + 1}, **kw)
    assert isinstance(derived, Pending) and "toy.gpu" in repr(derived)  # computed from pending work: pending too
    assert not registry.entries("toy.gpu", scale="paper") and not registry.entries("toy.cpu", scale="paper")
    # CPU work runs as always
    done = registry.run("toy.cpu2", lambda: {"y": 2}, **{**kw, "scale": "quick"})
    assert done.values["y"] == 2


def test_a_stored_result_of_gpu_work_is_read_not_reported(tmp_path, monkeypatch):
    from posgeom.registry import ALLOW_DIRTY_ENV

    monkeypatch.setenv(ALLOW_DIRTY_ENV, "1")  # a paper-scale write from a test's working tree
    registry = Registry(tmp_path)
    registry.save("toy.gpu", {"x": 1}, params={}, scale="paper", seed=0, device="cuda", code=())
    monkeypatch.setenv(GPU_WORK_ENV, GPU_WORK)
    got = registry.run("toy.gpu", lambda: {"x": 2}, params={}, scale="paper", seed=0, device="cpu", same_code=False)
    assert got.values["x"] == 1  # what a GPU run stored is read back on the CPU


def test_assigned_names_are_the_cells_top_level_targets():
    source = textwrap.dedent("""
        a = f(x)
        b, (c, d) = g()
        e += 1
        for k in range(3):
            m = k
        with open(p) as fh:
            n = 1
        def h(q):
            r = q
        s = [t for t in u]
        import numpy as np
    """)
    assert assigned_names(source) == ["a", "b", "c", "d", "e", "k", "m", "fh", "n", "s"]
    assert assigned_names("def broken(:") == []


def _row(claim):
    return ComparisonRow(claim, ours="1", scale="paper", model="m", corpus="c", decision=Decision("reproduced"))


def test_decided_rows_keep_each_check_the_cpu_decides_and_say_what_the_others_need(tmp_path):
    settings = get_settings(scale="paper", device="cpu")
    waiting = Pending("learned_init_study", 5.3)
    rows = decided_rows([("S1", lambda: _row("S1")), ("S7", lambda: waiting.values), ("S8", lambda: [_row("S8")])],
                        settings)
    assert [r.claim for r in rows] == ["S1", "S7", "S8"]
    assert [r.verdict for r in rows] == ["reproduced", NEEDS_GPU, "reproduced"]
    pending = rows[1]
    assert pending.ours == ("needs a GPU (about 5 GPU-minutes for the study of the learned tables' initialisation; "
                            "scripts/gpu-slice)")
    assert pending.why == "about 5 GPU-minutes for the study of the learned tables' initialisation; scripts/gpu-slice"
    assert pending.scale == "paper" and pending.would_decide == "" and pending.decision is None
    from posgeom.report import record_comparison

    entry = record_comparison("learned-tables", rows, get_settings(scale="quick", device="cpu", results_dir=tmp_path))
    assert entry.manifest["model"] == "m"  # the waiting row ran no model: the manifest names none for it
    record = row_record(pending)
    assert record["verdict"] == NEEDS_GPU and "pending" not in record and record["paper"] == PAPER_CLAIMS["S7"].paper_value
    # any other error is not swallowed
    with pytest.raises(ZeroDivisionError):
        decided_rows([("S1", lambda: 1 / 0)], settings)
    with pytest.raises(ValueError, match="no decision"):
        ComparisonRow("S1", ours="", scale="paper", model="", corpus="", decision=Decision("reproduced"), pending="x")


def test_a_gpu_chapter_with_every_input_pending_records_one_waiting_row_per_check():
    from posgeom.chapters import learned_tables_fail, theorem1_necessity

    settings = get_settings(scale="paper", device="cpu")
    p = Pending("necessity.order_task", 23.1)
    rows = theorem1_necessity.comparison_rows(p, p, p, settings)
    assert [(r.claim, r.verdict) for r in rows] == [("C1", NEEDS_GPU)] * 4
    # S5 needs no training: the CPU decides it while S4 and S6 wait
    q = Pending("learned_tails", 2.1)
    rows = learned_tables_fail.comparison_rows(q, q, q, "PositionLimitError: ...", 16, settings)
    assert [(r.claim, r.verdict) for r in rows] == [("S4", NEEDS_GPU), ("S5", "holds by construction"),
                                                    ("S6", NEEDS_GPU), ("S6", NEEDS_GPU)]


def test_the_summary_counts_a_waiting_check_apart_from_the_verdicts(tmp_path):
    from posgeom.report import record_comparison
    from posgeom.summary import bottom_line, claim_summaries, verdict_counts

    quick = get_settings(scale="quick", device="cpu", results_dir=tmp_path)
    paper = get_settings(scale="paper", device="cpu", results_dir=tmp_path)
    record_comparison("learned-tables", [_row("S1"), _row("S7")], quick)
    waiting = decided_rows([("S1", lambda: _row("S1")), ("S7", lambda: Pending("learned_init_study", 5.3).values)],
                           paper)
    record_comparison("learned-tables", waiting, paper)
    summaries = {s.claim.id: s for s in claim_summaries(Registry(tmp_path))}
    counts = verdict_counts(list(summaries.values()))
    assert counts.loc[NEEDS_GPU, "paper"] == 1 and counts.loc["reproduced", "paper"] == 1
    line = summaries["S7"].bottom_line
    assert line.verdict == "reproduced"  # the quick check decides; the waiting one is counted apart
    assert "1 awaiting a GPU" in line.sentence
    only_waiting = [c for c in summaries["S7"].all_checks if c.verdict == NEEDS_GPU]
    assert bottom_line(only_waiting).verdict == "not yet run"
