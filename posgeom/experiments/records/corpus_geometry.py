"""Typed records of what the experiments of :mod:`posgeom.experiments.corpus_geometry` store."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...registry.typed import stored
from ..corpus_geometry import KindGeometry, StoredSensitivity

__all__ = ["StoredSST2Geometry", "SST2View", "FamilyGeometry", "StoredSyntheticGeometry", "FamilyArrays",
           "NoiseScaling", "KindGeometry", "KindsSummary", "StoredSensitivity"]


@dataclass(frozen=True)
class StoredSST2Geometry:
    """A stored ``run_sst2_geometry``: rms of D and of the noise floor F, the share of pairs with D > 2F, the arrays."""

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
class SST2View(StoredSST2Geometry):
    """A ``run_sst2_geometry`` result with the arrays the chapter draws (``top_probs``: positions × tokens)."""

    top_strings: np.ndarray
    top_probs: np.ndarray
    sizes: np.ndarray
    size_rms_D: np.ndarray
    size_rms_F: np.ndarray
    size_frac_above_2F: np.ndarray


@dataclass(frozen=True)
class FamilyGeometry:
    """A synthetic family's geometry against its noise floor."""

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
    """A stored ``run_synthetic_geometry``: each synthetic family's :class:`FamilyGeometry`."""

    drift: FamilyGeometry
    stationary: FamilyGeometry
    markov: FamilyGeometry
    regimes: FamilyGeometry


@dataclass(frozen=True)
class FamilyArrays:
    """A family's ``run_synthetic_geometry`` arrays (``at=family, arrays_at=family``; ``mu_pop``: positions × vocab)."""

    mu_pop: np.ndarray
    D: np.ndarray


@dataclass(frozen=True)
class NoiseScaling:
    """A stored ``run_noise_scaling``: mean squared distances and floors against the number of sequences ``sizes``."""

    sizes: np.ndarray
    stationary: np.ndarray = stored("stationary_mean_sq")
    bootstrap: np.ndarray = stored("bootstrap_mean_sq")
    split_half: np.ndarray = stored("split_half_mean_sq")
    delta_method: np.ndarray = stored("delta_method_mean_sq")
    drift_excess: np.ndarray = stored("drift_excess_sq")
    drift_floor: np.ndarray = stored("drift_F_sq")
    min_expected_count: np.ndarray


@dataclass(frozen=True)
class KindsSummary:
    """The Hellinger conventions compared (a stored ``run_hellinger_kinds``)."""

    ratio_min_sst2: float = stored("sst2.geodesic_over_chord.min")
    ratio_max_sst2: float = stored("sst2.geodesic_over_chord.max")
    clip_geo_drift: float = stored("drift.geodesic.clipped_mass")
    err_geo_drift: float = stored("drift.geodesic.full_rank_max_error")
    err_chord_drift: float = stored("drift.chord.full_rank_max_error")
    sin_paper_chord: float = stored("sst2.chord.stress.sinusoidal.paper")
    sin_paper_norm: float = stored("sst2.normalized.stress.sinusoidal.paper")
    sin_sf_chord: float = stored("sst2.chord.stress.sinusoidal.scale_free")
    sin_sf_norm: float = stored("sst2.normalized.stress.sinusoidal.scale_free")
