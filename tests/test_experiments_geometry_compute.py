"""The compute functions of the geometry chapters (zoo, corpus geometry, optimal encoding, sinusoids as MDS,
inside BERT, layer peaks), tested directly — without the registry — against closed forms and loops."""

from __future__ import annotations

import numpy as np
import pytest

import posgeom.geometry as geo
import posgeom.geometry.peaks as peaks
from posgeom import encodings as enc
from posgeom.experiments import corpus_geometry as cg
from posgeom.experiments import inside_bert as ib
from posgeom.experiments import optimal_encoding as oe
from posgeom.experiments import sinusoids_as_mds as sm
from posgeom.corpora import synthetic as syn
from posgeom.corpora.synthetic import sampling_noise
from posgeom.corpora.synthetic.studies import algorithm_steps
from posgeom.experiments import zoo
from posgeom.experiments.settings import EncoderShape, NoiseOptions, as_params, find, params_of, records

SMALL = cg.SyntheticOptions(n_sequences=1_500, n_positions=10, vocab_size=16)


def test_settings_keep_the_registry_parameters_of_the_dictionaries():
    # the paper scale is quick plus changes; the registry records the dictionaries the settings replaced
    assert cg.CONFIGS.changes() == {
        "synthetic": (cg.CONFIGS.quick.synthetic, cg.CONFIGS.paper.synthetic), "noise": (NoiseOptions(), NoiseOptions(n_rep=50)),
        "noise_sizes": ((250, 1_000, 4_000, 16_000, 64_000), (250, 1_000, 4_000, 16_000, 64_000, 256_000)),
    }
    q = cg.CONFIGS["quick"]
    assert q.synthetic.n_sequences == 10_000
    assert as_params(q.synthetic) == {"n_sequences": 10_000, "n_positions": 50, "vocab_size": 100}
    assert params_of({"a": 1}, noise=q.noise, seed=0) == {"a": 1, "noise": {"method": "bootstrap", "n_rep": 20}, "seed": 0}
    assert as_params(oe.CONFIGS["paper"].smacof) == {"max_iter": 20000, "eps": 1e-12}
    assert set(sm.CONFIGS.changes()) == {"n_vectors", "n_pairs", "grid", "sweep", "intervals"}
    assert zoo.CONFIGS["paper"].n == 512 and ib.CONFIGS["paper"].batch_size == 128
    with pytest.raises(TypeError):
        q["synthetic"]  # typed settings are read by attribute


def test_family_geometry_summary_matches_its_arrays():
    g = sampling_noise.family_geometry("drift", **as_params(SMALL), **as_params(NoiseOptions(n_rep=4)), seed=0)
    a, s = g.arrays, g.summary
    d, dp, f = (geo.offdiag(a[k]) for k in ("D", "D_pop", "F"))
    assert s["rms_D"] == pytest.approx(np.sqrt(np.mean(d**2)))
    assert s["excess_sq"] == pytest.approx(np.mean(d**2) - np.mean(dp**2))
    assert s["frac_above_2F"] == pytest.approx(np.mean(d > 2 * f))
    assert np.allclose(a["D"], geo.hellinger_matrix(a["mu"]))


def test_noise_scaling_follows_the_delta_method():
    ns = sampling_noise.noise_scaling([400, 6_400], n_positions=6, vocab_size=8, n_rep=4, seed=1)
    assert ns.sizes == [400, 6_400] and len(ns.stationary_mean_sq) == 2
    # 16 times the sequences: the squared noise shrinks at least 8 times; with many counts per token it is
    # (v - 1)/4 * 2/N, the delta method
    assert ns.stationary_mean_sq[0] / ns.stationary_mean_sq[1] > 8
    assert ns.stationary_mean_sq[1] == pytest.approx(ns.delta_method_mean_sq[1], rel=0.25)


