r"""The geometry of each positional encoding, in numpy only.

Every encoding gives an ``n × n`` matrix of distances between positions, so that any of them — a
fixed formula, a random initialisation or a trained table — can be fed to the geometry core
(stress, monotonicity, separation). Absolute encodings also give their table ``P`` (``n × d``).

**Sinusoidal** (Vaswani et al. 2017). With frequencies $\omega_k = b^{-2k/d}$,
$k = 0, \dots, d/2 - 1$ and base $b = 10000$,

.. math::  P_{i, 2k} = \sin(i \omega_k), \qquad P_{i, 2k+1} = \cos(i \omega_k)

(``layout="interleaved"``, the original and d2l), or the same columns as
``[sin(i ω_0) … sin(i ω_{m-1}), cos(i ω_0) … cos(i ω_{m-1})]`` (``layout="concatenated"``,
GPT-NeoX and Hugging Face). The layouts differ by a fixed column permutation, so their distances
are identical: $\|p_i - p_j\|^2 = \sum_k 2 - 2\cos((i - j)\omega_k)$.

**RoPE** (Su et al. 2021) rotates each pair of query/key coordinates by $\delta \theta_k$,
$\theta_k = b^{-2k/d_{head}}$, $k = 0, \dots, m - 1$, $m = d_{head}/2$. Its
relative kernel is $K(\delta) = \frac1m \sum_k \cos(\delta \theta_k)$ and the induced
distance (per unit vector) is

.. math::  \hat d_{ij}^2 = 2\,(K(0) - K(i - j)).

This is exactly the distance of a sinusoidal table of width $d_{head}$ divided by
$\sqrt m$: sinusoidal and RoPE differ only through their frequency set.

**ALiBi** (Press et al. 2022) adds $-m_h |i - j|$ to the attention logits of head ``h``.
The slopes are the geometric sequence $m_h = r^{h+1}$, $r = 2^{-8/H}$ for a power of
two $H$; otherwise the slopes of the largest power of two $H' < H$ followed by every
other slope of $2H'$ (the reference ``get_slopes``). The induced distance is one line
(rank 1): $\hat d_{ij} = \bar m |i - j|$, $\bar m$ the mean slope (or one head's).

**None** (NoPE): every position has the same (zero) vector; all distances are 0.

**Random** (a learned table at initialisation): $P_{ij} \sim \mathcal N(0, \sigma^2)$,
$\sigma = 0.02$ (BERT, GPT-2) or 1, seeded.

**Table**: the Euclidean distances of the rows of any given table (a trained
``position_embeddings.weight``, an MDS embedding from :func:`posgeom.geometry.classical_mds`).

**MDS**: the encoding of Algorithm 1 for target distances ``D`` at rank ``k``
(:func:`posgeom.geometry.classical_mds`; the low-rank ``A C^T`` of Remark 8 has the same distances).

Adding an encoding
------------------
Write a function ``my_distances(n, *, d, n_heads, **options) -> (n, n)`` and add it to
:data:`ENCODINGS` (name → function). :func:`encoding_distances` then dispatches to it, its name
appears in every "unknown encoding" error, and the torch side (:mod:`posgeom.models.positional`)
registers its module in its own ``POSITIONAL`` dict under the same name.
"""

from __future__ import annotations

import inspect

import math
from typing import Callable

import numpy as np

from .geometry import euclidean_distances
from .validation import check_even, check_positive_int

SINUSOIDAL_LAYOUTS = ("interleaved", "concatenated")


def _check_base(base) -> float:
    if isinstance(base, bool) or not isinstance(base, (int, float, np.integer, np.floating)):
        raise ValueError(f"base must be a finite number > 1, got {base!r}")
    base = float(base)
    if not math.isfinite(base) or base <= 1.0:
        raise ValueError(f"base must be a finite number > 1, got {base!r}")
    return base


def _euclidean_distances(P: np.ndarray) -> np.ndarray:
    """Pairwise Euclidean distances of the rows of ``P`` (n, k) → (n, n), from the geometry core."""
    return euclidean_distances(P)


# --------------------------------------------------------------------------------------------
# Sinusoidal
# --------------------------------------------------------------------------------------------


