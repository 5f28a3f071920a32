"""``posgeom book``: execute the book's pages in parallel into jupyter-cache, then ``jupyter-book build``.

MyST-NB executes pages one after another; here ``jobs`` kernels run at once, each limited to ``threads``
OpenMP/BLAS/PyTorch threads, and store what they execute as MyST-NB itself would, so the build finds every
page cached. A chapter runs after the chapters it reuses (``Chapter.reuses``), pages outside ``notebooks/``
after every chapter, and a page that sets its own execution mode (the summary's ``force``) is left to the build.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

from ..timings import chapter_times
from .chapters import CHAPTERS, Chapter, project_root
from .notebook import failed_cell, is_kernel_noise, run_kernel

__all__ = [
    "THREAD_VARIABLES", "UNMEASURED_S", "CHAPTER_FOLDER", "MYST_READER", "Page", "PageRun", "BookExecution",
    "toc_files", "book_pages", "page_execution_mode", "priorities", "threads_per_kernel", "default_jobs",
    "kernel_environment", "read_page", "cell_seconds", "cache_path", "execute_book", "build_book",
]

#: Environment variables that set the threads of OpenMP, the BLAS libraries and PyTorch in a kernel.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS")
#: Seconds assumed for a page the measured times do not list (a new chapter): scheduled as a middling one.
UNMEASURED_S = 60.0
#: The folder of the chapters; pages elsewhere (the summary) read what the chapters recorded, so run last.
CHAPTER_FOLDER = "notebooks"
#: The jupyter-cache reader MyST-NB registers for MyST text notebooks (the build reads pages with it).
MYST_READER = {"type": "plugin", "name": "myst_nb_md"}


@dataclass(frozen=True)
class Page:
    """One executable page of the book: its file, its slug and the pages that must run before it."""

    path: Path
    slug: str
    after: tuple[str, ...] = ()


@dataclass
class PageRun:
    """How one page went: seconds of execution, and the error (None when it succeeded)."""

    page: Page
    seconds: float
    error: str | None = None


@dataclass
class BookExecution:
    """What :func:`execute_book` did: the pages it ran, those it found cached, and the wall time."""

    runs: list[PageRun] = field(default_factory=list)
    cached: list[str] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def failed(self) -> list[PageRun]:
        return [r for r in self.runs if r.error is not None]


def toc_files(root: str | Path) -> list[str]:
    """Every page named in the checkout's ``_toc.yml`` (the root page included), without extension, in order."""
    import yaml
    root = Path(root)
    toc = yaml.safe_load((root / "_toc.yml").read_text(encoding="utf-8"))
    files: list[str] = [toc["root"]] if toc.get("root") else []

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                files.append(entry["file"])
            walk(entry.get("sections"))

    for part in toc.get("parts") or []:
        walk(part.get("chapters"))
    walk(toc.get("chapters"))
    return files


def page_execution_mode(path: str | Path) -> str | None:
    """The page's own MyST-NB execution mode (``mystnb: execution_mode:`` in its front matter), if it sets one."""
    import yaml
    text = Path(path).read_text(encoding="utf-8")
    if not text.startswith("---"):
        return None
    mode = ((yaml.safe_load(text.split("---", 2)[1]) or {}).get("mystnb") or {}).get("execution_mode")
    return None if mode is None else str(mode)


def book_pages(root: str | Path, chapters: Sequence[Chapter] = CHAPTERS) -> list[Page]:
    """The pages of ``_toc.yml`` that the build takes from jupyter-cache, in book order, with what each waits for."""
    root = Path(root)
    reuses = {c.slug: c.reuses for c in chapters}
    paths = [path for path in (root / f"{name}.md" for name in toc_files(root))
             if path.is_file() and "```{code-cell}" in path.read_text(encoding="utf-8")
             and page_execution_mode(path) in (None, "cache")]
    chapters_run = [p.stem for p in paths if p.parent.name == CHAPTER_FOLDER]
    return [Page(p, p.stem, tuple(s for s in reuses.get(p.stem, ()) if s in chapters_run)
                 if p.parent.name == CHAPTER_FOLDER else tuple(chapters_run)) for p in paths]


