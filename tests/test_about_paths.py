"""posgeom.about() prints no machine's absolute folders (they would end up on the book's pages)."""

from __future__ import annotations

import io
import sys
import tempfile
from pathlib import Path

from posgeom.about import about, shown_path
from posgeom.config import get_settings


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


def test_the_innermost_folder_names_a_path(tmp_path, monkeypatch):
    """A virtual environment inside the checkout is shown as the environment, not as a checkout folder."""
    repo = tmp_path / "repo"
    (repo / "posgeom").mkdir(parents=True)
    (repo / "_toc.yml").write_text("root: intro\n")
    monkeypatch.chdir(repo)
    monkeypatch.setattr(sys, "prefix", str(repo / ".venv"))
    assert shown_path(repo / ".venv" / "lib") == str(Path("<python env>") / "lib")
    assert shown_path(repo / "results") == str(Path(".") / "results")