def test_sensitivity_row_is_a_typed_record():
    marg = geo.positional_marginals(syn.family_corpus("drift", seed=0, **as_params(SMALL)).counts())
    variant = dict(name="baseline", special="model", n_positions=10, min_count=1, alpha=0.0)
    row = enc.sensitivity_row(variant, marg, **as_params(EncoderShape(d_model=16, n_heads=2)),
                              **as_params(NoiseOptions(n_rep=3)), seed=0)
    [rec] = records(cg.SensitivityRow, [row])
    assert find([rec], name="baseline") is rec
    sf = {k: rec.stress[k]["scale_free"] for k in ("sinusoidal", "rope", "alibi")}
    assert rec.best_scale_free == min(sf, key=sf.get) and rec.rms_F is not None
    smoothed = enc.sensitivity_row(dict(variant, alpha=1.0), marg, d_model=16, n_heads=2, method="bootstrap",
                                   n_rep=3, seed=0)
    assert smoothed["frac_above_2F"] is None


def test_comparison_full_rank_mds_is_exact_and_intervals_hold_the_point():
    corpus = syn.family_corpus("drift", seed=0, **as_params(SMALL))
    marg = geo.positional_marginals(corpus.counts())
    D = geo.hellinger_matrix(marg)
    shape = EncoderShape(d_model=16, n_heads=2)
    point = enc.comparison_for(D, marg.positions, **as_params(shape), seed=0)
    assert point["mds"]["scale_free"] < 1e-12  # the chord distance is Euclidean: rank(B) <= n - 1 < d
    assert point["none"]["scale_free"] == pytest.approx(1.0)
    values, reps = enc.comparison_intervals(corpus.sequences(), corpus.n_positions, corpus.vocab_size,
                                            **as_params(shape), n_boot=12, n_folds=8, seed=0,
                                            differences=oe.INTERVAL_DIFFERENCES)
    assert reps.shape[0] == values["n_used"] <= 12
    for e in ("mds_rank3", "sinusoidal", "alibi"):
        assert values["statistics"][e]["scale_free"].estimate == pytest.approx(point[e]["scale_free"])
    diff = values["differences"]["sinusoidal"]["rope"]["scale_free"]
    assert diff.estimate == pytest.approx(point["sinusoidal"]["scale_free"] - point["rope"]["scale_free"])
    assert diff.low <= diff.high
    # keyed by the identifiers of the replicates' columns: encodings of ENCODINGS_COMPARED, then normalisations
    assert reps.shape[1] == sum(len(by_norm) for by_norm in values["statistics"].values())


def test_smacof_curve_and_one_hot_layouts():
    D = geo.one_hot_distances(3)
    values, arrays = geo.one_hot_layouts()
    assert values["mds_stress"] == pytest.approx(1 / 6) and values["rescaled_stress"] == pytest.approx(1 / 9)
    curve = geo.smacof_curve(geo.hellinger_matrix(syn.family_corpus("drift", seed=0, **as_params(SMALL)).counts()),
                             (1, 2, 99), max_iter=200)
    assert curve["ranks"] == [1, 2]  # rank 99 >= n is skipped
    assert all(g >= -1e-12 for g in curve["gain"])
    assert geo.smacof_curve(D, (1,))["smacof_paper"][0] == pytest.approx(1 / 9, abs=1e-6)


def test_algorithm_steps_on_a_small_corpus():
    corpus = syn.family_corpus("drift", seed=0, **as_params(SMALL))
    values, arrays = algorithm_steps(corpus, **as_params(oe.Walkthrough(k=2, lift_d=12)), seed=0)
    assert values["B_vs_SS_max_error"] < 1e-12 and values["lift_max_error"] < 1e-12
    assert arrays["P_k"].shape == (10, 2)


def test_shift_summary_of_a_circulant_and_the_mixture():
    n = 12
    delta = np.arange(n)
    # g^2 = sum_f a_f (2 - 2 cos(2 pi f delta / n)) with a = (1, 0.5): B holds the two lowest Fourier pairs
    g = np.sqrt(sum(a * (2 - 2 * np.cos(2 * np.pi * f * delta / n)) for f, a in ((1, 1.0), (2, 0.5))))
    D = np.array([[g[(j - i) % n] for j in range(n)] for i in range(n)])
    values, _ = enc.shift_summary(D, n_vectors=4, n_pairs=2, grid=400, d_model=12, n_heads=2)
    assert values["toeplitz_deviation"] < 1e-12 and values["circulant_deviation"] < 1e-12
    assert values["fourier_match"] == pytest.approx(1.0)
    mk = syn.mixed_marginals(0.0, 10, 0)
    assert np.allclose(mk.sum(1), 1) and np.allclose(syn.mixed_marginals(1.0, 10, 0).sum(1), 1)


