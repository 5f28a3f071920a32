r"""Theorem 4 trained with a force towards collapse, against its controls, on the CPU (chapter *Theorem 4*).

The headline runs start from a Gaussian table without weight decay, so their separation is inherited from
the start. This design trains the chapter's quick model with AdamW's weight decay, which pulls every weight
the loss does not need towards 0, in the three setups of :class:`posgeom.experiments.separation.Setup`:
under the conditions; on a stationary corpus, whose table the loss ignores but mini-batch noise holds up
(the **floor**); and with an order-insensitive loss that reaches 0, which shows the run can collapse a table.

The condition $\mu_i \ne \mu_j$ is about the population: on a sample, two positions with equal marginals
differ by up to the :func:`sampling_ceiling`, so only the pairs above it (:func:`resolved_pairs`) can be
told apart. The measure, paired by seed, is
$\log_{10}\operatorname{sep}_R(P_{\text{hold}}) - \log_{10}\operatorname{sep}_R(P_{\text{stationary}})$ over
the resolved pairs $R$, read by :func:`posgeom.verdicts.c2_converged` over the seeds a pilot sizes
(:func:`posgeom.experiments.paired_design.run_paired_design`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from .. import geometry as geo
from ..config import resolve_device, settings_or_default as _settings
from ..corpora.identifiers import SyntheticFamily
from ..corpora.synthetic import population_marginals
from ..geometry.counting import positional_counts
from ..geometry.marginals import positional_marginals
from ..models.separation_training import train_separation
from ..registry import Result
from ..validation import upper
from ..verdicts import FLOOR_EFFECT
from . import separation as sp
from .separation import Setup
from .paired_design import PairedDesign, PairedOutcome, PairedSeed, run_paired_design
from .settings import as_params, store_result

__all__ = ["ConvergedDesign", "CONVERGED_DESIGN", "ConvergedSeed", "StoredSeparationConverged", "sampling_ceiling",
           "resolved_pairs", "run_separation_converged"]


@dataclass(frozen=True)
class ConvergedDesign:
    """The design of :func:`run_separation_converged`, fixed before it runs."""

    #: Training steps of every run: ten times the chapter's quick runs. The order-insensitive control has
    #: collapsed by then in every pilot seed (separation 1e-5 to 1e-4 at step 2,000 with weight decay 3).
    steps: int = 2_000
    #: AdamW's decoupled weight decay: the strongest of the pilots (1, 3, 15) under which the order-insensitive
    #: control still fits its own task (training loss about 0 at 3; 0.2 to 0.4 at 15, where the decay overpowers
    #: the loss) and collapses in every seed (at 1, two of five kept 1e-2): its collapse is then the loss's
    #: indifference to the table, not the decay winning against the loss.
    weight_decay: float = 3.0
    #: The paired design: sized for the rule's smallest effect that matters, a quarter above the floor
    #: (posgeom.verdicts.FLOOR_EFFECT, log10 1.25, read from the rule so the two cannot drift apart), the pilot,
    #: the cap of posgeom.verdicts.MAX_SEEDS seeds.
    paired: PairedDesign = field(default_factory=lambda: PairedDesign(effect=FLOOR_EFFECT))
    #: The table's geometry is recorded every this many steps.
    every: int = 100


@dataclass(frozen=True, kw_only=True)
class ConvergedSeed(PairedSeed):
    """One seed: ``a``, ``b`` log10 separations over the resolved pairs (conditions hold, stationary corpus).

    The per-setup mappings are keyed by :class:`~posgeom.experiments.separation.Setup`; ``unresolved`` is the same
    difference over the unresolved pairs, ``control`` the order-insensitive control's separation over the resolved
    pairs.
    """

    control: float
    unresolved: float
    sep_all: dict[Setup, float]   # final separation over every pair
    median: dict[Setup, float]    # final median distance
    loss: dict[Setup, float]      # training loss over the last ``every`` steps
    order_spearman: float       # of the run under the conditions


@dataclass(frozen=True, kw_only=True)
class StoredSeparationConverged(PairedOutcome):
    """A stored :func:`run_separation_converged`: the design, the sampling ceiling and the pairs above it."""

    pilot: tuple[ConvergedSeed, ...]
    runs: tuple[ConvergedSeed, ...]
    ceiling: float
    n_resolved: int
    n_pairs: int
    least_resolved: float       # the smallest population distance of a resolved pair
    device: str


#: The design, the same at every scale (the smallest model that keeps the theorem's conditions is a CPU model).
CONVERGED_DESIGN = ConvergedDesign()


def sampling_ceiling(input_ids, n_positions: int, vocab_size: int) -> float:
    r"""The largest Hellinger distance between the sample marginals of two positions: what sampling alone makes.

    ``input_ids`` (N, L) holds sequences without padding, ``L >= n_positions``; the result is
    $\max_{i < j} H(\hat\mu_i, \hat\mu_j)$ (chord Hellinger).
    """
    counts = positional_counts(np.asarray(input_ids), n_positions, vocab_size)
    return float(upper(geo.hellinger_matrix(positional_marginals(counts, on_low_count="raise").probs)).max())


def resolved_pairs(population, ceiling: float) -> np.ndarray:
    r"""Mask over the pairs $i < j$ (order of :func:`posgeom.validation.upper`) whose marginals differ by > ``ceiling``.

    ``population`` (n, v) holds the exact marginals $\mu_i$; ``ceiling`` is the :func:`sampling_ceiling` of a
    corpus of the same size.
    """
    if not (np.isfinite(ceiling) and ceiling >= 0):
        raise ValueError(f"ceiling must be a Hellinger distance >= 0, got {ceiling!r}")
    return upper(geo.hellinger_matrix(population)) > ceiling


def _pair_separation(distances: np.ndarray, pairs: np.ndarray) -> float:
    return float(upper(distances)[pairs].min())


def run_separation_converged(settings=None, *, force: bool = False, design: ConvergedDesign | None = None) -> Result:
    r"""The three setups of Theorem 4 trained with weight decay from the same seeds, over the seeds a pilot sizes.

    The record: :class:`StoredSeparationConverged`, a :class:`ConvergedSeed` per seed.
    """
    settings = _settings(settings)
    design = CONVERGED_DESIGN if design is None else design
    conf = sp.CONFIGS["quick"]  # the smallest model and corpora that keep the theorem's conditions
    c = conf.synthetic
    device = resolve_device(settings.device)
    shape = as_params(conf.model)
    # the chapter's quick training at the design's length and records
    training = replace(conf.train, steps=design.steps, every=design.every)
    data, facts = {}, {}

    def prepare():
        # the corpora are the same for every seed: built once, inside the stored computation
        for setup in Setup:
            data[setup] = sp.separation_data(setup.corpus, setup.task, conf, seed=settings.seed)
        stationary = data[Setup.STATIONARY]
        ceiling = sampling_ceiling(stationary.train["input_ids"], c.n_positions, stationary.vocab_size)
        population = population_marginals(SyntheticFamily.DRIFT, n_positions=c.n_positions, vocab_size=c.vocab_size,
                                          seed=settings.seed)
        pairs = resolved_pairs(population, ceiling)
        if pairs.sum() < 1 or pairs.all():
            raise ValueError(f"{int(pairs.sum())} of {pairs.size} pairs lie above the sampling ceiling {ceiling:.3g}: "
                             "the design needs both resolved and unresolved pairs; change the corpus size")
        facts.update(ceiling=ceiling, n_resolved=int(pairs.sum()), n_pairs=int(pairs.size),
                     least_resolved=float(upper(geo.hellinger_matrix(population))[pairs].min()), pairs=pairs)

    def measure(seed: int) -> dict:
        if not data:
            prepare()
        pairs = facts["pairs"]
        out = {"sep_all": {}, "median": {}, "loss": {}}
        finals = {}
        for setup in Setup:
            runs = train_separation(data[setup], task=setup.task, init="normal", weight_decay=design.weight_decay,
                                    seeds=(seed,), shape=shape, **as_params(training), device=device, threads=1,
                                    progress=False)
            finals[setup] = runs.final_distances[0]
            out["sep_all"][setup] = float(runs.separation[0, -1])
            out["median"][setup] = float(runs.median_distance[0, -1])
            out["loss"][setup] = float(runs.loss[0, -design.every:].mean())
            if setup is Setup.HOLD:
                out["order_spearman"] = float(runs.order_spearman[0, -1])
        # log10 sep_R(P_hold) − log10 sep_R(P_stationary): the separation over the resolved pairs against the floor
        a, b = (np.log10(_pair_separation(finals[k], pairs)) for k in (Setup.HOLD, Setup.STATIONARY))
        unresolved = (np.log10(_pair_separation(finals[Setup.HOLD], ~pairs))
                      - np.log10(_pair_separation(finals[Setup.STATIONARY], ~pairs)))
        return dict(a=a, b=b, control=_pair_separation(finals[Setup.CONTROL], pairs), unresolved=float(unresolved),
                    **out)

    def compute():
        values = run_paired_design(measure, design.paired, desc="C2 design")
        return StoredSeparationConverged.of(values, **{k: v for k, v in facts.items() if k != "pairs"}, device=device)

    params = dict(design=as_params(design), model=shape, train=as_params(training), corpus=as_params(c),
                  setups=sp.SETUPS, data_seed=settings.seed)
    return store_result(settings, "separation.converged", compute, params, force, device=device,
                        model=f"{conf.model.n_layers}-layer encoder of width {conf.model.d_model} (posgeom.models)")
