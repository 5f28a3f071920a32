r"""Experiments of the chapter "The geometry of a corpus" (and the corpus helpers of Chapter II).

A corpus gives every position $i$ a distribution of tokens, its positional marginal
$\mu_i(w) = (c_i(w) + \alpha) / (N_i + \alpha v)$, and the positions a geometry through the chord
Hellinger distance $d_H(\mu_i, \mu_j) = \lVert \sqrt{\mu_i} - \sqrt{\mu_j} \rVert_2$. This module measures
it for the synthetic families and SST-2, with its noise floor, the three Hellinger conventions, and its
sensitivity to the preprocessing choices the paper leaves open.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import geometry as geo
from ..config import settings_or_default as _settings
from ..corpora.distances import corpus_distances, resampling_groups
from ..corpora.identifiers import Corpus, SyntheticFamily
from ..corpora.options import CorpusOptions
from ..corpora.real import data_key
from ..corpora.synthetic import family_corpus
from ..corpora.subsets import subset_geometry
from ..corpora.synthetic.sampling_noise import NoiseScaling, family_geometry, noise_scaling
from ..encodings import hellinger_kinds_summary, sensitivity_row
from ..registry import Result
from ..registry.typed import build, stored
from ..validation import check_choices
from .settings import EncoderShape, NoiseOptions, as_params, by_scale, params_of, store_result

__all__ = [
    "CONFIGS", "CorpusGeometrySettings", "SyntheticOptions", "SST2Options",
    "SensitivityOptions", "SensitivityRow", "SYNTHETIC_FAMILIES", "StressPair", "FamilySummary",
    "SyntheticGeometry", "SST2Geometry", "KindGeometry", "GeodesicOverChord", "CorpusKinds", "HellingerKinds",
    "StoredSensitivity",
    "sst2_options", "sst2_token_ids", "sst2_sequences", "sst2_marginals",
    "run_synthetic_geometry", "run_noise_scaling", "run_sst2_geometry", "run_hellinger_kinds",
    "run_sensitivity", "sensitivity_variants",
]

#: The four families whose geometry the chapters compare (the ``"order"`` family is a labelled task).
SYNTHETIC_FAMILIES = (SyntheticFamily.STATIONARY, SyntheticFamily.DRIFT, SyntheticFamily.REGIMES,
                      SyntheticFamily.MARKOV)


@dataclass(frozen=True)
class StressPair:
    """An encoding's stress under the paper's normalisation and the scale-free one."""

    paper: float
    scale_free: float


@dataclass(frozen=True)
class SyntheticOptions:
    """A synthetic corpus of :func:`posgeom.corpora.synthetic.family_corpus`."""

    n_sequences: int = 10_000
    n_positions: int = 50
    vocab_size: int = 100


@dataclass(frozen=True)
class SST2Options:
    """The chapters' SST-2 corpus (an integer ``max_texts`` counts a seeded random subset)."""

    split: str = "train"
    max_texts: int | None = None
    n_positions: int = 64
    special: str = "model"
    min_count: int = 1
    alpha: float = 0.0


@dataclass(frozen=True)
class SensitivityOptions:
    """The values each preprocessing option takes in the sensitivity study (one option changed at a time)."""

    special: tuple[str, ...] = ("model", "content")
    min_count: tuple[int, ...] = (1, 20, 200)
    alpha: tuple[float, ...] = (0.0, 0.01, 1.0)
    n_positions: tuple[int, ...] = (32, 64, 128)


@dataclass(frozen=True)
class CorpusGeometrySettings:
    """Options of the chapter "The geometry of a corpus" (defaults: ``quick``)."""

    synthetic: SyntheticOptions = field(default_factory=SyntheticOptions)
    noise: NoiseOptions = field(default_factory=NoiseOptions)
    noise_sizes: tuple[int, ...] = (250, 1_000, 4_000, 16_000, 64_000)
    sst2: SST2Options = field(default_factory=SST2Options)
    sst2_sizes: tuple[int, ...] = (500, 2_000, 8_000, 32_000, 67_349)
    encoder: EncoderShape = field(default_factory=EncoderShape)
    sensitivity: SensitivityOptions = field(default_factory=SensitivityOptions)


#: Per-scale options. ``quick`` runs on a 2-core CPU in seconds. SST-2 is its whole training split
#: (67,349 phrases) at both scales: tokenising it takes about 5 s once, after which the corpora layer
#: serves the token ids from its disk cache and counting takes a fraction of a second. ``paper`` draws
#: ten times more synthetic sequences, more noise-floor replicates and one more corpus size.
CONFIGS = by_scale(
    CorpusGeometrySettings(), synthetic={"n_sequences": 100_000}, noise={"n_rep": 50},
    noise_sizes=(250, 1_000, 4_000, 16_000, 64_000, 256_000),
)


