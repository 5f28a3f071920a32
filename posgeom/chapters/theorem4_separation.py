r"""The chapter "Theorem 4: training separates positions" (:mod:`posgeom.experiments.separation`,
:mod:`posgeom.experiments.factorisation`): typed reads, the summaries its rows share with its prose, and the rows."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ..config import settings_or_default as _settings
from ..corpora.identifiers import Corpus, SyntheticFamily
from ..geometry.intervals import MIN_SEEDS, SeedInterval
from ..registry import Result
from ..experiments.separation import (CONFIGS, Setup, StoredPretrainedSeparation, StoredSeparation, chapter_run_count,
                                      final_separation_interval)
from ..experiments.separation_converged import ConvergedDesign, StoredSeparationConverged
from .. import verdicts as rules
from ..report import ComparisonRow, decided_rows
from ..wording import describe_model, describe_scales, describe_seeds, describe_sequences, describe_training, model_words
from .powered import design_row, paired_text

__all__ = ["SeparationOutcome", "separation_run", "summary_table", "separation_by_n", "controls_summary", "shrink_factors",
           "converged_summary", "converged_ratios", "comparison_rows", "captions"]


@dataclass(frozen=True, kw_only=True)
class SeparationOutcome(StoredSeparation):
    """A stored ``run_separation`` with the 95% intervals over seeds of its final separation, raw and normalised
    (not stored: :func:`separation_run` computes them, None under ``MIN_SEEDS`` seeds)."""

    interval_raw: SeedInterval | None = None
    interval_normalized: SeedInterval | None = None


def separation_run(result: Result) -> SeparationOutcome:
    """The record of a ``run_separation`` result, with the 95% intervals of its final separation where it has
    enough seeds."""
    run = result.as_(SeparationOutcome)
    return run if len(run.seeds) < MIN_SEEDS else replace(
        run, interval_raw=final_separation_interval(result, normalized=False),
        interval_normalized=final_separation_interval(result))


def summary_table(runs: dict) -> pd.DataFrame:
    """One row per run: means over seeds of the separation, median distance, ρ with ``|i − j|`` and the loss."""
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


def separation_by_n(table: StoredPretrainedSeparation) -> pd.DataFrame:
    """A pretrained table's separation over its first n positions: a row per n, in the order of n."""
    return pd.DataFrame({n: vars(at) for n, at in table.by_n.items()}).T.sort_index().rename_axis(
        "first n positions")


def controls_summary(tied: dict) -> dict:
    """The tied-start setups' final separation, median distance and ρ, as ``<quantity>_<setup>``."""
    return {f"{quantity}_{short}": getattr(tied[setup].final, state).mean
            for quantity, state in (("sep", "raw"), ("med", "median"), ("rho", "order_spearman"))
            for short, setup in zip(("hold", "stat", "bag"), Setup)}


def shrink_factors(run: StoredSeparation) -> np.ndarray:
    """Per seed, how much of its scale a table keeps: final / initial median pairwise distance."""
    return run.median_distance[:, -1] / run.median_distance[:, 0]


