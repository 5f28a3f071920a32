r"""The NTK regime of the chapter *Monotonicity* (claim C11): a [CLS] classifier trained lazily or richly.

With learning rate $\eta$ small and width large, or with lazy training (Chizat, Oyallon and Bach 2019:
the output $\alpha (f_\theta - f_{\theta_0})$ with a large $\alpha$ and the loss divided by $\alpha^2$), the
network stays close to its linearisation around $\theta_0$: the empirical tangent kernel
$K_t(x, x') = \nabla_\theta f_{\theta_t}(x)^\top \nabla_\theta f_{\theta_t}(x')$ barely moves,
$\|K_t - K_0\|_F / \|K_0\|_F \ll 1$ (:func:`posgeom.models.ntk.logit_margin_ntk`,
:func:`posgeom.models.ntk.relative_change`). The argument of
:mod:`posgeom.experiments.monotonicity` then predicts the order of the table's displacement; :func:`run_ntk`
trains the classifier (:func:`ntk_training`) and records the kernel, the training loss and the violation
rate against the corpus geometry of the table $P_t$ and of $\Delta P_t = P_t - P_0$.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import geometry as geo
from ..config import Settings, resolve_device, settings_or_default as _settings
from ..models.ntk import logit_margin_ntk, relative_change
from ..registry import Registry, Result
from .settings import as_params, by_scale

#: Training regimes of :func:`run_ntk`: wide and slow (the NTK regime), the same with the table started
#: near a point, and narrow and fast.
REGIMES = ("lazy", "lazy_small_init", "rich")


@dataclass(frozen=True)
class NTKRegime:
    r"""One training regime of :func:`run_ntk`: the classifier's shape, its SGD rate and initialisation.

    ``table_sigma``: the table's initial standard deviation (None: BERT's 0.02); ``init_std``: every other
    weight's (None: 0.02); ``output_scale``: $\alpha$ of lazy training (Chizat, Oyallon and Bach 2019), the
    classifier's logits are $\alpha\,(f_\theta(x) - f_{\theta_0}(x))$ and the loss is divided by $\alpha^2$,
    so the function moves as at $\alpha = 1$ while the parameters move $\alpha$ times less (None: plain
    training, $f_\theta$ itself).
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

    corpus: str = "sst2"
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
        if name not in REGIMES:
            raise ValueError(f"unknown regime {name!r}; valid regimes are {', '.join(REGIMES)}")
        return getattr(self, name)



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


# --------------------------------------------------------------------------------------------
# The NTK regime
# --------------------------------------------------------------------------------------------


def ntk_classifier(vocab_size: int, reg: dict[str, Any], n_positions: int, seed: int):
    r"""The [CLS] classifier of one regime (:class:`NTKRegime` fields ``reg``): no dropout, a learned table
    of ``n_positions`` rows with entries $\mathcal N(0, \sigma^2)$, $\sigma$ = ``table_sigma`` or 0.02."""
    from ..models import EncoderConfig, build_model

    config = EncoderConfig(vocab_size=vocab_size, d_model=reg["d_model"], n_layers=reg["n_layers"],
                           n_heads=reg["n_heads"], d_ff=reg["d_ff"], max_len=n_positions, dropout=0.0,
                           attention_dropout=0.0, pooling="cls", init_std=reg.get("init_std") or 0.02,
                           position_options={"sigma": reg.get("table_sigma") or 0.02})
    return build_model(config, "classification", seed=seed)


class _ScaledLogits:
    r"""The logits trained on: $f_\theta(x)$, or with lazy training $\alpha (f_\theta(x) - f_{\theta_0}(x))$."""

    def __init__(self, model, alpha):
        import copy

        self.model, self.alpha = model, alpha
        self.model0 = copy.deepcopy(model).eval() if alpha else None

    def __call__(self, x, m):
        import torch

        if not self.alpha:
            return self.model(x, m).logits
        with torch.no_grad():
            z0 = self.model0(x, m).logits
        # f_alpha(x) = alpha (f_theta(x) - f_theta0(x))
        return self.alpha * (self.model(x, m).logits - z0)


