r"""How a position table $P$ (n, d) sits against a target geometry $D$ (n, n), in four numbers."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .stress import stress
from .tables import cosine_similarity_matrix

__all__ = ["TableGeometry", "table_geometry"]


@dataclass(frozen=True)
class TableGeometry:
    r"""Neighbour cosine $\frac{1}{n-1}\sum_i \cos(P_i, P_{i+1})$, stress against the task's geometry, mean row norm."""

    neighbour_cos: float
    stress_paper: float
    stress_scale_free: float
    row_norm: float


def table_geometry(P, D) -> TableGeometry:
    r""":class:`TableGeometry` of a table ``P`` against the distances ``D``.

    Parameters
    ----------
    P : array-like of shape (n, d)
    D : array-like of shape (n, n)
    """
    C = cosine_similarity_matrix(P)
    return TableGeometry(
        neighbour_cos=float(np.diagonal(C, 1).mean()),
        stress_paper=stress(D, P, "paper", as_distances=False),
        stress_scale_free=stress(D, P, "scale_free", as_distances=False),
        row_norm=float(np.linalg.norm(P, axis=1).mean()),
    )
