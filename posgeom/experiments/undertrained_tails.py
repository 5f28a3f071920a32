r"""Under-trained tails of a learned table (claim S4, chapter "Where learned tables fail").

A row $p_i$ of a learned table receives a gradient only from the sequences that reach position
$i$: with padding masked out of attention and pooling, $\partial \mathcal L / \partial p_i = 0$
for every sequence of length $\le i$ (:func:`posgeom.models.evaluation.row_gradient_norms` shows it). When
most training sequences are short, the rows of the tail are updated by few examples;
:func:`posgeom.models.table_studies.tails_study` trains a table where 90 % of the sequences are shorter
than $n/2$ and measures, per row, the number of training sequences that reach it ($N_i$), how far it
moved from its initialisation $\lVert p_i^{(T)} - p_i^{(0)}\rVert$, the accuracy on sequences whose decisive marker sits in
the head or in the tail, and the similarity of neighbouring rows in each part. The settings are
``CONFIGS[scale].tails`` of :mod:`posgeom.experiments.extrapolation`.
"""

from __future__ import annotations

from ..config import resolve_device, settings_or_default as _settings
from ..models.table_studies import tails_study
from ..models.threads import torch_threads
from ..registry import Result
from .extrapolation import CONFIGS
from .settings import as_params, store_result

__all__ = ["run_undertrained_tails"]


def run_undertrained_tails(settings=None, *, force: bool = False, seeds=None) -> Result:
    r"""Learned tables trained where 90 % of the sequences are shorter than $n/2$, against a control
    with lengths uniform on ``[min_length, n]`` (S4), by :func:`posgeom.models.table_studies.tails_study`, stored.

    Returns
    -------
    Result
        values: ``conditions`` (``["skewed", "uniform"]``), ``seeds``, ``boundary`` ($n/2$), per
        condition lists over seeds of ``accuracy_head`` / ``accuracy_tail`` (sequences of length
        $n$ whose later marker is before / after the boundary), ``neighbour_cos_head`` /
        ``neighbour_cos_tail`` of the final table, ``movement_head`` / ``movement_tail`` (mean row
        movement), and ``frac_long`` (share of training sequences of length at least $n/2$);
        arrays: ``reach`` (conditions, n) — training sequences reaching each position, ``movement``
        (conditions, seeds, n) — $\lVert p_i^{(T)} - p_i^{(0)}\rVert$, ``tables_final``
        (conditions, seeds, n, d), ``tables_initial`` (conditions, seeds, n, d).
    """
    settings = _settings(settings)
    cfg = CONFIGS[settings.scale]
    seeds = tuple(cfg.tails.seeds if seeds is None else seeds)
    device = resolve_device(settings.device)

    def compute():
        with torch_threads(cfg.threads if device == "cpu" else None):
            return tails_study(as_params(cfg.tails), as_params(cfg.model), seeds, data_seed=settings.seed, device=device)

    params = {"tails": {**as_params(cfg.tails), "seeds": list(seeds)}, "model": as_params(cfg.model),
              "data_seed": settings.seed, "threads": cfg.threads}
    return store_result(settings, "learned_tails", compute, params, force, device=device,
                        model="tiny encoder (posgeom.models), order task")


