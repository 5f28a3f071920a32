"""What the chapters report, computed from stored results by :mod:`posgeom.chapters`, against naive
recomputations on small planted results (no training: each Result is built by hand as the registry
stores it)."""

from __future__ import annotations

import numpy as np
import pytest

from posgeom import verdicts
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
    for both, stored in ((False, "accuracy_beyond"), (True, "accuracy_both_beyond")):
        mean, sd = o.beyond(both=both)
        for m in METHODS:
            assert mean[m] == pytest.approx(np.mean(order.values[stored][m]["2.0"]))
            assert sd[m] == pytest.approx(np.std(order.values[stored][m]["2.0"]))


def test_the_s6_order_row_reads_the_heuristics_and_the_stress_table_its_methods():
    order = planted_order()
    table = order.values["accuracy"]
    table["learned:target"]["2.0"] = [1.0] * 5
    for h in ("reuse_last", "interpolate", "new_rows"):
        table[f"learned:{h}"]["2.0"] = [0.6] * 5
    o = exr.extrapolation_outcome(order)
    assert o.heuristics() == pytest.approx({"reuse_last": 0.6, "interpolate": 0.6, "new_rows": 0.6})
    row = exr._s6_order_row(order, "quick")
    assert row.claim == "S6" and "reuse 0.600" in row.ours and "trained at 2L 1.000" in row.ours
    assert row.decision == verdicts.s6_heuristics_order(o.heuristics(), 1.0)
    sa = exr.stress_accuracy(order)
    for m in METHODS:
        assert sa.loc[exr.METHOD_NAMES[m], "stress at 2L (scale_free)"] == pytest.approx(
            np.mean(order.values["stress_at_max"][m]))
        assert sa.loc[exr.METHOD_NAMES[m], "accuracy at 2L"] == pytest.approx(o.at(m, 2.0), nan_ok=True)


def test_the_s6_mlm_row_asks_whether_the_model_uses_positions():
    losses = {m: {str(f): [5.0, 5.01, 4.99] for f in FACTORS} for m in METHODS}
    mlm = result({"methods": METHODS, "factors": FACTORS, "L": 32, "seeds": [0, 1, 2], "loss": losses,
                  "loss_beyond": {m: {"2.0": [5.0] * 3} for m in METHODS}, "unigram_loss": 5.1})
    spread, seed_sd = exr.extrapolation_outcome(mlm).spread_at_L()
    assert spread == pytest.approx(0.0) and seed_sd == pytest.approx(np.std([5.0, 5.01, 4.99]))
    assert exr._s6_mlm_row(mlm, planted_order(), "quick").verdict == "inconclusive here"
    losses["rope"]["1.0"] = [3.0, 3.01, 2.99]
    assert exr.extrapolation_outcome(mlm).spread_at_L()[0] == pytest.approx(2.0)
    assert exr._s6_mlm_row(mlm, planted_order(), "quick").verdict != "inconclusive here"


def test_the_s4_row_reads_the_paired_tail_difference():
    per = {"accuracy_head": [0.9] * 5, "accuracy_tail": [0.7, 0.71, 0.69, 0.72, 0.7], "movement_head": [0.2] * 5,
           "movement_tail": [0.1] * 5, "neighbour_cos_head": [0.5] * 5, "neighbour_cos_tail": [0.4] * 5}
    uni = dict(per, accuracy_tail=[0.9, 0.91, 0.89, 0.9, 0.92])
    tails = result({"conditions": ["skewed", "uniform"], "boundary": 4, "seeds": list(range(5)),
                    "skewed": {**per, "frac_long": 0.1, "n_train": 100}, "uniform": {**uni, "frac_long": 1.0, "n_train": 100}},
                   {"reach": np.array([[100] * 8, [100] * 8]), "movement": np.zeros((2, 5, 8)),
                    "tables_final": np.zeros((2, 5, 8, 4)), "tables_initial": np.zeros((2, 5, 8, 4))})
    t = exr.tails_outcome(tails)
    assert t.n_positions == 8 and t.boundary == 4 and t.by_condition["skewed"].frac_long == 0.1
    assert t.by_condition["uniform"].accuracy_tail == tuple(uni["accuracy_tail"])
    diff = t.tail_difference()
    assert diff.high < 0 and diff.mean == pytest.approx(np.mean(per["accuracy_tail"]) - np.mean(uni["accuracy_tail"]))
    row = exr._s4_row(tails, "quick")
    assert row.claim == "S4" and row.decision == verdicts.s4_undertrained_tail(diff)
    skewed, uniform = (f"{np.mean(x):.3f} ± {np.std(x):.3f}" for x in (per["accuracy_tail"], uni["accuracy_tail"]))
    assert row.ours.startswith(f"tail accuracy {skewed} (90% short) vs {uniform} (uniform lengths); difference ")


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
