r"""The chapter "Learned tables in practice" (:mod:`posgeom.experiments.learned_tables`,
:mod:`posgeom.experiments.table_dropout`): typed reads of the tables' anatomy, stress and training studies, and the
rows for S1–S3 and S7–S9."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import verdicts as rules
from ..config import settings_or_default as _settings
from ..experiments import table_dropout as td
from ..experiments.learned_tables import (CONFIGS, CorpusStress, InitStudyRecord, TableAnatomyRecord, TableStressRecord,
                                          TableSummary, init_runs, init_study_variants)
from ..geometry import paired_difference
from ..registry import Result
from ..report import ComparisonRow, PowerCheck, decided_rows
from ..wording import describe_model, describe_scales, describe_training, model_words
from .powered import design_check, design_row, design_summary, paired_text
from ..experiments.learned_powered import StoredDropoutPowered, StoredInitPowered
from ..experiments.settings import OrderTask, TableTraining

__all__ = ["REFERENCE_LABELS", "SIMILARITY_WORDS", "anatomy_table", "band_counts", "BandedColumns",
           "banded_columns", "stress_by_corpus", "listed", "s1_ours", "s2_ours", "BASE", "BIG", "SINUSOIDAL", "MDS",
           "init_frame", "finite_values", "reached_text", "variant_mean", "init_loss_difference", "dropout_rate",
           "dropout_effects", "comparison_rows", "power_checks", "captions"]

#: The tables of an anatomy and the chapter's name for each (the learned table is named by its model).
REFERENCE_LABELS = {"sinusoidal": "sinusoidal", "random_normal": "random N(0, 0.02²)", "random_walk": "random walk"}

#: The variants of the initialisation study the chapter compares (its names in :data:`posgeom.models.table_studies.INITS`).
BASE, BIG, SINUSOIDAL, MDS = "normal_0.02", "normal_1", "sinusoidal", "mds"


#: The similarity statistics of a table's anatomy (:class:`~posgeom.experiments.learned_tables.TableSummary`)
#: the chapter's table shows, as its rows say them.
SIMILARITY_WORDS = {
    "neighbour_cos": "cosine of neighbours, mean", "neighbour_cos_median": "cosine of neighbours, median",
    "neighbour_cos_centered": "cosine of neighbours, rows centred", "neighbour_cos_min": "cosine of neighbours, lowest",
    "frac_neighbour_above_0_9": "share of neighbours above 0.9", "lag_below_half": "first offset with cosine below 0.5",
    "decay_spearman": "Spearman ρ of cosine and offset", "offset_ratio": "norm of the mean row / mean row norm",
}


def anatomy_table(anatomies: dict[str, TableAnatomyRecord]) -> pd.DataFrame:
    """The similarity statistics (:data:`SIMILARITY_WORDS`) of each model's table, one row per statistic."""
    def text(value):
        return ("none" if value is None else f"{value:d}" if isinstance(value, (int, np.integer)) else
                f"{float(value):.3f}")

    return pd.DataFrame({name: {words: text(getattr(a.table, k)) for k, words in SIMILARITY_WORDS.items()}
                         for name, a in anatomies.items()})


def band_counts(freqs, n: int) -> dict[str, int]:
    """Columns whose dominant period is long (> n/8 positions), middle, or short (< 8 positions)."""
    period = 1.0 / np.asarray(freqs)
    return {"long (> n/8)": int(np.sum(period > n / 8)), "middle": int(np.sum((period <= n / 8) & (period >= 8))),
            "short (< 8)": int(np.sum(period < 8))}


@dataclass(frozen=True)
class BandedColumns:
    """S3's test (:func:`posgeom.verdicts.s3_frequency_bands`): the columns in a band neither null table reaches."""

    count: int                # columns with a dominant period below the walk's shortest and κ above the noise's highest
    n_columns: int
    walk_shortest: float      # the shortest dominant period of the random walk's columns (positions)
    noise_highest: float      # the highest spectral concentration of the white-noise table's columns
    periods: tuple            # the banded columns' dominant periods, distinct, to 0.1 position


