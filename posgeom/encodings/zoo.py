r"""The zoo of positional encodings at one model shape, side by side, with the checks of its chapter.

Sinusoidal and RoPE are one kernel $K_\Omega(\delta) = \frac{1}{|\Omega|}\sum_{\omega \in \Omega} \cos(\delta\omega)$
over two frequency sets; ALiBi's distance $\bar m |i - j|$ is a line (a rank-one Gram matrix).
"""

from __future__ import annotations

import numpy as np

from .. import geometry as geo
from ..validation import check_positive_int
from .fixed import (
    alibi_bias, alibi_distances, alibi_slopes, cosine_kernel, none_distances, rope_distances, rope_frequencies,
    sinusoidal_distances, sinusoidal_frequencies, sinusoidal_table, table_distances,
)
from .identifiers import Encoding

__all__ = ["ZOO", "HOW_IT_ENTERS", "zoo_geometry"]

#: The encodings of the zoo, in the order the chapter shows them.
ZOO = (Encoding.SINUSOIDAL, Encoding.LEARNED, Encoding.ROPE, Encoding.ALIBI, Encoding.NONE)

#: Where each encoding enters the model.
HOW_IT_ENTERS = {
    Encoding.SINUSOIDAL: "input: a fixed table added to the token embeddings",
    Encoding.LEARNED: "input: a trained table added to the token embeddings",
    Encoding.ROPE: "attention: queries and keys rotated by position, logits depend on i - j",
    Encoding.ALIBI: "attention: a bias -m_h |i - j| added to the logits of head h",
    Encoding.NONE: "nowhere: no positional signal",
}


def zoo_geometry(table, shape: dict, n: int, base: float, picture_positions: int) -> tuple[dict, dict]:
    r"""The zoo's distance matrices at one model shape and their checks (stored by the zoo experiment).

    Parameters
    ----------
    table : ndarray of shape (N_max, d)
        The learned position table (rows at least ``n``).
    shape : dict
        ``d_model``, ``n_heads``, ``n_layers``, ``max_positions`` (:class:`posgeom.models.pretrained.PretrainedShape`).
    n, base, picture_positions :
        Positions compared; the frequency base of sinusoidal and RoPE; positions of the tables and biases drawn.

    Returns
    -------
    values : dict
        ``shape``, ``n``, ``base``, ``encodings`` (per encoding of :data:`ZOO`), ``kernel``, ``alibi``.
    arrays : dict
        As :func:`posgeom.experiments.zoo.run_zoo` stores them.
    """
    check_positive_int(n, "n")
    check_positive_int(picture_positions, "picture_positions")
    d, H = shape["d_model"], shape["n_heads"]
    d_head = d // H
    if n > shape["max_positions"] or n > table.shape[0]:
        raise ValueError(f"n={n} exceeds the pretrained table's {shape['max_positions']} positions")
    m = picture_positions
    D = {
        Encoding.SINUSOIDAL: sinusoidal_distances(n, d, base=base),
        Encoding.LEARNED: table_distances(table[:n]),
        Encoding.ROPE: rope_distances(n, d_head, base=base),
        Encoding.ALIBI: alibi_distances(n, H),
        Encoding.NONE: none_distances(n),
    }
    n_params = {key: int(table.size) if key == Encoding.LEARNED else 0 for key in ZOO}
    per, arrays = {}, {}
    for key in ZOO:
        Dk = D[key]
        sep = geo.separation(Dk, as_distances=True) if key != Encoding.NONE else None
        per[key] = dict(
            enters=HOW_IT_ENTERS[key], n_params=n_params[key], toeplitz_spread=geo.toeplitz_spread(Dk),
            eigen_fraction_1=geo.eigen_fraction(Dk, 1) if key != Encoding.NONE else float("nan"),
            eigen_fraction_2=geo.eigen_fraction(Dk, 2) if key != Encoding.NONE else float("nan"),
            separation=sep.raw if sep else 0.0, separation_normalized=sep.normalized if sep else 0.0,
            max_distance=float(Dk.max()),
        )
        arrays[f"D__{key}"] = Dk
        arrays[f"mds2__{key}"] = geo.classical_mds(Dk, k=2).embedding if key != Encoding.NONE else np.zeros((n, 2))
    # sinusoidal and RoPE: one kernel, two frequency sets
    identity = sinusoidal_distances(n, d_head, base=base) / np.sqrt(d_head / 2)
    deltas = np.arange(n)
    om_s, om_r = sinusoidal_frequencies(d, base), rope_frequencies(d_head, base)
    kernel = dict(
        d_model=d, d_head=d_head, identity_max_error=float(np.max(np.abs(identity - D[Encoding.ROPE]))),
        # ||p_i - p_j||^2 = d (1 - K(i - j)), checked on the table's distances
        sinusoidal_kernel_max_error=float(np.max(np.abs(
            D[Encoding.SINUSOIDAL][0] ** 2 - d * (1 - cosine_kernel(deltas, om_s))))),
        stress_scale_free=float(geo.stress(D[Encoding.SINUSOIDAL], D[Encoding.ROPE], "scale_free", as_distances=True)),
        spearman=float(geo.spearman(D[Encoding.SINUSOIDAL], D[Encoding.ROPE], as_distances=True)),
        omega_range_sinusoidal=[float(om_s.min()), float(om_s.max())],
        omega_range_rope=[float(om_r.min()), float(om_r.max())],
        n_frequencies_sinusoidal=int(om_s.size), n_frequencies_rope=int(om_r.size),
    )
    slopes = alibi_slopes(H)
    mds_err, spacing_err = geo.line_fit_error(D[Encoding.ALIBI])
    alibi = dict(slopes=slopes.tolist(), mean_slope=float(slopes.mean()),
                 eigen_fraction_1=geo.eigen_fraction(D[Encoding.ALIBI], 1), line_mds_error=mds_err,
                 line_spacing_error=spacing_err)
    arrays.update(
        table__sinusoidal=sinusoidal_table(m, d, base=base), table__learned=table[:m].copy(),
        alibi_bias=alibi_bias(m, H), deltas=deltas, K_sinusoidal=cosine_kernel(deltas, om_s),
        K_rope=cosine_kernel(deltas, om_r), omega_sinusoidal=om_s, omega_rope=om_r,
    )
    values = dict(shape=dict(shape), n=n, base=base, encodings=per, kernel=kernel, alibi=alibi)
    return values, arrays
