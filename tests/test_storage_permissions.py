"""Files and folders posgeom writes get the permissions the umask allows (issue 26): a results folder or a
cache on shared storage can be read by the rest of a team when the umask says so, and stays owner-only
when the umask says that."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import numpy as np
import pytest

from posgeom.corpora.cache import ArrayCache
from posgeom.registry import Registry
from posgeom.storage import current_umask, file_mode, folder_mode, make_temp_folder, write_durably

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")


@pytest.fixture(params=[0o022, 0o077, 0o002])
def umask(request):
    """Run the test under this umask (restored afterwards)."""
    old = os.umask(request.param)
    try:
        yield request.param
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def test_current_umask_reads_without_changing_it(umask):
    assert current_umask() == umask
    assert current_umask() == umask  # unchanged by reading
    assert file_mode() == 0o666 & ~umask and folder_mode() == 0o777 & ~umask


def test_durable_writes_and_temporary_folders_follow_the_umask(tmp_path, umask):
    write_durably(tmp_path / "a.bin", b"x")
    assert mode(tmp_path / "a.bin") == 0o666 & ~umask
    # the same as a plain open() would give: the oracle is the operating system itself
    (tmp_path / "plain").write_bytes(b"x")
    assert mode(tmp_path / "a.bin") == mode(tmp_path / "plain")
    folder = make_temp_folder(tmp_path, ".tmp-")
    (tmp_path / "plain-folder").mkdir()
    assert mode(folder) == 0o777 & ~umask == mode(tmp_path / "plain-folder")


def test_registry_entries_follow_the_umask(tmp_path, umask):
    reg = Registry(tmp_path / "results")
    saved = reg.save("demo", {"x": 1}, params={"n": 1}, scale="quick", seed=0, device="cpu",
                     arrays={"a": np.arange(3)})
    entry = saved.path.parent
    for folder in (reg.root / "quick", reg.root / "quick" / "demo", entry, saved.path):
        assert mode(folder) == 0o777 & ~umask, folder
    for file in (entry / "CURRENT", saved.path / "manifest.json", saved.path / "result.json",
                 saved.path / "arrays.npz"):
        assert mode(file) == 0o666 & ~umask, file


def test_the_corpora_array_cache_follows_the_umask(tmp_path, umask):
    cache = ArrayCache(tmp_path / "cache")
    path = cache.save("tokens", "k" * 16, {"a": np.arange(4)})
    assert mode(path) == 0o666 & ~umask
    assert mode(tmp_path / "cache") == 0o777 & ~umask
