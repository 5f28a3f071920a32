r"""Experiments of the chapter "Positional encodings at a glance": the zoo and its distance matrices.

Five encodings, compared through one object, the $n \times n$ matrix of distances between positions
(:mod:`posgeom.encodings`):

* **sinusoidal** (added to the input): $\|p_i - p_j\|^2 = \sum_{k<d/2} 2 - 2\cos((i - j)\omega_k)$,
  $\omega_k = b^{-2k/d}$;
* **learned** (added to the input): the rows of a pretrained table (``settings.pretrained``);
* **RoPE** (inside attention, rotating queries and keys): $\hat d_{ij}^2 = 2(K(0) - K(i - j))$,
  $K(\delta) = \frac1m \sum_{k<m} \cos(\delta\theta_k)$, $\theta_k = b^{-2k/d_{head}}$, $m = d_{head}/2$;
* **ALiBi** (inside attention, a bias $-m_h |i - j|$ on the logits): $\hat d_{ij} = \bar m |i - j|$;
* **NoPE**: nothing, every distance 0.

**One kernel for sinusoidal and RoPE.** With
$K_\Omega(\delta) = \frac{1}{|\Omega|}\sum_{\omega \in \Omega} \cos(\delta\omega)$,
the mean cosine over a frequency set $\Omega$,

$$\|p_i - p_j\|^2 = d\,\big(1 - K_{\Omega_d}(i - j)\big), \qquad
  \hat d_{ij}^{2,\text{RoPE}} = 2\,\big(1 - K_{\Omega_{d_{head}}}(i - j)\big),$$

so both are functions of $i - j$ alone (Toeplitz matrices) built from the same kind of kernel; they
differ only through the frequency set — $\Omega_d = \{b^{-2k/d}\}$ against
$\Omega_{d_{head}} = \{b^{-2k/d_{head}}\}$, two geometric grids over nearly the same range.
:func:`run_zoo` checks the identity to rounding (a sinusoidal table of width $d_{head}$, divided by
$\sqrt{d_{head}/2}$, *is* RoPE's distance) and measures how close the two frequency sets make the
two distance matrices.

**ALiBi is a line.** $D_{ij} = \bar m |i - j|$ is the distance of the points $x_i = \bar m\, i$ on a
line: $D^{(2)}_{ij} = \bar m^2 (i - j)^2$ gives $B = -\tfrac12 J D^{(2)} J = \bar m^2 (J x)(J x)^\top$
for $x = (0, 1, \dots, n-1)$, a rank-one Gram matrix; classical MDS puts all the eigenvalue mass on
one axis and recovers equally spaced points.
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
    """Options of the zoo. The width and heads are those of the pretrained model (so every encoding of the
    zoo has the shape of the model whose learned table is shown); ``n`` is the number of positions,
    ``picture_positions`` those of the tables and biases drawn."""

    n: int = 128
    base: float = 10000.0
    picture_positions: int = 48


CONFIGS = by_scale(ZooSettings(), n=512, picture_positions=64)


def run_zoo(settings=None, *, force: bool = False, n: int | None = None, base: float | None = None) -> Result:
    r"""The zoo at the shape of the pretrained model: tables, biases, distance matrices and their checks.

    The model's table comes from :func:`posgeom.models.pretrained.position_table` and its shape from
    :func:`posgeom.models.pretrained.pretrained_shape` (the one resolver), inside the registry's computation;
    the rest is :func:`posgeom.encodings.zoo_geometry`. Values: the pretrained model and its shape; per encoding
    (``values["encodings"][name]``) where it enters, its number of positional parameters,
    :func:`posgeom.geometry.toeplitz_spread`, the eigenvalue fraction of the top 1 and 2 MDS axes, and
    :func:`posgeom.geometry.separation` (raw and normalised; NoPE gives 0). The kernel checks
    (``values["kernel"]``): the largest difference between RoPE's distance and a sinusoidal table of width
    $d_{head}$ rescaled by $1/\sqrt{d_{head}/2}$ (the identity), and, between sinusoidal at $d$ and RoPE at
    $d_{head}$, the scale-free stress and Spearman's $\rho$ of one distance matrix against the other.
    ALiBi (``values["alibi"]``): the slopes, the eigenvalue fraction on one axis and :func:`posgeom.geometry.line_fit_error`.

    Arrays: ``D__<name>`` (n, n) for each encoding; ``mds2__<name>`` (n, 2) the 2-D MDS coordinates;
    ``table__sinusoidal`` and ``table__learned`` (picture_positions, d); ``alibi_bias``
    (n_heads, picture_positions, picture_positions); ``deltas``, ``K_sinusoidal``, ``K_rope`` (the two
    kernels over $\delta = 0 … n-1$); ``omega_sinusoidal``, ``omega_rope`` (the frequency sets).

    Raises
    ------
    posgeom.models.pretrained.ModelUnavailableError
        When the pretrained model cannot be loaded (the message says how to get it).
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

    Both are formulas of the shape alone, so no model is loaded and a CPU computes it at every scale (the zoo of
    :func:`run_zoo` takes the pretrained model's shapes, which may be a stand-in's).

    Returns
    -------
    Result
        ``values``: ``d_model``, ``n_heads``, ``d_head``, ``n``, ``base``; ``stress_scale_free`` (one distance
        matrix against the other), ``max_sinusoidal`` and ``max_rope`` (the largest distances: their ratio is
        the scales' under ``"paper"``). ``arrays``: ``D_sinusoidal``, ``D_rope`` (n, n).
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
