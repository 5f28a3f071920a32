r"""Real corpora: the stress of every encoding against the positional geometry of SST-2 and IMDB.

This module holds the experiments of the chapter *Real corpora* (claims C6, C7, C8 of the paper).

**The corpus side.** For a corpus split, a special-token policy and $n$ positions, the positional
marginals $\mu_i$ give the chord Hellinger matrix (paper Eq. 3)
$D_{ij} = \bigl\|\sqrt{\mu_i} - \sqrt{\mu_j}\bigr\|_2$. How shift-equivariant and how close to rank one it
is, above its sampling-noise floor, and its *resolvable* part $R$ (the cross-half estimate whose
sampling noise cancels in expectation) are defined in :mod:`posgeom.geometry.summaries`.

**The encoding side**: sinusoidal (width $d$), RoPE (head width $d/H$, per unit
vector), ALiBi ($\hat d_{ij} = \bar m |i-j|$, the mean slope or one head), the learned table of a
pretrained model and one trained from scratch here, random tables $\mathcal N(0, \sigma^2)$ over
several seeds, classical MDS at full and low rank, SMACOF started from MDS,
and no encoding. Each gets its ``"paper"`` and ``"scale_free"`` stress.

**ALiBi's paper stress is a parabola in the slope** (``posgeom.geometry.slope``), minimal where it
equals the ``"scale_free"`` stress; :func:`posgeom.geometry.alibi_slopes_for` gives the two slopes that
reach a target value and :func:`run_alibi_choices` lists which natural choices (number of positions,
special tokens, Hellinger form, head count, slope) give which value.

The code is split by concern: ``real_corpora_geometry`` (settings, the corpus
geometry, the noise-aware rank), ``real_corpora_draws`` (spreads over cross-half
splits and corpus subsets), ``real_corpora_stress``
(the stress table as typed records, its bootstrap intervals, the learned tables) and
``real_corpora_alibi`` (ALiBi's parabola); this module gathers their public names.
Every experiment goes through :meth:`posgeom.registry.Registry.run`, so its numbers are stored with a
manifest. ``python -m posgeom.experiments real-corpora`` runs them all at the scale of
``POSGEOM_SCALE`` (``paper``: full corpora, BERT-base trained from scratch; a GPU).
"""

from __future__ import annotations

from ..config import Settings, settings_or_default as _settings
from ..registry import Result
from .real_corpora_alibi import run_alibi_choices
from .real_corpora_draws import run_resolvable_splits, run_subset_draws
from .real_corpora_geometry import (
    CONFIGS, CORPUS_NAMES, NORMALIZATIONS, PAPER_ALIBI_SST2, RANK_OPTIONS, RECORDED_OPTIONS, AlibiGrid,
    ChapterIntervals, CorpusSource, DrawOptions, EncodingOptions, RankedSmacof, RealCorporaOptions,
    ScratchTraining, chapter_settings, check_corpus, corpus_geometry_of, corpus_options, corpus_params, corpus_source,
    paper_results, run_corpus_geometry, run_noise_aware_rank,
)
from .real_corpora_stress import (
    INTERVAL_DIFFERENCES, INTERVAL_STATISTICS, RANDOM_ROW, STRESS_ENCODINGS, StressRow, mds_row,
    pretrained_table, run_scratch_table, run_stress_intervals, run_stress_table, smacof_row, stress_records, stress_rows,
)


def run_scratch_tables(settings: Settings | None = None, *, force: bool = False,
                       progress: bool = True) -> dict[str, Result]:
    """The tables trained from scratch for every corpus of ``scratch_corpora`` at this scale, by corpus.

    The chapter's one training step: ``posgeom reproduce`` runs it under ``torchrun`` at paper scale with
    several GPUs, and :func:`run_stress_table` then reads the stored tables.
    """
    settings = _settings(settings)
    return {corpus: run_scratch_table(settings, corpus=corpus, force=force, progress=progress)
            for corpus in chapter_settings(settings.scale).scratch_corpora}


def run_all(settings: Settings | None = None, *, corpora=CORPUS_NAMES, force: bool = False,
            progress: bool = True) -> dict[str, Result]:
    """Run every experiment of the chapter for ``corpora`` at ``settings.scale``; returns them by name."""
    settings = _settings(settings)
    cfg = chapter_settings(settings.scale)
    out: dict[str, Result] = {}
    for corpus in corpora:
        out[f"geometry_{corpus}"] = run_corpus_geometry(settings, corpus=corpus, force=force)
        if corpus in cfg.scratch_corpora:
            out[f"scratch_{corpus}"] = run_scratch_table(settings, corpus=corpus, force=force, progress=progress)
        out[f"stress_{corpus}"] = run_stress_table(settings, corpus=corpus, force=force, progress=progress)
        if corpus in cfg.rank_corpora:
            out[f"rank_{corpus}"] = run_noise_aware_rank(settings, corpus=corpus, force=force)
        if corpus in cfg.intervals.corpora:
            out[f"intervals_{corpus}"] = run_stress_intervals(settings, corpus=corpus, force=force)
        out[f"splits_{corpus}"] = run_resolvable_splits(settings, corpus=corpus, force=force)
        if corpus in cfg.draws.subset_corpora:
            out[f"subsets_{corpus}"] = run_subset_draws(settings, corpus=corpus, force=force)
    out["alibi_choices_sst2"] = run_alibi_choices(settings, corpus="sst2", force=force)
    return out


__all__ = [
    "CONFIGS", "chapter_settings", "RealCorporaOptions", "CorpusSource", "EncodingOptions", "RankedSmacof",
    "ScratchTraining", "AlibiGrid", "ChapterIntervals", "DrawOptions", "CORPUS_NAMES", "PAPER_ALIBI_SST2",
    "NORMALIZATIONS", "RECORDED_OPTIONS", "run_scratch_tables", "check_corpus", "corpus_options",
    "corpus_params", "corpus_source", "corpus_geometry_of", "run_corpus_geometry",
    "RANK_OPTIONS", "run_noise_aware_rank", "run_resolvable_splits", "run_subset_draws", "STRESS_ENCODINGS",
    "RANDOM_ROW", "StressRow", "mds_row", "smacof_row", "stress_records", "pretrained_table", "run_scratch_table",
    "stress_rows", "run_stress_table", "INTERVAL_STATISTICS", "INTERVAL_DIFFERENCES",
    "run_stress_intervals", "run_alibi_choices", "paper_results", "run_all",
]
