r"""What the chapter "Theorem 4: training separates positions" reports, from its stored runs: the runs of
:mod:`posgeom.experiments.separation` and :mod:`posgeom.experiments.factorisation` read back typed, the numbers the
chapter quotes as one mapping per section (glued by :func:`posgeom.notebooks.glue_fields`), and its "Paper vs this
book" rows, each decided by its rule in :mod:`posgeom.verdicts`."""

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

__all__ = ["Spread", "TableState", "SeparationRun", "separation_run", "summary_table", "interval_table",
           "headline_summary", "PretrainedTable", "pretrained_table", "controls_summary", "decay_summary",
           "shrink_factors", "FactorisationOutcome", "factorisation_outcome", "converged_summary", "converged_ratios",
           "comparison_rows", "captions"]

#: The interval over seeds as the chapter quotes it: "0.106 [0.100, 0.113]".
_IV = "{:.3f}"


@dataclass(frozen=True)
class Spread:
    """A quantity over the training seeds: mean, standard deviation (ddof 1), lowest and highest seed."""

    mean: float
    std: float
    min: float
    max: float


@dataclass(frozen=True)
class TableState:
    """A learned table at one step, over seeds: separation (raw, over the median pairwise distance), that median,
    and Spearman's ρ of the distances with the offset ``|i − j|`` (None at a tied start: every distance is 0)."""

    raw: Spread
    normalized: Spread
    median: Spread
    order_spearman: Spread | None = None


@dataclass(frozen=True, kw_only=True)
class SeparationRun:
    """A stored :func:`posgeom.experiments.separation.run_separation`, typed: arrays ``separation``,
    ``separation_normalized``, ``median_distance``, ``order_spearman`` of shape (n_seeds, n_records), recorded at the
    training steps ``step``; corpus facts None where they do not apply (entropies: synthetic MLM corpora;
    vocabulary, training size and reach: real corpora)."""

    weight_decay: float
    seeds: tuple
    initial: TableState
    final: TableState
    random_reference: float = stored("random_reference.mean")  # sep / median of a Gaussian table (mean of draws)
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
    """The typed view of a ``run_separation`` result, with its 95 % intervals over seeds
    (:func:`~posgeom.experiments.separation.final_separation_interval`) where it has at least
    :data:`~posgeom.geometry.intervals.MIN_SEEDS` seeds (the headline runs)."""
    run = as_record(result, SeparationRun)
    return run if len(run.seeds) < MIN_SEEDS else replace(
        run, interval_raw=final_separation_interval(result, normalized=False),
        interval_normalized=final_separation_interval(result))


def summary_table(runs: dict) -> pd.DataFrame:
    """One row per run (``{name: SeparationRun}``): means over seeds of the separation (raw, normalised) at the start
    and the end, the median distance and ρ with ``|i − j|`` at the end, and the masked-token loss or test accuracy."""
    rows = {name: {
        "sep at start": r.initial.raw.mean, "sep at end": r.final.raw.mean, "± (seeds)": r.final.raw.std,
        "seeds": len(r.seeds), "sep/median at start": r.initial.normalized.mean,
        "sep/median at end": r.final.normalized.mean, "median distance at end": r.final.median.mean,
        "ρ(distance, |i − j|) at end": r.final.order_spearman.mean if r.final.order_spearman else np.nan,
        **({"masked-token loss (nats)": r.masked_loss.mean} if r.masked_loss is not None
           else {"test accuracy": r.eval_accuracy.mean}),
    } for name, r in runs.items()}
    # one row per run, each column keeping its own type (a transposed frame would make the seeds 5.000)
    return pd.DataFrame.from_dict(rows, orient="index")


def interval_table(runs: dict) -> pd.DataFrame:
    """Per run, the 95% Student-t intervals over seeds of the final separation, raw and normalised."""
    return pd.DataFrame.from_dict({
        name: {"seeds": r.interval_raw.n, "sep(P) at end, mean [95% interval]": r.interval_raw.text(_IV, with_t=False),
               "sep/median at end, mean [95% interval]": r.interval_normalized.text(_IV, with_t=False)}
        for name, r in runs.items()}, orient="index")


