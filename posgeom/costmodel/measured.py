"""The cost model's measured inputs: corpus lengths, this CPU's training rate, the GPU windows' log."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

__all__ = ["CORPUS_LENGTHS", "CPU_FLOPS", "MEASUREMENTS", "Measurement", "gpu_measurements", "mean_tokens",
           "measure_corpus_lengths", "measure_cpu_rate"]

#: Mean real tokens per sequence (``[CLS]`` and ``[SEP]`` included) cut to ``n`` positions, bert-base-uncased
#: WordPiece: ``{(corpus, split): {n: mean}}``, by :func:`measure_corpus_lengths` (tests recompute them).
CORPUS_LENGTHS: dict[tuple[str, str], dict[int, float]] = {
    ("sst2", "train"): {64: 13.319158, 128: 13.319248, 256: 13.319248, 512: 13.319248},
    ("sst2", "validation"): {64: 25.473624, 128: 25.473624, 256: 25.473624, 512: 25.473624},
    ("imdb", "train"): {64: 63.776720, 128: 123.375200, 256: 203.306040, 512: 264.936920},
}

#: Training FLOP/s of the encoder on the 2-core build machine, by :func:`measure_cpu_rate`: 21 and 28 GFLOP/s
#: in two runs on the shared machine; the lower is kept.
CPU_FLOPS = 2.1e10

#: Where ``scripts/gpu-slice`` appends one JSON line per GPU window (device, MFU, slice times), relative
#: to the checkout; committed with the results it made.
MEASUREMENTS = "benchmarks/gpu_slices.jsonl"


@dataclass(frozen=True)
class Measurement:
    """One GPU window's benchmark (``scripts/gpu-slice``): device, MFU, tokens/s, start, reproduce seconds."""

    device: str
    mfu: float
    tokens_per_s: float
    started: str
    reproduce_s: float | None = None


def gpu_measurements(root=None) -> list[Measurement]:
    """The GPU windows recorded in :data:`MEASUREMENTS` (dry runs and CPU runs left out), oldest first."""
    import json
    from pathlib import Path

    from ..config import checkout_root
    base = Path(root) if root is not None else (checkout_root() or Path(__file__).resolve().parent.parent)
    path = base / MEASUREMENTS
    out = []
    for line in path.read_text().splitlines() if path.is_file() else ():
        try:
            row = json.loads(line)
            bench = row["benchmark"]["results"]["posgeom"]
            if row.get("dry_run") or bench.get("mfu") is None:
                continue
            out.append(Measurement(str(row["device"]), float(bench["mfu"]), float(bench["tokens_per_s"]),
                                   str(row.get("started", "?")), row.get("reproduce_s")))
        except (ValueError, KeyError, TypeError):
            continue
    return out


def mean_tokens(corpus: str, n: int, split: str = "train") -> float:
    """Mean real tokens per sequence of ``corpus`` cut to ``n`` (``n`` itself where not measured)."""
    return CORPUS_LENGTHS.get((corpus, split), {}).get(int(n), float(n))


def measure_corpus_lengths(lengths: Iterable[int] = (64, 128, 256, 512), *, data_dir=None) -> dict:
    """Measure :data:`CORPUS_LENGTHS` from the corpora (tokenised with the cache; needs the data)."""
    import numpy as np

    from ..corpora import CorpusOptions, corpus_tokens
    out = {}
    for corpus, split in CORPUS_LENGTHS:
        full = corpus_tokens(CorpusOptions(corpus, split, max(lengths)), data_dir=data_dir, progress=False)
        out[(corpus, split)] = {int(n): float(np.minimum(full.full_lengths, n).mean()) for n in lengths}
    return out


def measure_cpu_rate(*, d_model: int = 768, n_layers: int = 2, d_ff: int = 3072, seq_len: int = 64,
                     batch_size: int = 8, steps: int = 4, warmup: int = 1) -> float:
    """Training FLOP/s of the encoder on this CPU (fp32 MLM on random ids), over ``steps`` timed steps."""
    import time

    import torch

    from ..models import TokenData, TrainConfig, build_model, get_config, model_flops_per_token, train
    config = get_config("paper", max_len=seq_len, d_model=d_model, n_layers=n_layers, d_ff=d_ff)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, config.vocab_size, (batch_size * (steps + warmup), seq_len), generator=g)
    data = TokenData(ids, torch.ones_like(ids))
    model = build_model(config, "mlm", seed=0)
    for n_steps in (warmup, steps):  # the last pass timed
        start = time.perf_counter()
        train(model, data, TrainConfig(task="mlm", batch_size=batch_size, max_steps=n_steps, device="cpu", progress=False))
    return steps * batch_size * seq_len * model_flops_per_token(config, seq_len) / (time.perf_counter() - start)