def test_zoo_geometry_on_a_random_table():
    table = np.random.default_rng(0).normal(size=(40, 16))
    shape = dict(d_model=16, n_heads=4, n_layers=2, max_positions=40)
    values, arrays = enc.zoo_geometry(table, shape, 32, 10000.0, 8)
    assert values["kernel"]["identity_max_error"] < 1e-12
    assert values["alibi"]["eigen_fraction_1"] == pytest.approx(1.0)
    assert np.allclose(arrays["D__learned"], enc.table_distances(table[:32]))
    with pytest.raises(ValueError, match="exceeds"):
        enc.zoo_geometry(table, shape, 64, 10000.0, 8)


def test_projected_stress_pools_the_heads_and_peaks_count_from_one():
    rng = np.random.default_rng(0)
    n, d, H = 7, 8, 2
    D = geo.euclidean_distances(rng.normal(size=(n, 3)))
    X = [rng.normal(size=(n, d)) for _ in range(2)]
    qk = [(rng.normal(size=(d, d)), np.zeros(d), rng.normal(size=(d, d)), np.zeros(d)) for _ in range(2)]
    per_head, pooled, clipped = peaks.projected_stress(D, X, qk, H)
    for li in range(2):
        G = geo.head_logits(X[li], *qk[li], n_heads=H)
        sq = sum(geo.kernel_distances(G[h]) ** 2 for h in range(H))
        assert pooled[li, 0] == pytest.approx(geo.stress(D, np.sqrt(sq), "scale_free", as_distances=True))
        assert per_head[li, 1, 1] == pytest.approx(geo.stress(D, geo.kernel_distances(G[1]), "paper", as_distances=True))
    curve = np.array([[0.1, 1.0], [0.3, 0.2], [0.2, 0.1]])  # (n_layers, 2), last axis NORMALIZATIONS
    assert peaks.peak_layers({"x": curve}) == {"x": {"scale_free": 2, "paper": 1}}


def test_local_peak_test_point_curve_is_the_pooled_mean():
    rng = np.random.default_rng(1)
    G, n_layers, L, d, H = 4, 5, 6, 8, 2
    sums = rng.normal(size=(G, n_layers + 1, L, d))
    reach = np.full((G, L), 5.0)
    D = geo.euclidean_distances(rng.normal(size=(L, 2)))
    qk = [(rng.normal(size=(d, d)), np.zeros(d), rng.normal(size=(d, d)), np.zeros(d)) for _ in range(n_layers)]
    values, arrays = peaks.local_peak_test(sums, reach, D, np.arange(L), qk, H, layer=4, min_reach=1, n_boot=3, seed=0)
    means = sums.sum(0) / reach.sum(0)[None, :, None]
    prop = []
    for li in range(n_layers):
        Gl = geo.head_logits(means[li], *qk[li], n_heads=H)
        sq = sum(geo.kernel_distances(Gl[h]) ** 2 for h in range(H))
        prop.append(geo.stress(D, np.sqrt(sq), "scale_free", as_distances=True))
    resid = [geo.stress(D, geo.euclidean_distances(m), "scale_free", as_distances=True) for m in means]
    assert np.allclose(values["propagated"]["point"], prop) and np.allclose(values["residual"]["point"], resid)
    assert arrays["propagated_replicates"].shape == (3, n_layers)


def test_shift_intervals_hold_the_point_statistics():
    corpus = syn.family_corpus("markov", seed=0, **as_params(SMALL))
    D = geo.hellinger_matrix(corpus.counts())
    values, reps = geo.shift_intervals(corpus.sequences(), corpus.n_positions, corpus.vocab_size, 2,
                                       n_boot=10, n_folds=8, seed=0)
    point = geo.shift_statistics(D, 2)
    assert [values[k]["estimate"] for k in geo.SHIFT_STATISTICS] == pytest.approx(list(point))
    assert reps.shape == (values["n_used"], 3) and values["n_kept"] == corpus.n_positions