def headline_summary(drift: SeparationRun, sst2: SeparationRun) -> dict:
    """The numbers the chapter quotes of its headline runs (drift corpus and SST-2, random start), glued as
    ``t4_<name>`` (``sep``: raw separation, ``sepn``: normalised, means over seeds; ``h_with``/``h_without``: the
    drift corpus's entropy of a token with and without its position; ``t_headline``: the interval's t quantile)."""
    iv = drift.interval_raw
    return dict(
        drift_sep_end=drift.final.raw.mean, drift_sep_std=drift.final.raw.std,
        drift_sepn_start=drift.initial.normalized.mean, drift_sepn_end=drift.final.normalized.mean,
        drift_rho=drift.final.order_spearman.mean, drift_sep_iv=iv.text(_IV, with_t=False),
        sst2_sep_end=sst2.final.raw.mean, sst2_sepn_end=sst2.final.normalized.mean,
        sst2_rho=sst2.final.order_spearman.mean, sst2_sep_iv=sst2.interval_raw.text(_IV, with_t=False),
        random_ref=drift.random_reference, masked_loss=drift.masked_loss.mean, h_with=drift.entropy_with_position,
        h_without=drift.entropy_without_position, sst2_masked_loss=sst2.masked_loss.mean, sst2_vocab=sst2.vocab_size,
        sst2_reach_last=sst2.reach[-1], sst2_ntrain=sst2.n_train, n_headline=iv.n, t_headline=f"{iv.t:.2f}")


@dataclass(frozen=True)
class PretrainedTable:
    """A stored ``run_pretrained_separation``, typed: per number of first positions ``n`` the separation, median
    distance, closest pair and Gaussian reference (``by_n``); each row's distance to its nearest other row."""

    pretrained: str
    by_n: pd.DataFrame
    nearest: np.ndarray


def pretrained_table(result: Result) -> PretrainedTable:
    """The typed view of a ``run_pretrained_separation`` result."""
    table = as_record(result, PretrainedTable)  # by_n stored as {"<n>": {...}}: DataFrame.from_dict, a column per n
    # one row per n, in the order of n (the stored keys are text: "128" < "32")
    return replace(table, by_n=table.by_n.T.rename(index=int).sort_index().rename_axis("first n positions"))


#: The glue suffixes of the three setups, in the order of :class:`~posgeom.experiments.separation.Setup`.
_SETUPS = ("hold", "stat", "bag")


def controls_summary(tied: dict) -> dict:
    """Final separation, median distance and ρ with the offset ``|i − j|`` (means over seeds) of the three setups
    started tied (``{Setup: SeparationRun}``), glued as ``t4tied_<quantity>_<setup>``."""
    return {f"{quantity}_{short}": getattr(tied[setup].final, state).mean
            for quantity, state in (("sep", "raw"), ("med", "median"), ("rho", "order_spearman"))
            for short, setup in zip(_SETUPS, Setup)}


def shrink_factors(run: SeparationRun) -> np.ndarray:
    """Per seed, how much of its scale a table keeps: final / initial median pairwise distance."""
    return run.median_distance[:, -1] / run.median_distance[:, 0]


def decay_summary(decay: dict) -> dict:
    """The weight-decay runs, glued as ``t4wd_<name>``: per setup the final median distance, its share of the initial
    one and the final separation (means over seeds); ρ of the conditions-hold table; the control's accuracy."""
    runs = {short: decay[setup] for short, setup in zip(_SETUPS, Setup)}
    return {"wd": runs["hold"].weight_decay, **{f"med_{k}": r.final.median.mean for k, r in runs.items()},
            **{f"shrink_{k}": r.final.median.mean / r.initial.median.mean for k, r in runs.items()},
            **{f"sep_{k}": r.final.raw.mean for k, r in runs.items()},
            "rho_hold": runs["hold"].final.order_spearman.mean, "bag_acc": runs["bag"].eval_accuracy.mean}


@dataclass(frozen=True)
class FactorisationOutcome:
    """A stored :func:`~posgeom.experiments.factorisation.run_factorisation_gap`, typed (glued as ``t4gap_<field>``).

    ``relative`` (m,) is the real gap per kept position ``positions``; ``placebo_relative`` (n_placebo, m) the
    placebos' and ``placebo_band95`` (m,) their 95th percentile. The scalars are medians over positions (``real``,
    ``placebo``) and over pairs of positions (``pair_*``)."""

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
    above: int = stored("positions_above_placebo_95")  # positions whose real gap tops the placebos' 95th percentile
    npos: int = field(init=False)  # the positions kept, as many as the stored list of them

    def __post_init__(self):
        object.__setattr__(self, "npos", len(self.positions))


def factorisation_outcome(result: Result) -> FactorisationOutcome:
    """The typed view of a ``run_factorisation_gap`` result."""
    return as_record(result, FactorisationOutcome)


