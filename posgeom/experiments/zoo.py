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
from .settings import EncoderShape, by_scale, store_result

__all__ = ["CONFIGS", "PAPER_SHAPE", "ZooSettings", "run_zoo", "run_kernel_pair"]

#: The shapes of the paper's model, bert-base-uncased (width 768, 12 heads): those C8 is about.
PAPER_SHAPE = EncoderShape()


@dataclass(frozen=True)
class ZooSettings:
    """Options of the zoo (width and heads: the pretrained model's); ``picture_positions``: those drawn."""

    n: int = 128
    base: float = 10000.0
    picture_positions: int = 48


CONFIGS = by_scale(ZooSettings(), n=512, picture_positions=64)


def run_zoo(settings=None, *, force: bool = False, n: int | None = None, base: float | None = None) -> Result:
    r"""The zoo at the shape of the pretrained model: tables, biases, distance matrices and their checks, stored.

    Values: the model and its shape; per encoding where it enters, its positional parameters, Toeplitz spread,
    MDS eigenvalue fractions and separation; ``kernel``: the identity check (RoPE against a sinusoidal table of
    width $d_{head}$ rescaled by $1/\sqrt{d_{head}/2}$) and the stress and Spearman's $\rho$ between sinusoidal at
    $d$ and RoPE at $d_{head}$; ``alibi``: slopes, one-axis fraction, line-fit error. Arrays: ``D__<name>``
    (n, n), ``mds2__<name>`` (n, 2), ``table__sinusoidal``, ``table__learned`` (picture_positions, d),
    ``alibi_bias`` (n_heads, picture_positions, picture_positions), ``deltas``, ``K_sinusoidal``, ``K_rope``,
    ``omega_sinusoidal``, ``omega_rope``.

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

    def compute():
        from ..config import validate_pretrained
        from ..models.pretrained import position_table, pretrained_shape
        table = position_table(settings.pretrained)
        shape = asdict(pretrained_shape(settings.pretrained))
        values, arrays = zoo_geometry(table, shape, n, base, conf.picture_positions)
        return dict(pretrained=validate_pretrained(settings.pretrained), **values), arrays

    return store_result(settings, "zoo.distances", compute, params, force, model=settings.pretrained)


def run_kernel_pair(settings=None, *, force: bool = False, n: int | None = None, base: float | None = None,
                    shape: EncoderShape = PAPER_SHAPE) -> Result:
    r"""Sinusoidal at width $d$ against RoPE at head width $d/H$, at the shapes of the paper's model: C8's check.

    Both are formulas of the shape alone, so a CPU computes it at every scale without loading a model. Values:
    ``d_model``, ``n_heads``, ``d_head``, ``n``, ``base``, ``stress_scale_free``, ``max_sinusoidal``, ``max_rope``;
    arrays: ``D_sinusoidal``, ``D_rope`` (n, n).
    """
    settings = _settings(settings)
    conf = CONFIGS[settings.scale]
    n = conf.n if n is None else int(n)
    base = conf.base if base is None else float(base)
    d, heads = int(shape.d_model), int(shape.n_heads)
    params = dict(n=n, base=base, d_model=d, n_heads=heads)

    def compute():
        D_sin, D_rope = sinusoidal_distances(n, d, base=base), rope_distances(n, d // heads, base=base)
        values = dict(d_model=d, n_heads=heads, d_head=d // heads, n=n, base=base,
                      stress_scale_free=float(geo.stress(D_sin, D_rope, "scale_free", as_distances=True)),
                      max_sinusoidal=float(np.max(D_sin)), max_rope=float(np.max(D_rope)))
        return values, {"D_sinusoidal": D_sin, "D_rope": D_rope}

    return store_result(settings, "zoo.kernel_pair", compute, params, force)
