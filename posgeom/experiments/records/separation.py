"""Typed records of what run_separation_converged (:mod:`posgeom.experiments.separation_converged`) stores, read back
by :func:`posgeom.registry.typed.as_record`."""

from __future__ import annotations

from dataclasses import dataclass

from ...geometry.intervals import SeedInterval

__all__ = ["ConvergedRun", "StoredConverged"]


@dataclass(frozen=True)
class ConvergedRun:
    """One decision seed of Theorem 4's CPU design as stored: log10 sep(P) over the resolved pairs under the
    conditions (``a``) and on the stationary corpus (``b``), their difference, the same over the unresolved
    pairs, the control's separation, and per setup the separation over all pairs and the final loss."""

    seed: int
    a: float
    b: float
    difference: float
    unresolved: float
    control: float
    sep_all: dict[str, float]
    loss: dict[str, float]
    order_spearman: float


@dataclass(frozen=True)
class StoredConverged:
    """A stored :func:`posgeom.experiments.separation_converged.run_separation_converged`, typed
    (:func:`posgeom.registry.typed.as_record`)."""

    ceiling: float
    least_resolved: float
    n_resolved: int
    n_pairs: int
    runs: tuple[ConvergedRun, ...]
    difference: SeedInterval
