r"""Real corpora, the corpus side: settings, a corpus's geometry, its noise-aware rank and its spread.

The maths is in :mod:`posgeom.geometry.summaries`; the spreads over draws are in
:mod:`posgeom.experiments.real_corpora_draws`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from .. import geometry as geo
from ..config import Settings, settings_or_default as _settings
from ..corpora.distances import CorpusDistances, corpus_distances, resampling_groups
from ..corpora.groups import resampling_unit
from ..corpora.identifiers import Corpus
from ..corpora.options import CorpusOptions
from ..corpora.real import DataSource, describe_source, resolve_source
from ..geometry.hellinger import HELLINGER_KINDS, HellingerKind
from ..geometry.stress import REPORTED_NORMALIZATIONS
from ..registry import Registry, Result
from ..validation import check_choice
from .settings import (
    EncoderShape, IntervalOptions, NoiseOptions, ScratchTraining, SmacofOptions, as_params, by_scale, store_result,
)

CORPUS_NAMES = (Corpus.SST2, Corpus.IMDB)
#: The paper's ALiBi stress on SST-2 (claim C7).
PAPER_ALIBI_SST2 = 0.563
NORMALIZATIONS = REPORTED_NORMALIZATIONS


@dataclass(frozen=True)
class CorpusSource:
    """Which texts of a corpus are counted: split, positions, subset size, ``<br />`` handling."""

    split: str = "train"
    n_positions: int = 64
    max_sequences: int | None = None
    br_tags: str = "keep"


@dataclass(frozen=True)
class EncodingOptions(EncoderShape):
    """The fixed encodings' model shape (BERT-base at both scales: they are formulas) and the random tables."""

    base: float = 10000.0
    layout: str = "interleaved"
    random_sigma: float = 0.02
    random_seeds: tuple[int, ...] = (0, 1, 2, 3, 4)

    def shape(self) -> dict[str, Any]:
        """The keyword arguments of :func:`posgeom.encodings.encoding_set`."""
        return {"d_model": self.d_model, "n_heads": self.n_heads, "base": self.base, "layout": self.layout}


@dataclass(frozen=True)
class RankedSmacof(SmacofOptions):
    """SMACOF from MDS at each rank of ``ranks``."""

    ranks: tuple[int, ...] = (1, 2, 3)


@dataclass(frozen=True)
class AlibiGrid:
    """The unstated choices behind ALiBi's number (:func:`posgeom.experiments.real_corpora.run_alibi_choices`)."""

    n_positions: tuple[int, ...] = (32, 64)
    specials: tuple[str, ...] = ("model", "content")
    kinds: tuple[str, ...] = (HellingerKind.CHORD, HellingerKind.NORMALIZED)
    head_counts: tuple[int, ...] = (8, 12, 16)


@dataclass(frozen=True)
class ChapterIntervals(IntervalOptions):
    """Bootstrap intervals over sequences, for the corpora of ``corpora``."""

    corpora: tuple[str, ...] = (Corpus.SST2,)

    def bootstrap(self) -> dict[str, Any]:
        """``n_boot``, ``n_folds`` and ``level``, as :func:`posgeom.geometry.sequence_intervals` takes them."""
        return {"n_boot": self.n_boot, "n_folds": self.n_folds, "level": self.level}


@dataclass(frozen=True)
class DrawOptions:
    """Spreads over random draws: cross-half splits of every corpus, and subsets of the subsampled corpora."""

    #: cross-half splits per corpus; a split that leaves a kept position without a token shared by its halves
    #: cannot resolve that position and is replaced by the next seed
    n_splits: int = 5
    subset_seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    #: corpora counted from a random subset at this scale (their subsets are redrawn)
    subset_corpora: tuple[str, ...] = (Corpus.IMDB,)


@dataclass(frozen=True)
class RealCorporaOptions:
    """Settings of the chapter *Real corpora* (defaults: ``quick``, a 2-core CPU)."""

    sst2: CorpusSource = CorpusSource()
    # a seeded random subset of the 25,000 training reviews (the file is ordered by label)
    imdb: CorpusSource = CorpusSource(n_positions=512, max_sequences=5000, br_tags="space")
    special: str = "model"
    min_count: int = 1
    kind: str = HellingerKind.CHORD
    subset_seed: int = 0
    noise: NoiseOptions = NoiseOptions(n_rep=8)
    encodings: EncodingOptions = EncodingOptions()
    mds_ranks: tuple[int, ...] = (1, 2, 3, 5, 10)
    smacof: RankedSmacof = RankedSmacof(max_iter=300, eps=1e-6)
    scratch_sst2: ScratchTraining = ScratchTraining()
    scratch_imdb: ScratchTraining = ScratchTraining(max_steps=40, batch_size=4, warmup_steps=4, every=10)
    # corpora whose stress table includes a table trained from scratch (IMDB's n = 512 is too slow for a
    # 2-core CPU: at quick scale only SST-2 gets one; run_scratch_table(corpus="imdb") still works)
    scratch_corpora: tuple[str, ...] = (Corpus.SST2,)
    alibi_choices: AlibiGrid = AlibiGrid()
    # corpora whose noise-aware rank the chapter computes
    rank_corpora: tuple[str, ...] = CORPUS_NAMES
    intervals: ChapterIntervals = ChapterIntervals()
    draws: DrawOptions = DrawOptions()

    def source(self, corpus: str) -> CorpusSource:
        return getattr(self, check_corpus(corpus))

    def scratch(self, corpus: str) -> ScratchTraining:
        return getattr(self, f"scratch_{check_corpus(corpus)}")


