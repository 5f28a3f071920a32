"""scripts/rekey_results.py: an entry made under the byte code key moves to the docstring-free one by its
manifest alone; a stale entry is left as it is; a second run changes nothing."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path

import pytest

from posgeom.codekey import _module_file, code_key, module_dependencies
from posgeom.registry import Registry, code_changed

ROOT = Path(__file__).resolve().parent.parent


def _script():
    spec = importlib.util.spec_from_file_location("rekey_results", ROOT / "scripts" / "rekey_results.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_an_entry_of_the_byte_key_moves_by_its_manifest_and_a_stale_one_stays(tmp_path, capsys):
    rekey = _script()
    registry = Registry(tmp_path)
    common = dict(scale="quick", seed=0, device="cpu", code="posgeom.geometry.entries")
    fresh = registry.save("fresh", {"x": 1}, params={"a": 1}, arrays={"D": [[0.0, 1.0]]}, **common)
    stale = registry.save("stale", {"x": 2}, params={"a": 2}, **common)
    registry.restamp(fresh, code_key=rekey.byte_key(fresh.manifest["code_modules"]))
    registry.restamp(stale, code_key="0123456789abcdef")  # made by other code
    assert code_changed(registry.load("fresh", params={"a": 1}, scale="quick").manifest)

    assert rekey.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "moved 1 entries" in out and "quick/stale/" in out
    moved = registry.load("fresh", params={"a": 1}, scale="quick")  # verified against its checksums
    assert not code_changed(moved.manifest) and moved.values == {"x": 1} and moved.arrays["D"].tolist() == [[0, 1]]
    assert {k: v for k, v in moved.manifest.items() if k != "code_key"} == \
        {k: v for k, v in fresh.manifest.items() if k != "code_key"}
    assert registry.load("stale", params={"a": 2}, scale="quick").manifest["code_key"] == "0123456789abcdef"

    assert rekey.main([str(tmp_path)]) == 0  # again: nothing to move
    assert "moved 0 entries to the docstring-free code key; 1 already under it" in capsys.readouterr().out


def _git(*args, cwd):
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_entries_made_by_an_earlier_commit_move_across_a_refactor_with_the_evidence(tmp_path, capsys):
    rekey = _script()
    before = tmp_path / "before"  # the "earlier commit": this checkout's HEAD with a line of code added to one module
    _git("clone", "--quiet", "--shared", str(ROOT), str(before), cwd=tmp_path)
    module = before / "posgeom" / "geometry" / "entries.py"
    module.write_text(module.read_text() + "\n_A_KEYED_EDIT = 1\n")
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "keyed edit", cwd=before)
    roots = ["posgeom.geometry.entries"]
    old_key = rekey.keys_in(before, [roots])[tuple(roots)]
    assert old_key != code_key(roots)

    registry = Registry(tmp_path / "results")
    common = dict(scale="quick", seed=0, device="cpu", code="posgeom.geometry.entries")
    made = registry.restamp(registry.save("made", {"x": 1}, params={}, **common), code_key=old_key)
    other = registry.restamp(registry.save("other", {"x": 2}, params={}, **common), code_key="0123456789abcdef")
    with pytest.raises(SystemExit, match="--evidence is required"):
        rekey.main([str(tmp_path / "results"), "--from", str(before)])

    assert rekey.main([str(tmp_path / "results"), "--from", str(before), "--evidence", "bytes equal at quick"]) == 0
    assert "moved 1 entries" in capsys.readouterr().out
    moved = registry.load("made", params={}, scale="quick")
    assert not code_changed(moved.manifest) and moved.values == {"x": 1}
    assert moved.manifest["restamped"]["from_code_key"] == old_key
    assert moved.manifest["restamped"]["evidence"] == "bytes equal at quick"
    assert len(moved.manifest["restamped"]["from_commit"]) == 40 and made.manifest["files"] == moved.manifest["files"]
    assert registry.load("other", params={}, scale="quick").manifest == other.manifest

    module.write_text(module.read_text() + "# uncommitted\n")
    with pytest.raises(SystemExit, match="uncommitted changes"):
        rekey.main([str(tmp_path / "results"), "--from", str(before), "--evidence", "x"])


def test_entries_move_across_a_change_of_the_keys_definition_without_a_mark_when_the_code_is_the_same(tmp_path,
                                                                                                         capsys):
    rekey = _script()
    before = tmp_path / "before"  # the "earlier commit": the same modules, hashed another way
    _git("clone", "--quiet", "--shared", str(ROOT), str(before), cwd=tmp_path)
    roots = ["posgeom.geometry.entries"]
    for name in ("posgeom.codekey", *module_dependencies(roots)):  # this checkout's code, maybe uncommitted
        path = _module_file(name, ROOT / "posgeom")
        (before / path.relative_to(ROOT)).write_bytes(path.read_bytes())
    keyfile = before / "posgeom" / "codekey.py"
    keyfile.write_text(keyfile.read_text().replace("digest = hashlib.sha256()", 'digest = hashlib.sha256(b"old")'))
    _git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "an older key", cwd=before)
    old_key = rekey.keys_in(before, [roots])[tuple(roots)]
    assert old_key != code_key(roots) and rekey.same_code(roots, before)

    registry = Registry(tmp_path / "results")
    made = registry.restamp(registry.save("made", {"x": 1}, params={},
                                          scale="quick", seed=0, device="cpu", code="posgeom.geometry.entries"),
                            code_key=old_key)
    assert rekey.main([str(tmp_path / "results"), "--from", str(before)]) == 0  # no evidence needed
    assert "moved 1 entries" in capsys.readouterr().out
    moved = registry.load("made", params={}, scale="quick")
    assert not code_changed(moved.manifest) and "restamped" not in moved.manifest
    assert {k: v for k, v in moved.manifest.items() if k != "code_key"} == \
        {k: v for k, v in made.manifest.items() if k != "code_key"}
