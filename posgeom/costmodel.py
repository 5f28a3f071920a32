r"""What the paper scale costs: tokens, training FLOPs, peak memory and time, per experiment.

Every experiment of :data:`posgeom.reproduce.CHAPTERS` that trains or runs a model at ``paper`` scale
is described by its **work** (:class:`Work`): an encoder shape, the padded sequence length, the mean
number of real tokens per sequence, how many sequences one run processes and how many runs (seeds ×
variants). The numbers are read from the experiment modules' own paper settings (``CONFIGS["paper"]``,
a dict or a typed settings dataclass), so the model follows the modules when they change.

From the work:

* **tokens** = runs × sequences × tokens per sequence: the padded length without length bucketing,
  the mean real length with it (:data:`CORPUS_LENGTHS`, measured on the corpora by
  :func:`measure_corpus_lengths`: SST-2 sentences are about 13 WordPiece tokens with ``[CLS]``/``[SEP]``);
* **FLOPs** = tokens × :func:`posgeom.models.encoder.model_flops_per_token` (training: forward + backward =
  3 × forward, matmuls only, PaLM's MFU convention; a forward-only pass is a third of it);
* **peak GPU memory**: fp32 weights, gradients and two AdamW moments (16 bytes per parameter) plus bf16
  activations of one batch, $34\,b L d$ bytes per layer (Korthikanti et al. 2022, flash attention:
  no $L^2$ term), plus the logits of the MLM head (6 bytes each);
* **time** on the GPU = FLOPs / (peak × MFU) (:class:`Assumptions`: 989 TFLOP/s dense bf16, the H100/H200
  SXM datasheet figure, at 40 % MFU) and on this CPU = FLOPs / the measured rate
  (:data:`CPU_FLOPS`, :func:`measure_cpu_rate`).

Work with the same ``share`` key is one computation (the same pretraining read by several chapters
through the registry) and is counted once, by the first experiment that needs it.

**A step has a least time.** Small models (width 128) and short sequences (a bucketed batch of 64
SST-2 sentences is 850 tokens) do not keep a GPU busy: their steps cost the kernel launches of the
forward, the backward and the optimiser, whatever their FLOPs. The GPU time of a work is therefore
the larger of its FLOPs at the assumed MFU and its steps at :meth:`Assumptions.step_seconds`.

**Sizing.** :data:`PROPOSED` lists the paper-scale changes (module, field, old → new, why) that bring
the GPU part under :data:`GPU_GOAL_MINUTES` (:func:`readme_table`: padded, bucketed, proposed): 4x
larger batches and 4x fewer steps for the step-bound runs, every run seeing the same sequences, and
half the steps for Theorem 4's runs (the largest FLOP-bound item, weight decay doubled to keep its
documented decay factor). They are applied in the experiment modules' paper settings, so the list is
now the record of why each paper value is what it is; :func:`experiment_costs` with ``proposed=True``
applies any not yet in the modules (none today), so a new proposal can be costed before it is applied.
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import importlib.util
import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

__all__ = [
    "Assumptions", "ASSUMPTIONS", "Shape", "Work", "ExperimentCost", "Override", "PROPOSED", "CORPUS_LENGTHS",
    "CPU_FLOPS", "GPU_GOAL_MINUTES", "SLICE_MINUTES", "setting", "with_setting", "experiment_costs", "cost_table",
    "totals", "format_costs", "readme_table", "measure_corpus_lengths", "measure_cpu_rate", "mean_tokens",
    "parameter_count", "peak_memory_gb", "apply_overrides", "MEASUREMENTS", "Measurement", "gpu_measurements", "README_MARKERS", "update_readme", "RESULT_NAMES", "CPU_FEASIBLE_HOURS", "needs_gpu",
]

#: The goal for the whole GPU part at paper scale (minutes on one H200 at the assumed MFU).
GPU_GOAL_MINUTES = 120.0
#: The longest slice ``posgeom reproduce --budget`` plans (minutes): a GPU window of about a quarter hour.
SLICE_MINUTES = 9.0

#: Mean real tokens per sequence (``[CLS]`` and ``[SEP]`` included) of the corpora's training splits
#: cut to ``n`` positions, bert-base-uncased WordPiece: ``{(corpus, split): {n: mean}}``. Measured by
#: :func:`measure_corpus_lengths` (SST-2: 67,349 train / 872 validation sentences; IMDB: 25,000 train
#: reviews); ``tests/test_costmodel.py`` recomputes them wherever the corpora are present.
CORPUS_LENGTHS: dict[tuple[str, str], dict[int, float]] = {
    ("sst2", "train"): {64: 13.319158, 128: 13.319248, 256: 13.319248, 512: 13.319248},
    ("sst2", "validation"): {64: 25.473624, 128: 25.473624, 256: 25.473624, 512: 25.473624},
    ("imdb", "train"): {64: 63.776720, 128: 123.375200, 256: 203.306040, 512: 264.936920},
}

#: Training FLOP/s of the encoder on the 2-core build machine (fp32, BERT-base width, 2 layers, sequence
#: 64, batch 8, 2 threads), measured by :func:`measure_cpu_rate`: 21 and 28 GFLOP/s in two runs on the
#: machine shared with other work; the lower is kept.
CPU_FLOPS = 2.1e10


#: Where ``scripts/gpu-slice`` appends one JSON line per GPU window (device, MFU, slice times), relative
#: to the checkout; committed with the results it made.
MEASUREMENTS = "benchmarks/gpu_slices.jsonl"


@dataclass(frozen=True)
class Measurement:
    """One GPU window's benchmark (``scripts/gpu-slice``): device, measured MFU (bf16, sequence 128) and
    tokens/s, when, and how long the reproduce slice ran."""

    device: str
    mfu: float
    tokens_per_s: float
    started: str
    reproduce_s: float | None = None


def gpu_measurements(root=None) -> list[Measurement]:
    """The GPU windows recorded in :data:`MEASUREMENTS` (dry runs and CPU runs left out), oldest first."""
    import json
    from pathlib import Path

    from .config import checkout_root

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


@dataclass(frozen=True)
class Assumptions:
    """The hardware and the training tricks the times assume.

    ``peak_flops``: dense bf16 peak of the GPU (989 TFLOP/s: H100 SXM and H200, NVIDIA datasheets);
    ``mfu``: the model-FLOPs utilisation reached (``benchmarks/gpu_bert_base.py`` measures it);
    ``cpu_flops``: the measured CPU rate; ``bucketed``: batches of similar lengths, padding not trained on.
    """

    gpu: str = "one H100/H200-class GPU"
    peak_flops: float = 989e12
    mfu: float = 0.40
    cpu_flops: float = CPU_FLOPS
    bucketed: bool = True
    step_s: float = 2e-3
    layer_step_s: float = 0.3e-3

    def step_seconds(self, n_layers: int) -> float:
        """The least time of one training step on the GPU whatever its FLOPs: eager PyTorch launches
        kernels one by one (forward, backward, fused AdamW), about ``step_s + n_layers * layer_step_s``."""
        return self.step_s + n_layers * self.layer_step_s

    def describe(self) -> str:
        return (f"{self.gpu} at {self.peak_flops / 1e12:.0f} TFLOP/s dense bf16 peak and {self.mfu:.0%} MFU, "
                f"and at least {self.step_s * 1e3:g} ms + {self.layer_step_s * 1e3:g} ms per layer per training "
                f"step (a third per forward batch: kernel launches bound small models); this CPU at a measured "
                f"{self.cpu_flops / 1e9:.0f} GFLOP/s; "
                + ("length-bucketed batches (mean real tokens)" if self.bucketed else "padded batches")
                + "; FLOPs: posgeom.models.model_flops_per_token (matmuls, training = 3 x forward)")


ASSUMPTIONS = Assumptions()


@dataclass(frozen=True)
class Shape:
    """An encoder's shape: width, layers, MLP width, vocabulary (embeddings and MLM head)."""

    d_model: int
    n_layers: int
    d_ff: int
    vocab_size: int

    @classmethod
    def of(cls, model: Any, vocab_size: int) -> "Shape":
        return cls(int(setting(model, "d_model")), int(setting(model, "n_layers")), int(setting(model, "d_ff")),
                   int(vocab_size))


