"""Typed records of what run_zoo and run_kernel_pair store."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...registry.typed import stored
from ..zoo import KernelPair, ZooEncoding

__all__ = ["ZooEncoding", "ZooSummary", "ZooPictures", "KernelPair"]


@dataclass(frozen=True)
class ZooSummary:
    """The numbers of a ``run_zoo`` result quoted beside each encoding's."""

    d: int = stored("shape.d_model")
    heads: int = stored("shape.n_heads")
    dhead: int = stored("kernel.d_head")
    nmax: int = stored("shape.max_positions")
    n: int
    identity_err: float = stored("kernel.identity_max_error")
    kernel_err: float = stored("kernel.sinusoidal_kernel_max_error")
    sin_rope_stress: float = stored("kernel.stress_scale_free")
    sin_rope_rho: float = stored("kernel.spearman")
    nfreq_sin: int = stored("kernel.n_frequencies_sinusoidal")
    nfreq_rope: int = stored("kernel.n_frequencies_rope")
    omega_min_sin: float = stored("kernel.omega_range_sinusoidal.0")
    omega_min_rope: float = stored("kernel.omega_range_rope.0")
    alibi_frac: float = stored("alibi.eigen_fraction_1")
    alibi_line_err: float = stored("alibi.line_mds_error")
    alibi_mbar: float = stored("alibi.mean_slope")


@dataclass(frozen=True)
class ZooPictures:
    """The arrays of a stored ``run_zoo`` (``D__<name>``, ``mds2__<name>`` gathered by the reader); bias: H × n × n."""

    distances: dict
    mds2: dict
    sinusoidal_table: np.ndarray = stored("table__sinusoidal")
    learned_table: np.ndarray = stored("table__learned")
    alibi_bias: np.ndarray
    deltas: np.ndarray
    kernel_sinusoidal: np.ndarray = stored("K_sinusoidal")
    kernel_rope: np.ndarray = stored("K_rope")
    omega_sinusoidal: np.ndarray
    omega_rope: np.ndarray
