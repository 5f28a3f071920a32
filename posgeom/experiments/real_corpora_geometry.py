r"""Real corpora, the corpus side: settings, a corpus's geometry, its noise-aware rank and its spread.

The maths is in the docstring of :mod:`posgeom.experiments.real_corpora`; this module holds the chapter's
settings (:data:`CONFIGS`), the corpus options, the compute functions of the corpus geometry
(:func:`corpus_geometry_values`, :func:`posgeom.geometry.rank_one_report`, :func:`resolvable_summary`) and their
registry wrappers, :func:`run_corpus_geometry` and :func:`run_noise_aware_rank`. The spreads over
draws are in :mod:`posgeom.experiments.real_corpora_draws`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import geometry as geo
from ..config import Settings, settings_or_default as _settings
from ..corpora.distances import CorpusDistances, CorpusOptions, corpus_distances
from ..registry import Registry, Result
from .settings import as_params, by_scale

CORPUS_NAMES = ("sst2", "imdb")
#: The paper's ALiBi stress on SST-2 (claim C7).
PAPER_ALIBI_SST2 = 0.563
NORMALIZATIONS = ("paper", "scale_free")


# --------------------------------------------------------------------------------------------
# Settings
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CorpusSource:
    """Which texts of a corpus are counted: split, positions, subset size, ``<br />`` handling."""

    split: str = "train"
    n_positions: int = 64
    max_sequences: int | None = None
    br_tags: str = "keep"


@dataclass(frozen=True)
class NoiseOptions:
    """The bootstrap noise floor (:func:`posgeom.geometry.noise_floor`)."""

    method: str = "bootstrap"
    n_rep: int = 8


@dataclass(frozen=True)
class EncodingOptions:
    """The fixed encodings' model shape (BERT-base at both scales: they are formulas) and the random tables."""

    d_model: int = 768
    n_heads: int = 12
    base: float = 10000.0
    layout: str = "interleaved"
    random_sigma: float = 0.02
    random_seeds: tuple[int, ...] = (0, 1, 2, 3, 4)


@dataclass(frozen=True)
class SmacofOptions:
    ranks: tuple[int, ...] = (1, 2, 3)
    max_iter: int = 300
    eps: float = 1e-6


@dataclass(frozen=True)
class ScratchModel:
    """The shape of the encoder trained from scratch (:class:`posgeom.models.encoder.EncoderConfig` fields)."""

    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 2
    d_ff: int = 256


@dataclass(frozen=True)
class ScratchTraining:
    """MLM training of a table from scratch (:func:`posgeom.experiments.real_corpora.run_scratch_table`)."""

    model: ScratchModel = ScratchModel()
    max_steps: int = 100
    batch_size: int = 32
    lr: float = 2e-3
    warmup_steps: int = 10
    every: int = 20
    # CPU threads (None: keep torch's setting); a model this small runs faster on one (posgeom.models.threads)
    threads: int | None = 1


@dataclass(frozen=True)
class AlibiGrid:
    """The unstated choices behind ALiBi's number (:func:`posgeom.experiments.real_corpora.run_alibi_choices`)."""

    n_positions: tuple[int, ...] = (32, 64)
    specials: tuple[str, ...] = ("model", "content")
    kinds: tuple[str, ...] = ("chord", "normalized")
    head_counts: tuple[int, ...] = (8, 12, 16)


@dataclass(frozen=True)
class IntervalOptions:
    """Bootstrap intervals over sequences: replicates, folds (clusters of random sequences), level."""

    corpora: tuple[str, ...] = ("sst2",)
    n_boot: int = 200
    n_folds: int = 100
    level: float = 0.95


@dataclass(frozen=True)
class DrawOptions:
    """Spreads over random draws: cross-half splits of every corpus, and subsets of the subsampled corpora."""

    #: cross-half splits per corpus; a split that leaves a kept position without a token shared by its halves
    #: cannot resolve that position and is replaced by the next seed
    n_splits: int = 5
    subset_seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    #: corpora counted from a random subset at this scale (their subsets are redrawn)
    subset_corpora: tuple[str, ...] = ("imdb",)


