"""Corpora caches that never falsify numbers (issue 15).

Local files are read with pyarrow from the verified bytes (no intermediate conversion cache); token and
count caches are keyed by the texts actually read; a flipped byte at every offset class of every cache
file, a killed writer (SIGKILL at each step of a cache write) and concurrent writers and readers all end
in the same numbers; any failure to read a cache file, of any exception type, recomputes it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from posgeom.cli import main
from posgeom.corpora import ArrayCache, CorpusOptions, cache_key, corpus_counts, corpus_tokens, load_texts
from posgeom.storage import FAULT_ENV

REPO = Path(__file__).resolve().parents[1]
TEXTS = [f"review number {i} : a {'very ' * (i % 7)}good film , said critic {i % 5} ." for i in range(60)]


def write(path: Path, texts=TEXTS) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"text": texts, "label": np.arange(len(texts)) % 2}), path)
    return path


def counts_quietly(f, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return corpus_counts(CorpusOptions(f, n_positions=12), **kw)


def offsets(size: int) -> list[int]:
    """One offset of each class of a .npz (zip): local header, member data, middle, central directory, end."""
    return sorted({0, 8, 30, 64, size // 4, size // 2, 3 * size // 4, max(0, size - 60), size - 22, size - 1})


def test_local_files_are_read_without_a_conversion_cache(env):
    f = write(env / "d" / "train.parquet")
    counts_quietly(f)
    cache = env / "cache"
    assert not (cache / "hf-datasets").exists()
    assert sorted(p.name.split("-")[0] for p in (cache / "corpora").iterdir()) == ["counts", "tokens"]


def test_no_cache_writes_nothing(env, shared_data_dir, capsys):
    code = main(["corpus-report", "--corpus", "sst2", "--split", "validation", "--positions", "8",
                 "--data-dir", str(shared_data_dir), "--no-cache", "--json"])
    assert code == 0
    assert not (env / "cache").exists() or not any((env / "cache").rglob("*"))


def test_a_flipped_byte_in_any_cache_file_never_changes_the_numbers(env):
    f = write(env / "t.parquet")
    reference = counts_quietly(f)
    files = sorted((env / "cache").rglob("*"))
    files = [p for p in files if p.is_file()]
    assert len(files) == 2  # the tokens and the counts
    for path in files:
        original = path.read_bytes()
        for offset in offsets(len(original)):
            damaged = bytearray(original)
            damaged[offset] ^= 0xFF
            path.write_bytes(bytes(damaged))
            again = counts_quietly(f)
            assert again.counts == reference.counts, (path.name, offset)
            np.testing.assert_array_equal(again.full_lengths, reference.full_lengths)
            assert again.n_truncated == reference.n_truncated
            if not path.exists():  # removed as damaged: the next call recomputes and rewrites it
                counts_quietly(f)
            path.write_bytes(original)


def test_unsupported_compression_is_a_recompute_not_a_crash(env):
    """The zip reader raises NotImplementedError for an unknown compression method."""
    f = write(env / "t.parquet")
    reference = counts_quietly(f)
    for path in (env / "cache" / "corpora").glob("*.npz"):
        raw = bytearray(path.read_bytes())
        for marker, offset in ((b"PK\x03\x04", 8), (b"PK\x01\x02", 10)):
            start = raw.find(marker)
            while start != -1:
                raw[start + offset] = 99  # compression method 99: not supported
                start = raw.find(marker, start + 4)
        path.write_bytes(bytes(raw))
    with pytest.warns(UserWarning, match="damaged .*NotImplementedError"):
        again = corpus_counts(CorpusOptions(f, n_positions=12))
    assert again.counts == reference.counts and not again.cache_hit


def test_damaged_metadata_is_caught_by_its_checksum(tmp_path):
    store = ArrayCache(tmp_path)
    key = cache_key(z=1)
    # a changed number in the metadata, in a zip rewritten with matching CRCs: only the metadata checksum can tell
    import zipfile

    path = store.save("counts", key, {"a": np.arange(5)}, {"n_sequences": 1234})
    with zipfile.ZipFile(path) as z:
        members = {name: z.read(name) for name in z.namelist()}
    meta_name = next(n for n in members if n.startswith("__posgeom_meta__"))
    assert members[meta_name].count("1234".encode("utf-32-le")) == 1
    members[meta_name] = members[meta_name].replace("1234".encode("utf-32-le"), "1235".encode("utf-32-le"))
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    with pytest.warns(UserWarning, match="checksum mismatch"):
        assert store.load("counts", key) is None


def test_cache_is_keyed_by_the_texts_read(env, monkeypatch):
    """Whatever changes the texts between the verified file and the counts changes the key: the cache can
    neither serve counts of other texts nor keep counts of wrong texts."""
    from posgeom.corpora import real

    f = write(env / "t.parquet")
    reference = counts_quietly(f)
    tokens = corpus_tokens(CorpusOptions(f, n_positions=12))
    original = real.read_local_table

    def altered(path, sha256=None):
        table = original(path, sha256)
        texts = table["text"].to_pylist()
        texts[3] = "an altered text"
        return table.set_column(table.column_names.index("text"), "text", pa.array(texts))

    monkeypatch.setattr(real, "read_local_table", altered)
    other = counts_quietly(f)
    assert not other.cache_hit and other.counts != reference.counts
    assert other.info["texts_sha256"] != tokens.info["texts_sha256"]
    monkeypatch.setattr(real, "read_local_table", original)
    back = counts_quietly(f)
    assert back.cache_hit and back.counts == reference.counts


def test_file_changed_after_verification_is_an_error(env):
    f = write(env / "t.parquet")
    from posgeom.corpora import resolve_source

    source = resolve_source(f)
    write(f, TEXTS[:10])
    with pytest.raises(ValueError, match="changed while it was being read"):
        load_texts(source)


# ------------------------------------------------------------------------------------ crashes (SIGKILL)

COUNT_SCRIPT = textwrap.dedent("""
    import sys, warnings
    warnings.simplefilter("ignore")
    from posgeom.corpora import CorpusOptions, corpus_counts
    c = corpus_counts(CorpusOptions(sys.argv[1], n_positions=12))
    print(int(c.counts.counts.sum()))
