"""Typed records of what run_layer_stress and run_local_peak_test store."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...registry.typed import stored

__all__ = ["LayerStress", "LocalPeak", "PeakTest"]


@dataclass(frozen=True)
class LayerStress:
    """A stored ``run_layer_stress``: peak layers from 1; stresses per layer × heads × normalisations (``*_head``)."""

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
    """One reading's local maxima (layers from 1) and, over redraws of sentences, its shares and layer 4's margin."""

    local_maxima: tuple
    share4: float = stored("share_local_peak")
    share3: float = stored("share_local_peak_3")
    margin_lo: float = stored("margin.p05")
    margin_hi: float = stored("margin.p95")


@dataclass(frozen=True)
class PeakTest:
    """A stored ``run_local_peak_test`` (the static reading does not depend on the sentences, so it has none)."""

    n_used: int
    propagated: LocalPeak
    residual: LocalPeak