@dataclass(frozen=True)
class RealCorporaOptions:
    """Settings of the chapter *Real corpora* (defaults: ``quick``, a 2-core CPU)."""

    sst2: CorpusSource = CorpusSource()
    # a seeded random subset of the 25,000 training reviews (the file is ordered by label)
    imdb: CorpusSource = CorpusSource(n_positions=512, max_sequences=5000, br_tags="space")
    special: str = "model"
    min_count: int = 1
    kind: str = "chord"
    subset_seed: int = 0
    noise: NoiseOptions = NoiseOptions()
    encodings: EncodingOptions = EncodingOptions()
    mds_ranks: tuple[int, ...] = (1, 2, 3, 5, 10)
    smacof: SmacofOptions = SmacofOptions()
    scratch_sst2: ScratchTraining = ScratchTraining()
    scratch_imdb: ScratchTraining = ScratchTraining(max_steps=40, batch_size=4, warmup_steps=4, every=10)
    # corpora whose stress table includes a table trained from scratch (IMDB's n = 512 is too slow for a
    # 2-core CPU: at quick scale only SST-2 gets one; run_scratch_table(corpus="imdb") still works)
    scratch_corpora: tuple[str, ...] = ("sst2",)
    alibi_choices: AlibiGrid = AlibiGrid()
    # corpora whose noise-aware rank the chapter computes
    rank_corpora: tuple[str, ...] = ("sst2", "imdb")
    intervals: IntervalOptions = IntervalOptions()
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
    scratch_corpora=("sst2", "imdb"),
    alibi_choices={"n_positions": (16, 32, 48, 64), "kinds": ("chord", "normalized", "geodesic")},
    intervals={"corpora": ("sst2", "imdb"), "n_boot": 1000, "n_folds": 200},
    draws={"subset_corpora": ()},
)


class PlainText:
    """Text whose display is the text itself, without quotes (for MyST-NB ``glue`` of computed phrases)."""

    def __init__(self, text: str):
        self.text = str(text)

    def __repr__(self) -> str:
        return self.text

    def __str__(self) -> str:
        return self.text


def chapter_settings(scale: str) -> RealCorporaOptions:
    """The chapter's settings at ``scale`` (``CONFIGS[scale]``, read when called, so a patched ``CONFIGS`` counts)."""
    return CONFIGS[scale]


def check_corpus(corpus: str) -> str:
    """``corpus`` if it is one of :data:`CORPUS_NAMES`, else a ``ValueError`` listing them."""
    if corpus not in CORPUS_NAMES:
        raise ValueError(f"unknown corpus {corpus!r}; valid corpora are {', '.join(CORPUS_NAMES)}")
    return corpus


def corpus_options(scale: str, corpus: str, **overrides) -> dict[str, Any]:
    """The options that define a corpus's geometry at ``scale``, with ``overrides`` applied.

    Parameters
    ----------
    scale : {"quick", "paper"}
    corpus : {"sst2", "imdb"}
    **overrides
        Any of ``split``, ``n_positions``, ``max_sequences``, ``br_tags``, ``special``,
        ``min_count``, ``kind``, ``subset_seed``.

    Returns
    -------
    dict
        ``corpus``, ``split``, ``n_positions``, ``max_sequences``, ``br_tags``, ``special``,
        ``min_count``, ``kind``, ``subset_seed``.
    """
    cfg = CONFIGS[scale]
    opts = {"corpus": check_corpus(corpus), **as_params(cfg.source(corpus))}
    opts.update(special=cfg.special, min_count=cfg.min_count, kind=cfg.kind, subset_seed=cfg.subset_seed)
    unknown = set(overrides) - set(opts)
    if unknown:
        raise ValueError(f"unknown corpus option(s) {sorted(unknown)}; valid options are {sorted(opts)}")
    opts.update(overrides)
    return opts


