"""Executing one chapter's notebook top to bottom in a fresh kernel, with its peak memory measured."""

from __future__ import annotations

import json
import re
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

from .chapters import ChapterFailed, SliceInterrupted

#: The exception :func:`posgeom.models.training.train` raises at its deadline, by name (seen in a kernel).
INTERRUPTED_NAME = "TrainingInterrupted"
#: Seconds a kernel may take to start (nbclient's default, 60 s, is within reach of a loaded machine).
KERNEL_START_TIMEOUT_S = 600
#: Printed by the probe cell appended to every executed notebook (peak memory of the kernel).
_PROBE_MARK = "__posgeom_reproduce_probe__"
_PROBE = f"""\
import json as _json, sys as _sys
try:
    import resource as _resource
    _rss = _resource.getrusage(_resource.RUSAGE_SELF).ru_maxrss * (1 if _sys.platform == "darwin" else 1024)
except ImportError:  # Windows
    _rss = None
_gpu = None
if "torch" in _sys.modules and _sys.modules["torch"].cuda.is_initialized():
    _gpu = _sys.modules["torch"].cuda.max_memory_allocated()
print("{_PROBE_MARK}" + _json.dumps({{"rss_bytes": _rss, "gpu_bytes": _gpu}}))
"""


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
#: What every kernel logs at start on its loopback TCP sockets (ipykernel >= 7): filtered from the kernels' stderr.
KERNEL_NOISE = ("Kernel is running over TCP without encryption",)


def is_kernel_noise(line: str) -> bool:
    """Whether a line a kernel printed is one of :data:`KERNEL_NOISE`'s notices."""
    return any(noise in line for noise in KERNEL_NOISE)


@contextmanager
def kernel_stderr():
    """A file for a kernel's stderr, copied to this process's stderr without :data:`KERNEL_NOISE` once done."""
    with tempfile.TemporaryFile() as fh:
        try:
            yield fh
        finally:
            fh.seek(0)
            kept = "".join(line for line in fh.read().decode(errors="replace").splitlines(keepends=True)
                           if not is_kernel_noise(line))
            if kept:
                sys.stderr.write(kept)
                sys.stderr.flush()


def failed_cell(nb, index: int | None, code: list[int] | None = None) -> str | None:
    """``code cell k of n (starting `first line`)`` for the cell at ``index`` among the code cells ``code``, or None."""
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"] if code is None else code
    if index not in code:
        return None
    source = nb.cells[index].source
    lines = [ln for ln in source.splitlines() if ln.strip() and not ln.startswith(("---", "#", ":"))]
    first = lines[0].strip() if lines else source.strip()[:60]
    first = first if len(first) <= 70 else first[:67] + "..."
    return f"code cell {code.index(index) + 1} of {len(code)} (starting `{first}`)"


def run_kernel(nb, folder: Path, *, env: dict[str, str], timeout: int | None, **options) -> dict:
    """Execute ``nb`` in a fresh kernel working in ``folder``, its stderr without :data:`KERNEL_NOISE`; the
    kernel's peak memory ``{"rss_bytes", "gpu_bytes"}`` (None where unknown), printed by a probe cell run last
    and removed again. ``options`` go to ``nbclient.NotebookClient`` (``startup_timeout``: default
    :data:`KERNEL_START_TIMEOUT_S`); its errors propagate."""
    import nbformat
    from nbclient import NotebookClient
    nb.cells.append(nbformat.v4.new_code_cell(_PROBE))
    try:
        client = NotebookClient(nb, timeout=timeout, resources={"metadata": {"path": str(folder)}},
                                **{"startup_timeout": KERNEL_START_TIMEOUT_S, **options})
        with kernel_stderr() as stderr:
            client.execute(env=env, stderr=stderr)
    finally:
        probe = nb.cells.pop()
    # the probe's one print may arrive split over several stream outputs: read their joined text
    text = "".join(o.get("text", "") for o in probe.get("outputs", []) if o.get("output_type") == "stream")
    return (json.loads(text.split(_PROBE_MARK, 1)[1].strip().splitlines()[0]) if _PROBE_MARK in text
            else {"rss_bytes": None, "gpu_bytes": None})