class _NTKRecorder:
    """Records, at chosen steps, the kernel's change, the table's order against ``D`` and the training loss."""

    KEYS = ("step", "kernel_change", "kernel_change_table", "violation", "spearman", "violation_delta",
            "spearman_delta", "table_motion", "train_loss")

    def __init__(self, model, logits, D, positions, probe, names, table_name, train):
        self.model, self.logits, self.D, self.positions = model, logits, D, positions
        self.probe, self.names, self.table_name, self.train = probe, names, table_name, train
        self.P0 = self._table().copy()
        model.eval()
        self.K0 = logit_margin_ntk(model, *probe, names)
        self.K0p = logit_margin_ntk(model, *probe, [table_name])
        self.rec = {k: [] for k in self.KEYS}

    def _table(self) -> np.ndarray:
        return self.model.encoder.positional.table().detach().double().cpu().numpy()[self.positions]

    def train_loss(self) -> float:
        """Mean cross-entropy over the training pool, in batches of 256."""
        import torch

        X, M, Y = self.train
        with torch.no_grad():
            return float(sum(torch.nn.functional.cross_entropy(self.logits(X[i:i + 256], M[i:i + 256]), Y[i:i + 256],
                                                               reduction="sum") for i in range(0, X.shape[0], 256))
                         / X.shape[0])

    def record(self, step: int) -> None:
        self.model.eval()
        P = self._table()
        dP = P - self.P0
        rec = self.rec
        rec["step"].append(step)
        rec["kernel_change"].append(relative_change(logit_margin_ntk(self.model, *self.probe, self.names), self.K0))
        rec["kernel_change_table"].append(
            relative_change(logit_margin_ntk(self.model, *self.probe, [self.table_name]), self.K0p))
        a = geo.monotonicity_of(self.D, geo.euclidean_distances(P))
        b = geo.monotonicity_of(self.D, geo.euclidean_distances(dP)) if np.any(dP) else \
            {"violation_rate": float("nan"), "spearman": float("nan")}
        rec["violation"].append(a["violation_rate"])
        rec["spearman"].append(a["spearman"])
        rec["violation_delta"].append(b["violation_rate"])
        rec["spearman_delta"].append(b["spearman"])
        rec["table_motion"].append(float(np.linalg.norm(dP) / np.linalg.norm(self.P0)))
        rec["train_loss"].append(self.train_loss())
        self.model.train()


