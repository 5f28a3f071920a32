r"""Summaries of a counted corpus's positional geometry: how shift-equivariant and how close to rank one.

Shift equivariance is the share $R^2_{\mathrm{shift}}$ of $D$'s off-diagonal variance kept by its Toeplitz
projection; a direction of $B$ counts when $\lambda_k(B) > \lambda_{\max}(B_F)$ (noise floor $F$). The cross-half
estimate $R$ (:func:`posgeom.geometry.resolvable_distances`) gives what the corpus can resolve, since the
bootstrap floor underestimates a heavy-tailed vocabulary's noise.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .intervals import spread
from .mds import effective_rank
from .noise import noise_floor
from .rank import resolvable_distances
from .shift import toeplitz_projection
from .spectra import gram_eigenvalues, rank_one_report
from .stress import stress

__all__ = ["resolvable_summary", "corpus_geometry_values", "rank_report", "DRAW_STATISTICS", "draw_statistics",
           "spread_columns", "resolvable_draws", "CORPUS_DRAW_STATISTICS", "corpus_draw_statistics"]


def resolvable_summary(res: dict[str, Any]) -> dict[str, Any]:
    r"""Offset-only share, first-direction share and negative share of one cross-half estimate.

    Parameters
    ----------
    res : dict
        :func:`posgeom.geometry.resolvable_distances` (``R`` (k, k), ``negative_fraction``).

    Returns
    -------
    dict
        ``profile`` (k,) and ``eigenvalues`` (k,) of $R$ (arrays); ``shift_r2``, ``share`` ($\lambda_1/\sum\lambda^+$),
        ``negative_fraction`` (pairs with $R^2 < 0$), ``negative_mass`` ($-\sum_{\lambda<0}\lambda / \sum|\lambda|$).
    """
    R = res["R"]
    _, profile, r2 = toeplitz_projection(R)
    w = gram_eigenvalues(R**2)
    return {"profile": profile, "eigenvalues": w, "shift_r2": r2,
            # lambda_1 / sum_k lambda_k^+
            "share": float(w[0] / np.maximum(w, 0.0).sum()), "negative_fraction": res["negative_fraction"],
            "negative_mass": float(-w[w < 0].sum() / np.abs(w).sum())}


def corpus_geometry_values(corpus_geo, *, n_positions: int, min_count: int, kind: str, noise_method: str,
                           noise_rep: int, seed: int) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The summary of a counted corpus's geometry: noise floor, shift equivariance, rank one.

    Parameters
    ----------
    corpus_geo : posgeom.corpora.distances.CorpusDistances
        With tokens (``with_tokens=True``): ``D`` (k, k), ``counts`` (n, v), ``marginals`` (k, v), ``tokens``.
    n_positions, min_count, kind :
        As the corpus options that built ``corpus_geo``.
    noise_method, noise_rep :
        The bootstrap floor's method and redraws (:func:`posgeom.geometry.noise_floor`).
    seed : int
        Seed of the noise floor and of the cross-half split.

    Returns
    -------
    values : dict
        Counts summary, ``shift_r2``, :func:`posgeom.geometry.rank_one_report`'s shares, effective ranks and the
        ``resolvable_*`` numbers of :func:`resolvable_summary`.
    arrays : dict
        ``D``, ``noise`` (k, k), ``positions``, ``reach``, ``self_noise``, ``profile``, eigenvalues (k,),
        ``full_lengths`` (n_sequences,), ``R`` (k, k), ``G_self``, ``profile_resolvable``,
        ``eigenvalues_resolvable`` (k,).
    """
    tokens, counts, marginals, D = corpus_geo.tokens, corpus_geo.counts, corpus_geo.marginals, corpus_geo.D
    floor = noise_floor(counts, method=noise_method, n_rep=noise_rep, seed=seed, min_count=min_count, kind=kind)
    _, profile, r2 = toeplitz_projection(D)
    rep = rank_one_report(D, floor.matrix)
    res = resolvable_distances(tokens.sequences(), n_positions, tokens.vocab_size, marginals.positions, seed=seed)
    resolvable = resolvable_summary(res)
    values = {
        "tokenizer": tokens.tokenizer, "n_sequences": tokens.n_sequences, "n_truncated": tokens.n_truncated,
        "n_positions": int(n_positions), "n_kept": int(marginals.n_positions),
        "dropped": [int(i) for i in marginals.dropped],
        "reach_min": int(marginals.reach.min()), "reach_max": int(marginals.reach.max()),
        "noise_method": noise_method, "noise_rep": noise_rep,
        "self_noise_max": float(floor.self_noise.max()), "shift_r2": r2,
        **{k: v for k, v in rep.items() if not k.startswith("eigenvalues")},
        "resolvable_shift_r2": resolvable["shift_r2"], "resolvable_share": resolvable["share"],
        "resolvable_negative_fraction": resolvable["negative_fraction"],
        "resolvable_negative_mass": resolvable["negative_mass"],
        "rank_tol": effective_rank(rep["eigenvalues"], "tol", tol=1e-3),
        "rank_mass_90": effective_rank(rep["eigenvalues"], "mass", q=0.9),
        "rank_mass_99": effective_rank(rep["eigenvalues"], "mass", q=0.99),
    }
    arrays = {
        "D": D, "positions": marginals.positions, "reach": marginals.reach, "noise": floor.matrix,
        "self_noise": floor.self_noise, "profile": profile, "full_lengths": tokens.full_lengths,
        "eigenvalues": rep["eigenvalues"], "eigenvalues_debiased": rep["eigenvalues_debiased"],
        "eigenvalues_noise": rep["eigenvalues_noise"], "R": res["R"], "G_self": np.diag(res["G"]).copy(),
        "profile_resolvable": resolvable["profile"], "eigenvalues_resolvable": resolvable["eigenvalues"],
    }
    return values, arrays


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


