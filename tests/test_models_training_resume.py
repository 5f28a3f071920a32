"""Preemption-safe training: deadlines, SIGTERM, the run's own checkpoint folder, damaged checkpoints.

The oracle is the uninterrupted run: a run stopped at any step (a deadline, a real SIGTERM, several
times over) and called again with the same arguments must end with the same loss curve, learning
rates, callback records, weights and RNG streams, bit for bit on the CPU.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from posgeom.models import (
    Callback,
    PositionGeometry,
    TokenData,
    TrainConfig,
    TrainingInterrupted,
    build_model,
    checkpoint_progress,
    deadline,
    discard_checkpoints,
    get_config,
    train,
)
from posgeom.models import deadlines as deadlines_module
from posgeom.models.checkpoints import checkpoint_root, load_checkpoint, run_key
from posgeom.models import training as training_module
from posgeom.models.deadlines import DEADLINE_ENV, current_deadline, deadline_clock

pytestmark = pytest.mark.usefixtures("one_torch_thread")

V, N, L = 300, 40, 16
REPO = Path(__file__).resolve().parents[1]


def tiny(position="learned"):
    # dropout on: the RNG stream of dropout must be carried through the checkpoints too
    return get_config("quick", vocab_size=V, d_model=32, n_heads=4, d_ff=64, max_len=L, position=position)


def corpus() -> TokenData:
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(110, V, (N, L), generator=g)
    ids[:, 0] = 101
    mask = torch.ones_like(ids)
    for r in range(0, N, 3):
        ids[r, 6 + r % (L - 6):] = 0
        mask[r, 6 + r % (L - 6):] = 0
    return TokenData(ids, mask, (ids[:, 1] > ids[:, 2]).long())


def config(**kw) -> TrainConfig:
    # 13 steps over 40 rows in batches of 8: two epochs and a half, epoch orders included
    return TrainConfig(**{**dict(task="mlm", batch_size=8, max_steps=13, lr=2e-3, warmup_steps=3, progress=False,
                                 device="cpu", log_every=1), **kw})


@pytest.fixture
def results(tmp_path, monkeypatch):
    monkeypatch.setenv("POSGEOM_RESULTS_DIR", str(tmp_path / "results"))
    monkeypatch.setenv("POSGEOM_SCALE", "quick")
    monkeypatch.delenv(DEADLINE_ENV, raising=False)
    return tmp_path / "results"


#: When the test callbacks act. Not an attribute of theirs: a callback's settings are part of the run
#: key, and the calls compared here must be the same run.
TRIGGER = {"kill": None, "jump": None}


class Kill(Callback):
    """Sends this process a real SIGTERM after step ``TRIGGER["kill"]`` (train stops before the next step)."""

    def on_step_end(self, state):
        if state.step == TRIGGER["kill"]:
            os.kill(os.getpid(), signal.SIGTERM)


class Draws(Callback):
    """Records a draw of each global generator at every step: the RNG streams must survive a resume."""

    def __init__(self):
        self.draws: list[list[float]] = []

    def on_step_end(self, state):
        self.draws.append([float(torch.rand(())), float(np.random.rand()), random.random()])

    def state_dict(self):
        return {"draws": [list(d) for d in self.draws]}

    def load_state_dict(self, state):
        self.draws = [list(d) for d in state["draws"]]


def _run(task="mlm", position="learned", callbacks=(), **kw):
    np.random.seed(5)  # the caller's global streams at the start: equal in every call
    random.seed(5)
    model = build_model(tiny(position), task, seed=1)
    geo = PositionGeometry(every=2, n=L)
    draws = Draws()
    result = train(model, corpus(), config(task=task, **kw), callbacks=[geo, draws, *callbacks])
    after = [float(torch.rand(())), float(np.random.rand()), random.random()]
    return model, result, geo, draws, after


def _same(a, b):
    (ma, ra, ga, da, aa), (mb, rb, gb, db, ab) = a, b
    assert ra.losses == rb.losses and len(ra.losses) == 13
    assert ra.lrs == rb.lrs
    assert ga.records == gb.records and da.draws == db.draws and aa == ab
    for k, v in ma.state_dict().items():
        assert torch.equal(v, mb.state_dict()[k]), k


class _Kills(Callback):
    """SIGTERM after the first listed step that this call has not passed yet."""

    def __init__(self, steps):
        self.steps = steps

    def on_train_begin(self, state):
        self.at = next((s for s in self.steps if s > state.step), None)

    def on_step_end(self, state):
        if state.step == self.at:
            os.kill(os.getpid(), signal.SIGTERM)


@pytest.mark.parametrize("task, position", [("mlm", "learned"), ("classification", "rope")])
def test_sigterm_at_several_points_resumes_bit_identical(results, task, position):
    full = _run(task, position)
    assert not list(checkpoint_root().glob("*")), "a finished run must remove its folder"
    kills = [1, 5, 6, 12]
    interruptions, out = [], None
    for _ in range(len(kills) + 1):
        try:
            out = _run(task, position, callbacks=[_Kills(kills)])
            break
        except TrainingInterrupted as err:
            assert err.reason == "SIGTERM" and err.total_steps == 13 and err.checkpoint.is_file()
            interruptions.append(err.steps_done)
    assert interruptions == kills
    assert out[1].resumed_from == 12
    _same(full, out)
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL  # the handler is put back
    assert not list(checkpoint_root().glob("*"))


def test_deadline_stops_before_it_and_resumes_bit_identical(results, monkeypatch):
    full = _run()
    clock = {"now": 0.0}
    monkeypatch.setattr(deadlines_module, "_now", lambda: clock["now"])  # what deadline_clock does, for the test

    class Jump(Callback):  # the clock passes the deadline after step TRIGGER["jump"]
        def on_step_end(self, state):
            if state.step == TRIGGER["jump"]:
                clock["now"] = 1e6

    for at in (3, 9):
        clock["now"], TRIGGER["jump"] = 0.0, at
        with deadline(at=1000.0), pytest.raises(TrainingInterrupted, match=f"step {at} of 13 \\(deadline\\)") as err:
            _run(callbacks=[Jump()])
        assert err.value.steps_done == at and err.value.reason == "deadline"
        [progress] = checkpoint_progress()
        assert (progress.step, progress.total_steps, progress.complete) == (at, 13, False)
        assert progress.origin.endswith("test_models_training_resume:_run") and progress.task == "mlm"
    clock["now"], TRIGGER["jump"] = 0.0, None
    out = _run(callbacks=[Jump()])
    _same(full, out)
    assert out[1].resumed_from == 9


def test_deadline_in_real_time_and_from_the_environment(results, monkeypatch):
    full = _run(max_steps=13)
    # already past: nothing is trained, nothing is saved
    monkeypatch.setenv(DEADLINE_ENV, str(time.time() - 1))
    with pytest.raises(TrainingInterrupted, match="step 0 of 13 .*nothing was trained yet"):
        _run()
    monkeypatch.setenv(DEADLINE_ENV, "soon")
    with pytest.raises(ValueError, match="POSGEOM_DEADLINE='soon' is not a UNIX time"):
        current_deadline()
    monkeypatch.delenv(DEADLINE_ENV)

    # A deadline 0.6 s ahead with steps of 0.08 s, on a clock only the steps move: the training loop's
    # timings (step and save durations) and the deadline both read it, so every call stops at the same step
    # on any machine, however slow or loaded (no test depends on the machine's speed).
    fake = {"now": 1_000.0}

    class FakeTime:
        @staticmethod
        def perf_counter() -> float:
            return fake["now"]

        monotonic = perf_counter

    monkeypatch.setattr(training_module, "time", FakeTime)

    class Slow(Callback):
        def on_step_end(self, state):
            fake["now"] += 0.08

    stops, out = [], None
    with deadline_clock(lambda: fake["now"]):
        for _ in range(40):
            try:
                with deadline(seconds=0.6) as when:
                    out = _run(callbacks=[Slow()])
                break
            except TrainingInterrupted as err:
                assert fake["now"] <= when, "train ran past its deadline"
                assert err.steps_done > (stops[-1] if stops else 0), "a call made no progress"
                stops.append(err.steps_done)
    assert len(stops) >= 2 and out is not None
    assert all(b - a == stops[0] for a, b in zip([0, *stops], stops)), stops  # the same number of steps each call
    _same(full, out)


def test_finished_runs_are_kept_under_a_deadline_and_discarded_on_request(results):
    full = _run()
    with deadline(seconds=3600):
        first = _run()
        [kept] = checkpoint_progress()
        assert kept.complete and kept.step == 13
        again = _run()  # the finished run is read back, not trained again
    assert again[1].resumed_from == 13
    _same(full, first)
    _same(full, again)
    assert discard_checkpoints() == [kept.folder]
    assert checkpoint_progress() == []


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage"])
def test_a_damaged_checkpoint_is_ignored_with_a_warning(results, damage):
    full = _run()
    TRIGGER["kill"] = 7
    with pytest.raises(TrainingInterrupted) as err:
        _run(callbacks=[Kill()])
    path = err.value.checkpoint
    raw = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(raw[: len(raw) // 2])
    elif damage == "flip":
        path.write_bytes(raw[:-100] + bytes([raw[-100] ^ 1]) + raw[-99:])
    else:
        path.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="checksum|not a posgeom training checkpoint"):
        load_checkpoint(path)
    with pytest.warns(UserWarning, match="ignoring the training checkpoint.*starts over"):
        TRIGGER["kill"] = None
        out = _run(callbacks=[Kill()])
    assert out[1].resumed_from is None
    _same(full, out)


def test_the_run_key_names_everything_that_defines_the_run():
    data, cfg = corpus(), config()
    base = run_key(build_model(tiny(), seed=1), data, cfg)
    assert base == run_key(build_model(tiny(), seed=1), data, cfg)
    # progress and checkpoint options do not define the run
    assert base == run_key(build_model(tiny(), seed=1), data, config(progress=True, log_every=5, checkpoint_seconds=9))
    other_data = TokenData(data.input_ids.flip(0), data.attention_mask, data.labels)
    changed = [
        run_key(build_model(tiny(), seed=2), data, cfg),
        run_key(build_model(tiny("sinusoidal"), seed=1), data, cfg),
        run_key(build_model(tiny(), seed=1), other_data, cfg),
        run_key(build_model(tiny(), seed=1), data, config(seed=1)),
        run_key(build_model(tiny(), seed=1), data, config(max_steps=14)),
        run_key(build_model(tiny(), seed=1), data, config(padding="trim")),
        run_key(build_model(tiny(), seed=1), data, cfg, [PositionGeometry(every=2)]),
        run_key(build_model(tiny(), seed=1), data, cfg, [PositionGeometry(every=3)]),
        run_key(build_model(tiny(), seed=1), data, cfg, world_size=2),
    ]
    assert len({base, *changed}) == len(changed) + 1


_CHILD = textwrap.dedent("""
    import json, sys
    import torch
    torch.set_num_threads(1)
    sys.path.insert(0, {repo!r})
    from posgeom.models import Callback, TrainingInterrupted, build_model, train
    sys.path.insert(0, {tests!r})
    from test_models_training_resume import config, corpus, tiny

    class Say(Callback):
        def on_step_end(self, state):
            import os, time
            print(state.step, flush=True)
            if state.step == 4 and os.environ.get("SIGNALLED"):
                # wait for the parent's SIGTERM (it creates the file once it has sent it): where training
                # stops does not depend on how fast this machine trains
                until = time.monotonic() + 1800
                while not os.path.exists(os.environ["SIGNALLED"]) and time.monotonic() < until:
                    time.sleep(0.01)

    model = build_model(tiny(), "mlm", seed=1)
    try:
        result = train(model, corpus(), config(max_steps=30), callbacks=[Say()])
    except TrainingInterrupted as err:
        print("interrupted", err.steps_done, flush=True)
        sys.exit(3)
    torch.save({{"losses": result.losses, "resumed_from": result.resumed_from, "weights": model.state_dict()}},
               sys.argv[1])
