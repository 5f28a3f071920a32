"""What the chapters report, computed from stored results by :mod:`posgeom.chapters`, against naive
recomputations on small planted results (no training: each Result is built by hand as the registry
stores it)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from posgeom.chapters import learned_tables_fail as exr
from posgeom.chapters import learned_tables as ltr
from posgeom.chapters import monotonicity as mor
from posgeom.registry.store import Result

METHODS = ["learned:reuse_last", "learned:interpolate", "learned:new_rows", "learned:target", "rope", "mds",
           "sinusoidal", "alibi", "none"]
FACTORS = [1.0, 1.5, 2.0]


def result(values, arrays=None, **manifest):
    return Result("x", "quick", "k", values, arrays or {}, {"model": "m", **manifest})


def planted_order(seed=0, per_seed=5):
    rng = np.random.default_rng(seed)
    table = {m: {str(f): [float(x) for x in rng.uniform(0.5, 1.0, per_seed)] for f in FACTORS} for m in METHODS}
    table["alibi"]["2.0"][1] = None  # a seed that produced no value
    beyond = {m: {"2.0": [float(x) for x in rng.uniform(0.4, 1.0, per_seed)]} for m in METHODS}
    both = {m: {"2.0": [float(x) for x in rng.uniform(0.4, 1.0, per_seed)]} for m in METHODS}
    stress = {m: [float(x) for x in rng.uniform(0, 1, per_seed)] for m in METHODS}
    return result({"methods": METHODS, "factors": FACTORS, "L": 16, "seeds": list(range(per_seed)),
                   "accuracy": table, "accuracy_beyond": beyond, "accuracy_both_beyond": both,
                   "stress_at_max": stress, "alibi_reversal_gap": 2e-8})


def test_extrapolation_outcome_against_a_loop():
    order = planted_order()
    o = exr.extrapolation_outcome(order)
    assert o.factors == (1, 1.5, 2) and o.longest == 2 and o.score == "accuracy"
    for m in METHODS:
        for f in FACTORS:
            x = [v for v in order.values["accuracy"][m][str(f)] if v is not None]
            assert o.mean.loc[m, f] == pytest.approx(sum(x) / len(x))
            assert o.std.loc[m, f] == pytest.approx(np.std(x))
    table = exr.score_table(o)
    cell = table.loc[exr.METHOD_NAMES["rope"], "accuracy at 2L"]
    assert cell == f"{o.mean.loc['rope', 2]:.3f} ± {o.std.loc['rope', 2]:.3f}"
    assert "both markers ≥ L−1, at 2L" in table.columns


def test_order_summary_sentences_follow_the_numbers():
    order = planted_order()
    table = order.values["accuracy"]
    for m in METHODS:  # every method solves the task at L; the target table is far ahead at 2L
        table[m]["1.0"] = [1.0] * 5
    table["learned:target"]["2.0"] = [1.0] * 5
    for h in ("reuse_last", "interpolate", "new_rows"):
        table[f"learned:{h}"]["2.0"] = [0.6] * 5
    table["rope"]["2.0"], table["sinusoidal"]["2.0"] = [0.95] * 5, [0.5] * 5
    s = exr.order_summary(order)
    assert s["s6_comment"] == "Every heuristic stays below the table trained at the target length."
    assert s["at_L_comment"].endswith("— at least 95% accuracy.")
    assert s["wallfree_comment"].startswith("RoPE keep at least 90% accuracy, while ") and "sinusoidal" in s["wallfree_comment"]
    sa = exr.stress_accuracy(order)
    assert s["stress_rho"] == pytest.approx(spearmanr(sa.iloc[:, 0], sa.iloc[:, 1]).statistic)
    table["learned:interpolate"]["2.0"] = [1.0] * 5
    assert exr.order_summary(order)["s6_comment"].startswith("Not every heuristic falls short here: interpolate")


def test_mlm_summary_decides_whether_the_model_uses_positions():
    losses = {m: {str(f): [5.0, 5.01, 4.99] for f in FACTORS} for m in METHODS}
    mlm = result({"methods": METHODS, "factors": FACTORS, "L": 32, "seeds": [0, 1, 2], "loss": losses,
                  "loss_beyond": {m: {"2.0": [5.0] * 3} for m in METHODS}, "unigram_loss": 5.1})
    s = exr.mlm_summary(mlm)
    assert s["spread"] == pytest.approx(0.0) and not s["uses_position"] and "has not learned" in s["comment"]
    losses["rope"]["1.0"] = [3.0, 3.01, 2.99]
    assert exr.mlm_summary(mlm)["uses_position"]


def test_tails_summary_follows_the_paired_interval():
    per = {"accuracy_head": [0.9] * 5, "accuracy_tail": [0.7, 0.71, 0.69, 0.72, 0.7], "movement_head": [0.2] * 5,
           "movement_tail": [0.1] * 5, "neighbour_cos_head": [0.5] * 5, "neighbour_cos_tail": [0.4] * 5}
    uni = dict(per, accuracy_tail=[0.9, 0.91, 0.89, 0.9, 0.92])
    tails = result({"conditions": ["skewed", "uniform"], "boundary": 4, "seeds": list(range(5)),
                    "skewed": {**per, "frac_long": 0.1, "n_train": 100}, "uniform": {**uni, "frac_long": 1.0, "n_train": 100}},
                   {"reach": np.array([[100] * 8, [100] * 8]), "movement": np.zeros((2, 5, 8))})
    t = exr.tails_outcome(tails)
    s = exr.tails_summary(t)
    assert s["short_pct"] == pytest.approx(90.0) and s["n"] == 8 and s["half"] == 4
    assert s["tail_comment"].startswith("Tail accuracy drops by 0.196 below the head with skewed lengths")
    assert t.tail_difference().high < 0


def test_ntk_runs_read_typed_and_decide_c11():
    cfg = mor.CONFIGS["quick"].ntk
    raw = {}
    for regime in mor.REGIMES:
        for s in cfg.seeds_of(regime):
            raw[regime, s] = result(
                {"final": {"kernel_change": 0.01 if regime != "rich" else 0.5, "kernel_change_table": 0.0,
                           "table_motion": 0.0, "violation": 0.4, "violation_delta": 0.3 + 0.01 * s},
                 "final_train_loss": 0.1},
                {"step": np.arange(3), "kernel_change": np.zeros(3), "violation": np.array([0.5, 0.4, 0.4]),
                 "violation_delta": np.zeros(3)})
    ntk = mor.ntk_outcome(raw)
    assert ntk["rich", cfg.seeds_of("rich")[0]].kernel_change == 0.5 and ntk["lazy", 0].violation_curve[0] == 0.5
    iv = mor.displacement_violation(ntk)
    assert iv.mean == pytest.approx(np.mean([0.3 + 0.01 * s for s in cfg.seeds]))
    assert mor.power_checks(ntk)[0].interval == iv
    row = mor.c11_row(ntk)
    assert row.claim == "C11" and "violation of ΔP" in row.ours
    assert row.decision.verdict == mor.rules.c11_ntk_order(
        np.full(len(cfg.seeds), 0.1), np.full(len(cfg.seeds), 0.01), np.full(len(cfg.contrast_seeds), 0.5), iv,
        mor.geo.seed_interval(np.full(len(cfg.seeds), 0.4), 0.95)).verdict


def test_band_counts_against_a_loop():
    rng = np.random.default_rng(1)
    freqs, n = rng.uniform(0.001, 0.5, 200), 64
    naive = {"long (> n/8)": 0, "middle": 0, "short (< 8)": 0}
    for f in freqs:
        period = 1 / f
        naive["long (> n/8)" if period > n / 8 else "short (< 8)" if period < 8 else "middle"] += 1
    assert ltr.band_counts(freqs, n) == naive
