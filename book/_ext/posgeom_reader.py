"""The book as a reader meets it (docs/STYLE.md), the second Sphinx extension of the book.

1. **The lecture first.** A chapter's logistics fold away (:func:`fold_logistics`): the box "What this
   chapter needs" becomes a closed dropdown holding the table of the chapter's parts at paper scale,
   and the set-up cell's code (its imports) folds under a toggle. The downloaded notebook is made from
   the source and keeps every cell as it is. The box itself is one directive, ``{posgeom-needs}``
   (:class:`NeedsDirective`), whose text :func:`posgeom.reproduce.box.needs_box` writes for the book and for
   the downloads alike.
2. **Prose in the house style.** The chapters' and the summary's sentences, values glued into them
   included, take one percent style and no template plural (:func:`plain_prose_doctree`).
3. **The site around the book.** A licence page (``book/licence.md``, the repository's ``LICENSE``) and a
   "How to cite" page (``book/cite.md``, the ``{posgeom-citation}`` directive: :func:`citation_entries`
   from ``CITATION.cff``), linked from every page's footer; a search scorer
   (``static/search-scorer.js``) that lists the API reference after the chapters.
"""

from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive
from docutils.statemachine import StringList
from sphinx.transforms.post_transforms import SphinxPostTransform

STATIC_DIR = Path(__file__).parent / "static"
NOTEBOOK_DIR = "notebooks/"


def _is_chapter(docname: str) -> bool:
    return docname.startswith(NOTEBOOK_DIR)


# --------------------------------------------------------------------------------------------
# Licence, citation, footer and search ranking
# --------------------------------------------------------------------------------------------

#: The pages of the licence and of how to cite the book (``book/licence.md``, ``book/cite.md``), linked
#: from every page's footer.
LICENCE_PAGE, CITE_PAGE = "book/licence", "book/cite"
#: The citation file the "How to cite" page is generated from (at the repository's root).
CITATION_FILE = "CITATION.cff"


def _bibtex_value(value: str) -> str:
    return "{" + str(value) + "}"  # CITATION.cff values hold no braces; an entity's name is braced on purpose


def _bibtex(kind: str, key: str, fields: list[tuple[str, str]]) -> str:
    body = ",\n".join(f"  {name} = {_bibtex_value(value)}" for name, value in fields if value)
    return f"@{kind}{{{key},\n{body}\n}}"


def _authors(entry: dict, *, bibtex: bool = False) -> str:
    names = []
    for author in entry.get("authors", []):
        if "family-names" in author:
            given = author.get("given-names", "")
            names.append(f"{author['family-names']}, {given}".rstrip(", ") if bibtex else f"{given} {author['family-names']}".strip())
        else:  # an entity ("the posgeom contributors"): braced so that BibTeX keeps it whole
            names.append("{" + author["name"] + "}" if bibtex else author["name"])
    return " and ".join(names)


def citation_entries(cff: dict) -> list[tuple[str, str]]:
    """``(plain text, BibTeX)`` for the work a ``CITATION.cff`` describes, then for each of its references.

    A citation file with no title or no authors is refused with what to add.
    """
    for needed in ("title", "authors"):
        if not cff.get(needed):
            raise ValueError(f"{CITATION_FILE} has no {needed!r}: add it (Citation File Format 1.2.0) to build "
                             "the 'How to cite' page")
    version = cff.get("version", "")
    url = cff.get("url") or cff.get("repository-code", "")
    book = (f"{_authors(cff)}. {cff['title']}" + (f", version {version}" if version else "") + f". {url}",
            _bibtex("software", "posgeom", [("author", _authors(cff, bibtex=True)), ("title", cff["title"]),
                                            ("version", version), ("url", url), ("license", cff.get("license", ""))]))
    entries = [book]
    for ref in cff.get("references", []):
        arxiv = next((i["value"].removeprefix("arXiv:") for i in ref.get("identifiers", [])
                      if str(i.get("value", "")).startswith("arXiv:")), "")
        family = ref.get("authors", [{}])[0].get("family-names", "ref").lower()
        # the usual key: family name, year, first long word of the title (cirrincione2026geometry)
        word = next((w for w in re.findall(r"[a-z]+", ref.get("title", "").lower()) if len(w) > 3), "")
        key = f"{family}{ref.get('year', '')}{word}"
        text = f"{_authors(ref)} ({ref.get('year', 'n.d.')}). {ref['title']}." + (f" arXiv:{arxiv}." if arxiv else "")
        fields = [("author", _authors(ref, bibtex=True)), ("title", ref["title"]), ("year", str(ref.get("year", ""))),
                  ("eprint", arxiv), ("archivePrefix", "arXiv" if arxiv else ""), ("url", ref.get("url", ""))]
        entries.append((text + (f" {ref['url']}" if ref.get("url") else ""),
                        # an arXiv preprint is a @misc with its eprint (as in book/references.bib)
                        _bibtex("article" if ref.get("type") == "article" and not arxiv else "misc", key, fields)))
    return entries


