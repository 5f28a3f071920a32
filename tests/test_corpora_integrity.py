"""Counts that cannot be swapped, damaged or crafted into wrong numbers (issue 26, items 1, 3, 5, 7).

Small parquet shards of made-up texts stand in for a real corpus: what is tested is the cache and the
file, not the tokenizer. The oracle is always the same texts tokenised and counted at once.
"""

from __future__ import annotations

import io
import json
import shutil
import struct
import warnings
import zipfile

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from posgeom.cli import main
from posgeom.corpora import (
    ArrayCache, CorpusStatistics, count_corpus, load_counts, load_tokenizer, save_counts, tokenize_texts,
)
from posgeom.geometry import positional_counts

N = 16
WORDS = ["plot", "actor", "scene", "film", "good", "bad", "the", "a", "movie", "story", "quiet", "loud"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Four shards of different sizes (so that one shard's counts never equal another's), and their texts."""
    root = tmp_path_factory.mktemp("corpus")
    rng = np.random.default_rng(0)
    texts = []
    for k in range(4):
        part = [" ".join(rng.choice(WORDS, rng.integers(1, 14))) for _ in range(15 + 6 * k)]
        pq.write_table(pa.table({"text": part}), root / f"part-{k}.parquet")
        texts.append(part)
    return root, texts


@pytest.fixture(scope="module")
def truth(corpus):
    _, texts = corpus
    return tokenize_texts([t for part in texts for t in part], load_tokenizer(), N).counts()


def _entries(cache) -> dict:
    """Shard name → its cache file."""
    return {load_counts(p).info["record"]["shard"].rsplit("/", 1)[-1]: p for p in cache.glob("shard-*.npz")}


def _count(glob, cache):
    """count_corpus, with the warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stats = count_corpus(glob, N, cache_dir=cache)
    return stats, [str(w.message) for w in caught]


# --------------------------------------------------------------------------- item 1: a swapped cache file


def test_a_shard_cache_file_copied_over_another_is_recounted_not_served(corpus, truth, tmp_path):
    root, texts = corpus
    glob, cache = str(root / "*.parquet"), tmp_path / "cache"
    first, problems = _count(glob, cache)
    assert first.counts == truth and problems == []
    entries = _entries(cache)
    shutil.copyfile(entries["part-3.parquet"], entries["part-0.parquet"])  # same name, another shard's counts
    again, problems = _count(glob, cache)
    assert again.counts == truth  # the copied counts were not served as part-0's
    assert again.info["n_sequences"] == sum(len(p) for p in texts)
    assert len(problems) == 1 and str(entries["part-0.parquet"]) in problems[0] and "another shard" in problems[0]
    assert [r["cached"] for r in again.info["shards"]] == [False, True, True, True]
    assert [r["sha256"] for r in again.info["shards"]] == [r["sha256"] for r in first.info["shards"]]
    # replaced by the true counts: the next run reads all four from the cache, silently
    third, problems = _count(glob, cache)
    assert third.counts == truth and problems == [] and all(r["cached"] for r in third.info["shards"])
    assert load_counts(entries["part-0.parquet"]).info["record"]["sha256"] == first.info["shards"][0]["sha256"]


def test_a_shard_cache_file_of_other_options_is_not_served(corpus, tmp_path):
    """A file made under other options (here n = 8) renamed to the key of n = 16 is recounted."""
    root, texts = corpus
    shard = str(root / "part-1.parquet")
    count_corpus(shard, 8, cache_dir=tmp_path / "n8")
    count_corpus(shard, N, cache_dir=tmp_path / "n16")
    (n8,), (n16,) = (tmp_path / "n8").glob("shard-*.npz"), (tmp_path / "n16").glob("shard-*.npz")
    shutil.copyfile(n8, n16)
    stats, problems = _count(shard, tmp_path / "n16")
    assert stats.counts == tokenize_texts(texts[1], load_tokenizer(), N).counts()
    assert len(problems) == 1 and str(n16) in problems[0]


# --------------------------------------------------------------------------- item 3: damaged members


def _member_data_offset(raw: bytes, name: str) -> tuple[int, int]:
    """(offset, size) of a zip member's compressed bytes."""
    with zipfile.ZipFile(io.BytesIO(raw)) as zf:
        info = zf.getinfo(name)
    name_len, extra_len = struct.unpack("<HH", raw[info.header_offset + 26: info.header_offset + 30])
    return info.header_offset + 30 + name_len + extra_len, info.compress_size


def _corrupt_deflate(path, member="data.npy"):
    """Make a member's deflate stream invalid (a first block of the reserved type 3): zlib.error on reading."""
    raw = bytearray(path.read_bytes())
    start, size = _member_data_offset(bytes(raw), member)
    raw[start: start + min(size, 8)] = b"\xff" * min(size, 8)
    path.write_bytes(bytes(raw))


def test_a_corrupt_compressed_member_is_one_line_naming_the_counts_file(truth, tmp_path, capsys):
    path = save_counts(tmp_path / "c.npz", CorpusStatistics(truth, np.full(truth.n_sequences, 3), 0, {}))
    _corrupt_deflate(path)
    with pytest.raises(ValueError, match=r"c\.npz.*cannot be read.*error"):
        load_counts(path)
    for command in (["stress", "--counts", str(path)], ["corpus-report", "--counts", str(path)]):
        assert main(command) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and str(path) in err and "error: error" not in err


def test_a_corrupt_compressed_shard_cache_is_warned_recounted_and_replaced(corpus, truth, tmp_path):
    root, _ = corpus
    glob, cache = str(root / "*.parquet"), tmp_path / "cache"
    _count(glob, cache)
    entry = _entries(cache)["part-2.parquet"]
    _corrupt_deflate(entry)
    stats, problems = _count(glob, cache)
    assert stats.counts == truth
    assert len(problems) == 1 and str(entry) in problems[0] and "recounting" in problems[0]
    stats, problems = _count(glob, cache)  # replaced: later runs neither fail nor warn
    assert stats.counts == truth and problems == [] and all(r["cached"] for r in stats.info["shards"])


def test_every_damaged_shard_cache_is_warned_about_never_recounted_silently(corpus, truth, tmp_path):
    """Byte flips all over one cache file: each run gives the true counts, and the shard is either read
    from the cache (the flip touched nothing the file is read by) or recounted with a warning naming it."""
    root, _ = corpus
    glob, cache = str(root / "*.parquet"), tmp_path / "cache"
    _count(glob, cache)
    entry = _entries(cache)["part-1.parquet"]
    good = entry.read_bytes()
    recounted = 0
    for offset in np.linspace(0, len(good) - 1, 40).astype(int):
        damaged = bytearray(good)
        damaged[offset] ^= 0x5A
        entry.write_bytes(bytes(damaged))
        stats, problems = _count(glob, cache)
        assert stats.counts == truth, offset
        cached = {r["shard"].rsplit("/", 1)[-1]: r["cached"] for r in stats.info["shards"]}
        if cached["part-1.parquet"]:
            assert problems == [], offset
        else:
            assert len(problems) == 1 and str(entry) in problems[0], (offset, problems)
            recounted += 1
        entry.write_bytes(good)
    # most bytes matter (here 30 of 40); the others are zip fields no reader uses (timestamps, versions)
    assert recounted >= 20


# --------------------------------------------------------------------------- item 5: crafted, empty


def _crafted(tmp_path, truth) -> bytes:
    """A counts file whose ``data`` member declares 10**12 int64 values (7.28 TiB) and holds 16 bytes."""
    from numpy.lib import format as npy

    path = save_counts(tmp_path / "real.npz", CorpusStatistics(truth, np.full(truth.n_sequences, 3), 0, {}))
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(path.read_bytes())) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            if info.filename == "data.npy":
                member = io.BytesIO()
                npy.write_array_header_1_0(member, {"descr": "<i8", "fortran_order": False, "shape": (10**12,)})
                member.write(b"\0" * 16)
                dst.writestr("data.npy", member.getvalue())
            else:
                dst.writestr(info, src.read(info))
    return out.getvalue()


