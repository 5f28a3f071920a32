"""posgeom.about() prints no machine's absolute folders (they would end up on the book's pages)."""

from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from posgeom.about import about, data_source, shown_path
from posgeom.config import get_settings
from posgeom.offline import DATA_FILES

REPO = Path(__file__).resolve().parents[1]


def test_shown_path_hides_absolute_folders(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home" / "data").mkdir(parents=True)
    assert shown_path(tmp_path / "home" / "data") in ("~/data", str(Path("<tmp>", *(tmp_path / "home" / "data").relative_to(Path(tempfile.gettempdir()).resolve()).parts)))
    assert shown_path(Path(sys.prefix) / "lib") == str(Path("<python env>") / "lib")
    assert shown_path(Path(tempfile.gettempdir()) / "x" / "y") == str(Path("<tmp>") / "x" / "y")
    assert shown_path("/srv/build/abc/data") == str(Path("…", "data"))
    repo = Path(__file__).resolve().parents[1]
    monkeypatch.chdir(repo / "notebooks")
    assert shown_path(repo / "results") == str(Path(".") / "results")


def test_about_prints_no_absolute_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("POSGEOM_RESULTS_DIR", str(tmp_path / "results"))
    (tmp_path / "data").mkdir()
    monkeypatch.setenv("POSGEOM_DATA_DIR", str(tmp_path / "data"))
    out = io.StringIO()
    info = about(get_settings(), file=out)
    assert str(tmp_path) not in out.getvalue()
    assert info["results_dir"] == str(tmp_path / "results")  # the returned dict keeps full paths
    assert info["data_dir"] == str(tmp_path / "data")


def test_data_folder_is_named_by_where_it_was_found(tmp_path):
    assert data_source(None) == "the hub"
    assert data_source(tmp_path) == "POSGEOM_DATA_DIR"


def _clone(where: Path) -> Path:
    """A checkout at ``where`` (the package, the book's table of contents) with the data folder beside it
    (``../shared/data``, every file present), as a clone placed there would have."""
    shutil.copytree(REPO / "posgeom", where / "posgeom", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "_toc.yml", where / "_toc.yml")
    (where / "notebooks").mkdir()
    for corpus, names in DATA_FILES.items():
        (where.parent / "shared" / "data" / corpus).mkdir(parents=True, exist_ok=True)
        for name in names:
            (where.parent / "shared" / "data" / corpus / name).write_bytes(b"")
    return where


@pytest.mark.parametrize("place", ["tmp", "home"])
def test_about_in_a_clone_under_tmp_or_home_prints_no_machine_path(tmp_path, place):
    """The getting-started page prints posgeom.about() from a kernel in notebooks/: from a clone under the
    temporary folder or the home folder the output names no folder of the machine, and the data folder only
    by where it was found (issue 26: the page showed "<tmp>/…/shared/data")."""
    home = tmp_path / "home"
    home.mkdir()
    clone = _clone((home if place == "home" else tmp_path) / "work" / "posgeom")
    env = {k: v for k, v in os.environ.items() if not k.startswith("POSGEOM_") and k != "PYTHONPATH"}
    env.update(HOME=str(home), PYTHONPATH=str(clone), POSGEOM_PROGRESS="0", HF_HUB_OFFLINE="1",
               PYTHONDONTWRITEBYTECODE="1")
    done = subprocess.run([sys.executable, "-c", "import posgeom; posgeom.about(posgeom.get_settings())"],
                          cwd=clone / "notebooks", env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "data_dir       the data folder beside the checkout" in out
    assert "local: the data folder beside the checkout, sst2/" in out
    for machine_path in (str(tmp_path), str(clone), str(home), tempfile.gettempdir() + "/", "/tmp/", "shared/",
                         str(Path.home()) + "/", str(Path(sys.prefix).resolve()) + "/"):
        assert machine_path not in out, f"about() prints {machine_path}:\n{out}"
    assert not re.search(r"(^|[\s:(])/\w", out, re.MULTILINE), f"about() prints an absolute path:\n{out}"


def test_the_innermost_folder_names_a_path(tmp_path, monkeypatch):
    """A virtual environment inside the checkout is shown as the environment, not as a checkout folder."""
    repo = tmp_path / "repo"
    (repo / "posgeom").mkdir(parents=True)
    (repo / "_toc.yml").write_text("root: intro\n")
    monkeypatch.chdir(repo)
    monkeypatch.setattr(sys, "prefix", str(repo / ".venv"))
    assert shown_path(repo / ".venv" / "lib") == str(Path("<python env>") / "lib")
    assert shown_path(repo / "results") == str(Path(".") / "results")
