r"""What the chapter "Encodings at a glance" reports, from the stored zoo (:mod:`posgeom.experiments.zoo`).

The zoo stores, per encoding, where it enters the model, its parameters and the summaries of its distance matrix,
and the kernel identity that links the sinusoidal table with RoPE; this module reads them typed, and builds the
chapter's "Paper vs this book" row for C8, decided by its rule in :mod:`posgeom.verdicts`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import verdicts as rules
from ..config import settings_or_default as _settings
from ..registry import Result, stored_text
from ..registry.typed import as_record, stored
from ..encodings.zoo import ZOO
from ..experiments.zoo import CONFIGS, run_kernel_pair
from ..report import ComparisonRow

__all__ = ["ZooEncoding", "encodings", "ZooSummary", "zoo_summary", "KernelPair", "c8_row", "comparison_rows",
           "ZooPictures", "zoo_pictures", "Captions", "captions"]


@dataclass(frozen=True)
class ZooEncoding:
    """One encoding of a stored ``run_zoo`` (``at="encodings.<name>"``): where it enters the model, its positional
    parameters, and the geometry of its distance matrix (the chapter's second table)."""

    enters: str
    n_params: int
    max_distance: float
    toeplitz_spread: float
    eigen_fraction_1: float
    eigen_fraction_2: float
    separation: float
    separation_normalized: float


def encodings(zoo: Result) -> dict[str, ZooEncoding]:
    """Every encoding of a stored ``run_zoo``, typed, in the zoo's order."""
    return {name: as_record(zoo, ZooEncoding, at=f"encodings.{name}") for name in ZOO}


@dataclass(frozen=True)
class ZooSummary:
    """The numbers of a ``run_zoo`` result the chapter quotes beside each encoding's (:class:`ZooEncoding`): the
    pretrained model's shapes, the sinusoidal–RoPE kernel identity, and ALiBi's line."""

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


def zoo_summary(zoo: Result) -> ZooSummary:
    """The :class:`ZooSummary` of a ``run_zoo`` result."""
    return as_record(zoo, ZooSummary)


@dataclass(frozen=True)
class KernelPair:
    """A stored ``run_kernel_pair``, typed: sinusoidal against RoPE at the paper model's shapes."""

    d_model: int
    n_heads: int
    d_head: int
    n: int
    base: float
    stress_scale_free: float
    max_sinusoidal: float
    max_rope: float


def _pair_text(p: KernelPair, with_n: bool = False) -> str:
    """Sinusoidal against RoPE in words: the scale-free stress between their geometries and their largest
    distances (after the number of positions, ``with_n``)."""
    return (f"n = {p.n}: " if with_n else "") + (f"scale-free stress {p.stress_scale_free:.4f}, largest distances "
                                                 f"{p.max_sinusoidal:.1f} vs {p.max_rope:.2f}")


def c8_row(identity_error: float, pair: KernelPair, paper_pair: str, settings=None) -> ComparisonRow:
    """C8, decided by :func:`posgeom.verdicts.c8_sinusoidal_rope` on ``pair`` (the paper model's shapes, formulas
    only), with the zoo's ``identity_error`` and the paper-scale ``paper_pair`` in words."""
    return ComparisonRow(
        "C8", ours=(f"same kernel K on two frequency sets (identity to {identity_error:.0e}); sinusoidal "
                    f"(d = {pair.d_model}) vs RoPE (d_head = {pair.d_head}): {_pair_text(pair)} "
                    f"(formulas, no corpus: exact, no sampling interval); paper scale: {paper_pair}"),
        scale=_settings(settings).scale,
        model=f"none (shapes of {rules.PAPER_MODEL}: d = {pair.d_model}, {pair.n_heads} heads)",
        corpus="none", options=f"n = {pair.n}, base {pair.base:g}",
        # the formulas need the shapes only: the paper model's are known without loading it
        decision=rules.c8_sinusoidal_rope(pair.stress_scale_free, pair.max_sinusoidal / pair.max_rope,
                                          model=rules.PAPER_MODEL))


def comparison_rows(zoo: Result, pair: Result, settings=None) -> list:
    """The chapter's "Paper vs this book" row (:func:`c8_row`, in a list) from ``run_zoo``, ``run_kernel_pair``
    and the paper-scale pair where one is stored."""
    paper_pair = stored_text(run_kernel_pair, _settings(settings),
                             lambda r: _pair_text(as_record(r, KernelPair), with_n=True))
    return [c8_row(zoo_summary(zoo).identity_err, as_record(pair, KernelPair), paper_pair, settings)]


@dataclass(frozen=True)
class ZooPictures:
    """The arrays of the zoo the chapter draws: per encoding its distance matrix and 2-D MDS layout; the
    sinusoidal and learned tables (first positions); ALiBi's bias (heads × n × n); the offsets ``deltas`` with
    the sinusoidal and RoPE kernels K(δ) on them, and the two frequency sets."""

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


def zoo_pictures(zoo: Result) -> ZooPictures:
    """The :class:`ZooPictures` of a ``run_zoo`` result; per encoding, its arrays are stored as ``D__<name>`` and
    ``mds2__<name>``."""
    def each_encoding(prefix: str) -> dict[str, np.ndarray]:
        found = {name.removeprefix(prefix): a for name, a in zoo.arrays.items() if name.startswith(prefix)}
        return {name: np.asarray(found[name]) for name in ZOO}

    return as_record(zoo, ZooPictures, distances=each_encoding("D__"), mds2=each_encoding("mds2__"))


@dataclass(frozen=True)
class Captions:
    """What the chapter's figure captions state, from the settings in force (glued as ``zcap_<field>``),
    so that a caption is right at both scales."""

    scale: str
    last_position: int    # positions 0 to last_position are compared
    picture_positions: int  # the rows of the tables drawn
    quick_positions: int  # the positions compared at each scale, for the "What this chapter needs" box
    paper_positions: int


def captions(settings=None) -> Captions:
    """The :class:`Captions` of the chapter at ``settings.scale`` (:data:`posgeom.experiments.zoo.CONFIGS`)."""
    settings = _settings(settings)
    conf = CONFIGS[settings.scale]
    return Captions(scale=settings.scale, last_position=int(conf.n) - 1, picture_positions=int(conf.picture_positions),
                    quick_positions=int(CONFIGS["quick"].n), paper_positions=int(CONFIGS["paper"].n))
