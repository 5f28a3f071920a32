r"""The NTK regime of the chapter *Monotonicity* (claim C11): a [CLS] classifier trained lazily or richly.

With a small rate and a large width, or with lazy training (Chizat, Oyallon and Bach 2019), the empirical
tangent kernel barely moves, $\|K_t - K_0\|_F / \|K_0\|_F \ll 1$, and the argument of
:mod:`posgeom.experiments.monotonicity` predicts the order of the table's displacement. :func:`run_ntk`
trains by plain SGD (the setting of the NTK theory; posgeom's training loop uses AdamW) in one of
:data:`REGIMES` and records the kernel change and the monotonicity of $P_t$ and of $\Delta P_t = P_t - P_0$.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..config import Settings, resolve_device, settings_or_default as _settings
from ..models.ntk import ntk_data, ntk_training
from ..corpora.identifiers import Corpus
from ..registry import Registry, Result
from . import real_corpora as rc
from ..validation import check_choice
from .real_corpora_geometry import RecordedOptions
from .settings import as_params, by_scale

#: Training regimes of :func:`run_ntk`: wide and slow (the NTK regime), the same with the table started
#: near a point, and narrow and fast.
REGIMES = ("lazy", "lazy_small_init", "rich")


@dataclass(frozen=True)
class NTKRegime:
    r"""One training regime of :func:`run_ntk`: the classifier's shape, its SGD rate and initialisation.

    ``table_sigma`` and ``init_std`` (None: 0.02) are the table's and the other weights' initial std;
    ``output_scale`` is lazy training's $\alpha$: logits $\alpha\,(f_\theta(x) - f_{\theta_0}(x))$, the loss
    divided by $\alpha^2$, so the function moves as at $\alpha = 1$ while the parameters move $\alpha$ times less.
    """

    d_model: int
    n_layers: int
    n_heads: int
    d_ff: int
    lr: float
    table_sigma: float | None = None
    init_std: float | None = None
    output_scale: float | None = None


@dataclass(frozen=True)
class NTKOptions:
    """The NTK experiment: data, SGD schedule, seeds and the three regimes."""

    corpus: str = Corpus.SST2
    n_positions: int = 16
    # a training set the lazy classifier can fit: its loss must end well below ln 2 for C11 to be tested
    train_sequences: int | None = 256
    probe_sequences: int = 6
    steps: int = 200
    batch_size: int = 32
    record_every: int = 50
    #: seeds of the lazy regime (the one C11 is about) and of the two contrast regimes. Seven at ``quick``:
    #: the power design of C11's decision (posgeom.geometry.seeds_for_power against the five-point order of
    #: posgeom.verdicts.ORDER_EFFECT, at the spread of the five seeds run before) asks for 7 seeds for 80 % power
    seeds: tuple[int, ...] = (0, 1, 2, 3, 4, 5, 6)
    contrast_seeds: tuple[int, ...] = (0, 1)
    threads: int | None = 1
    # weights N(0, 0.2^2), not BERT's 0.02: at 0.02 the tangent kernel at initialisation barely separates
    # sentences, and lazy training does not fit even 256 of them in a CPU budget
    lazy: NTKRegime = NTKRegime(d_model=128, n_layers=1, n_heads=4, d_ff=256, lr=0.05, init_std=0.2,
                                output_scale=100.0)
    lazy_small_init: NTKRegime = NTKRegime(d_model=128, n_layers=1, n_heads=4, d_ff=256, lr=0.05, table_sigma=1e-6,
                                           init_std=0.2, output_scale=100.0)
    rich: NTKRegime = NTKRegime(d_model=32, n_layers=1, n_heads=2, d_ff=64, lr=0.2)

    def seeds_of(self, regime: str) -> tuple[int, ...]:
        """The seeds run for ``regime``: ``seeds`` for ``"lazy"``, ``contrast_seeds`` otherwise."""
        self.regime(regime)
        return self.seeds if regime == "lazy" else self.contrast_seeds

    def regime(self, name: str) -> NTKRegime:
        return getattr(self, check_choice(name, "regime", REGIMES))


#: The NTK experiment at each scale (``NTK_CONFIGS[scale]``; the chapter's ``CONFIGS[scale].ntk``).
NTK_CONFIGS = by_scale(
    NTKOptions(),
    n_positions=64, train_sequences=None, probe_sequences=32, steps=5000, batch_size=64,
    record_every=250, seeds=(0, 1, 2, 3, 4), contrast_seeds=(0, 1, 2, 3, 4), threads=None,
    lazy={"d_model": 2048, "n_layers": 2, "n_heads": 16, "d_ff": 4096, "lr": 1e-3, "init_std": None,
          "output_scale": None},
    lazy_small_init={"d_model": 2048, "n_layers": 2, "n_heads": 16, "d_ff": 4096, "lr": 1e-3,
                     "init_std": None, "output_scale": None},
    rich={"d_model": 64, "n_layers": 2, "n_heads": 2, "d_ff": 128},
)


@dataclass(frozen=True)
class NTKRecord:
    """A stored ``run_ntk``: the run's summary, and its series over the recorded steps (r,)."""

    regime: str
    model: dict[str, Any]  # the regime's classifier and SGD settings that are set (numbers as given)
    seed: int
    options: RecordedOptions
    n_params_kernel: int  # the parameters the tangent kernel is taken over
    final: dict[str, float]  # the last value of each series
    probe_accuracy: float
    final_loss: float  # the mean of the last 20 steps' losses
    final_train_loss: float
    step: np.ndarray
    kernel_change: np.ndarray
    kernel_change_table: np.ndarray
    violation: np.ndarray  # of the table P_t
    spearman: np.ndarray
    violation_delta: np.ndarray  # of its displacement P_t - P_0
    spearman_delta: np.ndarray
    table_motion: np.ndarray
    train_loss: np.ndarray
    loss: np.ndarray  # (steps,)
    D: np.ndarray  # (n, n), the corpus geometry
    positions: np.ndarray  # (n,)


