"""Order agreement (posgeom.geometry.agreement) and table fit (posgeom.geometry.table_fit) against brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import posgeom
import posgeom.geometry as geo
from posgeom.experiments import learned_tables as lt


def _brute_violation(D, Dh):
    iu = np.triu_indices(D.shape[0], 1)
    a, b = D[iu], Dh[iu]
    disc = conc = 0
    for p, q in itertools.combinations(range(a.size), 2):
        s = (a[p] - a[q]) * (b[p] - b[q])
        disc += s < 0
        conc += s > 0
    return disc / (disc + conc)


def _random_D(rng, n, k=3):
    return posgeom.euclidean_distances(rng.standard_normal((n, k)))


def test_monotonicity_of_matches_brute_force_with_ties():
    rng = np.random.default_rng(4)
    D = np.round(_random_D(rng, 7), 1)
    Dh = np.abs(np.subtract.outer(np.arange(7), np.arange(7))).astype(float)
    m = posgeom.geometry.monotonicity_of(D, Dh)
    assert m["violation_rate"] == pytest.approx(_brute_violation(D, Dh))
    assert 0 < m["tied_fraction"] < 1


def test_table_geometry_against_a_loop():
    rng = np.random.default_rng(2)
    P, X = rng.standard_normal((6, 3)), rng.standard_normal((6, 2))
    D = np.sqrt(((X[:, None] - X[None]) ** 2).sum(-1))
    g = geo.table_geometry(P, D)
    cos = [P[i] @ P[i + 1] / np.linalg.norm(P[i]) / np.linalg.norm(P[i + 1]) for i in range(5)]
    assert g.neighbour_cos == pytest.approx(np.mean(cos)) and g.row_norm == pytest.approx(np.linalg.norm(P, axis=1).mean())
    assert lt.init_study_variants(("normal_0.02", "mds"), (0.0, 0.1)) == [("normal_0.02", 0.0), ("mds", 0.0),
                                                                          ("normal_0.02", 0.1)]
