"""Typed records of what run_sst2_geometry and run_synthetic_geometry (:mod:`posgeom.experiments.corpus_geometry`)
stores, read back by :func:`posgeom.registry.typed.as_record`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


__all__ = ["StoredSST2Geometry", "FamilyGeometry", "StoredSyntheticGeometry"]


@dataclass(frozen=True)
class StoredSST2Geometry:
    """A stored ``run_sst2_geometry``, typed: the sequences counted, the mean distance from position 0, the
    rms of D and of the noise floor F, the share of pairs with D > 2F, and the arrays D, F, positions, reach."""

    n_sequences: int
    mean_D_from_0: float
    rms_D: float
    rms_F: float
    frac_above_2F: float
    D: np.ndarray
    F: np.ndarray
    positions: np.ndarray
    reach: np.ndarray


@dataclass(frozen=True)
class FamilyGeometry:
    """A synthetic family's geometry against its noise floor: the share of pairs with D > 2F, the squared
    distance above the population's against the squared floor, and the root-mean-square distance."""

    frac_above_2F: float
    excess_sq: float
    mean_F_sq: float
    rms_D: float

    @property
    def excess_ratio(self) -> float:
        """Squared distance above the population's, over the squared noise floor."""
        return self.excess_sq / self.mean_F_sq


@dataclass(frozen=True)
class StoredSyntheticGeometry:
    """A stored ``run_synthetic_geometry``, typed: each synthetic family's :class:`FamilyGeometry`."""

    drift: FamilyGeometry
    stationary: FamilyGeometry
    markov: FamilyGeometry
    regimes: FamilyGeometry