def encoding_shape(scale: str) -> dict[str, Any]:
    """The model shape of the chapter's fixed encodings at ``scale``: the keyword arguments
    ``d_model``, ``n_heads``, ``base``, ``layout`` of :func:`posgeom.encodings.encoding_set`."""
    e = CONFIGS[scale].encodings
    return {"d_model": e.d_model, "n_heads": e.n_heads, "base": e.base, "layout": e.layout}


# --------------------------------------------------------------------------------------------
# Corpus → tokens → counts → D
# --------------------------------------------------------------------------------------------


def source_description(settings: Settings, opts: dict[str, Any]) -> dict[str, Any]:
    """Where the corpus of ``opts`` is read from (recorded with every result, and part of its key).

    The files' checksums identify the content; a local folder is named by :func:`posgeom.corpora.real.data_key`
    rather than by its path, so a result stored on one machine is found on another.
    """
    from ..corpora.real import data_key, resolve_source

    description = resolve_source(opts["corpus"], opts["split"], data_dir=settings.data_dir).describe()
    if description["kind"] == "local":
        description["location"] = data_key(settings.data_dir)
    return description


def corpus_geometry_of(settings: Settings, opts: dict[str, Any]) -> CorpusDistances:
    """The corpus under ``opts`` (:func:`corpus_options`) through the one route,
    :func:`posgeom.corpora.distances.corpus_distances`, with its token ids (no registry: the cheap part).

    Returns
    -------
    posgeom.corpora.distances.CorpusDistances
        ``D`` (n_kept, n_kept), ``positions``, ``tokens``, ``counts`` (n, v), ``marginals`` (n_kept, v).
    """
    return corpus_distances(CorpusOptions.from_dict(opts), data_dir=settings.data_dir, with_tokens=True)


def resolvable_summary(res: dict[str, Any]) -> dict[str, Any]:
    r"""Offset-only share, first-direction share and negative share of one cross-half estimate.

    Parameters
    ----------
    res : dict
        :func:`posgeom.geometry.resolvable_distances` (``R`` (k, k), ``negative_fraction``).

    Returns
    -------
    dict
        ``profile`` (k,) and ``eigenvalues`` (k,) of $R$ (arrays); ``shift_r2``, ``share``
        ($\lambda_1/\sum\lambda^+$), ``negative_fraction`` (pairs with $R^2 < 0$), ``negative_mass``
        ($-\sum_{\lambda<0}\lambda / \sum|\lambda|$).
    """
    R = res["R"]
    _, profile, r2 = geo.toeplitz_projection(R)
    w = geo.gram_eigenvalues(R**2)
    return {"profile": profile, "eigenvalues": w, "shift_r2": r2,
            # lambda_1 / sum_k lambda_k^+
            "share": float(w[0] / np.maximum(w, 0.0).sum()), "negative_fraction": res["negative_fraction"],
            "negative_mass": float(-w[w < 0].sum() / np.abs(w).sum())}


