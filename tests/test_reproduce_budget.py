"""``posgeom reproduce --budget``: slices that fit, a clean stop at the training deadline, resumption by
the next call, progress in ``--list``; driven by a fake training step instead of notebooks."""

from __future__ import annotations

import json
import os

import pytest

from posgeom.cli import main
from posgeom.config import get_settings
from posgeom.registry import Registry
from posgeom.report import ComparisonRow, comparison_table
from posgeom.verdicts import Decision
from posgeom.reproduce import (
    DEADLINE_ENV,
    INTERRUPTED_NAME,
    PROGRESS_EXPERIMENT,
    Chapter,
    Estimate,
    SliceInterrupted,
    chapter_progress,
    chapter_status,
    format_list,
    parse_budget,
    reproduce,
    training_deadline,
)

FAKES = (
    Chapter("fake-a", "Fake A", ("C7",), Estimate(0.1, 0.1), Estimate(0.5, 1), False),
    Chapter("fake-b", "Fake B", ("S3",), Estimate(0.1, 0.1), Estimate(30, 1), True),
    Chapter("fake-c", "Fake C", ("C3",), Estimate(0.1, 0.1), Estimate(0.5, 1), False),
)


class FakeClock:
    def __init__(self):
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


class FakeTraining:
    """Stands in for a chapter's notebook: "trains" ``steps[slug]`` steps of ``seconds_per_step`` each on
    the fake clock, stops at ``POSGEOM_DEADLINE`` as ``train`` does (saving its step), resumes from it."""

    def __init__(self, root, clock, steps, seconds_per_step=10.0):
        self.root, self.clock, self.steps, self.dt = root, clock, steps, seconds_per_step
        self.calls = []

    def saved(self, slug):
        path = self.root / f"{slug}.step"
        return int(path.read_text()) if path.exists() else 0

    def __call__(self, path, *, env, timeout, on_cell, slug, interrupt_on_timeout):
        self.calls.append(slug)
        deadline = float(env[DEADLINE_ENV]) if DEADLINE_ENV in env else None
        step, total = self.saved(slug), self.steps[slug]
        while step < total:
            if deadline is not None and self.clock() + self.dt > deadline:
                (self.root / f"{slug}.step").write_text(str(step))
                raise SliceInterrupted(slug, f"{INTERRUPTED_NAME}: training stopped at step {step} of {total} "
                                             "(deadline)")
            self.clock.now += self.dt
            step += 1
        (self.root / f"{slug}.step").write_text(str(step))
        settings = get_settings(scale=env["POSGEOM_SCALE"], device="cpu", results_dir=env["POSGEOM_RESULTS_DIR"])
        claim = next(c.claims[0] for c in FAKES if c.slug == slug)
        comparison_table([ComparisonRow(claim, ours="1", scale=settings.scale, model="none", corpus="toy",
                                        decision=Decision("reproduced"))], chapter=slug, settings=settings)
        return {"rss_bytes": None, "gpu_bytes": None}


@pytest.fixture
def book(tmp_path):
    (tmp_path / "notebooks").mkdir()
    for c in FAKES:
        (tmp_path / "notebooks" / f"{c.slug}.md").write_text(f"# {c.slug}\n")
    return tmp_path


def go(book, fake, clock, budget, lines):
    return reproduce("paper", device="cpu", chapters=FAKES, notebooks_dir=book / "notebooks",
                     results_dir=book / "results", out=lines.append, budget=budget, execute=fake, clock=clock)


@pytest.mark.parametrize("text, seconds", [("90s", 90), ("9m", 540), ("2h", 7200), ("1.5h", 5400), (" 9M ", 540),
                                           (30, 30.0)])
def test_parse_budget(text, seconds):
    assert parse_budget(text) == seconds


@pytest.mark.parametrize("text", ["9", "9x", "m9", "", "-5m", "0s", "nine minutes"])
def test_parse_budget_refuses_bad_values_in_one_line(text):
    with pytest.raises(ValueError, match="for example 90s, 9m, 2h") as err:
        parse_budget(text)
    assert "\n" not in str(err.value)