def sinusoidal_frequencies(d: int, base: float = 10000.0) -> np.ndarray:
    r"""Angular frequencies $\omega_k = b^{-2k/d}$ of a sinusoidal table of width ``d``.

    Returns
    -------
    omega : ndarray, shape (d // 2,)
    """
    d = check_even("d", d)
    base = _check_base(base)
    k = np.arange(d // 2, dtype=np.float64)
    # omega_k = base^(-2k/d)
    return base ** (-2.0 * k / d)


def sinusoidal_table(n: int, d: int, base: float = 10000.0, layout: str = "interleaved") -> np.ndarray:
    r"""The sinusoidal position table of Vaswani et al. (2017).

    Parameters
    ----------
    n : int
        Number of positions ``0 … n-1``.
    d : int
        Width (even).
    base : float
        The base ``b`` of the frequencies ``b^(-2k/d)``.
    layout : {"interleaved", "concatenated"}
        ``"interleaved"``: columns ``sin, cos, sin, cos, …``; ``"concatenated"``: all sines, then all cosines.

    Returns
    -------
    P : ndarray, shape (n, d), float64
    """
    n = check_positive_int("n", n)
    if layout not in SINUSOIDAL_LAYOUTS:
        raise ValueError(f"unknown sinusoidal layout {layout!r}; valid layouts are {', '.join(SINUSOIDAL_LAYOUTS)}")
    omega = sinusoidal_frequencies(d, base)
    # angle_{i,k} = i * omega_k                                            (n, d/2)
    angle = np.arange(n, dtype=np.float64)[:, None] * omega[None, :]
    P = np.empty((n, d), dtype=np.float64)
    if layout == "interleaved":
        # P[i, 2k] = sin(i omega_k), P[i, 2k+1] = cos(i omega_k)
        P[:, 0::2] = np.sin(angle)
        P[:, 1::2] = np.cos(angle)
    else:
        # P[i, k] = sin(i omega_k), P[i, d/2 + k] = cos(i omega_k)
        P[:, : d // 2] = np.sin(angle)
        P[:, d // 2 :] = np.cos(angle)
    return P


def sinusoidal_distances(n: int, d: int, base: float = 10000.0, layout: str = "interleaved") -> np.ndarray:
    """Euclidean distances between the rows of :func:`sinusoidal_table` (identical for both layouts).

    Returns
    -------
    D : ndarray, shape (n, n)
    """
    return _euclidean_distances(sinusoidal_table(n, d, base=base, layout=layout))


# --------------------------------------------------------------------------------------------
# RoPE
# --------------------------------------------------------------------------------------------


def rope_frequencies(d_head: int, base: float = 10000.0) -> np.ndarray:
    r"""RoPE rotation frequencies $\theta_k = b^{-2k/d_{head}}$, $k = 0 … d_{head}/2 - 1$.

    Returns
    -------
    theta : ndarray, shape (d_head // 2,)
    """
    return sinusoidal_frequencies(d_head, base)


def cosine_kernel(deltas, omega) -> np.ndarray:
    r"""The mean-cosine kernel of a frequency set: $K_\Omega(\delta) = \frac1m \sum_{k=1}^m \cos(\delta\,\omega_k)$.

    The kernel of every encoding made of rotations or sine/cosine pairs: RoPE's relative score
    (:func:`rope_kernel`) and the sinusoidal table's inner product,
    $\lVert p_i - p_j \rVert^2 = d\,(1 - K_\Omega(i - j))$ for the table of :func:`sinusoidal_table`
    with $\Omega$ = :func:`sinusoidal_frequencies`.

    Parameters
    ----------
    deltas : array_like, any shape
        Position offsets $\delta = i - j$.
    omega : array_like, shape (m,)
        The frequencies, in radians per position.

    Returns
    -------
    K : ndarray, same shape as ``deltas``, values in ``[-1, 1]`` with ``K(0) = 1``.
    """
    omega = np.asarray(omega, dtype=np.float64)
    if omega.ndim != 1 or omega.size < 1 or not np.all(np.isfinite(omega)):
        raise ValueError(f"omega must be a non-empty 1-D array of finite frequencies, got shape {omega.shape}")
    deltas = np.asarray(deltas, dtype=np.float64)
    # K(delta) = (1/m) sum_k cos(delta omega_k)
    return np.cos(deltas[..., None] * omega).mean(axis=-1)


def rope_kernel(deltas, d_head: int, base: float = 10000.0) -> np.ndarray:
    r"""RoPE's relative kernel $K(\delta) = \frac1m \sum_k \cos(\delta\theta_k)$: :func:`cosine_kernel` of
    :func:`rope_frequencies`.

    Parameters
    ----------
    deltas : array_like, any shape
        Position offsets ``i - j``.

    Returns
    -------
    K : ndarray, same shape as ``deltas``, values in ``[-1, 1]`` with ``K(0) = 1``.
    """
    return cosine_kernel(deltas, rope_frequencies(d_head, base))


def rope_distances(n: int, d_head: int, base: float = 10000.0) -> np.ndarray:
    r"""RoPE's induced distances $\hat d_{ij} = \sqrt{2 (K(0) - K(i-j))}$.

    Returns
    -------
    D : ndarray, shape (n, n), symmetric, zero diagonal
    """
    return rotary_distances(n, rope_frequencies(d_head, base))


def rotary_distances(n: int, theta) -> np.ndarray:
    r"""The distances RoPE induces for any set of rotation frequencies (a model's own, scaled or partial):
    $\hat d_{ij}^2 = 2 (K(0) - K(i - j))$, $K(\delta) = \frac1m \sum_k \cos(\delta\theta_k)$.

    Parameters
    ----------
    n : int
    theta : array_like, shape (m,)
        The frequencies of the rotated coordinate pairs (:func:`rope_frequencies` for the original RoPE).

    Returns
    -------
    D : ndarray, shape (n, n), symmetric, zero diagonal
    """
    n = check_positive_int("n", n)
    theta = np.asarray(theta, dtype=np.float64)
    if theta.ndim != 1 or theta.size < 1 or not np.all(np.isfinite(theta)):
        raise ValueError(f"theta must be a non-empty 1-D array of finite frequencies, got shape {theta.shape}")
    idx = np.arange(n)
    # K depends on i - j only and is even: one value per offset |i - j| (n of them, not n^2 x m)
    # dhat^2(offset) = 2 (K(0) - K(offset)), with K(0) = 1; rounding can make it slightly negative
    sq = 2.0 * (1.0 - cosine_kernel(idx.astype(np.float64), theta))
    by_offset = np.sqrt(np.clip(sq, 0.0, None))
    return by_offset[np.abs(idx[:, None] - idx[None, :])]


# --------------------------------------------------------------------------------------------
# ALiBi
# --------------------------------------------------------------------------------------------


def alibi_slopes(n_heads: int) -> np.ndarray:
    r"""The ALiBi slopes of Press et al. (2022), one per head.

    For a power of two $H$: $m_h = r^{h+1}$, $r = 2^{-8/H}$ (8 heads:
    ``1/2, 1/4, …, 1/256``). Otherwise, with $H'$ the largest power of two below $H$:
    the $H'$ slopes, then slopes ``0, 2, 4, …`` of the $2H'$ sequence, $H - H'$ of them.

    Returns
    -------
    m : ndarray, shape (n_heads,), float64, positive
    """
    n_heads = check_positive_int("n_heads", n_heads)

    def power_of_two(h: int) -> np.ndarray:
        # m_h = r^(h+1), r = 2^(-8/H)
        return (2.0 ** (-8.0 / h)) ** np.arange(1, h + 1, dtype=np.float64)

    if n_heads & (n_heads - 1) == 0:
        return power_of_two(n_heads)
    closest = 1 << (n_heads.bit_length() - 1)
    extra = alibi_slopes(2 * closest)[0::2][: n_heads - closest]
    return np.concatenate([power_of_two(closest), extra])


def alibi_bias(n: int, n_heads: int) -> np.ndarray:
    r"""ALiBi's additive attention bias $-m_h |i - j|$.

    Returns
    -------
    bias : ndarray, shape (n_heads, n, n), non-positive
    """
    n = check_positive_int("n", n)
    idx = np.arange(n, dtype=np.float64)
    # bias_{h,i,j} = -m_h |i - j|
    return -alibi_slopes(n_heads)[:, None, None] * np.abs(idx[:, None] - idx[None, :])[None]


def alibi_distances(n: int, n_heads: int, head: int | None = None, *, slopes=None) -> np.ndarray:
    r"""ALiBi's induced distances $\hat d_{ij} = \bar m |i - j|$ (rank one: a line).

    Parameters
    ----------
    head : int or None
        ``None`` uses the mean slope $\bar m$; an index ``0 … n_heads-1`` uses that head's slope.
    slopes : array_like of shape (n_heads,), optional
        A model's own slopes (e.g. MPT's, which differ from :func:`alibi_slopes` for some head counts);
        default :func:`alibi_slopes`.

    Returns
    -------
    D : ndarray, shape (n, n)
    """
    n = check_positive_int("n", n)
    if slopes is None:
        slopes = alibi_slopes(n_heads)
    else:
        slopes = np.asarray(slopes, dtype=np.float64)
        if slopes.shape != (n_heads,) or not np.all(np.isfinite(slopes)) or np.any(slopes <= 0):
            raise ValueError(f"slopes must hold {n_heads} positive numbers, one per head; got shape {slopes.shape}")
    if head is None:
        m = float(slopes.mean())
    else:
        if isinstance(head, bool) or not isinstance(head, (int, np.integer)) or not 0 <= head < n_heads:
            raise ValueError(f"head must be an index in 0..{n_heads - 1} (or None for the mean slope), got {head!r}")
        m = float(slopes[head])
    idx = np.arange(n, dtype=np.float64)
    # dhat_ij = mbar |i - j|
    return m * np.abs(idx[:, None] - idx[None, :])


# --------------------------------------------------------------------------------------------
# None, random, tables
# --------------------------------------------------------------------------------------------


def none_distances(n: int) -> np.ndarray:
    """NoPE: every position has the same vector, so every distance is 0.

    Returns
    -------
    D : ndarray, shape (n, n), zeros
    """
    return np.zeros((check_positive_int("n", n),) * 2)


def random_table(n: int, d: int, sigma: float = 0.02, seed: int | None = 0) -> np.ndarray:
    r"""A learned table at initialisation, $P_{ij} \sim \mathcal N(0, \sigma^2)$.

    Returns
    -------
    P : ndarray, shape (n, d)
    """
    n, d = check_positive_int("n", n), check_positive_int("d", d)
    sigma = float(sigma)
    if not math.isfinite(sigma) or sigma <= 0:
        raise ValueError(f"sigma must be a positive number (0.02 as BERT/GPT-2, or 1), got {sigma!r}")
    rng = np.random.default_rng(seed)
    return sigma * rng.standard_normal((n, d))


def random_distances(n: int, d: int, sigma: float = 0.02, seed: int | None = 0) -> np.ndarray:
    """Distances between the rows of :func:`random_table`.

    Returns
    -------
    D : ndarray, shape (n, n)
    """
    return _euclidean_distances(random_table(n, d, sigma=sigma, seed=seed))


def table_distances(P) -> np.ndarray:
    """Euclidean distances between the rows of a position table (trained, MDS or any other).

    Parameters
    ----------
    P : array_like, shape (n, k)

    Returns
    -------
    D : ndarray, shape (n, n)
    """
    P = np.asarray(P, dtype=np.float64)
    if P.ndim != 2 or P.shape[0] < 1 or P.shape[1] < 1:
        raise ValueError(f"a position table must be a non-empty 2-D array (n, k), got shape {P.shape}")
    if not np.all(np.isfinite(P)):
        raise ValueError("the position table holds NaN or infinite values")
    return _euclidean_distances(P)


def mds_distances(D, k: int | None = None) -> np.ndarray:
    r"""Distances of Algorithm 1's encoding $P_{MDS} = U_k \Lambda_k^{1/2}$ of target distances ``D``.

    The embedding comes from :func:`posgeom.geometry.classical_mds` (rank ``k``; ``None`` = numerical rank).

    Parameters
    ----------
    D : array_like, shape (n, n)

    Returns
    -------
    Dhat : ndarray, shape (n, n)
    """
    from .geometry import classical_mds

    return table_distances(classical_mds(D, k).embedding)


def alibi_kernel_distances(n: int, n_heads: int, head: int | None = None) -> np.ndarray:
    r"""ALiBi's bias read as a kernel, the rule used for RoPE: $\hat d_{ij}^2 = 2(K(0) - K(i-j))$.

    With $K(\delta) = -\bar m |\delta|$ this is $\hat d_{ij} = \sqrt{2 \bar m |i - j|}$: a square-root
    profile, not ALiBi's line $\bar m |i-j|$ of :func:`alibi_distances` (the alternative reading of a
    bias as a geometry).

    Parameters
    ----------
    n, n_heads : int
    head : int, optional
        One head's slope instead of the mean $\bar m$.

    Returns
    -------
    D : ndarray of shape (n, n)
    """
    line = alibi_distances(n, n_heads, head=head)
    # dhat_ij^2 = 2 (K(0) - K(i - j)) = 2 mbar |i - j|
    return np.sqrt(2.0 * line)


def equidistant_distances(n: int) -> np.ndarray:
    r"""The regular simplex: one-hot position vectors, every distance $\sqrt 2$ (the Hellinger distance of
    two distributions with disjoint supports).

    Its ``"scale_free"`` stress $1 - (\sum d)^2 / (m \sum d^2)$ is the baseline an encoding must beat to
    carry any structure.

    Returns
    -------
    D : ndarray of shape (n, n)
    """
    n = check_positive_int("n", n)
    # dhat_ij = ||e_i - e_j|| = sqrt(2) for i != j
    return np.sqrt(2.0) * (1.0 - np.eye(n))


def random_walk_table(n: int, d: int, sigma: float = 0.02, seed: int | None = 0) -> np.ndarray:
    r"""A random walk over positions: $p_0 = \varepsilon_0$, $p_i = p_{i-1} + \varepsilon_i$,
    $\varepsilon_i \sim \mathcal N(0, \sigma^2 I_d)$ i.i.d.

    Smooth with no designed spectrum: the null model of a learned table (the principal components of a
    random walk are close to low-frequency cosines, the Karhunen–Loève modes of a Brownian path).

    Returns
    -------
    P : ndarray of shape (n, d)
    """
    n = check_positive_int("n", n)
    d = check_positive_int("d", d)
    if not (isinstance(sigma, (int, float, np.integer, np.floating)) and math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma must be > 0; got {sigma!r}")
    rng = np.random.default_rng(seed)
    # p_i = sum_{k <= i} eps_k
    return np.cumsum(rng.normal(0.0, sigma, size=(n, d)), axis=0)


#: The reference tables a learned table is put next to (:func:`reference_tables`).
REFERENCE_TABLES = ("sinusoidal", "random_normal", "random_walk")


def reference_tables(n: int, d: int, *, sigma: float = 0.02, seed: int = 0) -> dict[str, np.ndarray]:
    r"""The references of :data:`REFERENCE_TABLES` at shape ``(n, d)``.

    ``sinusoidal`` (:func:`~posgeom.encodings.sinusoidal_table`, base 10000, interleaved; ``d`` even),
    ``random_normal`` ($\mathcal N(0, \sigma^2)$, a learned table at initialisation,
    :func:`~posgeom.encodings.random_table`) and
    ``random_walk`` (:func:`random_walk_table`).

    Returns
    -------
    dict of str to ndarray of shape (n, d)
    """
    return {
        "sinusoidal": sinusoidal_table(n, d),
        "random_normal": random_table(n, d, sigma=sigma, seed=seed),
        "random_walk": random_walk_table(n, d, sigma=sigma, seed=seed),
    }


# --------------------------------------------------------------------------------------------
# The fixed encodings at one model shape
# --------------------------------------------------------------------------------------------

#: What :func:`encoding_set` can compute, in the order the chapters show them.
ENCODING_SET_NAMES = ("sinusoidal", "rope", "alibi", "alibi (kernel rule)", "equidistant", "random", "none")
#: The default set: the fixed encodings the paper compares (sinusoidal, RoPE, ALiBi, none) and a learned table at initialisation.
DEFAULT_ENCODING_SET = ("sinusoidal", "rope", "alibi", "random", "none")


def _set_member(name: str, n: int, d_model: int, n_heads: int, base: float, layout: str, sigma: float,
                seed) -> np.ndarray:
    if name == "sinusoidal":
        return sinusoidal_distances(n, d_model, base=base, layout=layout)
    if name == "rope":
        return _rope(n, d=d_model, n_heads=n_heads, base=base)
    if name == "alibi":
        return alibi_distances(n, n_heads)
    if name == "alibi (kernel rule)":
        return alibi_kernel_distances(n, n_heads)
    if name == "equidistant":
        return equidistant_distances(n)
    if name == "random":
        return random_distances(n, d_model, sigma=sigma, seed=seed)
    return none_distances(n)


def encoding_set(positions, *, d_model: int, n_heads: int, names=DEFAULT_ENCODING_SET, base: float = 10000.0,
                 layout: str = "interleaved", sigma: float = 0.02, seed: int | None = 0) -> dict[str, np.ndarray]:
    r"""The distance matrices $\hat D$ of the fixed encodings at one model shape, over given positions.

    A relative encoding's distance depends on the true offset $i - j$, so when ``positions`` leaves gaps
    (positions dropped by ``min_count``) every matrix is computed over $0 \dots \max(\text{positions})$
    and then restricted to the rows and columns of ``positions``.

    Parameters
    ----------
    positions : int or array-like of int, shape (m,)
        ``n`` for positions $0 \dots n-1$, or increasing position indices.
    d_model : int
        The width: ``sinusoidal`` (even), ``random``; ``rope`` uses $d_{head} = $ ``d_model / n_heads``.
    n_heads : int
        ``rope``'s heads and ``alibi``'s slopes (the mean slope $\bar m$ over the heads).
    names : sequence of str
        From :data:`ENCODING_SET_NAMES` (default :data:`DEFAULT_ENCODING_SET`).
    base : float
        The frequency base of ``sinusoidal`` and ``rope``.
    layout : str
        ``sinusoidal``'s layout, ``"interleaved"`` or ``"concatenated"``.
    sigma, seed :
        ``random``: a table $\mathcal N(0, \sigma^2)$ drawn with ``seed``.

    Returns
    -------
    dict of str to ndarray of shape (m, m)
        In the order of ``names``.
    """
    unknown = [name for name in names if name not in ENCODING_SET_NAMES]
    if unknown:
        raise ValueError(f"unknown encodings {unknown}; valid names are {', '.join(ENCODING_SET_NAMES)}")
    if isinstance(positions, (int, np.integer)) and not isinstance(positions, bool):
        n, keep = check_positive_int("positions", positions), None
    else:
        keep = np.asarray(positions)
        if keep.ndim != 1 or keep.size == 0 or not np.issubdtype(keep.dtype, np.integer) or keep.min() < 0 \
                or np.any(np.diff(keep) <= 0):
            raise ValueError("positions must be an int n or a non-empty increasing 1-D array of position indices")
        n = int(keep.max()) + 1
    out = {}
    for name in names:
        D = _set_member(name, n, d_model, n_heads, base, layout, sigma, seed)
        out[name] = D if keep is None else D[np.ix_(keep, keep)]
    return out


def describe_encoding(name: str, *, d_model: int, n_heads: int, base: float = 10000.0, layout: str = "interleaved",
                      sigma: float = 0.02, seed: int | None = 0) -> str:
    """One line saying which options :func:`encoding_set` used for ``name`` (shown beside its stress)."""
    d, H = d_model, n_heads
    lines = {
        "sinusoidal": f"d={d}, base={base:g}, {layout}",
        "rope": f"d_head={d // H}, base={base:g}, per unit vector",
        "alibi": f"H={H}, mean slope {alibi_slopes(H).mean():.4g}",
        "alibi (kernel rule)": f"H={H}, sqrt(2 mbar |i-j|)",
        "equidistant": "one-hot rows: every distance sqrt(2)",
        "random": f"N(0, {sigma:g}^2), d={d}, seed={seed}",
        "none": "all distances 0",
    }
    if name not in lines:
        raise ValueError(f"unknown encoding {name!r}; valid names are {', '.join(ENCODING_SET_NAMES)}")
    return lines[name]


# --------------------------------------------------------------------------------------------
# Registry and dispatcher
# --------------------------------------------------------------------------------------------


def _sinusoidal(n, *, d, n_heads=None, base=10000.0, layout="interleaved"):
    return sinusoidal_distances(n, d, base=base, layout=layout)


def _rope(n, *, d, n_heads, base=10000.0, d_head=None):
    if d_head is None:
        if n_heads is None:
            raise ValueError("rope needs d_head, or d and n_heads (d_head = d / n_heads)")
        if d % n_heads:
            raise ValueError(f"n_heads={n_heads} does not divide d={d}; rope needs d_head = d / n_heads")
        d_head = d // n_heads
    return rope_distances(n, d_head, base=base)


def _alibi(n, *, d=None, n_heads, head=None):
    if n_heads is None:
        raise ValueError("alibi needs n_heads")
    return alibi_distances(n, n_heads, head=head)


def _none(n, *, d=None, n_heads=None):
    return none_distances(n)


def _random(n, *, d, n_heads=None, sigma=0.02, seed=0):
    return random_distances(n, d, sigma=sigma, seed=seed)


def _table(n, *, d=None, n_heads=None, table):
    table = np.asarray(table)
    if table.ndim != 2 or table.shape[0] < n:
        raise ValueError(
            f"the table has shape {table.shape}; it needs at least n={n} rows (N_max wall: "
            "a table has no vector for positions at or beyond its size)"
        )
    return table_distances(table[:n])


def _mds(n, *, d=None, n_heads=None, target, k=None):
    target = np.asarray(target)
    if target.shape != (n, n):
        raise ValueError(f"mds needs target=, the (n, n) = ({n}, {n}) distances to embed; got shape {target.shape}")
    return mds_distances(target, k)


#: name → ``f(n, *, d, n_heads, **options) -> (n, n)``. Add a new encoding here.
ENCODINGS: dict[str, Callable[..., np.ndarray]] = {
    "sinusoidal": _sinusoidal,
    "rope": _rope,
    "alibi": _alibi,
    "none": _none,
    "random": _random,
    "table": _table,
    "mds": _mds,
}


def encoding_distances(name: str, n: int, d: int | None = None, n_heads: int | None = None, **options) -> np.ndarray:
    """The ``n × n`` distance matrix of the encoding called ``name``.

    Parameters
    ----------
    name : str
        One of :data:`ENCODINGS`: ``"sinusoidal"`` (options ``base``, ``layout``), ``"rope"``
        (``base``, ``d_head``; default ``d // n_heads``), ``"alibi"`` (``head``), ``"none"``,
        ``"random"`` (``sigma``, ``seed``), ``"table"`` (``table``, an ``(N, k)`` array, ``N ≥ n``),
        ``"mds"`` (``target``, the ``(n, n)`` distances to embed; ``k``, the rank).
    n : int
        Number of positions.
    d, n_heads : int
        Model width and number of heads, where the encoding needs them.

    Returns
    -------
    D : ndarray, shape (n, n)
    """
    if name not in ENCODINGS:
        raise ValueError(f"unknown encoding {name!r}; valid encodings are {', '.join(ENCODINGS)}")
    if name in ("sinusoidal", "random", "rope") and d is None and options.get("d_head") is None:
        raise ValueError(f"encoding {name!r} needs the width d")
    fn = ENCODINGS[name]
    try:  # check the options against the signature only: a TypeError raised inside fn is not rewritten
        inspect.signature(fn).bind(n, d=d, n_heads=n_heads, **options)
    except TypeError as err:
        raise ValueError(f"bad options {sorted(options)} for encoding {name!r}: {err}") from None
    return fn(n, d=d, n_heads=n_heads, **options)


__all__ = [
    "SINUSOIDAL_LAYOUTS", "ENCODINGS", "sinusoidal_frequencies", "sinusoidal_table", "sinusoidal_distances",
    "rope_frequencies", "cosine_kernel", "rope_kernel", "rope_distances", "rotary_distances", "alibi_slopes", "alibi_bias", "alibi_distances",
    "none_distances", "random_table", "random_distances", "table_distances", "mds_distances", "encoding_distances",
    "alibi_kernel_distances", "equidistant_distances", "random_walk_table", "REFERENCE_TABLES", "reference_tables",
    "ENCODING_SET_NAMES", "DEFAULT_ENCODING_SET", "encoding_set", "describe_encoding",
]