def converged_summary(result: Result) -> dict:
    """Theorem 4's CPU design (``run_separation_converged``) as the chapter quotes it (glued as ``t4cv_<name>``);
    means over the decision's seeds (the order-insensitive ``control``'s separation: the median)."""
    d, design = as_record(result, StoredConverged), result.manifest["params"]["design"]
    runs, diff = d.runs, d.difference  # per decision seed; the paired log10 ratio over them
    hold, floor, control = (setup.label for setup in Setup)  # the stored values are keyed by the setups' labels

    def mean(f):
        return float(np.mean([f(r) for r in runs]))

    return dict(
        model=result.manifest["model"], weight_decay=float(design["weight_decay"]), steps=int(design["steps"]),
        # the sampling ceiling (largest Hellinger distance between stationary positions); the least resolved pair's
        ceiling=d.ceiling, least_resolved=d.least_resolved, n_resolved=d.n_resolved, n_pairs=d.n_pairs,
        n_unresolved=d.n_pairs - d.n_resolved, seeds=len(runs),
        # separation over the resolved pairs / the stationary floor: 10 ** mean log10 ratio [95% interval]
        ratio=10 ** diff.mean, ratio_low=10 ** diff.low, ratio_high=10 ** diff.high,
        sep_hold=mean(lambda r: 10 ** r.a), sep_floor=mean(lambda r: 10 ** r.b),
        control=float(np.median([r.control for r in runs])), unresolved_ratio=10 ** mean(lambda r: r.unresolved),
        sep_all_hold=mean(lambda r: r.sep_all[hold]), sep_all_floor=mean(lambda r: r.sep_all[floor]),
        loss_hold=mean(lambda r: r.loss[hold]), loss_floor=mean(lambda r: r.loss[floor]),
        loss_control=mean(lambda r: r.loss[control]), rho_hold=mean(lambda r: r.order_spearman))


def converged_ratios(result: Result) -> pd.DataFrame:
    """Per decision seed, log10 of the conditions-hold separation over the stationary floor, over the resolved pairs
    and over the unresolved ones (the chapter's figure)."""
    return pd.DataFrame([{"seed": r.seed, "resolved pairs": r.difference, "unresolved pairs": r.unresolved}
                         for r in as_record(result, StoredConverged).runs]).set_index("seed")


def _converged_row(converged: Result):
    """C2 trained with weight decay against its controls, decided by :func:`posgeom.verdicts.c2_converged`."""
    c, p, d = converged_summary(converged), design_summary(converged), as_record(converged, StoredConverged)
    return ComparisonRow(
        "C2", ours=(f"with weight decay {c['weight_decay']:g} for {c['steps']:,} steps, the {c['n_resolved']} pairs "
                    f"whose marginals the sample tells apart end at {c['ratio']:.2f}× the stationary floor "
                    f"[{c['ratio_low']:.2f}, {c['ratio_high']:.2f}] (log10 ratio "
                    f"{paired_text(d.difference, '{:+.3f}')}); the order-insensitive control ends at "
                    f"{c['control']:.1e}{p.stale}"),
        scale=p.scale, model=converged.manifest["model"] + " (CPU)", corpus="synthetic drift and stationary",
        options=f"MLM and bag-of-tokens loss, AdamW weight decay {c['weight_decay']:g}; {plan_text(converged)}",
        decision=rules.c2_converged(d.difference, [r.control for r in d.runs]))


