"""The results registry under damage, crashes and concurrency (issue 15).

Fault injection: a child process saving an entry kills itself (SIGKILL) at each step of ``Registry.save``
(``POSGEOM_FAULT_INJECT``); a byte is flipped at every offset class of every file type of an entry;
writers and readers run concurrently for a few seconds. Each time the visible result is the old complete
one or the new complete one, and a rerun gives identical numbers.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from posgeom.registry import store as registry_store
from posgeom.cli import main
from posgeom.registry import Registry, Result
from posgeom.storage import FAULT_ENV

REPO = Path(__file__).resolve().parents[1]
PARAMS = {"n": 3}
SAVE_STEPS = (
    "registry-save:tmp-created", "registry-save:files-written", "registry-save:version-renamed",
    "registry-pointer:partial", "registry-pointer:written", "registry-save:pointer-replaced",
)


def values_for(i: int) -> tuple[dict, dict]:
    """A result whose values and arrays agree (so a half-old half-new entry would be caught)."""
    return {"x": i, "stress": i / 7}, {"a": np.full(50, float(i)), "b": np.arange(i + 1)}


def save(reg: Registry, i: int, **kw) -> Result:
    values, arrays = values_for(i)
    return reg.save("demo", values, params=PARAMS, scale="quick", seed=0, device="cpu", arrays=arrays, **kw)


def consistent(result: Result) -> int:
    """The ``i`` of a complete entry; fails when values and arrays disagree."""
    i = result.values["x"]
    values, arrays = values_for(i)
    assert result.values == values
    assert set(result.arrays) == set(arrays)
    for k in arrays:
        np.testing.assert_array_equal(result.arrays[k], arrays[k])
    return i


def compute_5():
    return values_for(5)


def run_5(reg: Registry) -> Result:
    return reg.run("demo", compute_5, params=PARAMS, scale="quick", seed=0, device="cpu")


def child_env(**extra) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO), **extra}
    return env


# ------------------------------------------------------------------------------------ layout, checksums


def test_manifest_lists_every_file_with_its_sha256(tmp_path):
    import hashlib

    saved = save(Registry(tmp_path), 1)
    files = saved.manifest["files"]
    assert set(files) == {"result.json", "arrays.npz"}
    for name, digest in files.items():
        assert hashlib.sha256((saved.path / name).read_bytes()).hexdigest() == digest


def test_entry_without_its_arrays_is_absent_and_recomputed(tmp_path):
    reg = Registry(tmp_path)
    saved = save(reg, 1)
    (saved.path / "arrays.npz").unlink()
    assert not reg.has("demo", params=PARAMS, scale="quick")
    with pytest.raises(KeyError, match="damaged"):
        reg.load("demo", params=PARAMS, scale="quick")
    with pytest.warns(UserWarning, match="damaged.*recomputing"):
        again = run_5(reg)
    assert consistent(again) == 5
    assert consistent(reg.load("demo", params=PARAMS, scale="quick")) == 5


@pytest.mark.parametrize("name", ["result.json", "arrays.npz"])
def test_truncated_file_is_recomputed_not_a_traceback(tmp_path, name):
    reg = Registry(tmp_path)
    saved = save(reg, 1)
    path = saved.path / name
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.warns(UserWarning, match="damaged"):
        assert consistent(run_5(reg)) == 5


def offsets(size: int) -> list[int]:
    """One offset of each class: first byte, header, a quarter, middle, three quarters, trailer, last byte."""
    return sorted({0, min(10, size - 1), size // 4, size // 2, 3 * size // 4, max(0, size - 20), size - 1})


def entry_files(result: Result) -> list[Path]:
    return [result.path / "result.json", result.path / "arrays.npz", result.path / "manifest.json",
            result.path.parent / "CURRENT"]


def test_a_flipped_byte_anywhere_is_detected_or_harmless(tmp_path):
    reg = Registry(tmp_path)
    saved = save(reg, 5)
    for path in entry_files(saved):
        original = path.read_bytes()
        for offset in offsets(len(original)):
            damaged = bytearray(original)
            damaged[offset] ^= 0xFF
            path.write_bytes(bytes(damaged))
            try:
                # either the entry is rejected (absent), or it reads back exactly as saved: never a silent change
                if reg.has("demo", params=PARAMS, scale="quick"):
                    assert consistent(reg.load("demo", params=PARAMS, scale="quick")) == 5
                else:
                    with pytest.raises(KeyError):
                        reg.load("demo", params=PARAMS, scale="quick")
            finally:
                path.write_bytes(original)
    assert consistent(reg.load("demo", params=PARAMS, scale="quick")) == 5


def test_damaged_entry_is_replaced_with_identical_numbers(tmp_path):
    reg = Registry(tmp_path)
    first = run_5(reg)
    raw = bytearray((first.path / "arrays.npz").read_bytes())
    raw[len(raw) // 2] ^= 0x01
    (first.path / "arrays.npz").write_bytes(bytes(raw))
    with pytest.warns(UserWarning, match="damaged"):
        second = run_5(reg)
    assert second.values == first.values
    for k in first.arrays:
        np.testing.assert_array_equal(second.arrays[k], first.arrays[k])


def test_provenance_without_runtime(tmp_path):
    saved = Registry(tmp_path).save("demo", {"x": 1}, params={}, scale="quick", seed=0, device="cpu")
    assert saved.manifest["runtime_s"] is None
    assert "runtime=not recorded" in saved.provenance()
    legacy = Result("demo", "quick", "k", {}, {}, {"scale": "quick"})
    assert "runtime=not recorded" in legacy.provenance()


# ------------------------------------------------------------------------------------ crashes (SIGKILL)

SAVE_SCRIPT = textwrap.dedent("""
    import sys
    import numpy as np
    from posgeom.registry import Registry
    i = int(sys.argv[2])
    values = {"x": i, "stress": i / 7}
    arrays = {"a": np.full(50, float(i)), "b": np.arange(i + 1)}
    Registry(sys.argv[1]).save("demo", values, params={"n": 3}, scale="quick", seed=0, device="cpu", arrays=arrays)
