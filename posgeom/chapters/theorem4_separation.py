r"""What the chapter "Theorem 4: training separates positions" reports, from its stored runs.

The runs of :mod:`posgeom.experiments.separation` and :mod:`posgeom.experiments.factorisation` are
stored as nested dictionaries and arrays (the registry's form); this module reads them back as typed
records (:func:`separation_run`, :func:`pretrained_table`, :func:`factorisation_outcome`), gives the
numbers the chapter quotes as one summary per section (glued by :func:`posgeom.notebooks.glue_fields`),
and builds the chapter's "Paper vs this book" rows, each decided by its rule in :mod:`posgeom.verdicts`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ..config import settings_or_default as _settings
from ..geometry.intervals import MIN_SEEDS, SeedInterval
from ..registry import Result
from ..registry.typed import as_record, stored
from ..experiments.separation import CONFIGS, Setup, chapter_run_count, final_separation_interval
from .. import verdicts as rules
from ..report import ComparisonRow, decided_rows
from ..wording import describe_model, describe_scales, describe_seeds, describe_sequences, describe_training, model_words
from .powered import design_summary, paired_text, plan_text
from .records import StoredConverged

__all__ = [
    "Spread", "TableState", "SeparationRun", "separation_run", "summary_table", "interval_table",
    "HeadlineSummary", "headline_summary", "PretrainedTable", "pretrained_table", "ControlsSummary",
    "controls_summary", "DecaySummary", "decay_summary", "shrink_factors", "FactorisationOutcome",
    "factorisation_outcome", "ConvergedSummary", "converged_summary", "converged_ratios", "comparison_rows", "Captions",
    "captions",
]

@dataclass(frozen=True)
class Spread:
    """A quantity over the training seeds: mean, standard deviation (ddof 1), lowest and highest seed."""

    mean: float
    std: float
    min: float
    max: float


@dataclass(frozen=True)
class TableState:
    """The geometry of a learned table at one step, over seeds: separation (raw and divided by the median
    pairwise distance), the median distance, and Spearman's ρ of the distances with the offset ``|i − j|`` (None where
    undefined: at a tied start every distance is 0)."""

    raw: Spread
    normalized: Spread
    median: Spread
    order_spearman: Spread | None = None


@dataclass(frozen=True, kw_only=True)
class SeparationRun:
    """A stored :func:`posgeom.experiments.separation.run_separation`, typed
    (:func:`posgeom.registry.typed.as_record`).

    Arrays ``separation``, ``separation_normalized``, ``median_distance``, ``order_spearman`` have shape
    (n_seeds, n_records), recorded at the training steps ``step``. The corpus facts are None where they do
    not apply (entropies: synthetic MLM corpora; vocabulary, training size and reach: real corpora).
    """

    corpus: str
    task: str
    init: str
    weight_decay: float
    seeds: tuple
    initial: TableState
    final: TableState
    # normalised separation of a Gaussian table of the same shape (mean of draws)
    random_reference: float = stored("random_reference.mean")
    eval_accuracy: Spread
    masked_loss: Spread | None = None  # MLM only: loss at the masked positions (nats)
    step: np.ndarray
    separation: np.ndarray
    separation_normalized: np.ndarray
    median_distance: np.ndarray
    order_spearman: np.ndarray
    entropy_with_position: float | None = None
    entropy_without_position: float | None = None
    vocab_size: int | None = None
    n_train: int | None = None
    reach: tuple | None = None    # sequences reaching each position (real corpora)
    interval_raw: SeedInterval | None = None         # 95% over seeds of the final separation
    interval_normalized: SeedInterval | None = None  # the same, normalised


def separation_run(result: Result) -> SeparationRun:
    """The typed view of a :func:`~posgeom.experiments.separation.run_separation` result; the 95 %
    intervals over seeds (:func:`~posgeom.experiments.separation.final_separation_interval`) where the run
    has at least :data:`~posgeom.geometry.intervals.MIN_SEEDS` seeds (the headline runs), else None."""
    run = as_record(result, SeparationRun)
    if len(run.seeds) < MIN_SEEDS:
        return run
    return replace(run, interval_raw=final_separation_interval(result, normalized=False),
                   interval_normalized=final_separation_interval(result))


def summary_table(runs: dict) -> pd.DataFrame:
    """One row per run (``{name: SeparationRun}``): separation and its normalised form at the start and
    the end (mean over seeds), the median distance and ρ with the offset ``|i − j|`` at the end, and the run's loss
    (MLM: masked-token loss) or test accuracy."""
    rows = {}
    for name, r in runs.items():
        row = {
            "sep at start": r.initial.raw.mean, "sep at end": r.final.raw.mean, "± (seeds)": r.final.raw.std,
            "seeds": len(r.seeds), "sep/median at start": r.initial.normalized.mean,
            "sep/median at end": r.final.normalized.mean, "median distance at end": r.final.median.mean,
            "ρ(distance, |i − j|) at end": r.final.order_spearman.mean if r.final.order_spearman else np.nan,
        }
        if r.masked_loss is not None:
            row["masked-token loss (nats)"] = r.masked_loss.mean
        else:
            row["test accuracy"] = r.eval_accuracy.mean
        rows[name] = row
    # one row per run, each column keeping its own type (a transposed frame would make the seeds 5.000)
    return pd.DataFrame.from_dict(rows, orient="index")


def interval_table(runs: dict) -> pd.DataFrame:
    """Per run, the 95% Student-t intervals over seeds of the final separation, raw and normalised."""
    return pd.DataFrame.from_dict({
        name: {"seeds": r.interval_raw.n, "sep(P) at end, mean [95% interval]": r.interval_raw.text("{:.3f}", with_t=False),
               "sep/median at end, mean [95% interval]": r.interval_normalized.text("{:.3f}", with_t=False)}
        for name, r in runs.items()}, orient="index")


@dataclass(frozen=True)
class HeadlineSummary:
    """The numbers the chapter quotes of its headline runs (drift corpus and SST-2, random start)."""

    drift_sep_end: float
    drift_sep_std: float
    drift_sepn_start: float
    drift_sepn_end: float
    drift_rho: float
    drift_sep_iv: str          # mean [95% interval] over the headline seeds
    sst2_sep_end: float
    sst2_sepn_end: float
    sst2_rho: float
    sst2_sep_iv: str
    random_ref: float          # a Gaussian table's normalised separation
    masked_loss: float         # drift, nats
    h_with: float              # entropy of a token given its position (drift), nats
    h_without: float           # the same without the position
    sst2_masked_loss: float
    sst2_vocab: int
    sst2_reach_last: int       # SST-2 sequences that reach the last position
    sst2_ntrain: int
    n_headline: int            # seeds of the headline runs
    t_headline: str            # the Student-t quantile of their interval


def headline_summary(drift: SeparationRun, sst2: SeparationRun) -> HeadlineSummary:
    """The :class:`HeadlineSummary` of the two headline runs."""
    iv = drift.interval_raw
    return HeadlineSummary(
        drift_sep_end=drift.final.raw.mean, drift_sep_std=drift.final.raw.std,
        drift_sepn_start=drift.initial.normalized.mean, drift_sepn_end=drift.final.normalized.mean,
        drift_rho=drift.final.order_spearman.mean, drift_sep_iv=iv.text("{:.3f}", with_t=False),
        sst2_sep_end=sst2.final.raw.mean, sst2_sepn_end=sst2.final.normalized.mean,
        sst2_rho=sst2.final.order_spearman.mean, sst2_sep_iv=sst2.interval_raw.text("{:.3f}", with_t=False),
        random_ref=drift.random_reference, masked_loss=drift.masked_loss.mean, h_with=drift.entropy_with_position,
        h_without=drift.entropy_without_position, sst2_masked_loss=sst2.masked_loss.mean, sst2_vocab=sst2.vocab_size,
        sst2_reach_last=sst2.reach[-1], sst2_ntrain=sst2.n_train, n_headline=iv.n, t_headline=f"{iv.t:.2f}",
    )


@dataclass(frozen=True)
class PretrainedTable:
    """A stored :func:`~posgeom.experiments.separation.run_pretrained_separation`, typed: per number of
    first positions ``n`` (``by_n``, a DataFrame indexed by ``n``), and each row's nearest distance."""

    pretrained: str
    by_n: pd.DataFrame
    nearest: np.ndarray

    def at(self, n: int) -> pd.Series:
        """Separation (raw, normalised), median distance, closest pair and the Gaussian reference over the first ``n`` rows."""
        return self.by_n.loc[n]