def banded_columns(anatomy: TableAnatomyRecord, key: str = "table") -> BandedColumns:
    """The :class:`BandedColumns` of the anatomy's table ``key``: dominant period below every random-walk column's,
    spectral concentration above every white-noise column's."""
    T, walk, noise = (anatomy.arrays_of(k) for k in (key, "random_walk", "random_normal"))
    shortest = float(np.min(1.0 / walk.dominant_freq))
    highest = float(np.max(noise.concentration))
    period = 1.0 / T.dominant_freq  # one per column
    banded = (period < shortest) & (T.concentration > highest)
    return BandedColumns(count=int(banded.sum()), n_columns=period.size, walk_shortest=shortest, noise_highest=highest,
                         periods=tuple(sorted({round(float(x), 1) for x in period[banded]})))


def stress_by_corpus(result: Result) -> dict[str, CorpusStress]:
    """A ``learned_table_stress`` entry's :class:`~posgeom.experiments.learned_tables.CorpusStress` by corpus run."""
    s = result.as_(TableStressRecord)
    return {corpus: c for corpus, c in (("sst2", s.sst2), ("imdb", s.imdb)) if c is not None}


def listed(values, fmt: str = "{}") -> str:
    """``values`` joined by commas, each written by ``fmt``; "none" when there are none."""
    return ", ".join(fmt.format(v) for v in values) or "none"


def s1_ours(T: TableSummary) -> str:
    """S1's value as the "Paper vs this book" row words it; ``posgeom decide S1`` prints the same."""
    return (f"s(1) = {T.neighbour_cos:.3f} (centred {T.neighbour_cos_centered:.3f}); "
            f"{100 * T.frac_neighbour_above_0_9:.1f}% of neighbours above 0.9; decay Spearman {T.decay_spearman:.2f}")


def s2_ours(anatomy: TableAnatomyRecord) -> str:
    """S2's value as the "Paper vs this book" row words it: the rows standing apart and the isolation of row 0."""
    T = anatomy.table
    return (f"rows standing apart (ι > {T.isolation_threshold:g}): {listed(T.stand_apart)}; "
            f"ι_0 = {anatomy.arrays_of('table').isolation[0]:.1f}")


# ------------------------------------------------------------------ the initialisation and dropout studies


def init_frame(result: Result) -> pd.DataFrame:
    """One row per run of the initialisation study, ``variant`` naming its initialisation (and dropout)."""
    runs = pd.DataFrame([{
        **{k: getattr(r, k) for k in ("init", "dropout", "seed", "steps_to_threshold", "final_loss", "eval_loss",
                                      "eval_accuracy", "relative_change")},
        "initial row norm": r.initial.row_norm, "final row norm": r.final.row_norm,
        "final neighbour cos": r.final.neighbour_cos, "final stress (scale_free)": r.final.stress_scale_free,
    } for r in init_runs(result)])
    runs["variant"] = runs["init"] + np.where(runs["dropout"] > 0, " + dropout " + runs["dropout"].astype(str), "")
    return runs


def finite_values(x) -> np.ndarray:
    """The finite values of ``x`` (a seed that never reached the loss threshold stores ``None``)."""
    return np.asarray([v for v in x if v is not None and np.isfinite(v)], dtype=float)


def reached_text(x) -> str:
    """How many seeds reached the threshold, of how many: ``"3/5"``."""
    return f"{len(finite_values(x))}/{len(x)}"


def variant_mean(runs: pd.DataFrame, variant: str, column: str) -> float:
    """The mean of ``column`` over the seeds of ``variant`` that have a value (NaN when none has)."""
    x = runs.loc[runs["variant"] == variant, column].astype(float)
    return float(x.dropna().mean()) if x.notna().any() else float("nan")


def init_loss_difference(init: Result):
    """S7's interval: the final loss of N(0, 0.02²) minus N(0, 1), paired by seed."""
    by_seed = init_frame(init).set_index(["variant", "seed"])["final_loss"]
    seeds = init.as_(InitStudyRecord).seeds
    return paired_difference([by_seed[(BASE, k)] for k in seeds], [by_seed[(BIG, k)] for k in seeds])


