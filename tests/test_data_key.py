"""data_key: registry entries name their data by content, not by the folder's path."""

import shutil

from posgeom.corpora import data_key


def test_the_same_book_copies_give_the_same_key_anywhere(tmp_path):
    a, b = tmp_path / "a", tmp_path / "elsewhere" / "b"
    a.mkdir()
    b.mkdir(parents=True)
    assert data_key(a) == data_key(b) == "book copies"
    assert data_key(None) == "hub"


def test_a_downloaded_folder_is_keyed_by_its_own_checksums(tmp_path):
    (tmp_path / "checksums.json").write_text('{"sst2/train.parquet": "ab"}')
    key = data_key(tmp_path)
    assert key.startswith("download:") and len(key) == len("download:") + 16
    other = tmp_path / "copy"
    other.mkdir()
    shutil.copy(tmp_path / "checksums.json", other / "checksums.json")
    assert data_key(other) == key
    (other / "checksums.json").write_text('{"sst2/train.parquet": "cd"}')
    assert data_key(other) != key