@dataclass(frozen=True)
class StoredPretrainedSeparation:
    """A stored ``run_pretrained_separation``, typed: the model, its numbers per count of first positions (keyed by
    the count as text), and each row's nearest distance."""

    pretrained: str
    by_n: dict[str, dict]
    nearest: np.ndarray


def pretrained_table(result: Result) -> PretrainedTable:
    """The typed view of a ``run_pretrained_separation`` result."""
    stored_table = as_record(result, StoredPretrainedSeparation)
    by_n = pd.DataFrame(stored_table.by_n).T
    by_n.index = by_n.index.astype(int)
    by_n = by_n.sort_index()  # the stored keys are text ("128" < "32"): the rows in the order of n
    by_n.index.name = "first n positions"
    return PretrainedTable(stored_table.pretrained, by_n, stored_table.nearest)


@dataclass(frozen=True)
class ControlsSummary:
    """Final separation, median distance and ρ with the offset ``|i − j|`` (means over seeds) of the three setups
    started tied: conditions hold, stationary corpus, order-insensitive loss."""

    sep_hold: float
    sep_stat: float
    sep_bag: float
    med_hold: float
    med_stat: float
    med_bag: float
    rho_hold: float
    rho_stat: float
    rho_bag: float


def controls_summary(tied: dict) -> ControlsSummary:
    """The :class:`ControlsSummary` of ``{Setup: SeparationRun}`` (the tied-start runs)."""
    f = [tied[setup].final for setup in Setup]
    return ControlsSummary(*(x.raw.mean for x in f), *(x.median.mean for x in f), *(x.order_spearman.mean for x in f))