def dropout_rate(study: td.DropoutStudyRecord) -> float:
    """The rate the dropout study compares with no dropout: its largest."""
    return max(study.dropouts)


def dropout_effects(dropout: Result):
    """S9's comparison: ``(study, runs without dropout, eff_loss, eff_acc)`` at :func:`dropout_rate`, paired by seed."""
    study = dropout.as_(td.DropoutStudyRecord)
    return (study, [r for r in study.runs if r.dropout == 0.0],
            *(td.dropout_effect(study.runs, dropout_rate(study), field_name=f) for f in ("eval_loss", "eval_accuracy")))


# ------------------------------------------------------------------ Paper vs this book


def _s1_row(T: TableSummary, main: str, model: str, scale: str) -> ComparisonRow:
    """S1: the cosine of neighbouring rows of ``main``'s table against the seed's 0.9 (GPT-2's)."""
    return ComparisonRow("S1", ours=s1_ours(T), scale=scale, model=model, corpus="none",
                         options="raw and centred cosines",
                         decision=rules.s1_neighbour_similarity(T.neighbour_cos, main))


def _s2_row(anatomy: TableAnatomyRecord, main: str, model: str, scale: str) -> ComparisonRow:
    """S2: the rows of ``main``'s table that stand apart (the seed's first positions are GPT-2's)."""
    return ComparisonRow("S2", ours=s2_ours(anatomy), scale=scale, model=model, corpus="none",
                         options="isolation threshold 2",
                         decision=rules.s2_first_positions_apart(list(anatomy.table.stand_apart), main))


def _s3_row(anatomy: TableAnatomyRecord, model: str, scale: str) -> ComparisonRow:
    """S3: the columns of the table in a band that neither null table reaches (:func:`banded_columns`)."""
    b = banded_columns(anatomy)
    kappa = {key: getattr(anatomy, key).median_concentration for key in ("table", "sinusoidal", "random_walk")}
    return ComparisonRow("S3", ours=(f"{b.count} of {b.n_columns} columns oscillate faster than every random-walk "
                                     f"column (shortest period {b.walk_shortest:.1f}) with a concentration above every "
                                     f"white-noise column's ({b.noise_highest:.3f}); their periods: "
                                     f"{listed(b.periods, '{:g}')}; median concentration {kappa['table']:.2f} "
                                     f"(sinusoidal {kappa['sinusoidal']:.2f}, random walk {kappa['random_walk']:.2f})"),
                         scale=scale, model=model, corpus="none",
                         options="periodograms vs a random-walk and a white-noise table of the same shape",
                         decision=rules.s3_frequency_bands(b.count, b.n_columns))


def _study_model(init: Result, scale: str) -> str:
    """The encoder of the initialisation study, with its seeds."""
    seeds = init.as_(InitStudyRecord).seeds
    return describe_model(CONFIGS[scale].model, name="encoder", detail=f"learned table, {len(seeds)} seeds")


def _s7_row(init: Result, scale: str) -> ComparisonRow:
    """S7: N(0, 0.02²) against N(0, 1), steps to loss 0.3 and the final loss paired by seed."""
    runs, diff = init_frame(init), init_loss_difference(init)
    steps, loss = ({v: variant_mean(runs, v, column) for v in (BASE, BIG)}
                   for column in ("steps_to_threshold", "final_loss"))
    return ComparisonRow("S7", ours=(f"steps to loss 0.3: {steps[BASE]:.0f} vs {steps[BIG]:.0f}; final loss "
                                     f"{loss[BASE]:.3f} vs {loss[BIG]:.3f} (difference {diff.text('{:+.3f}')}, 95%, "
                                     "paired by seed)"),
                         scale=scale, model=_study_model(init, scale), corpus="synthetic order task",
                         options="N(0, 0.02²) vs N(0, 1)", decision=rules.s7_small_init(steps[BASE], steps[BIG], diff))