BERT_BASE = Shape(768, 12, 3072, 30522)


@dataclass(frozen=True)
class Work:
    """One kind of computation an experiment repeats ``runs`` times.

    ``kind``: ``"train"`` (forward + backward + AdamW) or ``"forward"``. ``sequences``: sequences one
    run processes (steps × batch for training). ``n_positions``: the padded length; ``real_tokens``:
    the mean real tokens per sequence (≤ ``n_positions``). ``mlm_fraction``: share of tokens the MLM
    head predicts (0: a classification head). ``share``: work with the same key is done once.
    """

    what: str
    shape: Shape
    kind: str
    n_positions: int
    real_tokens: float
    sequences: int
    runs: int
    batch_size: int = 64
    mlm_fraction: float = 0.0
    share: str = ""

    def tokens(self, bucketed: bool) -> float:
        return self.runs * self.sequences * (min(self.real_tokens, self.n_positions) if bucketed else self.n_positions)

    @property
    def steps(self) -> int:
        """Optimiser steps (training) or batches (forward) over all runs."""
        return self.runs * math.ceil(self.sequences / self.batch_size)

    def gpu_seconds(self, assumptions: "Assumptions") -> float:
        """max(FLOPs at the assumed MFU, steps at the least time of a step)."""
        floor = self.steps * assumptions.step_seconds(self.shape.n_layers) / (1.0 if self.kind == "train" else 3.0)
        return max(self.flops(assumptions.bucketed) / (assumptions.peak_flops * assumptions.mfu), floor)

    def flops(self, bucketed: bool) -> float:
        from .models.encoder import EncoderConfig, model_flops_per_token

        length = min(self.real_tokens, self.n_positions) if bucketed else self.n_positions
        config = EncoderConfig(vocab_size=self.shape.vocab_size, d_model=self.shape.d_model,
                               n_layers=self.shape.n_layers, n_heads=1, d_ff=self.shape.d_ff, max_len=self.n_positions)
        per_token = model_flops_per_token(config, max(1, round(length)), mlm_fraction=self.mlm_fraction)
        return self.tokens(bucketed) * per_token / (1.0 if self.kind == "train" else 3.0)


@dataclass(frozen=True)
class ExperimentCost:
    """The cost of one paper-scale experiment (``chapter``, ``experiment`` = ``module:function``)."""

    chapter: str
    experiment: str
    work: tuple[Work, ...]
    runs: int
    tokens_padded: float
    tokens: float
    flops: float
    gpu_memory_gb: float
    gpu_minutes: float
    cpu_hours: float
    steps: int = 0
    shared: tuple[str, ...] = ()

    @property
    def slices(self) -> int:
        """Slices of at most :data:`SLICE_MINUTES` on the GPU (training checkpoints at slice ends)."""
        return max(1, math.ceil(self.gpu_minutes / SLICE_MINUTES)) if self.gpu_minutes > 0 else 0


@dataclass(frozen=True)
class Override:
    """A proposed paper-scale setting: ``module``'s ``CONFIGS["paper"]`` at ``path`` goes ``old`` → ``new``.

    ``keeps_sequences``: the change leaves the sequences every run sees (hence its FLOPs) as they were.
    """

    module: str
    path: tuple[str, ...]
    old: Any
    new: Any
    why: str
    keeps_sequences: bool = True

    @property
    def field_name(self) -> str:
        return ".".join(self.path)