def threads_per_kernel(jobs: int, cpus: int | None = None) -> int:
    """OpenMP/BLAS/PyTorch threads for each of ``jobs`` kernels on ``cpus`` cores: an equal share, at least 1."""
    return max(1, (cpus or os.cpu_count() or 1) // max(1, jobs))


def default_jobs(cpus: int | None = None) -> int:
    """Kernels at once: one per core, at most 4 (a chapter holds up to about 2 GB)."""
    return max(1, min(4, cpus or os.cpu_count() or 1))


def kernel_environment(threads: int, base: Mapping[str, str] | None = None) -> dict[str, str]:
    """``base`` (default ``os.environ``) with every thread count at ``threads`` (PyTorch reads ``OMP_NUM_THREADS``)."""
    return {**(os.environ if base is None else base), **{name: str(threads) for name in THREAD_VARIABLES}}


def read_page(path: Path):
    """The notebook of a MyST text page, read as MyST-NB reads it for the build (its jupyter-cache plugin)."""
    from myst_nb.core.read import myst_nb_reader_plugin
    return myst_nb_reader_plugin(str(path))


def _execute_page(page: Page, *, env: dict[str, str], timeout: int | None):
    """Run ``page`` in a fresh kernel: (notebook without the probe cell, seconds, error or None, peak bytes or None)."""
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError
    nb = read_page(page.path)
    current = {"index": None}
    started = time.perf_counter()
    try:
        # record_timing: each cell's start and end in its metadata; moved out by cell_seconds before caching
        probe = run_kernel(nb, page.path.parent, env=env, timeout=timeout, allow_errors=False, record_timing=True,
                           on_cell_start=lambda cell, cell_index: current.update(index=cell_index))
    except (CellExecutionError, CellTimeoutError, DeadKernelError) as err:
        where = failed_cell(nb, current["index"]) or ("the memory probe after the last cell"
                                                      if current["index"] == len(nb.cells) else "before its first cell")
        detail = "\n".join(str(err).strip().splitlines()[-15:])
        return nb, time.perf_counter() - started, f"{page.path.name}, {where}: {detail}", None
    except Exception:  # a kernel that cannot start, a notebook that cannot be read: say so, whole
        return nb, time.perf_counter() - started, f"{page.path.name}: " + traceback.format_exc(limit=6), None
    return nb, time.perf_counter() - started, None, probe["rss_bytes"]


def cell_seconds(nb) -> list[float | None]:
    """Seconds each code cell ran (None where untimed), removing nbclient's timing metadata: jupyter-cache
    hashes every cell's metadata, and MyST-NB's copy of the page has none."""
    from datetime import datetime

    def parse(text: str) -> datetime:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))

    seconds: list[float | None] = []
    for cell in (c for c in nb.cells if c.cell_type == "code"):
        timing = cell.metadata.pop("execution", None) or {}
        start, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
        seconds.append(round((parse(end) - parse(start)).total_seconds(), 3) if start and end else None)
    return seconds


def priorities(pages: Sequence[Page], times: Mapping[str, float]) -> dict[str, float]:
    """Each page's measured seconds plus the longest chain of pages waiting for it (started highest first)."""
    rank: dict[str, float] = {}

    def chain(page: Page) -> float:
        if page.slug not in rank:
            rank[page.slug] = 0.0  # guards a cycle; none is declared
            waiting = [q for q in pages if page.slug in q.after]
            rank[page.slug] = times.get(page.slug, UNMEASURED_S) + max(map(chain, waiting), default=0.0)
        return rank[page.slug]

    for page in pages:
        chain(page)
    return rank


def cache_path(root: str | Path) -> Path:
    """The jupyter-cache folder of the build (``execute.cache`` of ``_config.yml``, relative to the checkout)."""
    import yaml
    root = Path(root)
    config = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8")) or {}
    folder = Path((config.get("execute") or {}).get("cache") or "_build/.jupyter_cache")
    return folder if folder.is_absolute() else root / folder


