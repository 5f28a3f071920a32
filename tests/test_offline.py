"""The offline decision (posgeom.offline) on every combination, and the set-up script that uses it."""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from posgeom import offline
from posgeom.config import PACKAGED_MODEL

REPO = Path(__file__).resolve().parents[1]


def make_data_folder(folder: Path) -> Path:
    for corpus, names in offline.DATA_FILES.items():
        (folder / corpus).mkdir(parents=True, exist_ok=True)
        for name in names:
            (folder / corpus / name).write_bytes(b"")
    return folder


class Probe:
    """A stand-in for the network probe that counts its calls."""

    def __init__(self, reachable: bool):
        self.reachable, self.calls = reachable, 0

    def __call__(self) -> bool:
        self.calls += 1
        return self.reachable


@pytest.fixture
def places(tmp_path, monkeypatch):
    """A data folder, a local model folder, an empty hub cache, and a checkout with nothing beside it."""
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub-cache"))
    model = tmp_path / "model"
    model.mkdir()
    root = tmp_path / "clone" / "repo"
    root.mkdir(parents=True)
    return {"data": make_data_folder(tmp_path / "data"), "model": model, "root": root}


def expected(data_local: bool, model_local: bool, forced: str | None, network: bool):
    """The decision table, written out: (offline, probe called, data problem, model problem)."""
    if forced == "1":
        return True, False, not data_local, not model_local
    if forced == "0":
        return False, False, False, False
    if data_local and model_local:
        return True, False, False, False
    if network:
        return False, True, False, False
    return True, True, not data_local, not model_local


@pytest.mark.parametrize(
    "data_local, model_local, forced, network",
    list(itertools.product([True, False], [True, False], [None, "1", "0"], [True, False])),
)
def test_decision_table(places, data_local, model_local, forced, network):
    environ = {"POSGEOM_PRETRAINED": str(places["model"]) if model_local else "owner/not-cached-model"}
    if data_local:
        environ["POSGEOM_DATA_DIR"] = str(places["data"])
    if forced is not None:
        environ["POSGEOM_OFFLINE"] = forced
    probe = Probe(network)
    decision = offline.decide(environ, probe=probe, root=places["root"])
    want_offline, want_probe, data_problem, model_problem = expected(data_local, model_local, forced, network)
    assert decision.offline is want_offline
    assert probe.calls == int(want_probe)
    assert decision.network == (network if want_probe else None)
    assert decision.model_local is model_local
    assert (decision.data_dir is not None) is data_local
    problems = " | ".join(decision.problems)
    assert ("three ways" in problems) is data_problem
    assert ("is not local" in problems) is model_problem
    variables = decision.variables()
    for name in offline.OFFLINE_VARIABLES:
        assert (variables.get(name) == "1") is want_offline
    assert ("POSGEOM_DATA_DIR" in variables) is data_local
    assert variables["POSGEOM_PRETRAINED"] == environ["POSGEOM_PRETRAINED"]


def test_data_beside_the_checkout_counts_as_local(places):
    make_data_folder(places["root"].parent / "shared" / "data")
    decision = offline.decide({"POSGEOM_PRETRAINED": str(places["model"])}, probe=Probe(False), root=places["root"])
    assert decision.offline and decision.data_origin == "beside the checkout" and not decision.problems
    assert decision.variables()["POSGEOM_DATA_DIR"] == str((places["root"].parent / "shared" / "data").resolve())


def test_incomplete_folders_are_not_local(places):
    beside = make_data_folder(places["root"].parent / "shared" / "data")
    (beside / "imdb" / "test.parquet").unlink()
    env = {"POSGEOM_PRETRAINED": str(places["model"])}
    assert offline.decide(env, probe=Probe(True), root=places["root"]).data_dir is None
    (places["data"] / "sst2" / "validation.parquet").unlink()
    decision = offline.decide({**env, "POSGEOM_DATA_DIR": str(places["data"])}, probe=Probe(True), root=places["root"])
    assert any("lacks sst2/validation.parquet" in p for p in decision.problems)


def test_hf_hub_offline_is_a_request_for_offline(places):
    probe = Probe(True)
    decision = offline.decide({"HF_HUB_OFFLINE": "1", "POSGEOM_PRETRAINED": str(places["model"])}, probe=probe,
                              root=places["root"])
    assert decision.offline and probe.calls == 0 and "HF_HUB_OFFLINE=1" in decision.reason
    assert any("three ways" in p for p in decision.problems)


def test_default_model_is_the_packaged_one_when_installed(places):
    decision = offline.decide({"POSGEOM_DATA_DIR": str(places["data"])}, probe=Probe(False), root=places["root"])
    assert decision.pretrained == PACKAGED_MODEL and decision.model_local and decision.offline


