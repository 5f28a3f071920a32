"""What a chapter's page shows, read from stored results only: a before/after check for refactoring.

Usage (from a checkout's root, with its environment active)::

    python scripts/page_snapshot.py real-corpora before.json --scale quick
    ... change posgeom/chapters/real_corpora.py ...
    python scripts/page_snapshot.py real-corpora after.json --scale quick
    python scripts/page_snapshot.py --compare before.json after.json     # prints IDENTICAL or the differences
    python scripts/page_snapshot.py --compare --page-only before.json after.json   # the prose, not the glue names

The chapter's code cells (``notebooks/<slug>.md``) run in one namespace on the CPU at the scale given, and the
snapshot records every glued value, the page's prose and captions with each glued number written as the book
writes it (the chapter's download, :func:`posgeom.notebooks.plain_notebook`),
every displayed table or text and the "Paper vs this book" rows the chapter would record. Stored results are read whatever their code key (an edit of a chapter module does not make them
stale, and a refactor of a keyed module is checked against the numbers stored before it); GPU work at ``paper``
shows as waiting, as on the published site. Nothing is ever computed or written: a result that is not stored
fails its cell, and the failure is part of the snapshot. ``--results DIR`` reads another registry (a worktree
has no ``results/quick`` of its own). Figures are recorded as present, not drawn pixel by pixel; a cell that
draws random numbers without a seed differs from run to run.

Used to show that the chapter layer of #46 was shortened without a number or a word of a page changing.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import os
import sys
import warnings
from contextlib import redirect_stdout
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _text(value) -> str:
    """A value as the page would show it, as text that two runs can compare."""
    import matplotlib.figure
    import pandas as pd

    if isinstance(value, (pd.DataFrame, pd.Series)):
        return "table:" + value.to_csv()
    if type(value).__name__ == "Styler":
        return "table:" + value.data.to_csv()
    if isinstance(value, matplotlib.figure.Figure):
        return "figure"
    if hasattr(value, "_repr_markdown_"):
        return "markdown:" + str(value._repr_markdown_())
    if hasattr(value, "_repr_html_"):
        return "html:" + str(value._repr_html_())
    return repr(value)


def _quiet_registry(recorded_rows: dict) -> None:
    """Read every stored result, compute none, write nothing; keep the claims rows instead of storing them."""
    import posgeom.registry.store as store
    import posgeom.report as report
    from posgeom.costmodel import gpu_work
    from posgeom.registry import GPU_WORK_ENV

    def refuse(*args, **kwargs):
        raise RuntimeError("page snapshot: this result is not stored, and a snapshot computes and writes nothing")

    def keep_rows(chapter, rows, settings=None):
        recorded_rows[chapter] = json.loads(json.dumps([report.row_record(r) for r in rows], default=repr))

    # the numbers stored before an edit are the reference: no page marks them stale, in every module that
    # imported the check by name (posgeom.registry, its stored_text, chapters/powered.py, ...) and in any imported later
    from posgeom.registry import manifest
    original = manifest.code_changed
    for module in [manifest, *list(sys.modules.values())]:
        if getattr(module, "code_changed", None) is original:
            module.code_changed = lambda manifest: False
    store.require_committed = refuse  # Registry.run calls it before any computation starts
    store.Registry.save = refuse
    report.record_comparison = keep_rows
    os.environ[GPU_WORK_ENV] = json.dumps(gpu_work())  # GPU work waits, as `posgeom reproduce --cpu-parts` sets it


def snapshot(slug: str, scale: str, results: str | None = None) -> dict:
    """Run ``notebooks/<slug>.md``'s code cells at ``scale`` and return what the page shows (see the module)."""
    os.environ.update(POSGEOM_SCALE=scale, POSGEOM_DEVICE="cpu", HF_HUB_OFFLINE="1")
    if results is not None:
        os.environ["POSGEOM_RESULTS_DIR"] = str(Path(results).resolve())
    import IPython.display
    import jupytext
    import matplotlib
    import myst_nb

    matplotlib.use("Agg")  # a snapshot only: the book itself never sets this backend
    import matplotlib.pyplot as plt

    import posgeom.notebooks

    glued, shown, errors, rows = {}, [], [], {}

    def glue(name, value, display=True):
        glued[name] = _text(value)

    def display(*values, **kwargs):
        shown.extend(_text(v) for v in values)

    myst_nb.glue = posgeom.notebooks.glue = glue
    IPython.display.display = display
    _quiet_registry(rows)
    notebook = jupytext.read(ROOT / "notebooks" / f"{slug}.md")
    namespace = {"display": display, "__name__": "__main__"}
    code_cells = [c for c in notebook.cells if c.cell_type == "code"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for number, cell in enumerate(code_cells):
            source = "\n".join(line for line in cell.source.splitlines() if not line.lstrip().startswith(("%", "!")))
            out = io.StringIO()
            try:
                tree = ast.parse(source)
                last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
                with redirect_stdout(out):
                    exec(compile(tree, f"cell {number}", "exec"), namespace)
                    if last is not None:  # a cell's last expression is displayed, as in Jupyter
                        value = eval(compile(ast.Expression(last.value), f"cell {number}", "eval"), namespace)
                        if value is not None:
                            shown.append(_text(value))
            except Exception as err:  # the page would show the error: part of the snapshot
                errors.append(f"cell {number}: {type(err).__name__}: {str(err)[:300]}")
            if out.getvalue():
                shown.append("printed:" + out.getvalue())
            plt.close("all")
    return {"glue": glued, "page": _page(slug, glued), "display": shown, "errors": errors, "claims": rows}


def _page(slug: str, glued: dict) -> list[str]:
    """The page's prose as a reader sees it, whatever the glued names (a refactor may rename them): its chapter as
    the plain notebook a download is (:func:`posgeom.notebooks.plain_notebook`, which writes each glued number as the
    book formats it, and names the cell of one that was not glued), each Markdown cell and figure caption."""
    from posgeom.notebooks import plain_notebook

    plain = plain_notebook(ROOT / "notebooks" / f"{slug}.md", executed=glued)  # glued: name → text/plain
    return [c.source if c.cell_type == "markdown" else "caption: " + c.metadata["mystnb"]["figure"]["caption"]
            for c in plain.cells if c.cell_type == "markdown" or c.metadata.get("mystnb", {}).get("figure", {})
            .get("caption")]


def differences(before: dict, after: dict, *, page_only: bool = False) -> list[str]:
    """Each place where two snapshots differ, as text (empty: the pages are identical). ``page_only`` compares what a
    reader sees (the rendered prose, the shown tables and texts, the claims rows, the failures), not the glued names:
    for a refactor that renames glue keys along with the page's roles."""
    found = []
    for part in (("page",) if page_only else ("glue",)) + ("claims", "display", "errors"):
        a, b = before[part], after[part]
        keys = sorted(set(a) | set(b)) if isinstance(a, dict) else range(max(len(a), len(b)))
        for key in keys:
            x = a.get(key) if isinstance(a, dict) else (a[key] if key < len(a) else None)
            y = b.get(key) if isinstance(b, dict) else (b[key] if key < len(b) else None)
            if part == "page":  # Markdown joins the lines of a paragraph: a re-wrapped sentence reads the same
                x, y = (" ".join(t.split()) if isinstance(t, str) else t for t in (x, y))
            if json.dumps(x, sort_keys=True) != json.dumps(y, sort_keys=True):
                found.append(f"{part}[{key}]:\n  before: {str(x)[:400]}\n  after:  {str(y)[:400]}")
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("slug", nargs="?", help="a chapter's notebook, notebooks/<slug>.md")
    parser.add_argument("out", nargs="?", help="where to write the snapshot (JSON)")
    parser.add_argument("--scale", choices=("quick", "paper"), default="quick")
    parser.add_argument("--results", help="the results registry to read (default: POSGEOM_RESULTS_DIR or results/)")
    parser.add_argument("--compare", nargs=2, metavar=("BEFORE", "AFTER"), help="compare two snapshots")
    parser.add_argument("--page-only", action="store_true",
                        help="with --compare: compare the rendered prose instead of the glued names and values")
    argv = list(sys.argv[1:] if argv is None else argv)
    page_only = "--page-only" in argv  # anywhere, also between --compare and its two files
    args = parser.parse_args([a for a in argv if a != "--page-only"])
    args.page_only = page_only
    if args.compare:
        before, after = (json.loads(Path(p).read_text()) for p in args.compare)
        if args.page_only and not all("page" in s for s in (before, after)):
            parser.error("--page-only needs snapshots taken with the rendered page (retake the older one)")
        found = differences(before, after, page_only=args.page_only)
        print("\n".join(found) + f"\n{len(found)} difference(s)" if found else "IDENTICAL")
        return 1 if found else 0
    if not args.slug or not args.out:
        parser.error("give a chapter slug and an output file, or --compare BEFORE AFTER")
    if not (ROOT / "notebooks" / f"{args.slug}.md").is_file():
        parser.error(f"no chapter {args.slug!r}: notebooks/{args.slug}.md does not exist")
    result = snapshot(args.slug, args.scale, args.results)
    Path(args.out).write_text(json.dumps(result, indent=1, sort_keys=True))
    print(f"{args.slug} at {args.scale}: {len(result['glue'])} glued values, {len(result['display'])} shown, "
          f"{len(result['errors'])} cell(s) failed" + "".join(f"\n  {e}" for e in result["errors"]))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    raise SystemExit(main())
