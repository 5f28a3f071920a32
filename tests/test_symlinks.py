"""No symbolic link is ever followed out of the results folder or a cache (issue 48).

git stores symbolic links, so a committed results folder (or a shared cache) can hold one anywhere: in place
of an entry's ``.lock``, its ``CURRENT`` pointer, a version folder or a file in it, a temporary name, or
``<scale>/.checkpoints``. Each is planted here pointing at a file or folder *outside* the registry; after every
command that touches the registry the target is unchanged (content, permissions, existence) and
``posgeom results check`` names the link and carries on with the other entries.
"""

from __future__ import annotations

import json
import os
import stat
import threading
import time
from pathlib import Path

import pytest

from posgeom.cli import main
from posgeom.registry import DamagedEntryError, Registry
from posgeom.storage import FolderLock, SymlinkError, read_nofollow, remove_tree, symlinks_below

PARAMS = {"n": 3}
OTHER = {"n": 4}
CONTENT = b"precious bytes outside the registry\n"


def _save(reg: Registry, params=PARAMS, x: int = 1):
    return reg.save("demo", {"x": x}, params=params, scale="quick", seed=0, device="cpu", code="posgeom.storage")


def _outside(tmp_path: Path, kind: str = "file") -> Path:
    """A file (or a folder holding one) outside the registry, with a recognisable content and mode."""
    if kind == "file":
        target = tmp_path / "outside.txt"
        target.write_bytes(CONTENT)
        target.chmod(0o640)
    else:
        target = tmp_path / "outside"
        (target / "inner").mkdir(parents=True)
        (target / "inner" / "keep.txt").write_bytes(CONTENT)
        (target / "inner" / "meta.json").write_text(json.dumps({"complete": True}))
    return target


def _snapshot(target: Path) -> dict:
    """Everything about ``target`` a followed link could change: each file's bytes and mode."""
    files = [target] if target.is_file() else sorted(p for p in target.rglob("*"))
    return {str(p): (p.read_bytes() if p.is_file() else None, stat.S_IMODE(p.stat().st_mode)) for p in files}


def _check(root: Path, capsys, *extra) -> tuple[int, str]:
    code = main(["results", "check", "--results-dir", str(root), *extra])
    return code, capsys.readouterr().out


def _plant(folder: Path, place: str, tmp_path: Path) -> tuple[Path, Path]:
    """A link at ``place`` of the entry ``folder`` pointing outside; returns (link, target)."""
    version = next(folder.glob("v-*"))
    if place in (".lock", "CURRENT", "manifest.json", ".CURRENT.x1y2.tmp"):
        target = _outside(tmp_path)
        link = version / place if place == "manifest.json" else folder / place
        if place == "manifest.json":  # a link to a faithful copy: followed, the entry would even verify
            target.write_bytes(link.read_bytes())
            target.chmod(0o640)
        link.unlink(missing_ok=True)
        link.symlink_to(target)
    else:  # a temporary folder or an older version: folders a sweep deletes
        target = _outside(tmp_path, "folder")
        link = folder / place
        link.symlink_to(target, target_is_directory=True)
    return link, target


@pytest.mark.parametrize("place", [".lock", "CURRENT", "manifest.json", ".CURRENT.x1y2.tmp", ".tmp-abc123",
                                   "v-0123456789abcdef"])
def test_a_link_in_an_entry_is_reported_never_followed_and_the_check_carries_on(tmp_path, capsys, place):
    root = tmp_path / "results"
    reg = Registry(root)
    _save(reg)
    _save(reg, OTHER)
    folder = reg._folder("demo", "quick", reg.load("demo", params=PARAMS, scale="quick").key)
    link, target = _plant(folder, place, tmp_path)
    before = _snapshot(target)

    for extra in ((), ("--no-sweep",), ("--json",)):
        code, out = _check(root, capsys, *extra)
        assert code == 1, out
        if not extra or extra == ("--no-sweep",):
            assert f"symlink    quick/demo/{folder.name}: holds symbolic link(s) {link.relative_to(folder)}" in out
            assert out.splitlines()[-1].endswith("1 ok, 1 symlink")  # the other entry was checked
        assert _snapshot(target) == before
    with pytest.raises(ValueError, match="holds symbolic link"):  # a save is refused before anything is written
        _save(reg, x=2)
    try:
        reg.load("demo", params=PARAMS, scale="quick")
    except DamagedEntryError as err:  # a linked pointer, manifest or version is never read through
        assert "symbolic link" in str(err)
    assert _snapshot(target) == before and link.is_symlink()
    assert _save(reg, OTHER, x=3).values == {"x": 3}  # the other entry still takes saves


