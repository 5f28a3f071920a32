"""Sphinx extension of the book: each chapter is also offered as a Jupyter notebook.

Chapters are MyST text notebooks (``notebooks/*.md``, no outputs in git). After a successful
build this extension writes ``_notebooks/<name>.ipynb`` next to the HTML (converted with
jupytext, without outputs) and puts a download link at the top of every chapter, so a student
can open the chapter in JupyterLab or Colab. The generated files are never committed.
"""

from __future__ import annotations

from pathlib import Path

from docutils import nodes

NOTEBOOK_DIR = "notebooks/"
DOWNLOAD_DIR = "_notebooks"


def _is_chapter(docname: str) -> bool:
    return docname.startswith(NOTEBOOK_DIR)


def _add_download_link(app, doctree, docname) -> None:
    """Insert 'Download this chapter as a notebook' under the chapter's title."""
    if not _is_chapter(docname) or app.builder.format != "html":
        return
    name = Path(docname).name + ".ipynb"
    depth = docname.count("/")
    uri = "../" * depth + f"{DOWNLOAD_DIR}/{name}"
    link = nodes.reference("", name, refuri=uri, classes=["posgeom-ipynb-download"])
    para = nodes.paragraph(
        "", "", nodes.Text("Download this chapter as a Jupyter notebook: "), link,
        nodes.Text(" (open it in JupyterLab, or upload it to Colab)."),
    )
    section = next(iter(doctree.findall(nodes.section)), None)
    if section is None:
        doctree.insert(0, para)
        return
    title_index = next((i for i, child in enumerate(section.children) if isinstance(child, nodes.title)), -1)
    section.insert(title_index + 1, para)


def _write_notebooks(app, exception) -> None:
    """Convert every chapter to ``.ipynb`` in the output folder."""
    if exception is not None or app.builder.format != "html":
        return
    import jupytext

    out = Path(app.outdir) / DOWNLOAD_DIR
    out.mkdir(parents=True, exist_ok=True)
    for docname in sorted(app.env.found_docs):
        if not _is_chapter(docname):
            continue
        source = Path(app.env.doc2path(docname))
        notebook = jupytext.read(source)
        jupytext.write(notebook, out / (Path(docname).name + ".ipynb"), fmt="ipynb")


def setup(app):
    app.connect("doctree-resolved", _add_download_link)
    app.connect("build-finished", _write_notebooks)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
