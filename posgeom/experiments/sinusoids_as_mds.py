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
from ..corpora.real import data_key
from ..encodings import shift_summary, sinusoidal_frequencies
from ..registry import Result
from . import corpus_geometry as cg
from . import optimal_encoding as oe
from .settings import IntervalOptions, as_params, by_scale, params_of, store_result

__all__ = ["CONFIGS", "SinusoidsSettings", "run_fourier_match", "run_stationarity_sweep",
           "run_shift_intervals"]


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


def run_fourier_match(settings=None, *, force: bool = False) -> Result:
    r"""How close the MDS eigenvectors of each corpus are to sinusoids (claim C4), stored.

    Values: ``{corpus: {...}}`` and ``vaswani_frequencies``; arrays: ``<corpus>__U`` (n, n_vectors),
    ``<corpus>__omega``, ``<corpus>__eigenvalues``, ``<corpus>__D``.
    """
    settings = _settings(settings)
    cfg = CONFIGS[settings.scale]
    ccfg = cg.CONFIGS[settings.scale]
    enc = oe.CONFIGS[settings.scale].synthetic_encoder
    params = params_of(_shift_options(cfg), synthetic=ccfg.synthetic, sst2=ccfg.sst2, encoder=ccfg.encoder, synthetic_encoder=enc,
                  seed=settings.seed, data=data_key(settings.data_dir))

    def compute():
        values, arrays = {}, {}
        n = ccfg.synthetic.n_positions
        corpora = {}
        corpora["markov (population)"] = geo.hellinger_matrix(syn.population_marginals("markov", n_positions=n, seed=settings.seed))
        corpora["markov v>n (population)"] = geo.hellinger_matrix(
            syn.population_marginals("markov", n_positions=n, vocab_size=cfg.toeplitz_vocab, seed=settings.seed))
        for fam in ("markov", "drift", "regimes", "stationary"):
            c = syn.family_corpus(fam, seed=settings.seed, **as_params(ccfg.synthetic))
            corpora[fam] = geo.hellinger_matrix(c.counts())
        for name, D in corpora.items():
            v, a = _summary(D, cfg, enc.d_model, enc.n_heads, seed=settings.seed)
            values[name] = v
            arrays.update({f"{name}__{k}": x for k, x in a.items()})
        marg, _ = cg.sst2_marginals(settings)
        v, a = _summary(geo.hellinger_matrix(marg), cfg, ccfg.encoder.d_model, ccfg.encoder.n_heads,
                        positions=marg.positions, seed=settings.seed)
        values["sst2"] = v
        arrays.update({f"sst2__{k}": x for k, x in a.items()})
        values["vaswani_frequencies"] = [float(x) for x in sinusoidal_frequencies(enc.d_model)]
        values["corpora"] = list(corpora) + ["sst2"]
        return values, arrays

    return store_result(settings, "sinusoids_as_mds.fourier_match", compute, params, force)


def run_stationarity_sweep(settings=None, *, force: bool = False) -> Result:
    r"""From stationary to drifting statistics, on population marginals: the shift statistics at each $t$, stored.

    Values: ``t`` and one list per quantity, aligned with ``t``.
    """
    settings = _settings(settings)
    cfg = CONFIGS[settings.scale]
    enc = oe.CONFIGS[settings.scale].synthetic_encoder
    n = cg.CONFIGS[settings.scale].synthetic.n_positions
    params = params_of(_shift_options(cfg), n=n, synthetic_encoder=enc, seed=settings.seed)

    def compute():
        keys = ("toeplitz_deviation", "circulant_deviation", "mean_sinusoid_r2", "fourier_match",
                "sinusoidal_scale_free", "mds_scale_free")
        out = {k: [] for k in keys}
        for t in cfg.sweep:
            v, _ = _summary(geo.hellinger_matrix(syn.mixed_marginals(t, n, settings.seed)), cfg, enc.d_model, enc.n_heads, seed=settings.seed)
            for k in keys:
                out[k].append(v[k])
        out["t"] = [float(t) for t in cfg.sweep]
        return out, {}

    return store_result(settings, "sinusoids_as_mds.stationarity_sweep", compute, params, force)


def run_shift_intervals(settings=None, *, force: bool = False) -> Result:
    r"""Bootstrap intervals over sequences of the shift statistics of SST-2 and of the Markov and drift samples.

    Values: ``{corpus: {statistic: interval, "n_used", "n_kept"}}``; arrays: ``<corpus>__replicates``.
    """
    settings = _settings(settings)
    cfg, ccfg = CONFIGS[settings.scale], cg.CONFIGS[settings.scale]
    params = params_of(intervals=cfg.intervals, n_pairs=cfg.n_pairs, synthetic=ccfg.synthetic, sst2=ccfg.sst2,
                  seed=settings.seed, data=data_key(settings.data_dir))

    def compute():

        values, arrays = {}, {}
        for name in ("sst2", "markov", "drift"):
            if name == "sst2":
                seqs, tokens, _ = cg.sst2_sequences(settings)
                args = (seqs, ccfg.sst2.n_positions, tokens.vocab_size)
                groups = cg.sst2_groups(settings)  # training phrases resampled with their sentence
            else:
                c = syn.family_corpus(name, seed=settings.seed, **as_params(ccfg.synthetic))
                args, groups = (c.sequences(), c.n_positions, c.vocab_size), None
            values[name], arrays[f"{name}__replicates"] = geo.shift_intervals(
                *args, cfg.n_pairs, **as_params(cfg.intervals), seed=settings.seed, groups=groups,
                progress=f"bootstrap {name}")
        return values, arrays

    return store_result(settings, "sinusoids_as_mds.shift_intervals", compute, params, force)