# --------------------------------------------------------------------------------------------
# Settings that may be dicts or dataclasses
# --------------------------------------------------------------------------------------------


def _has(value: Any, name: str) -> bool:
    return name in value if isinstance(value, Mapping) else (not isinstance(value, (str, bytes))
                                                             and hasattr(value, name))


def _get(value: Any, name: str) -> Any:
    return value[name] if isinstance(value, Mapping) else getattr(value, name)


def _resolve(settings: Any, path: Sequence[str]) -> tuple[str, ...] | None:
    """``path`` as the settings spell it: ``("scratch", "sst2")`` is also found as ``scratch_sst2`` (a
    nested table flattened into fields); None when absent."""
    if not path:
        return ()
    head, rest = path[0], tuple(path[1:])
    if _has(settings, head):
        tail = _resolve(_get(settings, head), rest)
        if tail is not None:
            return (head, *tail)
    if rest:
        return _resolve(settings, (f"{head}_{rest[0]}", *rest[1:]))
    return None


def setting(settings: Any, *path: str, default: Any = ...) -> Any:
    """``settings[a][b]`` for a dict, ``settings.a.b`` for a dataclass (a mix works too; ``a.b`` is also
    found as the field ``a_b``).

    A missing field raises :class:`KeyError` naming the path unless ``default`` is given.
    """
    found = _resolve(settings, path)
    if found is None:
        if default is not ...:
            return default
        raise KeyError(f"settings have no field {'.'.join(path)!r}")
    value = settings
    for name in found:
        value = _get(value, name)
    return value


def with_setting(settings: Any, path: Sequence[str], value: Any) -> Any:
    """A copy of ``settings`` (dict or dataclass, nested) with the field at ``path`` set to ``value``."""
    found = _resolve(settings, tuple(path))
    return _with(settings, found if found is not None else tuple(path), value)


def _with(settings: Any, path: Sequence[str], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], tuple(path[1:])
    if isinstance(settings, Mapping):
        if head not in settings:
            raise KeyError(f"settings have no field {head!r}; fields: {', '.join(map(str, settings))}")
        out = copy.copy(dict(settings))
        out[head] = _with(settings[head], rest, value)
        return out
    if dataclasses.is_dataclass(settings) and not isinstance(settings, type):
        if not hasattr(settings, head):
            raise KeyError(f"settings have no field {head!r}")
        return dataclasses.replace(settings, **{head: _with(getattr(settings, head), rest, value)})
    raise KeyError(f"cannot set {head!r} inside a {type(settings).__name__}")


def _paper(module: str) -> Any:
    return importlib.import_module(f"posgeom.experiments.{module}").CONFIGS["paper"]


def apply_overrides(module: str, settings: Any, overrides: Iterable[Override]) -> Any:
    """``settings`` with every override of ``module`` applied."""
    for o in overrides:
        if o.module == module:
            settings = with_setting(settings, o.path, o.new)
    return settings


# --------------------------------------------------------------------------------------------
# Measured inputs
# --------------------------------------------------------------------------------------------


def mean_tokens(corpus: str, n: int, split: str = "train") -> float:
    """Mean real tokens per sequence of ``corpus`` cut to ``n`` (:data:`CORPUS_LENGTHS`; ``n`` itself
    for a length not measured, a conservative bound)."""
    return CORPUS_LENGTHS.get((corpus, split), {}).get(int(n), float(n))


def measure_corpus_lengths(lengths: Iterable[int] = (64, 128, 256, 512), *, data_dir=None) -> dict:
    """Measure :data:`CORPUS_LENGTHS` from the corpora (tokenised with the cache; needs the data)."""
    import numpy as np

    from .corpora import corpus_tokens

    out = {}
    for corpus, split in CORPUS_LENGTHS:
        full = corpus_tokens(corpus, split, max(lengths), special="model", data_dir=data_dir, progress=False)
        out[(corpus, split)] = {int(n): float(np.minimum(full.full_lengths, n).mean()) for n in lengths}
    return out


def measure_cpu_rate(*, d_model: int = 768, n_layers: int = 2, d_ff: int = 3072, seq_len: int = 64,
                     batch_size: int = 8, steps: int = 4, warmup: int = 1) -> float:
    """Training FLOP/s of the encoder on this CPU (fp32; MLM on random ids, model FLOPs per token).

    Runs ``warmup`` untimed and ``steps`` timed training steps of :func:`posgeom.models.training.train`.
    """
    import time

    import torch

    from .models import TokenData, TrainConfig, build_model, get_config, model_flops_per_token, train

    config = get_config("paper", max_len=seq_len, d_model=d_model, n_layers=n_layers, d_ff=d_ff)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, config.vocab_size, (batch_size * (steps + warmup), seq_len), generator=g)
    data = TokenData(ids, torch.ones_like(ids))
    model = build_model(config, "mlm", seed=0)
    train(model, data, TrainConfig(task="mlm", batch_size=batch_size, max_steps=warmup, device="cpu", progress=False))
    start = time.perf_counter()
    train(model, data, TrainConfig(task="mlm", batch_size=batch_size, max_steps=steps, device="cpu", progress=False))
    seconds = time.perf_counter() - start
    return steps * batch_size * seq_len * model_flops_per_token(config, seq_len) / seconds


# --------------------------------------------------------------------------------------------
# Memory
# --------------------------------------------------------------------------------------------


def parameter_count(shape: Shape, n_positions: int) -> int:
    """Parameters of an encoder: per layer 4 d² + 2 d d_ff (+ biases), embeddings (V + n) d."""
    d = shape.d_model
    per_layer = 4 * d * d + 2 * d * shape.d_ff + 9 * d + shape.d_ff
    return shape.n_layers * per_layer + (shape.vocab_size + n_positions) * d