def ntk_training(data: dict[str, np.ndarray], D, positions, reg: dict[str, Any], opts: NTKOptions, seed: int,
                 device: str, progress: bool = True) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    r"""Train one [CLS] classifier by plain SGD and record its tangent kernel and its table's order against ``D``.

    Plain SGD, and this loop rather than :func:`posgeom.models.training.train`, for two reasons: the NTK
    argument is about gradient descent (AdamW, posgeom's optimiser, rescales each coordinate, and its
    dynamics are not those of the tangent kernel), and lazy training needs the centred, scaled output
    $\alpha (f_\theta - f_{\theta_0})$ with the loss divided by $\alpha^2$ (``output_scale``), which the shared
    loop does not offer.

    Parameters
    ----------
    data : dict
        ``ids``, ``mask`` (N, L), ``labels`` (N,), ``probe`` (m,) and ``pool`` (N_train,) row indices.
    D : ndarray of shape (k, k)
        The corpus geometry on ``positions`` (k,).
    reg : dict
        :class:`NTKRegime` fields.
    opts : NTKOptions

    Returns
    -------
    values, arrays
        As stored by :func:`run_ntk`.
    """
    import torch

    from ..progress import tqdm

    ids, mask, labels, probe, pool = (data[k] for k in ("ids", "mask", "labels", "probe", "pool"))
    model = ntk_classifier(data["vocab_size"], reg, opts.n_positions, seed)
    names = [k for k, _ in model.named_parameters() if "embeddings.word" not in k]
    table_name = next(k for k in names if k.endswith("embeddings.position.weight"))
    model.to(device)
    alpha = reg.get("output_scale")
    logits = _ScaledLogits(model, alpha)
    t_ids, t_mask = torch.as_tensor(ids[probe], device=device), torch.as_tensor(mask[probe], device=device)
    X, M, Y = (torch.as_tensor(t, device=device) for t in (ids[pool], mask[pool], labels[pool]))
    recorder = _NTKRecorder(model, logits, D, positions, (t_ids, t_mask), names, table_name, (X, M, Y))
    opt = torch.optim.SGD(model.parameters(), lr=reg["lr"])
    gen = torch.Generator().manual_seed(seed)
    losses = []
    recorder.record(0)
    model.train()
    for step in tqdm(range(1, opts.steps + 1), desc="SGD", unit="step", disable=not progress):
        idx = torch.randint(0, X.shape[0], (opts.batch_size,), generator=gen).to(device)
        loss = torch.nn.functional.cross_entropy(logits(X[idx], M[idx]), Y[idx])
        opt.zero_grad(set_to_none=True)
        # lazy training: the loss of f_alpha divided by alpha^2
        (loss / alpha**2 if alpha else loss).backward()
        opt.step()
        losses.append(float(loss.detach()))
        if step % opts.record_every == 0 or step == opts.steps:
            recorder.record(step)
    model.eval()
    with torch.no_grad():
        acc = float((logits(t_ids, t_mask).argmax(-1).cpu().numpy() == labels[probe]).mean())
    rec = recorder.rec
    arrays = {k: np.asarray(v, dtype=np.float64) for k, v in rec.items()}
    arrays.update(loss=np.asarray(losses), D=D, positions=positions)
    values = {"n_params_kernel": int(sum(p.numel() for k, p in model.named_parameters() if k in names)),
              "final": {k: float(v[-1]) for k, v in rec.items()}, "probe_accuracy": acc,
              "final_loss": float(np.mean(losses[-20:])), "final_train_loss": rec["train_loss"][-1]}
    return values, arrays


def run_ntk(settings: Settings | None = None, *, regime: str = "lazy", seed: int | None = None,
            force: bool = False, progress: bool = True, precomputed: tuple | None = None, **overrides) -> Result:
    """Train a [CLS] classifier with a learned table by SGD and record its kernel and table geometry.

    Parameters
    ----------
    regime : {"lazy", "lazy_small_init", "rich"}
        ``"lazy"``: lazy training (a large output scale, so the parameters barely move: the NTK regime);
        ``"lazy_small_init"``: the same with the table initialised near a point (``table_sigma``);
        ``"rich"``: narrow, large rate, plain output (:class:`NTKRegime`).
    seed : int, optional
        Initialisation and data-order seed (default ``settings.seed``).
    **overrides
        Fields of ``NTK_CONFIGS[scale]`` (:class:`NTKOptions`: ``steps``, ``batch_size``, ``n_positions``, ...),
        or a regime's changes as a dict (``lazy={"lr": 0.05}``, ...).
    precomputed : (values, arrays), optional
        What this run's computation returned in another process (:func:`run_ntk_all` under ``torchrun``):
        stored as the result unless a result made by the same code is stored already.

    Returns
    -------
    Result
        ``arrays``: ``step`` (r,), ``kernel_change`` (r,) and ``kernel_change_table`` (r,) relative
        Frobenius changes, ``violation``/``spearman`` of $P_t$ and ``violation_delta``/``spearman_delta`` of
        $\\Delta P_t$ (r,), ``table_motion`` $\\|\\Delta P_t\\|_F / \\|P_0\\|_F$ (r,), ``train_loss`` (r,) on the
        whole training pool, ``loss`` (steps,), ``D`` (n, n). ``values``: options, final numbers
        (:func:`ntk_training`), accuracy on the probes.
    """
    from ..models.threads import torch_threads
    from . import real_corpora as rc
    settings = _settings(settings)
    NTK_CONFIGS[settings.scale].regime(regime)
    # the options with ``overrides`` applied (by_scale's "paper" is the first argument with the changes)
    opts = by_scale(NTK_CONFIGS[settings.scale], **overrides).paper
    seed = settings.seed if seed is None else int(seed)
    reg = {k: v for k, v in as_params(opts.regime(regime)).items() if v is not None}
    device = resolve_device(settings.device)
    copts = rc.corpus_options(settings.scale, opts.corpus, n_positions=opts.n_positions, max_sequences=None)
    params = {"regime": regime, "model": reg,
              "ntk": {k: v for k, v in as_params(opts).items() if k not in REGIMES},
              "corpus": copts, "seed": seed, "data": rc.source_description(settings, copts)}

    def compute():
        if precomputed is not None:
            return precomputed
        cd = rc.corpus_geometry_of(settings, copts)
        ids, mask = cd.tokens.model_inputs()
        if cd.tokens.labels is None:
            raise ValueError(f"{copts['corpus']}/{copts['split']} has no labels: the [CLS] classifier needs them")
        order = np.random.default_rng(seed).permutation(ids.shape[0])
        probe, pool = order[:opts.probe_sequences], order[opts.probe_sequences:]
        if opts.train_sequences is not None:
            pool = pool[:opts.train_sequences]
        data = {"ids": ids, "mask": mask, "labels": cd.tokens.labels, "probe": probe, "pool": pool,
                "vocab_size": cd.tokens.vocab_size}
        # a model this small runs faster on one CPU thread than on two (posgeom.models.threads)
        with torch_threads(opts.threads, device):
            values, arrays = ntk_training(data, cd.D, cd.positions, reg, opts, seed, device, progress)
        return {"regime": regime, "model": reg, "seed": seed, "options": copts, **values}, arrays

    name = (f"[CLS] classifier d={reg['d_model']}, {reg['n_layers']} layer(s), SGD lr={reg['lr']}, "
            f"table sigma={reg.get('table_sigma', 0.02)}, output scale {reg.get('output_scale', 1)}")
    return Registry(settings.results_dir).run(
        f"monotonicity_ntk_{regime}", compute, params=params, scale=settings.scale, seed=seed, device=device,
        model=name, force=force,
    )