""")


def test_a_real_sigterm_to_a_training_process(results, tmp_path):
    script = tmp_path / "child.py"
    script.write_text(_CHILD.format(repo=str(REPO), tests=str(REPO / "tests")))
    signalled = tmp_path / "signalled"
    env = {**os.environ, "POSGEOM_RESULTS_DIR": str(results), "POSGEOM_SCALE": "quick", "POSGEOM_PROGRESS": "0",
           "SIGNALLED": str(signalled)}

    def child(out: Path, kill_after: int | None):
        proc = subprocess.Popen([sys.executable, str(script), str(out)], env=env, stdout=subprocess.PIPE, text=True)
        lines = []
        for line in proc.stdout:
            lines.append(line.strip())
            if kill_after is not None and line.strip() == str(kill_after):
                proc.send_signal(signal.SIGTERM)
                signalled.touch()  # the child waits at this step until the signal is sent
                kill_after = None
        return proc.wait(timeout=1800), lines

    code, lines = child(tmp_path / "a.pt", kill_after=4)
    assert code == 3 and lines[-1].startswith("interrupted")
    stopped = int(lines[-1].split()[1])
    assert stopped == 4  # the child waited at step 4 for the signal
    code, lines = child(tmp_path / "a.pt", kill_after=None)
    assert code == 0 and lines[0] == str(stopped + 1)
    resumed = torch.load(tmp_path / "a.pt", weights_only=True)
    assert resumed["resumed_from"] == stopped
    code, _ = child(tmp_path / "b.pt", kill_after=None)
    full = torch.load(tmp_path / "b.pt", weights_only=True)
    assert full["resumed_from"] is None
    assert resumed["losses"] == full["losses"] and len(full["losses"]) == 30
    for k, v in full["weights"].items():
        assert torch.equal(v, resumed["weights"][k]), k
    assert not list(checkpoint_root().glob("*"))


def test_meta_file_describes_the_stored_run(results):
    TRIGGER["kill"] = 2
    with pytest.raises(TrainingInterrupted) as err:
        _run(callbacks=[Kill()])
    TRIGGER["kill"] = None
    meta = json.loads((err.value.checkpoint.parent / "meta.json").read_text())
    assert meta["step"] == 2 and meta["total_steps"] == 13 and not meta["complete"]
    assert meta["model_config"]["d_model"] == 32 and meta["world"] == 1
    assert err.value.checkpoint.parent.parent == checkpoint_root() == results / "quick" / ".checkpoints"
    # the results registry does not take the hidden folder for an experiment (nor sweep it)
    from posgeom.registry import Registry

    assert Registry(results).check() == [] and Registry(results).entries() == []
    assert err.value.checkpoint.is_file()


_CRASH = textwrap.dedent("""
    import os, sys
    import torch
    torch.set_num_threads(1)
    sys.path.insert(0, {repo!r})
    sys.path.insert(0, {tests!r})
    from posgeom.models import Callback, build_model, train
    from test_models_training_resume import config, corpus, tiny

    class ArmAfter(Callback):
        # the save after step 6 dies half-written (SIGKILL): the one of step 3 must be what is read back
        def on_step_end(self, state):
            if state.step == 4 and os.environ.get("ARM"):
                os.environ["POSGEOM_FAULT_INJECT"] = os.environ["ARM"]

    model = build_model(tiny(), "mlm", seed=1)
    result = train(model, corpus(), config(checkpoint_every=3), callbacks=[ArmAfter()])
    torch.save({{"losses": result.losses, "resumed_from": result.resumed_from, "weights": model.state_dict()}},
               sys.argv[1])