def shrink_factors(run: SeparationRun) -> np.ndarray:
    """Per seed, how much of its scale a table keeps: final / initial median pairwise distance."""
    return run.median_distance[:, -1] / run.median_distance[:, 0]


@dataclass(frozen=True)
class DecaySummary:
    """The weight-decay runs: the decay, and per setup the final median distance, its share of the initial
    one and the final separation (means over seeds); ρ of the conditions-hold table; the order-insensitive
    model's test accuracy."""

    wd: float
    med_hold: float
    med_stat: float
    med_bag: float
    shrink_hold: float
    shrink_stat: float
    shrink_bag: float
    sep_hold: float
    sep_stat: float
    sep_bag: float
    rho_hold: float
    bag_acc: float


def decay_summary(decay: dict) -> DecaySummary:
    """The :class:`DecaySummary` of ``{Setup: SeparationRun}`` (the weight-decay runs)."""
    runs = [decay[setup] for setup in Setup]
    return DecaySummary(
        decay[Setup.HOLD].weight_decay, *(r.final.median.mean for r in runs),
        *(r.final.median.mean / r.initial.median.mean for r in runs), *(r.final.raw.mean for r in runs),
        decay[Setup.HOLD].final.order_spearman.mean, decay[Setup.CONTROL].eval_accuracy.mean,
    )


@dataclass(frozen=True)
class FactorisationOutcome:
    """A stored :func:`~posgeom.experiments.factorisation.run_factorisation_gap`, typed
    (:func:`posgeom.registry.typed.as_record`).

    ``relative`` (m,) is the real gap per kept position ``positions``; ``placebo_relative``
    (n_placebo, m) the placebos' and ``placebo_band95`` (m,) their 95th percentile. The scalars are
    medians over positions (``real``, ``placebo``) and over pairs of positions (``pair_*``)."""

    pretrained: str
    n_texts: int
    positions: np.ndarray = stored("real__positions")
    relative: np.ndarray = stored("real__relative")
    placebo_relative: np.ndarray = stored("placebo__relative")
    placebo_band95: np.ndarray = stored("placebo__band95")
    real: float = stored("real.relative")
    placebo: float = stored("placebo.relative")
    pair_real: float = stored("real.pair_relative")
    pair_placebo: float = stored("placebo.pair_relative")
    # positions whose real gap is above the placebos' 95th percentile
    above: int = stored("positions_above_placebo_95")
    npos: int = field(init=False)  # the positions kept, as many as the stored list of them

    def __post_init__(self):
        object.__setattr__(self, "npos", len(self.positions))


