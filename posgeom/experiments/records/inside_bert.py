"""Typed records of what run_layer_stress (:mod:`posgeom.experiments.inside_bert`) and run_local_peak_test
(:mod:`posgeom.experiments.layer_peaks`) store, read back by :func:`posgeom.registry.typed.as_record`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...registry.typed import stored

__all__ = ["LayerStress", "LocalPeak", "PeakTest"]


@dataclass(frozen=True)
class LayerStress:
    """A stored ``run_layer_stress``, typed: the model, the sentences and positions, the global peak layer of each
    reading (``peaks["<definition>_<normalisation>"]``, from 1), the mean attention maps (layers, n, n), the
    projected stress per layer (``propagated_head``: layers × heads × normalisations; ``*_pooled``: layers ×
    normalisations; ``residual``: layer inputs and output × normalisations) and the mass each kernel clipped."""
    model: str
    n_layers: int
    n_heads: int
    d_model: int
    n_sentences: int
    n_positions: int
    split: str = stored("options.split")
    special: str = stored("options.special")
    positions: tuple
    map_count: int
    clipped_max: float
    peaks: dict
    maps: np.ndarray
    propagated_head: np.ndarray
    propagated_pooled: np.ndarray
    static_pooled: np.ndarray
    residual: np.ndarray
    clipped: np.ndarray


@dataclass(frozen=True)
class LocalPeak:
    """One reading's local maxima (layers, from 1) and, over the redraws of the sentences, the share with a local
    maximum at layer 4 and at layer 3, and the 5–95 % range of layer 4's margin over its neighbours."""
    local_maxima: tuple
    share4: float = stored("share_local_peak")
    share3: float = stored("share_local_peak_3")
    margin_lo: float = stored("margin.p05")
    margin_hi: float = stored("margin.p95")


@dataclass(frozen=True)
class PeakTest:
    """A stored ``run_local_peak_test``, typed: the redraws used and the local peak of the propagated and the
    residual readings (the static one does not depend on the sentences)."""
    n_used: int
    propagated: LocalPeak
    residual: LocalPeak