def _s7_powered_row(init_powered: Result) -> ComparisonRow:
    """S7 decided by the design sized by its power (:func:`posgeom.experiments.learned_powered.run_init_powered`)."""
    p, d = design_summary(init_powered), init_powered.as_(StoredInitPowered)
    small, large = [r.steps_small for r in d.runs], [r.steps_large for r in d.runs]
    # mean steps over the seeds that reached the threshold (NaN when none did), as the study's row
    steps = [float(x.mean()) if x.size else float("nan") for x in (finite_values(small), finite_values(large))]
    return design_row("S7", init_powered, f"steps to loss {d.loss_threshold:g}: {steps[0]:.0f} vs {steps[1]:.0f} "
                      f"(reached in {reached_text(small)} and {reached_text(large)} seeds); final loss {p.mean_a:.4f} "
                      f"vs {p.mean_b:.4f}, difference {paired_text(d.difference)}", "synthetic order task",
                      rules.s7_small_init(*steps, d.difference), options="N(0, 0.02²) vs N(0, 1)")


def _s8_row(init: Result, scale: str) -> ComparisonRow:
    """S8: the held-out accuracy of the sinusoidal initialisation."""
    runs = init_frame(init)
    accuracy = variant_mean(runs, SINUSOIDAL, "eval_accuracy")
    reached = reached_text(runs.loc[runs["variant"] == SINUSOIDAL, "steps_to_threshold"].tolist())
    return ComparisonRow("S8", ours=f"sinusoidal initialisation: held-out accuracy {accuracy:.3f}; reached loss 0.3 in "
                                    f"{reached} seeds",
                         scale=scale, model=_study_model(init, scale), corpus="synthetic order task",
                         options="init='sinusoidal'", decision=rules.s8_sinusoidal_init(accuracy))


#: How the dropout study (S9) trains, in its rows: long on a small training set, so that the table can overfit.
_DROPOUT_OPTIONS = ("dropout on the embedding sum only, {:.0f} passes, no weight decay; a small training set and long "
                    "training, so that the table can overfit")


def _s9_row(dropout: Result, scale: str) -> ComparisonRow:
    """S9: the held-out loss with dropout minus without, paired by seed, where the table overfits."""
    study, none, eff_loss, eff_acc = dropout_effects(dropout)
    gap = float(np.mean([r.gap for r in none]))
    return ComparisonRow("S9", ours=(f"held-out loss, dropout {dropout_rate(study):g} minus none, "
                                     f"{eff_loss.text('{:+.3f}', with_t=False)} nats; held-out accuracy "
                                     f"{eff_acc.text('{:+.3f}')} (95%, paired by seed); "
                                     f"generalisation gap without dropout {gap:.2f} nats"),
                         scale=scale, model=describe_model(td.CONFIGS[scale].model, name="encoder",
                                                           detail="learned table, trained from scratch"),
                         corpus=f"synthetic order task, {study.n_train} training sequences",
                         options=_DROPOUT_OPTIONS.format(study.passes), decision=rules.s9_dropout(gap, eff_loss))


def _s9_powered_row(dropout_powered: Result) -> ComparisonRow:
    """S9 decided by the design sized by its power (:func:`posgeom.experiments.learned_powered.run_dropout_powered`)."""
    d = dropout_powered.as_(StoredDropoutPowered)
    order, train = dropout_powered.params_as(OrderTask, "order"), dropout_powered.params_as(TableTraining, "train")
    gap = float(np.mean([r.gap_none for r in d.runs]))
    passes = train.steps * train.batch_size / order.n_train  # passes over the training set
    return design_row("S9", dropout_powered, f"held-out loss, dropout {d.rate:g} minus none, "
                      f"{paired_text(d.difference)} nats; generalisation gap without dropout {gap:.2f} nats",
                      f"synthetic order task, {order.n_train} training sequences",
                      rules.s9_dropout(gap, d.difference), options=_DROPOUT_OPTIONS.format(passes))