def corpus_geometry_values(corpus_geo: CorpusDistances, opts: dict[str, Any], noise: dict[str, Any],
                           seed: int) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The values and arrays of :func:`run_corpus_geometry` from a counted corpus (no registry).

    Parameters
    ----------
    corpus_geo : posgeom.corpora.distances.CorpusDistances
        With tokens (:func:`corpus_geometry_of`).
    opts : dict
        Corpus options (:func:`corpus_options`).
    noise : dict
        ``method`` and ``n_rep`` of the bootstrap floor.
    seed : int
        Seed of the noise floor and of the cross-half split.
    """
    tokens, counts, marginals, D = corpus_geo.tokens, corpus_geo.counts, corpus_geo.marginals, corpus_geo.D
    floor = geo.noise_floor(counts, method=noise["method"], n_rep=noise["n_rep"], seed=seed,
                            min_count=opts["min_count"], kind=opts["kind"])
    _, profile, r2 = geo.toeplitz_projection(D)
    rep = geo.rank_one_report(D, floor.matrix)
    res = geo.resolvable_distances(tokens.sequences(), opts["n_positions"], tokens.vocab_size, marginals.positions,
                                   seed=seed)
    resolvable = resolvable_summary(res)
    values = {
        "tokenizer": tokens.tokenizer, "n_sequences": tokens.n_sequences, "n_truncated": tokens.n_truncated,
        "n_positions": int(opts["n_positions"]), "n_kept": int(marginals.n_positions),
        "dropped": [int(i) for i in marginals.dropped],
        "reach_min": int(marginals.reach.min()), "reach_max": int(marginals.reach.max()),
        "noise_method": noise["method"], "noise_rep": noise["n_rep"],
        "self_noise_max": float(floor.self_noise.max()), "shift_r2": r2,
        **{k: v for k, v in rep.items() if not k.startswith("eigenvalues")},
        "resolvable_shift_r2": resolvable["shift_r2"], "resolvable_share": resolvable["share"],
        "resolvable_negative_fraction": resolvable["negative_fraction"],
        "resolvable_negative_mass": resolvable["negative_mass"],
        "rank_tol": geo.effective_rank(rep["eigenvalues"], "tol", tol=1e-3),
        "rank_mass_90": geo.effective_rank(rep["eigenvalues"], "mass", q=0.9),
        "rank_mass_99": geo.effective_rank(rep["eigenvalues"], "mass", q=0.99),
    }
    arrays = {
        "D": D, "positions": marginals.positions, "reach": marginals.reach, "noise": floor.matrix,
        "self_noise": floor.self_noise, "profile": profile, "full_lengths": tokens.full_lengths,
        "eigenvalues": rep["eigenvalues"], "eigenvalues_debiased": rep["eigenvalues_debiased"],
        "eigenvalues_noise": rep["eigenvalues_noise"], "R": res["R"], "G_self": np.diag(res["G"]).copy(),
        "profile_resolvable": resolvable["profile"], "eigenvalues_resolvable": resolvable["eigenvalues"],
    }
    return values, arrays


def run_corpus_geometry(settings: Settings | None = None, *, corpus: str = "sst2", force: bool = False,
                        **overrides) -> Result:
    r"""The positional geometry of a real corpus: Hellinger matrix, noise floor, spectrum, shift equivariance.

    Parameters
    ----------
    settings : Settings, optional
        Scale, data folder, seed, results folder (default ``posgeom.get_settings``).
    corpus : {"sst2", "imdb"}
    force : bool
        Recompute even when the registry holds the result.
    **overrides
        Corpus options (:func:`corpus_options`), or ``noise_method`` / ``noise_rep``.

    Returns
    -------
    Result
        ``arrays``: ``D`` (n_kept, n_kept), ``positions`` (n_kept,), ``reach`` (n_kept,), ``noise``
        (n_kept, n_kept), ``self_noise`` (n_kept,), ``profile`` (n_kept,), ``eigenvalues``,
        ``eigenvalues_debiased``, ``eigenvalues_noise`` (n_kept,), ``full_lengths`` (n_sequences,); the
        resolvable geometry ``R`` (n_kept, n_kept), ``G_self`` (n_kept,) $G_{ii}$, ``profile_resolvable`` and
        ``eigenvalues_resolvable`` (n_kept,).
        ``values``: options, source, counts summary, ``shift_r2``, ``share_raw``, ``share_debiased``,
        ``noise_top``, ``rank_above_noise``, ``share_above_noise``, effective ranks, and for the
        resolvable geometry ``resolvable_shift_r2``, ``resolvable_share`` ($\lambda_1/\sum\lambda^+$),
        ``resolvable_negative_fraction``, ``resolvable_negative_mass``.
    """
    settings = _settings(settings)
    noise = as_params(CONFIGS[settings.scale].noise)
    noise["method"] = overrides.pop("noise_method", noise["method"])
    noise["n_rep"] = overrides.pop("noise_rep", noise["n_rep"])
    opts = corpus_options(settings.scale, corpus, **overrides)
    params = {**opts, "noise": noise, "data": source_description(settings, opts)}

    def compute():
        values, arrays = corpus_geometry_values(corpus_geometry_of(settings, opts), opts, noise, settings.seed)
        return {"options": opts, "source": params["data"], **values}, arrays

    return Registry(settings.results_dir).run(
        f"real_corpora_geometry_{corpus}", compute, params=params, scale=settings.scale, seed=settings.seed,
        device="cpu", model=None, force=force,
    )


# --------------------------------------------------------------------------------------------
# The noise-aware rank
# --------------------------------------------------------------------------------------------

#: Options of the noise-aware rank (:func:`posgeom.geometry.noise_aware_rank`) shared by every chapter
#: that reports the rank of a corpus, so that the same matrix gets the same number.
RANK_OPTIONS = {"n_folds": 12, "n_resamples": 50, "level": 0.9}


def rank_report(nar) -> dict[str, Any]:
    """The values stored for a :class:`posgeom.geometry.NoiseAwareRank` (plain data)."""
    w = nar.mean_eigenvalues
    return {
        "rank": nar.rank, "interval": [int(x) for x in nar.interval], "text": str(nar), "level": nar.level,
        "threshold": nar.threshold, "residual_share": nar.residual_share, "n_positions": int(nar.positions.size),
        "n_sequences": nar.n_sequences,
        # lambda_1 / sum_k lambda_k^+ of the mean cross-fitted eigenvalues
        "first_share": float(w[0] / np.maximum(w, 0.0).sum()),
    }


def run_noise_aware_rank(settings: Settings | None = None, *, corpus: str = "sst2", force: bool = False,
                         **overrides) -> Result:
    r"""The noise-aware rank of a real corpus's positional geometry (:func:`posgeom.geometry.noise_aware_rank`).

    Cross-fitted eigenvalues over random half-splits of the sequences, the rank against the
    split-difference null, and its interval, with :data:`RANK_OPTIONS` and the settings' seed.

    Returns
    -------
    Result
        ``values``: ``options``, :func:`rank_report` (``rank`` None when undetermined, ``interval``,
        ``text``, ``threshold``, ``first_share``, ...). ``arrays``: ``eigenvalues`` (n_resamples, k - 1),
        ``counts`` (n_resamples,), ``positions`` (k,).
    """
    settings = _settings(settings)
    opts = corpus_options(settings.scale, corpus, **overrides)
    params = {**opts, "rank": RANK_OPTIONS, "data": source_description(settings, opts)}

    def compute():
        tokens = corpus_geometry_of(settings, opts).tokens
        nar = geo.noise_aware_rank(tokens.sequences(), opts["n_positions"], tokens.vocab_size, seed=settings.seed,
                                   **RANK_OPTIONS)
        values = {"options": opts, **rank_report(nar)}
        return values, {"eigenvalues": nar.eigenvalues, "counts": nar.counts, "positions": nar.positions}

    return Registry(settings.results_dir).run(
        f"real_corpora_rank_{corpus}", compute, params=params, scale=settings.scale, seed=settings.seed,
        device="cpu", model=None, force=force,
    )


def paper_results(settings: Settings | None = None, experiment_prefix: str = "real_corpora") -> list[Result]:
    """Every ``paper``-scale result of this chapter's experiments held by the registry (any code version)."""
    settings = _settings(settings)
    reg = Registry(settings.results_dir)
    return [r for r in reg.entries(scale="paper") if r.experiment.startswith(experiment_prefix)]


__all__ = [
    "CORPUS_NAMES", "PAPER_ALIBI_SST2", "NORMALIZATIONS", "CorpusSource", "NoiseOptions", "EncodingOptions",
    "SmacofOptions", "ScratchModel", "ScratchTraining", "AlibiGrid", "IntervalOptions", "DrawOptions",
    "RealCorporaOptions", "CONFIGS", "chapter_settings", "PlainText", "check_corpus", "corpus_options", "encoding_shape",
    "source_description", "corpus_geometry_of", "resolvable_summary",
    "corpus_geometry_values", "run_corpus_geometry", "RANK_OPTIONS", "rank_report", "run_noise_aware_rank",
    "paper_results",
]