def _config(settings) -> CorpusGeometrySettings:
    return CONFIGS[settings.scale]


# synthetic families


@dataclass(frozen=True)
class FamilySummary:
    """The scalars of one synthetic family's geometry (``FamilyGeometry.summary``)."""

    rms_D: float
    rms_D_pop: float     # of the population's distances, free of sampling noise
    rms_F: float
    excess_sq: float     # mean squared distance above the population's: what sampling adds
    mean_F_sq: float     # what the noise floor predicts for it
    frac_above_2F: float
    vocab_size: int
    n_sequences: int


def _family_part(name: str):
    """A field of one family's, left out of the stored result (None) when the family was not run."""
    return stored(name, omit_none=True, default=None)


@dataclass(frozen=True)
class SyntheticGeometry:
    """A stored ``run_synthetic_geometry``: per family run, its summary and its arrays ``<family>__<name>``.

    The arrays are families keyed by the family's name (``mu_pop["drift"]``): ``mu_pop``, ``mu`` (positions ×
    vocabulary), the population's and the sample's marginals; ``D``, ``D_pop``, ``F`` (positions × positions), the
    sample's and the population's distances and the noise floor; ``reach`` (positions,).
    """

    mu_pop: dict[str, np.ndarray] = stored("{}__mu_pop")
    mu: dict[str, np.ndarray] = stored("{}__mu")
    D: dict[str, np.ndarray] = stored("{}__D")
    D_pop: dict[str, np.ndarray] = stored("{}__D_pop")
    F: dict[str, np.ndarray] = stored("{}__F")
    reach: dict[str, np.ndarray] = stored("{}__reach")
    stationary: FamilySummary | None = _family_part("stationary")
    drift: FamilySummary | None = _family_part("drift")
    regimes: FamilySummary | None = _family_part("regimes")
    markov: FamilySummary | None = _family_part("markov")


def run_synthetic_geometry(settings=None, *, force: bool = False, families=SYNTHETIC_FAMILIES) -> Result:
    """Marginals, Hellinger matrices and noise floors of the synthetic families: a :class:`SyntheticGeometry`."""
    settings = _settings(settings)
    cfg = _config(settings)
    families = check_choices(families, "family", SYNTHETIC_FAMILIES, plural="families")
    params = params_of(families=list(families), **as_params(cfg.synthetic), **as_params(cfg.noise), seed=settings.seed)

    def compute() -> SyntheticGeometry:
        geometries = {fam: family_geometry(fam, **as_params(cfg.synthetic), **as_params(cfg.noise), seed=settings.seed)
                      for fam in families}
        return build(SyntheticGeometry, {fam: g.summary for fam, g in geometries.items()},
                     {f"{fam}__{k}": x for fam, g in geometries.items() for k, x in g.arrays.items()})

    return store_result(settings, "corpus_geometry.synthetic", compute, params, force)


def run_noise_scaling(settings=None, *, force: bool = False, sizes=None) -> Result:
    """How the noise floor shrinks with the corpus size (stationary and drift families), stored (a ``NoiseScaling``)."""
    settings = _settings(settings)
    cfg = _config(settings)
    sizes = tuple(int(s) for s in (sizes if sizes is not None else cfg.noise_sizes))
    if not sizes or min(sizes) < 2:
        raise ValueError("sizes must be a non-empty list of corpus sizes >= 2")
    synth = dict(n_positions=cfg.synthetic.n_positions, vocab_size=cfg.synthetic.vocab_size)
    params = params_of(sizes=list(sizes), **synth, n_rep=cfg.noise.n_rep, seed=settings.seed)

    def compute() -> NoiseScaling:
        return noise_scaling(sizes, **synth, n_rep=cfg.noise.n_rep, seed=settings.seed)

    return store_result(settings, "corpus_geometry.noise_scaling", compute, params, force)


# SST-2, through the one route from a corpus to its distances (posgeom.corpora.corpus_distances)


def sst2_options(settings=None, *, n_positions: int | None = None, special: str | None = None,
                 alpha: float | None = None, min_count: int | None = None, split: str | None = None) -> CorpusOptions:
    """The :class:`~posgeom.corpora.options.CorpusOptions` of the chapters' SST-2 corpus, some options changed."""
    settings = _settings(settings)
    s = _config(settings).sst2
    return CorpusOptions(
        "sst2", s.split if split is None else split, s.n_positions if n_positions is None else int(n_positions),
        s.special if special is None else special, max_sequences=s.max_texts, subset_seed=settings.seed,
        min_count=s.min_count if min_count is None else min_count, alpha=s.alpha if alpha is None else alpha,
    )


