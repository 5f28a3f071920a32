"""benchmarks/chapter_times.py: the chapters' measured times from a build's jupyter-cache."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import nbformat
import pytest

REPO = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("chapter_times", REPO / "benchmarks" / "chapter_times.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cache_run(cache_dir: Path, uri: Path, seconds: float, marker: str, peak: float | None = None) -> None:
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(f"x = {marker!r}")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    get_cache(str(cache_dir)).cache_notebook_bundle(
        CacheBundleIn(nb, str(uri), data={"execution_seconds": seconds, "peak_rss_bytes": peak}), check_validity=False)


def test_times_come_from_the_latest_cache_record_of_each_chapter(tmp_path):
    cache = tmp_path / "cache"
    _cache_run(cache, tmp_path / "notebooks" / "real-corpora.md", 500.0, "old", 3.0e9)
    _cache_run(cache, tmp_path / "notebooks" / "real-corpora.md", 403.24, "new", 1.944e9)  # a later build
    _cache_run(cache, tmp_path / "notebooks" / "theorem1-necessity.md", 58.0, "t1")  # memory not measured
    _cache_run(cache, tmp_path / "summary" / "does-the-paper-hold-up.md", 20.0, "s")  # not a chapter
    script = _script()
    assert script.cached_times(cache) == {"real-corpora": 403.2, "theorem1-necessity": 58.0}
    out = tmp_path / "book" / "chapter-times.json"
    out.parent.mkdir()
    assert script.main(["--cache", str(cache), "--out", str(out)]) == 0
    document = json.loads(out.read_text())
    assert document["seconds"] == {"real-corpora": 403.2, "theorem1-necessity": 58.0}
    from posgeom.timings import chapter_times

    assert chapter_times(tmp_path) == document["seconds"]  # what the book reads back
    assert document["peak_memory_gb"] == {"real-corpora": 1.94}
    from posgeom.timings import chapter_memory

    assert chapter_memory(tmp_path) == {"real-corpora": 1.94}


def test_no_cache_is_a_clear_error(tmp_path):
    with pytest.raises(SystemExit, match="build the book first"):
        _script().cached_times(tmp_path / "nowhere")


def test_the_slowest_cells_come_from_the_seconds_stored_with_each_page(tmp_path, capsys):
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    from posgeom.reproduce.book import cell_seconds

    def timed(source, start, end):
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata["execution"] = {"iopub.execute_input": f"2026-12-02T10:00:{start:06.3f}Z",
                                      "shell.execute_reply": f"2026-12-02T10:00:{end:06.3f}Z"}
        return cell

    nb = nbformat.v4.new_notebook(cells=[timed("# setup\nimport x", 0, 1.5), nbformat.v4.new_markdown_cell("text"),
                                         timed("train()", 2, 40.25), nbformat.v4.new_code_cell("untimed()")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    seconds = cell_seconds(nb)
    assert seconds == [1.5, 38.25, None]
    assert all("execution" not in c.metadata for c in nb.cells)  # jupyter-cache hashes cell metadata
    get_cache(str(tmp_path / "cache")).cache_notebook_bundle(
        CacheBundleIn(nb, str(tmp_path / "notebooks" / "theorem4-separation.md"),
                      data={"execution_seconds": 41.0, "cell_seconds": seconds}), check_validity=False)
    script = _script()
    assert script.slowest_cells(tmp_path / "cache", 5) == [
        (38.25, "theorem4-separation", 2, "train()"), (1.5, "theorem4-separation", 1, "import x")]
    assert script.main(["--cache", str(tmp_path / "cache"), "--cells", "1"]) == 0
    assert "theorem4-separation        cell   2  train()" in capsys.readouterr().out