def execute_book(root: str | Path | None = None, *, jobs: int | None = None, timeout: int | None = 3600,
                 pages: Sequence[Page] | None = None, cache_dir: str | Path | None = None,
                 out: Callable[[str], None] = print, execute: Callable[..., tuple] = _execute_page) -> BookExecution:
    """Execute the book's pages that jupyter-cache does not hold yet, ``jobs`` at a time, into its cache.

    ``root`` defaults to this checkout, ``jobs`` to :func:`default_jobs`, ``pages`` to :func:`book_pages` and
    ``cache_dir`` to :func:`cache_path`; ``timeout`` is per cell; ``out`` takes the progress lines and ``execute``
    runs one page (tests replace it). A failed page is reported in the returned :class:`BookExecution`, not raised;
    the pages that do not wait for it still run and are cached.
    """
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn
    root = Path(root) if root is not None else project_root()
    jobs = default_jobs() if jobs is None else int(jobs)
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    pages = list(book_pages(root) if pages is None else pages)
    cache = get_cache(str(cache_dir if cache_dir is not None else cache_path(root)))
    report = BookExecution()
    to_run: list[Page] = []
    for page in pages:
        try:
            cache.match_cache_notebook(read_page(page.path))
            report.cached.append(page.slug)
        except KeyError:
            to_run.append(page)
    threads = threads_per_kernel(jobs)
    env, started = kernel_environment(threads), time.perf_counter()
    out(f"[book] executing {len(to_run)} of {len(pages)} pages, {jobs} at a time with {threads} thread(s) each"
        + (f"; {len(report.cached)} already in the cache" if report.cached else ""))
    done, failed = set(report.cached), set()
    rank = priorities(pages, chapter_times(root))
    waiting = sorted(to_run, key=lambda page: -rank[page.slug])
    running: dict[Future, Page] = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        while waiting or running:
            for page in list(waiting):
                if len(running) >= jobs:
                    break
                if any(s in failed for s in page.after):
                    waiting.remove(page)
                    failed.add(page.slug)
                    out(f"[book] {page.slug}: not run (it waits for a page that failed)")
                elif all(s in done for s in page.after):
                    waiting.remove(page)
                    running[pool.submit(execute, page, env=env, timeout=timeout)] = page
            if not running:
                break
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                page = running.pop(future)
                nb, seconds, error, peak_rss_bytes = future.result()
                report.runs.append(PageRun(page, seconds, error))
                if error is None:
                    # stored as MyST-NB stores it, with the cells' seconds and the kernel's peak memory beside
                    # (benchmarks/chapter_times.py writes both to book/chapter-times.json)
                    data = {"execution_seconds": seconds, "cell_seconds": cell_seconds(nb),
                            "peak_rss_bytes": peak_rss_bytes}
                    cache.add_nb_to_project(str(page.path), read_data=MYST_READER)
                    cache.cache_notebook_bundle(CacheBundleIn(nb, str(page.path), data=data),
                                                check_validity=False, overwrite=True)
                    done.add(page.slug)
                    status = f"{seconds:.0f} s"
                else:
                    failed.add(page.slug)
                    status = f"FAILED after {seconds:.0f} s\n{error}"
                out(f"[book] {len(report.runs)}/{len(to_run)} {page.slug}: {status} "
                    f"({time.perf_counter() - started:.0f} s in all)")
    report.wall_s = time.perf_counter() - started
    return report


def build_book(root: str | Path | None = None, *, jobs: int | None = None, timeout: int | None = 3600,
               path_output: str | Path | None = None, out: Callable[[str], None] = print,
               config: str | Path | None = None) -> int:
    """Execute the pages in parallel (:func:`execute_book`), then ``jupyter-book build`` the checkout strictly.

    ``config`` replaces the checkout's ``_config.yml`` (``posgeom book --course``). Returns the build's exit
    status, or 1 without building when a page failed.
    """
    root = Path(root) if root is not None else project_root()
    report = execute_book(root, jobs=jobs, timeout=timeout, out=out)
    if report.failed:
        print(f"[book] not built: {', '.join(run.page.slug for run in report.failed)} failed (the error is above); "
              "fix it and run again: the pages that ran are kept in the cache and are not executed again",
              file=sys.stderr)
        return 1
    jb = Path(sys.executable).with_name("jupyter-book")
    command = [str(jb) if jb.exists() else "jupyter-book", "build", str(root), "--all", "--warningiserror",
               "--nitpick", "--keep-going", *(["--config", str(config)] if config is not None else []),
               *(["--path-output", str(path_output)] if path_output is not None else [])]
    return run_quietly(command, cwd=root)


def run_quietly(command: Sequence[str], *, cwd: str | Path | None = None) -> int:
    """Run ``command``, its stderr without the kernels' start-up notices; its exit status."""
    with subprocess.Popen(command, cwd=cwd, stderr=subprocess.PIPE, text=True, errors="replace") as proc:
        for line in proc.stderr:
            if not is_kernel_noise(line):
                sys.stderr.write(line)
                sys.stderr.flush()
    return proc.returncode
