"""Entry summaries of distance matrices (posgeom.geometry.entries) against loops."""

from __future__ import annotations

import numpy as np
import pytest

import posgeom


def test_offdiag_and_rms_match_loops():
    rng = np.random.default_rng(1)
    D = rng.random((6, 6))
    loop = [D[i, j] for i in range(6) for j in range(i + 1, 6)]
    np.testing.assert_array_equal(posgeom.geometry.offdiag(D), loop)
    assert posgeom.geometry.rms_offdiag(D) == pytest.approx(np.sqrt(np.mean(np.square(loop))))


def test_encoding_stresses_nan_where_undefined():
    D = posgeom.hellinger_matrix(np.eye(3))
    out = posgeom.geometry.encoding_stresses(D, {"none": np.zeros((3, 3))}, normalizations=("paper", "scale_free", "kruskal1"))
    assert out["none"]["paper"] == pytest.approx(1.0) and out["none"]["scale_free"] == pytest.approx(1.0)
    assert np.isnan(out["none"]["kruskal1"])
