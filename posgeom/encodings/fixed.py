r"""The fixed encodings' geometry (NumPy only): sinusoidal, RoPE, ALiBi, none, random, any table and MDS, each
as a table ``P`` of shape (n, d) or the (n, n) distances it induces; the formulas are in :mod:`posgeom.encodings`.
"""

from __future__ import annotations

import numpy as np

from ..geometry import euclidean_distances
from ..validation import check_choice, check_even, check_positive_float, check_positive_int, check_real

SINUSOIDAL_LAYOUTS = ("interleaved", "concatenated")


def _check_base(base) -> float:
    return check_real(base, "base", 1, open_lo=True)


# Sinusoidal


def sinusoidal_frequencies(d: int, base: float = 10000.0) -> np.ndarray:
    r"""Angular frequencies $\omega_k = b^{-2k/d}$ of a sinusoidal table of width ``d``.

    Parameters
    ----------
    d, base :
        Width of the table (even): $d/2$ frequencies; $b > 1$.

    Returns
    -------
    omega : ndarray, shape (d // 2,)
    """
    d = check_even(d, "d")
    base = _check_base(base)
    k = np.arange(d // 2, dtype=np.float64)
    # omega_k = base^(-2k/d)
    return base ** (-2.0 * k / d)


def sinusoidal_table(n: int, d: int, base: float = 10000.0, layout: str = "interleaved") -> np.ndarray:
    r"""The sinusoidal position table of Vaswani et al. (2017).

    Parameters
    ----------
    n, d : int
        Positions and width (even).
    base : float
        The base ``b`` of the frequencies ``b^(-2k/d)``.
    layout : {"interleaved", "concatenated"}
        ``"interleaved"``: columns ``sin, cos, sin, cos, …``; ``"concatenated"``: all sines, then all cosines.

    Returns
    -------
    P : ndarray, shape (n, d), float64
    """
    n = check_positive_int(n, "n")
    check_choice(layout, "sinusoidal layout", SINUSOIDAL_LAYOUTS, plural="layouts")
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
    r"""Distances of :func:`sinusoidal_table`'s rows: $\lVert p_i - p_j \rVert^2 = \sum_k 2 - 2\cos((i - j)\omega_k)$.

    Returns
    -------
    D : ndarray, shape (n, n)
    """
    return euclidean_distances(sinusoidal_table(n, d, base=base, layout=layout))


# RoPE


def rope_frequencies(d_head: int, base: float = 10000.0) -> np.ndarray:
    r"""RoPE rotation frequencies $\theta_k = b^{-2k/d_{head}}$, $k = 0 … d_{head}/2 - 1$.

    Parameters
    ----------
    d_head, base :
        The width of one head (even); $b > 1$.

    Returns
    -------
    theta : ndarray, shape (d_head // 2,)
    """
    return sinusoidal_frequencies(d_head, base)


def cosine_kernel(deltas, omega) -> np.ndarray:
    r"""The mean-cosine kernel of a frequency set: $K_\Omega(\delta) = \frac1m \sum_{k=1}^m \cos(\delta\,\omega_k)$.

    RoPE's relative score, and the sinusoidal table's $\lVert p_i - p_j \rVert^2 = d\,(1 - K_\Omega(i - j))$.

    Parameters
    ----------
    deltas, omega : array_like
        Position offsets $\delta = i - j$ (any shape); the frequencies (m,), in radians per position.

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
    r"""RoPE's kernel $K(\delta) = \frac1m \sum_k \cos(\delta\theta_k)$ (:func:`cosine_kernel`, RoPE's frequencies).

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
    r"""RoPE's distances $\hat d_{ij} = \sqrt{2 (K(0) - K(i-j))}$ (:func:`rotary_distances`, RoPE's frequencies).

    Parameters
    ----------
    n, d_head, base :
        As :func:`rope_frequencies` (``n`` positions).

    Returns
    -------
    D : ndarray, shape (n, n), symmetric, zero diagonal
    """
    return rotary_distances(n, rope_frequencies(d_head, base))