def comparison_rows(anatomy: TableAnatomyRecord, used: list, init: Result, dropout: Result, settings=None,
                    init_powered: Result | None = None, dropout_powered: Result | None = None) -> list:
    """The chapter's rows for S1–S3 (from ``anatomy`` of the main model ``used[0]``), S7–S9 and, with the powered
    designs (:mod:`posgeom.experiments.learned_powered`), S7 and S9 again."""
    settings = _settings(settings)
    scale, main, T = settings.scale, used[0], anatomy.table
    model = f"{main} (pretrained)" + (f"; also {', '.join(used[1:])}" if len(used) > 1 else "")
    powered_s7 = [("S7", lambda: _s7_powered_row(init_powered))] if init_powered is not None else []
    powered_s9 = [("S9", lambda: _s9_powered_row(dropout_powered))] if dropout_powered is not None else []
    return decided_rows([
        ("S1", lambda: _s1_row(T, main, model, scale)), ("S2", lambda: _s2_row(anatomy, main, model, scale)),
        ("S3", lambda: _s3_row(anatomy, model, scale)), ("S7", lambda: _s7_row(init, scale)), *powered_s7,
        ("S8", lambda: _s8_row(init, scale)), ("S9", lambda: _s9_row(dropout, scale)), *powered_s9,
    ], settings)


def power_checks(init: Result, dropout: Result, init_powered: Result | None = None,
                 dropout_powered: Result | None = None) -> list:
    """The chapter's decisions over seeds (S7, S9, and their powered designs) as :class:`posgeom.report.PowerCheck`."""
    study, _, eff_loss, _ = dropout_effects(dropout)
    powered = "the same, over the seeds a pilot sized (powered design)"
    return [PowerCheck("S7", "final loss, N(0, 0.02²) − N(0, 1), paired by seed (nats)", init_loss_difference(init),
                       rules.LOSS_EFFECT, init.runtime_s),
            *([design_check("S7", powered, init_powered, rules.LOSS_EFFECT)] if init_powered is not None else []),
            PowerCheck("S9", f"held-out loss, dropout {dropout_rate(study):g} − none, paired by seed (nats)", eff_loss,
                       rules.LOSS_EFFECT, dropout.runtime_s),
            *([design_check("S9", powered, dropout_powered, rules.LOSS_EFFECT)] if dropout_powered is not None else [])]


# ------------------------------------------------------------------ captions


def captions(settings=None) -> dict:
    """The captions' facts at ``settings.scale`` (glued as ``ltcap_<name>``), and the box's at both scales."""
    scale = _settings(settings).scale
    conf = CONFIGS[scale]
    return dict(scale=scale, model=describe_model(conf.model),
                order_task=(f"{conf.order.n_positions} positions, {conf.order.vocab_size:,} tokens, "
                            f"{conf.order.n_train:,} training sequences"),
                training=describe_training(conf.train), init_seeds=len(conf.init.seeds), smooth=int(conf.init.smooth),
                quick_runs=_runs("quick"), paper_runs=_runs("paper"),
                models=describe_scales(*(model_words(CONFIGS[s].model) for s in ("quick", "paper"))))


def _runs(scale: str) -> str:
    """The chapter's training runs at ``scale`` in words."""
    conf, drop = CONFIGS[scale], td.CONFIGS[scale]
    variants = init_study_variants(conf.init.inits, conf.init.dropouts)
    n_init, n_drop = len(variants) * len(conf.init.seeds), len(drop.dropouts) * len(drop.seeds)
    with_dropout = sum(p > 0 for _, p in variants)
    kinds = f"{len(variants) - with_dropout} initialisations" + (
        f" and {with_dropout} with embedding dropout" if with_dropout else "")
    # the encoder's shape is said once, in the box's "Model" line; a dropout study on another shape says which
    drop_model = "" if drop.model == conf.model else f" of {model_words(drop.model)}"
    return (f"{n_init} training runs of {conf.train.steps:,} steps each "
            f"({kinds}, {len(conf.init.seeds)} seeds each), and {n_drop} more{drop_model} "
            f"({len(drop.dropouts)} dropout rates × {len(drop.seeds)} seeds, {drop.train.steps:,} steps each) on a "
            f"small training set of {drop.order.n_train:,} sequences for the dropout study")
