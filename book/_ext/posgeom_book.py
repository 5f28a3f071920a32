"""Sphinx extension of the book.

1. Docstrings of posgeom write maths as ``$...$`` and ``$$...$$`` (readable in a terminal, like
   the annotated implementations it imitates); for the API page they are turned into reST
   ``:math:`` roles and ``.. math::`` blocks before autodoc parses them; an attribute's ``#:`` comment,
   always prose, is kept from being read as ``type: description`` (:func:`prose_attribute_lines`).
2. Each chapter is also offered as a Jupyter notebook.
3. Numbers of figures, tables, theorem-like blocks and exercises restart on every page. Without a
   numbered toctree Sphinx counts them across the whole book (a reader of the Theorem 4 chapter
   would see "Exercise 37"); :func:`restart_numbers_per_page` renumbers them 1, 2, ... within each
   page, in the order Sphinx found them. Blocks that carry the paper's own number in their title are
   ``:nonumber:``.
4. The book's stylesheet (``static/posgeom.css``: table padding, wrapping, verdict marks and
   colours, phone width) is added to every page, and a script a page would load twice is loaded once.
5. The site around the pages: every page's head gets a description and Open Graph tags (title,
   description, image, URL; :func:`head_metadata`); the build writes ``sitemap.xml`` and
   ``robots.txt`` (:func:`sitemap_xml`, from ``html.baseurl``) and a ``404.html`` page. The Colab
   launch button of a chapter opens its exported notebook (:func:`colab_url`: the publishing workflow
   pushes ``_notebooks/`` to the branch :data:`COLAB_BRANCH`); Binder opens the chapter itself.
   sphinx-thebe, which jupyter-book always loads, is switched off (the book has no live code: its
   default configuration would point at someone else's Binder repository).
6. The chapters' measured times (``book/chapter-times.json``, written by ``benchmarks/chapter_times.py``
   from a cold build) are the substitutions ``{{ time_<chapter> }}`` of every page.

Chapters are MyST text notebooks (``notebooks/*.md``, no outputs in git). After a successful
build this extension writes ``_notebooks/<name>.ipynb`` next to the HTML (converted by
:func:`posgeom.notebooks.plain_notebook`: theorems, exercises and admonitions as plain Markdown,
glued numbers written out from the jupyter-cache, citations author–year, links to the published
site, a first cell that installs posgeom, no solutions, no outputs) and puts a download link at the top of every
chapter, so a student can open the chapter in JupyterLab or Colab. The generated files are never
committed.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from urllib.parse import urlsplit

from docutils import nodes

# $$ ... $$ (possibly over several lines) and $...$ outside ``literals``. Inline maths may wrap onto
# the next line of a docstring (one line break, never a blank line); left unconverted, reST would
# eat its backslashes ("\\mathbb E" shown as "mathbb E").
_DISPLAY = re.compile(r"\$\$(.+?)\$\$", re.S)
_INLINE = re.compile(r"(?<![\\$\w])\$(?!\$)((?:[^$\n]|\n(?![ \t]*\n))+?)(?<!\\)\$(?![\w$])")
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
        parts[i] = _INLINE.sub(lambda m: ":math:`" + " ".join(m.group(1).split()).replace("`", "\\`") + "`", parts[i])
    return "".join(parts)


def _docstring_math(app, what, name, obj, options, lines) -> None:
    converted = dollar_math_to_rst("\n".join(lines)).split("\n")
    lines[:] = converted


#: ``|i − j|`` written as plain text, which reST would read as a substitution reference.
_PLAIN_ABS = re.compile(r"(?<![\\\w|])\|(\S[^|`$\n]*?\S|\S)\|(?![\w|])")


def escape_plain_bars(line: str) -> str:
    """Escape ``|x|`` outside backtick spans (literals, roles such as :math:), so reST shows the bars."""
    parts = re.split(r"(``.*?``|`[^`]*`)", line)
    return "".join(p if i % 2 else _PLAIN_ABS.sub(lambda m: "\\|" + m.group(1) + "\\|", p) for i, p in enumerate(parts))


def _docstring_bars(app, what, name, obj, options, lines) -> None:
    # Only the decision rules write |i − j| in prose; they hold no display maths whose bars this would touch.
    if name.startswith("posgeom.verdicts"):
        lines[:] = [escape_plain_bars(line) for line in lines]


#: The first colon of a line outside backtick spans (literals and roles keep theirs).
_PROSE_COLON = re.compile(r"(``.*?``|`[^`]*`)|:")


def prose_attribute_lines(lines: list[str]) -> list[str]:
    """An attribute's documentation (a ``#:`` comment) with no colon on its first line.

    Napoleon reads the first line of an attribute's documentation as ``type: description``, so a comment
    of prose whose first line holds a colon ("At most this many seeds (posgeom.verdicts.MAX_SEEDS: past it
    ...") would render its start as a type, and a dotted name there as an unresolved cross-reference.
    posgeom's attribute comments are prose, never typed: the first line is broken at the last space before
    its colon, which reST joins back with a space.
    """
    if not lines:
        return lines
    first = lines[0]
    colon = next((m.start() for m in _PROSE_COLON.finditer(first) if m.group(1) is None), None)
    if colon is None:
        return lines
    cut = first.rfind(" ", 0, colon)
    if cut <= 0:
        return lines  # one word before the colon ("note: ..."): nothing to break at, and no dotted name either
    return [first[:cut], first[cut + 1:], *lines[1:]]


def _docstring_prose_attributes(app, what, name, obj, options, lines) -> None:
    if what in ("attribute", "data") and name.startswith("posgeom."):
        lines[:] = prose_attribute_lines(lines)


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
        write_plain_notebook(Path(app.env.doc2path(docname)), out / (Path(docname).name + ".ipynb"), executed=cache,
                             substitutions=app.config.myst_substitutions)


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


# --------------------------------------------------------------------------------------------
# The site around the pages: head metadata, sitemap, 404, launch buttons, no Thebe
# --------------------------------------------------------------------------------------------

#: The Open Graph image and the favicon, in ``static/`` (served from ``_static/``).
OG_IMAGE = "posgeom-og.png"
#: The branch the publishing workflow fills with the exported chapters, for Colab (which opens
#: notebooks from GitHub only; ``*.ipynb`` is not committed on the main branch).
COLAB_BRANCH = "notebooks"
#: The longest page description, in characters (what search results and link previews show).
DESCRIPTION_CHARS = 200


def site_url(baseurl: str) -> str:
    """``html.baseurl`` with one trailing slash ("" when unset)."""
    return baseurl.rstrip("/") + "/" if baseurl else ""


def page_description(doctree, fallback: str) -> str:
    """The page's first paragraph of prose, cut at a word before :data:`DESCRIPTION_CHARS`, else ``fallback``."""
    for para in (doctree.findall(nodes.paragraph) if doctree is not None else ()):
        text = " ".join(para.astext().split())
        if len(text) >= 40 and not text.startswith("Download this chapter"):
            break
    else:
        text = " ".join(fallback.split())
    if len(text) > DESCRIPTION_CHARS:
        text = text[:DESCRIPTION_CHARS].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    return text


def head_metadata(*, title: str, description: str, book_title: str, page_url: str, image_url: str) -> str:
    """The ``<meta>`` tags of a page's head: description, Open Graph and Twitter card."""
    def meta(attr, key, value):
        return f'<meta {attr}="{key}" content="{html.escape(value, quote=True)}" />'

    full_title = title if title == book_title else f"{title} — {book_title}"
    tags = [meta("name", "description", description),
            meta("property", "og:title", full_title),
            meta("property", "og:description", description),
            meta("property", "og:type", "website"),
            meta("property", "og:site_name", book_title),
            meta("property", "og:image", image_url),
            meta("property", "og:image:alt", book_title),
            meta("name", "twitter:card", "summary_large_image")]
    if page_url:
        tags.append(meta("property", "og:url", page_url))
    return "\n".join(tags) + "\n"


def _add_head_metadata(app, pagename, templatename, context, doctree) -> None:
    base = site_url(app.config.html_baseurl)
    target = app.builder.get_target_uri(pagename)
    image = f"_static/{OG_IMAGE}"
    title = re.sub(r"<[^>]+>", "", context.get("title") or "") or app.config.project
    context["metatags"] = context.get("metatags", "") + head_metadata(
        title=html.unescape(title),
        description=page_description(doctree, app.config.posgeom_description),
        book_title=app.config.html_title or app.config.project,
        page_url=base + target if base else "",
        image_url=base + image if base else context["pathto"](image, 1),
    )


def sitemap_xml(urls: list[str]) -> str:
    """A sitemap (sitemaps.org protocol 0.9) listing ``urls``."""
    entries = "".join(f"  <url><loc>{html.escape(u)}</loc></url>\n" for u in urls)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n' + entries + "</urlset>\n")


def _write_sitemap(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    base = site_url(app.config.html_baseurl)
    if not base:
        return  # a sitemap holds absolute URLs: without html.baseurl there is nothing to write
    urls = [base + app.builder.get_target_uri(doc) for doc in sorted(app.env.found_docs)]
    out = Path(app.outdir)
    (out / "sitemap.xml").write_text(sitemap_xml(urls), encoding="utf-8")
    (out / "robots.txt").write_text(f"User-agent: *\nAllow: /\nSitemap: {base}sitemap.xml\n", encoding="utf-8")


NOT_FOUND_PAGE = "404"


def _not_found_page(app):
    """The 404 page, in the book's look. A host serves it at any missing address, so its links start
    from the site's root (``<base href>``, from ``html.baseurl``)."""
    if app.builder.format != "html":
        return []
    root = app.builder.get_target_uri(app.config.root_doc)
    body = ('<section id="page-not-found"><h1>Page not found</h1>'
            "<p>There is no page at this address: it may have moved when the book was reorganised.</p>"
            f'<p>Start again from <a href="{html.escape(root)}">the first page</a>, or search the book '
            "with the box in the sidebar.</p></section>")
    return [(NOT_FOUND_PAGE, {"title": "Page not found", "body": body}, "page.html")]


def _not_found_base(app, pagename, templatename, context, doctree) -> None:
    base = site_url(app.config.html_baseurl)
    if pagename == NOT_FOUND_PAGE and base:
        context["metatags"] = f'<base href="{html.escape(base)}" />\n' + context.get("metatags", "")


def github_repository(url: str) -> tuple[str, str]:
    """``(owner, name)`` of a GitHub repository URL; a clear error for any other URL."""
    parts = urlsplit(url)
    path = [p for p in parts.path.split("/") if p]
    if parts.netloc != "github.com" or len(path) != 2:
        raise ValueError(f"repository.url {url!r} is not a GitHub repository URL; "
                         "write it as https://github.com/<owner>/<name> in _config.yml")
    return path[0], path[1].removesuffix(".git")


def colab_url(repository_url: str, docname: str, colab_base: str = "https://colab.research.google.com") -> str:
    """Colab's address of a chapter's exported notebook on the :data:`COLAB_BRANCH` branch."""
    owner, name = github_repository(repository_url)
    return f"{colab_base.rstrip('/')}/github/{owner}/{name}/blob/{COLAB_BRANCH}/{Path(docname).name}.ipynb"


def _fix_launch_buttons(app, pagename, templatename, context, doctree) -> None:
    """Colab opens a chapter's exported ``.ipynb`` (the theme would point it at the ``.md`` source,
    which Colab cannot open); pages without an export get no Colab button."""
    options = app.config.html_theme_options
    colab_base = options.get("launch_buttons", {}).get("colab_url", "")
    for group in context.get("header_buttons", []):
        if group.get("label") != "launch-buttons":
            continue
        kept = []
        for button in group["buttons"]:
            if button.get("text") == "Colab":
                if not _is_chapter(pagename):
                    continue
                button["url"] = colab_url(options["repository_url"], pagename, colab_base)
            kept.append(button)
        group["buttons"][:] = kept


def _switch_off_thebe(app, config) -> None:
    """Remove sphinx-thebe's event handlers and stylesheet (jupyter-book loads it on every book)."""
    for listeners in app.events.listeners.values():
        listeners[:] = [entry for entry in listeners
                        if not getattr(entry.handler, "__module__", "").startswith("sphinx_thebe")]
    app.registry.css_files[:] = [(name, attrs) for name, attrs in app.registry.css_files
                                 if name != "sphinx-thebe.css"]


def _chapter_time_substitutions(app, config) -> None:
    """``{{ time_<chapter> }}`` and ``{{ memory_<chapter> }}`` on every page: the measured times and peak
    memory of ``book/chapter-times.json`` (:func:`posgeom.timings.chapter_times`,
    :func:`posgeom.timings.chapter_memory`), the one source of both."""
    from posgeom.reproduce import chapter_time_substitutions, chapter_times
    from posgeom.timings import chapter_memory

    config.myst_substitutions = {**(config.myst_substitutions or {}),
                                 **chapter_time_substitutions(chapter_times(app.srcdir),
                                                              memory=chapter_memory(app.srcdir))}


def setup(app):
    app.add_config_value("posgeom_description", "", "html", types=[str])
    app.connect("config-inited", _switch_off_thebe)
    app.connect("config-inited", _chapter_time_substitutions)
    app.connect("env-get-updated", restart_numbers_per_page, priority=900)
    app.connect("builder-inited", _add_static)
    app.add_css_file("posgeom.css")
    app.connect("html-page-context", unique_scripts, priority=900)
    app.connect("html-page-context", chapter_download_buttons, priority=900)  # after the theme's (501)
    app.connect("html-page-context", _add_head_metadata)
    app.connect("html-page-context", _not_found_base, priority=950)
    app.connect("html-page-context", _fix_launch_buttons, priority=900)
    app.connect("html-collect-pages", _not_found_page)
    app.connect("autodoc-process-docstring", _docstring_math, priority=400)
    app.connect("autodoc-process-docstring", _docstring_bars, priority=450)
    app.connect("autodoc-process-docstring", _docstring_prose_attributes, priority=460)  # before napoleon (500)
    app.connect("doctree-resolved", _add_download_link)
    app.connect("build-finished", _write_notebooks)
    app.connect("build-finished", _write_sitemap)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
