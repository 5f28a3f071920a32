"""DistributedDataParallel in :func:`posgeom.models.training.train`: two CPU processes (gloo) against one.

The oracle is the one-process run on the same global batches. DDP averages the gradients of the two
shards of each batch; train weights each shard's mean loss by its share of the batch's loss terms
(rows, or masked tokens for MLM), so the step is the one-process step even when the shards are unequal
— both ranks must end with the parameters of the one-process run, record its losses, and return the
same callback records (the callbacks run on every rank). Without dropout, so that the oracle sees the
same computation; a run with dropout stopped by SIGTERM on one rank must resume bit-identically.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from posgeom.models import (
    Callback,
    PositionGeometry,
    TokenData,
    TrainConfig,
    TrainingInterrupted,
    build_model,
    get_config,
    train,
)

V, N, L, WORLD = 300, 45, 16, 2  # 45 rows in batches of 8: the last batch (5 rows) splits 3 / 2


def tiny(dropout: float = 0.0):
    return get_config("quick", vocab_size=V, d_model=32, n_heads=4, d_ff=64, max_len=L, dropout=dropout,
                      attention_dropout=dropout)


def corpus() -> TokenData:
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(110, V, (N, L), generator=g)
    ids[:, 0] = 101
    mask = torch.ones_like(ids)
    for r in range(0, N, 3):
        ids[r, 6 + r % (L - 6):] = 0
        mask[r, 6 + r % (L - 6):] = 0
    return TokenData(ids, mask, (ids[:, 1] > ids[:, 2]).long())


def config(task: str, **kw) -> TrainConfig:
    # 8 steps of 8 rows over 45: the short batch of 5 rows is step 6
    return TrainConfig(**{**dict(task=task, batch_size=8, max_steps=8, lr=3e-3, progress=False, warmup_steps=2,
                                 device="cpu", log_every=1), **kw})


class Counter(Callback):
    def __init__(self):
        self.calls = 0

    def on_step_end(self, state):
        self.calls += 1


class Accuracy(Callback):
    """An evaluation callback as the experiments write them: accuracy on held-out rows every 2 steps."""

    def __init__(self, data: TokenData):
        self.data, self.accuracy = data, []

    @torch.no_grad()
    def on_step_end(self, state):
        if state.step % 2 == 0:
            model = state.model
            model.eval()
            pred = model(self.data.input_ids, self.data.attention_mask).logits.argmax(-1)
            model.train()
            self.accuracy.append(float((pred == self.data.labels).float().mean()))

    def state_dict(self):
        return {"accuracy": list(self.accuracy)}

    def load_state_dict(self, state):
        self.accuracy = list(state["accuracy"])


#: The step after which rank 0 (only) receives SIGTERM; not a callback attribute (it is part of the run key).
KILL = {"at": None}


class KillRank0(Callback):
    def on_step_end(self, state):
        if state.step == KILL["at"] and dist.get_rank() == 0:
            os.kill(os.getpid(), signal.SIGTERM)


def _weights(model):
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def _run_classification(callbacks=(), **kw):
    model = build_model(tiny(), "classification", seed=0)
    geo = PositionGeometry(every=2, n=L)
    acc = Accuracy(corpus())
    result = train(model, corpus(), config("classification", **kw), callbacks=[geo, acc, *callbacks])
    return model, result, geo, acc


def _worker(rank: int, init_file: str, out_dir: str) -> None:
    torch.set_num_threads(1)
    os.environ["POSGEOM_RESULTS_DIR"] = str(Path(out_dir) / "results")
    os.environ["POSGEOM_SCALE"] = "quick"
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=WORLD)
    try:
        out = {}
        counter = Counter()
        model, result, geo, acc = _run_classification([counter])
        out["classification"] = _weights(model)
        out["calls"], out["losses"], out["geometry"], out["accuracy"] = counter.calls, result.losses, geo.records, acc.accuracy
        out["eval"] = train(build_model(tiny(), "classification", seed=0), corpus(), config("classification"),
                            eval_data=corpus()).eval
        mlm = build_model(tiny(), "mlm", seed=1)
        out["mlm_losses"] = train(mlm, TokenData(corpus().input_ids, corpus().attention_mask), config("mlm")).losses
        out["mlm"] = _weights(mlm)
        trim = build_model(tiny(), "mlm", seed=1)
        out["trim_losses"] = train(trim, TokenData(corpus().input_ids, corpus().attention_mask),
                                   config("mlm", padding="trim")).losses
        out["trim"] = _weights(trim)
        extra = build_model(tiny(), "classification", seed=2)
        extra.unused = torch.nn.Linear(2, 2)  # a parameter the loss never reaches
        train(extra, corpus(), config("classification", max_steps=3))
        out["unused"] = _weights(extra)
        try:
            train(build_model(tiny(), "classification", seed=0), corpus(), config("classification", batch_size=7))
        except ValueError as err:
            out["error"] = str(err)
        # with dropout, stopped by SIGTERM on rank 0 after step 3 and again after step 6, then resumed
        def dropout_run():
            model = build_model(tiny(0.1), "classification", seed=3)
            res = train(model, corpus(), config("classification"), callbacks=[KillRank0()])
            return model, res

        KILL["at"] = None
        full_model, full = dropout_run()
        stops = []
        for at in (3, 6, None):
            KILL["at"] = at
            try:
                model, res = dropout_run()
            except TrainingInterrupted as err:
                stops.append((err.steps_done, err.reason))
        out["stops"], out["resumed_from"] = stops, res.resumed_from
        out["dropout_same"] = res.losses == full.losses and all(
            torch.equal(v, model.state_dict()[k]) for k, v in full_model.state_dict().items())
        out["leftover"] = sorted(p.name for p in (Path(out_dir) / "results" / "quick" / ".checkpoints").glob("*"))
        torch.save(out, Path(out_dir) / f"rank{rank}.pt")
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ddp")
    mp.spawn(_worker, args=(str(folder / "init"), str(folder)), nprocs=WORLD, join=True)
    return [torch.load(folder / f"rank{r}.pt", weights_only=True) for r in range(WORLD)]


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    torch.set_num_threads(1)
    model, result, geo, acc = _run_classification()
    mlm = build_model(tiny(), "mlm", seed=1)
    mlm_result = train(mlm, TokenData(corpus().input_ids, corpus().attention_mask), config("mlm"))
    trim = build_model(tiny(), "mlm", seed=1)
    trim_result = train(trim, TokenData(corpus().input_ids, corpus().attention_mask), config("mlm", padding="trim"))
    return dict(classification=_weights(model), losses=result.losses, geometry=geo.records, accuracy=acc.accuracy,
                mlm=_weights(mlm), mlm_losses=mlm_result.losses, trim=_weights(trim), trim_losses=trim_result.losses)


@pytest.mark.parametrize("run", ["classification", "mlm", "trim"])
def test_ddp_weights_and_losses_match_one_process_on_the_same_global_batches(ranks, single, run):
    start = build_model(tiny(), "classification" if run == "classification" else "mlm",
                        seed=0 if run == "classification" else 1).state_dict()
    moved = max(float((single[run][k] - start[k]).abs().max()) for k in start)
    assert moved > 1e-3, "the reference run did not train: the comparison would prove nothing"
    losses = "losses" if run == "classification" else f"{run}_losses"
    for out in ranks:
        for name, value in single[run].items():
            torch.testing.assert_close(out[run][name], value, rtol=1e-4, atol=1e-5, msg=name)
        # every rank records the loss of the whole batch, the short one (3 / 2 rows) included
        assert out[losses] == pytest.approx(single[losses], rel=1e-5, abs=1e-6)


def test_every_rank_returns_the_same_records(ranks, single):
    a, b = ranks
    assert a["losses"] == b["losses"] and a["mlm_losses"] == b["mlm_losses"]
    assert a["calls"] == b["calls"] == 8
    assert a["geometry"] == b["geometry"] and a["accuracy"] == b["accuracy"] and len(a["accuracy"]) == 4
    assert a["eval"] == b["eval"]
    assert a["geometry"]["step"] == single["geometry"]["step"]
    for key, values in a["geometry"].items():
        assert values == pytest.approx(single["geometry"][key], rel=1e-4, abs=1e-5), key
    assert a["accuracy"] == pytest.approx(single["accuracy"], abs=1 / N + 1e-9)  # at most one row flips
    for run in ("mlm", "classification", "unused"):
        for name, value in a[run].items():
            assert torch.equal(value, b[run][name]), (run, name)
    # a model with a parameter the loss does not use trains too
    assert not torch.equal(a["unused"]["classifier.weight"],
                           build_model(tiny(), "classification", seed=2).state_dict()["classifier.weight"])


def test_sigterm_on_one_rank_stops_both_and_the_run_resumes_bit_identical(ranks):
    for out in ranks:
        assert out["stops"] == [(3, "SIGTERM"), (6, "SIGTERM")]
        assert out["resumed_from"] == 6 and out["dropout_same"]
        assert out["leftover"] == []


def test_batch_not_divisible_by_the_processes_is_refused(ranks):
    for out in ranks:
        assert "batch_size=7 is not divisible by the 2 processes" in out.get("error", "")


def test_without_a_process_group_nothing_changes():
    assert not (dist.is_available() and dist.is_initialized())
    from posgeom.models.distributed import distributed_context

    assert distributed_context() == (0, 1)
    assert "RANK" not in os.environ or os.environ.get("WORLD_SIZE", "1") == "1"
