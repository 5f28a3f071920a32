"""What a manifest records about how a result was made (issue 26): the command as the user typed it, with
no machine path, and a commit that reproduces it — a paper-scale result from a checkout with uncommitted
changes to the package or the chapters is refused unless ``--allow-dirty`` / ``POSGEOM_ALLOW_DIRTY=1``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from posgeom.cli import main
from posgeom.registry import (
    ALLOW_DIRTY_ENV, COMMAND_ENV, Registry, UncommittedChangesError, command_line, git_commit, manifest,
    require_committed, uncommitted_changes,
)

#: An absolute path in a manifest's text (POSIX, home or Windows), as the committed-results test looks for it.
ABSOLUTE = r'(^|[\s"=:,(\'])(~|[A-Za-z]:)?[/\\][A-Za-z0-9_.-]'


@pytest.mark.parametrize("argv, environ, expected", [
    (["/work/wt/paper/posgeom/cli.py", "reproduce", "--scale", "paper", "--only", "corpus-geometry"], {},
     "posgeom reproduce --scale paper --only corpus-geometry"),
    (["/home/u/.venv/bin/posgeom", "reproduce", "--cpu-parts", "--scale", "paper"], {},
     "posgeom reproduce --cpu-parts --scale paper"),
    (["/srv/x/posgeom/__main__.py", "counts", "--data-dir=/tmp/abc/data", "--out", "/home/u/c.npz"], {},
     "posgeom counts --data-dir=…/data --out …/c.npz"),
    (["/srv/x/posgeom/experiments/__main__.py", "zoo"], {}, "posgeom experiments zoo"),
    (["/work/main/.venv/lib/python3.11/site-packages/ipykernel_launcher.py", "-f", "/root/kernel-1.json"], {},
     "Jupyter kernel (jupyter-book build, nbclient or Jupyter; notebook not named)"),
    (["/x/ipykernel_launcher.py", "-f", "/root/k.json"], {"JPY_SESSION_NAME": "/home/u/notebooks/zoo.ipynb"},
     "notebook zoo.ipynb"),
    (["/x/ipykernel_launcher.py"], {COMMAND_ENV: "posgeom reproduce --scale paper (notebook zoo.md)"},
     "posgeom reproduce --scale paper (notebook zoo.md)"),
    (["/opt/venv/bin/pytest", "tests/test_x.py", "-k", "a b"], {}, "pytest tests/test_x.py -k 'a b'"),
    (["-c"], {}, "python -c …"),
    ([""], {}, "python (interactive)"),
])
def test_command_line_is_what_the_user_typed_without_paths(argv, environ, expected):
    assert command_line(argv, environ) == expected


def test_a_manifest_records_the_command_not_the_launcher(tmp_path, monkeypatch):
    monkeypatch.delenv(COMMAND_ENV, raising=False)
    monkeypatch.setattr(sys, "argv", ["/work/main/.venv/lib/python3.11/site-packages/ipykernel_launcher.py", "-f",
                                      str(tmp_path / "kernel.json")])
    saved = Registry(tmp_path).save("demo", {"x": 1}, params={}, scale="quick", seed=0, device="cpu")
    text = (saved.path / "manifest.json").read_text()
    assert "argv" not in saved.manifest and saved.manifest["command"].startswith("Jupyter kernel")
    import re

    assert not re.search(ABSOLUTE, text), text


def _git(repo, *args):
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo, check=True,
                   capture_output=True, timeout=600)


@pytest.fixture
def checkout(tmp_path):
    """A git checkout with the package, a chapter and committed results."""
    repo = tmp_path / "repo"
    for name, text in (("posgeom/a.py", "x = 1\n"), ("notebooks/c.md", "# c\n"), ("results/paper/r.json", "{}")):
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "first")
    return repo


def test_only_changes_to_the_package_or_the_chapters_make_a_checkout_dirty(checkout):
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=checkout, capture_output=True, text=True,
                          timeout=600).stdout.strip()
    assert uncommitted_changes(checkout) == [] and git_commit(checkout) == head
    (checkout / "results" / "paper" / "r.json").write_text('{"x": 1}')  # writing results is no change of code
    (checkout / "README.md").write_text("notes")
    assert uncommitted_changes(checkout) == [] and git_commit(checkout) == head
    (checkout / "posgeom" / "a.py").write_text("x = 2\n")
    (checkout / "notebooks" / "new.md").write_text("# new\n")  # untracked chapters count too
    assert uncommitted_changes(checkout) == ["M posgeom/a.py", "?? notebooks/new.md"]
    assert git_commit(checkout) == head + "+dirty"
    assert uncommitted_changes(checkout.parent) is None  # no checkout there


@pytest.fixture
def dirty(monkeypatch):
    """The package's checkout has an uncommitted change, and nothing allows it."""
    monkeypatch.setattr(manifest, "uncommitted_changes", lambda path=None: ["M posgeom/geometry/mds.py"])
    monkeypatch.delenv(ALLOW_DIRTY_ENV, raising=False)