def peak_memory_gb(work: Work) -> float:
    """Peak GPU memory of one run of ``work`` in GB (see the module's notes)."""
    params = parameter_count(work.shape, work.n_positions)
    b, L, d = work.batch_size, work.n_positions, work.shape.d_model
    if work.kind == "train":
        state = 16 * params  # fp32 weights + gradients + AdamW's two moments
        activations = 34 * b * L * d * work.shape.n_layers  # bf16, flash attention
        logits = 6 * b * L * work.shape.vocab_size if work.mlm_fraction else 0
    else:
        state, activations, logits = 4 * params, 4 * 34 * b * L * d, 4 * b * L * work.shape.vocab_size
    return (state + activations + logits) / 1e9


# --------------------------------------------------------------------------------------------
# The experiments' work, read from their paper settings
# --------------------------------------------------------------------------------------------


def _train(what, shape, n, real, steps, batch, runs, *, mlm=0.0, share=""):
    return Work(what, shape, "train", int(n), float(real), int(steps) * int(batch), int(runs), int(batch),
                float(mlm), share)


def _forward(what, shape, n, real, sequences, runs=1, batch=128):
    return Work(what, shape, "forward", int(n), float(real), int(sequences), int(runs), int(batch))


def _necessity_order(c) -> list[Work]:
    from .experiments.necessity import MODELS

    m, t, tr = setting(c, "model"), setting(c, "task"), setting(c, "train")
    n = int(setting(t, "n_positions")) + 1  # [CLS]
    shape = Shape.of(m, int(setting(t, "vocab_size")) + 2)
    seeds = len(setting(c, "seeds"))
    evals = int(setting(tr, "steps")) // int(setting(tr, "eval_every")) + 2
    # every model, and ALiBi without [CLS] once more (the chapter's second call)
    runs = (len(MODELS) + 1) * seeds
    return [_train("order task (BERT-base shape)", shape, n, n, setting(tr, "steps"), setting(tr, "batch_size"), runs),
            _forward("test accuracy along training", shape, n, n, evals * int(setting(t, "n_test")), runs, batch=1024)]


def _necessity_equivariance(c) -> list[Work]:
    from .experiments.necessity import MODELS

    m, e = setting(c, "model"), setting(c, "equivariance")
    shape = Shape.of(m, int(setting(e, "vocab_size")))
    n = int(setting(e, "length"))
    per_model = int(setting(e, "n_inputs")) * (2 * int(setting(e, "n_perms")) + 1)
    return [_forward("permuted inputs (float64 and float32)", shape, n, n, per_model, 2 * len(MODELS))]


#: run_separation's calls in the chapter: (corpus, task, init, weight decay from the settings?)
_SEPARATION_CALLS = (("drift", "mlm", "normal", False), ("stationary", "mlm", "normal", False),
                     ("sst2", "mlm", "normal", False), ("imdb", "mlm", "normal", False),
                     ("drift", "mlm", "tied", False), ("stationary", "mlm", "tied", False),
                     ("drift", "bag", "tied", False),
                     ("drift", "mlm", "normal", True), ("stationary", "mlm", "normal", True),
                     ("drift", "bag", "normal", True))


#: The calls made with the chapter's headline seeds (``headline_seeds`` where the settings have them).
_HEADLINE = {("drift", "mlm", "normal", False), ("sst2", "mlm", "normal", False), ("imdb", "mlm", "normal", False)}


def _separation(c) -> list[Work]:
    m, tr = setting(c, "model"), setting(c, "train")
    seeds = len(setting(c, "seeds"))
    headline = len(setting(c, "headline_seeds", default=setting(c, "seeds")))
    steps, batch = setting(tr, "steps"), setting(tr, "batch_size")
    out = []
    groups: dict[tuple, int] = {}
    for call in _SEPARATION_CALLS:
        corpus, task = call[:2]
        groups[(corpus, task)] = groups.get((corpus, task), 0) + (headline if call in _HEADLINE else seeds)
    for (corpus, task), runs in groups.items():
        if corpus in ("sst2", "imdb"):
            n = int(setting(c, "real", corpus, "n_positions"))
            real, vocab = mean_tokens(corpus, n), BERT_BASE.vocab_size
        else:
            syn = setting(c, "synthetic")
            n, vocab = int(setting(syn, "n_positions")), int(setting(syn, "vocab_size")) + 4
            real = n
        out.append(_train(f"{corpus} {task}", Shape.of(m, vocab), n, real, steps, batch, runs,
                          mlm=0.15 if task == "mlm" else 0.0))
    return out


def _factorisation_gap(c) -> list[Work]:
    n = int(setting(c, "gap", "n_positions"))
    return [_forward("pretrained attentions, SST-2 validation", BERT_BASE, n, mean_tokens("sst2", n, "validation"),
                     872)]


def _lowrank(c) -> list[Work]:
    from .experiments.minimal_parametrisation import TRAIN_ENCODINGS

    t = setting(c, "train")
    m, steps, batch = setting(t, "model"), setting(t, "steps"), setting(t, "batch_size")
    syn = setting(t, "synthetic")
    n_syn = int(setting(syn, "n_positions")) + 1
    n_sst = int(setting(t, "sst2", "n_positions"))
    return [
        _train("synthetic order task", Shape.of(m, int(setting(syn, "vocab_size")) + 2), n_syn, n_syn,
               setting(steps, "synthetic"), batch, len(setting(t, "seeds")) * len(TRAIN_ENCODINGS)),
        _train("SST-2 classification", Shape.of(m, BERT_BASE.vocab_size), n_sst, mean_tokens("sst2", n_sst),
               setting(steps, "sst2"), batch, len(setting(t, "sst2_seeds")) * len(setting(t, "sst2_encodings"))),
    ]