def rotary_distances(n: int, theta) -> np.ndarray:
    r"""RoPE's distances $\hat d_{ij}^2 = 2 (K(0) - K(i - j))$ for any rotation frequencies (a model's own, scaled).

    Parameters
    ----------
    n : int
        Positions.
    theta : array_like, shape (m,)
        The frequencies of the rotated coordinate pairs (:func:`rope_frequencies` for the original RoPE).

    Returns
    -------
    D : ndarray, shape (n, n), symmetric, zero diagonal
    """
    n = check_positive_int(n, "n")
    theta = np.asarray(theta, dtype=np.float64)
    if theta.ndim != 1 or theta.size < 1 or not np.all(np.isfinite(theta)):
        raise ValueError(f"theta must be a non-empty 1-D array of finite frequencies, got shape {theta.shape}")
    idx = np.arange(n)
    # K depends on i - j only and is even: one value per offset |i - j| (n of them, not n^2 x m)
    # dhat^2(offset) = 2 (K(0) - K(offset)), with K(0) = 1; rounding can make it slightly negative
    sq = 2.0 * (1.0 - cosine_kernel(idx.astype(np.float64), theta))
    by_offset = np.sqrt(np.clip(sq, 0.0, None))
    return by_offset[np.abs(idx[:, None] - idx[None, :])]


# ALiBi


def alibi_slopes(n_heads: int) -> np.ndarray:
    r"""The ALiBi slopes of Press et al. (2022), one per head: $m_h = r^{h+1}$, $r = 2^{-8/H}$ for a power of two $H$.

    Otherwise, with $H'$ the largest power of two below $H$: the $H'$ slopes, then slopes ``0, 2, 4, …`` of the
    $2H'$ sequence, $H - H'$ of them.

    Parameters
    ----------
    n_heads : int
        $H \ge 1$.

    Returns
    -------
    m : ndarray, shape (n_heads,), float64, positive
    """
    n_heads = check_positive_int(n_heads, "n_heads")

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

    Parameters
    ----------
    n, n_heads : int
        Positions; $H$, one slope $m_h$ per head (:func:`alibi_slopes`).

    Returns
    -------
    bias : ndarray, shape (n_heads, n, n), non-positive
    """
    n = check_positive_int(n, "n")
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
        A model's own slopes (e.g. MPT's, which differ for some head counts); default :func:`alibi_slopes`.

    Returns
    -------
    D : ndarray, shape (n, n)
    """
    n = check_positive_int(n, "n")
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


# None, random, tables


def none_distances(n: int) -> np.ndarray:
    """NoPE: every position has the same vector, so every distance is 0.

    Returns
    -------
    D : ndarray, shape (n, n), zeros
    """
    return np.zeros((check_positive_int(n, "n"),) * 2)


def random_table(n: int, d: int, sigma: float = 0.02, seed: int | None = 0) -> np.ndarray:
    r"""A learned table at initialisation, $P_{ij} \sim \mathcal N(0, \sigma^2)$.

    Parameters
    ----------
    sigma, seed :
        $\sigma > 0$ (0.02 as BERT and GPT-2, or 1); the generator's seed (int or None).

    Returns
    -------
    P : ndarray, shape (n, d)
    """
    n, d = check_positive_int(n, "n"), check_positive_int(d, "d")
    sigma = check_positive_float(sigma, "sigma", "0.02 as BERT/GPT-2, or 1")
    rng = np.random.default_rng(seed)
    return sigma * rng.standard_normal((n, d))


def random_distances(n: int, d: int, sigma: float = 0.02, seed: int | None = 0) -> np.ndarray:
    r"""Distances between the rows of :func:`random_table`, $\hat d_{ij} = \lVert p_i - p_j \rVert$.

    Returns
    -------
    D : ndarray, shape (n, n)
    """
    return euclidean_distances(random_table(n, d, sigma=sigma, seed=seed))


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
    return euclidean_distances(P)


def mds_distances(D, k: int | None = None) -> np.ndarray:
    r"""Distances of Algorithm 1's encoding $P_{MDS} = U_k \Lambda_k^{1/2}$ of ``D`` (``k=None``: numerical rank).

    Parameters
    ----------
    D : array_like, shape (n, n)

    Returns
    -------
    Dhat : ndarray, shape (n, n)
    """
    from ..geometry import classical_mds
    return table_distances(classical_mds(D, k).embedding)
