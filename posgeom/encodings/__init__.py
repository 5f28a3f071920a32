r"""The geometry of each positional encoding, in numpy only.

Every encoding gives an ``n × n`` distance matrix; absolute encodings also give their table ``P`` (``n × d``).

**Sinusoidal** (Vaswani et al. 2017): $P_{i, 2k} = \sin(i \omega_k)$, $P_{i, 2k+1} = \cos(i \omega_k)$,
$\omega_k = b^{-2k/d}$, $b = 10000$ (``layout="interleaved"``; ``"concatenated"``, all sines then all cosines
as in GPT-NeoX and Hugging Face, has the same distances), $\|p_i - p_j\|^2 = \sum_k 2 - 2\cos((i - j)\omega_k)$.

**RoPE** (Su et al. 2021) rotates each query/key coordinate pair by $\delta \theta_k$, $\theta_k = b^{-2k/d_{head}}$,
$m = d_{head}/2$ pairs; with the kernel $K(\delta) = \frac1m \sum_k \cos(\delta \theta_k)$ the induced distance is
$\hat d_{ij}^2 = 2\,(K(0) - K(i - j))$: a sinusoidal table of width $d_{head}$ divided by $\sqrt m$.

**ALiBi** (Press et al. 2022) adds $-m_h |i - j|$ to the logits of head ``h``, $m_h = r^{h+1}$,
$r = 2^{-8/H}$ for a power of two $H$ (otherwise as the reference ``get_slopes``); the induced distance is
the line $\hat d_{ij} = \bar m |i - j|$.

**None** (NoPE): all distances 0. **Random**: $P_{ij} \sim \mathcal N(0, \sigma^2)$, a learned table at
initialisation. **Table**: the distances of any table's rows. **MDS**: Algorithm 1's encoding of ``D``.
To add an encoding, add ``my_distances(n, *, d, n_heads, **options) -> (n, n)`` to :data:`ENCODINGS` in
``named.py``; the torch side (:mod:`posgeom.models.positional`) registers its module under the same name.
"""

from __future__ import annotations

from .fixed import (
    SINUSOIDAL_LAYOUTS, alibi_bias, alibi_distances, alibi_slopes, cosine_kernel, mds_distances, none_distances,
    random_distances, random_table, rope_distances, rope_frequencies, rope_kernel, rotary_distances,
    sinusoidal_distances, sinusoidal_frequencies, sinusoidal_table, table_distances,
)
from .named import (
    DEFAULT_ENCODING_SET, ENCODING_SET_NAMES, ENCODINGS, ENCODINGS_COMPARED, comparison_for, comparison_intervals,
    comparison_set, describe_encoding, encoding_distances, encoding_set, mds_width_distances,
)
from .corpus_fit import c5_row, hellinger_kinds_summary, sensitivity_row, shift_summary
from .zoo import HOW_IT_ENTERS, ZOO, zoo_geometry
from .references import (
    REFERENCE_TABLES, alibi_kernel_distances, equidistant_distances, random_walk_table, reference_tables,
)

__all__ = [
    "SINUSOIDAL_LAYOUTS", "ENCODINGS", "sinusoidal_frequencies", "sinusoidal_table", "sinusoidal_distances",
    "rope_frequencies", "cosine_kernel", "rope_kernel", "rope_distances", "rotary_distances", "alibi_slopes", "alibi_bias", "alibi_distances",
    "none_distances", "random_table", "random_distances", "table_distances", "mds_distances", "encoding_distances",
    "alibi_kernel_distances", "equidistant_distances", "random_walk_table", "REFERENCE_TABLES", "reference_tables",
    "ENCODING_SET_NAMES", "DEFAULT_ENCODING_SET", "encoding_set", "describe_encoding",
    "ENCODINGS_COMPARED", "mds_width_distances", "comparison_set", "comparison_for", "comparison_intervals",
    "hellinger_kinds_summary", "sensitivity_row", "shift_summary", "c5_row", "ZOO", "HOW_IT_ENTERS", "zoo_geometry",
]