""")


def save_in_child(root: Path, i: int, fault: str | None = None) -> int:
    env = child_env(**({FAULT_ENV: fault} if fault else {}))
    done = subprocess.run([sys.executable, "-c", SAVE_SCRIPT, str(root), str(i)], env=env, capture_output=True,
                          text=True, timeout=1800)
    return done.returncode


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="SIGKILL is POSIX")
@pytest.mark.parametrize("first_write", [False, True], ids=["replacing", "first-write"])
def test_kill_at_every_step_of_save_leaves_old_or_new(tmp_path, first_write):
    for step in SAVE_STEPS:
        root = tmp_path / step.replace(":", "_")
        reg = Registry(root)
        if not first_write:
            save(reg, 1)
        assert save_in_child(root, 2, step) == -signal.SIGKILL, step
        try:
            visible = consistent(reg.load("demo", params=PARAMS, scale="quick"))
        except KeyError:
            visible = None
        # until the pointer is replaced the previous state is visible (the old entry, or none); then the new one
        expected = 2 if step == "registry-save:pointer-replaced" else (None if first_write else 1)
        assert visible == expected, (step, visible)
        # results check sweeps what the killed writer left; the visible entry is untouched
        report = reg.check()
        assert all(e.status in ("ok", "incomplete") for e in report), report
        entry = root / "quick" / "demo"
        leftovers = [p.name for p in entry.rglob("*") if p.name.startswith(".tmp") or p.suffix == ".tmp"]
        assert leftovers == [], (step, leftovers)
        if visible is not None:
            assert consistent(reg.load("demo", params=PARAMS, scale="quick")) == visible
        # a rerun completes the entry with identical numbers
        assert save_in_child(root, 3) == 0
        assert consistent(reg.load("demo", params=PARAMS, scale="quick")) == 3
        key_dir = reg.load("demo", params=PARAMS, scale="quick").path.parent
        current = json.loads((key_dir / "CURRENT").read_text())["version"]
        assert [p.name for p in key_dir.iterdir() if p.name.startswith("v-")] == [current]  # older ones swept


# ------------------------------------------------------------------------------------ concurrency

WRITER = textwrap.dedent("""
    import sys, time
    import numpy as np
    from posgeom.registry import Registry
    reg, end, n = Registry(sys.argv[1]), time.time() + float(sys.argv[2]), 0
    base = int(sys.argv[3])
    while time.time() < end:
        i = base + n % 50
        reg.save("demo", {"x": i, "stress": i / 7}, params={"n": 3}, scale="quick", seed=0, device="cpu",
                 arrays={"a": np.full(50, float(i)), "b": np.arange(i + 1)})
        n += 1
    print(n)
