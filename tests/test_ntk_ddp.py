"""run_ntk_all under torchrun: the runs are shared out over the processes, every process gets all results."""

import ast
import os
import socket

import torch.multiprocessing as mp



def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, world: int, port: int, out_dir: str):
    import numpy as np
    import torch.distributed as dist

    import posgeom.experiments.monotonicity_ntk as mn
    from posgeom.config import get_settings
    from posgeom.registry import Result

    calls = []

    def fake_run_ntk(settings, *, regime, seed, force=False, progress=True, precomputed=None):
        if precomputed is None:  # the work: a value only this (regime, seed) gives
            calls.append((regime, seed))
            values, arrays = {"final": {"x": len(regime) * 100 + seed}}, {"a": np.arange(seed + 1.0)}
        else:
            values, arrays = precomputed
        return Result(f"monotonicity_ntk_{regime}", "quick", "k", dict(values), dict(arrays), {})

    mn.run_ntk = fake_run_ntk
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        out = mn.run_ntk_all(get_settings(scale="quick", results_dir=out_dir))
    finally:
        dist.destroy_process_group()
    with open(os.path.join(out_dir, f"rank{rank}.txt"), "w") as f:
        f.write(repr(sorted(calls)) + "\n")
        f.write(repr(sorted((k, r.values["final"]["x"], float(r.arrays["a"].sum())) for k, r in out.items())) + "\n")


def test_runs_are_shared_out_and_every_rank_gets_them_all(tmp_path):
    from posgeom.experiments.monotonicity import CONFIGS, REGIMES

    opts = CONFIGS["quick"].ntk
    runs = [(regime, seed) for regime in REGIMES for seed in opts.seeds_of(regime)]
    mp.spawn(_worker, args=(2, _free_port(), str(tmp_path)), nprocs=2, join=True)
    lines = [(tmp_path / f"rank{r}.txt").read_text().splitlines() for r in range(2)]
    computed = [ast.literal_eval(line[0]) for line in lines]
    assert computed[0] == sorted(runs[0::2]) and computed[1] == sorted(runs[1::2])
    expected = sorted(((r, s), len(r) * 100 + s, float(sum(range(s + 1)))) for r, s in runs)
    assert ast.literal_eval(lines[0][1]) == ast.literal_eval(lines[1][1]) == expected
