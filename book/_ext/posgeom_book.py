"""Sphinx extension of the book.

1. Docstrings of posgeom write maths as ``$...$`` and ``$$...$$`` (readable in a terminal, like
   the annotated implementations it imitates); for the API page they are turned into reST
   ``:math:`` roles and ``.. math::`` blocks before autodoc parses them.
2. Each chapter is also offered as a Jupyter notebook.
3. Numbers of figures, tables, theorem-like blocks and exercises restart on every page. Without a
   numbered toctree Sphinx counts them across the whole book (a reader of the Theorem 4 chapter
   would see "Exercise 37"); :func:`restart_numbers_per_page` renumbers them 1, 2, ... within each
   page, in the order Sphinx found them. Blocks that carry the paper's own number in their title are
   ``:nonumber:``.
4. The book's stylesheet (``static/posgeom.css``: table padding, wrapping, phone width) is added
   to every page, and a script a page would load twice (sphinx-thebe registers its configuration
   once per read of the documents, which declares ``THEBE_JS_URL`` twice) is loaded once.

Chapters are MyST text notebooks (``notebooks/*.md``, no outputs in git). After a successful
build this extension writes ``_notebooks/<name>.ipynb`` next to the HTML (converted by
:func:`posgeom.notebooks.plain_notebook`: theorems, exercises and admonitions as plain Markdown,
glued numbers written out from the jupyter-cache, citations author–year, links to the published
site, a first cell that installs posgeom, no solutions, no outputs) and puts a download link at the top of every
chapter, so a student can open the chapter in JupyterLab or Colab. The generated files are never
committed.
"""

from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes

# $$ ... $$ (possibly over several lines) and $...$ outside ``literals``.
_DISPLAY = re.compile(r"\$\$(.+?)\$\$", re.S)
_INLINE = re.compile(r"(?<![\\$\w])\$(?!\$)([^$\n]+?)(?<!\\)\$(?![\w$])")
_LITERAL = re.compile(r"(``.+?``)")


def dollar_math_to_rst(text: str) -> str:
    """Turn ``$$...$$`` into ``.. math::`` blocks and ``$...$`` into ``:math:`...```."""

    def display(match: re.Match) -> str:
        start = text.rfind("\n", 0, match.start()) + 1
        indent = re.match(r"[ ]*", text[start:]).group(0)
        body = [line.strip() for line in match.group(1).strip().splitlines()]
        return "\n\n" + indent + ".. math::\n\n" + "\n".join(indent + "   " + line for line in body) + "\n\n" + indent

    text = _DISPLAY.sub(display, text)
    parts = _LITERAL.split(text)
    for i in range(0, len(parts), 2):  # even parts are outside ``literals``
        parts[i] = _INLINE.sub(lambda m: ":math:`" + m.group(1).replace("`", "\\`") + "`", parts[i])
    return "".join(parts)


def _docstring_math(app, what, name, obj, options, lines) -> None:
    converted = dollar_math_to_rst("\n".join(lines)).split("\n")
    lines[:] = converted


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


def chapter_download_buttons(app, pagename, templatename, context, doctree) -> None:
    """The header's download menu offers a chapter's plain ``.ipynb`` (numbers written out), not its MyST
    source (full of ``{glue}`` roles) nor the browser's print dialog labelled ".pdf"; pages that are
    not chapters have nothing to download."""
    buttons = context.get("header_buttons")
    if not buttons:
        return
    group = next((b for b in buttons if b.get("label") == "download-buttons"), None)
    if group is None:
        return
    if not _is_chapter(pagename):
        buttons.remove(group)
        return
    group["buttons"] = [{
        "type": "link",
        "url": context["pathto"](f"{DOWNLOAD_DIR}/{Path(pagename).name}.ipynb", 1),
        "text": ".ipynb",
        "icon": "fas fa-code",
        "tooltip": "Download this chapter as a Jupyter notebook (numbers written out, no solutions)",
        "label": "download-notebook-button",
    }]


def notebook_values_source(app) -> Path:
    """Where the downloads' glued values come from: the book's jupyter-cache (``execute.cache``).

    myst-nb strips the glue outputs from the copies it writes to ``_build/jupyter_execute``; the cache
    keeps each chapter as executed, matched to the chapter's current code.
    """
    configured = getattr(app.config, "nb_execution_cache_path", "") or ""
    path = Path(configured) if configured else Path(app.outdir).parent / ".jupyter_cache"
    return path if path.is_absolute() else Path(app.srcdir) / path


def _write_notebooks(app, exception) -> None:
    """Convert every chapter to a plain ``.ipynb`` in the output folder (:mod:`posgeom.notebooks`),
    with its glued numbers written out from the jupyter-cache (:func:`notebook_values_source`)."""
    if exception is not None or app.builder.format != "html":
        return
    from posgeom.notebooks import write_plain_notebook

    out = Path(app.outdir) / DOWNLOAD_DIR
    cache = notebook_values_source(app)
    for docname in sorted(app.env.found_docs):
        if not _is_chapter(docname):
            continue
        write_plain_notebook(Path(app.env.doc2path(docname)), out / (Path(docname).name + ".ipynb"), executed=cache)


def restart_numbers_per_page(app, env) -> list[str]:
    """Renumber every enumerable kind (figure, table, proof, exercise, ...) from 1 within each page.

    Runs after Sphinx's own numbering (``env-get-updated``); a page under a numbered toctree (numbers
    with a section part, e.g. ``(3, 1)``) is left as Sphinx numbered it.
    """
    for by_kind in env.toc_fignumbers.values():
        for numbers in by_kind.values():
            if any(len(number) != 1 for number in numbers.values()):
                continue
            for new, ident in enumerate(sorted(numbers, key=numbers.get), start=1):
                numbers[ident] = (new,)
    return []


STATIC_DIR = Path(__file__).parent / "static"


def _add_static(app) -> None:
    app.config.html_static_path.append(str(STATIC_DIR))


def _script_key(script):
    """A script of the page context as (file, attributes): inline scripts compare by their body."""
    filename = getattr(script, "filename", script) or ""  # an inline script has None or "" as its file
    attributes = getattr(script, "attributes", {}) or {}
    return str(filename), tuple(sorted((k, str(v)) for k, v in attributes.items() if k != "priority"))


def unique_scripts(app, pagename, templatename, context, doctree) -> None:
    """Drop repeated scripts from a page (the same file or the same inline body twice)."""
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for script in scripts:
        key = _script_key(script)
        if key not in seen:
            seen.add(key)
            unique.append(script)
    scripts[:] = unique


def setup(app):
    app.connect("env-get-updated", restart_numbers_per_page, priority=900)
    app.connect("builder-inited", _add_static)
    app.add_css_file("posgeom.css")
    app.connect("html-page-context", unique_scripts, priority=900)
    app.connect("html-page-context", chapter_download_buttons, priority=900)  # after the theme's (501)
    app.connect("autodoc-process-docstring", _docstring_math, priority=400)
    app.connect("doctree-resolved", _add_download_link)
    app.connect("build-finished", _write_notebooks)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
