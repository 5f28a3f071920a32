r"""Under-trained tails of a learned table (claim S4, chapter "Where learned tables fail").

With padding masked out, row $p_i$ receives a gradient only from the sequences that reach position $i$, so
when most training sequences are short the tail rows are updated by few examples. The settings are
``CONFIGS[scale].tails`` of :mod:`posgeom.experiments.extrapolation`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..config import resolve_device, settings_or_default as _settings
from ..models.table_studies import tails_study
from ..models.threads import torch_threads
from ..registry import Result
from ..registry.typed import build
from .extrapolation import CONFIGS
from .settings import as_params, store_result

__all__ = ["TailCondition", "TailsRecord", "run_undertrained_tails"]


@dataclass(frozen=True)
class TailCondition:
    """One condition of a stored ``run_undertrained_tails``: per seed, the head and tail quantities."""

    accuracy_head: tuple[float, ...]
    accuracy_tail: tuple[float, ...]
    movement_head: tuple[float, ...]
    movement_tail: tuple[float, ...]
    neighbour_cos_head: tuple[float, ...]
    neighbour_cos_tail: tuple[float, ...]
    frac_long: float   # the share of training sequences reaching the tail
    n_train: int


@dataclass(frozen=True)
class TailsRecord:
    """A stored :func:`run_undertrained_tails`: reach (conditions, n), movement (conditions, seeds, n), tables
    (conditions, seeds, n, d) before and after training."""

    conditions: tuple[str, ...]
    seeds: tuple[int, ...]
    boundary: int          # the tail's first position, n/2
    skewed: TailCondition
    uniform: TailCondition
    reach: np.ndarray
    movement: np.ndarray
    tables_final: np.ndarray
    tables_initial: np.ndarray


def run_undertrained_tails(settings=None, *, force: bool = False, seeds=None) -> Result:
    r"""Learned tables trained where 90 % of the sequences are shorter than $n/2$, against uniform lengths (S4), stored.

    The record: :class:`TailsRecord`, a :class:`TailCondition` per condition (``"skewed"``, ``"uniform"``).
    """
    settings = _settings(settings)
    cfg = CONFIGS[settings.scale]
    seeds = tuple(cfg.tails.seeds if seeds is None else seeds)
    device = resolve_device(settings.device)

    def compute():
        with torch_threads(cfg.threads if device == "cpu" else None):
            values, arrays = tails_study(as_params(cfg.tails), as_params(cfg.model), seeds, data_seed=settings.seed,
                                         device=device)
        return build(TailsRecord, values, arrays)

    params = {"tails": {**as_params(cfg.tails), "seeds": list(seeds)}, "model": as_params(cfg.model),
              "data_seed": settings.seed, "threads": cfg.threads}
    return store_result(settings, "learned_tails", compute, params, force, device=device,
                        model="tiny encoder (posgeom.models), order task")
