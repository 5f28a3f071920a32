r"""Experiments of the chapter "When are sinusoids optimal?" (claim C4).

If the positional statistics are shift-invariant, $D$ is Toeplitz (circulant when the shift wraps around),
and classical MDS of a circulant $D$ is a sinusoidal encoding (:mod:`posgeom.geometry.circulant`). This
module measures how close corpora come to that picture, and how the match degrades along a sweep
$\mu^{(t)} = (1 - t)\mu^{\mathrm{markov}} + t\,\mu^{\mathrm{drift}}$.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .. import geometry as geo
from ..config import settings_or_default as _settings
from ..corpora import synthetic as syn
from ..corpora.identifiers import Corpus, SyntheticFamily
from ..corpora.real import data_key
from ..encodings import shift_summary, sinusoidal_frequencies
from ..geometry.bootstrap import Interval
from ..registry import Result
from ..registry.typed import build, stored
from . import corpus_geometry as cg
from . import optimal_encoding as oe
from .settings import IntervalOptions, as_params, by_scale, params_of, store_result

__all__ = ["CONFIGS", "SinusoidsSettings", "ShiftSummary", "FourierMatch", "StoredSweep", "CorpusShiftIntervals",
           "StoredShiftIntervals", "run_fourier_match", "run_stationarity_sweep", "run_shift_intervals"]


@dataclass(frozen=True)
class SinusoidsSettings:
    """Options of the chapter "When are sinusoids optimal?" (defaults: ``quick``).

    ``n_vectors`` eigenvectors are fitted by one sinusoid on a ``grid`` of frequencies; the top ``2 n_pairs``
    are compared with the lowest Fourier pairs; ``sweep`` holds the weights $t$; ``toeplitz_vocab`` is $v > n$.
    """

    n_vectors: int = 6
    n_pairs: int = 3
    grid: int = 2_000
    sweep: tuple[float, ...] = (0.0, 0.1, 0.25, 0.5, 0.75, 1.0)
    toeplitz_vocab: int = 100
    intervals: IntervalOptions = field(default_factory=IntervalOptions)


CONFIGS = by_scale(SinusoidsSettings(), n_vectors=10, n_pairs=5, grid=8_000,
                   sweep=tuple(np.round(np.linspace(0, 1, 11), 2)), intervals={"n_boot": 1000, "n_folds": 200})


def _shift_options(cfg: SinusoidsSettings) -> dict:
    """The options the Fourier match and the sweep depend on (their registry parameters)."""
    return {k: getattr(cfg, k) for k in ("n_vectors", "n_pairs", "grid", "sweep", "toeplitz_vocab")}


def _summary(D, cfg: SinusoidsSettings, d_model: int, n_heads: int, **kwargs) -> tuple[dict, dict]:
    return shift_summary(D, n_vectors=cfg.n_vectors, n_pairs=cfg.n_pairs, grid=cfg.grid, d_model=d_model,
                         n_heads=n_heads, **kwargs)


@dataclass(frozen=True)
class ShiftSummary:
    """One corpus of ``run_fourier_match``: how close its MDS comes to the circulant picture (``shift_summary``)."""

    n: int
    toeplitz_deviation: float
    circulant_deviation: float
    sinusoid_r2: list[float]        # per top eigenvector, the R^2 of its best sinusoid
    sinusoid_omega: list[float]     # and that sinusoid's frequency (radians per position)
    mean_sinusoid_r2: float
    fourier_match: float
    sinusoidal_scale_free: float
    mds_scale_free: float
    eigenvalue_share: float         # of the top eigenvalues


@dataclass(frozen=True)
class FourierMatch:
    """A stored ``run_fourier_match``: per corpus its :class:`ShiftSummary` and arrays ``<corpus>__<name>``.

    The corpora are keyed by label: ``"markov (population)"`` is the Markov family's population, ``"markov v>n
    (population)"`` the same with a vocabulary larger than the positions.
    """

    summaries: dict[str, ShiftSummary] = stored("{}")
    vaswani_frequencies: list[float]    # the frequencies of the sinusoidal table of the synthetic width
    corpora: list[str]                  # the corpora's labels, in order
    U: dict[str, np.ndarray] = stored("{}__U")        # (n, n_vectors): the top MDS eigenvectors
    omega: dict[str, np.ndarray] = stored("{}__omega")  # (n_vectors,): their sinusoids' frequencies
    eigenvalues: dict[str, np.ndarray] = stored("{}__eigenvalues")  # (n,)
    D: dict[str, np.ndarray] = stored("{}__D")        # (n, n)


def run_fourier_match(settings=None, *, force: bool = False) -> Result:
    r"""How close the MDS eigenvectors of each corpus are to sinusoids (claim C4), stored.

    The record: :class:`FourierMatch`.
    """
    settings = _settings(settings)
    cfg = CONFIGS[settings.scale]
    ccfg = cg.CONFIGS[settings.scale]
    enc = oe.CONFIGS[settings.scale].synthetic_encoder
    params = params_of(_shift_options(cfg), synthetic=ccfg.synthetic, sst2=ccfg.sst2, encoder=ccfg.encoder, synthetic_encoder=enc,
                  seed=settings.seed, data=data_key(settings.data_dir))

    def compute() -> FourierMatch:
        n = ccfg.synthetic.n_positions
        corpora = {}
        corpora["markov (population)"] = geo.hellinger_matrix(
            syn.population_marginals(SyntheticFamily.MARKOV, n_positions=n, seed=settings.seed))
        corpora["markov v>n (population)"] = geo.hellinger_matrix(syn.population_marginals(
            SyntheticFamily.MARKOV, n_positions=n, vocab_size=cfg.toeplitz_vocab, seed=settings.seed))
        for fam in (SyntheticFamily.MARKOV, SyntheticFamily.DRIFT, SyntheticFamily.REGIMES, SyntheticFamily.STATIONARY):
            c = syn.family_corpus(fam, seed=settings.seed, **as_params(ccfg.synthetic))
            corpora[fam] = geo.hellinger_matrix(c.counts())
        summaries = {name: _summary(D, cfg, enc.d_model, enc.n_heads, seed=settings.seed) for name, D in corpora.items()}
        marg, _ = cg.sst2_marginals(settings)
        summaries[Corpus.SST2] = _summary(geo.hellinger_matrix(marg), cfg, ccfg.encoder.d_model, ccfg.encoder.n_heads,
                                          positions=marg.positions, seed=settings.seed)
        arrays = {f"{name}__{k}": x for name, (_, a) in summaries.items() for k, x in a.items()}
        return build(FourierMatch, {str(name): v for name, (v, _) in summaries.items()}, arrays,
                     vaswani_frequencies=[float(x) for x in sinusoidal_frequencies(enc.d_model)],
                     corpora=[str(name) for name in summaries])

    return store_result(settings, "sinusoids_as_mds.fourier_match", compute, params, force)


@dataclass(frozen=True)
class StoredSweep:
    """A stored ``run_stationarity_sweep``, per mixing weight t (0: the Markov corpus, 1: the drift one)."""

    t: tuple[float, ...]
    toeplitz_deviation: tuple[float, ...]
    circulant_deviation: tuple[float, ...]
    fourier_match: tuple[float, ...]
    mean_sinusoid_r2: tuple[float, ...]
    sinusoidal_scale_free: tuple[float, ...]
    mds_scale_free: tuple[float, ...]


def run_stationarity_sweep(settings=None, *, force: bool = False) -> Result:
    r"""From stationary to drifting statistics, on population marginals: the shift statistics at each $t$, stored.

    Values: ``t`` and one list per quantity, aligned with ``t`` (the record: :class:`StoredSweep`).
    """
    settings = _settings(settings)
    cfg = CONFIGS[settings.scale]
    enc = oe.CONFIGS[settings.scale].synthetic_encoder
    n = cg.CONFIGS[settings.scale].synthetic.n_positions
    params = params_of(_shift_options(cfg), n=n, synthetic_encoder=enc, seed=settings.seed)

    def compute() -> StoredSweep:
        keys = ("toeplitz_deviation", "circulant_deviation", "mean_sinusoid_r2", "fourier_match",
                "sinusoidal_scale_free", "mds_scale_free")
        summaries = [_summary(geo.hellinger_matrix(syn.mixed_marginals(t, n, settings.seed)), cfg, enc.d_model,
                              enc.n_heads, seed=settings.seed)[0] for t in cfg.sweep]
        return StoredSweep(t=tuple(float(t) for t in cfg.sweep), **{k: tuple(v[k] for v in summaries) for k in keys})

    return store_result(settings, "sinusoids_as_mds.stationarity_sweep", compute, params, force)


@dataclass(frozen=True)
class CorpusShiftIntervals:
    """One corpus of ``run_shift_intervals``: bootstrap intervals of its shift statistics."""

    toeplitz_deviation: Interval
    circulant_deviation: Interval
    fourier_match: Interval
    n_used: int     # the replicates that entered the intervals
    n_kept: int     # positions kept


@dataclass(frozen=True)
class StoredShiftIntervals:
    """A stored ``run_shift_intervals``: per corpus (SST-2, Markov and drift samples) its intervals and replicates."""

    corpora: dict[str, CorpusShiftIntervals] = stored("{}")
    replicates: dict[str, np.ndarray] = stored("{}__replicates")  # (n_used, 3)


def run_shift_intervals(settings=None, *, force: bool = False) -> Result:
    r"""Bootstrap intervals over sequences of the shift statistics of SST-2 and of the Markov and drift samples.

    The record: :class:`StoredShiftIntervals`.
    """
    settings = _settings(settings)
    cfg, ccfg = CONFIGS[settings.scale], cg.CONFIGS[settings.scale]
    params = params_of(intervals=cfg.intervals, n_pairs=cfg.n_pairs, synthetic=ccfg.synthetic, sst2=ccfg.sst2,
                  seed=settings.seed, data=data_key(settings.data_dir))

    def compute() -> StoredShiftIntervals:
        values, arrays = {}, {}
        for name in (Corpus.SST2, SyntheticFamily.MARKOV, SyntheticFamily.DRIFT):
            if name == Corpus.SST2:
                seqs, tokens, _ = cg.sst2_sequences(settings)
                args = (seqs, ccfg.sst2.n_positions, tokens.vocab_size)
                groups = cg.sst2_groups(settings)  # training phrases resampled with their sentence
            else:
                c = syn.family_corpus(name, seed=settings.seed, **as_params(ccfg.synthetic))
                args, groups = (c.sequences(), c.n_positions, c.vocab_size), None
            values[name], arrays[f"{name}__replicates"] = geo.shift_intervals(
                *args, cfg.n_pairs, **as_params(cfg.intervals), seed=settings.seed, groups=groups,
                progress=f"bootstrap {name}")
        return build(StoredShiftIntervals, values, arrays)

    return store_result(settings, "sinusoids_as_mds.shift_intervals", compute, params, force)
