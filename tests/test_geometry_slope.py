"""ALiBi's stress as a parabola in the slope (posgeom.geometry.slope) against the stress of the line."""

from __future__ import annotations

import numpy as np
import pytest

import posgeom


def _random_D(rng, n, k=3):
    return posgeom.euclidean_distances(rng.standard_normal((n, k)))


def test_alibi_parabola_matches_the_stress_of_the_line():
    rng = np.random.default_rng(3)
    D = _random_D(rng, 12)
    par = posgeom.geometry.alibi_parabola(D)
    for m in (0.01, 0.1, 0.7, par["m_star"]):
        line = m * np.abs(np.subtract.outer(np.arange(12), np.arange(12)))
        assert posgeom.geometry.alibi_paper_stress(m, par) == pytest.approx(posgeom.stress(D, line, "paper", as_distances=True))
    line = np.abs(np.subtract.outer(np.arange(12), np.arange(12))).astype(float)
    assert par["minimum"] == pytest.approx(posgeom.stress(D, line, "scale_free", as_distances=True))
    lo, hi = posgeom.geometry.alibi_slopes_for(par["minimum"] + 0.5, par)
    assert lo < par["m_star"] < hi
    assert posgeom.geometry.alibi_paper_stress([lo, hi], par) == pytest.approx([par["minimum"] + 0.5] * 2)
    with pytest.raises(ValueError, match="no ALiBi slope"):
        posgeom.geometry.alibi_slopes_for(par["minimum"] - 1e-3, par)