""")


@pytest.mark.parametrize("fault", ["checkpoint:partial", "checkpoint:written"])
def test_a_save_killed_mid_write_leaves_the_previous_state(results, tmp_path, fault):
    script = tmp_path / "crash.py"
    script.write_text(_CRASH.format(repo=str(REPO), tests=str(REPO / "tests")))
    env = {**os.environ, "POSGEOM_RESULTS_DIR": str(results), "POSGEOM_SCALE": "quick", "POSGEOM_PROGRESS": "0"}
    env.pop("POSGEOM_FAULT_INJECT", None)
    crashed = subprocess.run([sys.executable, str(script), str(tmp_path / "x.pt")], env={**env, "ARM": fault},
                             timeout=1800)
    assert crashed.returncode == -signal.SIGKILL and not (tmp_path / "x.pt").exists()
    [progress] = checkpoint_progress()
    assert progress.step == 3  # the save of step 6 never became visible
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "a.pt")], env=env, timeout=1800)
    assert done.returncode == 0
    resumed = torch.load(tmp_path / "a.pt", weights_only=True)
    assert resumed["resumed_from"] == 3
    subprocess.run([sys.executable, str(script), str(tmp_path / "b.pt")], env=env, timeout=1800, check=True)
    full = torch.load(tmp_path / "b.pt", weights_only=True)
    assert full["resumed_from"] is None and resumed["losses"] == full["losses"]
    for k, v in full["weights"].items():
        assert torch.equal(v, resumed["weights"][k]), k