def _scratch(c) -> list[Work]:
    out = []
    for corpus in setting(c, "scratch_corpora"):
        s = setting(c, "scratch", corpus)
        n = int(setting(c, "corpora", corpus, "n_positions", default=None) or setting(c, corpus, "n_positions"))
        out.append(_train(f"BERT-base MLM from scratch on {corpus}", Shape.of(setting(s, "model"), BERT_BASE.vocab_size),
                          n, mean_tokens(corpus, n), setting(s, "max_steps"), setting(s, "batch_size"), 1, mlm=0.15,
                          share=f"real_corpora_scratch_{corpus}"))
    return out


def _ntk(c) -> list[Work]:
    from .experiments.monotonicity import REGIMES

    k = setting(c, "ntk")
    n = int(setting(k, "n_positions"))
    steps, batch, seeds = int(setting(k, "steps")), int(setting(k, "batch_size")), len(setting(k, "seeds"))
    records = steps // int(setting(k, "record_every")) + 2
    probe = int(setting(k, "probe_sequences"))
    out = []
    for regime in REGIMES:
        r = setting(k, regime)
        # lazy: every seed; the other regimes: the contrast seeds where the settings have them
        regime_seeds = seeds if regime == "lazy" else len(setting(k, "contrast_seeds", default=setting(k, "seeds")))
        runs = regime_seeds + (1 if regime == "rich" else 0)  # the chapter's extra rich run (table sigma 1e-4)
        shape = Shape.of(r, BERT_BASE.vocab_size)
        out.append(_train(f"{regime} regime", shape, n, mean_tokens("sst2", n), steps, batch, runs))
        # two kernels per record, one gradient (forward + backward) per probe sequence, padded
        out.append(_train(f"{regime}: NTK per-example gradients", shape, n, n, 2 * records * probe, 1, runs))
    return out


def _layer_stress(c) -> list[Work]:
    s = setting(c, "sentences")
    n = int(setting(s, "n_positions"))
    return [_forward("pretrained BERT-base on SST-2 validation", BERT_BASE, n, mean_tokens("sst2", n, "validation"),
                     872, batch=int(setting(c, "batch_size")))]


def _init_study(c) -> list[Work]:
    i, o, tr = setting(c, "init"), setting(c, "order"), setting(c, "train")
    variants = len(setting(i, "inits")) + sum(1 for p in setting(i, "dropouts") if p > 0)
    n = int(setting(o, "n_positions")) + 1
    shape = Shape.of(setting(c, "model"), int(setting(o, "vocab_size")) + 2)
    return [_train("order task per initialisation", shape, n, n, setting(tr, "steps"), setting(tr, "batch_size"),
                   variants * len(setting(i, "seeds")))]


def _dropout_study(c) -> list[Work]:
    o, tr = setting(c, "order"), setting(c, "train")
    n = int(setting(o, "n_positions")) + 1
    shape = Shape.of(setting(c, "model"), int(setting(o, "vocab_size")) + 2)
    return [_train("order task per dropout rate", shape, n, n, setting(tr, "steps"), setting(tr, "batch_size"),
                   len(setting(c, "dropouts")) * len(setting(c, "seeds")))]


def _tails(c) -> list[Work]:
    t = setting(c, "tails")
    n = int(setting(t, "n_positions")) + 1
    shape = Shape.of(setting(c, "model"), int(setting(t, "vocab_size")) + 2)
    return [_train("skewed and uniform lengths", shape, n, n, setting(t, "train", "steps"),
                   setting(t, "train", "batch_size"), 2 * len(setting(t, "seeds")))]


def _extrapolation(block: str, vocab_key: str, mlm: float):
    def work(c) -> list[Work]:
        b = setting(c, block)
        L, seeds, encodings = int(setting(b, "L")), len(setting(b, "seeds")), setting(b, "encodings")
        shape = Shape.of(setting(c, "model"), int(setting(b, vocab_key)) + 4)
        tr, ft = setting(b, "train"), setting(b, "finetune")
        longer = [round(f * L) for f in setting(b, "factors") if round(f * L) > L]
        out = [_train(f"{len(encodings)} encodings at L={L}", shape, L + 1, L + 1, setting(tr, "steps"),
                      setting(tr, "batch_size"), len(encodings) * seeds, mlm=mlm)]
        if "learned" in encodings:
            for m_ in longer:
                out.append(_train(f"learned, new rows fine-tuned at {m_}", shape, m_ + 1, m_ + 1, setting(ft, "steps"),
                                  setting(tr, "batch_size"), seeds, mlm=mlm))
            if setting(b, "target_baseline"):
                targets = [round(f * L) for f in setting(b, "target_factors") if round(f * L) > L]
                for m_ in targets:
                    out.append(_train(f"learned, trained at {m_}", shape, m_ + 1, m_ + 1, setting(tr, "steps"),
                                      setting(tr, "batch_size"), seeds, mlm=mlm))
        return out
    return work


#: Per chapter, the experiments that run a model at paper scale: (chapter, module, function, work builder);
#: ``module`` holds the settings (``CONFIGS["paper"]``). A module this checkout lacks is skipped.
EXPERIMENTS: tuple[tuple[str, str, str, Callable[[Any], list[Work]]], ...] = (
    ("theorem1-necessity", "necessity", "run_order_task", _necessity_order),
    ("theorem1-necessity", "necessity", "run_equivariance", _necessity_equivariance),
    ("theorem4-separation", "separation", "run_separation", _separation),
    ("theorem4-separation", "separation", "run_factorisation_gap", _factorisation_gap),
    ("minimal-parametrisation", "minimal_parametrisation", "run_lowrank_training", _lowrank),
    ("real-corpora", "real_corpora", "run_scratch_table", _scratch),
    ("monotonicity", "monotonicity", "run_ntk", _ntk),
    ("monotonicity", "real_corpora", "run_scratch_table", _scratch),
    ("inside-bert", "inside_bert", "run_layer_stress", _layer_stress),
    ("learned-tables", "learned_tables", "run_init_study", _init_study),
    ("learned-tables", "table_dropout", "run_dropout_study", _dropout_study),
    ("learned-tables-fail", "extrapolation", "run_undertrained_tails", _tails),
    ("learned-tables-fail", "extrapolation", "run_extrapolation_order", _extrapolation("order", "vocab_size", 0.0)),
    ("learned-tables-fail", "extrapolation", "run_extrapolation_mlm", _extrapolation("mlm", "top_k", 0.15)),
)


