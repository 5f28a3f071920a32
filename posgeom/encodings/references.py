r"""Reference geometries an encoding or a learned table is compared with: ALiBi's bias read as a kernel,
the equidistant simplex, the random walk, and :func:`reference_tables` (NumPy only)."""

from __future__ import annotations

import numpy as np

from ..validation import check_positive_float, check_positive_int
from .fixed import alibi_distances, random_table, sinusoidal_table

def alibi_kernel_distances(n: int, n_heads: int, head: int | None = None) -> np.ndarray:
    r"""ALiBi's bias read as a kernel, the rule used for RoPE: $\hat d_{ij}^2 = 2(K(0) - K(i-j))$.

    With $K(\delta) = -\bar m |\delta|$ this is $\hat d_{ij} = \sqrt{2 \bar m |i - j|}$, not ALiBi's line.

    Parameters
    ----------
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
    r"""The regular simplex: one-hot positions, every distance $\sqrt 2$; the ``"scale_free"`` baseline to beat.

    Returns
    -------
    D : ndarray of shape (n, n)
    """
    n = check_positive_int(n, "n")
    # dhat_ij = ||e_i - e_j|| = sqrt(2) for i != j
    return np.sqrt(2.0) * (1.0 - np.eye(n))


def random_walk_table(n: int, d: int, sigma: float = 0.02, seed: int | None = 0) -> np.ndarray:
    r"""A random walk over positions, $p_i = p_{i-1} + \varepsilon_i$, $\varepsilon_i \sim \mathcal N(0, \sigma^2 I_d)$.

    The null model of a learned table: smooth, with principal components close to low-frequency cosines.

    Parameters
    ----------
    sigma, seed :
        $\sigma > 0$, the standard deviation of a step; the seed (int or None).

    Returns
    -------
    P : ndarray of shape (n, d)
    """
    n = check_positive_int(n, "n")
    d = check_positive_int(d, "d")
    sigma = check_positive_float(sigma, "sigma")
    rng = np.random.default_rng(seed)
    # p_i = sum_{k <= i} eps_k
    return np.cumsum(rng.normal(0.0, sigma, size=(n, d)), axis=0)


#: The reference tables a learned table is put next to (:func:`reference_tables`).
REFERENCE_TABLES = ("sinusoidal", "random_normal", "random_walk")


def reference_tables(n: int, d: int, *, sigma: float = 0.02, seed: int = 0) -> dict[str, np.ndarray]:
    r"""The references of :data:`REFERENCE_TABLES` at shape ``(n, d)`` (sinusoidal: base 10000, interleaved).

    Parameters
    ----------
    n, d : int
        Positions and width (``d`` even, for the sinusoidal table).
    sigma, seed :
        The scale and seed of the two random references.

    Returns
    -------
    dict of str to ndarray of shape (n, d)
    """
    return {
        "sinusoidal": sinusoidal_table(n, d),
        "random_normal": random_table(n, d, sigma=sigma, seed=seed),
        "random_walk": random_walk_table(n, d, sigma=sigma, seed=seed),
    }
