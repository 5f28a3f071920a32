r"""The geometry of each positional encoding, in numpy only.

Every encoding gives an ``n × n`` matrix of distances between positions, fed to the geometry core;
absolute encodings also give their table ``P`` (``n × d``).

**Sinusoidal** (Vaswani et al. 2017). With frequencies $\omega_k = b^{-2k/d}$,
$k = 0, \dots, d/2 - 1$ and base $b = 10000$,

$$P_{i, 2k} = \sin(i \omega_k), \qquad P_{i, 2k+1} = \cos(i \omega_k)$$

(``layout="interleaved"``, the original and d2l), or the same columns as
``[sin(i ω_0) … sin(i ω_{m-1}), cos(i ω_0) … cos(i ω_{m-1})]`` (``layout="concatenated"``,
GPT-NeoX and Hugging Face). The layouts differ by a fixed column permutation, so their distances
are identical: $\|p_i - p_j\|^2 = \sum_k 2 - 2\cos((i - j)\omega_k)$.

**RoPE** (Su et al. 2021) rotates each pair of query/key coordinates by $\delta \theta_k$,
$\theta_k = b^{-2k/d_{head}}$, $k = 0, \dots, m - 1$, $m = d_{head}/2$. Its
relative kernel is $K(\delta) = \frac1m \sum_k \cos(\delta \theta_k)$ and the induced
distance (per unit vector) is

$$\hat d_{ij}^2 = 2\,(K(0) - K(i - j)).$$

This is exactly the distance of a sinusoidal table of width $d_{head}$ divided by
$\sqrt m$: sinusoidal and RoPE differ only through their frequency set.

**ALiBi** (Press et al. 2022) adds $-m_h |i - j|$ to the attention logits of head ``h``.
The slopes are the geometric sequence $m_h = r^{h+1}$, $r = 2^{-8/H}$ for a power of
two $H$; otherwise the slopes of the largest power of two $H' < H$ followed by every
other slope of $2H'$ (the reference ``get_slopes``). The induced distance is one line
(rank 1): $\hat d_{ij} = \bar m |i - j|$, $\bar m$ the mean slope (or one head's).

**None** (NoPE): all distances are 0. **Random** (a learned table at initialisation): $P_{ij} \sim \mathcal N(0, \sigma^2)$,
$\sigma = 0.02$ (BERT, GPT-2) or 1, seeded.

**Table**: the Euclidean distances of the rows of any given table. **MDS**: the encoding of Algorithm 1
for target distances ``D`` at rank ``k``.

``fixed.py`` holds these formulas, ``references.py`` the reference geometries, ``named.py`` the encodings by
name and their comparison with a corpus, ``corpus_fit.py`` the chapters' summaries, ``zoo.py`` the zoo at one
model shape. To add an encoding, add ``my_distances(n, *, d, n_heads, **options) -> (n, n)`` to
:data:`ENCODINGS` in ``named.py``; the torch side (:mod:`posgeom.models.positional`) registers its module
under the same name.
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