def test_paper_results_from_a_dirty_checkout_are_refused_unless_allowed(tmp_path, dirty, monkeypatch):
    reg = Registry(tmp_path)
    with pytest.raises(UncommittedChangesError, match="uncommitted changes") as err:
        reg.save("demo", {"x": 1}, params={}, scale="paper", seed=0, device="cpu")
    assert "\n" not in str(err.value) and "--allow-dirty" in str(err.value) and "posgeom/geometry/mds.py" in str(err.value)
    assert not (tmp_path / "paper").exists()  # nothing written
    computed = []
    with pytest.raises(UncommittedChangesError):  # refused before hours of computing, not after
        reg.run("demo", lambda: computed.append(1) or {"x": 1}, params={}, scale="paper", seed=0, device="cpu")
    assert computed == []
    reg.save("demo", {"x": 1}, params={}, scale="quick", seed=0, device="cpu")  # quick results: not committed
    monkeypatch.setenv(ALLOW_DIRTY_ENV, "1")
    require_committed("paper")
    assert reg.save("demo", {"x": 1}, params={}, scale="paper", seed=0, device="cpu").values == {"x": 1}


def test_reproduce_at_paper_scale_is_refused_before_any_chapter_runs(tmp_path, dirty, capsys):
    from posgeom.reproduce import CHAPTERS, reproduce

    (tmp_path / "notebooks").mkdir()
    chapter = CHAPTERS[0]
    (tmp_path / "notebooks" / f"{chapter.slug}.md").write_text("# x\n")
    ran = []
    with pytest.raises(UncommittedChangesError):
        reproduce("paper", only=[chapter.slug], device="cpu", notebooks_dir=tmp_path / "notebooks",
                  results_dir=tmp_path / "results", out=lambda line: None,
                  execute=lambda *a, **k: ran.append(a) or {})
    assert ran == []


def test_cli_allow_dirty_reaches_the_workers(dirty, monkeypatch):
    import os

    import posgeom.reproduce as rp

    seen = []
    monkeypatch.setattr(rp, "run_cpu_part", lambda entry, kwargs, scale: seen.append(os.environ.get(ALLOW_DIRTY_ENV)))
    assert main(["reproduce", "--cpu-part", "m:f", "{}"]) == 0
    assert main(["reproduce", "--allow-dirty", "--cpu-part", "m:f", "{}"]) == 0
    assert seen == [None, "1"]


def test_kernels_record_the_reproduce_command_and_their_chapter(tmp_path, monkeypatch):
    from posgeom.reproduce import Chapter, Estimate, reproduce

    monkeypatch.delenv(COMMAND_ENV, raising=False)
    monkeypatch.setattr(sys, "argv", ["/abs/posgeom/cli.py", "reproduce", "--only", "fake-a"])
    chapters = (Chapter("fake-a", "Fake A", ("C7",), Estimate(0.1, 0.1), Estimate(0.5, 1), False),)
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "fake-a.md").write_text("# a\n")
    seen = []

    def execute(path, *, env, **kwargs):
        seen.append(env[COMMAND_ENV])
        return {"rss_bytes": None, "gpu_bytes": None}

    reproduce("quick", chapters=chapters, device="cpu", notebooks_dir=tmp_path / "notebooks",
              results_dir=tmp_path / "results", out=lambda line: None, execute=execute)
    assert seen == ["posgeom reproduce --only fake-a (notebook fake-a.md)"]
    runs = Registry(tmp_path / "results").entries("chapter_runs")
    assert [json.loads(json.dumps(r.manifest))["command"] for r in runs] == ["posgeom reproduce --only fake-a"]
