r"""Experiments of the chapter "Positional encodings at a glance": the zoo and its distance matrices.

Five encodings (sinusoidal, learned, RoPE, ALiBi, NoPE) are compared through one object, the $n \times n$
matrix of distances between positions (:mod:`posgeom.encodings`). With
$K_\Omega(\delta) = \frac{1}{|\Omega|}\sum_{\omega \in \Omega} \cos(\delta\omega)$, sinusoidal gives
$\|p_i - p_j\|^2 = d\,(1 - K_{\Omega_d}(i - j))$ and RoPE $\hat d_{ij}^2 = 2\,(1 - K_{\Omega_{d_{head}}}(i - j))$:
one kind of kernel on two geometric frequency grids. ALiBi's $\bar m |i - j|$ is the distance of points on
a line, so classical MDS puts all the eigenvalue mass on one axis.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from .. import geometry as geo
from ..config import settings_or_default as _settings
from ..encodings.fixed import rope_distances, sinusoidal_distances
from ..encodings.zoo import zoo_geometry
from ..registry import Result
from ..registry.typed import build, stored
from .settings import EncoderShape, by_scale, store_result

__all__ = ["CONFIGS", "PAPER_SHAPE", "ZooSettings", "ZooShape", "ZooEncoding", "KernelChecks", "AlibiLine",
           "ZooDistances", "KernelPair", "run_zoo", "run_kernel_pair"]

#: The shapes of the paper's model, bert-base-uncased (width 768, 12 heads): those C8 is about.
PAPER_SHAPE = EncoderShape()


@dataclass(frozen=True)
class ZooSettings:
    """Options of the zoo (width and heads: the pretrained model's); ``picture_positions``: those drawn."""

    n: int = 128
    base: float = 10000.0
    picture_positions: int = 48


CONFIGS = by_scale(ZooSettings(), n=512, picture_positions=64)


@dataclass(frozen=True)
class ZooShape:
    """The pretrained model's shape, as ``run_zoo`` stores it (the fields of its ``PretrainedShape``)."""

    d_model: int
    n_heads: int
    n_layers: int
    max_positions: int


@dataclass(frozen=True)
class ZooEncoding:
    """One encoding of a stored ``run_zoo`` (``at="encodings.<name>"``)."""

    enters: str                     # where the encoding enters the model
    n_params: int                   # its positional parameters
    max_distance: float
    toeplitz_spread: float
    eigen_fraction_1: float         # the MDS eigenvalue mass on the first axis (nan for NoPE)
    eigen_fraction_2: float         # on the first two
    separation: float
    separation_normalized: float


@dataclass(frozen=True)
class KernelChecks:
    """Sinusoidal and RoPE as one kernel on two frequency grids, checked (``kernel`` of ``run_zoo``)."""

    d_model: int
    d_head: int
    identity_max_error: float           # RoPE against a sinusoidal table of width d_head, rescaled
    sinusoidal_kernel_max_error: float  # ||p_i - p_j||^2 = d (1 - K(i - j)) on the table's distances
    stress_scale_free: float            # sinusoidal at d against RoPE at d_head
    spearman: float
    omega_range_sinusoidal: list[float]  # [min, max]
    omega_range_rope: list[float]
    n_frequencies_sinusoidal: int
    n_frequencies_rope: int


@dataclass(frozen=True)
class AlibiLine:
    """ALiBi's distances as points on a line (``alibi`` of ``run_zoo``)."""

    slopes: list[float]             # per head
    mean_slope: float
    eigen_fraction_1: float
    line_mds_error: float
    line_spacing_error: float


@dataclass(frozen=True)
class ZooDistances:
    """A stored ``run_zoo``: the zoo's distance matrices at the pretrained model's shape, and their checks.

    Arrays: ALiBi's bias (n_heads, picture_positions, picture_positions), and families (by encoding) of distance
    matrices, MDS layouts, tables, kernels at the offsets ``deltas`` (n,) and their frequencies.
    """

    pretrained: str
    shape: ZooShape
    n: int
    base: float
    encodings: dict[str, ZooEncoding]
    kernel: KernelChecks
    alibi: AlibiLine
    D: dict[str, np.ndarray] = stored("D__{}")          # (n, n), every encoding
    mds2: dict[str, np.ndarray] = stored("mds2__{}")    # (n, 2)
    table: dict[str, np.ndarray] = stored("table__{}")  # (picture_positions, d): sinusoidal, learned
    alibi_bias: np.ndarray
    deltas: np.ndarray
    K: dict[str, np.ndarray] = stored("K_{}")           # (n,): sinusoidal, rope
    omega: dict[str, np.ndarray] = stored("omega_{}")   # their frequencies


def run_zoo(settings=None, *, force: bool = False, n: int | None = None, base: float | None = None) -> Result:
    r"""The zoo at the shape of the pretrained model: tables, biases, distance matrices and their checks, stored.

    The record: :class:`ZooDistances`; its ``kernel`` checks RoPE against a sinusoidal table of width $d_{head}$
    rescaled by $1/\sqrt{d_{head}/2}$.

    Raises
    ------
    posgeom.models.pretrained.ModelUnavailableError
        When the pretrained model cannot be loaded.
    """
    settings = _settings(settings)
    conf = CONFIGS[settings.scale]
    n = conf.n if n is None else int(n)
    base = conf.base if base is None else float(base)
    params = dict(n=n, base=base, pretrained=settings.pretrained, picture_positions=conf.picture_positions)

    def compute() -> ZooDistances:
        from ..config import validate_pretrained
        from ..models.pretrained import position_table, pretrained_shape
        table = position_table(settings.pretrained)
        shape = asdict(pretrained_shape(settings.pretrained))
        values, arrays = zoo_geometry(table, shape, n, base, conf.picture_positions)
        return build(ZooDistances, values, arrays, pretrained=validate_pretrained(settings.pretrained))

    return store_result(settings, "zoo.distances", compute, params, force, model=settings.pretrained)


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
    D: dict[str, np.ndarray] = stored("D_{}")  # (n, n): sinusoidal, rope


def run_kernel_pair(settings=None, *, force: bool = False, n: int | None = None, base: float | None = None,
                    shape: EncoderShape = PAPER_SHAPE) -> Result:
    r"""Sinusoidal at width $d$ against RoPE at head width $d/H$, at the shapes of the paper's model: C8's check.

    Both are formulas of the shape alone, so a CPU computes it at every scale without loading a model. The
    record: :class:`KernelPair`.
    """
    settings = _settings(settings)
    conf = CONFIGS[settings.scale]
    n = conf.n if n is None else int(n)
    base = conf.base if base is None else float(base)
    d, heads = int(shape.d_model), int(shape.n_heads)
    params = dict(n=n, base=base, d_model=d, n_heads=heads)

    def compute() -> KernelPair:
        D_sin, D_rope = sinusoidal_distances(n, d, base=base), rope_distances(n, d // heads, base=base)
        return KernelPair(d_model=d, n_heads=heads, d_head=d // heads, n=n, base=base,
                          stress_scale_free=float(geo.stress(D_sin, D_rope, "scale_free", as_distances=True)),
                          max_sinusoidal=float(np.max(D_sin)), max_rope=float(np.max(D_rope)),
                          D={"sinusoidal": D_sin, "rope": D_rope})

    return store_result(settings, "zoo.kernel_pair", compute, params, force)
