"""Student-t intervals over draws (posgeom.geometry.intervals) against the t quantile written out."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings as hsettings, strategies as st

import posgeom.geometry as geo


def test_seed_interval_against_the_t_quantile():
    from scipy import stats

    x = np.array([0.2, 0.25, 0.31, 0.22, 0.27])
    iv = geo.seed_interval(x, 0.9)
    half = stats.t.ppf(0.95, 4) * x.std(ddof=1) / np.sqrt(5)
    assert iv.mean == pytest.approx(x.mean()) and iv.low == pytest.approx(x.mean() - half)
    assert iv.high == pytest.approx(x.mean() + half) and iv.n == 5 and iv.level == 0.9
    assert iv.t == pytest.approx(stats.t.ppf(0.95, 4)) and iv.as_dict()["t"] == iv.t
    assert iv.text("{:.2f}") == f"{x.mean():.2f} [{x.mean() - half:.2f}, {x.mean() + half:.2f}] (5 seeds, t = 2.13)"
    with pytest.raises(ValueError, match="at least 2"):
        geo.seed_interval([1.0], allow_few=True)
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
    a, b = np.array([1.0, 2.0, 4.0, 3.0, 2.5]), np.array([0.5, 1.0, 3.0, 2.5, 2.0])
    assert geo.paired_difference(a, b) == geo.seed_interval(a - b)
    with pytest.raises(ValueError, match="one value per seed"):
        geo.paired_difference(a, b[:2])


def test_fewer_than_five_seeds_are_refused_unless_allowed():
    x = [0.2, 0.3, 0.25]
    with pytest.raises(ValueError, match=r"at least 5 draws \(t = 4.30 at 3\).*allow_few=True"):
        geo.seed_interval(x)
    with pytest.raises(ValueError, match="at least 5 draws"):
        geo.paired_difference(x, x)
    iv = geo.seed_interval(x, allow_few=True)
    assert iv.n == 3 and iv.t == pytest.approx(4.302652729749464) and iv.text().endswith("(3 seeds, t = 4.30)")
    assert geo.MIN_SEEDS == 5


def test_bounds_clip_the_interval_and_values_must_lie_within():
    x = [0.99, 1.0, 1.0, 0.97, 1.0]
    iv = geo.seed_interval(x, bounds=(0, 1))
    assert iv.high == 1.0 and iv.low < iv.mean < 1.0
    free = geo.seed_interval(x)
    assert free.high > 1.0 and free.low == iv.low  # the clip only cuts what lies past the bound
    with pytest.raises(ValueError, match="within the bounds"):
        geo.seed_interval([*x, 1.2], bounds=(0, 1))
    with pytest.raises(ValueError, match="lo < hi"):
        geo.seed_interval(x, bounds=(1, 0))
    d = geo.paired_difference([1.0] * 5, [0.0, 0.1, 0.0, 0.0, 0.2], bounds=(-1, 1))
    assert d.high <= 1.0


def test_as_dict_round_trip():
    iv = geo.seed_interval([0.1, 0.4, 0.2, 0.5, 0.3], 0.9, bounds=(0, None))
    assert geo.SeedInterval.from_dict(iv.as_dict()) == iv
    with pytest.raises(ValueError, match="hold its mean"):
        geo.SeedInterval(mean=1.0, std=0.1, low=1.1, high=1.2, n=5, level=0.95, t=2.78)


_values = st.lists(st.floats(min_value=0.0, max_value=1.0, allow_nan=False), min_size=5, max_size=30)


@hsettings(max_examples=300, deadline=None)
@given(x=_values, level=st.floats(0.5, 0.99), bounded=st.booleans())
def test_property_every_seed_interval_holds_its_mean_and_bounds(x, level, bounded):
    iv = geo.seed_interval(x, level, bounds=(0, 1) if bounded else None)
    assert iv.low <= iv.mean <= iv.high and iv.n == len(x) and iv.t > 0
    if bounded:
        assert 0 <= iv.low and iv.high <= 1


def test_spread_against_numpy():
    x = [3.0, 1.0, 2.0]
    assert geo.spread(x) == {"mean": 2.0, "sd": pytest.approx(np.std(x, ddof=1)), "min": 1.0, "max": 3.0}
    assert geo.spread([5.0]) == {"mean": 5.0, "sd": 0.0, "min": 5.0, "max": 5.0}
    with pytest.raises(ValueError, match="at least one"):
        geo.spread([])


# ---------------------------------------------------------------------------------------------
# power of an interval over seeds, against a simulation and the normal limit


@pytest.mark.parametrize("n, sd, distance", [(5, 1.0, 1.0), (3, 0.5, 1.0), (10, 2.0, 1.0), (8, 0.03, 0.01)])
def test_exclusion_power_matches_a_simulation_of_the_interval(n, sd, distance):
    from posgeom.geometry import seed_interval
    from posgeom.geometry.intervals import exclusion_power

    rng = np.random.default_rng(7)
    draws = rng.normal(distance, sd, size=(4000, n))
    # the oracle: build each interval with seed_interval itself and count those that exclude 0
    excluded = np.mean([not (iv.low <= 0 <= iv.high) for iv in (seed_interval(x, allow_few=True) for x in draws)])
    p = exclusion_power(n, sd, distance)
    assert abs(excluded - p) < 4 * np.sqrt(p * (1 - p) / len(draws)) + 1e-3


def test_exclusion_power_tends_to_the_normal_formula():
    from scipy import stats

    from posgeom.geometry.intervals import exclusion_power

    n, sd, distance = 4000, 1.0, 0.05
    z, nc = stats.norm.ppf(0.975), distance * np.sqrt(n) / sd
    normal = stats.norm.cdf(nc - z) + stats.norm.cdf(-nc - z)
    assert exclusion_power(n, sd, distance) == pytest.approx(normal, abs=2e-3)


def test_seeds_for_power_is_the_fewest_that_reach_it():
    from posgeom.geometry.intervals import exclusion_power, seeds_for_power

    for sd, distance in [(0.05, 0.01), (0.1, 0.1), (1.0, 0.3)]:
        k = seeds_for_power(sd, distance)
        assert exclusion_power(k, sd, distance) >= 0.8
        assert k == 2 or exclusion_power(k - 1, sd, distance) < 0.8
        # a naive scan from 2 up finds the same number
        naive = next(j for j in range(2, 10_000) if exclusion_power(j, sd, distance) >= 0.8)
        assert naive == k
    assert seeds_for_power(0.0, 0.01) == 2


def test_power_inputs_are_checked():
    from posgeom.geometry.intervals import exclusion_power, seed_design, seeds_for_power

    with pytest.raises(ValueError, match="n_draws"):
        exclusion_power(1, 1.0, 1.0)
    with pytest.raises(ValueError, match="distance"):
        exclusion_power(5, 1.0, 0.0)
    with pytest.raises(ValueError, match="sd"):
        exclusion_power(5, -1.0, 1.0)
    with pytest.raises(ValueError, match="too small"):
        seeds_for_power(10.0, 1e-4, max_draws=1000)
    assert seed_design({"n": 5, "sd": 10.0, "low": 0, "high": 1}, 1e-4, max_draws=1000).needed is None


def test_seed_design_text_says_when_a_design_is_underpowered():
    from posgeom.geometry import seed_interval
    from posgeom.geometry.intervals import seed_design

    design = seed_design(seed_interval([0.01, 0.03, -0.02, 0.05, 0.0]), 0.01)
    assert not design.powered and design.needed > design.n
    assert design.text().startswith(f"power {design.power:.0%} for the smallest effect that matters, 0.01 (5 seeds, sd ")
    assert design.text().endswith(f"80% needs {design.needed} seeds)")
    strong = seed_design(seed_interval([1.0, 1.1, 0.9, 1.05, 0.95]), 1.0)
    assert strong.powered and "needs" not in strong.text()
    lost = seed_design({"n": 5, "sd": 10.0}, 1e-4, max_draws=1000)
    assert lost.text().endswith("80% is out of reach)")


def test_sd_upper_bound_covers_the_true_sd_at_its_level():
    from scipy import stats

    from posgeom.geometry.intervals import sd_upper_bound

    k, sigma = 5, 2.0
    # closed form: s * sqrt((k - 1) / chi2_{0.05, k-1})
    assert sd_upper_bound(1.0, k) == pytest.approx(np.sqrt((k - 1) / stats.chi2.ppf(0.05, k - 1)))
    draws = np.random.default_rng(3).normal(0.0, sigma, size=(20_000, k))
    covered = np.mean([sd_upper_bound(s, k) >= sigma for s in draws.std(axis=1, ddof=1)])
    assert abs(covered - 0.95) < 4 * np.sqrt(0.95 * 0.05 / len(draws))
    assert sd_upper_bound(0.0, k) == 0.0
    with pytest.raises(ValueError, match="n_draws"):
        sd_upper_bound(1.0, 1)


def test_plan_from_pilot_sizes_the_design_at_the_pilot_bound():
    from posgeom.geometry.intervals import exclusion_power, plan_from_pilot, sd_upper_bound, seeds_for_power

    pilot = [0.001, -0.004, -0.009, -0.009, -0.002]
    plan = plan_from_pilot(pilot, 0.01, min_draws=5, max_draws=200)
    sd = np.std(pilot, ddof=1)
    assert plan.pilot_n == 5 and plan.pilot_sd == pytest.approx(sd)
    assert plan.sd_bound == pytest.approx(sd_upper_bound(sd, 5))
    assert plan.needed == seeds_for_power(plan.sd_bound, 0.01) == plan.seeds
    assert plan.design_power == pytest.approx(exclusion_power(plan.seeds, plan.sd_bound, 0.01)) and plan.design_power >= 0.8
    assert plan.text().startswith(f"a 5-seed pilot (sd {sd:.3g}; its 95% upper bound ")
    # a calm pilot still runs the fewest seeds allowed; a noisy one is capped and says how far short it falls
    calm = plan_from_pilot([0.0, 1e-6, -1e-6], 0.01, min_draws=5)
    assert calm.needed == 2 and calm.seeds == 5
    noisy = plan_from_pilot([0.1, -0.1, 0.05, -0.07, 0.0], 0.01, max_draws=50)
    assert noisy.needed is None and noisy.seeds == 50 and noisy.design_power < 0.8
    with pytest.raises(ValueError, match="at least 2 finite draws"):
        plan_from_pilot([0.1], 0.01)
    with pytest.raises(ValueError, match="1 not finite"):
        plan_from_pilot([0.1, float("nan"), 0.2], 0.01)


def test_a_design_sized_from_a_pilot_reaches_its_power():
    """Simulated end to end: pilot of 5, plan, fresh draws of the planned size; with no true effect the
    interval excludes the smallest effect that matters at least 80 % of the time (sized at the pilot's
    upper bound, it does better)."""
    from posgeom.geometry import seed_interval
    from posgeom.geometry.intervals import plan_from_pilot

    rng = np.random.default_rng(11)
    sigma, effect, hits, reps = 0.01, 0.01, 0, 300
    for _ in range(reps):
        plan = plan_from_pilot(rng.normal(0.0, sigma, 5), effect, min_draws=5, max_draws=1_000)
        iv = seed_interval(rng.normal(0.0, sigma, plan.seeds))
        hits += iv.high < effect and iv.low > -effect
    assert hits / reps >= 0.8