def test_hub_cache_makes_a_hub_model_local(places, tmp_path):
    snapshot = tmp_path / "hub-cache" / "models--owner--cached" / "snapshots" / "abc123"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    assert offline.model_is_local("owner/cached") and not offline.model_is_local("owner/other")


@pytest.mark.parametrize("name, value, match", [
    ("POSGEOM_OFFLINE", "maybe", "is not a boolean"),
    ("POSGEOM_DATA_DIR", "/nonexistent/posgeom-data", "is not a folder"),
])
def test_bad_values_are_rejected(places, name, value, match):
    with pytest.raises(ValueError, match=match):
        offline.decide({name: value}, probe=Probe(True), root=places["root"])


def test_apply_sets_only_what_is_unset(places):
    environ = {"POSGEOM_DATA_DIR": str(places["data"]), "POSGEOM_PRETRAINED": str(places["model"]),
               "TRANSFORMERS_OFFLINE": "0"}
    decision = offline.apply_environment(environ)
    assert decision.offline
    assert environ["HF_HUB_OFFLINE"] == "1" and environ["HF_DATASETS_OFFLINE"] == "1"
    assert environ["TRANSFORMERS_OFFLINE"] == "0"  # the user's own value is kept


def test_hub_probe_reports_an_unreachable_endpoint(monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # discard port: nothing listens
    assert offline.hub_reachable(timeout=1.0) is False


def _clone_like(tmp_path: Path) -> Path:
    """The repository's scripts and package in a folder with no data beside it, and a venv that reuses ours.

    The venv's ``python`` is a wrapper around this interpreter and its install stamp is current, so the
    set-up installs nothing.
    """
    clone = tmp_path / "elsewhere" / "posgeom"
    clone.mkdir(parents=True)
    for name in ("scripts", "posgeom", "requirements"):
        shutil.copytree(REPO / name, clone / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "_toc.yml", "_config.yml"):
        shutil.copy(REPO / name, clone / name)
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    wrapper = venv / "bin" / "python"
    wrapper.write_text(f"#!/bin/sh\nexec {sys.executable} \"$@\"\n")
    wrapper.chmod(0o755)
    want = subprocess.run(
        "cat pyproject.toml requirements/constraints.txt | sha256sum | cut -d' ' -f1",
        shell=True, cwd=clone, capture_output=True, text=True, check=True,
    ).stdout.strip()
    (venv / ".posgeom-install-stamp").write_text(want + "\n")
    return clone


def _clean_env(tmp_path: Path, clone: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("POSGEOM_", "HF_", "TRANSFORMERS_")) and k != "PYTHONPATH"}
    env.update(POSGEOM_VENV=str(tmp_path / "venv"), PYTHONPATH=str(clone), HF_HUB_CACHE=str(tmp_path / "hub"),
               HF_ENDPOINT="http://127.0.0.1:9", **extra)
    return env


def test_book_command_offline_without_data_stops_with_the_three_ways(tmp_path):
    clone = _clone_like(tmp_path)
    shutil.copy(REPO / "scripts" / "book", clone / "scripts" / "book")
    proc = subprocess.run(["bash", "scripts/book"], cwd=clone, env=_clean_env(tmp_path, clone),
                          capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "three ways" in proc.stderr and "POSGEOM_DATA_DIR" in proc.stderr
    assert "posgeom data download" in proc.stderr and "connect to the internet" in proc.stderr
    assert "[book]" not in proc.stdout  # stopped before the build


def test_setup_with_a_data_dir_goes_offline_with_the_packaged_model(tmp_path):
    clone = _clone_like(tmp_path)
    data = make_data_folder(tmp_path / "data")
    proc = subprocess.run(
        ["bash", "-c", "source scripts/_setup.sh && env"], cwd=clone,
        env=_clean_env(tmp_path, clone, POSGEOM_DATA_DIR=str(data)), capture_output=True, text=True, timeout=1800,
    )
    assert proc.returncode == 0, proc.stderr
    env = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)
    assert env["HF_HUB_OFFLINE"] == env["HF_DATASETS_OFFLINE"] == env["TRANSFORMERS_OFFLINE"] == "1"
    assert env["POSGEOM_DATA_DIR"] == str(data.resolve()) and env["POSGEOM_PRETRAINED"] == PACKAGED_MODEL


def test_the_layers_below_corpora_name_exactly_the_real_corpora():
    """``config`` and ``offline`` sit below ``corpora`` and cannot import its ``Corpus``; they must agree with it."""
    from posgeom.config import HUB_DATASETS
    from posgeom.corpora.identifiers import Corpus
    from posgeom.corpora.real import CORPORA, HUB_SPLIT_ROWS
    from posgeom.offline import DATA_FILES

    assert list(HUB_DATASETS) == list(DATA_FILES) == list(CORPORA) == list(HUB_SPLIT_ROWS) == list(Corpus)
    assert all(set(DATA_FILES[c]) == {f"{s}.parquet" for s in CORPORA[c].splits} for c in Corpus)