def comparison_rows(headline: dict, tied: dict, decay: dict, pretrained: PretrainedTable, settings=None,
                    converged: Result | None = None) -> list[ComparisonRow]:
    """The chapter's "Paper vs this book" rows for C2, each decided by its rule in :mod:`posgeom.verdicts`.

    Parameters
    ----------
    headline : dict of str to SeparationRun
        The runs under the theorem's conditions from a random start (``"drift"``, ``"SST-2"``, ...).
    tied, decay : dict
        The three setups from a tied start, and with weight decay: a :class:`SeparationRun` per
        :class:`~posgeom.experiments.separation.Setup`.
    pretrained : PretrainedTable
    settings : Settings, optional
        The scale in force (its model shape names the model of each row).
    converged : Result, optional
        ``run_separation_converged``: its row follows the others.
    """
    settings = _settings(settings)
    conf = CONFIGS[settings.scale]
    model = describe_model(conf.model, detail="from scratch")

    def broken_min():
        # the controls that break a condition, from a tied start: do they separate too?
        return [tied[k].final.raw.min for k in (Setup.STATIONARY, Setup.CONTROL)]

    def separation_row():
        drift, sst2 = headline["drift"].interval_raw, headline["SST-2"].interval_raw
        return ComparisonRow(
            "C2", ours=(f"sep(P) > 0 at the end of every run: drift {drift.text(_IV, with_t=False)}, SST-2 "
                        f"{sst2.text(_IV, with_t=False)} (mean [95% interval], {drift.n} seeds); pretrained "
                        f"{pretrained.by_n.loc[64, 'raw']:.3f} (first 64 positions, one table: no interval)"),
            scale=settings.scale, model=f"{model}; {pretrained.pretrained}", corpus="synthetic drift; SST-2 train",
            options=f"MLM, N(0, 0.02²) init, no weight decay, {drift.n} seeds",
            decision=rules.c2_separation([drift, sst2], broken_min()))

    def broken_row():
        c, d = controls_summary(tied), headline["drift"]
        return ComparisonRow(
            "C2", ours=(f"normalised separation falls during training ({d.initial.normalized.mean:.2f} → "
                        f"{d.final.normalized.mean:.2f}); from a tied start the broken-condition runs separate too "
                        f"({c['sep_stat']:.3f}, {c['sep_bag']:.3f}) into unordered clouds (ρ with |i − j|: "
                        f"{c['rho_stat']:.2f}, {c['rho_bag']:.2f} against {c['rho_hold']:.2f} when the conditions "
                        f"hold; {len(conf.seeds)} seeds, ranges in the tables above)"),
            scale=settings.scale, model=model, corpus="synthetic drift and stationary",
            options="MLM and bag-of-tokens loss, tied and Gaussian init",
            decision=rules.c2_broken_conditions(broken_min(), c["rho_hold"], [c["rho_stat"], c["rho_bag"]]),
            conditions={"statistics": "stationary", "loss": "order-insensitive"})

    def decay_row():
        wd = decay[Setup.HOLD].weight_decay
        hold, control = shrink_factors(decay[Setup.HOLD]), shrink_factors(decay[Setup.CONTROL])
        return ComparisonRow(
            "C2", ours=(f"with weight decay {wd:g}: the order-insensitive table collapses to "
                        f"{control.min():.1%}–{control.max():.1%} of its scale, the conditions-hold table "
                        f"keeps {hold.min():.1%}–{hold.max():.1%} (range over {len(conf.seeds)} seeds)"),
            scale=settings.scale, model=model, corpus="synthetic drift and stationary",
            options=(f"AdamW weight decay {wd:g} (exaggerated so that its effect shows within the run), "
                     f"{conf.train.steps} steps"),
            decision=rules.c2_weight_decay(control, hold))

    converged_rows = [("C2", lambda: _converged_row(converged))] if converged is not None else []
    return decided_rows([("C2", separation_row), ("C2", broken_row), ("C2", decay_row), *converged_rows], settings)


def captions(settings=None) -> dict:
    """What the chapter's figure captions state about the runs at ``settings.scale``, glued as ``t4cap_<name>`` so
    that a caption is right at both scales; ``quick_runs``, ``paper_runs`` and ``models`` (the encoder's shape at
    both scales, said once) are the "What this chapter needs" box's."""
    settings = _settings(settings)
    conf = CONFIGS[settings.scale]
    syn, sst2, imdb = conf.synthetic, conf.real.sst2, conf.real.imdb
    shape = f"{syn.n_positions} positions, {syn.vocab_size:,} tokens"  # of the stationary family too
    corpora = (f"synthetic drift corpus ({shape}, {describe_sequences(syn.n_sequences)}) and SST-2 train "
               f"({describe_sequences(sst2.n_sequences, 'phrases', random=True)}, bert-base-uncased WordPiece "
               f"with [CLS]/[SEP], {sst2.n_positions} positions)")
    if settings.scale == "paper":  # run_chapter's headline adds IMDB at paper scale
        corpora += (f", and IMDB train ({describe_sequences(imdb.n_sequences, 'reviews', random=True)}, "
                    f"{imdb.n_positions} positions)")
    return dict(scale=settings.scale, headline_seeds=describe_seeds(conf.headline_seeds),
                seeds=describe_seeds(conf.seeds),  # of the tied-start and weight-decay runs
                corpora=corpora, stationary=shape, model=describe_model(conf.model),
                training=describe_training(conf.train), steps=f"{conf.train.steps:,}",  # optimiser, batch, steps
                weight_decay=f"{conf.weight_decay:g}", quick_runs=_runs("quick"), paper_runs=_runs("paper"),
                gap_positions=int(conf.gap.n_positions), gap_layer=int(conf.gap.layer),  # the factorisation check's
                models=describe_scales(*(model_words(CONFIGS[s].model) for s in ("quick", "paper"))))


def _runs(scale: str) -> str:
    """The training runs of ``run_chapter`` at ``scale`` in words (the encoder's shape: the box's "Model" line)."""
    conf = CONFIGS[scale]
    positions = f"{conf.synthetic.n_positions} positions" + (
        f" (IMDB {conf.real.imdb.n_positions})" if scale == "paper" else "")
    return f"{chapter_run_count(scale)} training runs of {conf.train.steps:,} steps each on {positions}"
