r"""Analysis of a position table $P \in \mathbb R^{n \times d}$ (row $p_i$ the vector of position $i$).

Row similarity and its decay with the lag, rows that stand apart, column spectra, principal components and
best-fitting sinusoids; :func:`analyse_table` gathers them for the chapter on learned tables.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..validation import as_float_matrix, check_int, check_table
from .hellinger import euclidean_distances

__all__ = ["cosine_similarity_matrix", "similarity_by_lag", "isolation_scores", "stand_apart", "dimension_periodograms",
           "spectral_summary", "principal_components", "SinusoidFit", "fit_sinusoid", "analyse_table"]


# cosine similarity and its decay


def cosine_similarity_matrix(P, center: bool = False) -> np.ndarray:
    r"""Cosine similarities $C_{ij}$ between the rows of a table.

    Parameters
    ----------
    P : array-like of shape (n, d)
    center : bool
        Subtract the mean row $\bar p$ first (removes a shared offset that inflates raw cosines).

    Returns
    -------
    C : ndarray of shape (n, n), entries in [-1, 1], ones on the diagonal.
    """
    P = check_table(P)
    if center:
        P = P - P.mean(axis=0, keepdims=True)
    norms = np.linalg.norm(P, axis=1)
    if np.any(norms == 0):
        zero = np.flatnonzero(norms == 0)[:10].tolist()
        raise ValueError(
            f"rows {zero} have zero norm{' after centring' if center else ''}: their cosine similarity is undefined"
        )
    Q = P / norms[:, None]
    # C_ij = <p_i, p_j> / (|p_i| |p_j|)
    C = np.clip(Q @ Q.T, -1.0, 1.0)
    np.fill_diagonal(C, 1.0)
    return C


def similarity_by_lag(C) -> dict[str, np.ndarray]:
    r"""Statistics of the diagonals of a similarity matrix: $s(\delta)$ and its spread.

    Parameters
    ----------
    C : array-like of shape (n, n)

    Returns
    -------
    dict
        ``lag`` (n,) = 0 … n-1 and ``mean``, ``min``, ``max``, ``q10``, ``q90`` (n,): statistics of
        $\{C_{i, i+\delta}\}_{i}$ for each lag $\delta$.
    """
    C = np.asarray(C, dtype=np.float64)
    if C.ndim != 2 or C.shape[0] != C.shape[1] or C.shape[0] < 2:
        raise ValueError(f"C must be a square (n, n) matrix with n >= 2; got shape {C.shape}")
    n = C.shape[0]
    out = {k: np.empty(n) for k in ("mean", "min", "max", "q10", "q90")}
    for lag in range(n):
        diag = np.diagonal(C, offset=lag)
        # s(delta) = mean_i C_{i, i + delta}
        out["mean"][lag] = diag.mean()
        out["min"][lag], out["max"][lag] = diag.min(), diag.max()
        out["q10"][lag], out["q90"][lag] = np.quantile(diag, [0.1, 0.9])
    out["lag"] = np.arange(n)
    return out


# positions that stand apart


def isolation_scores(P) -> np.ndarray:
    r"""Isolation $\iota_i$ of every row: nearest-neighbour distance over its median.

    Parameters
    ----------
    P : array-like of shape (n, d), n >= 3

    Returns
    -------
    iota : ndarray of shape (n,)
    """
    P = check_table(P, min_rows=3)
    D = euclidean_distances(P).copy()
    np.fill_diagonal(D, np.inf)
    nearest = D.min(axis=1)
    median = float(np.median(nearest))
    if median == 0:
        raise ValueError(
            "more than half of the rows have an identical twin: the median nearest-neighbour distance is 0"
        )
    # iota_i = min_j ||p_i - p_j|| / median_k min_j ||p_k - p_j||
    return nearest / median


def stand_apart(P, threshold: float = 2.0) -> np.ndarray:
    r"""Positions whose isolation $\iota_i$ exceeds ``threshold`` (increasing order).

    Returns
    -------
    positions : ndarray of shape (m,), int64
    """
    if not threshold > 0:
        raise ValueError(f"threshold must be > 0; got {threshold!r}")
    return np.flatnonzero(isolation_scores(P) > threshold)


# spectra


def dimension_periodograms(P) -> tuple[np.ndarray, np.ndarray]:
    r"""Periodogram $I_j(k)$ of every dimension (column) of a table, columns centred.

    Parameters
    ----------
    P : array-like of shape (n, d)

    Returns
    -------
    freqs : ndarray of shape (n // 2 + 1,)
        $k / n$ in cycles per position.
    power : ndarray of shape (n // 2 + 1, d)
        $I_j(k) = |\sum_i x_j(i) e^{-2\pi i k i/n}|^2 / n$.
    """
    P = check_table(P)
    n = P.shape[0]
    X = P - P.mean(axis=0, keepdims=True)
    # I_j(k) = |sum_i x_j(i) exp(-2 pi i k i / n)|^2 / n
    power = np.abs(np.fft.rfft(X, axis=0)) ** 2 / n
    return np.fft.rfftfreq(n), power


def spectral_summary(P) -> dict[str, np.ndarray]:
    r"""Dominant frequency and spectral concentration $\kappa_j$ of every dimension.

    Returns
    -------
    dict
        ``dominant_k`` (d,) int (the bin $k \ge 1$), ``dominant_freq`` (d,) in cycles per position,
        ``concentration`` (d,) in [0, 1] (0 for a dimension constant over positions) and ``power_share`` (d,),
        the dimension's share of the table's total (non-constant) power.
    """
    freqs, power = dimension_periodograms(P)
    if power.shape[0] < 2:
        raise ValueError("a spectrum needs at least 2 positions")
    ac = power[1:]
    total = ac.sum(axis=0)
    k = np.argmax(ac, axis=0) + 1
    peak = ac.max(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        # kappa_j = max_{k>=1} I_j(k) / sum_{k>=1} I_j(k)
        conc = np.where(total > 0, peak / np.where(total > 0, total, 1.0), 0.0)
    grand = total.sum()
    share = total / grand if grand > 0 else np.zeros_like(total)
    return {"dominant_k": k.astype(np.int64), "dominant_freq": freqs[k], "concentration": conc, "power_share": share}


# principal components and their best sinusoids


def principal_components(P, k: int) -> tuple[np.ndarray, np.ndarray]:
    r"""The first ``k`` principal components over positions of a table (rows centred).

    Parameters
    ----------
    P : array-like of shape (n, d)
    k : int, 1 <= k <= min(n, d)

    Returns
    -------
    scores : ndarray of shape (n, k)
        $u_k s_k$, signs fixed so that the largest-magnitude entry of each column is positive.
    explained : ndarray of shape (k,)
        Fraction of the total variance $s_k^2 / \sum s^2$ of each component.
    """
    P = check_table(P)
    check_int(k, "k", 1, min(P.shape))
    X = P - P.mean(axis=0, keepdims=True)
    U, S, _ = np.linalg.svd(X, full_matrices=False)
    total = float(np.sum(S**2))
    if total == 0:
        raise ValueError("every row of the table is the same: it has no principal components")
    scores = U[:, :k] * S[:k]
    lead = np.argmax(np.abs(scores), axis=0)
    signs = np.sign(scores[lead, np.arange(k)])
    signs[signs == 0] = 1.0
    return scores * signs, S[:k] ** 2 / total


# the best single sinusoid of a signal


@dataclass(frozen=True)
class SinusoidFit:
    r"""The best single sinusoid of each of ``k`` signals over ``n`` positions (see :func:`fit_sinusoid`).

    Attributes
    ----------
    omega, cycles : ndarray of shape (k,)
        $\omega \in (0, \pi]$ in radians per position; $f = \omega n / 2\pi$ cycles over the ``n`` positions.
    r2 : ndarray of shape (k,)
        Explained fraction $R^2 = 1 - \lVert y - \hat y\rVert^2 / \lVert y - \bar y\rVert^2$ in $[0, 1]$.
    amplitude, phase, offset : ndarray of shape (k,)
        $\hat y(i) = A \cos(\omega i + \varphi) + c$.
    curve : ndarray of shape (n, k)
        The fitted values $\hat y(i)$.
    """

    omega: np.ndarray
    cycles: np.ndarray
    r2: np.ndarray
    amplitude: np.ndarray
    phase: np.ndarray
    offset: np.ndarray
    curve: np.ndarray

    @property
    def period(self) -> np.ndarray:
        r"""(k,) the period $2\pi / \omega$ in positions."""
        return self.n / self.cycles

    @property
    def n(self) -> int:
        """The number of positions."""
        return int(self.curve.shape[0])


def _captured_fractions(Y: np.ndarray, omegas: np.ndarray) -> np.ndarray:
    """(grid, k) share of each centred column's energy in the centred span{cos w i, sin w i}, per w."""
    n = Y.shape[0]
    Yc = Y - Y.mean(axis=0, keepdims=True)
    norms = np.einsum("ij,ij->j", Yc, Yc)
    i = np.arange(n, dtype=np.float64)
    # centred cos and sin columns of every grid frequency, (grid, n) each
    C = np.cos(omegas[:, None] * i[None, :])
    S = np.sin(omegas[:, None] * i[None, :])
    C -= C.mean(axis=1, keepdims=True)
    S -= S.mean(axis=1, keepdims=True)
    cc, ss, cs = np.einsum("gi,gi->g", C, C), np.einsum("gi,gi->g", S, S), np.einsum("gi,gi->g", C, S)
    bc, bs = C @ Yc, S @ Yc  # (grid, k): projections on the two columns
    det = cc * ss - cs * cs
    # rank 1 where the centred sine is rounding noise (omega = pi: sin(pi i) = 0) or parallel to the cosine
    full = (ss > 1e-10 * cc) & (det > 1e-10 * np.maximum(cc * ss, 1e-300))
    # R^2 = b^T G^{-1} b / ||y - mean||^2 with G the 2 x 2 Gram matrix of (cos, sin); rank 1 where sin vanishes
    with np.errstate(divide="ignore", invalid="ignore"):
        r2_full = (ss[:, None] * bc**2 - 2 * cs[:, None] * bc * bs + cc[:, None] * bs**2) / det[:, None]
        r2_cos = np.where(cc[:, None] > 0, bc**2 / cc[:, None], 0.0)
    return np.where(full[:, None], r2_full, r2_cos) / norms[None, :]


def fit_sinusoid(signals, grid: int | None = None) -> SinusoidFit:
    r"""The single sinusoid (free amplitude, phase and offset) that best explains each signal over positions.

    Least squares $y(i) \approx a\cos\omega i + b\sin\omega i + c$ on the grid $\omega_g = \pi g / G$,
    $g = 1 \dots G$; each signal keeps the first frequency with the largest $R^2$.

    Parameters
    ----------
    signals : array-like of shape (n,) or (n, k), n >= 3
        One signal per column (MDS eigenvectors, principal components, table columns); none constant.
    grid : int, optional
        $G$, the number of frequencies in $(0, \pi]$ (default ``n``).

    Returns
    -------
    SinusoidFit
        Arrays of shape (k,) (k = 1 for a 1-D signal) and the fitted curves (n, k).
    """
    Y = np.asarray(signals, dtype=np.float64)
    Y = as_float_matrix(Y[:, None] if Y.ndim == 1 else Y, "signals")
    n, k = Y.shape
    if n < 3 or k < 1:
        raise ValueError(f"signals must hold at least one signal of n >= 3 positions; got shape {Y.shape}")
    grid = n if grid is None else grid
    check_int(grid, "grid", 1)
    if np.any(np.ptp(Y, axis=0) == 0):
        raise ValueError("a signal is constant: no sinusoid explains any of its (zero) variance")
    omegas = np.pi * np.arange(1, grid + 1) / grid
    r2 = _captured_fractions(Y, omegas)
    best = np.argmax(r2, axis=0)
    columns = np.arange(k)
    omega = omegas[best]
    i = np.arange(n, dtype=np.float64)
    coef = np.empty((3, k))
    for j in columns:
        # least squares y ~ a cos(w i) + b sin(w i) + c at the chosen w
        X = np.column_stack([np.cos(omega[j] * i), np.sin(omega[j] * i), np.ones(n)])
        coef[:, j] = np.linalg.lstsq(X, Y[:, j], rcond=None)[0]
    curve = np.cos(np.outer(i, omega)) * coef[0] + np.sin(np.outer(i, omega)) * coef[1] + coef[2]
    return SinusoidFit(
        omega=omega, cycles=(best + 1) * n / (2.0 * grid), r2=np.minimum(r2[best, columns], 1.0),
        # a cos + b sin = A cos(w i + phi) with A = hypot(a, b), phi = atan2(-b, a)
        amplitude=np.hypot(coef[0], coef[1]), phase=np.arctan2(-coef[1], coef[0]), offset=coef[2], curve=curve,
    )


# everything about one table


def analyse_table(P, *, n_components: int = 6, isolation_threshold: float = 2.0,
                  n_first: int = 10) -> tuple[dict, dict]:
    r"""Everything the chapter on learned tables shows about one table, as ``(values, arrays)`` for the registry.

    Parameters
    ----------
    P : array-like of shape (n, d)
    n_components, isolation_threshold, n_first :
        Principal components fit with sinusoids (:func:`~posgeom.geometry.fit_sinusoid`); $\iota$ above which a
        row stands apart; how many leading positions are "the first positions".

    Returns
    -------
    values : dict
        ``neighbour_cos`` ($s(1)$, raw), ``neighbour_cos_centered``, ``neighbour_cos_min``, ``neighbour_cos_median``,
        ``frac_neighbour_above_0_9``, ``lag_below_half`` (first lag with $s(\delta) < 0.5$, or ``None``),
        ``decay_spearman`` (Spearman of $s(\delta)$ with $\delta \le n/2$), ``stand_apart`` (positions),
        ``isolation_threshold``, ``first_isolation`` ($\iota$ of the first ``n_first`` rows), ``median_isolation_rest``,
        ``median_concentration``, ``pc_freq``, ``pc_period``, ``pc_r2``, ``pc_explained``, ``n``, ``d``,
        ``mean_row_norm``, ``offset_ratio`` ($\lVert\bar p\rVert / \operatorname{mean}_i \lVert p_i\rVert$).
    arrays : dict
        ``cos`` (n, n), ``cos_centered`` (n, n), ``lag_mean`` / ``lag_q10`` / ``lag_q90`` (n,) raw and
        ``lag_mean_centered`` (n,), ``isolation`` (n,), ``row_norm`` (n,), ``freqs`` (n//2+1,),
        ``mean_power`` (n//2+1,), ``dominant_freq`` / ``concentration`` (d,), ``pcs`` (n, k).
    """
    from scipy.stats import spearmanr
    P = check_table(P, min_rows=4)
    n, d = P.shape
    C = cosine_similarity_matrix(P, center=False)
    Cc = cosine_similarity_matrix(P, center=True)
    lag = similarity_by_lag(C)
    lag_c = similarity_by_lag(Cc)
    nb = np.diagonal(C, offset=1)
    below = np.flatnonzero(lag["mean"] < 0.5)
    half = max(2, n // 2)
    rho = spearmanr(np.arange(1, half), lag["mean"][1:half]).statistic
    iota = isolation_scores(P)
    first = min(n_first, n)
    spec = spectral_summary(P)
    freqs, power = dimension_periodograms(P)
    k = min(n_components, n, d)
    pcs, explained = principal_components(P, k)
    fit = fit_sinusoid(pcs)
    norms = np.linalg.norm(P, axis=1)
    values = {
        "n": n, "d": d,
        "neighbour_cos": float(lag["mean"][1]),
        "neighbour_cos_centered": float(lag_c["mean"][1]),
        "neighbour_cos_min": float(nb.min()),
        "neighbour_cos_median": float(np.median(nb)),
        "frac_neighbour_above_0_9": float(np.mean(nb > 0.9)),
        "lag_below_half": int(below[0]) if below.size else None,
        "decay_spearman": float(rho),
        "stand_apart": stand_apart(P, isolation_threshold).tolist(),
        "isolation_threshold": float(isolation_threshold),
        "first_isolation": iota[:first].tolist(),
        "median_isolation_rest": float(np.median(iota[first:])) if n > first else float("nan"),
        "median_concentration": float(np.median(spec["concentration"])),
        "pc_freq": fit.cycles.tolist(),
        "pc_period": fit.period.tolist(),
        "pc_r2": fit.r2.tolist(),
        "pc_explained": explained.tolist(),
        "mean_row_norm": float(norms.mean()),
        "offset_ratio": float(np.linalg.norm(P.mean(axis=0)) / norms.mean()),
    }
    arrays = {
        "cos": C, "cos_centered": Cc,
        "lag_mean": lag["mean"], "lag_q10": lag["q10"], "lag_q90": lag["q90"],
        "lag_mean_centered": lag_c["mean"],
        "isolation": iota, "row_norm": norms,
        "freqs": freqs, "mean_power": power.mean(axis=1),
        "dominant_freq": spec["dominant_freq"], "concentration": spec["concentration"],
        "pcs": pcs,
    }
    return values, arrays