_BERT_BASE = {"d_model": 768, "n_layers": 12, "n_heads": 12, "d_ff": 3072}

#: Per-scale settings (``CONFIGS[scale]``): ``quick`` runs on a 2-core CPU; ``paper`` is the full corpora
#: and BERT-base trained from scratch (a GPU).
CONFIGS = by_scale(
    RealCorporaOptions(),
    # paper steps and batch sized by posgeom.costmodel.PROPOSED (the reason of each change is there)
    imdb={"max_sequences": None},
    noise={"n_rep": 50},
    encodings={"random_seeds": tuple(range(20))},
    mds_ranks=(1, 2, 3, 5, 10, 20),
    smacof={"max_iter": 5000, "eps": 1e-9},
    scratch_sst2={"model": _BERT_BASE, "max_steps": 5000, "batch_size": 512, "lr": 1e-4, "warmup_steps": 250,
                  "every": 500, "threads": None},
    scratch_imdb={"model": _BERT_BASE, "max_steps": 20000, "batch_size": 32, "lr": 1e-4, "warmup_steps": 1000,
                  "every": 500, "threads": None},
    scratch_corpora=CORPUS_NAMES,
    alibi_choices={"n_positions": (16, 32, 48, 64), "kinds": HELLINGER_KINDS},
    intervals={"corpora": CORPUS_NAMES, "n_boot": 1000, "n_folds": 200},
    draws={"subset_corpora": ()},
)


def chapter_settings(scale: str) -> RealCorporaOptions:
    """``CONFIGS[scale]``, read when called (so a patched ``CONFIGS`` counts)."""
    return CONFIGS[scale]


def check_corpus(corpus: str) -> str:
    """``corpus`` if it is one of :data:`CORPUS_NAMES`, else a ``ValueError`` listing them."""
    return check_choice(corpus, "corpus", CORPUS_NAMES, plural="corpora")


#: The corpus options a result of the chapter records (in its parameters and values): those its settings set.
RECORDED_OPTIONS = ("corpus", "split", "n_positions", "max_sequences", "br_tags", "special", "min_count", "kind",
                    "subset_seed")


def corpus_options(scale: str, corpus: str, **overrides) -> CorpusOptions:
    """The options that define a corpus's geometry at ``scale``, with ``overrides`` (of :data:`RECORDED_OPTIONS`)."""
    cfg = CONFIGS[scale]
    opts = CorpusOptions(corpus=check_corpus(corpus), **as_params(cfg.source(corpus)), special=cfg.special,
                         min_count=cfg.min_count, kind=cfg.kind, subset_seed=cfg.subset_seed)
    unknown = set(overrides) - set(RECORDED_OPTIONS)
    if unknown:
        raise ValueError(f"unknown corpus option(s) {sorted(unknown)}; valid options are {sorted(RECORDED_OPTIONS)}")
    return replace(opts, **overrides)


def corpus_params(options: CorpusOptions) -> dict[str, Any]:
    """The corpus options as a result records them (:data:`RECORDED_OPTIONS`, in that order)."""
    return {k: getattr(options, k) for k in RECORDED_OPTIONS}


@dataclass(frozen=True)
class RecordedOptions:
    """The corpus options a result of the chapter stores (:data:`RECORDED_OPTIONS`; :func:`corpus_params`)."""

    corpus: Corpus
    split: str
    n_positions: int
    max_sequences: int | None
    br_tags: str
    special: str
    min_count: int
    kind: HellingerKind
    subset_seed: int

    @classmethod
    def of(cls, options: CorpusOptions | dict[str, Any]) -> "RecordedOptions":
        """The recorded options of a corpus's options (or of their stored mapping)."""
        return cls(**(options if isinstance(options, dict) else corpus_params(options)))


