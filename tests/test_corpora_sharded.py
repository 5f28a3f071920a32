"""Sharded counting (posgeom counts) and the counts file: exact, resilient, cached, verified."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import signal
import threading
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from posgeom.cli import main
from posgeom.corpora import (
    CorpusOptions, ShardError, corpus_counts, corpus_report, count_corpus, load_counts, load_statistics, load_tokenizer,
    resolve_shards, save_counts, tokenize_texts,
)
from posgeom.diagnose import stress_report

N = 256  # positions: enough for most IMDB reviews to be cut, small enough to keep the tests quick
PER_SHARD = 150
N_SHARDS = 6


@pytest.fixture(scope="module")
def imdb(tmp_path_factory, shared_data_dir):
    """A sharded copy of IMDB (the first reviews of train and of test), and the same reviews in one file."""
    root = tmp_path_factory.mktemp("imdb")
    half = N_SHARDS * PER_SHARD // 2
    table = pa.concat_tables(
        [pq.read_table(shared_data_dir / "imdb" / f"{split}.parquet").slice(0, half) for split in ("train", "test")]
    )
    (root / "shards").mkdir()
    for k in range(N_SHARDS):
        pq.write_table(table.slice(k * PER_SHARD, PER_SHARD), root / "shards" / f"part-{k:02d}.parquet")
    pq.write_table(table, root / "all.parquet")
    return root


@pytest.fixture(scope="module")
def reference(imdb, tmp_path_factory):
    """The single-corpus path: the whole file tokenised and counted at once (no shards, no Dask)."""
    return corpus_counts(CorpusOptions(imdb / "all.parquet", n_positions=N, br_tags="space"), cache=False)


def same_counts(stats, ref):
    assert stats.counts == ref.counts  # every c_i(w), N_i, n, v and the number of sequences
    assert stats.n_truncated == ref.n_truncated
    np.testing.assert_array_equal(stats.full_lengths, np.sort(ref.full_lengths))


# --------------------------------------------------------------------------- reading shards


def test_every_format_and_compression_counts_the_same_texts(tmp_path):
    texts = [f"shard text {i}: " + " ".join(["plot", "actor", "<br />", "scene"][: i % 4 + 1]) for i in range(40)]
    want = tokenize_texts(texts, load_tokenizer(), 16).counts()
    pq.write_table(pa.table({"text": texts[:10]}), tmp_path / "a.parquet")
    with gzip.open(tmp_path / "b.jsonl.gz", "wt") as fh:
        fh.writelines(json.dumps({"text": t, "label": 1}) + "\n" for t in texts[10:20])
    with lzma.open(tmp_path / "c.csv.xz", "wt") as fh:
        fh.write("body,id\n" + "".join(f'"{t}",{i}\n' for i, t in enumerate(texts[20:30])))
    with bz2.open(tmp_path / "d.txt.bz2", "wt") as fh:
        fh.write("\r\n".join(texts[30:]) + "\r\n")
    (tmp_path / "notes.md").write_text("not a shard")
    names = [os.path.basename(s) for s in resolve_shards(tmp_path)]
    assert names == ["a.parquet", "b.jsonl.gz", "c.csv.xz", "d.txt.bz2"]
    with pytest.raises(ShardError, match=r"c\.csv\.xz.*no text column.*'body', 'id'"):
        count_corpus(str(tmp_path / "*"), 16, cache=False)
    got = count_corpus([str(tmp_path / f) for f in ("a.parquet", "b.jsonl.gz", "d.txt.bz2")], 16, cache=False)
    got_csv = count_corpus(str(tmp_path / "c.csv.xz"), 16, text_column="body", cache=False)
    assert got.counts + got_csv.counts == want
    assert [r["n_rows"] for r in got.info["shards"]] == [10, 10, 10]


def test_remote_shards_by_fsspec_url(tmp_path):
    """A URL glob reads through fsspec (here its in-memory file system, standing in for s3:// or gs://)."""
    import fsspec

    texts = ["first remote text", "second one", "a third"]
    fs = fsspec.filesystem("memory")
    pq.write_table(pa.table({"text": texts[:2]}), tmp_path / "a.parquet")
    fs.pipe("/posgeom-test-corpus/a.parquet", (tmp_path / "a.parquet").read_bytes())
    fs.pipe("/posgeom-test-corpus/b.txt.gz", gzip.compress((texts[2] + "\n").encode()))
    try:
        got = count_corpus("memory://posgeom-test-corpus/*", 8, cache=False)
    finally:
        fs.rm("/posgeom-test-corpus", recursive=True)
    assert [s["shard"] for s in got.info["shards"]] == [
        "memory:///posgeom-test-corpus/a.parquet", "memory:///posgeom-test-corpus/b.txt.gz",
    ]
    assert got.counts == tokenize_texts(texts, load_tokenizer(), 8).counts()


def test_corpus_names_that_match_nothing_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="no shard matches"):
        resolve_shards(str(tmp_path / "*.parquet"))
    with pytest.raises(ValueError, match="neither an existing file"):
        resolve_shards("no-such-file.parquet")
    with pytest.raises(ValueError, match="could not be listed on the Hugging Face hub.*offline"):
        resolve_shards("stanfordnlp/imdb")  # the tests run offline