class CitationDirective(Directive):
    """``{posgeom-citation}``: how to cite the book and the paper, generated from ``CITATION.cff``."""

    has_content = False

    def run(self):
        import yaml

        env = self.state.document.settings.env
        path = Path(env.srcdir) / CITATION_FILE
        env.note_dependency(str(path))
        cff = yaml.safe_load(path.read_text(encoding="utf-8"))
        out = [nodes.paragraph(text=" ".join(str(cff.get("message", "")).split()))]
        for k, (text, bibtex) in enumerate(citation_entries(cff)):
            what = "The book and the posgeom package" if k == 0 else "The paper it accompanies"
            out.append(nodes.rubric(text=what))
            out.append(nodes.paragraph(text=text))
            block = nodes.literal_block(bibtex, bibtex)
            block["language"] = "bibtex"
            out.append(block)
        return out


def _footer_links(app, pagename, templatename, context, doctree) -> None:
    """Every page's footer links to the licence and to how to cite the book."""
    if app.builder.format != "html" or "pathto" not in context:
        return
    links = " · ".join(f'<a href="{context["pathto"](page)}">{label}</a>'
                       for page, label in ((LICENCE_PAGE, "Licence (MIT)"), (CITE_PAGE, "How to cite")))
    context["theme_extra_footer"] = f'<p class="posgeom-footer-links">{links}</p>'


def _search_scorer(app, config) -> None:
    """Chapters before the API reference in the search results (``static/search-scorer.js``)."""
    config.html_search_scorer = str(STATIC_DIR / "search-scorer.js")


# --------------------------------------------------------------------------------------------
# The lecture first: a chapter's logistics folded away
# --------------------------------------------------------------------------------------------

#: The titles of a chapter's box of logistics (time, memory, data, model, GPU).
NEEDS_TITLES = ("What this chapter needs", "What this page needs")
#: What the folded set-up cell and the folded table of paper-scale parts say when closed.
SETUP_PROMPT = ("Show the set-up code (imports and settings)", "Hide the set-up code")


class NeedsDirective(Directive):
    """``{posgeom-needs}``: the box "What this chapter needs" of the page it is on (or of the page its
    argument names), its text from :func:`posgeom.reproduce.box.needs_box`: one text for every chapter, the
    downloads included. :func:`fold_logistics` folds it."""

    optional_arguments = 1
    has_content = False

    def run(self):
        from posgeom.reproduce.box import needs_box, needs_title
        from posgeom.timings import CHAPTER_TIMES_FILE

        env = self.state.document.settings.env
        page = self.arguments[0] if self.arguments else Path(env.docname).name
        env.note_dependency(str(Path(env.srcdir) / CHAPTER_TIMES_FILE))
        try:
            text = needs_box(page, root=env.srcdir)
        except ValueError as error:
            raise self.error(str(error)) from None
        box = nodes.admonition(classes=["posgeom-needs"])
        box += nodes.title(text=needs_title(page))
        self.state.nested_parse(StringList(text.split("\n"), source=str(env.doc2path(env.docname))),
                                self.content_offset, box)
        return [box]


