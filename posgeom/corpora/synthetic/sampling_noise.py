r"""How much of a synthetic corpus's geometry is sampling noise, and how that shrinks with the corpus size.

For $N_i p_w \gg 1$ the delta method gives $\operatorname{Var}\sqrt{\hat p_w} \approx (1 - p_w)/(4 N_i)$,
hence for two positions with the same law over $v$ tokens

$$\mathbb E\, d_H^2(\hat\mu_i, \hat\mu_j) \approx \frac{v - 1}{4}\Big(\frac1{N_i} + \frac1{N_j}\Big),$$

and for different laws $\mathbb E\, d_H^2 \approx d_H^2(\mu_i, \mu_j) + F_{ij}^2$: noise adds in
quadrature (:func:`family_geometry`, :func:`noise_scaling`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ... import geometry as geo
from . import family_corpus

__all__ = ["FamilyGeometry", "family_geometry", "NoiseScaling", "noise_scaling"]


@dataclass(frozen=True)
class FamilyGeometry:
    """The sample and population geometry of one synthetic corpus.

    ``summary`` holds the scalars a chapter shows (``rms_D``, ``rms_D_pop``, ``rms_F``, ``excess_sq``,
    ``mean_F_sq``, ``frac_above_2F``, ``vocab_size``, ``n_sequences``); ``arrays`` the matrices
    ``mu_pop``, ``mu`` (n, v), ``D``, ``D_pop``, ``F`` (n, n) and ``reach`` (n,).
    """

    summary: dict
    arrays: dict


def family_geometry(family: str, *, n_sequences: int, n_positions: int, vocab_size: int, method: str = "bootstrap",
                    n_rep: int = 20, seed: int) -> FamilyGeometry:
    r"""Marginals, sample and population Hellinger matrices and the noise floor of one synthetic family.

    The excess $\overline{D^2} - \overline{(D^{pop})^2}$ is what sampling adds; $\overline{F^2}$ what the
    noise floor predicts for it.

    Parameters
    ----------
    family, n_sequences, n_positions, vocab_size, seed :
        The corpus drawn (:func:`posgeom.corpora.synthetic.family_corpus`).
    method, n_rep :
        The noise floor's estimator and replicates (:func:`posgeom.geometry.noise_floor`, seeded with ``seed``).
    """
    corpus = family_corpus(family, seed=seed, n_sequences=n_sequences, n_positions=n_positions, vocab_size=vocab_size)
    counts = corpus.counts()
    marg = geo.positional_marginals(counts)
    if marg.dropped:
        raise ValueError(f"family {family}: positions {marg.dropped} are never reached; use more sequences")
    D = geo.hellinger_matrix(marg)
    D_pop = geo.hellinger_matrix(corpus.population)
    F = geo.noise_floor(counts, method, n_rep, seed=seed).matrix
    d, dp, f = geo.offdiag(D), geo.offdiag(D_pop), geo.offdiag(F)
    summary = dict(
        rms_D=geo.rms_offdiag(D), rms_D_pop=geo.rms_offdiag(D_pop), rms_F=geo.rms_offdiag(F),
        # what sampling adds to the squared distances, and what the floor predicts
        excess_sq=float(np.mean(d * d) - np.mean(dp * dp)), mean_F_sq=float(np.mean(f * f)),
        frac_above_2F=float(np.mean(d > 2 * f)), vocab_size=int(corpus.vocab_size),
        n_sequences=int(corpus.n_sequences),
    )
    arrays = dict(mu_pop=corpus.population, mu=marg.probs, D=D, D_pop=D_pop, F=F, reach=counts.reach)
    return FamilyGeometry(summary, arrays)


@dataclass(frozen=True)
class NoiseScaling:
    """How the noise shrinks with the corpus size (:func:`noise_scaling`); lists aligned with ``sizes``."""

    sizes: list
    stationary_mean_sq: list
    bootstrap_mean_sq: list
    split_half_mean_sq: list
    delta_method_mean_sq: list
    drift_excess_sq: list
    drift_F_sq: list
    min_expected_count: list


def noise_scaling(sizes, *, n_positions: int, vocab_size: int, n_rep: int, seed: int) -> NoiseScaling:
    r"""The mean squared noise distance at each corpus size, measured and predicted.

    Stationary family (all population distances 0): the sample's mean $d_H^2$ against the noise floor
    (bootstrap, split-half) and the delta method $\frac{v-1}{4}\cdot\frac{2}{N}$, which needs
    ``min_expected_count`` $= N \min_w \pi(w) \gg 1$. Drift family: the excess against $\overline{F^2}$.

    Parameters
    ----------
    sizes : iterable of int
        The corpus sizes $N$.
    n_positions, vocab_size, seed :
        The corpora drawn (:func:`posgeom.corpora.synthetic.family_corpus`).
    n_rep : int
        Replicates of the noise floor.
    """
    synth = dict(n_positions=n_positions, vocab_size=vocab_size)
    out = {k: [] for k in ("stationary_mean_sq", "bootstrap_mean_sq", "split_half_mean_sq", "delta_method_mean_sq",
                           "drift_excess_sq", "drift_F_sq", "min_expected_count")}
    for N in sizes:
        st = family_corpus("stationary", n_sequences=N, seed=seed, **synth)
        counts = st.counts()
        D = geo.hellinger_matrix(counts)
        out["stationary_mean_sq"].append(float(np.mean(geo.offdiag(D) ** 2)))
        for method in ("bootstrap", "split_half"):
            F = geo.noise_floor(counts, method, n_rep, seed=seed).matrix
            out[f"{method}_mean_sq"].append(float(np.mean(geo.offdiag(F) ** 2)))
        v = int(np.count_nonzero(st.population[0]))
        out["delta_method_mean_sq"].append(float(np.mean(geo.offdiag(geo.delta_method_noise(counts.reach, v)))))
        out["min_expected_count"].append(float(N * st.population[0][st.population[0] > 0].min()))
        dr = family_corpus("drift", n_sequences=N, seed=seed, **synth)
        dcounts = dr.counts()
        Dd, Dp = geo.hellinger_matrix(dcounts), geo.hellinger_matrix(dr.population)
        Fd = geo.noise_floor(dcounts, "bootstrap", n_rep, seed=seed).matrix
        out["drift_excess_sq"].append(float(np.mean(geo.offdiag(Dd) ** 2) - np.mean(geo.offdiag(Dp) ** 2)))
        out["drift_F_sq"].append(float(np.mean(geo.offdiag(Fd) ** 2)))
    return NoiseScaling(sizes=[int(s) for s in sizes], **out)