def factorisation_outcome(result: Result) -> FactorisationOutcome:
    """The typed view of a ``run_factorisation_gap`` result (its numbers glued as ``t4gap_<field>``)."""
    return as_record(result, FactorisationOutcome)


@dataclass(frozen=True)
class ConvergedSummary:
    """Theorem 4's CPU design (:func:`posgeom.experiments.separation_converged.run_separation_converged`) as the
    chapter quotes it (glued as ``t4cv_<field>``); means over the decision's seeds unless said otherwise."""

    model: str              # the model every run of the design trains
    weight_decay: float
    steps: int
    ceiling: float          # the sampling ceiling: largest Hellinger distance between stationary positions
    least_resolved: float   # the smallest population Hellinger distance of a resolved pair
    n_resolved: int
    n_pairs: int
    n_unresolved: int
    seeds: int
    ratio: float            # separation over the resolved pairs / the stationary floor: 10 ** mean log10 ratio
    ratio_low: float        # ... its 95% interval, as ratios
    ratio_high: float
    sep_hold: float         # separation over the resolved pairs, conditions hold
    sep_floor: float        # the same pairs on the stationary corpus
    control: float          # median over seeds of the order-insensitive control's separation over those pairs
    unresolved_ratio: float  # the same ratio over the pairs below the ceiling
    sep_all_hold: float     # separation over all pairs
    sep_all_floor: float
    loss_hold: float        # training loss at the end of each setup's run
    loss_floor: float
    loss_control: float
    rho_hold: float         # the conditions-hold table's correlation with |i − j|


def converged_summary(result: Result) -> ConvergedSummary:
    """The :class:`ConvergedSummary` of a stored design."""
    d, design = as_record(result, StoredConverged), result.manifest["params"]["design"]
    runs, diff = d.runs, d.difference
    hold, floor, control = (setup.label for setup in Setup)  # the stored values are keyed by the setups' labels

    def mean(f):
        return float(np.mean([f(r) for r in runs]))

    return ConvergedSummary(
        model=result.manifest["model"], weight_decay=float(design["weight_decay"]), steps=int(design["steps"]),
        ceiling=d.ceiling, least_resolved=d.least_resolved, n_resolved=d.n_resolved, n_pairs=d.n_pairs,
        n_unresolved=d.n_pairs - d.n_resolved, seeds=len(runs),
        ratio=10 ** diff.mean, ratio_low=10 ** diff.low, ratio_high=10 ** diff.high,
        sep_hold=mean(lambda r: 10 ** r.a), sep_floor=mean(lambda r: 10 ** r.b),
        control=float(np.median([r.control for r in runs])), unresolved_ratio=10 ** mean(lambda r: r.unresolved),
        sep_all_hold=mean(lambda r: r.sep_all[hold]), sep_all_floor=mean(lambda r: r.sep_all[floor]),
        loss_hold=mean(lambda r: r.loss[hold]), loss_floor=mean(lambda r: r.loss[floor]),
        loss_control=mean(lambda r: r.loss[control]), rho_hold=mean(lambda r: r.order_spearman),
    )


def converged_ratios(result: Result) -> pd.DataFrame:
    """Per decision seed, log10 of the conditions-hold separation over the stationary floor, over the resolved
    pairs and over the unresolved ones (the chapter's figure)."""
    return pd.DataFrame([{"seed": r.seed, "resolved pairs": r.difference, "unresolved pairs": r.unresolved}
                         for r in as_record(result, StoredConverged).runs]).set_index("seed")


