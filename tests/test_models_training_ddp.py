"""DistributedDataParallel in :func:`posgeom.models.training.train`: two CPU processes (gloo) against one.

The oracle is the one-process run on the same global batches: DDP averages the gradients of two equal
shards of each batch, which for a classification loss (a mean over examples) is the gradient of the
whole batch — so both ranks must end with the parameters of the one-process run.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from posgeom.models import Callback, TokenData, TrainConfig, build_model, get_config, train

V, N, L, WORLD = 300, 48, 16, 2


def tiny():
    # no dropout: the oracle must see the same computation
    return get_config("quick", vocab_size=V, d_model=32, n_heads=4, d_ff=64, max_len=L, dropout=0.0,
                      attention_dropout=0.0)


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
    return TrainConfig(**{**dict(task=task, batch_size=8, max_steps=8, lr=3e-3, progress=False, warmup_steps=2,
                                 device="cpu", log_every=1), **kw})


class Counter(Callback):
    def __init__(self):
        self.calls = 0

    def on_step_end(self, state):
        self.calls += 1


def _worker(rank: int, init_file: str, out_dir: str) -> None:
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=WORLD)
    try:
        out = {}
        model = build_model(tiny(), "classification", seed=0)
        counter = Counter()
        result = train(model, corpus(), config("classification"), callbacks=[counter])
        out["classification"] = {k: v.detach().clone() for k, v in model.state_dict().items()}
        out["calls"] = counter.calls
        out["losses"] = result.losses
        mlm = build_model(tiny(), "mlm", seed=1)
        train(mlm, TokenData(corpus().input_ids), config("mlm"))
        out["mlm"] = {k: v.detach().clone() for k, v in mlm.state_dict().items()}
        extra = build_model(tiny(), "classification", seed=2)
        extra.unused = torch.nn.Linear(2, 2)  # a parameter the loss never reaches
        train(extra, corpus(), config("classification", max_steps=3))
        out["unused"] = {k: v.detach().clone() for k, v in extra.state_dict().items()}
        try:
            train(build_model(tiny(), "classification", seed=0), corpus(), config("classification", batch_size=7))
        except ValueError as err:
            out["error"] = str(err)
        torch.save(out, Path(out_dir) / f"rank{rank}.pt")
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ddp")
    mp.spawn(_worker, args=(str(folder / "init"), str(folder)), nprocs=WORLD, join=True)
    return [torch.load(folder / f"rank{r}.pt", weights_only=True) for r in range(WORLD)]


def test_ddp_matches_one_process_on_the_same_global_batches(ranks):
    torch.set_num_threads(1)
    model = build_model(tiny(), "classification", seed=0)
    single = train(model, corpus(), config("classification"))
    reference = model.state_dict()
    start = build_model(tiny(), "classification", seed=0).state_dict()
    moved = max(float((reference[k] - start[k]).abs().max()) for k in reference)
    assert moved > 1e-3, "the reference run did not train: the comparison would prove nothing"
    for out in ranks:
        for name, value in reference.items():
            torch.testing.assert_close(out["classification"][name], value, rtol=1e-4, atol=1e-5, msg=name)
    # each rank logs the loss of its own shard: their mean is the one-process loss of the batch
    mean = [(a + b) / 2 for a, b in zip(ranks[0]["losses"], ranks[1]["losses"])]
    assert mean == pytest.approx(single.losses, rel=1e-4, abs=1e-5)


def test_ranks_end_identical_and_callbacks_run_on_rank_0_only(ranks):
    for name, value in ranks[0]["mlm"].items():
        assert torch.equal(value, ranks[1]["mlm"][name]), name
    for name, value in ranks[0]["classification"].items():
        assert torch.equal(value, ranks[1]["classification"][name]), name
    # a model with a parameter the loss does not use trains too
    for name, value in ranks[0]["unused"].items():
        assert torch.equal(value, ranks[1]["unused"][name]), name
    assert not torch.equal(ranks[0]["unused"]["classifier.weight"], build_model(tiny(), "classification", seed=2)
                           .state_dict()["classifier.weight"])
    assert ranks[0]["calls"] == 8 and ranks[1]["calls"] == 0


def test_batch_not_divisible_by_the_processes_is_refused(ranks):
    for out in ranks:
        assert "batch_size=7 is not divisible by the 2 processes" in out.get("error", "")


def test_without_a_process_group_nothing_changes():
    assert not (dist.is_available() and dist.is_initialized())
    from posgeom.models.training import distributed_context

    assert distributed_context() == (0, 1)
    assert "RANK" not in os.environ or os.environ.get("WORLD_SIZE", "1") == "1"
