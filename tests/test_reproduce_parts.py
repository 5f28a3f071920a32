"""Each chapter's parts at paper scale: measured where stored, the cost model's GPU minutes where waiting."""

from __future__ import annotations

from pathlib import Path

import pytest

from posgeom.costmodel import gpu_work
from posgeom.registry import Registry
from posgeom.reproduce import CHAPTERS
from posgeom.reproduce.parts import CHAPTER_PARTS, chapter_needs, chapter_of, paper_parts, paper_parts_frame


def test_every_chapter_has_parts_and_every_committed_part_one_home():
    assert set(CHAPTER_PARTS) == {c.slug for c in CHAPTERS} and all(CHAPTER_PARTS.values())
    for own_record in ("claims", "chapter_runs", "chapter_progress"):  # a chapter's records are no part of it
        assert chapter_of(own_record) is None
    committed = Registry(Path(__file__).resolve().parents[1] / "results").entries(scale="paper")
    assert committed, "the committed paper-scale results are missing"
    for entry in committed:
        if entry.experiment not in ("claims", "chapter_runs", "chapter_progress"):
            assert chapter_of(entry.experiment) is not None, entry.experiment
    # the GPU work the cost model names lies in some chapter's parts too
    for pattern in gpu_work():
        assert chapter_of(pattern.replace("*", "x")) is not None, pattern


def test_stored_parts_are_measured_and_gpu_work_is_estimated(tmp_path):
    registry = Registry(tmp_path / "results")
    registry.save("necessity.equivariance", {"gap": 0.0}, params={"n": 1}, scale="paper", seed=0, device="cpu",
                  runtime_s=318.9, code="posgeom.experiments.necessity")
    registry.save("necessity.equivariance", {"gap": 0.0}, params={"n": 2}, scale="paper", seed=0, device="cpu",
                  runtime_s=1.1, code="posgeom.experiments.necessity")
    registry.save("necessity.equivariance", {"gap": 0.0}, params={"n": 3}, scale="quick", seed=0, device="cpu",
                  runtime_s=99.0, code="posgeom.experiments.necessity")  # another scale: not counted
    parts = {p.part: p for p in paper_parts("theorem1-necessity", registry)}
    measured = parts["necessity.equivariance"]
    assert (measured.entries, measured.seconds, measured.device, measured.status) == (2, 320.0, "cpu", "measured")
    assert measured.cost == "5.3 min (CPU)"
    waiting = parts["necessity.order_task*"]
    assert waiting.status == "needs a GPU" and waiting.gpu_minutes == gpu_work()["necessity.order_task*"]
    assert waiting.cost == f"about {waiting.gpu_minutes:.0f} GPU-minutes (estimate)" and len(waiting.cost) <= 50
    frame = paper_parts_frame("theorem1-necessity", registry)
    assert list(frame.index) == ["necessity.equivariance", "necessity.order_task*"]
    # once the GPU work is stored it is measured like any other part
    registry.save("necessity.order_task", {"acc": 1.0}, params={}, scale="paper", seed=0, device="cuda:0",
                  runtime_s=600.0, code="posgeom.experiments.necessity")
    parts = {p.part: p for p in paper_parts("theorem1-necessity", registry)}
    assert "necessity.order_task*" not in parts and parts["necessity.order_task"].cost == "10.0 min (GPU)"


def test_the_box_figures_sum_the_stored_parts_and_price_the_waiting_ones(tmp_path):
    registry = Registry(tmp_path / "results")
    empty = chapter_needs("theorem1-necessity", registry)
    assert empty.paper_measured == "nothing stored here yet"
    assert empty.paper_gpu.startswith(f"about {gpu_work()['necessity.order_task*']:.0f} GPU-minutes")
    registry.save("necessity.equivariance", {"gap": 0.0}, params={"n": 1}, scale="paper", seed=0, device="cpu",
                  runtime_s=318.9, code="posgeom.experiments.necessity")
    registry.save("necessity.equivariance", {"gap": 0.0}, params={"n": 2}, scale="paper", seed=0, device="cpu",
                  runtime_s=1.1, code="posgeom.experiments.necessity")
    assert chapter_needs("theorem1-necessity", registry).paper_measured == (
        "5.3 min on a CPU, the recorded wall time of 2 stored results")
    registry.save("necessity.order_task", {"acc": 1.0}, params={}, scale="paper", seed=0, device="cuda:0",
                  runtime_s=600.0, code="posgeom.experiments.necessity")
    done = chapter_needs("theorem1-necessity", registry)
    assert done.paper_measured == "15.3 min on a CPU and a GPU, the recorded wall time of 3 stored results"
    assert done.paper_gpu == "none"  # said once: the box already reads "the parts that wait for a GPU: none"
    # a device other than a CPU or a GPU is named as recorded, a missing one says so
    registry.save("necessity.equivariance", {"gap": 0.0}, params={"n": 3}, scale="paper", seed=0, device="mps",
                  runtime_s=60.0, code="posgeom.experiments.necessity")
    registry.save("necessity.equivariance", {"gap": 0.0}, params={"n": 4}, scale="paper", seed=0, device=None,
                  runtime_s=60.0, code="posgeom.experiments.necessity")
    assert chapter_needs("theorem1-necessity", registry).paper_measured.startswith("17.3 min on a CPU and a GPU and mps, ")
    parts = {p.part: p for p in paper_parts("theorem1-necessity", registry)}
    assert parts["necessity.equivariance"].places == ("CPU", "mps") and parts["necessity.equivariance"].cost.endswith(
        "(CPU and mps)")
    # every chapter's box reads its figures from here: one directive, whose text needs_box writes
    from posgeom.reproduce.box import needs_box
    from posgeom.timings import chapter_memory, chapter_times, format_duration, format_memory

    root = Path(__file__).resolve().parents[1]
    times, memory = chapter_times(root), chapter_memory(root)
    for chapter in CHAPTERS:
        text = (root / "notebooks" / f"{chapter.slug}.md").read_text()
        assert "```{posgeom-needs}\n```" in text and "chapter_needs(" not in text, chapter.slug
        box = needs_box(chapter.slug, registry=registry, root=root)
        needs = chapter_needs(chapter.slug, registry)
        assert needs.paper_measured in box and needs.paper_gpu in box, chapter.slug
        measured = box.split("**Measured.**", 1)[1].split("\n- **", 1)[0]
        assert f"took {format_duration(times.get(chapter.slug))} in" in measured, chapter.slug
        assert f"peak memory {format_memory(memory.get(chapter.slug))};" in measured, chapter.slug
    box = needs_box("theorem1-necessity", registry=registry, root=root)
    assert "| `necessity.equivariance` | 4 | 7.3 min (CPU and mps) | measured |" in box  # the parts' table


def test_a_waiting_part_is_listed_at_its_home_only_as_a_stored_one_is(tmp_path):
    # the monotonicity chapter reads real-corpora's scratch table: its GPU minutes are counted in one box
    registry = Registry(tmp_path / "results")
    homes = {chapter.slug: {p.part for p in paper_parts(chapter.slug, registry) if not p.entries}
             for chapter in CHAPTERS}
    assert "real_corpora_scratch_*" in homes["real-corpora"] and "real_corpora_scratch_*" not in homes["monotonicity"]
    for slug, waiting in homes.items():
        assert all(chapter_of(part) == slug for part in waiting), slug


def test_unknown_chapter_is_one_clear_error(tmp_path):
    with pytest.raises(ValueError, match="valid chapters are"):
        paper_parts("chapter-9", Registry(tmp_path))
