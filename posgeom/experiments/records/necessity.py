"""Typed records of what :mod:`posgeom.experiments.necessity` stores (a row is the models layer's own record).

The records are the experiment's own (it stores them); they are re-exported here under the same names.
"""

from __future__ import annotations

from ..necessity import StoredEquivariance, StoredOrderTask

__all__ = ["StoredEquivariance", "StoredOrderTask"]