""")

READER = textwrap.dedent("""
    import json, sys, time
    import numpy as np
    from posgeom.registry import Registry
    reg, end = Registry(sys.argv[1]), time.time() + float(sys.argv[2])
    reads = missing = bad = 0
    while time.time() < end:
        try:
            r = reg.load("demo", params={"n": 3}, scale="quick")
        except KeyError:
            missing += 1
            continue
        i = r.values["x"]
        ok = (r.values == {"x": i, "stress": i / 7} and np.array_equal(r.arrays["a"], np.full(50, float(i)))
              and np.array_equal(r.arrays["b"], np.arange(i + 1)))
        bad += not ok
        reads += 1
    print(json.dumps({"reads": reads, "missing": missing, "bad": bad}))
""")


def test_concurrent_writers_and_readers(tmp_path):
    reg = Registry(tmp_path)
    save(reg, 1)
    seconds = "3"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path), seconds, str(base)], env=child_env(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for base in (100, 200)]
    procs += [subprocess.Popen([sys.executable, "-c", READER, str(tmp_path), seconds], env=child_env(),
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=1800) for p in procs]
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err
    writes = [int(out) for out, _ in outs[:2]]
    reads = [json.loads(out) for out, _ in outs[2:]]
    assert all(w > 0 for w in writes)
    assert all(r["reads"] > 0 and r["missing"] == 0 and r["bad"] == 0 for r in reads), reads
    assert consistent(reg.load("demo", params=PARAMS, scale="quick")) in {*range(100, 150), *range(200, 250)}
    assert [e.status for e in reg.check()] == ["ok"]


# ------------------------------------------------------------------------------------ posgeom results check


def test_results_check_reports_and_sweeps(tmp_path, monkeypatch, capsys):
    reg = Registry(tmp_path)
    ok = save(reg, 1)
    damaged = reg.save("other", {"x": 2}, params={"k": 1}, scale="quick", seed=0, device="cpu")
    (damaged.path / "result.json").write_text('{"x": 3}')
    current = registry_store.code_key
    monkeypatch.setattr(registry_store, "code_key", lambda roots: "0" * 16)
    stale = reg.save("stale", {"x": 4}, params={}, scale="quick", seed=0, device="cpu")
    monkeypatch.setattr(registry_store, "code_key", current)
    orphan = ok.path.parent / ".tmp-killed"
    orphan.mkdir()
    (orphan / "result.json").write_text("{")
    legacy = tmp_path / "quick" / "legacy" / "abc"
    legacy.mkdir(parents=True)
    (legacy / "manifest.json").write_text("{}")
    (legacy / "result.json").write_text("{}")
    old_orphan = tmp_path / "quick" / "legacy" / ".abc-old-xyz"
    old_orphan.mkdir()
    code = main(["results", "check", "--results-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1  # a damaged entry
    assert not orphan.exists()  # swept
    assert old_orphan.exists()  # an older posgeom's leftover may hold the only copy: never deleted
    lines = {line.split()[0]: line for line in out.splitlines()[:-1]}
    assert set(lines) == {"damaged", "stale", "legacy", "orphan"}
    assert "other" in lines["damaged"] and "result.json" in lines["damaged"]
    assert stale.key in lines["stale"]
    assert "1 ok, 1 stale, 1 damaged, 1 legacy, 1 orphan" in out.splitlines()[-1]
    # the damaged entry is treated as absent and recomputed by run
    with pytest.warns(UserWarning, match="damaged"):
        reg.run("other", lambda: {"x": 2}, params={"k": 1}, scale="quick", seed=0, device="cpu")
    assert main(["results", "check", "--results-dir", str(tmp_path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["counts"] == {"ok": 2, "stale": 1, "legacy": 1, "orphan": 1}


def test_results_check_on_missing_folder_and_bad_scale(tmp_path, capsys):
    assert main(["results", "check", "--results-dir", str(tmp_path / "none")]) == 0
    assert "no entries" in capsys.readouterr().out
    assert main(["results", "check", "--results-dir", str(tmp_path), "--scale", "huge"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "valid scales" in err


def test_lock_serialises_writers(tmp_path):
    """While one process holds an entry's lock, another writer waits for it (and then writes)."""
    from filelock import FileLock

    reg = Registry(tmp_path)
    saved = save(reg, 1)
    lock = FileLock(str(saved.path.parent / ".lock"))
    with lock:
        child = subprocess.Popen([sys.executable, "-c", SAVE_SCRIPT, str(tmp_path), "2"], env=child_env(),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(1.5)
        assert child.poll() is None  # waiting for the lock
        assert consistent(reg.load("demo", params=PARAMS, scale="quick")) == 1
    assert child.wait(timeout=1800) == 0
    assert consistent(reg.load("demo", params=PARAMS, scale="quick")) == 2


def test_an_entry_of_the_old_layout_is_absent_until_replaced(tmp_path):
    from posgeom.registry import params_key

    folder = tmp_path / "quick" / "demo" / params_key(PARAMS)
    folder.mkdir(parents=True)
    for name in ("manifest.json", "result.json"):
        (folder / name).write_text(json.dumps({"x": 0}))
    reg = Registry(tmp_path)
    assert not reg.has("demo", params=PARAMS, scale="quick")
    with pytest.warns(UserWarning, match="older posgeom"):
        assert consistent(run_5(reg)) == 5
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith("v-")) == [".lock", "CURRENT"]