def run_ntk_all(settings: Settings | None = None, *, force: bool = False) -> dict[tuple[str, int], Result]:
    """Every run of the chapter, ``{(regime, seed): Result}``: each regime of :data:`REGIMES` over its seeds
    (``NTKOptions.seeds_of``).

    Under ``torchrun`` (an initialised process group of ``W`` processes; ``posgeom reproduce`` at paper scale
    with several GPUs) the runs are shared out, process ``r`` computing runs ``r, r + W, ...``; their
    results are gathered on every process and stored by rank 0. A run is determined by its regime and
    seed, so the stored results equal those of one process. The runs are independent and small, so
    splitting them over processes, rather than splitting each run's batches, keeps every GPU busy.
    """

    settings = _settings(settings)
    opts = NTK_CONFIGS[settings.scale]
    runs = [(regime, seed) for regime in REGIMES for seed in opts.seeds_of(regime)]
    rank, world = 0, 1
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            rank, world = dist.get_rank(), dist.get_world_size()
    except ImportError:  # pragma: no cover - torch is a dependency
        pass
    if world == 1:
        return {(regime, seed): run_ntk(settings, regime=regime, seed=seed, force=force) for regime, seed in runs}
    mine = {}
    for regime, seed in runs[rank::world]:
        # computed here; stored below by rank 0 with the others' runs
        result = run_ntk(settings, regime=regime, seed=seed, force=force, progress=False)
        mine[regime, seed] = (result.values, result.arrays)
    gathered: list = [None] * world
    dist.all_gather_object(gathered, mine)
    done = {key: out for part in gathered for key, out in part.items()}
    return {(regime, seed): run_ntk(settings, regime=regime, seed=seed, force=force, progress=False,
                                    precomputed=done[regime, seed])
            for regime, seed in runs}


__all__ = ["NTK_CONFIGS", "REGIMES", "NTKRegime", "NTKOptions", "ntk_classifier", "ntk_training", "run_ntk",
           "run_ntk_all"]
