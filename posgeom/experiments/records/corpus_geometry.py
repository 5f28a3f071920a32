"""Typed records of what run_synthetic_geometry, run_noise_scaling, run_sst2_geometry, run_hellinger_kinds and
run_sensitivity (:mod:`posgeom.experiments.corpus_geometry`) store, read back by
:func:`posgeom.registry.typed.as_record`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...registry.typed import stored
from ..corpus_geometry import SensitivityRow
from .common import StressPair

__all__ = ["StoredSST2Geometry", "SST2View", "FamilyGeometry", "StoredSyntheticGeometry", "FamilyArrays",
           "NoiseScaling", "KindGeometry", "KindsSummary", "StoredSensitivity"]


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
class SST2View(StoredSST2Geometry):
    """A ``run_sst2_geometry`` result with the arrays the chapter draws besides D, F, positions and reach: the most
    frequent tokens (``top_strings``) with their probability at each position (``top_probs``, positions × tokens),
    and the rms distance, rms floor and share of pairs resolved (D > 2F) for each number of phrases (``sizes``)."""
    top_strings: np.ndarray
    top_probs: np.ndarray
    sizes: np.ndarray
    size_rms_D: np.ndarray
    size_rms_F: np.ndarray
    size_frac_above_2F: np.ndarray


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


@dataclass(frozen=True)
class FamilyArrays:
    """One synthetic family's arrays of a ``run_synthetic_geometry`` result (``as_record(result, FamilyArrays,
    at=family, arrays_at=family)``): its population marginals ``mu_pop`` (positions × tokens) and sample
    distances ``D``."""
    mu_pop: np.ndarray
    D: np.ndarray


@dataclass(frozen=True)
class NoiseScaling:
    """A stored ``run_noise_scaling``, typed: sampling noise against the number of sequences ``sizes``. On the
    stationary family the mean squared distance (0 in the population) against the bootstrap, split-half and
    delta-method ((v − 1)/(2N), with its smallest expected count) floors; on the drift family the squared distance
    sampling adds, and its floor."""
    sizes: np.ndarray
    stationary: np.ndarray = stored("stationary_mean_sq")
    bootstrap: np.ndarray = stored("bootstrap_mean_sq")
    split_half: np.ndarray = stored("split_half_mean_sq")
    delta_method: np.ndarray = stored("delta_method_mean_sq")
    drift_excess: np.ndarray = stored("drift_excess_sq")
    drift_floor: np.ndarray = stored("drift_F_sq")
    min_expected_count: np.ndarray


@dataclass(frozen=True)
class KindGeometry:
    """One corpus under one Hellinger convention of a stored ``run_hellinger_kinds``
    (``as_record(result, KindGeometry, at="<corpus>.<convention>")``): the largest distance, the mass MDS clips, its
    full-rank error, and each encoding's :class:`~posgeom.experiments.records.common.StressPair`."""
    max_D: float
    clipped_mass: float
    full_rank_max_error: float
    stress: dict[str, StressPair]


@dataclass(frozen=True)
class KindsSummary:
    """The Hellinger conventions compared (a stored ``run_hellinger_kinds``): geodesic over chord on SST-2, what
    MDS clips and misses, and the sinusoidal table's stresses under the chord and normalised conventions."""
    ratio_min_sst2: float = stored("sst2.geodesic_over_chord.min")
    ratio_max_sst2: float = stored("sst2.geodesic_over_chord.max")
    clip_geo_drift: float = stored("drift.geodesic.clipped_mass")
    err_geo_drift: float = stored("drift.geodesic.full_rank_max_error")
    err_chord_drift: float = stored("drift.chord.full_rank_max_error")
    sin_paper_chord: float = stored("sst2.chord.stress.sinusoidal.paper")
    sin_paper_norm: float = stored("sst2.normalized.stress.sinusoidal.paper")
    sin_sf_chord: float = stored("sst2.chord.stress.sinusoidal.scale_free")
    sin_sf_norm: float = stored("sst2.normalized.stress.sinusoidal.scale_free")


@dataclass(frozen=True)
class StoredSensitivity:
    """A stored ``run_sensitivity``, typed: every preprocessing variant, one
    :class:`~posgeom.experiments.corpus_geometry.SensitivityRow` each."""
    variants: tuple[SensitivityRow, ...]
