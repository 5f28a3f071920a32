"""The book's Sphinx extension, without a build: numbering per page and one copy of each script."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[1]


def _extension(name: str = "posgeom_book"):
    spec = importlib.util.spec_from_file_location(name, REPO / "book" / "_ext" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_numbers_restart_on_every_page():
    env = SimpleNamespace(toc_fignumbers={
        "notebooks/theorem1-necessity": {"proof": {"thm": (1,), "rem": (2,)}, "exercise": {"e1": (1,), "e2": (2,)}},
        "notebooks/theorem4-separation": {"proof": {"thm": (3,), "rem": (4,)}, "exercise": {"e1": (7,), "e2": (8,)}},
        "numbered/page": {"figure": {"f": (2, 1)}},  # under a numbered toctree: left alone
    })
    assert _extension().restart_numbers_per_page(None, env) == []
    page = env.toc_fignumbers["notebooks/theorem4-separation"]
    assert page == {"proof": {"thm": (1,), "rem": (2,)}, "exercise": {"e1": (1,), "e2": (2,)}}
    assert env.toc_fignumbers["numbered/page"] == {"figure": {"f": (2, 1)}}


def test_a_script_registered_twice_is_loaded_once():
    script = SimpleNamespace(filename=None, attributes={"body": 'const THEBE_JS_URL = "x"'})
    again = SimpleNamespace(filename="", attributes={"body": 'const THEBE_JS_URL = "x"'})
    other = SimpleNamespace(filename="sphinx-thebe.js", attributes={"async": "async"})
    context = {"script_files": [script, other, again]}
    _extension().unique_scripts(None, "index", "page.html", context, None)
    assert context["script_files"] == [script, other]


def test_stylesheet_exists_and_pads_table_cells():
    css = (REPO / "book" / "_ext" / "static" / "posgeom.css").read_text()
    assert "padding" in css and "@media (max-width: 600px)" in css


def test_downloads_take_their_values_from_the_jupyter_cache(tmp_path):
    """Not from _build/jupyter_execute, whose copies myst-nb wrote without their glue outputs."""
    ext = _extension()
    app = SimpleNamespace(config=SimpleNamespace(nb_execution_cache_path="_build/.jupyter_cache"),
                          srcdir=str(tmp_path), outdir=str(tmp_path / "_build" / "html"))
    assert ext.notebook_values_source(app) == tmp_path / "_build" / ".jupyter_cache"
    app.config.nb_execution_cache_path = ""
    assert ext.notebook_values_source(app) == tmp_path / "_build" / ".jupyter_cache"


def test_the_header_download_offers_the_plain_notebook_not_the_myst_source_or_a_print_dialog():
    ext = _extension()

    def menu():
        return [{"label": "download-buttons", "buttons": [
            {"type": "link", "url": "../_sources/notebooks/x.md", "text": ".md", "label": "download-source-button"},
            {"type": "javascript", "javascript": "window.print()", "text": ".pdf", "label": "download-pdf-button"}]},
            {"label": "fullscreen-button"}]

    context = {"header_buttons": menu(), "pathto": lambda target, resource: f"../{target}"}
    ext.chapter_download_buttons(None, "notebooks/corpus-geometry", "page.html", context, None)
    (group, other) = context["header_buttons"]
    assert [b["url"] for b in group["buttons"]] == ["../_notebooks/corpus-geometry.ipynb"]
    assert other == {"label": "fullscreen-button"}
    context = {"header_buttons": menu(), "pathto": lambda target, resource: target}
    ext.chapter_download_buttons(None, "book/teaching", "page.html", context, None)
    assert context["header_buttons"] == [{"label": "fullscreen-button"}]


def test_inline_maths_that_wraps_onto_the_next_line_is_converted_whole():
    convert = _extension().dollar_math_to_rst
    assert convert(r"relative $\|\mathbb E[c e]\| /" + "\n        " + r"\|x\|$; next") == (
        r"relative :math:`\|\mathbb E[c e]\| / \|x\|`; next")
    # a blank line ends a paragraph: a lone $ there is not the start of maths
    assert convert("costs $5\n\nand $6") == "costs $5\n\nand $6"
    assert convert(r"$a$ and $b$") == ":math:`a` and :math:`b`"


def _maths_left_as_text(text: str) -> list[str]:
    """LaTeX commands of ``text`` outside ``literals``, :math: roles and ``.. math::`` blocks."""
    import re

    text = re.sub(r"``.+?``|:math:`(?:[^`\\]|\\.)*`", "", text, flags=re.S)
    text = re.sub(r"\.\. math::.*\n(?:\n|[ ]+.*\n)*", "", text + "\n")
    return re.findall(r"\\[A-Za-z]+", text)


def test_no_api_docstring_loses_its_backslashes():
    """Every docstring of posgeom, as the API page gets it: no LaTeX command is left outside maths (reST
    would strip its backslash: "\\mathbb E" shown as "mathbb E")."""
    import importlib
    import inspect
    import pkgutil

    import posgeom

    convert = _extension().dollar_math_to_rst
    problems = []
    for info in pkgutil.walk_packages(posgeom.__path__, "posgeom."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        objects = [module] + [obj for _, obj in inspect.getmembers(module)
                              if getattr(obj, "__module__", None) == info.name and (inspect.isclass(obj) or callable(obj))]
        objects += [member for obj in objects if inspect.isclass(obj) for member in vars(obj).values()
                    if inspect.isfunction(member) or isinstance(member, property)]
        for obj in objects:
            doc = inspect.getdoc(obj)
            left = _maths_left_as_text(convert(doc)) if doc else []
            if left:
                problems.append(f"{info.name}.{getattr(obj, '__qualname__', '')}: {left[:3]}")
    assert not problems, "docstrings whose maths reST would strip:\n" + "\n".join(sorted(set(problems)))


def test_an_attribute_comment_with_a_colon_is_not_read_as_a_type():
    from sphinx.ext.napoleon import Config
    from sphinx.ext.napoleon.docstring import NumpyDocstring

    ext = _extension()
    config = Config(napoleon_numpy_docstring=True, napoleon_use_rtype=False, napoleon_preprocess_types=False)
    prose = ["At most this many seeds (posgeom.verdicts.MAX_SEEDS: past it a rule asks for",
             "a less noisy design); a plan past it runs the cap."]

    def rendered(lines):
        return str(NumpyDocstring(lines, config, what="attribute", name="x"))

    assert ":type: At most this many seeds" in rendered(prose)  # the oracle: napoleon alone misreads it
    fixed = ext.prose_attribute_lines(prose)
    assert ":type:" not in rendered(fixed) and " ".join(fixed) == " ".join(prose)  # the same words, one more break
    assert fixed[0] == "At most this many seeds"
    # no colon, a colon only inside a literal or a role, or one word before it: unchanged
    for lines in (["The steps of each run."], ["Sized by ``plan_from_pilot``'s ``a: b`` rule."],
                  [":data:`posgeom.verdicts.MAX_SEEDS` seeds at most."], ["note: prose"], []):
        assert ext.prose_attribute_lines(lines) == lines


# ----------------------------------------------------------------------------- the lecture first


def _chapter_doctree():
    """A chapter as myst-nb hands it over: intro, the needs box, the paper-parts table (a cell without its
    code), the set-up cell, a figure cell."""
    from docutils import nodes
    from docutils.utils import new_document
    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser

    def cell(code: str | None, output: str = "out"):
        container = nodes.container(nb_element="cell_code")
        if code is not None:
            source = nodes.container(nb_element="cell_code_source")
            source += nodes.literal_block(code, code)
            container += source
        container += nodes.container("", nodes.paragraph(text=output), nb_element="cell_code_output")
        return container

    doc = new_document("chapter", get_default_settings(Parser))
    section = nodes.section()
    section += nodes.title(text="A chapter")
    box = nodes.admonition()
    box += nodes.title(text="What this chapter needs")
    box += nodes.paragraph(text="Time, memory, data.")
    section += [nodes.paragraph(text="Intro."), box, cell(None, "paper parts table"),
                cell("# set-up\nimport numpy as np\nfrom posgeom import x"), cell("import later\nplot()")]
    doc += section
    return doc, box


def test_a_chapters_logistics_are_folded_and_the_setup_code_hidden():
    ext = _extension("posgeom_reader")
    doc, box = _chapter_doctree()
    assert ext.fold_logistics(doc) == {"boxes": 1, "tables": 1, "setup": 1}
    assert "dropdown" in box["classes"] and "paper parts table" in box.astext()
    cells = [c for c in doc.findall() if getattr(c, "get", None) and c.get("nb_element") == "cell_code"]
    setup, later = [c for c in cells if "import" in c.astext()]
    assert setup["hide_mode"] == "input" and setup["prompt_show"].startswith("Show the set-up code")
    assert not later.get("hide_mode")  # only the set-up cell: the lecture's own code stays in view
    assert ext._is_setup_source("# comment\n\nfrom a import b") and not ext._is_setup_source("x = 1\nimport a")


# ----------------------------------------------------------------------------- licence, citation, search


def test_citation_entries_come_from_citation_cff_and_name_the_book_and_the_paper():
    import yaml

    ext = _extension("posgeom_reader")
    cff = yaml.safe_load((REPO / "CITATION.cff").read_text())
    (book_text, book_bib), (paper_text, paper_bib) = ext.citation_entries(cff)
    assert cff["title"] in book_text and cff["url"] in book_bib and book_bib.startswith("@software{posgeom,")
    assert "{{the posgeom contributors}}" in book_bib  # an entity's name stays whole in BibTeX
    assert paper_bib.startswith("@misc{cirrincione2026geometry,")  # an arXiv preprint, keyed as in references.bib
    assert "eprint = {2604.05217}" in paper_bib and "Cirrincione, Giansalvo" in paper_bib
    assert "arXiv:2604.05217" in paper_text
    assert "@misc{cirrincione2026geometry," in (REPO / "book" / "references.bib").read_text()
    with pytest.raises(ValueError, match="has no 'title'"):
        ext.citation_entries({"authors": [{"name": "x"}]})


def test_licence_and_citation_pages_are_in_the_book_and_linked_from_the_landing_page_and_footer():
    import yaml

    ext = _extension("posgeom_reader")
    toc = yaml.safe_load((REPO / "_toc.yml").read_text())
    files = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    assert ext.LICENCE_PAGE in files and ext.CITE_PAGE in files
    assert "literalinclude} ../LICENSE" in (REPO / f"{ext.LICENCE_PAGE}.md").read_text()
    assert "{posgeom-citation}" in (REPO / f"{ext.CITE_PAGE}.md").read_text()
    intro = (REPO / "book" / "intro.md").read_text()
    assert "{doc}`licence`" in intro and "{doc}`cite`" in intro
    context = {"pathto": lambda page: f"../{page}.html"}
    ext._footer_links(SimpleNamespace(builder=SimpleNamespace(format="html")), "notebooks/x", "page.html", context, None)
    assert 'href="../book/licence.html"' in context["theme_extra_footer"]
    assert 'href="../book/cite.html"' in context["theme_extra_footer"]


def test_search_lists_the_api_reference_after_the_chapters():
    ext = _extension("posgeom_reader")
    config = SimpleNamespace(html_search_scorer="")
    ext._search_scorer(None, config)
    scorer = Path(config.html_search_scorer).read_text()
    # Sphinx uses the file's Scorer whole (its own is defined only when none is): every weight is there
    for weight in ("objNameMatch", "objPartialMatch", "objPrio", "objPrioDefault", "title", "partialTitle",
                   "term", "partialTerm", "score:"):
        assert weight in scorer, weight
    assert '"book/api"' in scorer


def test_prose_of_a_chapter_takes_the_house_style_but_code_and_maths_do_not():
    from docutils import nodes
    from docutils.frontend import get_default_settings
    from docutils.parsers.rst import Parser
    from docutils.utils import new_document

    ext = _extension("posgeom_reader")
    doc = new_document("chapter", get_default_settings(Parser))
    doc += nodes.paragraph("", "", nodes.Text("reached 95 % in 3 run(s); "), nodes.literal("a 5 %", "a 5 %"))
    doc += nodes.literal_block("print('5 %')", "print('5 %')")
    assert ext.plain_prose_doctree(doc) == 1
    assert doc.children[0].astext() == "reached 95% in 3 runs; a 5 %"
    assert doc.children[1].astext() == "print('5 %')"
    assert ext.takes_house_style("notebooks/x") and ext.takes_house_style("summary/does-the-paper-hold-up")
    assert not ext.takes_house_style("book/api")  # the API reference quotes docstrings as they are