#: Run first in the kernel of a chapter whose GPU work is reported (:func:`posgeom.registry.pending.install`).
_REPORT_GPU_WORK = "from posgeom.registry.pending import install as _posgeom_report; _posgeom_report(get_ipython())\n"
#: The exception a cell raises when it reads a result that waits for GPU work, by name (seen in a kernel).
NEEDS_GPU_NAME = "NeedsGPU"


def execute_notebook(path: str | Path, *, env: dict[str, str], timeout: int | None = None,
                     on_cell: Callable[[int, int], None] | None = None, slug: str | None = None,
                     interrupt_on_timeout: bool = False, report_gpu_work: bool = False) -> dict:
    """Execute the MyST text notebook ``path`` top to bottom in a fresh ``python3`` kernel (cwd: its folder).

    ``timeout`` is per cell; ``on_cell(k, n)`` is called before the ``k``-th of ``n`` code cells (1-based). With
    ``interrupt_on_timeout`` a cell timeout means the budget ran out, not a failure. With ``report_gpu_work`` the
    kernel reports GPU work instead of running it: a cell stopped by ``NeedsGPU`` is noted and the notebook goes on.

    Returns ``{"rss_bytes", "gpu_bytes"}`` (peak memory; None where unknown) and ``gpu_cells`` (the code cells,
    counted from 1, that wait for GPU work). Raises ``SliceInterrupted`` when training stopped at its deadline (its
    state is saved), else ``ChapterFailed`` naming the cell (its number and first line) and the error.
    """
    import jupytext
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError
    path = Path(path)
    slug, nb = slug or path.stem, jupytext.read(path)
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    if report_gpu_work and code:
        nb.cells[code[0]].source = _REPORT_GPU_WORK + nb.cells[code[0]].source
    position = {cell_index: k + 1 for k, cell_index in enumerate(code)}
    current = {"index": None}

    def start(cell, cell_index):
        current["index"] = cell_index
        if on_cell is not None and cell_index in position:
            on_cell(position[cell_index], len(code))

    try:
        probe = run_kernel(nb, path.parent, env=env, timeout=timeout, kernel_name="python3", on_cell_start=start,
                           allow_errors=report_gpu_work)
    except (CellExecutionError, CellTimeoutError, DeadKernelError) as err:
        where = failed_cell(nb, current["index"], code) or "the probe cell appended by posgeom reproduce"
        if isinstance(err, CellExecutionError) and err.ename == INTERRUPTED_NAME:
            raise SliceInterrupted(slug, str(err.evalue)) from None
        if isinstance(err, CellTimeoutError) and interrupt_on_timeout:
            raise SliceInterrupted(slug, f"the budget ran out in a cell that does not stop at the training deadline "
                                         f"({path.name}, code cell {position.get(current['index'], '?')})") from None
        what = (f"{err.ename}: {err.evalue}" if isinstance(err, CellExecutionError) else
                f"no result after {timeout} s (cell timeout)" if isinstance(err, CellTimeoutError) else
                "the kernel died (out of memory?)")
        raise ChapterFailed(slug, f"{path.name}, {where} failed: {what}"
                            + _trace_tail(str(getattr(err, "traceback", "") or ""))) from None
    gpu_cells = []
    for k, index in enumerate(code, 1):  # with report_gpu_work, errors are outputs: only NeedsGPU may be one
        for output in (o for o in nb.cells[index].get("outputs", []) if o.get("output_type") == "error"):
            if output.get("ename") != NEEDS_GPU_NAME:
                raise ChapterFailed(slug, f"{path.name}, {failed_cell(nb, index, code)} failed: "
                                          f"{output.get('ename')}: {output.get('evalue')}"
                                    + _trace_tail("\n".join(output.get("traceback", []))))
            gpu_cells.append(k)
    return {**probe, "gpu_cells": sorted(set(gpu_cells))}


def _trace_tail(trace: str) -> str:
    """The last 12 lines of a kernel's traceback without colour codes, on a new line ("" when empty)."""
    tail = "\n".join(_ANSI.sub("", trace).strip().splitlines()[-12:])
    return f"\n{tail}" if tail else ""