def converged_summary(result: Result) -> dict:
    """Theorem 4's CPU design (``run_separation_converged``) as the chapter quotes it."""
    d, design = result.as_(StoredSeparationConverged), result.params_as(ConvergedDesign, "design")
    runs, diff = d.runs, d.difference  # per decision seed; the paired log10 ratio over them
    hold, floor, control = Setup.HOLD, Setup.STATIONARY, Setup.CONTROL

    def mean(f):
        return float(np.mean([f(r) for r in runs]))

    return dict(
        model=result.model, weight_decay=design.weight_decay, steps=design.steps,
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
    """Per decision seed, log10 of the conditions-hold separation over the floor, on resolved and unresolved pairs."""
    return pd.DataFrame([{"seed": r.seed, "resolved pairs": r.difference, "unresolved pairs": r.unresolved}
                         for r in result.as_(StoredSeparationConverged).runs]).set_index("seed")


def _model(settings) -> str:
    return describe_model(CONFIGS[settings.scale].model, detail="from scratch")


def _broken_min(tied: dict) -> list:
    """The lowest final separation over seeds of the two tied-start runs that break a condition."""
    return [tied[k].final.raw.min for k in (Setup.STATIONARY, Setup.CONTROL)]


def _separation_row(headline: dict, tied: dict, pretrained: StoredPretrainedSeparation, settings) -> ComparisonRow:
    """sep(P) > 0 at the end of training, decided by :func:`posgeom.verdicts.c2_separation`."""
    drift, sst2 = headline[SyntheticFamily.DRIFT].interval_raw, headline[Corpus.SST2].interval_raw
    return ComparisonRow(
        "C2", ours=(f"sep(P) > 0 at the end of every run: drift {drift.text(with_t=False)}, SST-2 "
                    f"{sst2.text(with_t=False)} (mean [95% interval], {drift.n} seeds); pretrained "
                    f"{pretrained.by_n[64].raw:.3f} (first 64 positions, one table: no interval)"),
        scale=settings.scale, model=f"{_model(settings)}; {pretrained.pretrained}",
        corpus="synthetic drift; SST-2 train",
        options=f"MLM, N(0, 0.02²) init, no weight decay, {drift.n} seeds",
        decision=rules.c2_separation([drift, sst2], _broken_min(tied)))


def _broken_row(drift: StoredSeparation, tied: dict, settings) -> ComparisonRow:
    """From a tied start the broken-condition runs separate too (:func:`posgeom.verdicts.c2_broken_conditions`)."""
    c = controls_summary(tied)
    return ComparisonRow(
        "C2", ours=(f"normalised separation falls during training ({drift.initial.normalized.mean:.2f} → "
                    f"{drift.final.normalized.mean:.2f}); from a tied start the broken-condition runs separate too "
                    f"({c['sep_stat']:.3f}, {c['sep_bag']:.3f}) into unordered clouds (ρ with |i − j|: "
                    f"{c['rho_stat']:.2f}, {c['rho_bag']:.2f} against {c['rho_hold']:.2f} when the conditions "
                    f"hold; {len(CONFIGS[settings.scale].seeds)} seeds, ranges in the tables above)"),
        scale=settings.scale, model=_model(settings), corpus="synthetic drift and stationary",
        options="MLM and bag-of-tokens loss, tied and Gaussian init",
        decision=rules.c2_broken_conditions(_broken_min(tied), c["rho_hold"], [c["rho_stat"], c["rho_bag"]]),
        conditions={"statistics": "stationary", "loss": "order-insensitive"})


def _decay_row(decay: dict, settings) -> ComparisonRow:
    """With weight decay only the order-insensitive table collapses (:func:`posgeom.verdicts.c2_weight_decay`)."""
    conf, wd = CONFIGS[settings.scale], decay[Setup.HOLD].weight_decay
    hold, control = shrink_factors(decay[Setup.HOLD]), shrink_factors(decay[Setup.CONTROL])
    return ComparisonRow(
        "C2", ours=(f"with weight decay {wd:g}: the order-insensitive table collapses to "
                    f"{control.min():.1%}–{control.max():.1%} of its scale, the conditions-hold table "
                    f"keeps {hold.min():.1%}–{hold.max():.1%} (range over {len(conf.seeds)} seeds)"),
        scale=settings.scale, model=_model(settings), corpus="synthetic drift and stationary",
        options=(f"AdamW weight decay {wd:g} (exaggerated so that its effect shows within the run), "
                 f"{conf.train.steps} steps"),
        decision=rules.c2_weight_decay(control, hold))


def _converged_row(converged: Result) -> ComparisonRow:
    """Trained with weight decay against its controls, decided by :func:`posgeom.verdicts.c2_converged`."""
    c, d = converged_summary(converged), converged.as_(StoredSeparationConverged)
    return design_row(
        "C2", converged, f"with weight decay {c['weight_decay']:g} for {c['steps']:,} steps, the {c['n_resolved']} "
        f"pairs whose marginals the sample tells apart end at {c['ratio']:.2f}× the stationary floor "
        f"[{c['ratio_low']:.2f}, {c['ratio_high']:.2f}] (log10 ratio {paired_text(d.difference, '{:+.3f}')}); the "
        f"order-insensitive control ends at {c['control']:.1e}", "synthetic drift and stationary",
        rules.c2_converged(d.difference, [r.control for r in d.runs]),
        options=f"MLM and bag-of-tokens loss, AdamW weight decay {c['weight_decay']:g}")


def comparison_rows(headline: dict, tied: dict, decay: dict, pretrained: StoredPretrainedSeparation, settings=None,
                    converged: Result | None = None) -> list[ComparisonRow]:
    """The chapter's rows for C2, each decided on its own (:func:`posgeom.report.decided_rows`), from the headline runs
    by corpus identifier; ``converged`` adds its row when given."""
    settings = _settings(settings)
    builders = [lambda: _separation_row(headline, tied, pretrained, settings),
                lambda: _broken_row(headline[SyntheticFamily.DRIFT], tied, settings),
                lambda: _decay_row(decay, settings)]
    builders += [lambda: _converged_row(converged)] if converged is not None else []
    return decided_rows([("C2", build) for build in builders], settings)


def captions(settings=None) -> dict:
    """The captions' facts at ``settings.scale`` (glued as ``t4cap_<name>``), and the box's at both scales."""
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