def sst2_token_ids(settings=None, *, split: str = "train", n_positions: int = 64, special: str = "model"):
    """Token ids of a whole SST-2 split cut to ``n_positions``, a :class:`~posgeom.corpora.tokenize.TokenizedCorpus`."""
    settings = _settings(settings)
    options = CorpusOptions("sst2", split, int(n_positions), special)
    return corpus_distances(options, data_dir=settings.data_dir, with_tokens=True).tokens


def sst2_sequences(settings=None, *, n_positions: int | None = None, special: str | None = None):
    """The chapters' SST-2 sequences ``(seqs, tokens, index)``: 1-D int arrays, the tokens, the rows they hold."""
    options = sst2_options(settings, n_positions=n_positions, special=special)
    tokens = corpus_distances(options, data_dir=_settings(settings).data_dir, with_tokens=True).tokens
    seqs = tokens.sequences()
    return seqs, tokens, np.arange(len(seqs))


def sst2_groups(settings=None):
    """A label per sequence of :func:`sst2_sequences` grouping one sentence's phrases (None: whole sentences)."""
    return resampling_groups(sst2_options(settings), data_dir=_settings(settings).data_dir)


def sst2_marginals(settings=None, *, n_positions: int | None = None, special: str | None = None,
                   alpha: float | None = None, min_count: int | None = None):
    """Counts and marginals of the chapters' SST-2 corpus.

    Returns
    -------
    marginals : posgeom.geometry.PositionalMarginals
        ``probs`` (n_kept, 30522), ``positions`` (n_kept,), ``dropped``.
    counts : posgeom.geometry.PositionalCounts (n_positions, 30522)
    """
    options = sst2_options(settings, n_positions=n_positions, special=special, alpha=alpha, min_count=min_count)
    corpus_geo = corpus_distances(options, data_dir=_settings(settings).data_dir)
    return corpus_geo.marginals, corpus_geo.counts


@dataclass(frozen=True)
class SST2Geometry:
    """A stored ``run_sst2_geometry``: SST-2's Hellinger geometry and noise floor, whole and on random subsets.

    The ``size_*`` lists are aligned with ``sizes`` (the subsets' numbers of sequences).
    """

    n_sequences: int
    n_truncated: int        # sequences longer than the positions kept
    n_kept: int             # positions kept
    dropped: list[int]      # positions dropped (reached too rarely)
    rms_D: float
    rms_F: float
    frac_above_2F: float
    mean_D_from_0: float    # mean distance from the first position
    sizes: list[int]
    size_rms_D: list[float]
    size_rms_F: list[float]
    size_frac_above_2F: list[float]
    size_n_kept: list[int]
    D: np.ndarray           # (n_kept, n_kept)
    F: np.ndarray           # (n_kept, n_kept)
    positions: np.ndarray   # (n_kept,)
    reach: np.ndarray       # (n_kept,)
    top_ids: np.ndarray     # (top_tokens,) the most frequent tokens
    top_strings: np.ndarray
    top_probs: np.ndarray   # (n_kept, top_tokens)


def run_sst2_geometry(settings=None, *, force: bool = False, top_tokens: int = 8) -> Result:
    """SST-2's Hellinger geometry and how much of it is sampling noise, whole and on subsets (:class:`SST2Geometry`)."""
    settings = _settings(settings)
    cfg = _config(settings)
    params = params_of(**as_params(cfg.sst2), sizes=list(cfg.sst2_sizes), noise=as_params(cfg.noise), top_tokens=int(top_tokens),
                  seed=settings.seed, data=data_key(settings.data_dir))

    def compute() -> SST2Geometry:
        values, arrays = subset_geometry(sst2_options(settings), data_dir=settings.data_dir, sizes=cfg.sst2_sizes,
                                         **as_params(cfg.noise), seed=settings.seed, top_tokens=int(top_tokens))
        return SST2Geometry(**values, **arrays)

    return store_result(settings, "corpus_geometry.sst2", compute, params, force)


@dataclass(frozen=True)
class KindGeometry:
    """One corpus under one Hellinger convention of ``run_hellinger_kinds`` (``at="<corpus>.<convention>"``)."""

    max_D: float
    clipped_mass: float           # the eigenvalue mass classical MDS clips
    full_rank_max_error: float    # of the full-rank MDS embedding's distances
    stress: dict[str, StressPair]  # per fixed encoding


@dataclass(frozen=True)
class GeodesicOverChord:
    """The range of the geodesic over the chord distance, between 2 and pi / sqrt 2."""

    min: float
    max: float


@dataclass(frozen=True)
class CorpusKinds:
    """One corpus of ``run_hellinger_kinds``: each Hellinger convention, and how the geodesic relates to the chord."""

    chord: KindGeometry
    normalized: KindGeometry
    geodesic: KindGeometry
    geodesic_over_chord: GeodesicOverChord


