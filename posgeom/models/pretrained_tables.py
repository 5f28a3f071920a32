r"""A position table next to its references: its anatomy, its separation against Gaussian tables, and its
stress against a corpus's Hellinger geometry; which pretrained tables load here.

The references (:func:`posgeom.encodings.reference_tables`) are the sinusoidal table, a random
$\mathcal N(0, \sigma^2)$ table and a random walk down the positions, of the table's shape.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import geometry as geo
from ..corpora.distances import corpus_distances
from ..corpora.options import CorpusOptions
from ..encodings import reference_tables
from ..geometry.stress import REPORTED_NORMALIZATIONS
from ..geometry.tables import analyse_table

__all__ = ["table_anatomy", "table_stress", "random_separation", "pretrained_separation", "TableAvailability",
           "table_availability"]


def table_anatomy(P, *, isolation_threshold: float = 2.0, n_components: int = 6, n_first: int = 10,
                  seed: int = 0) -> tuple[dict, dict]:
    r"""Similarity, isolation, spectra and principal components of a table and of its three references.

    Parameters
    ----------
    P : ndarray of shape (n, d)

    Returns
    -------
    values : dict
        ``shape``, and :func:`~posgeom.geometry.analyse_table` under ``"table"`` and each reference's name.
    arrays : dict
        Its arrays prefixed ``"table/"``, ``"sinusoidal/"``, ... (similarity matrices of the table only).
    """
    P = np.asarray(P)
    n, d = P.shape
    tables = {"table": P, **reference_tables(n, d + (d % 2), seed=seed)}
    if d % 2:
        tables["sinusoidal"] = tables["sinusoidal"][:, :d]
    values, arrays = {"shape": [n, d]}, {}
    for key, T in tables.items():
        v, arr = analyse_table(T, n_components=n_components, isolation_threshold=isolation_threshold, n_first=n_first)
        values[key] = v
        for k, x in arr.items():
            # the n x n similarity matrices are stored for the learned table only (float32)
            if k.startswith("cos") and key != "table":
                continue
            arrays[f"{key}/{k}"] = x.astype(np.float32) if k.startswith("cos") else x
    arrays["table/P"] = P
    return values, arrays


def table_stress(pm, corpus: str, n_positions: int, *, min_count: int = 1, alpha: float = 0.0,
                 data_dir=None) -> dict:
    r"""Stress of a pretrained model's table against one corpus's Hellinger geometry.

    The marginals are counted with the model's own tokenizer; positions reached by fewer than ``min_count``
    sequences are dropped. The references and the corpus's own classical MDS are scored alongside.

    Parameters
    ----------
    pm : posgeom.models.pretrained.PretrainedModel
    corpus : str
        A corpus of :data:`posgeom.corpora.real.CORPORA`.
    n_positions : int
        Positions counted (at most the table's ``N_max``).

    Returns
    -------
    dict
        ``"paper"`` and ``"scale_free"`` stress per table (``"table"``, the references, ``"mds"``), and
        ``n_kept``, ``dropped`` and the other facts of the count.
    """
    P = pm.position_table()
    tok = pm.tokenizer
    special = "model" if getattr(tok, "cls_token_id", None) is not None else "content"
    n = min(n_positions, P.shape[0])
    corpus_geo = corpus_distances(
        CorpusOptions(corpus, "train", n, special, tokenizer=tok, min_count=min_count, alpha=alpha),
        data_dir=data_dir)
    D, pos, reach = corpus_geo.D, corpus_geo.positions, corpus_geo.reach
    d = P.shape[1]
    refs = reference_tables(int(pos.max()) + 1, d + (d % 2), seed=0)
    tables = {"table": P[pos], **{k: T[pos, :d] for k, T in refs.items()}, "mds": geo.classical_mds(D).embedding}
    row = {k: {norm: geo.stress(D, T, norm, as_distances=False) for norm in REPORTED_NORMALIZATIONS}
           for k, T in tables.items()}
    iu = np.triu_indices(pos.size, 1)
    row.update(n_kept=int(pos.size), n_positions=int(n), dropped=[int(i) for i in np.setdiff1d(np.arange(n), pos)],
               special=special, tokenizer=f"{pm.name} (its own)", min_reach=int(reach.min()),
               mean_distance=float(D[iu].mean()), mean_table_distance=float(geo.euclidean_distances(P[pos])[iu].mean()))
    return row


def random_separation(n: int, d: int, *, n_draws: int = 20, seed: int = 0) -> tuple[float, float]:
    r"""Mean and standard deviation of the *normalised* separation of Gaussian $n \times d$ tables.

    A table at initialisation, $P_{ij} \sim \mathcal N(0, \sigma^2)$, has this value whatever $\sigma$.
    """
    rng = np.random.default_rng(seed)
    vals = [geo.separation(rng.standard_normal((n, d))).normalized for _ in range(n_draws)]
    return float(np.mean(vals)), float(np.std(vals, ddof=1))


def pretrained_separation(P, positions, *, seed: int = 0) -> tuple[dict, dict]:
    r"""Separation of a position table over its first ``n`` rows, for each ``n`` of ``positions``.

    Parameters
    ----------
    P : ndarray of shape (N_max, d)
    positions : sequence of int, each at most N_max

    Returns
    -------
    by_n : dict
        ``str(n)`` → raw and normalised separation, median distance, closest pair, and :func:`random_separation`.
    nearest : dict
        ``nearest`` (N_max,) each row's distance to its nearest other row, ``nearest_index`` (N_max,) which.
    """
    P = np.asarray(P, dtype=np.float64)
    by_n = {}
    for n in positions:
        if n > P.shape[0]:
            raise ValueError(f"n={n} exceeds the table's {P.shape[0]} positions")
        s = geo.separation(P[:n])
        ref = random_separation(n, P.shape[1], seed=seed)
        by_n[str(n)] = dict(raw=s.raw, normalized=s.normalized, median=s.median, pair=list(s.pair),
                            random_normalized_mean=ref[0], random_normalized_std=ref[1])
    D = geo.euclidean_distances(P)
    np.fill_diagonal(D, np.inf)
    return by_n, dict(nearest=D.min(axis=1), nearest_index=D.argmin(axis=1))


@dataclass(frozen=True)
class TableAvailability:
    """Whether a pretrained model (and so its position table) could be loaded here, and why not.

    Attributes
    ----------
    reason : str
        ``""`` when available, else the loader's message.
    shape : tuple of int or None
        ``(N_max, d)`` of the table when available.
    """

    name: str
    available: bool
    reason: str = ""
    shape: tuple | None = None


def table_availability(names) -> list[TableAvailability]:
    """Try to load the position table of every named pretrained model: a :class:`TableAvailability` each, in order."""
    from .pretrained import HUB_ALIASES, ModelUnavailableError, position_table
    out = []
    for name in (HUB_ALIASES.get(n, n) for n in names):
        try:
            P = position_table(name)
        except ModelUnavailableError as err:
            out.append(TableAvailability(name, False, str(err)))
            continue
        except ValueError as err:  # a model without a learned absolute table, or an invalid name
            out.append(TableAvailability(name, False, str(err)))
            continue
        out.append(TableAvailability(name, True, "", tuple(int(s) for s in P.shape)))
    return out