def _is_setup_source(code: str) -> bool:
    """A cell that begins, past its comments, with an import: a chapter's set-up cell."""
    lines = [line for line in code.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    return bool(lines) and lines[0].startswith(("import ", "from "))


def _cell_source(cell) -> str | None:
    first = cell.children[0] if cell.children else None
    if first is None or first.get("nb_element") != "cell_code_source":
        return None
    return first.astext()


def fold_logistics(doctree) -> dict[str, int]:
    """Fold a chapter's logistics so that its first result comes first.

    * The box "What this chapter needs" is a closed dropdown, and the table of the chapter's parts at
      paper scale that follows it (a code cell shown without its code) moves inside the box.
    * The first code cell that begins with imports (the set-up cell) shows its output but folds its code
      under "Show the set-up code" (the downloaded notebook keeps it as a plain cell).

    Returns how many boxes, tables and set-up cells were folded.
    """
    folded = {"boxes": 0, "tables": 0, "setup": 0}
    for box in list(doctree.findall(nodes.admonition)):
        title = next(iter(box.findall(nodes.title)), None)
        if title is None or title.astext().strip() not in NEEDS_TITLES:
            continue
        if "dropdown" not in box["classes"]:
            box["classes"].append("dropdown")
        folded["boxes"] += 1
        parent = box.parent
        after = parent.index(box) + 1
        cell = parent.children[after] if after < len(parent.children) else None
        if (isinstance(cell, nodes.container) and cell.get("nb_element") == "cell_code"
                and _cell_source(cell) is None and cell.children):
            parent.remove(cell)
            box.append(cell)
            folded["tables"] += 1
    for cell in doctree.findall(nodes.container):
        if cell.get("nb_element") != "cell_code":
            continue
        code = _cell_source(cell)
        if code is None:
            continue
        if _is_setup_source(code) and not cell.get("hide_mode"):
            cell["hide_mode"] = "input"
            cell["prompt_show"], cell["prompt_hide"] = SETUP_PROMPT
            folded["setup"] += 1
        break  # only the first cell with code shown: later imports belong to the lecture
    return folded


class FoldLogistics(SphinxPostTransform):
    """:func:`fold_logistics` on every chapter, before myst-nb wraps the hidden cells (priority 199)."""

    default_priority = 190
    formats = ("html",)

    def run(self, **kwargs):
        if _is_chapter(self.env.docname):
            fold_logistics(self.document)


_NOT_PROSE = (nodes.literal_block, nodes.literal, nodes.math, nodes.math_block, nodes.raw, nodes.comment)


def plain_prose_doctree(doctree) -> int:
    """Put the prose of a page in the house style (``posgeom.wording.plain_prose``: one percent style, no
    template plural), the values glued into it included; code, literals and maths are left alone.
    Returns how many pieces of text changed."""
    from posgeom.wording import plain_prose

    changed, before = 0, ""
    for text in list(doctree.findall(nodes.Text)):
        if text.parent is None or any(isinstance(a, _NOT_PROSE) for a in _ancestors(text)):
            continue
        new = plain_prose(str(text))
        if new.startswith(" %") and before[-1:].isdigit():  # a glued number, then " % of ...": "90%"
            new = new[1:]
        before = new
        if new != str(text):
            text.parent.replace(text, nodes.Text(new))
            changed += 1
    return changed


def takes_house_style(docname: str) -> bool:
    """The chapters and the summary (the API reference quotes docstrings as they are written)."""
    return _is_chapter(docname) or docname.startswith("summary/")


class PlainProse(SphinxPostTransform):
    """:func:`plain_prose_doctree` on the pages of :func:`takes_house_style`, after the glued values are in."""

    default_priority = 800
    formats = ("html",)

    def run(self, **kwargs):
        if takes_house_style(self.env.docname):
            plain_prose_doctree(self.document)


def _ancestors(node):
    node = node.parent
    while node is not None:
        yield node
        node = node.parent


def setup(app):
    app.connect("config-inited", _search_scorer)
    app.add_directive("posgeom-citation", CitationDirective)
    app.add_directive("posgeom-needs", NeedsDirective)
    app.add_post_transform(FoldLogistics)
    app.add_post_transform(PlainProse)
    app.connect("html-page-context", _footer_links)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