@dataclass(frozen=True, kw_only=True)
class CorpusIntervals:
    """Bootstrap intervals over a real corpus's sequences (:func:`posgeom.geometry.sequence_intervals`), as stored;
    each subclass declares its ``statistics`` and ``differences``, nested by identifier
    (:func:`posgeom.geometry.nested_intervals`)."""

    options: RecordedOptions
    interval: IntervalOptions
    n_used: int  # the replicates that entered the intervals
    resampled: str  # the unit a replicate resamples, in words
    replicates: np.ndarray  # (n_used, statistics)

    @classmethod
    def of(cls, options, interval: dict, out: dict, replicates: np.ndarray, **fields):
        """The record of ``sequence_intervals``' ``out`` and ``replicates`` over the corpus of ``options``, with the
        subclass's ``fields``."""
        options = RecordedOptions.of(options)
        return cls(options=options, interval=IntervalOptions(**interval), n_used=out["n_used"],
                   resampled=resampling_unit(options.corpus, options.split), replicates=replicates, **fields)


@dataclass(frozen=True)
class CorpusGeometryRecord:
    """A stored ``run_corpus_geometry`` (``posgeom.geometry.corpus_geometry_values``, with the options)."""

    options: RecordedOptions
    source: dict[str, Any]  # where the split was read from (``describe_source``)
    resampled: str  # the unit dealt into the cross-half split, in words
    tokenizer: str
    n_sequences: int
    n_truncated: int
    n_positions: int
    n_kept: int
    dropped: tuple[int, ...]
    reach_min: int
    reach_max: int
    noise_method: str
    noise_rep: int
    self_noise_max: float
    shift_r2: float
    share_raw: float
    share_debiased: float
    noise_top: float
    rank_above_noise: int
    share_above_noise: float
    resolvable_shift_r2: float
    resolvable_share: float
    resolvable_negative_fraction: float
    resolvable_negative_mass: float
    rank_tol: int
    rank_mass_90: int
    rank_mass_99: int
    D: np.ndarray  # (k, k), k the kept positions
    positions: np.ndarray
    reach: np.ndarray
    noise: np.ndarray  # (k, k), the noise floor
    self_noise: np.ndarray
    profile: np.ndarray
    full_lengths: np.ndarray  # (n_sequences,)
    eigenvalues: np.ndarray
    eigenvalues_debiased: np.ndarray
    eigenvalues_noise: np.ndarray
    R: np.ndarray  # (k, k), the resolvable geometry
    G_self: np.ndarray
    profile_resolvable: np.ndarray
    eigenvalues_resolvable: np.ndarray


@dataclass(frozen=True)
class NoiseAwareRankRecord:
    """A stored ``run_noise_aware_rank``: ``posgeom.geometry.rank_report`` with the options and fold arrays."""

    options: RecordedOptions
    resampled: str  # the unit dealt into the folds, in words
    rank: int | None  # None when undetermined
    interval: tuple[int, int]
    text: str
    level: float
    threshold: float
    residual_share: float
    n_positions: int
    n_sequences: int
    first_share: float
    eigenvalues: np.ndarray  # (n_resamples, k - 1)
    counts: np.ndarray  # (n_resamples,)
    positions: np.ndarray  # (k,)


# Corpus → tokens → counts → D


def corpus_source(settings: Settings, options: CorpusOptions) -> tuple[DataSource, dict[str, Any]]:
    """The corpus and split of ``options``, resolved once for a run, and where they are read from (part of its key)."""
    source = resolve_source(options.corpus, options.split, data_dir=settings.data_dir)
    return source, describe_source(source, settings.data_dir)


def corpus_geometry_of(settings: Settings, options: CorpusOptions, source: DataSource | None = None) -> CorpusDistances:
    """The corpus under ``options`` through :func:`posgeom.corpora.distances.corpus_distances`, with its token ids."""
    return corpus_distances(options, data_dir=settings.data_dir, source=source, with_tokens=True)


def run_corpus_geometry(settings: Settings | None = None, *, corpus: str = Corpus.SST2, force: bool = False,
                        noise: NoiseOptions | None = None, **overrides) -> Result:
    r"""The positional geometry of a real corpus: Hellinger matrix, noise floor, spectrum, shift equivariance.

    ``noise`` defaults to ``CONFIGS[scale].noise``; ``overrides`` are corpus options (:func:`corpus_options`).
    The record: :class:`CorpusGeometryRecord`.
    """
    settings = _settings(settings)
    noise = CONFIGS[settings.scale].noise if noise is None else noise
    opts = corpus_options(settings.scale, corpus, **overrides)
    source, data = corpus_source(settings, opts)
    params = {**corpus_params(opts), "noise": as_params(noise), "data": data}

    def compute():
        cd = corpus_geometry_of(settings, opts, source)
        values, arrays = geo.corpus_geometry_values(
            cd, n_positions=opts.n_positions, min_count=opts.min_count,
            kind=opts.kind, noise_method=noise.method, noise_rep=noise.n_rep, seed=settings.seed)
        # the sentence of each phrase (None where the rows are independent): its phrases share a half
        groups = resampling_groups(opts, data_dir=settings.data_dir, source=source)
        if groups is not None:
            values, arrays = _resolvable_by_group(cd, opts.n_positions, groups, settings.seed, values, arrays)
        return CorpusGeometryRecord(options=RecordedOptions.of(opts), source=data,
                                    resampled=resampling_unit(opts.corpus, opts.split), **values, **arrays)

    return store_result(settings, f"real_corpora_geometry_{corpus}", compute, params, force)