def _converged_row(converged: Result):
    """C2 trained with weight decay against its controls, decided by :func:`posgeom.verdicts.c2_converged`."""

    c, p, d = converged_summary(converged), design_summary(converged), as_record(converged, StoredConverged)
    return ComparisonRow(
        "C2", ours=(f"with weight decay {c.weight_decay:g} for {c.steps:,} steps, the {c.n_resolved} pairs whose "
                    f"marginals the sample tells apart end at {c.ratio:.2f}× the stationary floor "
                    f"[{c.ratio_low:.2f}, {c.ratio_high:.2f}] (log10 ratio "
                    f"{paired_text(d.difference, '{:+.3f}')}); the order-insensitive control "
                    f"ends at {c.control:.1e}{p.stale}"),
        scale=p.scale, model=converged.manifest["model"] + " (CPU)", corpus="synthetic drift and stationary",
        options=f"MLM and bag-of-tokens loss, AdamW weight decay {c.weight_decay:g}; {plan_text(converged)}",
        decision=rules.c2_converged(d.difference, [r.control for r in d.runs]),
    )


def comparison_rows(headline: dict, tied: dict, decay: dict, pretrained: PretrainedTable, settings=None,
                    converged: Result | None = None) -> list:
    """The chapter's "Paper vs this book" rows for C2, each decided by its rule in :mod:`posgeom.verdicts`.

    Parameters
    ----------
    headline : dict of str to SeparationRun
        The runs under the theorem's conditions from a random start (``"drift"``, ``"SST-2"``, ...).
    tied, decay : dict of posgeom.experiments.separation.Setup to SeparationRun
        The three setups from a tied start, and with weight decay.
    pretrained : PretrainedTable
    settings : Settings, optional
        The scale in force (its model shape names the model of each row).
    converged : Result, optional
        :func:`posgeom.experiments.separation_converged.run_separation_converged`: its row follows the others.

    Returns
    -------
    list of posgeom.report.ComparisonRow
    """

    settings = _settings(settings)
    conf = CONFIGS[settings.scale]
    model = describe_model(conf.model, detail="from scratch")
    fmt = "{:.3f}"

    def broken_min():
        # the controls that break a condition, from a tied start: do they separate too?
        return [tied[k].final.raw.min for k in (Setup.STATIONARY, Setup.CONTROL)]

    def separation_row():
        drift, sst2 = headline["drift"].interval_raw, headline["SST-2"].interval_raw
        first64 = pretrained.at(64)
        return ComparisonRow(
            "C2", ours=(f"sep(P) > 0 at the end of every run: drift {drift.text(fmt, with_t=False)}, SST-2 "
                        f"{sst2.text(fmt, with_t=False)} (mean [95% interval], {drift.n} seeds); pretrained "
                        f"{first64['raw']:.3f} (first 64 positions, one table: no interval)"),
            scale=settings.scale, model=f"{model}; {pretrained.pretrained}", corpus="synthetic drift; SST-2 train",
            options=f"MLM, N(0, 0.02²) init, no weight decay, {drift.n} seeds",
            decision=rules.c2_separation([drift, sst2], broken_min()),
        )

    def broken_row():
        hold, stat_, bag_ = (tied[k].final.order_spearman.mean for k in tuple(Setup))
        d = headline["drift"]
        return ComparisonRow(
            "C2", ours=(f"normalised separation falls during training ({d.initial.normalized.mean:.2f} → "
                        f"{d.final.normalized.mean:.2f}); from a tied start the broken-condition runs "
                        f"separate too ({tied[Setup.STATIONARY].final.raw.mean:.3f}, "
                        f"{tied[Setup.CONTROL].final.raw.mean:.3f}) into "
                        f"unordered clouds (ρ with |i − j|: {stat_:.2f}, {bag_:.2f} against {hold:.2f} when the "
                        f"conditions hold; {len(conf.seeds)} seeds, ranges in the tables above)"),
            scale=settings.scale, model=model, corpus="synthetic drift and stationary",
            options="MLM and bag-of-tokens loss, tied and Gaussian init",
            decision=rules.c2_broken_conditions(broken_min(), hold, [stat_, bag_]),
            conditions={"statistics": "stationary", "loss": "order-insensitive"},
        )

    def decay_row():
        wd = decay[Setup.HOLD].weight_decay
        hold, control = shrink_factors(decay[Setup.HOLD]), shrink_factors(decay[Setup.CONTROL])
        return ComparisonRow(
            "C2", ours=(f"with weight decay {wd:g}: the order-insensitive table collapses to "
                        f"{control.min():.1%}–{control.max():.1%} of its scale, the conditions-hold table "
                        f"keeps {hold.min():.1%}–{hold.max():.1%} (range over {len(conf.seeds)} seeds)"),
            scale=settings.scale, model=model, corpus="synthetic drift and stationary",
            options=f"AdamW weight decay {wd:g} (exaggerated so that its effect shows within the run), {conf.train.steps} steps",
            decision=rules.c2_weight_decay(control, hold),
        )

    converged_rows = [("C2", lambda: _converged_row(converged))] if converged is not None else []
    return decided_rows([("C2", separation_row), ("C2", broken_row), ("C2", decay_row), *converged_rows], settings)