#: The statistics of :func:`draw_statistics`, in their column order.
DRAW_STATISTICS = ("shift_r2", "share", "negative_fraction", "sinusoidal", "rope", "alibi")


def draw_statistics(R_summary: dict[str, Any], R: np.ndarray, encodings: dict[str, np.ndarray]) -> list[float]:
    """One draw's row of :data:`DRAW_STATISTICS` (stresses ``"scale_free"`` against ``R``)."""
    return [R_summary["shift_r2"], R_summary["share"], R_summary["negative_fraction"],
            *(stress(R, encodings[e], "scale_free", as_distances=True) for e in ("sinusoidal", "rope", "alibi"))]


#: The statistics of :func:`corpus_draw_statistics`, in their column order.
CORPUS_DRAW_STATISTICS = ("shift_r2", "share", "sinusoidal", "rope", "alibi")


def corpus_draw_statistics(D: np.ndarray, encodings: dict[str, np.ndarray]) -> list[float]:
    """One draw's row of :data:`CORPUS_DRAW_STATISTICS` for a corpus's own $D$ (not its resolvable part)."""
    _, _, r2 = toeplitz_projection(D)
    w = gram_eigenvalues(D**2)
    return [r2, float(w[0] / np.maximum(w, 0.0).sum()),
            *(stress(D, encodings[e], "scale_free", as_distances=True) for e in ("sinusoidal", "rope", "alibi"))]


def spread_columns(table: np.ndarray, names=DRAW_STATISTICS) -> dict[str, dict[str, float]]:
    """:func:`posgeom.geometry.spread` of each column of ``table`` (draws × statistics ``names``)."""
    table = np.asarray(table, dtype=np.float64)
    if table.ndim != 2 or table.shape[1] != len(names):
        raise ValueError(f"table must have one column per statistic ({len(names)}); got shape {table.shape}")
    return {name: spread(col) for name, col in zip(names, table.T)}


def resolvable_draws(sequences, n_positions: int, vocab_size: int, positions, encodings, n_draws: int,
                     first_seed: int = 0, *, groups=None) -> tuple[np.ndarray, list[int], list[int]]:
    """:func:`draw_statistics` of ``n_draws`` cross-half estimates, split seeds ``first_seed, first_seed + 1, ...``.

    A split that cannot resolve every position is skipped, up to ``4 n_draws`` seeds; ``groups`` as
    :func:`posgeom.geometry.resolvable_distances`.

    Returns
    -------
    table : ndarray of shape (n_draws, len(DRAW_STATISTICS))
    seeds, skipped : list of int
        The seeds used; those whose split could not resolve every position.
    """
    out, seeds, skipped = [], [], []
    for s in range(int(first_seed), int(first_seed) + 4 * int(n_draws)):
        try:
            res = resolvable_distances(sequences, n_positions, vocab_size, positions, seed=s, groups=groups)
        except ValueError as exc:
            if "share no token" not in str(exc) and "not reached in both halves" not in str(exc):
                raise
            skipped.append(s)
            continue
        out.append(draw_statistics(resolvable_summary(res), res["R"], encodings))
        seeds.append(s)
        if len(out) == n_draws:
            return np.asarray(out), seeds, skipped
    raise ValueError(f"only {len(out)} of {4 * n_draws} cross-half splits resolve every kept position; "
                     "lower n_positions or raise min_count")
