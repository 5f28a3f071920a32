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

import json
from dataclasses import dataclass

import numpy as np

from .. import encodings as enc
from .. import geometry as geo
from ..config import settings_or_default as _settings
from ..registry import Result
from .settings import by_scale, store_result

__all__ = [
    "CONFIGS", "ZooSettings", "PretrainedShape", "ZOO", "HOW_IT_ENTERS",
    "pretrained_shape", "zoo_geometry", "run_zoo",
]

#: The encodings of the zoo, in the order the chapter shows them.
ZOO = ("sinusoidal", "learned", "rope", "alibi", "none")

#: Where each encoding enters the model.
HOW_IT_ENTERS = {
    "sinusoidal": "input: a fixed table added to the token embeddings",
    "learned": "input: a trained table added to the token embeddings",
    "rope": "attention: queries and keys rotated by position, logits depend on i - j",
    "alibi": "attention: a bias -m_h |i - j| added to the logits of head h",
    "none": "nowhere: no positional signal",
}


@dataclass(frozen=True)
class ZooSettings:
    """Options of the zoo. The width and heads are those of the pretrained model (so every encoding of the
    zoo has the shape of the model whose learned table is shown); ``n`` is the number of positions,
    ``picture_positions`` those of the tables and biases drawn."""

    n: int = 128
    base: float = 10000.0
    picture_positions: int = 48


CONFIGS = by_scale(ZooSettings(), n=512, picture_positions=64)


@dataclass(frozen=True)
class PretrainedShape:
    """The shape of a pretrained encoder, read from its ``config.json`` (not the shape of a model trained
    here, :class:`posgeom.experiments.settings.ModelShape`)."""

    d_model: int
    n_heads: int
    n_layers: int
    max_positions: int


def pretrained_shape(name) -> PretrainedShape:
    """The shape of the pretrained model ``name``, from the ``config.json`` the one resolver finds
    (:func:`posgeom.config.model_folder`); no weight is read."""
    from ..models.pretrained import model_folder

    config = json.loads((model_folder(name, files=("config.json",)) / "config.json").read_text())

    def get(*keys):  # BERT-style names first, then GPT-2's
        return int(next(config[k] for k in keys if k in config))

    return PretrainedShape(d_model=get("hidden_size", "n_embd"), n_heads=get("num_attention_heads", "n_head"),
                      n_layers=get("num_hidden_layers", "n_layer"),
                      max_positions=get("max_position_embeddings", "n_positions"))


def zoo_geometry(table, shape: PretrainedShape, n: int, base: float, picture_positions: int) -> tuple[dict, dict]:
    r"""The zoo's distance matrices at one model shape and their checks (the values and arrays of :func:`run_zoo`).

    Parameters
    ----------
    table : ndarray of shape (N_max, d)
        The learned position table (rows at least ``n``).
    shape : PretrainedShape
    n, base, picture_positions :
        As :class:`ZooSettings`.
    """
    d, H = shape.d_model, shape.n_heads
    d_head = d // H
    if n > shape.max_positions or n > table.shape[0]:
        raise ValueError(f"n={n} exceeds the pretrained table's {shape.max_positions} positions")
    m = picture_positions
    D = {
        "sinusoidal": enc.sinusoidal_distances(n, d, base=base),
        "learned": enc.table_distances(table[:n]),
        "rope": enc.rope_distances(n, d_head, base=base),
        "alibi": enc.alibi_distances(n, H),
        "none": enc.none_distances(n),
    }
    n_params = {"sinusoidal": 0, "learned": int(table.size), "rope": 0, "alibi": 0, "none": 0}
    per, arrays = {}, {}
    for key in ZOO:
        Dk = D[key]
        sep = geo.separation(Dk, as_distances=True) if key != "none" else None
        per[key] = dict(
            enters=HOW_IT_ENTERS[key], n_params=n_params[key], toeplitz_spread=geo.toeplitz_spread(Dk),
            eigen_fraction_1=geo.eigen_fraction(Dk, 1) if key != "none" else float("nan"),
            eigen_fraction_2=geo.eigen_fraction(Dk, 2) if key != "none" else float("nan"),
            separation=sep.raw if sep else 0.0, separation_normalized=sep.normalized if sep else 0.0,
            max_distance=float(Dk.max()),
        )
        arrays[f"D__{key}"] = Dk
        arrays[f"mds2__{key}"] = geo.classical_mds(Dk, k=2).embedding if key != "none" else np.zeros((n, 2))
    # sinusoidal and RoPE: one kernel, two frequency sets
    identity = enc.sinusoidal_distances(n, d_head, base=base) / np.sqrt(d_head / 2)
    deltas = np.arange(n)
    om_s, om_r = enc.sinusoidal_frequencies(d, base), enc.rope_frequencies(d_head, base)
    kernel = dict(
        d_model=d, d_head=d_head, identity_max_error=float(np.max(np.abs(identity - D["rope"]))),
        # ||p_i - p_j||^2 = d (1 - K(i - j)), checked on the table's distances
        sinusoidal_kernel_max_error=float(np.max(np.abs(
            D["sinusoidal"][0] ** 2 - d * (1 - enc.cosine_kernel(deltas, om_s))))),
        stress_scale_free=float(geo.stress(D["sinusoidal"], D["rope"], "scale_free", as_distances=True)),
        spearman=float(geo.spearman(D["sinusoidal"], D["rope"], as_distances=True)),
        omega_range_sinusoidal=[float(om_s.min()), float(om_s.max())],
        omega_range_rope=[float(om_r.min()), float(om_r.max())],
        n_frequencies_sinusoidal=int(om_s.size), n_frequencies_rope=int(om_r.size),
    )
    slopes = enc.alibi_slopes(H)
    mds_err, spacing_err = geo.line_fit_error(D["alibi"])
    alibi = dict(slopes=slopes.tolist(), mean_slope=float(slopes.mean()),
                 eigen_fraction_1=geo.eigen_fraction(D["alibi"], 1), line_mds_error=mds_err,
                 line_spacing_error=spacing_err)
    arrays.update(
        table__sinusoidal=enc.sinusoidal_table(m, d, base=base), table__learned=table[:m].copy(),
        alibi_bias=enc.alibi_bias(m, H), deltas=deltas, K_sinusoidal=enc.cosine_kernel(deltas, om_s),
        K_rope=enc.cosine_kernel(deltas, om_r), omega_sinusoidal=om_s, omega_rope=om_r,
    )
    values = dict(shape=vars(shape), n=n, base=base, encodings=per, kernel=kernel, alibi=alibi)
    return values, arrays


def run_zoo(settings=None, *, force: bool = False, n: int | None = None, base: float | None = None) -> Result:
    r"""The zoo at the shape of the pretrained model: tables, biases, distance matrices and their checks.

    The model's table comes from :func:`posgeom.models.pretrained.position_table` and its shape from
    :func:`pretrained_shape` (the one resolver), inside the registry's computation; the rest is
    :func:`zoo_geometry`. Values: the pretrained model and its shape; per encoding
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
        from ..models.pretrained import position_table

        table = position_table(settings.pretrained)
        values, arrays = zoo_geometry(table, pretrained_shape(settings.pretrained), n, base, conf.picture_positions)
        return dict(pretrained=validate_pretrained(settings.pretrained), **values), arrays

    return store_result(settings, "zoo.distances", compute, params, force, model=settings.pretrained)
