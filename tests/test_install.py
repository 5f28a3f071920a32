"""The README's plain-pip path: a wheel built with `python -m build`, installed into a new venv, runs a
geometry cell of a downloaded (converted) chapter offline, away from any checkout.

The new venv sees this environment's site-packages through a ``.pth`` line (so nothing large is
downloaded), but not its editable posgeom: what runs is the wheel's own contents.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from posgeom.notebooks import write_plain_notebook

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def test_wheel_installs_and_runs_a_downloaded_chapter_offline(tmp_path):
    # build the wheel from a copy of the sources (the build writes egg-info and build/ beside them)
    src = tmp_path / "src"
    shutil.copytree(REPO / "posgeom", src / "posgeom", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path / "dist"),
                    str(src)], check=True, capture_output=True, text=True, timeout=1800)
    (wheel,) = (tmp_path / "dist").glob("posgeom-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("posgeom/corpora/checksums.json", "posgeom/notebooks.py", "posgeom/offline.py",
                   "posgeom/geometry/__init__.py"):
        assert needed in names, needed
    assert not any(n.startswith(("tests/", "notebooks/", "book/")) for n in names)

    # a new venv that borrows this environment's packages, then the wheel alone
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=1800)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    # installed before the borrowed packages are visible, so pip sees an empty venv (and never touches ours)
    bare = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
                    "--disable-pip-version-check", "--quiet", str(wheel)], check=True, timeout=1800, env=bare)
    assert (site / "posgeom" / "notebooks.py").is_file()
    (site / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")

    # the chapter as the site offers it, run cell by cell away from the checkout, offline
    notebook = write_plain_notebook(REPO / "notebooks" / "getting-started.md", tmp_path / "getting-started.ipynb")
    cells = [c for c in json.loads(notebook.read_text())["cells"] if c["cell_type"] == "code"]
    assert cells[0]["metadata"]["tags"] == ["install-posgeom"]  # the download's first cell installs posgeom ...
    code = ["".join(c["source"]) for c in cells[1:]]  # ... which is installed here already
    assert "largest distance" in code[1]  # the chapter's first geometry cell
    script = tmp_path / "run.py"
    script.write_text(
        "import posgeom, sys\n"
        "print('posgeom from', posgeom.__file__)\n"
        f"cells = {json.dumps(code[:2])}\n"
        "scope = {}\n"
        "for cell in cells:\n"
        "    exec(compile(cell, 'cell', 'exec'), scope)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("POSGEOM_", "PYTHON", "HF_", "VIRTUAL_ENV"))}
    env.update(POSGEOM_OFFLINE="1", HF_ENDPOINT="http://127.0.0.1:9", MPLBACKEND="agg", POSGEOM_PROGRESS="0",
               POSGEOM_RESULTS_DIR=str(tmp_path / "results"), POSGEOM_CACHE_DIR=str(tmp_path / "cache"))
    run = tmp_path / "elsewhere"
    run.mkdir()
    proc = subprocess.run([str(python), str(script)], cwd=run, env=env, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    first = proc.stdout.splitlines()[0]
    assert first.startswith("posgeom from ") and str(site) in first, first
    assert "largest distance" in proc.stdout and "5000 sequences, 32 positions" in proc.stdout
