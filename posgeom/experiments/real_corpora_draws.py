r"""Real corpora: how much a random draw moves the chapter's numbers.

Two draws stand behind numbers of the chapter: the cross-half split of the resolvable geometry $R$
(:func:`posgeom.geometry.resolvable_distances`) and, at ``quick`` scale, the random subset of IMDB's
reviews. :func:`run_resolvable_splits` repeats the split with several seeds, :func:`run_subset_draws`
redraws the subset; both record, per draw, the statistics of :data:`DRAW_STATISTICS` and their spread.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import encodings as enc
from .. import geometry as geo
from ..config import Settings, settings_or_default as _settings
from ..registry import Registry, Result
from .real_corpora_geometry import (
    chapter_settings, corpus_geometry_of, corpus_options, encoding_shape, resolvable_summary,
    source_description,
)

__all__ = ["DRAW_STATISTICS", "draw_statistics", "spread", "resolvable_draws", "run_resolvable_splits",
           "run_subset_draws"]


# --------------------------------------------------------------------------------------------

#: The statistics of :func:`draw_statistics`, in their column order.
DRAW_STATISTICS = ("shift_r2", "share", "negative_fraction", "sinusoidal", "rope", "alibi")


def draw_statistics(R_summary: dict[str, Any], R: np.ndarray, encodings: dict[str, np.ndarray]) -> list[float]:
    """One draw's row of :data:`DRAW_STATISTICS`: the :func:`resolvable_summary` numbers and the
    ``"scale_free"`` stress against ``R`` of the sinusoidal, RoPE and ALiBi distances ``encodings``."""
    return [R_summary["shift_r2"], R_summary["share"], R_summary["negative_fraction"],
            *(geo.stress(R, encodings[e], "scale_free", as_distances=True) for e in ("sinusoidal", "rope", "alibi"))]


def spread(table: np.ndarray, names=DRAW_STATISTICS) -> dict[str, dict[str, float]]:
    """:func:`posgeom.geometry.spread` of each column of ``table`` (draws × statistics ``names``)."""
    table = np.asarray(table, dtype=np.float64)
    if table.ndim != 2 or table.shape[1] != len(names):
        raise ValueError(f"table must have one column per statistic ({len(names)}); got shape {table.shape}")
    return {name: geo.spread(col) for name, col in zip(names, table.T)}


def resolvable_draws(sequences, n_positions: int, vocab_size: int, positions, encodings, n_draws: int,
                     first_seed: int = 0) -> tuple[np.ndarray, list[int], list[int]]:
    """:func:`draw_statistics` of ``n_draws`` cross-half estimates, split seeds ``first_seed, first_seed + 1, ...``.

    A split that leaves one of ``positions`` unreached in a half, or whose halves share no token there,
    cannot resolve it (:func:`posgeom.geometry.resolvable_distances` refuses it): its seed is skipped and
    the next one drawn, up to ``4 n_draws`` seeds.

    Returns
    -------
    table : ndarray of shape (n_draws, len(DRAW_STATISTICS))
    seeds : list of int
        The seeds used.
    skipped : list of int
        The seeds whose split could not resolve every position.
    """
    out, seeds, skipped = [], [], []
    for s in range(int(first_seed), int(first_seed) + 4 * int(n_draws)):
        try:
            res = geo.resolvable_distances(sequences, n_positions, vocab_size, positions, seed=s)
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


def run_resolvable_splits(settings: Settings | None = None, *, corpus: str = "sst2", force: bool = False) -> Result:
    """The resolvable geometry over several cross-half splits: how much its numbers depend on the split.

    Returns
    -------
    Result
        ``values``: ``seeds`` (the split seeds used), ``skipped`` (seeds whose split could not resolve
        every kept position), ``spread`` {statistic: {mean, sd, min, max}} over :data:`DRAW_STATISTICS`.
        ``arrays``: ``table`` (splits, statistics).
    """
    settings = _settings(settings)
    n_splits = chapter_settings(settings.scale).draws.n_splits
    opts = corpus_options(settings.scale, corpus)
    params = {**opts, "n_splits": n_splits, "encodings": encoding_shape(settings.scale),
              "data": source_description(settings, opts)}

    def compute():
        cd = corpus_geometry_of(settings, opts)
        pos = cd.marginals.positions
        encs = enc.encoding_set(pos, names=("sinusoidal", "rope", "alibi"), **encoding_shape(settings.scale))
        table, seeds, skipped = resolvable_draws(cd.tokens.sequences(), opts["n_positions"], cd.tokens.vocab_size,
                                                 pos, encs, n_splits, settings.seed)
        return {"options": opts, "seeds": seeds, "skipped": skipped, "spread": spread(table)}, {"table": table}

    return Registry(settings.results_dir).run(
        f"real_corpora_resolvable_splits_{corpus}", compute, params=params, scale=settings.scale, seed=settings.seed,
        device="cpu", model=None, force=force,
    )


def run_subset_draws(settings: Settings | None = None, *, corpus: str = "imdb", force: bool = False) -> Result:
    """A subsampled corpus over several random subsets: the spread of its headline numbers.

    For each subset seed of ``CONFIGS[scale].draws.subset_seeds`` the corpus is counted again from a new
    random subset (same size), and its offset-only share and first-direction share of $D$, the
    ``"scale_free"`` stress of the sinusoidal, RoPE and ALiBi distances against $D$, and the
    :data:`DRAW_STATISTICS` of its resolvable geometry (the first split from the settings' seed on that
    resolves every kept position, :func:`resolvable_draws`) are recorded.

    Returns
    -------
    Result
        ``values``: ``seeds``, ``spread`` (resolvable, as :func:`run_resolvable_splits`), ``spread_D``
        {``shift_r2``, ``share``, ``sinusoidal``, ``rope``, ``alibi``: {mean, sd, min, max}}.
        ``arrays``: ``table`` (subsets, statistics), ``table_D`` (subsets, 5).
    """
    settings = _settings(settings)
    cfg = chapter_settings(settings.scale)
    base = corpus_options(settings.scale, corpus)
    seeds = [int(s) for s in cfg.draws.subset_seeds]
    params = {**base, "subset_seeds": seeds, "encodings": encoding_shape(settings.scale),
              "data": source_description(settings, base)}

    def compute():
        table, table_d = [], []
        for s in seeds:
            opts = {**base, "subset_seed": s}
            cd = corpus_geometry_of(settings, opts)
            pos = cd.marginals.positions
            encs = enc.encoding_set(pos, names=("sinusoidal", "rope", "alibi"), **encoding_shape(settings.scale))
            table.append(resolvable_draws(cd.tokens.sequences(), opts["n_positions"], cd.tokens.vocab_size, pos, encs,
                                          1, settings.seed)[0][0])
            _, _, r2 = geo.toeplitz_projection(cd.D)
            w = geo.gram_eigenvalues(cd.D**2)
            table_d.append([r2, float(w[0] / np.maximum(w, 0.0).sum()),
                            *(geo.stress(cd.D, encs[e], "scale_free", as_distances=True)
                              for e in ("sinusoidal", "rope", "alibi"))])
        table, table_d = np.asarray(table), np.asarray(table_d)
        spread_d = spread(table_d, ("shift_r2", "share", "sinusoidal", "rope", "alibi"))
        return {"options": base, "seeds": seeds, "spread": spread(table), "spread_D": spread_d}, \
            {"table": table, "table_D": table_d}

    return Registry(settings.results_dir).run(
        f"real_corpora_subset_draws_{corpus}", compute, params=params, scale=settings.scale, seed=settings.seed,
        device="cpu", model=None, force=force,
    )
