"""The README's plain-pip path: a wheel built with `python -m build`, installed into a new venv, runs a
geometry cell of a downloaded (converted) chapter offline, away from any checkout; and the wheel declares
ranges, not pins, so that installing it keeps the PyTorch an environment already has.

The new venvs see this environment's site-packages through a ``.pth`` line (so nothing large is
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
from email.parser import Parser
from pathlib import Path

import pytest

from posgeom.notebooks import write_plain_notebook

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


#: Dependencies that environments commonly have already (Colab, conda, a lab's image): the wheel must
#: never pin them exactly, or installing posgeom would replace the user's copy.
PREINSTALLED = ("torch", "numpy", "scipy", "pandas", "matplotlib", "transformers", "datasets")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built from a copy of the sources (the build writes egg-info and build/ beside them)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    shutil.copytree(REPO / "posgeom", src / "posgeom", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp / "dist"),
                    str(src)], check=True, capture_output=True, text=True, timeout=1800)
    (built,) = (tmp / "dist").glob("posgeom-*.whl")
    return built


def wheel_requirements(wheel: Path) -> list[str]:
    """The ``Requires-Dist`` lines of the wheel's METADATA."""
    with zipfile.ZipFile(wheel) as zf:
        (name,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(zf.read(name).decode())
    return metadata.get_all("Requires-Dist") or []


def exact_pins(requirements: list[str], names=None) -> list[str]:
    """The requirements (among ``names``, default all) that admit one version only (``==``/``===`` without a
    wildcard)."""
    from packaging.requirements import Requirement

    out = []
    for line in requirements:
        req = Requirement(line)
        if (names is None or req.name.lower() in names) and any(s.operator in ("==", "===") and not s.version.endswith(".*")
                                             for s in req.specifier):
            out.append(line)
    return out


def test_exact_pins_are_found():
    # the oracle of the metadata test: what it must flag, and what it must let through
    lines = ['torch==2.13.0', 'numpy (==2.4.6)', 'pandas===3.1.1; extra == "nlp"', 'scipy>=1.11,<2',
             'torch>=2.5,<3', 'numba==0.68.1', 'transformers==5.*']
    assert exact_pins(lines, PREINSTALLED) == ['torch==2.13.0', 'numpy (==2.4.6)', 'pandas===3.1.1; extra == "nlp"']
    assert exact_pins(lines) == exact_pins(lines, PREINSTALLED) + ['numba==0.68.1']


def test_the_wheel_pins_no_dependency_exactly(wheel):
    requirements = wheel_requirements(wheel)
    assert any(r.startswith("torch") for r in requirements)
    # first the dependencies environments commonly have, then any other: requirements/constraints.txt pins them
    assert not exact_pins(requirements, PREINSTALLED), f"exact pins: {exact_pins(requirements, PREINSTALLED)}"
    assert not exact_pins(requirements), f"exact pins in the wheel's metadata: {exact_pins(requirements)}"


def _borrowing_venv(path: Path) -> Path:
    """A venv without pip that sees this environment's site-packages through a ``.pth`` line; its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=1800)
    python = path / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    (site / "borrowed.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def _pip_install(python: Path, wheel: Path) -> subprocess.CompletedProcess:
    """``pip install --no-index wheel[nlp]`` into the venv of ``python``: every dependency must already be there
    (no configuration file is read, so no machine's find-links folder of wheels can serve one either)."""
    bare = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PIP_"))}
    bare["PIP_CONFIG_FILE"] = os.devnull
    return subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-index",
                           "--disable-pip-version-check", f"{wheel}[nlp]"], env=bare, capture_output=True,
                          text=True, timeout=1800)


def _torch_seen_by(python: Path) -> tuple[str, str]:
    code = "import importlib.metadata as m; d = m.distribution('torch'); print(d.version); print(d.locate_file(''))"
    out = subprocess.run([str(python), "-c", code], check=True, capture_output=True, text=True).stdout.split("\n")
    return out[0], out[1]


def test_installing_the_wheel_keeps_the_torch_an_environment_has(wheel, tmp_path):
    import importlib.metadata

    # 1. an environment that holds the project's own torch (a CPU build here): pip keeps it, installs nothing
    python = _borrowing_venv(tmp_path / "project")
    before = _torch_seen_by(python)
    assert before[0] == importlib.metadata.version("torch")
    done = _pip_install(python, wheel)
    assert done.returncode == 0, done.stderr[-3000:]
    assert _torch_seen_by(python) == before
    assert "Requirement already satisfied: torch" in done.stdout

    # 2. an environment with another torch release inside posgeom's range (as Colab has): kept as well, where an
    # exact pin would make pip look for the pinned release (and, with an index, download several GB)
    python = _borrowing_venv(tmp_path / "colab")
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    other = "2.99.0" if importlib.metadata.version("torch").split("+")[0] != "2.99.0" else "2.98.0"
    info = site / f"torch-{other}.dist-info"  # the venv's own site-packages comes before the borrowed one
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch\nVersion: {other}\n")
    (info / "RECORD").write_text("")
    (info / "INSTALLER").write_text("pip\n")
    assert _torch_seen_by(python)[0] == other
    done = _pip_install(python, wheel)
    assert done.returncode == 0, done.stderr[-3000:]
    assert _torch_seen_by(python)[0] == other and info.is_dir()
    assert "Requirement already satisfied: torch" in done.stdout and not (site / "torch").exists()


def test_wheel_installs_and_runs_a_downloaded_chapter_offline(wheel, tmp_path):
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
