"""Student-t intervals over draws (posgeom.geometry.intervals) against the t quantile written out."""

from __future__ import annotations

import numpy as np
import pytest

import posgeom.geometry as geo


def test_seed_interval_against_the_t_quantile():
    from scipy import stats

    x = np.array([0.2, 0.25, 0.31, 0.22, 0.27])
    iv = geo.seed_interval(x, 0.9)
    half = stats.t.ppf(0.95, 4) * x.std(ddof=1) / np.sqrt(5)
    assert iv.mean == pytest.approx(x.mean()) and iv.low == pytest.approx(x.mean() - half)
    assert iv.high == pytest.approx(x.mean() + half) and iv.n == 5 and iv.level == 0.9
    with pytest.raises(ValueError, match="at least 2"):
        geo.seed_interval([1.0])
    with pytest.raises(ValueError, match="at least 2 finite"):
        geo.seed_interval([1.0, np.nan])
    with pytest.raises(ValueError, match="level"):
        geo.seed_interval(x, 1.5)


def test_seed_interval_closed_form_and_as_dict():
    x = np.array([0.1, 0.4, 0.2, 0.5, 0.3])
    e = geo.seed_interval(x, 0.95).as_dict()
    # closed form: t_{4, 0.975} = 2.7764451051977987
    half = 2.7764451051977987 * x.std(ddof=1) / np.sqrt(5)
    assert e["mean"] == pytest.approx(0.3) and e["sd"] == pytest.approx(x.std(ddof=1)) and e["n"] == 5
    assert (e["low"], e["high"]) == pytest.approx((0.3 - half, 0.3 + half))


def test_paired_difference_is_the_interval_of_the_differences():
    a, b = np.array([1.0, 2.0, 4.0]), np.array([0.5, 1.0, 3.0])
    assert geo.paired_difference(a, b) == geo.seed_interval(a - b)
    with pytest.raises(ValueError, match="one value per seed"):
        geo.paired_difference(a, b[:2])


def test_spread_against_numpy():
    x = [3.0, 1.0, 2.0]
    assert geo.spread(x) == {"mean": 2.0, "sd": pytest.approx(np.std(x, ddof=1)), "min": 1.0, "max": 3.0}
    assert geo.spread([5.0]) == {"mean": 5.0, "sd": 0.0, "min": 5.0, "max": 5.0}
    with pytest.raises(ValueError, match="at least one"):
        geo.spread([])
