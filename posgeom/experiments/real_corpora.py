r"""Real corpora: the stress of every encoding against the positional geometry of SST-2 and IMDB (C6, C7, C8).

The corpus side (the chord Hellinger matrix $D$, its noise floor and its resolvable part $R$) is defined in
:mod:`posgeom.geometry.summaries`; each encoding gets its ``"paper"`` and ``"scale_free"`` stress. ALiBi's
``"paper"`` stress is a parabola in the slope, minimal where it equals the ``"scale_free"`` one
(:func:`posgeom.geometry.alibi_slopes_for`), so :func:`run_alibi_choices` lists which natural choices give
which value. The code is split by concern (``real_corpora_geometry``, ``real_corpora_draws``,
``real_corpora_stress``, ``real_corpora_alibi``); this module gathers their public names.
"""

from __future__ import annotations

from ..config import Settings, settings_or_default as _settings
from ..corpora.identifiers import Corpus
from ..registry import Result
from .real_corpora_alibi import AlibiChoice, AlibiChoicesRecord, AlibiParabola, run_alibi_choices
from .real_corpora_draws import (
    DrawSpread, ResolvableSplitsRecord, SubsetDrawsRecord, run_resolvable_splits, run_subset_draws,
)
from .real_corpora_geometry import (
    CONFIGS, CORPUS_NAMES, NORMALIZATIONS, PAPER_ALIBI_SST2, RANK_OPTIONS, RECORDED_OPTIONS, AlibiGrid,
    ChapterIntervals, CorpusGeometryRecord, CorpusSource, DrawOptions, EncodingOptions, NoiseAwareRankRecord,
    RankedSmacof, RealCorporaOptions, RecordedOptions, ScratchTraining, chapter_settings, check_corpus,
    corpus_geometry_of, corpus_options, corpus_params, corpus_source, paper_results, run_corpus_geometry,
    run_noise_aware_rank,
)
from .real_corpora_stress import (
    INTERVAL_DIFFERENCES, INTERVAL_STATISTICS, STRESS_ENCODINGS, ScratchTableRecord, StressIntervalsRecord, StressRow,
    StressTableRecord, pretrained_table, run_scratch_table, run_stress_intervals, run_stress_table, stress_records,
    stress_rows,
)
from .table_rows import TableRow, row_label


def run_scratch_tables(settings: Settings | None = None, *, force: bool = False,
                       progress: bool = True) -> dict[str, Result]:
    """The tables trained from scratch for every corpus of ``scratch_corpora``, by corpus (run under ``torchrun``)."""
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
    out["alibi_choices_sst2"] = run_alibi_choices(settings, corpus=Corpus.SST2, force=force)
    return out


__all__ = [
    "CONFIGS", "chapter_settings", "RealCorporaOptions", "CorpusSource", "EncodingOptions", "RankedSmacof",
    "ScratchTraining", "AlibiGrid", "ChapterIntervals", "DrawOptions", "CORPUS_NAMES", "PAPER_ALIBI_SST2",
    "NORMALIZATIONS", "RECORDED_OPTIONS", "run_scratch_tables", "check_corpus", "corpus_options",
    "corpus_params", "corpus_source", "corpus_geometry_of", "run_corpus_geometry",
    "RANK_OPTIONS", "run_noise_aware_rank", "run_resolvable_splits", "run_subset_draws", "STRESS_ENCODINGS",
    "TableRow", "row_label", "StressRow", "stress_records", "pretrained_table", "run_scratch_table",
    "stress_rows", "run_stress_table", "INTERVAL_STATISTICS", "INTERVAL_DIFFERENCES",
    "run_stress_intervals", "run_alibi_choices", "paper_results", "run_all", "RecordedOptions",
    "CorpusGeometryRecord", "NoiseAwareRankRecord", "DrawSpread", "ResolvableSplitsRecord", "SubsetDrawsRecord",
    "AlibiParabola", "AlibiChoice", "AlibiChoicesRecord", "ScratchTableRecord", "StressTableRecord",
    "StressIntervalsRecord",
]
