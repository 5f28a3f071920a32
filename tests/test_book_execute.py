"""The book's pages executed in parallel into jupyter-cache (posgeom.reproduce.book), checked against a
serial replay of the schedule, against MyST-NB's own cache lookup, and with failing pages."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from posgeom.reproduce import CHAPTERS
from posgeom.reproduce.book import (
    THREAD_VARIABLES, Page, book_pages, cache_path, default_jobs, execute_book, kernel_environment,
    page_execution_mode, priorities, threads_per_kernel,
)

REPO = Path(__file__).resolve().parents[1]

NOTEBOOK = """\
---
jupytext:
  text_representation:
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---

# A page

```{code-cell} ipython3
import os
print("threads", os.environ.get("OMP_NUM_THREADS"))
{body}
```
"""


def write_page(folder: Path, name: str, body: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    # the page's name in its code: jupyter-cache matches notebooks by their code, not their file
    path.write_text(NOTEBOOK.replace("{body}", f"page = {name!r}\n{body}"), encoding="utf-8")
    return path


def test_the_book_pages_are_the_toc_chapters_and_the_summary_is_left_to_the_build():
    pages = book_pages(REPO)
    slugs = [p.slug for p in pages]
    assert "getting-started" in slugs and "intro" not in slugs
    # the summary is executed by every build (execution_mode: force), after the chapters
    summary = REPO / "summary" / "does-the-paper-hold-up.md"
    assert page_execution_mode(summary) == "force" and "does-the-paper-hold-up" not in slugs
    assert page_execution_mode(REPO / "notebooks" / "getting-started.md") is None
    by_slug = {p.slug: p for p in pages}
    for chapter in CHAPTERS:
        assert by_slug[chapter.slug].after == chapter.reuses
    assert by_slug["monotonicity"].after == ("real-corpora",)


def test_priorities_put_a_chapter_others_wait_for_before_a_longer_one():
    pages = [Page(Path("a.md"), "a"), Page(Path("b.md"), "b"), Page(Path("c.md"), "c", after=("a",))]
    rank = priorities(pages, {"a": 10, "b": 25, "c": 20})
    assert rank == {"a": 30, "b": 25, "c": 20}
    assert priorities(pages, {})["a"] > priorities(pages, {})["b"]  # unmeasured: the chain still counts


def test_thread_shares_and_jobs():
    assert threads_per_kernel(2, cpus=2) == 1 and threads_per_kernel(2, cpus=8) == 4
    assert threads_per_kernel(5, cpus=2) == 1 and threads_per_kernel(1, cpus=2) == 2
    assert default_jobs(cpus=1) == 1 and default_jobs(cpus=2) == 2 and default_jobs(cpus=64) == 4
    env = kernel_environment(3, {"PATH": "/bin"})
    assert env["PATH"] == "/bin" and all(env[v] == "3" for v in THREAD_VARIABLES)


def test_the_cache_folder_is_the_books():
    assert cache_path(REPO) == REPO / "_build" / ".jupyter_cache"


def fake_runs(log: list, *, fail: set[str] = frozenset(), seconds: float = 0.05):
    """An executor that records the order pages start and end in, with at most ``jobs`` at once."""
    lock = threading.Lock()
    running = set()
    peak = [0]

    def execute(page, *, env, timeout):
        with lock:
            running.add(page.slug)
            peak[0] = max(peak[0], len(running))
            log.append(("start", page.slug, env["OMP_NUM_THREADS"]))
        time.sleep(seconds)
        with lock:
            running.discard(page.slug)
            log.append(("end", page.slug))
        from posgeom.reproduce.book import read_page

        return read_page(page.path), seconds, (f"{page.path.name}, code cell 1 of 1: boom" if page.slug in fail else None), None

    return execute, peak


def test_dependencies_are_respected_and_at_most_jobs_run_at_once(tmp_path):
    notebooks = tmp_path / "notebooks"
    pages = [Page(write_page(notebooks, s), s, after) for s, after in
             [("a", ()), ("b", ()), ("c", ("a",)), ("d", ())]]
    pages.append(Page(write_page(tmp_path / "summary", "s"), "s", ("a", "b", "c", "d")))
    log: list = []
    execute, peak = fake_runs(log)
    lines: list[str] = []
    report = execute_book(tmp_path, jobs=2, pages=pages, cache_dir=tmp_path / "cache", out=lines.append,
                          execute=execute)
    assert not report.failed and len(report.runs) == 5 and peak[0] == 2
    position = {(kind, slug): k for k, (kind, slug, *_) in enumerate(log)}
    assert position[("start", "c")] > position[("end", "a")]
    assert all(position[("start", "s")] > position[("end", x)] for x in "abcd")
    assert {entry[2] for entry in log if entry[0] == "start"} == {str(threads_per_kernel(2))}
    # a second call finds every page in the cache and runs nothing
    again = execute_book(tmp_path, jobs=2, pages=pages, cache_dir=tmp_path / "cache", out=lines.append,
                         execute=execute)
    assert again.runs == [] and sorted(again.cached) == ["a", "b", "c", "d", "s"]


def test_a_failed_page_is_reported_its_dependants_skipped_and_the_rest_cached(tmp_path):
    notebooks = tmp_path / "notebooks"
    pages = [Page(write_page(notebooks, "a"), "a"), Page(write_page(notebooks, "b"), "b"),
             Page(write_page(notebooks, "c"), "c", ("a",))]
    log: list = []
    execute, _ = fake_runs(log, fail={"a"})
    lines: list[str] = []
    report = execute_book(tmp_path, jobs=1, pages=pages, cache_dir=tmp_path / "cache", out=lines.append,
                          execute=execute)
    assert [r.page.slug for r in report.failed] == ["a"]
    assert "code cell 1 of 1: boom" in report.failed[0].error
    assert not any(kind == "start" and slug == "c" for kind, slug, *_ in log)
    assert any("c: not run" in line for line in lines) and any("a: FAILED" in line for line in lines)
    again = execute_book(tmp_path, jobs=1, pages=pages, cache_dir=tmp_path / "cache", out=lines.append,
                         execute=fake_runs([])[0])
    assert again.cached == ["b"] and sorted(r.page.slug for r in again.runs) == ["a", "c"]


def test_jobs_below_one_is_refused(tmp_path):
    with pytest.raises(ValueError, match="jobs must be at least 1"):
        execute_book(tmp_path, jobs=0, pages=[], cache_dir=tmp_path / "cache")
    from posgeom.cli import main as cli

    assert cli(["book", "--jobs", "0"]) == 2  # one line: --jobs must be at least 1


def test_real_kernels_fill_the_cache_myst_nb_then_finds(tmp_path):
    """Two pages run in real kernels, one thread each; MyST-NB's lookup (the notebook as the build reads
    it, with the book's MyST extensions) finds both, with their outputs; a failing cell is named."""
    from jupyter_cache import get_cache
    from myst_nb.core.read import read_myst_markdown_notebook
    from myst_parser.config.main import MdParserConfig

    notebooks = tmp_path / "notebooks"
    good = [Page(write_page(notebooks, s, f"print({k} * 7)"), s) for k, s in enumerate(["one", "two"])]
    bad = Page(write_page(notebooks, "bad", "raise RuntimeError('a broken chapter')"), "bad")
    lines: list[str] = []
    report = execute_book(tmp_path, jobs=2, pages=[*good, bad], cache_dir=tmp_path / "cache", out=lines.append)
    assert [r.page.slug for r in report.failed] == ["bad"]
    assert "bad.md, code cell 1 of 1" in report.failed[0].error and "a broken chapter" in report.failed[0].error
    cache = get_cache(str(tmp_path / "cache"))
    config = MdParserConfig(enable_extensions={"dollarmath", "amsmath", "colon_fence", "deflist", "substitution"})
    for k, page in enumerate(good):
        nb = read_myst_markdown_notebook(page.path.read_text(), config=config, add_source_map=True, path=page.path)
        record = cache.match_cache_notebook(nb)
        assert record.data["execution_seconds"] > 0
        # the kernel's peak memory, read by a probe cell that is not cached with the page
        assert 10e6 < record.data["peak_rss_bytes"] < 64e9
        _, merged = cache.merge_match_into_notebook(nb)
        code = [cell for cell in merged.cells if cell.cell_type == "code"]
        assert len(code) == 1 and "probe" not in code[0].source
        text = "".join(o.get("text", "") for o in code[0].outputs)
        assert f"threads {threads_per_kernel(2)}" in text and str(k * 7) in text