""")


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="SIGKILL is POSIX")
@pytest.mark.parametrize("step", ["cache-save:partial", "cache-save:written"])
def test_kill_during_a_cache_write(env, step):
    f = write(env / "t.parquet")
    reference = counts_quietly(f, cache=False)
    child_env = {**os.environ, "PYTHONPATH": str(REPO), FAULT_ENV: step}
    done = subprocess.run([sys.executable, "-c", COUNT_SCRIPT, str(f)], env=child_env, capture_output=True, timeout=1800)
    assert done.returncode == -signal.SIGKILL
    folder = env / "cache" / "corpora"
    assert not list(folder.glob("*.npz"))  # the killed write left no entry, only its temporary file
    assert len(list(folder.glob(".*.tmp"))) == 1
    again = corpus_counts(CorpusOptions(f, n_positions=12))
    assert again.counts == reference.counts and not again.cache_hit
    assert corpus_counts(CorpusOptions(f, n_positions=12)).cache_hit
    assert ArrayCache(folder).clear() == 2 and not list(folder.iterdir())  # clear() also sweeps temporaries


CACHE_WRITER = textwrap.dedent("""
    import sys
    import numpy as np
    from posgeom.corpora import ArrayCache
    store, n = ArrayCache(sys.argv[1]), int(sys.argv[2])
    for _ in range(n):
        store.save("t", sys.argv[3], {"a": np.arange(200_000) * 3, "b": np.full(7, 2.5)}, {"n": 12})
    print(n)
""")

# Reads until the test says the writers are done, then once more: however slow the machine (the
# writers may all finish before a reader starts), the last read meets a complete entry.
CACHE_READER = textwrap.dedent("""
    import json, sys, warnings
    from pathlib import Path
    import numpy as np
    from posgeom.corpora import ArrayCache
    store, key, done = ArrayCache(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
    hits = misses = bad = 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        while True:
            last = done.exists()
            got = store.load("t", key)
            if got is None:
                misses += 1
            else:
                arrays, meta = got
                bad += not (np.array_equal(arrays["a"], np.arange(200_000) * 3) and meta == {"n": 12})
                hits += 1
            if last:
                break
    print(json.dumps({"hits": hits, "misses": misses, "bad": bad, "warnings": len(caught)}))
""")


def test_concurrent_cache_writers_and_readers(tmp_path):
    """Two writers replace one entry while two readers read it: no reader ever sees a partial or damaged
    entry (no warning, no wrong array). Driven by counts of saves, not by time: no machine is too slow."""
    key = cache_key(concurrent=1)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = tmp_path / "writers-done"
    cache = tmp_path / "cache"

    def start(script, *args):
        return subprocess.Popen([sys.executable, "-c", script, str(cache), *args], env=env, stdout=subprocess.PIPE,
                                text=True)

    readers = [start(CACHE_READER, key, str(done)) for _ in range(2)]
    writers = [start(CACHE_WRITER, "60", key) for _ in range(2)]
    outs = [p.communicate(timeout=1800)[0] for p in writers]
    done.touch()
    outs += [p.communicate(timeout=1800)[0] for p in readers]
    assert all(p.returncode == 0 for p in writers + readers)
    assert [int(o) for o in outs[:2]] == [60, 60]
    for o in outs[2:]:
        r = json.loads(o)
        assert r["bad"] == 0 and r["warnings"] == 0 and r["hits"] > 0, r


# ------------------------------------------------------------------------------------ one-line errors


def test_damaged_parquet_with_no_verify_is_one_line(env, capsys):
    data = env / "data"
    path = write(data / "sst2" / "validation.parquet", ["a film"] * 20)
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2 : len(raw) // 2 + 40] = b"\xff" * 40
    path.write_bytes(bytes(raw[: len(raw) - 30]))
    code = main(["stress", "--corpus", "sst2", "--split", "validation", "--data-dir", str(data), "--no-verify",
                 "--positions", "4", "--encodings", "sinusoidal"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and "Traceback" not in err and "damaged" in err


def test_cache_dir_pointing_at_a_file_is_one_line(env, monkeypatch, capsys):
    blocker = env / "blocker"
    blocker.write_text("x")
    monkeypatch.setenv("POSGEOM_CACHE_DIR", str(blocker))
    f = write(env / "t.parquet")
    code = main(["corpus-report", "--corpus", str(f), "--positions", "4"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "POSGEOM_CACHE_DIR" in err and "is a file" in err