def test_a_linked_checkpoints_folder_is_reported_and_never_discarded_through(tmp_path, capsys):
    from posgeom.reproduce import discard_finished_checkpoints

    root = tmp_path / "results"
    _save(Registry(root))
    target = _outside(tmp_path, "folder")  # holds a finished run's state: what a discard deletes
    (root / "quick" / ".checkpoints").symlink_to(target, target_is_directory=True)
    before = _snapshot(target)

    with pytest.warns(UserWarning, match=r"\.checkpoints is a symbolic link"):
        assert discard_finished_checkpoints(root, "quick") == 0
    assert _snapshot(target) == before
    code, out = _check(root, capsys)
    assert code == 1 and "symlink    quick/.checkpoints/: a symbolic link in the results folder" in out
    assert _snapshot(target) == before


def test_a_link_inside_the_checkpoints_folder_stops_the_discard(tmp_path):
    from posgeom.reproduce import discard_finished_checkpoints

    root = tmp_path / "results"
    keep = root / "quick" / ".checkpoints" / "run1"
    keep.mkdir(parents=True)
    (keep / "meta.json").write_text(json.dumps({"complete": True}))
    target = _outside(tmp_path, "folder")
    (keep.parent / "run2").symlink_to(target / "inner", target_is_directory=True)
    before = _snapshot(target)
    with pytest.warns(UserWarning, match="run2 is a symbolic link"):
        assert discard_finished_checkpoints(root, "quick") == 0
    assert _snapshot(target) == before and keep.is_dir()


def test_names_are_printed_with_their_escapes_escaped(tmp_path, capsys):
    root = tmp_path / "results"
    _save(Registry(root))
    hostile = root / "quick" / "demo\x1b]0;pwned\x07\x1b[2J" / "k\rey"
    hostile.mkdir(parents=True)
    (hostile / "CURRENT").write_text("not json")  # a damaged entry: listed with its name
    code, out = _check(root, capsys)
    assert code == 1
    assert "\x1b" not in out and "\x07" not in out and "\r" not in out
    assert "demo\\x1b]0;pwned\\x07\\x1b[2J/k\\rey" in out


def _interrupted_first_write(reg: Registry) -> Path:
    """An entry folder as a first save killed before its pointer leaves it: the lock and a temporary folder."""
    folder = reg._folder("demo", "quick", "0123456789abcdef")
    (folder / ".tmp-k1ll3d").mkdir(parents=True)
    (folder / ".tmp-k1ll3d" / "result.json").write_text("{}")
    (folder / ".lock").touch()
    return folder


def test_an_interrupted_first_write_is_removed_by_the_sweep_not_listed_forever(tmp_path, capsys):
    root = tmp_path / "results"
    reg = Registry(root)
    _save(reg)
    folder = _interrupted_first_write(reg)

    code, out = _check(root, capsys, "--no-sweep")
    assert "no entry: only an interrupted write (run without --no-sweep to remove it)" in out and folder.is_dir()
    code, out = _check(root, capsys)
    assert code == 0 and "only an interrupted first write; removed its folder; removed .tmp-k1ll3d" in out
    assert not folder.exists()
    code, out = _check(root, capsys)
    assert code == 0 and "incomplete" not in out and out.splitlines()[-1].endswith(": 1 ok")


def test_a_folder_holding_anything_else_is_not_removed(tmp_path, capsys):
    reg = Registry(tmp_path / "results")
    folder = _interrupted_first_write(reg)
    (folder / "notes.txt").write_text("mine")
    _check(reg.root, capsys)
    assert (folder / "notes.txt").read_text() == "mine"


def test_a_lock_file_that_is_a_link_is_refused_untouched(tmp_path):
    target = _outside(tmp_path)
    link = tmp_path / "entry" / ".lock"
    link.parent.mkdir()
    link.symlink_to(target)
    before = _snapshot(target)
    with pytest.raises(SymlinkError, match="is a symbolic link"):
        FolderLock(link, timeout=1).acquire()
    assert _snapshot(target) == before


def test_a_waiter_locks_the_lock_file_that_replaced_a_removed_one(tmp_path):
    """``results check`` removes the folder of an interrupted first write under its lock; a writer that
    waited meanwhile must not hold a lock on the deleted file (two writers would then both hold one)."""
    path = tmp_path / "entry" / ".lock"
    first = FolderLock(path, timeout=5).acquire()
    got = {}

    def wait():
        got["lock"] = FolderLock(path, timeout=5).acquire()

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.2)
    path.unlink()
    path.parent.rmdir()
    first.release()
    waiter.join()
    assert os.fstat(got["lock"]._fd).st_ino == os.lstat(path).st_ino
    with pytest.raises(TimeoutError):  # and it excludes the next one
        FolderLock(path, timeout=0.2).acquire()
    got["lock"].release()