@dataclass(frozen=True)
class HellingerKinds:
    """A stored ``run_hellinger_kinds``: the drift family and SST-2, and their distances ``<corpus>__<kind>``, one
    family per convention keyed by the corpus (``geodesic["sst2"]``, (n, n))."""

    drift: CorpusKinds
    sst2: CorpusKinds
    chord: dict[str, np.ndarray] = stored("{}__chord")
    normalized: dict[str, np.ndarray] = stored("{}__normalized")
    geodesic: dict[str, np.ndarray] = stored("{}__geodesic")


def run_hellinger_kinds(settings=None, *, force: bool = False) -> Result:
    r"""Chord, normalised and geodesic Hellinger distances side by side (drift family and SST-2), stored.

    The chord $c$ and the Fisher–Rao arc $g = 4 \arcsin(c/2)$ are monotone in each other, $2 \le g/c \le \pi/\sqrt2$.
    The record: :class:`HellingerKinds` (each distance matrix (n, n)).
    """
    settings = _settings(settings)
    cfg = _config(settings)
    params = params_of(synthetic=as_params(cfg.synthetic), sst2=as_params(cfg.sst2), encoder=as_params(cfg.encoder),
                  seed=settings.seed, data=data_key(settings.data_dir))

    def compute() -> HellingerKinds:
        values, arrays = {}, {}
        marg = geo.positional_marginals(family_corpus("drift", seed=settings.seed, **as_params(cfg.synthetic)).counts())
        for name, m in ((SyntheticFamily.DRIFT, marg), (Corpus.SST2, None)):
            m = m if m is not None else sst2_marginals(settings)[0]
            values[name], a = hellinger_kinds_summary(m, m.positions, **as_params(cfg.encoder), seed=settings.seed)
            arrays.update({f"{name}__{k}": x for k, x in a.items()})
        return build(HellingerKinds, values, arrays)

    return store_result(settings, "corpus_geometry.hellinger_kinds", compute, params, force)


@dataclass(frozen=True)
class SensitivityRow:
    r"""One preprocessing variant of the sensitivity study, as stored.

    ``stress`` is ``{encoding: {normalisation: stress}}``; ``frac_above_2F`` and ``rms_F`` are None when
    $\alpha > 0$ (the noise floor is defined for counts).
    """

    name: str
    special: str
    n_positions: int
    min_count: int
    alpha: float
    n_kept: int
    n_dropped: int
    rms_D: float
    lambda1_share: float
    rank_tol: int
    rank_mass: int
    mds1_scale_free: float
    stress: dict
    frac_above_2F: float | None
    rms_F: float | None
    best_scale_free: str


@dataclass(frozen=True)
class StoredSensitivity:
    """A stored ``run_sensitivity``: one :class:`SensitivityRow` per variant."""

    variants: tuple[SensitivityRow, ...]


def sensitivity_variants(settings=None) -> list[dict]:
    """The preprocessing variants of the sensitivity study (dicts): the baseline, then one option changed at a time."""
    cfg = _config(_settings(settings))
    base = {k: getattr(cfg.sst2, k) for k in ("special", "n_positions", "min_count", "alpha")}
    out = [dict(name="baseline", **base)]
    for option, choices in as_params(cfg.sensitivity).items():
        for value in choices:
            if value == base[option]:
                continue
            out.append(dict(base, **{option: value}, name=f"{option}={value}"))
    return out


def run_sensitivity(settings=None, *, force: bool = False) -> Result:
    r"""Which conclusions about SST-2 move with the preprocessing choices the paper leaves open, stored.

    Values: ``variants``, one :func:`posgeom.encodings.sensitivity_row` per :func:`sensitivity_variants` (the
    record: :class:`StoredSensitivity`).
    """
    settings = _settings(settings)
    cfg = _config(settings)
    variants = sensitivity_variants(settings)
    params = params_of(variants=variants, sst2=as_params(cfg.sst2), encoder=as_params(cfg.encoder), noise=as_params(cfg.noise),
                  seed=settings.seed, data=data_key(settings.data_dir))

    def compute() -> StoredSensitivity:
        rows = []
        for var in variants:
            marg, _ = sst2_marginals(settings, n_positions=var["n_positions"], special=var["special"],
                                     alpha=var["alpha"], min_count=var["min_count"])
            rows.append(SensitivityRow(**sensitivity_row(var, marg, **as_params(cfg.encoder), **as_params(cfg.noise),
                                                         seed=settings.seed)))
        return StoredSensitivity(tuple(rows))

    return store_result(settings, "corpus_geometry.sensitivity", compute, params, force)
