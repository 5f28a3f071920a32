r"""Under-trained tails of a learned table (claim S4, chapter "Where learned tables fail").

With padding masked out, row $p_i$ receives a gradient only from the sequences that reach position $i$, so
when most training sequences are short the tail rows are updated by few examples. The settings are
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
    r"""Learned tables trained where 90 % of the sequences are shorter than $n/2$, against uniform lengths (S4), stored.

    Returns
    -------
    Result
        values: ``conditions`` (``["skewed", "uniform"]``), ``seeds``, ``boundary`` ($n/2$), per condition lists
        over seeds of ``accuracy_head`` / ``accuracy_tail``, ``neighbour_cos_head`` / ``neighbour_cos_tail``,
        ``movement_head`` / ``movement_tail``, and ``frac_long``; arrays: ``reach`` (conditions, n),
        ``movement`` (conditions, seeds, n), ``tables_final``, ``tables_initial`` (conditions, seeds, n, d).
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