def test_a_crafted_npz_is_refused_before_anything_is_allocated(truth, tmp_path, capsys):
    crafted = tmp_path / "crafted.npz"
    crafted.write_bytes(_crafted(tmp_path, truth))
    with pytest.raises(ValueError, match=r"crafted\.npz.*declares shape \(1000000000000,\)"):
        load_counts(crafted)
    assert main(["stress", "--counts", str(crafted)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(crafted) in err and "MemoryError" not in err
    # the token cache reads through the same reader: a crafted entry is a warning and a miss
    cache = ArrayCache(tmp_path / "cache")
    cache.save("tokens", "k", {"x": np.arange(3)})
    cache.path("tokens", "k").write_bytes(crafted.read_bytes())
    with pytest.warns(UserWarning, match="declares shape"):
        assert cache.load("tokens", "k") is None


def test_read_npz_reads_what_numpy_writes_and_refuses_objects(tmp_path):
    from posgeom.storage import read_npz

    arrays = {"a": np.arange(12.0).reshape(3, 4), "f": np.asfortranarray(np.ones((2, 5), np.int32)),
              "s": np.asarray("text é"), "e": np.zeros(0, np.int64)}
    for save in (np.savez, np.savez_compressed):
        buf = io.BytesIO()
        save(buf, **arrays)
        back = read_npz(buf.getvalue())
        assert sorted(back) == sorted(arrays)
        for k, v in arrays.items():
            np.testing.assert_array_equal(back[k], v)
            assert back[k].dtype == v.dtype and back[k].flags.writeable
    buf = io.BytesIO()
    np.savez(buf, o=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError, match="Python objects"):
        read_npz(buf.getvalue())
    with pytest.raises(ValueError, match="not an .npz"):
        read_npz(b"text, not a zip archive\n")


@pytest.mark.parametrize("texts,extra", [([], []), (["", "  "], ["--on-empty", "drop"])])
def test_counts_of_an_empty_corpus_is_an_error_and_writes_nothing(texts, extra, tmp_path, capsys):
    pq.write_table(pa.table({"text": pa.array(texts, pa.string())}), tmp_path / "empty.parquet")
    out = tmp_path / "c.npz"
    assert main(["counts", "--corpus", str(tmp_path / "empty.parquet"), "--no-cache", "--out", str(out), *extra]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "holds no text" in err and "0 sequences" in err
    assert not out.exists()


# --------------------------------------------------------------------------- item 7: messages


def test_a_text_file_or_a_folder_given_as_counts_says_what_it_is(tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("positional counts, in prose\n")
    assert main(["stress", "--counts", str(tmp_path / "notes.txt")]) == 2
    err = capsys.readouterr().err.strip()
    assert "is not a counts file (not an .npz archive)" in err and "allow_pickle" not in err
    assert main(["corpus-report", "--counts", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "is a folder" in err and "does not exist" not in err and len(err.splitlines()) == 1


def test_a_folder_of_binary_files_names_the_problem_not_a_split(tmp_path, capsys):
    (tmp_path / "a.parquet").write_bytes(bytes(range(256)) * 2)
    assert main(["corpus-report", "--corpus", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "a.parquet" in err and "not a parquet file" in err and "split None" not in err
    (tmp_path / "b.txt").write_bytes(b"\xff\xfe\0\0" * 64)
    assert main(["corpus-report", "--corpus", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert "holds 2 files of texts (a.parquet, b.txt) and no train file; choose one with --split" in err


@pytest.mark.parametrize("argv", [
    ["counts", "--corpus", "x", "--positions", "many", "--out", "c.npz"],
    ["stress", "--corpus", "sst2", "--noise-reps", "2.5"],
    ["corpus-report", "--corpus", "sst2", "--positions", "-"],
    ["diagnose", "--model", "m", "--corpus", "sst2", "--out", "o", "--min-count", "x"],
    ["counts", "--out", "c.npz"],
    ["stress", "--no-such-flag"],
])
def test_argparse_errors_are_one_line_with_a_pointer_to_help(argv, capsys):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    # an option no parser knows is reported by the top-level parser
    prog = "posgeom" if argv[-1] == "--no-such-flag" else f"posgeom {argv[0]}"
    assert err.startswith(f"{prog}: error: ") and err.rstrip().endswith(f"(see {prog} --help)")
    assert "usage:" not in err


ESCAPES = "\x1b[2J\x1b[31mred\r\x07\u202e"


def test_escapes_in_counts_metadata_never_reach_the_terminal(tmp_path, capsys):
    seqs = [[1, 2, 3], [2, 3], [3, 1, 2, 4]]
    stats = CorpusStatistics(positional_counts(seqs, 3, 6), np.array([3, 2, 4]), 1, {
        "corpus": f"corpus{ESCAPES}", "tokenizer": f"tok{ESCAPES}",
        "options": {"special": f"model{ESCAPES}", "br_tags": "keep"},
        "source": {"kind": "shards", "n_shards": 1, "location": f"loc{ESCAPES}"},
    })
    path = save_counts(tmp_path / "c.npz", stats)
    assert main(["corpus-report", "--counts", str(path)]) == 0
    out = capsys.readouterr().out
    assert not any(c in out for c in "\x1b\r\x07\u202e")
    assert "corpus\\x1b[2J\\x1b[31mred\\r\\x07\\u202e" in out and "tok\\x1b" in out and "loc\\x1b" in out
    assert main(["stress", "--counts", str(path), "--encodings", "sinusoidal", "--noise-reps", "2"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "tok\\x1b" in out
    from posgeom.validation import printable

    assert json.loads(printable(json.dumps({"k": ESCAPES}))) == {"k": ESCAPES}  # JSON output is escaped already


def test_an_error_naming_a_file_with_escapes_prints_them_escaped(tmp_path, capsys):
    assert main(["stress", "--counts", str(tmp_path / f"absent{ESCAPES}.npz")]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "absent\\x1b[2J" in err and len(err.strip().splitlines()) == 1


# --------------------------------------------------------------------------- item 7: a killed Dask worker

_KILLED_WORKER = """
import os, signal, sys, time
from distributed import Client, LocalCluster
from posgeom.corpora import count_corpus

if __name__ == "__main__":
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \\
            Client(cluster) as client:
        stats = count_corpus(sys.argv[1], 16, client=client, cache=False)
        ((address, pid),) = client.run(os.getpid).items()
        os.kill(pid, signal.SIGKILL)  # after it counted a shard: whatever it holds is left behind
        for _ in range(3000):  # until the scheduler has dropped it (a bound in steps, never reached)
            if address not in client.scheduler_info(n_workers=-1)["workers"]:
                break
            time.sleep(0.1)
    print("counted", stats.info["n_sequences"])
"""


def test_a_killed_dask_worker_leaves_no_leaked_semaphore_warning(corpus, tmp_path):
    import subprocess
    import sys

    root, texts = corpus
    script = tmp_path / "killed_worker.py"
    script.write_text(_KILLED_WORKER)
    done = subprocess.run(
        [sys.executable, str(script), str(root / "part-0.parquet")], capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["counted", str(len(texts[0]))]
    assert "leaked semaphore" not in done.stderr, done.stderr[-2000:]