# ------------------------------------------------------------------------------------ symbolic links, --no-sweep


def _outside_with_leftovers(folder: Path) -> list[Path]:
    """A folder outside the registry holding what a sweep removes inside an entry."""
    folder.mkdir(parents=True)
    (folder / ".tmp-keep").mkdir()
    (folder / ".tmp-keep" / "data").write_text("not the registry's")
    (folder / ".CURRENT.abc.tmp").write_text("not the registry's")
    (folder / "v-0123456789abcdef").mkdir()
    return sorted(folder.iterdir())


@pytest.mark.parametrize("level", ["entry", "experiment", "scale"])
def test_results_check_never_follows_a_symlink_out_of_the_registry(tmp_path, capsys, level):
    """git stores symlinks: a committed link in a results folder must not make a sweep delete files outside it."""
    reg = Registry(tmp_path / "results")
    save(reg, 1)
    outside = tmp_path / "outside"
    before = _outside_with_leftovers(outside / "quick" / "demo" / "0123456789abcdef")
    target = {"entry": outside / "quick" / "demo" / "0123456789abcdef", "experiment": outside / "quick" / "demo",
              "scale": outside / "quick"}[level]
    link = {"entry": reg.root / "quick" / "demo" / "0123456789abcdef", "experiment": reg.root / "quick" / "linked",
            "scale": reg.root / "paper"}[level]
    link.symlink_to(target, target_is_directory=True)
    code = main(["results", "check", "--results-dir", str(reg.root)])
    out = capsys.readouterr().out
    assert sorted((outside / "quick" / "demo" / "0123456789abcdef").iterdir()) == before
    assert (outside / "quick" / "demo" / "0123456789abcdef" / ".tmp-keep" / "data").is_file()
    assert not (target / ".lock").exists()
    assert code == 1
    assert "symlink" in out and "not a registry entry (symlink" in out
    assert out.splitlines()[-1].endswith("1 ok, 1 symlink")
    # the real entry is still ok, and nothing reads or writes through the link
    assert [e.status for e in reg.check()].count("ok") == 1


def test_a_symlinked_entry_or_version_is_never_read_or_written(tmp_path):
    reg = Registry(tmp_path / "results")
    saved = save(reg, 1)
    outside = tmp_path / "outside"
    _outside_with_leftovers(outside)
    # a version folder replaced by a link to a copy outside: not read
    version = saved.path
    copy = tmp_path / "copy"
    version.rename(copy)
    version.symlink_to(copy, target_is_directory=True)
    with pytest.raises(KeyError, match="symbolic link"):
        reg.load("demo", params=PARAMS, scale="quick")
    # an entry folder replaced by a link: a save refuses to write or sweep through it
    entry = version.parent
    import shutil

    shutil.rmtree(entry)
    entry.symlink_to(outside, target_is_directory=True)
    with pytest.raises(ValueError, match="symbolic link"):
        save(reg, 2)
    assert sorted(p.name for p in outside.iterdir()) == [".CURRENT.abc.tmp", ".tmp-keep", "v-0123456789abcdef"]


