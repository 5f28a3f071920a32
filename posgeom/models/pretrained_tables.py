r"""A position table next to its references: its anatomy (similarity, isolation, spectra and principal
components, :func:`table_anatomy`) and, for a pretrained model's table, its stress against a corpus's
Hellinger geometry (:func:`table_stress`).

The references are :func:`posgeom.encodings.reference_tables` of the table's shape: the sinusoidal table,
a random $\mathcal N(0, \sigma^2)$ table (a learned table at initialisation) and a random walk down the
positions (:func:`posgeom.encodings.random_walk_table`).
"""

from __future__ import annotations

import numpy as np

from .. import geometry as geo
from ..corpora.distances import CorpusOptions, corpus_distances
from ..encodings import reference_tables
from ..geometry.tables import analyse_table

__all__ = ["table_anatomy", "table_stress"]


def table_anatomy(P, *, isolation_threshold: float = 2.0, n_components: int = 6, n_first: int = 10,
                  seed: int = 0) -> tuple[dict, dict]:
    r"""Similarity, isolation, spectra and principal components of a table and of its three references.

    The references (:func:`posgeom.encodings.reference_tables`, drawn from ``seed``) have the table's shape
    (an odd width is cut from the next even one). Each table goes through
    :func:`posgeom.geometry.analyse_table` with ``n_components``, ``isolation_threshold`` and ``n_first``.

    Parameters
    ----------
    P : ndarray of shape (n, d)

    Returns
    -------
    values : dict
        ``shape``, and the values of :func:`analyse_table` under ``"table"`` and each reference's name.
    arrays : dict
        Its arrays prefixed ``"table/"``, ``"sinusoidal/"``, ... (the n × n similarity matrices of the
        table only, as float32), and ``"table/P"``.
    """
    P = np.asarray(P)
    n, d = P.shape
    tables = {"table": P, **reference_tables(n, d + (d % 2), seed=seed)}
    if d % 2:
        tables["sinusoidal"] = tables["sinusoidal"][:, :d]
    values, arrays = {"shape": [n, d]}, {}
    for key, T in tables.items():
        v, arr = analyse_table(T, n_components=n_components,
                               isolation_threshold=isolation_threshold, n_first=n_first)
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

    The corpus's positional marginals are counted with the model's own tokenizer (policy ``"model"`` —
    ``[CLS]`` at 0 — for tokenizers with a ``[CLS]`` token, ``"content"`` otherwise) over its first
    ``min(n_positions, N_max)`` positions, positions reached by fewer than ``min_count`` sequences dropped
    (``alpha``: additive smoothing of the marginals), and the stress (``"paper"`` and ``"scale_free"``) of the
    table's rows at the kept positions computed, next to the sinusoidal, random-normal and random-walk
    tables of the same width and classical MDS of the corpus itself (full rank: the optimum of Algorithm 1).

    Parameters
    ----------
    pm : posgeom.models.pretrained.PretrainedModel
    corpus : str
        A corpus of :data:`posgeom.corpora.real.CORPORA` (``"sst2"``, ``"imdb"``).
    n_positions : int
        Positions counted (at most the table's ``N_max``).

    Returns
    -------
    dict
        ``{"table": {"paper": ..., "scale_free": ...}, "sinusoidal": ..., "random_normal": ...,
        "random_walk": ..., "mds": ..., "n_kept", "n_positions", "dropped", "special", "tokenizer",
        "min_reach", "mean_distance", "mean_table_distance"}``.
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
    row = {k: {norm: geo.stress(D, T, norm, as_distances=False) for norm in ("paper", "scale_free")}
           for k, T in tables.items()}
    iu = np.triu_indices(pos.size, 1)
    row.update(n_kept=int(pos.size), n_positions=int(n), dropped=[int(i) for i in np.setdiff1d(np.arange(n), pos)],
               special=special, tokenizer=f"{pm.name} (its own)", min_reach=int(reach.min()),
               mean_distance=float(D[iu].mean()), mean_table_distance=float(geo.euclidean_distances(P[pos])[iu].mean()))
    return row