def test_cli_bad_budget_is_one_line_and_exit_2(capsys):
    assert main(["reproduce", "--scale", "paper", "--budget", "9 minutes"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "budget" in err and "90s, 9m, 2h" in err


def test_budget_runs_what_fits_stops_at_the_deadline_and_resumes(book, tmp_path):
    clock = FakeClock()
    fake = FakeTraining(tmp_path, clock, {"fake-a": 3, "fake-b": 60, "fake-c": 2})
    registry = Registry(book / "results")

    lines = []
    report = go(book, fake, clock, "9m", lines)  # 540 s: a (30 s) and 49 steps of b before the deadline
    assert [r.slug for r in report.ran] == ["fake-a"]
    assert report.interrupted == "fake-b" and report.deferred == ["fake-c"]
    assert fake.saved("fake-b") == 49  # the deadline keeps BUDGET_MARGIN_S back: (540 - 20 - 30) / 10
    assert any("stopped at the deadline" in line and "step 49 of 60" in line for line in lines)
    assert chapter_status(FAKES[0], "paper", registry) == "done"
    assert chapter_status(FAKES[1], "paper", registry) == "not run"
    assert "step 49 of 60" in chapter_progress(FAKES[1], "paper", registry)
    listing = format_list(FAKES, "paper", registry, book / "notebooks")
    assert "in progress" in listing and "fake-b: 1 slice(s)" in listing
    assert DEADLINE_ENV not in os.environ  # the deadline does not outlive the run

    clock.now += 3600
    report = go(book, fake, clock, "9m", [])  # b resumes at step 49 and ends, c runs
    assert [r.slug for r in report.ran] == ["fake-b", "fake-c"] and report.interrupted is None
    assert report.skipped == ["fake-a"] and fake.saved("fake-b") == 60
    assert chapter_progress(FAKES[1], "paper", registry) is None  # finished: no progress left to show
    assert all(chapter_status(c, "paper", registry) == "done" for c in FAKES)


def test_a_chapter_is_left_for_later_when_too_little_time_is_left(book, tmp_path):
    clock = FakeClock()
    fake = FakeTraining(tmp_path, clock, {"fake-a": 6, "fake-b": 100, "fake-c": 1})
    lines = []
    report = go(book, fake, clock, "90s", lines)  # 70 s usable: a takes 60 s, b needs at least 1 min
    assert [r.slug for r in report.ran] == ["fake-a"] and report.interrupted is None
    assert report.deferred == ["fake-b", "fake-c"] and fake.calls == ["fake-a"]
    assert any("left for the next call: fake-b, fake-c" in line for line in lines)


def test_several_slices_accumulate_progress(book, tmp_path):
    clock = FakeClock()
    fake = FakeTraining(tmp_path, clock, {"fake-a": 1, "fake-b": 100, "fake-c": 1})
    registry = Registry(book / "results")
    go(book, fake, clock, "2m", [])
    first = fake.saved("fake-b")
    go(book, fake, clock, "2m", [])
    assert fake.saved("fake-b") > first > 0
    values = registry.load(PROGRESS_EXPERIMENT, params={"chapter": "fake-b"}, scale="paper").values
    assert values["slices"] == 2 and values["steps_done"] == fake.saved("fake-b")


def test_training_deadline_sets_and_restores_the_environment(monkeypatch):
    monkeypatch.setenv(DEADLINE_ENV, "5")
    with training_deadline(123.5):
        assert float(os.environ[DEADLINE_ENV]) == 123.5
    assert os.environ[DEADLINE_ENV] == "5"
    monkeypatch.delenv(DEADLINE_ENV)
    with training_deadline(None):
        assert DEADLINE_ENV not in os.environ


def test_slice_interrupted_reads_the_steps():
    assert SliceInterrupted("x", "training stopped at step 7 of 90 (deadline)").steps == (7, 90)
    assert SliceInterrupted("x", "the budget ran out").steps is None
    assert json.dumps({"ok": 1})


class Saved:
    """A stand-in for posgeom.models.checkpoints.CheckpointProgress."""

    def __init__(self, origin, step, total_steps, complete):
        self.origin, self.step, self.total_steps, self.complete = origin, step, total_steps, complete


@pytest.fixture
def fake_training_api(monkeypatch):
    """The training loop's deadline / checkpoint_progress / discard_checkpoints, recorded."""
    import posgeom.models as training

    calls = {"deadline": [], "discard": [], "rows": []}

    from contextlib import contextmanager

    @contextmanager
    def deadline(at=None, *, seconds=None):
        calls["deadline"].append(at)
        yield at

    def checkpoint_progress(results_dir=None, scale=None):
        return list(calls["rows"])

    def discard_checkpoints(results_dir=None, scale=None, *, complete_only=True):
        calls["discard"].append((str(results_dir), scale, complete_only))
        return []

    monkeypatch.setattr(training, "deadline", deadline, raising=False)
    monkeypatch.setattr(training, "checkpoint_progress", checkpoint_progress, raising=False)
    monkeypatch.setattr(training, "discard_checkpoints", discard_checkpoints, raising=False)
    return calls


def test_training_deadline_enters_the_loop_s_deadline(fake_training_api):
    with training_deadline(42.0):
        pass
    assert fake_training_api["deadline"] == [42.0]


def test_list_shows_saved_training_runs_per_experiment(book, fake_training_api):
    from posgeom.reproduce import checkpoint_progress, experiment_progress

    fake_training_api["rows"] = [Saved("posgeom.experiments.separation:run_separation", 2500, 2500, True),
                                 Saved("posgeom.experiments.separation:run_separation", 400, 2500, False),
                                 Saved("posgeom.experiments.monotonicity_ntk:run_ntk", 10, 20, False)]
    runs = checkpoint_progress(book / "results", "paper")
    assert [(r.experiment, r.step, r.complete) for r in runs] == [("separation:run_separation", 2500, True),
                                                                 ("separation:run_separation", 400, False),
                                                                 ("monotonicity:run_ntk", 10, False)]  # moved: by name
    assert experiment_progress(runs) == {"separation:run_separation": "1 run(s) finished, 1 at step 400 of 2500",
                                         "monotonicity:run_ntk": "1 at step 10 of 20"}
    listing = format_list(FAKES, "paper", Registry(book / "results"), book / "notebooks")
    assert "saved training at paper: separation:run_separation: 1 run(s) finished, 1 at step 400 of 2500" in listing


def test_a_finished_chapter_discards_the_finished_runs_states(book, tmp_path, fake_training_api):
    clock = FakeClock()
    fake = FakeTraining(tmp_path, clock, {"fake-a": 1, "fake-b": 1, "fake-c": 1})
    go(book, fake, clock, "9m", [])
    assert len(fake_training_api["discard"]) == 3 and all(c[1:] == ("paper", True) for c in fake_training_api["discard"])
    assert fake_training_api["deadline"] and all(at == fake_training_api["deadline"][0]
                                                 for at in fake_training_api["deadline"])


NB_HEADER = """\
---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
    format_version: 0.13
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""


def _notebook(body: str) -> str:
    return NB_HEADER + f"\n# fake\n\n```{{code-cell}} ipython3\n{body}\n```\n"


@pytest.mark.slow
def test_real_kernels_stop_cleanly_at_the_deadline(tmp_path):
    """Executed notebooks: a cell raising the training loop's TrainingInterrupted, and a cell that
    ignores the deadline (cut by the cell timeout the budget sets), both end the slice cleanly."""
    chapters = (Chapter("fake-train", "T", ("C7",), Estimate(0.1, 0.1), Estimate(0.1, 1), True),
                Chapter("fake-sleep", "S", ("S3",), Estimate(0.1, 0.1), Estimate(0.1, 1), True))
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "fake-train.md").write_text(_notebook(
        "import os\n"
        f"assert float(os.environ['{DEADLINE_ENV}']) > 0\n"
        "class TrainingInterrupted(RuntimeError):\n    pass\n"
        "raise TrainingInterrupted('training stopped at step 3 of 10 (deadline); call again')"))
    (tmp_path / "notebooks" / "fake-sleep.md").write_text(_notebook("import time\ntime.sleep(600)"))
    registry = Registry(tmp_path / "results")
    import time

    t0 = time.time()  # reproduce's clock stands still: how long the plan or a kernel start takes changes nothing

    def run(only, budget):
        return reproduce("paper", only=[only], device="cpu", chapters=chapters, notebooks_dir=tmp_path / "notebooks",
                         results_dir=tmp_path / "results", out=lambda line: None, budget=budget, clock=lambda: t0)

    report = run("fake-train", "2m")
    assert report.interrupted == "fake-train" and report.ran == []
    assert "step 3 of 10" in chapter_progress(chapters[0], "paper", registry)
    report = run("fake-sleep", "30s")
    assert report.interrupted == "fake-sleep"
    assert "1 slice(s)" in chapter_progress(chapters[1], "paper", registry)


def test_list_shows_stored_and_stale_results_per_experiment(book, monkeypatch):
    from posgeom.reproduce import experiment_results, listing

    registry = Registry(book / "results")
    common = dict(scale="paper", seed=0, device="cpu", code="posgeom.experiments.zoo")
    registry.save("separation.drift.mlm.normal.wd0", {"x": 1}, params={"a": 1}, **common)
    registry.save("separation.imdb.mlm.normal.wd0", {"x": 1}, params={"a": 2}, **common)
    registry.save("learned_init_study", {"x": 1}, params={"a": 1}, **common)
    assert experiment_results(registry) == {"separation:run_separation": "2 stored",
                                            "learned_tables:run_init_study": "1 stored"}
    monkeypatch.setattr(listing, "code_changed", lambda m: m["experiment"].startswith("separation.imdb"))
    assert experiment_results(registry)["separation:run_separation"] == "2 stored (1 stale)"
    from posgeom.reproduce import CHAPTERS

    listing = format_list(CHAPTERS, "paper", registry, book / "notebooks")
    line = next(x for x in listing.splitlines() if x.strip().startswith("separation:run_separation"))
    assert "2 stored (1 stale)" in line


def test_a_torchrun_worker_stopped_at_the_deadline_exits_75(monkeypatch, capsys):
    import posgeom.reproduce as rp

    class TrainingInterrupted(RuntimeError):
        pass

    def stops(entry_points, settings=None):
        raise TrainingInterrupted("training stopped at step 5 of 9 (deadline)")

    # the worker's command line as posgeom reproduce builds it for torchrun (after "-m posgeom.cli")
    worker = rp.ddp_command(["m:f"], 2)
    worker = worker[worker.index("posgeom.cli") + 1:]
    assert worker == ["--debug", "reproduce", "--ddp-worker", "m:f"]
    monkeypatch.setattr(rp, "run_ddp_worker", stops)
    assert main(worker) == rp.INTERRUPTED_EXIT == 75
    assert "step 5 of 9" in capsys.readouterr().err

    def fails(entry_points, settings=None):
        raise ValueError("a real failure")

    monkeypatch.setattr(rp, "run_ddp_worker", fails)
    with pytest.raises(ValueError, match="a real failure"):  # --debug: the traceback, for torchrun's log
        main(worker)


def test_the_cpu_part_worker_entry_calls_the_part_at_its_scale(monkeypatch):
    import posgeom.reproduce as rp

    calls = []
    monkeypatch.setattr(rp, "run_cpu_part", lambda entry, kwargs, scale: calls.append((entry, kwargs, scale)))
    assert main(["reproduce", "--cpu-part", "m:f", '{"corpus": "imdb"}', "--scale", "quick"]) == 0
    assert main(["reproduce", "--cpu-part", "m:g", "{}"]) == 0  # paper unless told
    assert calls == [("m:f", {"corpus": "imdb"}, "quick"), ("m:g", {}, "paper")]


def _has_training_deadline() -> bool:
    import posgeom.models as training

    return callable(getattr(training, "deadline", None)) and callable(getattr(training, "checkpoint_progress", None))


@pytest.mark.slow
@pytest.mark.skipif(not _has_training_deadline(), reason="the training loop has no deadline here")
def test_budget_with_the_real_training_loop_stops_and_resumes(tmp_path, monkeypatch):
    """A chapter whose notebook trains with posgeom.models.train: the first call stops it at the deadline
    (the loop saves its state), --list shows the saved run, the second call resumes and finishes it.

    Time is a step count, not the machine's speed: ``reproduce`` runs on a clock standing at ``T0`` and the
    kernel's training loop compares its deadline with a clock that moves 100 s per step from ``T0``
    (``deadline_clock``). The real seconds a step, a save or a kernel start take (well under 100 s on any
    machine) only shift the stop by a step, and the cells' time limits (hours, from the budgets) are far
    beyond what a slow machine needs."""
    steps, per_step = 200, 100.0
    t0 = 2_000_000_000.0
    monkeypatch.setenv("POSGEOM_TEST_CLOCK_START", repr(t0))  # the kernels inherit it
    cell = (
        "import os, posgeom, torch\n"
        "from posgeom.models import Callback, TrainConfig, build_model, get_config, train\n"
        "from posgeom.models.deadlines import deadline_clock\n"
        "from posgeom.report import ComparisonRow, comparison_table\n"
        "from posgeom.verdicts import Decision\n"
        "class StepClock(Callback):\n"
        "    steps = 0\n"
        "    def on_step_end(self, state):\n"
        "        StepClock.steps += 1\n"
        "start = float(os.environ['POSGEOM_TEST_CLOCK_START'])\n"
        "settings = posgeom.get_settings()\n"
        "cfg = get_config('quick', vocab_size=40, max_len=8, d_model=8, n_layers=1, n_heads=2, d_ff=16)\n"
        "model = build_model(cfg, 'mlm', seed=0)\n"
        "ids = torch.randint(5, 40, (64, 8), generator=torch.Generator().manual_seed(0))\n"
        f"with deadline_clock(lambda: start + {per_step} * StepClock.steps):\n"
        f"    r = train(model, (ids, None), TrainConfig(task='mlm', batch_size=8, max_steps={steps}, device='cpu', "
        "progress=False, seed=0, mask_token_id=4, special_token_ids=(0, 1, 2, 3, 4)), callbacks=[StepClock()])\n"
        "comparison_table([ComparisonRow('C7', ours='1', scale=settings.scale, model='none', corpus='toy', "
        "decision=Decision('reproduced'))], chapter='fake-loop', settings=settings)"
    )
    chapters = (Chapter("fake-loop", "L", ("C7",), Estimate(0.1, 0.1), Estimate(0.1, 1), True),)
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "fake-loop.md").write_text(_notebook(cell))
    registry = Registry(tmp_path / "results")

    def run(budget):
        return reproduce("paper", device="cpu", chapters=chapters, notebooks_dir=tmp_path / "notebooks",
                         results_dir=tmp_path / "results", out=lambda line: None, budget=budget,
                         clock=lambda: t0)

    # 2 h less the margin: about 71 steps of the fake clock, then the loop saves its state and stops
    first = run("2h")
    assert first.interrupted == "fake-loop"
    from posgeom.reproduce import BUDGET_MARGIN_S, checkpoint_progress

    saved = checkpoint_progress(tmp_path / "results", "paper")
    expected = int((7200 - BUDGET_MARGIN_S) / per_step)  # the last step that starts before the deadline
    assert len(saved) == 1 and expected - 2 <= saved[0].step <= expected + 1 and not saved[0].complete
    assert f"of {steps}" in chapter_progress(chapters[0], "paper", registry)
    second = run("10h")  # room for every step left
    assert [r.slug for r in second.ran] == ["fake-loop"] and second.interrupted is None
    assert chapter_status(chapters[0], "paper", registry) == "done"


def test_finished_runs_states_are_kept_while_another_chapter_is_in_progress(book, tmp_path, fake_training_api):
    clock = FakeClock()
    fake = FakeTraining(tmp_path, clock, {"fake-a": 1, "fake-b": 100, "fake-c": 1})
    go(book, fake, clock, "2m", [])  # a finishes (its states discarded), b stops at the deadline
    assert report_discards(fake_training_api) == 1
    reproduce("paper", only=["fake-c"], device="cpu", chapters=FAKES, notebooks_dir=book / "notebooks",
              results_dir=book / "results", out=lambda line: None, budget="2m", execute=fake, clock=clock)
    assert report_discards(fake_training_api) == 1  # b is in progress: its finished runs' states stay
    go(book, fake, clock, "1h", [])  # b finishes
    assert report_discards(fake_training_api) == 2


def report_discards(calls) -> int:
    return len(calls["discard"])


def test_cpu_parts_name_real_entry_points_of_gpu_chapters():
    import importlib

    from posgeom.reproduce import CHAPTERS, CPU_PARTS

    gpu = {c.slug for c in CHAPTERS if c.paper_needs_gpu}
    for part in CPU_PARTS:
        assert part.chapter in gpu, part
        module, name = part.entry.split(":")
        assert callable(getattr(importlib.import_module("posgeom.experiments." + module), name)), part


def test_cpu_parts_run_each_part_in_its_own_process_with_a_timeout(tmp_path, monkeypatch, capsys):
    import sys

    from posgeom import reproduce as rp
    from posgeom.reproduce import cpu_parts

    calls = []

    class Done:
        returncode = 0
        stderr = ""

    def fake_run(command, **kw):
        calls.append((command, kw["timeout"], kw["env"]["POSGEOM_PROGRESS"]))
        if "slow" in command[5]:
            raise cpu_parts.subprocess.TimeoutExpired(command, kw["timeout"])
        return Done()

    monkeypatch.setattr(cpu_parts.subprocess, "run", fake_run)
    parts = (rp.CpuPart("real-corpora", "m:fast", (("corpus", "imdb"),)), rp.CpuPart("real-corpora", "m:slow"),
             rp.CpuPart("minimal-parametrisation", "m:other"))
    out = rp.run_cpu_parts("paper", ["real-corpora"], timeout_s=5, parts=parts)
    assert [(p.entry, status) for p, status, _ in out] == [("m:fast", "stored"), ("m:slow", "timed out")]
    assert calls[0][0][:6] == [sys.executable, "-m", "posgeom.cli", "reproduce", "--cpu-part", "m:fast"]
    assert calls[0][0][6:] == ['{"corpus": "imdb"}', "--scale", "paper"] and calls[0][1:] == (5, "0")
    assert "m:fast(corpus='imdb')" in capsys.readouterr().out


def test_cpu_parts_run_in_parallel_lanes_with_the_cores_shared_out(monkeypatch, capsys):
    """--jobs 2: two parts run at once (the second starts before the first ends), each process gets half the
    cores in every thread variable, and the results come back in the order of the parts."""
    import threading

    from posgeom import reproduce as rp
    from posgeom.reproduce import cpu_parts
    from posgeom.reproduce.book import THREAD_VARIABLES

    both_started = threading.Barrier(2, timeout=30)
    seen = []

    class Done:
        returncode = 0
        stderr = ""

    def fake_run(command, **kw):
        seen.append({name: kw["env"][name] for name in THREAD_VARIABLES})
        if command[5] in ("m:a", "m:b"):
            both_started.wait()  # a lane that ran alone would wait here until the barrier times out
        return Done()

    monkeypatch.setattr(cpu_parts.subprocess, "run", fake_run)
    monkeypatch.setattr(cpu_parts.os, "cpu_count", lambda: 4)
    parts = tuple(rp.CpuPart("real-corpora", f"m:{x}") for x in "abc")
    out = rp.run_cpu_parts("paper", ["real-corpora"], parts=parts, jobs=2)
    assert [(p.entry, status) for p, status, _ in out] == [("m:a", "stored"), ("m:b", "stored"), ("m:c", "stored")]
    assert seen and all(set(env.values()) == {"2"} for env in seen)
    with pytest.raises(ValueError, match="jobs must be an integer"):
        rp.run_cpu_parts("paper", ["real-corpora"], parts=parts, jobs=0)


def test_jobs_without_cpu_parts_is_refused_in_one_line(capsys):
    from posgeom.cli import main

    assert main(["reproduce", "--scale", "quick", "--jobs", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--jobs 2 applies to --cpu-parts only" in err[0]