#: The registry experiments (``fnmatch`` patterns) each costed experiment writes.
RESULT_NAMES: dict[str, tuple[str, ...]] = {
    "necessity:run_order_task": ("necessity.order_task*",),
    "necessity:run_equivariance": ("necessity.equivariance*",),
    "separation:run_separation": ("separation.*.*.*.wd*",),
    "separation:run_factorisation_gap": ("separation.factorisation_gap",),
    "minimal_parametrisation:run_lowrank_training": ("minimal_parametrisation.lowrank_training",),
    "real_corpora:run_scratch_table": ("real_corpora_scratch_*",),
    "monotonicity:run_ntk": ("monotonicity_ntk_*",),
    "inside_bert:run_layer_stress": ("inside_bert*",),
    "learned_tables:run_init_study": ("learned_init_study",),
    "table_dropout:run_dropout_study": ("learned_dropout_overfit",),
    "extrapolation:run_undertrained_tails": ("learned_tails",),
    "extrapolation:run_extrapolation_order": ("learned_extrapolation_order",),
    "extrapolation:run_extrapolation_mlm": ("learned_extrapolation_mlm",),
}
#: An experiment needs a GPU at paper scale when this CPU would take longer than this (hours).
CPU_FEASIBLE_HOURS = 1.0


def needs_gpu(registry_experiment: str, costs: Sequence[ExperimentCost] | None = None) -> bool:
    """Whether the registry entry ``registry_experiment`` at paper scale needs a GPU to be recomputed:
    it is written by a costed experiment that would take this CPU more than :data:`CPU_FEASIBLE_HOURS`.
    Everything else (counting, linear algebra, small forward passes) a CPU recomputes."""
    from fnmatch import fnmatchcase

    costs = experiment_costs() if costs is None else costs
    heavy = {c.experiment for c in costs if c.cpu_hours > CPU_FEASIBLE_HOURS}
    return any(fnmatchcase(registry_experiment, pattern)
               for experiment in heavy for pattern in RESULT_NAMES.get(experiment, ()))


# --------------------------------------------------------------------------------------------
# The proposed paper settings
# --------------------------------------------------------------------------------------------

#: Proposed paper-scale changes (apply them to the modules' ``CONFIGS["paper"]``; the cost model then
#: reads them from the modules and reports them as applied).
PROPOSED: tuple[Override, ...] = (
    # The criterion: every run sees the same training sequences (steps x batch unchanged: the same epochs
    # over the same fixed training set, the same FLOPs) in 4x fewer, 4x larger optimiser steps. These
    # runs are bound by the time of a step, not by FLOPs (tiny models, or 13-token SST-2 sentences).
    # What to check on the first GPU slice: the recorded final training loss is at its plateau (within
    # the spread over seeds of the current setting's); if not, raise the learning rate by 2 (square-root
    # rule for AdamW at 4x the batch). Theorem 1 and 4 (necessity, separation), the NTK regimes, the
    # under-trained tails and the initialisation study keep their batch: their claims are about the
    # number of updates (a decay factor, steps to a loss threshold, how often a row is updated).
    Override("extrapolation", ("order", "train", "batch_size"), 64, 256,
             "d = 128, 4 layers: a step costs its kernel launches whatever the batch; 4x the sequences per step"),
    Override("extrapolation", ("order", "train", "steps"), 4_000, 1_000,
             "the same 256,000 sequences per run (6.4 epochs of the 40,000 training sequences)"),
    Override("extrapolation", ("order", "finetune", "steps"), 400, 100,
             "the same 25,600 sequences for the new rows' fine-tuning (at the larger batch)"),
    Override("extrapolation", ("mlm", "train", "batch_size"), 64, 256,
             "d = 128 on 128-token IMDB windows: 33k tokens per step instead of 8k"),
    Override("extrapolation", ("mlm", "train", "steps"), 10_000, 2_500,
             "the same 640,000 windows per run (32 epochs of the 20,000 training windows)"),
    Override("extrapolation", ("mlm", "finetune", "steps"), 1_000, 250, "the same 64,000 windows of fine-tuning"),
    Override("minimal_parametrisation", ("train", "batch_size"), 32, 128,
             "BERT-base on 13-token SST-2 sentences: 32 of them are 430 tokens, a step bound by its kernel "
             "launches; 128 are still far from filling the GPU"),
    Override("minimal_parametrisation", ("train", "steps"), {"synthetic": 2000, "sst2": 6000},
             {"synthetic": 500, "sst2": 1500},
             "the same sequences per run: 64,000 synthetic (3.2 epochs of 20,000), 192,000 SST-2 (2.9 epochs of "
             "67,349: the GLUE recipe fine-tunes BERT for 3)"),
    Override("real_corpora", ("scratch", "sst2", "batch_size"), 128, 512,
             "13.3 tokens per sentence: 512 sentences are 6.8k real tokens per step (128 were 1.7k)"),
    Override("real_corpora", ("scratch", "sst2", "max_steps"), 20_000, 5_000,
             "the same 2.56 million sentences (38 epochs of SST-2's 67,349)"),
    Override("real_corpora", ("scratch", "sst2", "warmup_steps"), 1_000, 250, "the same share of warm-up (5 %)"),
    # The one FLOP-bound reduction: Theorem 4's runs are the largest item (BERT-base, 128 and 512 positions).
    Override("separation", ("train", "steps"), 10_000, 5_000,
             "the largest FLOP-bound item (over half the GPU time); 5,000 steps of 64 are 3.2 epochs of the "
             "100,000 synthetic sequences. To check on the first GPU slice: the separation and loss curves "
             "(recorded every `every` steps) have flattened by step 5,000 in the 'conditions hold' runs",
             keeps_sequences=False),
    Override("separation", ("weight_decay",), 10.0, 20.0,
             "keeps the module's documented decay factor of an unused weight, exp(-lr * weight_decay * steps / 2) "
             "= exp(-5), with half the steps"),
    Override("separation", ("train", "every"), 250, 125, "the same 41 geometry records along the shorter run"),
)


