"""Bootstrap over sequences (posgeom.geometry.bootstrap) against a loop over the resampled sequences, and its
intervals against a naive percentile loop: every interval holds its estimate and stays within its bounds."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings as hsettings, strategies as st

import posgeom.geometry as geo
from posgeom.corpora import synthetic as syn


def _corpus():
    return syn.make_corpus("drift", n_sequences=400, n_positions=8, vocab_size=12, seed=3)


def _naive_quantile(values, p):
    """The linear-interpolation quantile written out: sorted values, position (m - 1) p."""
    xs = sorted(values)
    h = (len(xs) - 1) * p
    lo = math.floor(h)
    return xs[lo] + (h - lo) * (xs[min(lo + 1, len(xs) - 1)] - xs[lo])


def _naive_interval(t, reps, level, lo=-math.inf, hi=math.inf):
    """The re-centred percentile interval by a loop: on the log / logit scale of the bounds when everything is inside
    them, else on the original scale clipped to them."""
    inside = all(lo < x < hi for x in (t, *reps))
    if math.isfinite(lo) and math.isfinite(hi) and inside:
        f = lambda x: math.log((x - lo) / (hi - x))  # noqa: E731
        g = lambda y: lo + (hi - lo) / (1 + math.exp(-y))  # noqa: E731
    elif math.isfinite(lo) and inside:
        f, g = (lambda x: math.log(x - lo)), (lambda y: lo + math.exp(y))
    elif math.isfinite(hi) and inside:
        f, g = (lambda x: -math.log(hi - x)), (lambda y: hi - math.exp(-y))
    else:
        f = g = lambda x: x  # noqa: E731
    ys = [f(x) for x in reps]
    a = (1 - level) / 2
    q_lo, q_med, q_hi = (_naive_quantile(ys, p) for p in (a, 0.5, 1 - a))
    low = min(max(g(f(t) + q_lo - q_med), lo), hi)
    high = min(max(g(f(t) + q_hi - q_med), lo), hi)
    return min(low, t), max(high, t)


def test_percentile_interval_recentres_the_quantiles_on_the_estimate():
    reps = np.arange(101, dtype=float)  # quantiles at 2.5 %, 50 %, 97.5 %: 2.5, 50, 97.5
    iv = geo.percentile_interval(10.0, reps, level=0.95)
    assert iv.low == pytest.approx(10 - 47.5) and iv.high == pytest.approx(10 + 47.5) and iv.estimate == 10.0
    # the bootstrap's bias (mean of the replicates minus the estimate), with the mean's Monte-Carlo error
    assert iv.bias == pytest.approx(40.0) and iv.bias_se == pytest.approx(np.std(reps, ddof=1) / np.sqrt(101))
    assert iv.bias_found()
    assert iv.text("{:.1f}") == "10.0 [-37.5, 57.5] (bootstrap bias 40.0)" and not (iv.low > 0 or iv.high < 0)
    assert iv.text("{:.1f}", show_bias=False) == "10.0 [-37.5, 57.5]"
    assert geo.percentile_interval(1.0, [0.9, 1.0, 1.1]).low > 0
    with pytest.raises(ValueError, match="at least 2"):
        geo.percentile_interval(1.0, [1.0])
    with pytest.raises(ValueError, match="level"):
        geo.percentile_interval(1.0, [1.0, 2.0], level=1.5)
    with pytest.raises(ValueError, match="finite"):
        geo.percentile_interval(1.0, [1.0, np.nan])


def test_the_issue_cases_hold_their_estimate_and_bounds():
    rng = np.random.default_rng(0)
    # the Toeplitz deviation whose replicates lie below it (basic interval: away from the estimate)
    toep = geo.percentile_interval(0.191, rng.normal(0.172, 0.004, 200), bounds=(0, 1))
    assert toep.low <= 0.191 <= toep.high and toep.bias == pytest.approx(-0.019, abs=2e-3)
    assert toep.text().endswith("(bootstrap bias -0.019)")
    # a stress near 0 with noisy replicates: the interval stays >= 0
    stress = geo.percentile_interval(5.4e-06, np.abs(rng.normal(2e-5, 1e-5, 200)), bounds=(0, None))
    assert 0 <= stress.low <= 5.4e-06 <= stress.high
    # a Fourier match at most 1 with replicates on the bound: clipped there
    match = geo.percentile_interval(0.999, np.minimum(1.0, rng.normal(0.999, 0.001, 200)), bounds=(0, 1))
    assert match.low <= 0.999 <= match.high <= 1.0


def test_bias_hidden_when_within_its_noise_or_rounded_away():
    reps = np.array([0.9, 1.1] * 50)
    iv = geo.percentile_interval(1.0, reps)
    assert iv.bias == pytest.approx(0.0, abs=1e-12) and not iv.bias_found() and "bias" not in iv.text()
    small = geo.Interval(1.0, 0.9, 1.1, bias=1e-5, bias_se=1e-7)
    assert small.bias_found() and small.text("{:.3f}") == "1.000 [0.900, 1.100]"
    assert small.text("{:.1e}").endswith("(bootstrap bias 1.0e-05)")


def test_interval_refuses_one_that_misses_its_estimate():
    with pytest.raises(ValueError, match="hold its estimate"):
        geo.Interval(0.230, 0.218, 0.226)


def test_bounds_are_checked_and_rounding_is_put_on_the_bound():
    with pytest.raises(ValueError, match="outside its bounds"):
        geo.percentile_interval(-0.1, [0.0, 0.1], bounds=(0, 1))
    with pytest.raises(ValueError, match="lo < hi"):
        geo.percentile_interval(0.5, [0.4, 0.6], bounds=(1, 0))
    with pytest.raises(ValueError, match="one pair"):
        geo.percentile_interval(0.5, [0.4, 0.6], bounds=(0, 1, 2))
    with pytest.raises(ValueError, match="a pair"):
        geo.percentile_interval(0.5, [0.4, 0.6], bounds=[(0, 1, 2)])
    with pytest.raises(ValueError, match="one pair"):
        geo.percentile_intervals([0.5, 0.5], np.full((3, 2), 0.5), bounds=[(0, 1)] * 3)
    iv = geo.percentile_interval(1 + 2e-16, [1.0, 0.99, 1 + 1e-16], bounds=(0, 1))
    assert iv.estimate == 1.0 and iv.high == 1.0


@pytest.mark.parametrize("bounds", [None, (0.0, None), (None, 1.0), (0.0, 1.0)])
def test_fast_intervals_against_the_naive_loop(bounds):
    rng = np.random.default_rng(7)
    k, n_boot = 6, 57
    reps = rng.beta(2, 5, size=(n_boot, k))
    t = rng.beta(2, 5, size=k)
    reps[:, 0] = 0.0 if bounds and bounds[0] == 0.0 else reps[:, 0]  # a column on the lower bound: the clip
    got = geo.percentile_intervals(t, reps, 0.9, bounds=bounds)
    lo, hi = (-math.inf, math.inf) if bounds is None else (
        -math.inf if bounds[0] is None else bounds[0], math.inf if bounds[1] is None else bounds[1])
    for j, iv in enumerate(got):
        want = _naive_interval(float(t[j]), reps[:, j].tolist(), 0.9, lo, hi)
        assert (iv.low, iv.high) == pytest.approx(want, rel=1e-9, abs=1e-12)
        assert iv.bias == pytest.approx(reps[:, j].mean() - t[j])


def test_per_statistic_bounds():
    reps = np.column_stack([np.linspace(0.1, 0.9, 11), np.linspace(-2, 2, 11)])
    a, b = geo.percentile_intervals([0.5, 0.0], reps, bounds=[(0, 1), None])
    assert a.low == pytest.approx(_naive_interval(0.5, reps[:, 0].tolist(), 0.95, 0, 1)[0])
    assert b.low == pytest.approx(0.0 - 1.9) and b.high == pytest.approx(1.9)


_finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)
_unit = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


@hsettings(max_examples=200, deadline=None)
@given(t=_finite, reps=st.lists(_finite, min_size=2, max_size=40), level=st.floats(0.5, 0.99))
def test_property_every_interval_holds_its_estimate(t, reps, level):
    iv = geo.percentile_interval(t, reps, level)
    assert iv.low <= iv.estimate == t <= iv.high


@hsettings(max_examples=300, deadline=None)
@given(t=_unit, reps=st.lists(_unit, min_size=2, max_size=40),
       bounds=st.sampled_from([(0.0, 1.0), (0.0, None), (None, 1.0)]))
def test_property_every_interval_respects_its_bounds(t, reps, bounds):
    iv = geo.percentile_interval(t, reps, bounds=bounds)
    lo = -math.inf if bounds[0] is None else bounds[0]
    hi = math.inf if bounds[1] is None else bounds[1]
    assert lo <= iv.low <= iv.estimate == t <= iv.high <= hi


_FORMATS = ("{:.3f}", "{:.4f}", "{:+.3f}", "{:.1e}", "{:.0%}", "{:.1%}", "{:.4g}")


def _numbers_of_text(text, fmt):
    """x, lo, hi of an ``x [lo, hi]...`` text (percent signs stripped)."""
    head, rest = text.split(" [", 1)
    lo, hi = rest.split("]", 1)[0].split(", ")
    return [float(s.rstrip("%")) for s in (head, lo, hi)]


@hsettings(max_examples=300, deadline=None)
@given(t=_unit, reps=st.lists(_unit, min_size=2, max_size=30), fmt=st.sampled_from(_FORMATS),
       with_bounds=st.booleans())
def test_property_every_interval_text_holds_its_estimate(t, reps, fmt, with_bounds):
    """Every "x [lo, hi]" text the library writes reads lo <= x <= hi (rounding is monotone)."""
    from posgeom.geometry import interval_text

    iv = geo.percentile_interval(t, reps, bounds=(0, 1) if with_bounds else None)
    for text in (iv.text(fmt), interval_text(iv.as_dict(), fmt)):
        x, lo, hi = _numbers_of_text(text, fmt)
        assert lo <= x <= hi
    seed = geo.seed_interval([t, *reps], allow_few=True)
    x, lo, hi = _numbers_of_text(seed.text(fmt), fmt)
    assert lo <= x <= hi


def test_fold_bootstrap_matches_counting_the_resampled_sequences():
    corpus = _corpus()
    seqs = corpus.sequences()
    n, v, n_folds, seed = corpus.n_positions, corpus.vocab_size, 8, 5
    folds = geo.fold_counts(seqs, n, v, n_folds=n_folds, seed=seed)
    members = np.array_split(np.random.default_rng(seed).permutation(len(seqs)), n_folds)
    positions = np.arange(n)
    got = list(geo.fold_bootstrap(folds, positions, 6, seed=11))
    rng = np.random.default_rng(11)
    expected = []
    for _ in range(6):
        pick = np.bincount(rng.integers(0, n_folds, size=n_folds), minlength=n_folds)
        # the loop: every sequence of fold f counted pick[f] times
        resampled = [seqs[i] for f, w in enumerate(pick) for _ in range(w) for i in members[f]]
        expected.append(geo.hellinger_matrix(geo.positional_counts(resampled, n, v)))
    assert len(got) == 6
    for a, b in zip(got, expected):
        assert np.allclose(a, b, atol=1e-12)


def test_bootstrap_intervals_point_and_replicates():
    corpus = _corpus()
    folds = geo.fold_counts(corpus.sequences(), corpus.n_positions, corpus.vocab_size, n_folds=8, seed=0)
    D = geo.hellinger_matrix(corpus.counts())

    def stats(M):
        return np.array([M.mean(), M.max()])

    intervals, reps = geo.bootstrap_intervals(D, folds, np.arange(corpus.n_positions), stats, n_boot=30, seed=1)
    assert reps.shape == (30, 2) and len(intervals) == 2
    assert intervals[0].estimate == pytest.approx(D.mean()) and intervals[1].estimate == pytest.approx(D.max())
    assert all(iv.low <= iv.estimate <= iv.high for iv in intervals)
    with pytest.raises(ValueError, match="at least 2 folds"):
        list(geo.fold_bootstrap(folds[:1], np.arange(3), 2))


def test_difference_interval_is_the_interval_of_the_column_differences():
    reps = np.column_stack([np.arange(101, dtype=float), np.arange(101, dtype=float) * 0.5])
    ivs = [geo.percentile_interval(10.0, reps[:, 0]), geo.percentile_interval(4.0, reps[:, 1])]
    got = geo.difference_interval(ivs, reps, 0, 1)
    # by hand: t = 6, replicates of the difference 0.5 k: quantiles 1.25, 25 and 48.75
    assert got.estimate == 6.0 and got.low == pytest.approx(6 - 23.75) and got.high == pytest.approx(6 + 23.75)
    bounded = geo.difference_interval(ivs, reps, 0, 1, bounds=(-60, 60))
    assert -60 <= bounded.low <= 6.0 <= bounded.high <= 60
    with pytest.raises(ValueError, match="one column per interval"):
        geo.difference_interval(ivs, reps[:, :1], 0, 1)


def test_fold_members_keep_each_group_in_one_fold():
    rng = np.random.default_rng(2)
    groups = rng.integers(0, 40, size=300)
    members = geo.fold_members(300, 8, seed=4, groups=groups)
    assert len(members) == 8 and all(m.size for m in members)
    assert np.array_equal(np.sort(np.concatenate(members)), np.arange(300))
    fold_of = np.empty(300, dtype=int)
    for f, m in enumerate(members):
        fold_of[m] = f
    for g in np.unique(groups):
        assert np.unique(fold_of[groups == g]).size == 1
    sizes = [m.size for m in members]
    assert max(sizes) - min(sizes) < 300 / 8  # cut near equal shares of sequences
    # without groups: the permutation cut into equal parts (unchanged from before groups existed)
    plain = geo.fold_members(300, 8, seed=4)
    expected = np.array_split(np.random.default_rng(4).permutation(300), 8)
    assert all(np.array_equal(a, b) for a, b in zip(plain, expected))
    with pytest.raises(ValueError, match="too few"):
        geo.fold_members(10, 8, groups=np.arange(10) % 3)
    with pytest.raises(ValueError, match="one label per sequence"):
        geo.fold_members(10, 2, groups=np.arange(9))


def test_grouped_fold_bootstrap_matches_a_loop_over_resampled_groups():
    corpus = _corpus()
    seqs = corpus.sequences()
    n, v, n_folds, seed = corpus.n_positions, corpus.vocab_size, 8, 5
    groups = np.arange(len(seqs)) // 7  # 58 groups of 7 (the last of 1)
    folds = geo.fold_counts(seqs, n, v, n_folds=n_folds, seed=seed, groups=groups)
    # the naive loop: deal the groups by hand, then count every sequence of every drawn fold
    uniq = np.unique(groups)
    order = np.random.default_rng(seed).permutation(uniq.size)
    running = np.cumsum([np.sum(groups == uniq[g]) for g in order])
    members, start = [], 0
    for k in range(1, n_folds + 1):
        stop = uniq.size if k == n_folds else int(np.searchsorted(running, k * len(seqs) / n_folds)) + 1
        members.append([i for g in order[start:stop] for i in np.flatnonzero(groups == uniq[g])])
        start = stop
    for f, m in zip(folds, members):
        assert np.array_equal(_dense(f.counts), _dense(geo.positional_counts([seqs[i] for i in m], n, v).counts))
    got = list(geo.fold_bootstrap(folds, np.arange(n), 5, seed=11))
    rng = np.random.default_rng(11)
    for D in got:
        pick = np.bincount(rng.integers(0, n_folds, size=n_folds), minlength=n_folds)
        resampled = [seqs[i] for f, w in enumerate(pick) for _ in range(w) for i in members[f]]
        assert np.allclose(D, geo.hellinger_matrix(geo.positional_counts(resampled, n, v)), atol=1e-12)
    with pytest.raises(ValueError, match="groups are too few"):
        geo.fold_counts(seqs, n, v, n_folds=8, groups=np.arange(len(seqs)) % 10)


def _dense(c):
    return c.toarray() if hasattr(c, "toarray") else np.asarray(c)


@hsettings(max_examples=150, deadline=None)
@given(labels=st.lists(st.integers(0, 30), min_size=4, max_size=120), n_folds=st.integers(1, 8), seed=st.integers(0, 9))
def test_property_fold_members_deal_whole_groups(labels, n_folds, seed):
    groups = np.array(labels)
    if np.unique(groups).size < n_folds:
        with pytest.raises(ValueError, match="too few"):
            geo.fold_members(groups.size, n_folds, seed=seed, groups=groups)
        return
    members = geo.fold_members(groups.size, n_folds, seed=seed, groups=groups)
    assert len(members) == n_folds and all(m.size for m in members)
    assert np.array_equal(np.sort(np.concatenate(members)), np.arange(groups.size))
    for m in members:  # a group met in one fold is wholly there
        for g in np.unique(groups[m]):
            assert np.array_equal(np.flatnonzero(groups == g), np.intersect1d(m, np.flatnonzero(groups == g)))