@dataclass(frozen=True)
class Captions:
    """What the chapter's figure captions state about the runs, from the settings in force (glued as
    ``t4cap_<field>``), so that a caption is right at both scales."""

    scale: str
    headline_seeds: str   # "seeds 0–4"
    seeds: str            # of the tied-start and weight-decay runs
    corpora: str          # the headline runs' corpora
    stationary: str       # the stationary family's shape
    model: str
    training: str         # optimiser, batch, steps
    steps: str            # training steps of every run, e.g. "200"
    weight_decay: str
    gap_positions: int    # the factorisation check's positions
    gap_layer: int
    quick_runs: str       # the training runs at each scale, for the "What this chapter needs" box
    paper_runs: str
    models: str           # the encoder's shape at both scales, in words, said once in the box


def captions(settings=None) -> Captions:
    """The :class:`Captions` of the chapter at ``settings.scale`` (:data:`posgeom.experiments.separation.CONFIGS`)."""

    settings = _settings(settings)
    conf = CONFIGS[settings.scale]
    syn, sst2, imdb = conf.synthetic, conf.real.sst2, conf.real.imdb
    shape = f"{syn.n_positions} positions, {syn.vocab_size:,} tokens"
    corpora = (f"synthetic drift corpus ({shape}, {describe_sequences(syn.n_sequences)}) and SST-2 train "
               f"({describe_sequences(sst2.n_sequences, 'phrases', random=True)}, bert-base-uncased WordPiece "
               f"with [CLS]/[SEP], {sst2.n_positions} positions)")
    if settings.scale == "paper":  # run_chapter's headline adds IMDB at paper scale
        corpora += (f", and IMDB train ({describe_sequences(imdb.n_sequences, 'reviews', random=True)}, "
                    f"{imdb.n_positions} positions)")
    return Captions(scale=settings.scale, headline_seeds=describe_seeds(conf.headline_seeds),
                    seeds=describe_seeds(conf.seeds), corpora=corpora, stationary=shape,
                    model=describe_model(conf.model), training=describe_training(conf.train),
                    steps=f"{conf.train.steps:,}",
                    weight_decay=f"{conf.weight_decay:g}", gap_positions=int(conf.gap.n_positions),
                    gap_layer=int(conf.gap.layer), quick_runs=_runs("quick"), paper_runs=_runs("paper"),
                    models=describe_scales(*(model_words(CONFIGS[s].model) for s in ("quick", "paper"))))


def _runs(scale: str) -> str:
    """The chapter's training runs at ``scale`` in words (:func:`posgeom.experiments.separation.run_chapter`):
    how many, the model, positions and steps."""

    conf = CONFIGS[scale]
    n = chapter_run_count(scale)
    positions = f"{conf.synthetic.n_positions} positions" + (
        f" (IMDB {conf.real.imdb.n_positions})" if scale == "paper" else "")
    # the encoder's shape is said once, in the box's "Model" line (Captions.models)
    return f"{n} training runs of {conf.train.steps:,} steps each on {positions}"
