"""posgeom.plotting.seed_band: the mean over seeds and the band between the lowest and highest seed."""

from __future__ import annotations

import matplotlib

matplotlib.use("agg")  # a test renders nothing on screen (never set for the book)

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from posgeom.plotting import OKABE_ITO, seed_band  # noqa: E402


def test_seed_band_is_the_mean_and_the_min_max_band():
    rng = np.random.default_rng(0)
    x, Y = np.arange(40), rng.normal(size=(5, 40))
    fig, ax = plt.subplots()
    seed_band(ax, x, Y, color=OKABE_ITO[0], label="five seeds")
    (line,) = ax.lines
    np.testing.assert_allclose(line.get_ydata(), Y.mean(axis=0))  # oracle: the plain mean over seeds
    band = ax.collections[0].get_paths()[0].vertices
    inside = band[(band[:, 0] >= 0) & (band[:, 0] <= 39)]
    lo = np.interp(inside[:, 0], x, Y.min(axis=0))
    hi = np.interp(inside[:, 0], x, Y.max(axis=0))
    assert np.all(np.isclose(inside[:, 1], lo) | np.isclose(inside[:, 1], hi))
    assert ax.get_legend() is None and line.get_label() == "five seeds"
    plt.close(fig)


def test_seed_band_refuses_a_shape_mismatch():
    fig, ax = plt.subplots()
    with pytest.raises(ValueError, match=r"shape \(n_seeds, 3\)"):
        seed_band(ax, np.arange(3), np.zeros((2, 4)), color="k", label="x")
    plt.close(fig)