def _ntk_record(values: dict[str, Any], arrays: dict[str, np.ndarray]) -> NTKRecord:
    """The record of a run's values and arrays (computed here, or in another process and passed back)."""
    return NTKRecord(**{**values, "options": RecordedOptions.of(dict(values["options"]))}, **arrays)


# The NTK regime


def run_ntk(settings: Settings | None = None, *, regime: str = "lazy", seed: int | None = None,
            force: bool = False, progress: bool = True, precomputed: tuple | None = None, **overrides) -> Result:
    r"""Train a [CLS] classifier with a learned table by SGD and record its kernel and table geometry, stored.

    Parameters
    ----------
    regime : {"lazy", "lazy_small_init", "rich"}
    seed : int, optional
        Initialisation and data-order seed (default ``settings.seed``).
    precomputed : (values, arrays), optional
        What this run's computation returned in another process (:func:`run_ntk_all` under ``torchrun``).
    **overrides
        Fields of :class:`NTKOptions`, or a regime's changes as a dict (``lazy={"lr": 0.05}``).

    Returns
    -------
    Result
        Of an :class:`NTKRecord`.
    """
    settings = _settings(settings)
    NTK_CONFIGS[settings.scale].regime(regime)
    # the options with ``overrides`` applied (by_scale's "paper" is the first argument with the changes)
    opts = by_scale(NTK_CONFIGS[settings.scale], **overrides).paper
    seed = settings.seed if seed is None else int(seed)
    reg = {k: v for k, v in as_params(opts.regime(regime)).items() if v is not None}
    device = resolve_device(settings.device)
    typed = rc.corpus_options(settings.scale, opts.corpus, n_positions=opts.n_positions, max_sequences=None)
    copts = rc.corpus_params(typed)
    source, data = rc.corpus_source(settings, typed)
    params = {"regime": regime, "model": reg,
              "ntk": {k: v for k, v in as_params(opts).items() if k not in REGIMES},
              "corpus": copts, "seed": seed, "data": data}

    def compute():
        if precomputed is not None:
            return _ntk_record(*precomputed)
        cd = rc.corpus_geometry_of(settings, typed, source)
        data = ntk_data(cd.tokens, opts.probe_sequences, opts.train_sequences, seed,
                        name=f"{copts['corpus']}/{copts['split']}")
        values, arrays = ntk_training(data, cd.D, cd.positions, reg, opts, seed, device, progress)
        return _ntk_record({"regime": regime, "model": reg, "seed": seed, "options": copts, **values}, arrays)

    name = (f"[CLS] classifier d={reg['d_model']}, {reg['n_layers']} layer(s), SGD lr={reg['lr']}, "
            f"table sigma={reg.get('table_sigma', 0.02)}, output scale {reg.get('output_scale', 1)}")
    return Registry(settings.results_dir).run(
        f"monotonicity_ntk_{regime}", compute, params=params, scale=settings.scale, seed=seed, device=device,
        model=name, force=force,
    )


def run_ntk_all(settings: Settings | None = None, *, force: bool = False) -> dict[tuple[str, int], Result]:
    """Every run of the chapter, ``{(regime, seed): Result}``.

    Under ``torchrun`` process ``r`` of ``W`` computes runs ``r, r + W, ...`` and rank 0 stores them all: the
    runs are independent and small, so sharing runs out keeps every GPU busy better than splitting batches.
    """
    from ..models.distributed import distributed_context, gather
    settings = _settings(settings)
    opts = NTK_CONFIGS[settings.scale]
    runs = [(regime, seed) for regime in REGIMES for seed in opts.seeds_of(regime)]
    rank, world = distributed_context()
    if world == 1:
        return {(regime, seed): run_ntk(settings, regime=regime, seed=seed, force=force) for regime, seed in runs}
    mine = {}
    for regime, seed in runs[rank::world]:
        # computed here; stored below by rank 0 with the others' runs
        result = run_ntk(settings, regime=regime, seed=seed, force=force, progress=False)
        mine[regime, seed] = (result.values, result.arrays)
    done = {key: out for part in gather(mine, world) for key, out in part.items()}
    return {(regime, seed): run_ntk(settings, regime=regime, seed=seed, force=force, progress=False,
                                    precomputed=done[regime, seed])
            for regime, seed in runs}


__all__ = ["NTK_CONFIGS", "REGIMES", "NTKRegime", "NTKOptions", "NTKRecord", "run_ntk", "run_ntk_all"]