def test_a_lock_taken_while_its_folder_is_removed_makes_the_folder_again(tmp_path, monkeypatch):
    """The folder can go between the lock's ``mkdir`` and its ``open`` (``results check`` sweeping an interrupted
    first write): the lock makes it again instead of failing (the race the test above met on a loaded machine)."""
    import posgeom.storage as storage

    path = tmp_path / "entry" / ".lock"
    real_open, calls = os.open, []

    def open_after_removal(name, *args, **kwargs):
        calls.append(name)
        if len(calls) == 1:  # the first open finds the folder just removed
            path.parent.rmdir()
        return real_open(name, *args, **kwargs)

    monkeypatch.setattr(storage.os, "open", open_after_removal)
    lock = FolderLock(path, timeout=5).acquire()
    assert len(calls) == 2 and os.fstat(lock._fd).st_ino == os.lstat(path).st_ino
    lock.release()


def test_storage_helpers_refuse_links(tmp_path):
    target = _outside(tmp_path, "folder")
    link = tmp_path / "link"
    link.symlink_to(target, target_is_directory=True)
    (tmp_path / "file-link").symlink_to(target / "inner" / "keep.txt")
    before = _snapshot(target)
    with pytest.raises(SymlinkError):
        remove_tree(link)
    with pytest.raises(SymlinkError):
        read_nofollow(tmp_path / "file-link")
    holder = tmp_path / "holder"
    (holder / "sub").mkdir(parents=True)
    (holder / "sub" / "in").symlink_to(target, target_is_directory=True)
    assert symlinks_below(tmp_path) == [tmp_path / "file-link", holder / "sub" / "in", link]
    remove_tree(holder)  # the link inside is removed itself, never entered
    assert not holder.exists() and _snapshot(target) == before


# ----------------------------------------------------------------------------------- the corpora caches

TEXTS = "the film was good\na bad film\nwhat a film it was\n"


def _replace_by_links(folder: Path, outside: Path) -> dict[Path, Path]:
    """Move every file of the cache ``folder`` outside and leave a link to it in its place: a cache that
    followed links would serve these (faithful) copies."""
    outside.mkdir()
    links = {}
    for entry in sorted(folder.glob("*.npz")):
        target = outside / entry.name
        entry.rename(target)
        target.chmod(0o640)
        entry.symlink_to(target)
        links[entry] = target
    return links


def test_a_link_in_the_corpora_cache_is_reported_never_followed(env, capsys):
    corpus = env / "texts.txt"
    corpus.write_text(TEXTS)
    argv = ["stress", "--corpus", str(corpus), "--encodings", "sinusoidal"]
    assert main(argv) == 0
    cache = env / "cache" / "corpora"
    links = _replace_by_links(cache, env / "elsewhere")
    stale = env / "elsewhere" / "stale.tmp"  # a temporary name: a sweep deletes old ones
    stale.write_bytes(CONTENT)
    (cache / ".tokens-x.npz.abc.tmp").symlink_to(stale)
    os.utime(cache / ".tokens-x.npz.abc.tmp", (0, 0), follow_symlinks=False)
    before = {target: _snapshot(target) for target in [*links.values(), stale]}
    capsys.readouterr()

    for command in (argv, ["corpus-report", "--corpus", str(corpus)]):
        with pytest.warns(UserWarning, match="in the cache is a symbolic link: never followed") as caught:
            assert main(command) == 0
        assert len(caught) == 3  # one line per link
        out = capsys.readouterr().out
        assert "(from cache)" not in out  # recounted: nothing read through a link
        assert all(link.is_symlink() for link in links) and (cache / ".tokens-x.npz.abc.tmp").is_symlink()
        assert {target: _snapshot(target) for target in before} == before
        assert sorted(p.name for p in cache.iterdir()) == sorted([".tokens-x.npz.abc.tmp", *(p.name for p in links)])


def test_a_linked_cache_folder_is_never_written_through(env, capsys):
    corpus = env / "texts.txt"
    corpus.write_text(TEXTS)
    outside = env / "elsewhere"
    outside.mkdir()
    (env / "cache").mkdir()
    (env / "cache" / "corpora").symlink_to(outside, target_is_directory=True)
    with pytest.warns(UserWarning, match="corpora in the cache is a symbolic link"):
        assert main(["stress", "--corpus", str(corpus), "--encodings", "sinusoidal"]) == 0
    assert not list(outside.iterdir())


