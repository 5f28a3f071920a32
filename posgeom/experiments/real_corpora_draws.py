r"""Real corpora: how much a random draw moves the chapter's numbers.

Two draws stand behind them: the cross-half split of the resolvable geometry $R$
(:func:`run_resolvable_splits` repeats it) and, at ``quick`` scale, the random subset of IMDB's reviews
(:func:`run_subset_draws` redraws it); both record the spread of :data:`posgeom.geometry.DRAW_STATISTICS`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from .. import encodings as enc
from .. import geometry as geo
from ..config import Settings, settings_or_default as _settings
from ..corpora.distances import resampling_groups
from ..corpora.groups import resampling_unit
from ..corpora.identifiers import Corpus
from ..encodings.identifiers import Encoding
from ..registry import Result
from .real_corpora_geometry import (
    RecordedOptions, chapter_settings, corpus_geometry_of, corpus_options, corpus_params, corpus_source,
)
from .settings import store_result

__all__ = ["run_resolvable_splits", "run_subset_draws", "DrawSpread", "ResolvableSplitsRecord", "SubsetDrawsRecord"]

#: The encodings whose stress is a statistic of the draws (``posgeom.geometry.DRAW_STATISTICS``).
DRAW_ENCODINGS = (Encoding.SINUSOIDAL, Encoding.ROPE, Encoding.ALIBI)


@dataclass(frozen=True)
class DrawSpread:
    """A statistic over draws: mean, sample sd, lowest and highest."""

    mean: float
    sd: float
    min: float
    max: float


def _spreads(table: np.ndarray, names=geo.DRAW_STATISTICS) -> dict[str, DrawSpread]:
    """The spread of each column (statistic) of ``table`` (draws × statistics)."""
    return {name: DrawSpread(**spread) for name, spread in geo.spread_columns(table, names).items()}


@dataclass(frozen=True)
class ResolvableSplitsRecord:
    """A stored ``run_resolvable_splits``: the splits used and skipped, each statistic's spread, the table."""

    options: RecordedOptions
    seeds: tuple[int, ...]
    skipped: tuple[int, ...]  # seeds whose split could not resolve every kept position
    resampled: str  # the unit dealt into the halves, in words
    spread: dict[str, DrawSpread]  # by statistic of ``posgeom.geometry.DRAW_STATISTICS``
    table: np.ndarray  # (splits, statistics)


@dataclass(frozen=True)
class SubsetDrawsRecord:
    """A stored ``run_subset_draws``: each statistic's spread over subsets, for R (``spread``) and D (``spread_D``)."""

    options: RecordedOptions
    seeds: tuple[int, ...]
    spread: dict[str, DrawSpread]
    spread_D: dict[str, DrawSpread]  # by statistic of ``posgeom.geometry.CORPUS_DRAW_STATISTICS``
    table: np.ndarray  # (subsets, statistics)
    table_D: np.ndarray  # (subsets, 5)


def _encodings(cd, cfg) -> dict[str, np.ndarray]:
    """The sinusoidal, RoPE and ALiBi distances on the kept positions of the counted corpus ``cd``."""
    return enc.encoding_set(cd.marginals.positions, names=DRAW_ENCODINGS, **cfg.encodings.shape())


def _draws(cd, encodings: dict[str, np.ndarray], n_draws: int, seed: int, groups=None):
    """``(table, seeds, skipped)`` of the cross-half draws of ``cd``; with ``groups``, whole groups go into a half."""
    args = (cd.tokens.sequences(), cd.options.n_positions, cd.tokens.vocab_size, cd.marginals.positions, encodings,
            n_draws)
    return geo.resolvable_draws(*args, seed, groups=groups)


def run_resolvable_splits(settings: Settings | None = None, *, corpus: str = Corpus.SST2, force: bool = False) -> Result:
    """The resolvable geometry over several cross-half splits: how much its numbers depend on the split.

    The record: :class:`ResolvableSplitsRecord`.
    """
    settings = _settings(settings)
    cfg = chapter_settings(settings.scale)
    opts = corpus_options(settings.scale, corpus)
    source, data = corpus_source(settings, opts)
    params = {**corpus_params(opts), "n_splits": cfg.draws.n_splits, "encodings": cfg.encodings.shape(), "data": data}

    def compute():
        cd = corpus_geometry_of(settings, opts, source)
        # SST-2's training phrases: a sentence and its phrases go into one half, so the halves are independent
        groups = resampling_groups(opts, data_dir=settings.data_dir, source=source)
        table, seeds, skipped = _draws(cd, _encodings(cd, cfg), cfg.draws.n_splits, settings.seed, groups)
        return ResolvableSplitsRecord(options=RecordedOptions.of(opts), seeds=tuple(seeds), skipped=tuple(skipped),
                                      resampled=resampling_unit(opts.corpus, opts.split), spread=_spreads(table),
                                      table=np.asarray(table))

    return store_result(settings, f"real_corpora_resolvable_splits_{corpus}", compute, params, force)


def run_subset_draws(settings: Settings | None = None, *, corpus: str = Corpus.IMDB, force: bool = False) -> Result:
    """A subsampled corpus over several random subsets of the same size: the spread of its headline numbers.

    The record: :class:`SubsetDrawsRecord`.
    """
    settings = _settings(settings)
    cfg = chapter_settings(settings.scale)
    base = corpus_options(settings.scale, corpus)
    source, data = corpus_source(settings, base)
    seeds = [int(s) for s in cfg.draws.subset_seeds]
    params = {**corpus_params(base), "subset_seeds": seeds, "encodings": cfg.encodings.shape(), "data": data}

    def compute():
        table, table_d = [], []
        for s in seeds:
            cd = corpus_geometry_of(settings, replace(base, subset_seed=s), source)
            # one set of encodings per subset (its kept positions) serves both rows
            encodings = _encodings(cd, cfg)
            table.append(_draws(cd, encodings, 1, settings.seed)[0][0])
            table_d.append(geo.corpus_draw_statistics(cd.D, encodings))
        table, table_d = np.asarray(table), np.asarray(table_d)
        return SubsetDrawsRecord(options=RecordedOptions.of(base), seeds=tuple(seeds), spread=_spreads(table),
                                 spread_D=_spreads(table_d, geo.CORPUS_DRAW_STATISTICS), table=table, table_D=table_d)

    return store_result(settings, f"real_corpora_subset_draws_{corpus}", compute, params, force)
