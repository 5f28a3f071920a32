r"""Real corpora: how much a random draw moves the chapter's numbers.

Two draws stand behind numbers of the chapter: the cross-half split of the resolvable geometry $R$
(:func:`posgeom.geometry.resolvable_distances`) and, at ``quick`` scale, the random subset of IMDB's
reviews. :func:`run_resolvable_splits` repeats the split with several seeds, :func:`run_subset_draws`
redraws the subset; both record, per draw, the statistics of :data:`posgeom.geometry.DRAW_STATISTICS` and
their spread (:func:`posgeom.geometry.resolvable_draws`, :func:`posgeom.geometry.spread_columns`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .. import encodings as enc
from .. import geometry as geo
from ..config import Settings, settings_or_default as _settings
from ..registry import Result
from .real_corpora_geometry import (
    chapter_settings, corpus_geometry_of, corpus_options, corpus_params, corpus_source, encoding_shape,
)
from .settings import store_result

__all__ = ["run_resolvable_splits", "run_subset_draws"]


def run_resolvable_splits(settings: Settings | None = None, *, corpus: str = "sst2", force: bool = False) -> Result:
    """The resolvable geometry over several cross-half splits: how much its numbers depend on the split.

    Returns
    -------
    Result
        ``values``: ``seeds`` (the split seeds used), ``skipped`` (seeds whose split could not resolve
        every kept position), ``spread`` {statistic: {mean, sd, min, max}} over :data:`posgeom.geometry.DRAW_STATISTICS`.
        ``arrays``: ``table`` (splits, statistics).
    """
    settings = _settings(settings)
    n_splits = chapter_settings(settings.scale).draws.n_splits
    opts = corpus_options(settings.scale, corpus)
    source, data = corpus_source(settings, opts)
    params = {**corpus_params(opts), "n_splits": n_splits, "encodings": encoding_shape(settings.scale), "data": data}

    def compute():
        cd = corpus_geometry_of(settings, opts, source)
        pos = cd.marginals.positions
        encs = enc.encoding_set(pos, names=("sinusoidal", "rope", "alibi"), **encoding_shape(settings.scale))
        table, seeds, skipped = geo.resolvable_draws(cd.tokens.sequences(), opts.n_positions, cd.tokens.vocab_size,
                                                     pos, encs, n_splits, settings.seed)
        return {"options": corpus_params(opts), "seeds": seeds, "skipped": skipped,
                "spread": geo.spread_columns(table)}, {"table": table}

    return store_result(settings, f"real_corpora_resolvable_splits_{corpus}", compute, params, force)


def run_subset_draws(settings: Settings | None = None, *, corpus: str = "imdb", force: bool = False) -> Result:
    """A subsampled corpus over several random subsets: the spread of its headline numbers.

    For each subset seed of ``CONFIGS[scale].draws.subset_seeds`` the corpus is counted again from a new
    random subset (same size), and its offset-only share and first-direction share of $D$, the
    ``"scale_free"`` stress of the sinusoidal, RoPE and ALiBi distances against $D$, and the
    :data:`posgeom.geometry.DRAW_STATISTICS` of its resolvable geometry (the first split from the settings'
    seed on that resolves every kept position, :func:`posgeom.geometry.resolvable_draws`) are recorded.

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
    source, data = corpus_source(settings, base)
    seeds = [int(s) for s in cfg.draws.subset_seeds]
    params = {**corpus_params(base), "subset_seeds": seeds, "encodings": encoding_shape(settings.scale), "data": data}

    def compute():
        table, table_d = [], []
        for s in seeds:
            opts = replace(base, subset_seed=s)
            cd = corpus_geometry_of(settings, opts, source)
            pos = cd.marginals.positions
            encs = enc.encoding_set(pos, names=("sinusoidal", "rope", "alibi"), **encoding_shape(settings.scale))
            table.append(geo.resolvable_draws(cd.tokens.sequences(), opts.n_positions, cd.tokens.vocab_size, pos,
                                              encs, 1, settings.seed)[0][0])
            _, _, r2 = geo.toeplitz_projection(cd.D)
            w = geo.gram_eigenvalues(cd.D**2)
            # lambda_1 / sum_k lambda_k^+, then the "scale_free" stress of each fixed encoding
            table_d.append([r2, float(w[0] / np.maximum(w, 0.0).sum()),
                            *(geo.stress(cd.D, encs[e], "scale_free", as_distances=True)
                              for e in ("sinusoidal", "rope", "alibi"))])
        table, table_d = np.asarray(table), np.asarray(table_d)
        spread_d = geo.spread_columns(table_d, ("shift_r2", "share", "sinusoidal", "rope", "alibi"))
        return {"options": corpus_params(base), "seeds": seeds, "spread": geo.spread_columns(table),
                "spread_D": spread_d}, {"table": table, "table_D": table_d}

    return store_result(settings, f"real_corpora_subset_draws_{corpus}", compute, params, force)