def test_a_link_in_the_shard_cache_is_reported_never_followed(env, capsys):
    from posgeom.corpora.sharded import count_corpus

    corpus = env / "texts.txt"
    corpus.write_text(TEXTS)
    argv = ["counts", "--corpus", str(corpus), "--positions", "12", "--out", str(env / "c.npz")]
    assert main(argv) == 0
    links = _replace_by_links(env / "cache" / "shards", env / "elsewhere")
    before = {target: _snapshot(target) for target in links.values()}
    capsys.readouterr()
    with pytest.warns(UserWarning, match="in the cache is a symbolic link"):
        assert main(argv) == 0
    assert "1 shards counted (0 from the cache)" in capsys.readouterr().out
    # the counting itself (a Dask worker's, which no command guards) never reads or replaces a linked entry
    with pytest.warns(UserWarning, match="is a symbolic link: never followed; the shard is counted without"):
        stats = count_corpus(str(corpus), 12, cache_dir=env / "cache" / "shards", progress=False)
    assert stats.info["shards"][0]["cached"] is False
    assert all(link.is_symlink() for link in links)
    assert {target: _snapshot(target) for target in before} == before


def test_a_finished_chapter_s_progress_is_never_cleared_through_a_link(tmp_path):
    from posgeom.registry import params_key
    from posgeom.reproduce.chapters import PROGRESS_EXPERIMENT
    from posgeom.reproduce.runner import _clear_progress

    reg = Registry(tmp_path / "results")
    target = _outside(tmp_path, "folder")
    entry = target / params_key({"chapter": "demo"})  # where the link leads the progress entry
    entry.mkdir()
    (entry / "keep.txt").write_bytes(CONTENT)
    (reg.root / "quick").mkdir(parents=True)
    (reg.root / "quick" / PROGRESS_EXPERIMENT).symlink_to(target, target_is_directory=True)
    before = _snapshot(target)
    with pytest.warns(UserWarning, match="kept the progress record of demo: .* is a symbolic link"):
        _clear_progress(reg, "demo", "quick")
    assert _snapshot(target) == before

    (reg.root / "quick" / PROGRESS_EXPERIMENT).unlink()
    reg.save(PROGRESS_EXPERIMENT, {"slices": 1}, params={"chapter": "demo"}, scale="quick", seed=0, device="cpu",
             code="posgeom.storage")
    _clear_progress(reg, "demo", "quick")  # a real entry is removed, lock and all
    assert not reg.has(PROGRESS_EXPERIMENT, params={"chapter": "demo"}, scale="quick")
    assert not (reg.root / "quick" / PROGRESS_EXPERIMENT / params_key({"chapter": "demo"})).exists()


def test_reproduce_refuses_a_linked_training_states_folder_before_any_chapter(tmp_path):
    """Training saves, resumes and discards its states under ``<results>/<scale>/.checkpoints``: a link there is
    refused before anything runs (the checkpoint module itself is keyed to the committed results)."""
    from posgeom.models.checkpoints import CHECKPOINT_FOLDER
    from posgeom.reproduce import Chapter, Estimate, budget, reproduce

    assert budget.CHECKPOINT_FOLDER == CHECKPOINT_FOLDER
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "fake.md").write_text("# fake\n")
    target = _outside(tmp_path, "folder")
    (tmp_path / "results" / "quick").mkdir(parents=True)
    (tmp_path / "results" / "quick" / ".checkpoints").symlink_to(target, target_is_directory=True)
    before = _snapshot(target)

    def never(*args, **kwargs):
        raise AssertionError("a chapter ran")

    with pytest.raises(ValueError, match=r"\.checkpoints is a symbolic link; posgeom never saves, resumes or discards"):
        reproduce("quick", device="cpu", chapters=(Chapter("fake", "Fake", ("C7",), Estimate(0.1, 0.1),
                                                           Estimate(1, 1), False),),
                  notebooks_dir=tmp_path / "notebooks", results_dir=tmp_path / "results", execute=never,
                  out=lambda line: None)
    assert _snapshot(target) == before


def test_a_lock_link_planted_after_the_scan_is_reported_too(tmp_path, capsys, monkeypatch):
    """The race: a ``.lock`` link that appears between the check's scan and its lock is refused by the open
    itself (``O_NOFOLLOW``) and reported; the other entries are still checked."""
    from posgeom.registry import check

    root = tmp_path / "results"
    reg = Registry(root)
    _save(reg)
    _save(reg, OTHER)
    target = _outside(tmp_path)
    before = _snapshot(target)
    folders = reg._entry_folders()
    monkeypatch.setattr(check, "symlinks_below", lambda root: [])  # the scan sees nothing...
    (folders[0] / ".lock").unlink()
    (folders[0] / ".lock").symlink_to(target)  # ...and the link is there when the lock is taken
    code, out = _check(root, capsys)
    assert code == 1 and f"symlink    quick/demo/{folders[0].name}: {folders[0] / '.lock'} is a symbolic link" in out
    assert out.splitlines()[-1].endswith("1 ok, 1 symlink") and _snapshot(target) == before