def test_results_check_no_sweep_reports_leftovers_not_plain_ok(tmp_path, capsys):
    reg = Registry(tmp_path)
    saved = save(reg, 1)
    leftover = saved.path.parent / ".tmp-killed"
    leftover.mkdir()
    assert main(["results", "check", "--results-dir", str(tmp_path), "--no-sweep"]) == 0
    out = capsys.readouterr().out
    assert leftover.exists()  # --no-sweep deletes nothing
    first, last = out.splitlines()[0], out.splitlines()[-1]
    assert first.startswith("leftovers") and ".tmp-killed" in first and "without --no-sweep" in first
    assert last.endswith("1 leftovers") and " ok" not in last
    assert [e.status for e in reg.check(sweep=False)] == ["leftovers"]
    # a sweep removes them and the entry is ok
    assert main(["results", "check", "--results-dir", str(tmp_path)]) == 0
    assert not leftover.exists()
    assert capsys.readouterr().out.splitlines()[-1].endswith("1 ok")


# ------------------------------------------------------------------------------------ crafted arrays


def crafted_npz(shape=(10**12,)) -> bytes:
    """An .npz whose one member declares ``shape`` float64 values (8 TB by default) and holds 16 bytes."""
    import io
    import zipfile

    member = io.BytesIO()
    np.lib.format.write_array_header_1_0(member, {"descr": "<f8", "fortran_order": False, "shape": shape})
    member.write(b"\0" * 16)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("a.npy", member.getvalue())
    return out.getvalue()


def test_read_npz_checks_declared_sizes_before_allocating():
    import io

    from posgeom.storage import read_npz

    with pytest.raises(ValueError, match=r"declares shape \(1000000000000,\) of float64 \(8000000000000 bytes\)"):
        read_npz(crafted_npz())
    buffer = io.BytesIO()
    np.savez_compressed(buffer, a=np.arange(5.0), b=np.eye(3, dtype=np.int32), c=np.zeros((0, 4)))
    got = read_npz(buffer.getvalue())
    assert set(got) == {"a", "b", "c"} and got["b"].dtype == np.int32 and got["c"].shape == (0, 4)
    np.testing.assert_array_equal(got["a"], np.arange(5.0))
    buffer = io.BytesIO()
    np.savez(buffer, o=np.array([{"x": 1}], dtype=object))
    with pytest.raises(ValueError, match="Python objects"):
        read_npz(buffer.getvalue())
    with pytest.raises(ValueError, match="not an .npz"):
        read_npz(b"not a zip")


def test_a_forged_entry_with_a_crafted_npz_is_damaged_not_a_memory_error(tmp_path):
    """Even an entry whose manifest and pointer were rewritten to match a crafted arrays.npz (so every
    checksum agrees) is reported damaged before any memory is allocated for its arrays."""
    from posgeom.storage import sha256_bytes

    reg = Registry(tmp_path)
    saved = save(reg, 1)
    entry = saved.path.parent
    data = crafted_npz()
    manifest = {**saved.manifest, "files": {**saved.manifest["files"], "arrays.npz": sha256_bytes(data)}}
    manifest_bytes = json.dumps(manifest, indent=1, sort_keys=True).encode()
    digest = sha256_bytes(manifest_bytes)
    forged = entry / f"v-{digest[:16]}"
    forged.mkdir()
    (forged / "result.json").write_bytes((saved.path / "result.json").read_bytes())
    (forged / "arrays.npz").write_bytes(data)
    (forged / "manifest.json").write_bytes(manifest_bytes)
    (entry / "CURRENT").write_text(json.dumps({"format": 2, "version": forged.name, "manifest_sha256": digest}))
    with pytest.raises(KeyError, match=r"declares shape \(1000000000000,\) of float64 \(8000000000000 bytes\)"):
        reg.load("demo", params=PARAMS, scale="quick")
    assert [e.status for e in reg.check(sweep=False)] == ["damaged"]


def test_restamp_changes_the_manifest_only_and_never_what_names_the_entry(tmp_path):
    registry = Registry(tmp_path)
    saved = registry.save("exp", {"x": 1}, params={"a": 1}, scale="quick", seed=0, device="cpu",
                          arrays={"D": np.eye(2)}, code="posgeom.geometry.entries")
    moved = registry.restamp(saved, code_key="0123456789abcdef")
    assert moved.manifest == {**saved.manifest, "code_key": "0123456789abcdef"}
    assert moved.values == saved.values and np.array_equal(moved.arrays["D"], np.eye(2))
    assert moved.path != saved.path and not saved.path.exists()  # a new version replaced the old one
    for field in ("files", "params", "key", "experiment", "scale", "format"):
        with pytest.raises(ValueError, match=f"not {field}; save the result again"):
            registry.restamp(moved, **{field: "x"})
    assert registry.load("exp", params={"a": 1}, scale="quick").manifest == moved.manifest
