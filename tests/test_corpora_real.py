"""Real-corpus loaders: checksums, local folders, files, the hub when offline, bad input; SST-2 on the real data."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from posgeom.corpora import (
    CORPORA, ChecksumError, CorpusOptions, DataUnavailableError, corpus_counts, known_checksums, load_texts, load_tokenizer,
    resolve_source, sha256_file,
)

SENTENCES = ["a gorgeous , witty film .", "it 's a bore", "not bad at all , really", "the plot <br />thickens"]


def write_parquet(path, **columns):
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path)
    return path


def make_data_dir(root, sentences=SENTENCES):
    for split in ("train", "validation", "test"):
        write_parquet(root / "sst2" / f"{split}.parquet", idx=np.arange(len(sentences), dtype=np.int32),
                      sentence=list(sentences), label=np.arange(len(sentences)) % 2)
    for split in ("train", "test"):
        write_parquet(root / "imdb" / f"{split}.parquet", text=[s + " <br /><br />end" for s in sentences],
                      label=np.arange(len(sentences)) % 2)
    return root


def naive_counts(seqs, n, v):
    c = np.zeros((n, v), dtype=np.int64)
    for s in seqs:
        for i, w in enumerate(s[:n]):
            c[i, w] += 1
    return c


# ---- real data (shared folder) -------------------------------------------------------------


def test_packaged_checksums_match_the_shared_data(shared_data_dir):
    sums = known_checksums()
    assert set(sums) == {f"{c}/{s}.parquet" for c, info in CORPORA.items() for s in info.splits}
    for rel in ("sst2/validation.parquet", "sst2/test.parquet"):  # the large files are checked by the loaders
        assert sha256_file(shared_data_dir / rel) == sums[rel]


def test_sst2_validation_real(env, shared_data_dir):
    texts = load_texts("sst2", "validation", data_dir=shared_data_dir)
    assert len(texts.texts) == texts.n_rows == 872 and texts.n_empty == 0
    assert np.bincount(texts.labels).tolist() == [428, 444]
    assert texts.source.verified and texts.source.kind == "local"
    stats = corpus_counts(CorpusOptions("sst2", "validation"), data_dir=shared_data_dir)
    assert stats.n_positions == 64 and stats.n_truncated == 0
    tok = load_tokenizer()
    ref = tok(texts.texts, truncation=True, max_length=64)["input_ids"]
    np.testing.assert_array_equal(stats.counts.counts.toarray(), naive_counts(ref, 64, 30522))
    assert stats.counts.reach[0] == 872 and stats.counts.counts[0, tok.cls_token_id] == 872
    np.testing.assert_array_equal(stats.full_lengths, [len(r) for r in ref])


def test_data_dir_from_environment(env, shared_data_dir, monkeypatch):
    monkeypatch.setenv("POSGEOM_DATA_DIR", str(shared_data_dir))
    src = resolve_source("sst2", "test")
    assert src.kind == "local" and src.files[0].name == "test.parquet"
    assert src.sha256 == {"sst2/test.parquet": known_checksums()["sst2/test.parquet"]}


# ---- small folders made here ---------------------------------------------------------------


def test_checksum_mismatch_is_a_clear_error(env):
    data = make_data_dir(env / "data")
    with pytest.raises(ChecksumError, match=r"sst2/validation.parquet .* has sha256 .*expected.*verify=False"):
        load_texts("sst2", "validation", data_dir=data)
    texts = load_texts("sst2", "validation", data_dir=data, verify=False)
    assert texts.texts == SENTENCES and texts.source.verified is False
    assert texts.labels.tolist() == [0, 1, 0, 1]


def test_no_data_offline_names_the_three_ways(env, monkeypatch):
    import datasets.config
    import huggingface_hub.constants

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", env / "hf-empty")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(env / "hub-empty"))
    with pytest.raises(DataUnavailableError) as err:
        load_texts("imdb", "test")
    msg = str(err.value)
    assert "POSGEOM_DATA_DIR" in msg and "stanfordnlp/imdb" in msg and "--corpus PATH" in msg
    assert "(1)" in msg and "(2)" in msg and "(3)" in msg


def test_missing_file_in_data_dir(env):
    (env / "data" / "sst2").mkdir(parents=True)
    with pytest.raises(DataUnavailableError, match="does not exist.*three ways"):
        resolve_source("sst2", "train", data_dir=env / "data")


def test_unknown_split_and_corpus_list_valid_values(env):
    with pytest.raises(ValueError, match="valid splits are train, validation, test"):
        resolve_source("sst2", "dev")
    with pytest.raises(ValueError, match="valid splits are train, test"):
        resolve_source("imdb", "validation")
    with pytest.raises(ValueError, match="valid corpora are sst2, imdb"):
        resolve_source("sst3")


def test_text_column_missing_lists_columns(env):
    f = write_parquet(env / "reviews.parquet", body=["x", "y"], label=[0, 1])
    with pytest.raises(ValueError, match=r"no text column .*\['body', 'label'\]"):
        resolve_source(f)
    with pytest.raises(ValueError, match=r"text column 'review' not found .*\['body', 'label'\]"):
        resolve_source(f, text_column="review")
    texts = load_texts(f, text_column="body")
    assert texts.texts == ["x", "y"] and texts.source.kind == "path"


def test_empty_texts_are_reported_with_counts(env):
    f = write_parquet(env / "e.parquet", text=["good", "", None, "  ", "fine"], label=[1, 0, 0, 1, 1])
    with pytest.raises(ValueError, match=r"3 of 5 texts .* are empty \(rows \[1, 2, 3\]\)"):
        load_texts(f)
    with pytest.warns(UserWarning, match="dropped 3 empty texts of 5"):
        dropped = load_texts(f, on_empty="drop")
    assert dropped.texts == ["good", "fine"] and dropped.labels.tolist() == [1, 1]
    assert dropped.dropped.tolist() == [1, 2, 3] and dropped.n_empty == 3
    kept = load_texts(f, on_empty="keep")
    assert kept.texts == ["good", "", "", "  ", "fine"] and kept.n_empty == 3
    with pytest.raises(ValueError, match="valid values are raise, drop, keep"):
        load_texts(f, on_empty="ignore")


def test_non_text_column_is_rejected(env):
    f = write_parquet(env / "n.parquet", text=[1, 2, 3])
    with pytest.raises(ValueError, match="holds int64, not text"):
        load_texts(f)


@pytest.mark.parametrize("suffix", [".csv", ".jsonl", ".txt"])
def test_other_file_types(env, suffix):
    path = env / f"corpus{suffix}"
    rows = ["first text", "second, longer text"]
    if suffix == ".csv":
        path.write_text('text,label\nfirst text,0\n"second, longer text",1\n')
    elif suffix == ".jsonl":
        path.write_text("".join(json.dumps({"text": t, "label": i}) + "\n" for i, t in enumerate(rows)))
    else:
        path.write_text("\n".join(rows) + "\n")
    texts = load_texts(path)
    assert texts.texts == rows
    assert (texts.labels is None) == (suffix == ".txt")


def test_folder_of_splits(env):
    folder = env / "mine"
    write_parquet(folder / "train.parquet", text=["a b", "c"])
    write_parquet(folder / "dev.parquet", text=["d"])
    assert load_texts(folder).texts == ["a b", "c"]
    assert load_texts(folder, "dev").texts == ["d"]
    with pytest.raises(ValueError, match="valid splits are dev, train"):
        load_texts(folder, "test")
    with pytest.raises(ValueError, match="unknown file type .xyz"):
        (env / "bad.xyz").write_text("x")
        resolve_source(env / "bad.xyz")


def test_fingerprint_follows_file_content(env):
    import os

    f = write_parquet(env / "t.parquet", text=["one", "two"])
    a = resolve_source(f).fingerprint
    assert resolve_source(f).fingerprint == a
    assert load_texts(f).texts == ["one", "two"]
    # same size, same modification time, different content: never served from a stale conversion
    stat = f.stat()
    write_parquet(f, text=["six", "ten"])
    os.utime(f, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert f.stat().st_size == stat.st_size and f.stat().st_mtime_ns == stat.st_mtime_ns
    assert resolve_source(f).fingerprint != a
    assert load_texts(f).texts == ["six", "ten"]


def test_local_loads_never_write_into_the_data_folder(env):
    data = make_data_dir(env / "data")
    before = sorted(p.relative_to(data) for p in data.rglob("*"))
    corpus_counts(CorpusOptions("imdb", "test", n_positions=16), data_dir=data, verify=False)
    assert sorted(p.relative_to(data) for p in data.rglob("*")) == before
    assert any((env / "cache").rglob("*.npz"))