def _resolvable_by_group(cd: CorpusDistances, n_positions: int, groups, seed: int, values: dict[str, Any],
                         arrays: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Replace the cross-half estimate by one whose halves hold whole groups, as the chapter's other splits do."""
    res = geo.resolvable_distances(cd.tokens.sequences(), n_positions, cd.tokens.vocab_size, cd.marginals.positions,
                                   seed=seed, groups=groups)
    resolvable = geo.resolvable_summary(res)
    values = {**values, "resolvable_shift_r2": resolvable["shift_r2"], "resolvable_share": resolvable["share"],
              "resolvable_negative_fraction": resolvable["negative_fraction"],
              "resolvable_negative_mass": resolvable["negative_mass"]}
    arrays = {**arrays, "R": res["R"], "G_self": np.diag(res["G"]).copy(),
              "profile_resolvable": resolvable["profile"], "eigenvalues_resolvable": resolvable["eigenvalues"]}
    return values, arrays


#: Options of the noise-aware rank (:func:`posgeom.geometry.noise_aware_rank`) shared by every chapter
#: that reports the rank of a corpus, so that the same matrix gets the same number.
RANK_OPTIONS = {"n_folds": 12, "n_resamples": 50, "level": 0.9}


def run_noise_aware_rank(settings: Settings | None = None, *, corpus: str = Corpus.SST2, force: bool = False,
                         **overrides) -> Result:
    r"""The noise-aware rank of a real corpus's positional geometry (:func:`posgeom.geometry.noise_aware_rank`).

    Where rows are not independent (SST-2's phrases), whole sentences are dealt into the folds. The record:
    :class:`NoiseAwareRankRecord`.
    """
    settings = _settings(settings)
    opts = corpus_options(settings.scale, corpus, **overrides)
    source, data = corpus_source(settings, opts)
    params = {**corpus_params(opts), "rank": RANK_OPTIONS, "data": data}

    def compute():
        tokens = corpus_geometry_of(settings, opts, source).tokens
        # the sentence of each phrase (None where the rows are independent): its phrases share a fold
        groups = resampling_groups(opts, data_dir=settings.data_dir, source=source)
        folds = geo.fold_counts(tokens.sequences(), opts.n_positions, tokens.vocab_size,
                                n_folds=RANK_OPTIONS["n_folds"], seed=settings.seed, groups=groups)
        nar = geo.noise_aware_rank_from_folds(folds, n_resamples=RANK_OPTIONS["n_resamples"],
                                              level=RANK_OPTIONS["level"], seed=settings.seed)
        return NoiseAwareRankRecord(options=RecordedOptions.of(opts), resampled=resampling_unit(opts.corpus, opts.split),
                                    **geo.rank_report(nar), eigenvalues=nar.eigenvalues, counts=nar.counts,
                                    positions=nar.positions)

    return store_result(settings, f"real_corpora_rank_{corpus}", compute, params, force)


def paper_results(settings: Settings | None = None, experiment_prefix: str = "real_corpora") -> list[Result]:
    """Every ``paper``-scale result of this chapter's experiments held by the registry (any code version)."""
    settings = _settings(settings)
    reg = Registry(settings.results_dir)
    return [r for r in reg.entries(scale="paper") if r.experiment.startswith(experiment_prefix)]


__all__ = [
    "CORPUS_NAMES", "PAPER_ALIBI_SST2", "NORMALIZATIONS", "CorpusSource", "EncodingOptions", "RankedSmacof",
    "ScratchTraining", "AlibiGrid", "ChapterIntervals", "DrawOptions", "RealCorporaOptions", "CONFIGS",
    "chapter_settings", "check_corpus", "RECORDED_OPTIONS", "corpus_options", "corpus_params",
    "corpus_source", "corpus_geometry_of", "run_corpus_geometry", "RANK_OPTIONS",
    "run_noise_aware_rank", "paper_results", "RecordedOptions", "CorpusIntervals", "CorpusGeometryRecord",
    "NoiseAwareRankRecord",
]