def _proposed_for(module: str, settings: Any, overrides: Sequence[Override]) -> tuple[Any, list[Override]]:
    """``settings`` with the overrides not yet in the module applied, and those overrides."""
    pending = []
    for o in overrides:
        if o.module != module:
            continue
        if _same(setting(settings, *o.path, default=None), o.new):
            continue
        pending.append(o)
        settings = with_setting(settings, o.path, o.new)
    return settings, pending


def _plain(value: Any) -> Any:
    """Settings as plain data: dataclasses and mappings → dicts, tuples → lists."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _same(a, b) -> bool:
    return _plain(a) == _plain(b)


# --------------------------------------------------------------------------------------------
# The table
# --------------------------------------------------------------------------------------------


def experiment_costs(*, proposed: bool = False, assumptions: Assumptions = ASSUMPTIONS,
                     overrides: Sequence[Override] = PROPOSED,
                     settings_of: Callable[[str], Any] = _paper) -> list[ExperimentCost]:
    """The cost of every paper-scale experiment that runs a model, in book order.

    Parameters
    ----------
    proposed : apply :data:`PROPOSED` (the overrides not yet in the modules) before costing.
    assumptions : hardware, MFU and bucketing.
    overrides : the proposed changes (default :data:`PROPOSED`).
    settings_of : ``module name → paper settings`` (default: the module's ``CONFIGS["paper"]``).
    """
    costs, seen = [], set()
    for chapter, module, function, build in EXPERIMENTS:
        if importlib.util.find_spec(f"posgeom.experiments.{module}") is None:
            continue  # an experiment this checkout does not have
        cfg = settings_of(module)
        if proposed:
            cfg, _ = _proposed_for(module, cfg, overrides)
        work = tuple(build(cfg))
        counted = [w for w in work if not w.share or w.share not in seen]
        shared = tuple(w.share for w in work if w.share and w.share in seen)
        seen.update(w.share for w in work if w.share)
        flops = sum(w.flops(assumptions.bucketed) for w in counted)
        seconds = sum(w.gpu_seconds(assumptions) for w in counted)
        costs.append(ExperimentCost(
            chapter=chapter, experiment=f"{module}:{function}", work=work,
            runs=sum(w.runs for w in counted if w.kind == "train" and w.batch_size > 1),  # not per-example work
            tokens_padded=sum(w.tokens(False) for w in counted), tokens=sum(w.tokens(assumptions.bucketed) for w in counted),
            flops=flops, gpu_memory_gb=max((peak_memory_gb(w) for w in work), default=0.0),
            gpu_minutes=seconds / 60, steps=sum(w.steps for w in counted if w.kind == "train"),
            cpu_hours=flops / assumptions.cpu_flops / 3600, shared=shared,
        ))
    return costs


def totals(costs: Sequence[ExperimentCost]) -> dict[str, float]:
    """Sums over experiments: tokens (padded, counted), FLOPs, GPU minutes, CPU hours, slices; peak memory."""
    return {"tokens_padded": sum(c.tokens_padded for c in costs), "tokens": sum(c.tokens for c in costs),
            "flops": sum(c.flops for c in costs), "gpu_minutes": sum(c.gpu_minutes for c in costs),
            "cpu_hours": sum(c.cpu_hours for c in costs), "slices": sum(c.slices for c in costs),
            "gpu_memory_gb": max((c.gpu_memory_gb for c in costs), default=0.0)}


def cost_table(*, proposed: bool = False, assumptions: Assumptions = ASSUMPTIONS, **kwargs):
    """:func:`experiment_costs` as a pandas DataFrame (one row per experiment)."""
    import pandas as pd

    rows = [{"chapter": c.chapter, "experiment": c.experiment, "runs": c.runs, "tokens (padded)": c.tokens_padded,
             "tokens": c.tokens, "PFLOP": c.flops / 1e15, "GPU memory (GB)": c.gpu_memory_gb,
             "GPU (min)": c.gpu_minutes, "CPU (h)": c.cpu_hours, "slices": c.slices}
            for c in experiment_costs(proposed=proposed, assumptions=assumptions, **kwargs)]
    return pd.DataFrame(rows)


def _tokens(x: float) -> str:
    for unit, size in (("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if x >= size:
            return f"{x / size:.1f}{unit}"
    return f"{x:.0f}"


def _minutes(m: float) -> str:
    return f"{m:.1f} min" if m < 90 else f"{m / 60:.1f} h"


def _hours(h: float) -> str:
    return f"{h:.1f} h" if h < 48 else f"{h / 24:.0f} d"


def format_costs(costs: Sequence[ExperimentCost], *, assumptions: Assumptions = ASSUMPTIONS,
                 progress: Mapping[str, str] | None = None) -> str:
    """The cost table as text: per chapter and experiment, then the totals and the assumptions.

    ``progress``: ``{experiment: text}`` shown in a last column (``posgeom reproduce --list``).
    """
    progress = progress or {}
    head = (f"{'experiment':44} {'runs':>5} {'steps':>7} {'tokens pad→real':>16} {'PFLOP':>8} {'GPU mem':>8} {'GPU':>9} "
            f"{'CPU':>7} {'slices':>6}" + ("  progress" if progress else ""))
    lines, chapter = [head], None
    for c in costs:
        if c.chapter != chapter:
            chapter = c.chapter
            lines.append(f"{chapter}")
        note = f" (shares {', '.join(c.shared)})" if c.shared else ""
        lines.append(f"  {c.experiment:42} {c.runs:>5} {_tokens(c.steps):>7} {_tokens(c.tokens_padded) + '→' + _tokens(c.tokens):>16} "
                     f"{c.flops / 1e15:>8.1f} {c.gpu_memory_gb:>6.1f}GB {_minutes(c.gpu_minutes):>9} "
                     f"{_hours(c.cpu_hours):>7} {c.slices:>6}" + (f"  {progress[c.experiment]}"
                                                                      if c.experiment in progress else "") + note)
    t = totals(costs)
    measured = gpu_measurements()
    lines_measured = []
    if measured:
        last = measured[-1]
        at = dataclasses.replace(assumptions, mfu=last.mfu)
        minutes = sum(w.gpu_seconds(at) for c in costs for w in c.work if not w.share or w.share not in c.shared) / 60
        lines_measured.append(f"measured: {last.mfu:.0%} MFU on {last.device} ({last.started}, {MEASUREMENTS}): "
                              f"{_minutes(minutes)} on the GPU at that MFU")
    else:
        lines_measured.append(f"measured: no GPU window recorded yet ({MEASUREMENTS}, written by scripts/gpu-slice)")
    lines.append(f"total: {_tokens(t['tokens_padded'])} padded → {_tokens(t['tokens'])} tokens, "
                 f"{t['flops'] / 1e18:.2f} EFLOP, {_minutes(t['gpu_minutes'])} on the GPU in {t['slices']} slices "
                 f"of at most {SLICE_MINUTES:g} min, {_hours(t['cpu_hours'])} on this CPU, "
                 f"peak GPU memory {t['gpu_memory_gb']:.0f} GB")
    lines.append(f"assumptions: {assumptions.describe()}")
    lines.extend(lines_measured)
    return "\n".join(lines)


def readme_table(assumptions: Assumptions = ASSUMPTIONS) -> str:
    """The README's table of the paper scale's cost per chapter (current settings and with :data:`PROPOSED`)."""
    now, then = experiment_costs(assumptions=assumptions), experiment_costs(proposed=True, assumptions=assumptions)
    padded = experiment_costs(assumptions=dataclasses.replace(assumptions, bucketed=False))
    chapters = list(dict.fromkeys(c.chapter for c in now))
    lines = ["| chapter | GPU, padded | GPU, bucketed | GPU, proposed settings | slices (proposed) | CPU, bucketed |",
             "|---|---|---|---|---|---|"]
    for ch in chapters:
        pick = lambda costs, ch=ch: [c for c in costs if c.chapter == ch]  # noqa: E731
        lines.append(f"| {ch} | {_minutes(totals(pick(padded))['gpu_minutes'])} | "
                     f"{_minutes(totals(pick(now))['gpu_minutes'])} | {_minutes(totals(pick(then))['gpu_minutes'])} | "
                     f"{totals(pick(then))['slices']} | {_hours(totals(pick(now))['cpu_hours'])} |")
    tp, tn, tt = totals(padded), totals(now), totals(then)
    lines.append(f"| **total** | {_minutes(tp['gpu_minutes'])} | {_minutes(tn['gpu_minutes'])} | "
                 f"{_minutes(tt['gpu_minutes'])} | {tt['slices']} | {_hours(tn['cpu_hours'])} |")
    return "\n".join(lines)


#: The markers around the README's generated cost table.
README_MARKERS = ("<!-- cost-table: generated by posgeom.costmodel.readme_table(); tests/test_costmodel.py checks it -->",
                  "<!-- end cost-table -->")


def update_readme(path) -> bool:
    """Rewrite the cost table and the assumptions line of the README at ``path`` from the cost model.

    Returns whether the file changed. ``python -m posgeom.costmodel --write-readme`` calls it.
    """
    import re
    from pathlib import Path

    path = Path(path)
    text = path.read_text()
    start, end = (re.escape(m) for m in README_MARKERS)
    if not re.search(start + ".*?" + end, text, flags=re.S):
        raise ValueError(f"{path} has no cost table between the markers {README_MARKERS[0]!r} and {README_MARKERS[1]!r}")
    new = re.sub(start + ".*?" + end, lambda _: f"{README_MARKERS[0]}\n{readme_table()}\n{README_MARKERS[1]}", text,
                 flags=re.S)
    new = re.sub(r"\nAssumptions: [^\n]*\n", lambda _: f"\nAssumptions: {ASSUMPTIONS.describe()}.\n", new)
    if new != text:
        path.write_text(new)
    return new != text


def _main(argv=None) -> int:
    import argparse

    from .config import checkout_root

    parser = argparse.ArgumentParser(prog="python -m posgeom.costmodel", description=__doc__.splitlines()[0])
    parser.add_argument("--proposed", action="store_true", help="cost the proposed settings (PROPOSED)")
    parser.add_argument("--write-readme", action="store_true", help="rewrite README.md's cost table")
    args = parser.parse_args(argv)
    if args.write_readme:
        root = checkout_root()
        if root is None:
            raise SystemExit("python -m posgeom.costmodel --write-readme: run it inside the checkout")
        print(f"README.md {'updated' if update_readme(root / 'README.md') else 'already up to date'}")
        return 0
    print(format_costs(experiment_costs(proposed=args.proposed)))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