def test_hub_dataset_is_read_shard_by_shard_per_split(monkeypatch):
    import huggingface_hub

    files = [
        "README.md", "plain_text/train-00000-of-00002.parquet", "plain_text/train-00001-of-00002.parquet",
        "plain_text/test-00000-of-00001.parquet", "plain_text/unsupervised-00000-of-00001.parquet",
    ]
    monkeypatch.setattr(huggingface_hub.HfApi, "list_repo_files", lambda self, repo, repo_type=None: files)
    assert resolve_shards("stanfordnlp/imdb") == [
        "hf://datasets/stanfordnlp/imdb/plain_text/train-00000-of-00002.parquet",
        "hf://datasets/stanfordnlp/imdb/plain_text/train-00001-of-00002.parquet",
    ]
    assert len(resolve_shards("stanfordnlp/imdb", "all")) == 4
    with pytest.raises(ValueError, match="no data file for split 'validation'.*test, train, unsupervised"):
        resolve_shards("stanfordnlp/imdb", "validation")


# --------------------------------------------------------------------------- exactness


def test_single_process_counts_equal_the_whole_corpus_counts(imdb, reference):
    got = count_corpus(str(imdb / "shards" / "*.parquet"), N, br_tags="space", cache=False)
    same_counts(got, reference)
    assert got.info["engine"] == {"kind": "single-process"}
    assert got.info["n_tokens"] == int(reference.counts.reach.sum())
    assert len({r["sha256"] for r in got.info["shards"]}) == N_SHARDS


def test_posgeom_counts_on_two_dask_workers_equals_the_single_process_path(imdb, reference, tmp_path, capsys):
    glob = str(imdb / "shards" / "*.parquet")
    common = ["counts", "--corpus", glob, "--positions", str(N), "--br-tags", "space", "--no-cache", "--json"]
    assert main(common + ["--out", str(tmp_path / "one.npz")]) == 0
    assert main(common + ["--workers", "2", "--out", str(tmp_path / "two.npz")]) == 0
    summaries = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert summaries[1]["engine"]["kind"] == "dask" and summaries[1]["engine"]["workers"] == 2
    one, two = load_counts(tmp_path / "one.npz"), load_counts(tmp_path / "two.npz")
    same_counts(one, reference)
    same_counts(two, reference)
    assert [r["sha256"] for r in one.info["shards"]] == [r["sha256"] for r in two.info["shards"]]


def test_a_worker_killed_mid_run_costs_a_retry_not_a_count(imdb, reference):
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        pids = client.run(os.getpid)  # worker address -> process id
        killed = {}

        def kill_a_busy_worker():
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not killed:
                busy = [addr for addr, keys in client.processing().items() if keys and addr in pids]
                if busy:
                    os.kill(pids[busy[0]], signal.SIGKILL)  # a real kill, in the middle of a shard
                    killed["pid"] = pids[busy[0]]
                    killed["at"] = time.monotonic()
                time.sleep(0.005)

        killer = threading.Thread(target=kill_a_busy_worker)
        killer.start()
        got = count_corpus(str(imdb / "shards" / "*.parquet"), N, br_tags="space", client=client, cache=False)
        finished = time.monotonic()
        killer.join()
        # a bad shard met on a worker stops the run with its name here, or is skipped and listed
        shards = sorted(str(p) for p in (imdb / "shards").glob("*.parquet"))[:2] + [str(imdb / "lost.parquet")]
        with pytest.raises(ShardError, match="lost.parquet.*cannot be read"):
            count_corpus(shards, N, client=client, cache=False)
        skipped = count_corpus(shards, N, client=client, cache=False, on_bad_shard="skip")
        assert [s["shard"] for s in skipped.info["shards_skipped"]] == [str(imdb / "lost.parquet")]
        assert skipped.info["n_sequences"] == 2 * PER_SHARD
    assert killed and killed["at"] < finished, "the worker was not killed during the run"
    with pytest.raises(ProcessLookupError):
        os.kill(killed["pid"], 0)
    same_counts(got, reference)


# --------------------------------------------------------------------------- bad shards, cache


def test_a_damaged_shard_stops_the_run_naming_it_or_is_skipped_and_listed(imdb, tmp_path, capsys):
    good = sorted((imdb / "shards").glob("*.parquet"))[:3]
    folder = tmp_path / "corpus"
    folder.mkdir()
    for f in good:
        (folder / f.name).write_bytes(f.read_bytes())
    damaged = folder / "part-01x.parquet"
    damaged.write_bytes(good[1].read_bytes()[:-300])  # cut short: the footer is gone
    glob = str(folder / "*.parquet")
    with pytest.raises(ShardError, match="part-01x.parquet.*cannot be parsed"):
        count_corpus(glob, N, br_tags="space", cache=False)
    args = ["counts", "--corpus", glob, "--positions", str(N), "--br-tags", "space", "--no-cache"]
    assert main(args + ["--out", str(tmp_path / "c.npz")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "part-01x.parquet" in err and "Traceback" not in err
    assert not (tmp_path / "c.npz").exists()  # nothing written from a stopped run
    assert main(args + ["--on-bad-shard", "skip", "--out", str(tmp_path / "c.npz")]) == 0
    assert "skipped" in capsys.readouterr().out
    got = load_counts(tmp_path / "c.npz")
    assert [s["shard"] for s in got.info["shards_skipped"]] == [str(damaged)]
    assert "cannot be parsed" in got.info["shards_skipped"][0]["error"]
    assert got.counts == count_corpus([str(f) for f in good], N, br_tags="space", cache=False).counts


def test_new_shards_are_counted_alone_and_an_interrupted_run_resumes(imdb, reference, tmp_path):
    shards = sorted(str(p) for p in (imdb / "shards").glob("*.parquet"))
    cache = tmp_path / "cache"
    missing = str(tmp_path / "part-02-lost.parquet")
    # an interrupted run: shard 3 of the list cannot be read, the first two are done and cached
    with pytest.raises(ShardError, match="part-02-lost.parquet.*cannot be read"):
        count_corpus(shards[:2] + [missing] + shards[2:4], N, br_tags="space", cache_dir=cache)
    run = count_corpus(shards[:4], N, br_tags="space", cache_dir=cache)
    assert [r["cached"] for r in run.info["shards"]] == [True, True, False, False]
    # more shards: only the new ones are counted; a damaged cache entry is recomputed, not trusted
    entry = min(cache.glob("shard-*.npz"))
    entry.write_bytes(entry.read_bytes()[:-64])
    with pytest.warns(UserWarning, match=rf"shard cache file {entry}.*recounting"):
        run = count_corpus(shards, N, br_tags="space", cache_dir=cache)
    assert sum(r["cached"] for r in run.info["shards"]) == 3
    same_counts(run, reference)
    # a different option is a different entry
    run = count_corpus(shards[:1], N, br_tags="keep", cache_dir=cache)
    assert [r["cached"] for r in run.info["shards"]] == [False]


# --------------------------------------------------------------------------- the counts file


def test_counts_file_round_trip_and_verification(imdb, reference, tmp_path):
    path = save_counts(tmp_path / "c.npz", reference)
    back = load_counts(path)
    same_counts(back, reference)
    assert back.info["options"] == reference.info["options"] and back.info["counts_file"] == str(path)
    assert [p.name for p in tmp_path.iterdir()] == ["c.npz"]  # no temporary file left behind
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["data"] = arrays["data"].copy()
    arrays["data"][0] += 1  # one count changed, digest kept
    np.savez(tmp_path / "tampered.npz", **arrays)
    with pytest.raises(ValueError, match="tampered.npz.*damaged"):
        load_counts(tmp_path / "tampered.npz")
    (tmp_path / "cut.npz").write_bytes(path.read_bytes()[:1000])
    with pytest.raises(ValueError, match="cut.npz.*cannot be read"):
        load_counts(tmp_path / "cut.npz")
    np.savez(tmp_path / "other.npz", x=np.zeros(3))
    with pytest.raises(ValueError, match="not a posgeom counts file"):
        load_counts(tmp_path / "other.npz")
    with pytest.raises(ValueError, match="does not exist"):
        load_counts(tmp_path / "absent.npz")


def test_stress_from_a_counts_file_reproduces_the_corpus_numbers(shared_data_dir, env, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("POSGEOM_DATA_DIR", str(shared_data_dir))
    out = tmp_path / "sst2.npz"
    assert main([
        "counts", "--corpus", str(shared_data_dir / "sst2" / "train.parquet"), "--text-column", "sentence",
        "--positions", "64", "--out", str(out), "--no-cache",
    ]) == 0
    options = ["--encodings", "sinusoidal,rope,mds", "--noise-reps", "5", "--json"]
    assert main(["stress", "--corpus", "sst2", *options]) == 0
    assert main(["stress", "--counts", str(out), *options]) == 0
    from_corpus, from_file = (json.loads(line) for line in capsys.readouterr().out.splitlines()[-2:])
    for key in ("stress", "effective_rank", "mds", "noise_floor", "n_sequences", "n_truncated", "positions_kept"):
        assert from_file[key] == from_corpus[key], key
    assert from_file["noise_floor"]["resampled_from"] == "counts"
    # the Python API takes the file as well: read, by path, or as a corpus specification
    for stats in (load_counts(out), str(out)):
        rep = stress_report(stats, "rope", noise_reps=5)
        assert rep["stress"]["rope"] == from_corpus["stress"]["rope"]
    assert load_statistics(str(out)).counts == load_counts(out).counts
    assert corpus_report(out)["reach"] == corpus_report(load_statistics("sst2"))["reach"]
    with pytest.raises(ValueError, match="n_positions do.*not apply to a counts file"):
        load_statistics(str(out), n_positions=32)


@pytest.mark.parametrize("argv,message", [
    (["stress", "--counts", "c.npz", "--positions", "32"], "--positions do(es) not apply with --counts"),
    (["stress"], "give either --corpus"),
    (["counts", "--corpus", "x.parquet", "--on-bad-shard", "maybe", "--out", "c.npz"], "valid values are stop, skip"),
    (["counts", "--corpus", "nowhere/*.parquet", "--out", "c.npz"], "no shard matches"),
])
def test_cli_errors_are_one_line(argv, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.parquet").write_bytes(b"")
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err


@pytest.mark.parametrize("threshold", [0.5, 0.05, 0.01, 1e-9])
def test_stress_rank_from_prefixes_equals_the_full_curve(threshold):
    """stress_report's early-stopping stress rank is effective_rank(D, "stress") exactly."""
    from posgeom.diagnose.stress import _stress_rank
    from posgeom.geometry import classical_mds, effective_rank, hellinger_matrix, positional_counts

    rng = np.random.default_rng(3)
    seqs = [((rng.zipf(1.3, 70) + np.arange(70) // 7) % 300).tolist() for _ in range(400)]
    D = hellinger_matrix(positional_counts(seqs, 70, 300))
    assert _stress_rank(D, classical_mds(D), threshold) == effective_rank(D, "stress", threshold=threshold)


def test_the_single_process_path_does_not_import_dask(tmp_path):
    import subprocess
    import sys

    (tmp_path / "a.txt").write_text("one text\nanother text\n")
    code = (
        "import sys\nfrom posgeom.corpora import count_corpus\n"
        f"stats = count_corpus({str(tmp_path / 'a.txt')!r}, 8, cache=False)\n"
        "assert stats.info['n_sequences'] == 2\n"
        "print(sorted(m for m in ('dask', 'distributed') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_rank_criteria_can_be_left_out(tmp_path, capsys):
    """--ranks tol,mass skips the slow stress criterion (None, with a note); a bad name is a clear error."""
    from posgeom.corpora import CorpusStatistics
    from posgeom.geometry import positional_counts

    rng = np.random.default_rng(5)
    seqs = [((rng.zipf(1.3, 30) + np.arange(30) // 5) % 200).tolist() for _ in range(300)]
    counts = positional_counts(seqs, 30, 200)
    path = save_counts(tmp_path / "c.npz", CorpusStatistics(counts, np.full(300, 30), 0, {"options": {}}))
    assert main(["stress", "--counts", str(path), "--ranks", "tol,mass", "--noise-reps", "2", "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)
    assert rep["effective_rank"]["stress"] is None and rep["effective_rank"]["mass"] >= 1
    assert any("stress: not computed" in note for note in rep["notes"])
    assert main(["stress", "--counts", str(path), "--ranks", "tol,strain"]) == 2
    assert "unknown rank criteria 'strain'; valid criteria are tol, mass, stress" in capsys.readouterr().err
