"""Chapters as plain notebooks (posgeom.notebooks): what the site's .ipynb downloads contain."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

from posgeom.notebooks import glue_values, plain_markdown, plain_notebook, write_plain_notebook

REPO = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((REPO / "notebooks").glob("*.md"))
_SOLUTION = re.compile(r"^(?P<fence>`{3,})\{solution\}.*?\n(?P<body>.*?)^(?P=fence)[ \t]*$", re.S | re.M)


def solution_lines(source: str) -> list[str]:
    """Long lines that occur only inside the chapter's solutions."""
    bodies = [m.group("body") for m in _SOLUTION.finditer(source)]
    outside = _SOLUTION.sub("", source)
    return [line.strip() for body in bodies for line in body.splitlines()
            if len(line.strip()) >= 30 and not line.strip().startswith(":") and line.strip() not in outside]


def test_every_chapter_is_found():
    assert len(CHAPTERS) >= 13


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_download_has_no_myst_left_and_no_solutions(chapter, tmp_path):
    target = write_plain_notebook(chapter, tmp_path / f"{chapter.stem}.ipynb")
    nb = nbformat.read(str(target), as_version=4)
    nbformat.validate(nb)
    text = target.read_text()
    markdown = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "{glue" not in text
    assert "```{prf:" not in markdown and "{prf:" not in markdown
    assert "{solution" not in markdown and "{exercise" not in markdown and "{admonition" not in markdown
    assert "from myst_nb import" not in text
    source = chapter.read_text()
    hidden = solution_lines(source)
    if "{solution}" in source:
        assert hidden, "the solutions of this chapter have no distinctive line to look for"
    leaked = [line for line in hidden if line in markdown or json.dumps(line)[1:-1] in text]
    assert not leaked, leaked[:3]
    if "{exercise}" in source:
        assert "**Exercise 1" in markdown
    assert all(not o for c in nb.cells if c.cell_type == "code" for o in [c.outputs])


def test_blocks_become_plain_markdown():
    source = "\n".join([
        "(sec-x)=",
        "## Result",
        "% a comment",
        "```{prf:theorem} Order",
        ":label: thm-order",
        "",
        "For all $i$, $$a_i \\le b_i.$$",
        "```",
        "",
        "```{prf:proof}",
        "Obvious, see {prf:ref}`thm-order` and {cite:p}`vaswani2017`.",
        "```",
        "",
        "````{exercise} Try it",
        ":label: ex-1",
        "Compute $x$.",
        "```{note}",
        "Nested.",
        "```",
        "````",
        "",
        "````{solution} ex-1",
        ":class: dropdown",
        "The answer is 42.",
        "~~~python",
        "print(42)",
        "~~~",
        "````",
        "```{admonition} Careful",
        ":class: warning",
        "Two lines",
        "of text.",
        "```",
    ])
    works = {"vaswani2017": {"authors_year": ("Vaswani et al.", "2017"), "entry": "Vaswani et al. Attention."}}
    cited: list = []
    out = plain_markdown(source, labels={"thm-order": "Theorem 1"}, book={"bibliography": works, "cited": cited})
    assert "**Theorem 1 (Order).**" in out and "For all $i$, $$a_i \\le b_i.$$" in out
    assert "*Proof.*" in out and "Obvious, see Theorem 1 and (Vaswani et al., 2017)." in out and "$\\blacksquare$" in out
    assert cited == ["vaswani2017"]
    assert "**Exercise 1 (Try it).**" in out and "> **Note**" in out and "> Nested." in out
    assert "42" not in out and "dropdown" not in out and ":label:" not in out
    assert "> **Careful**" in out and "> Two lines\n> of text." in out
    assert "(sec-x)=" not in out and "a comment" not in out
    kept = plain_markdown(source, solutions=True, book={"bibliography": works})
    assert "**Solution.**" in kept and "The answer is 42." in kept and "print(42)" in kept


BOOK_CONFIG = """repository:
  url: https://example.org/me/book
  branch: dev
html:
  baseurl: https://me.example.org/book/
bibtex_bibfiles:
  - refs.bib
"""
REFS = """@article{smith2020,
  author = {Smith, Ann and Jones, Bob and Lee, Cy},
  title = {Positions},
  journal = {J. Pos.},
  year = {2020}
}
"""
HEADER = ["---", "jupytext:", "  text_representation:", "    extension: .md", "    format_name: myst", "kernelspec:",
          "  name: python3", "  display_name: Python 3", "---", ""]


def small_book(tmp_path, body: list[str]) -> Path:
    """A book folder (``_config.yml``, ``refs.bib``) with one chapter ``notebooks/chapter.md``."""
    (tmp_path / "_config.yml").write_text(BOOK_CONFIG)
    (tmp_path / "refs.bib").write_text(REFS)
    chapter = tmp_path / "notebooks" / "chapter.md"
    chapter.parent.mkdir()
    chapter.write_text("\n".join(HEADER + body))
    return chapter


GLUE_CHAPTER = [
    "```{code-cell} ipython3", "from myst_nb import glue", "x = 1", "```", "",
    "```{code-cell} ipython3", "for name in ('a', 'b'):", "    glue(f\"rate_{name}\", 0.1234, display=False)",
    "glue('count', 7)", "```", "",
    "The rate is {glue:text}`rate_a:.1%` over {glue:text}`count` runs, b is {glue:text}`rate_b:.2f`.", "",
]


def test_glued_numbers_are_written_out_or_their_cell_named(tmp_path):
    chapter = small_book(tmp_path, GLUE_CHAPTER)
    named = plain_notebook(chapter)
    text = named.cells[-1].source
    assert "rate_a" not in text and "count`" not in text and "{glue" not in text
    assert text.count("[number: run code cell 2]") == 3 and "run it to see them" in text
    code = [c for c in named.cells if c.cell_type == "code"]
    assert code[1].source.startswith("from posgeom.notebooks import glue")
    executed = {"cells": [{"cell_type": "code", "outputs": [
        {"output_type": "display_data", "metadata": {"scrapbook": {"name": "rate_a", "mime_prefix": "application/papermill.record/"}},
         "data": {"application/papermill.record/text/plain": "np.float64(0.1234)"}},
        {"output_type": "display_data", "metadata": {"scrapbook": {"name": "count", "mime_prefix": ""}},
         "data": {"text/plain": "7"}},
    ]}]}
    assert glue_values(executed) == {"rate_a": "np.float64(0.1234)", "count": "7"}
    text = plain_notebook(chapter, executed=executed).cells[-1].source
    assert text.startswith("The rate is 12.3% over 7 runs, b is [number: run code cell 2].")


def test_a_glued_number_names_the_cell_of_its_longest_prefix(tmp_path):
    """``glue_fields("t4", ...)`` in one cell and ``glue_fields("t4_pre", ...)`` in a later one: a role
    ``t4_pre_gap`` names the later cell (its prefix is the longer match), ``t4_rate`` the earlier one, a key
    glued by name its own cell whatever prefix starts it, and an f-string prefix (``f"sm_{key}"``) any key."""
    chapter = small_book(tmp_path, [
        "```{code-cell} ipython3", "glue_fields('t4', {'rate': 0.5})", "```", "",
        "```{code-cell} ipython3", "glue_fields('t4_pre', {'gap': 0.1})", "glue('t4_named', 3)", "```", "",
        "```{code-cell} ipython3", "glue('t4_pre_exact', 1)", "```", "",
        "```{code-cell} ipython3", "for key in ('dr', 'mk'):", "    glue_fields(f'sm_{key}', {'match': 0.9})", "```", "",
        "A {glue:text}`t4_pre_gap:.2f`, b {glue:text}`t4_rate`, c {glue:text}`t4_named`, "
        "d {glue:text}`t4_pre_exact`, e {glue:text}`sm_mk_match`.", "",
    ])
    text = plain_notebook(chapter).cells[-1].source
    assert text.startswith("A [number: run code cell 2], b [number: run code cell 1], c [number: run code cell 2], "
                           "d [number: run code cell 3], e [number: run code cell 4].")


def test_a_figure_caption_quoting_glued_settings_is_written_out(tmp_path):
    """A caption (a code cell's ``mystnb.figure.caption``) quotes the settings in force through glue roles,
    as prose does: the downloaded notebook has the values there too."""
    figure = ["```{code-cell} ipython3", "---", "mystnb:", "  figure:",
              "    caption: Runs at scale {glue:text}`cap_scale`, {glue:text}`cap_steps` steps.", "    name: fig-x",
              "---", "from myst_nb import glue", "glue('cap_scale', 'paper', display=False)",
              "glue('cap_steps', 5000, display=False)", "```", ""]
    chapter = small_book(tmp_path, figure)
    executed = {"cells": [{"cell_type": "code", "outputs": [
        {"output_type": "display_data", "metadata": {"scrapbook": {"name": n, "mime_prefix": "application/papermill.record/"}},
         "data": {"application/papermill.record/text/plain": v}} for n, v in (("cap_scale", "'paper'"), ("cap_steps", "5000"))
    ]}]}
    code = [c for c in plain_notebook(chapter, executed=executed).cells if c.cell_type == "code"]
    assert code[-1].metadata["mystnb"]["figure"]["caption"] == "Runs at scale paper, 5000 steps."
    unrun = [c for c in plain_notebook(chapter).cells if c.cell_type == "code"]
    assert "{glue" not in unrun[-1].metadata["mystnb"]["figure"]["caption"]


def test_a_glue_role_no_cell_computes_is_an_error(tmp_path):
    chapter = small_book(tmp_path, ["Value {glue:text}`nowhere`.", ""])
    with pytest.raises(ValueError, match="no code cell of the chapter glues 'nowhere'"):
        plain_notebook(chapter)


def test_glued_values_come_from_the_books_jupyter_cache(tmp_path):
    """myst-nb strips the glue outputs from _build/jupyter_execute; its jupyter-cache keeps them."""
    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn
    from myst_nb.core.read import read_myst_markdown_notebook
    from myst_parser.config.main import MdParserConfig

    from posgeom.notebooks import cached_execution

    chapter = small_book(tmp_path, GLUE_CHAPTER)
    cache_dir = tmp_path / "_build" / ".jupyter_cache"
    assert cached_execution(chapter, cache_dir) is None
    nb = read_myst_markdown_notebook(chapter.read_text(), config=MdParserConfig(), add_source_map=True)
    glue_cell = [c for c in nb.cells if c.cell_type == "code"][1]
    glue_cell.outputs = [nbformat.v4.new_output("display_data", metadata={"scrapbook": {"name": key, "mime_prefix": "application/papermill.record/"}},
                                                data={"application/papermill.record/text/plain": value})
                         for key, value in (("rate_a", "0.5"), ("rate_b", "0.25"), ("count", "3"))]
    get_cache(str(cache_dir)).cache_notebook_bundle(CacheBundleIn(nb, str(chapter)), check_validity=False)
    text = plain_notebook(chapter, executed=cache_dir).cells[-1].source
    assert text.startswith("The rate is 50.0% over 3 runs, b is 0.25.")
    chapter.write_text(chapter.read_text().replace("x = 1", "x = 2"))  # edited since: the cache does not match
    assert cached_execution(chapter, cache_dir) is None


def test_export_installs_posgeom_links_the_site_and_cites_author_year(tmp_path):
    chapter = small_book(tmp_path, [
        "# A chapter", "", "As {cite:t}`smith2020` show {cite:p}`smith2020`; see [the next one](other.md#sec-a)",
        "and {doc}`the guide <../book/guide>`, or [a site](https://example.org/x.md).", "",
        "```{code-cell} ipython3", "x = 1", "```", ""])
    nb = plain_notebook(chapter)
    assert nb.cells[0].source.startswith("# A chapter")
    note, install = nb.cells[1], nb.cells[2]
    assert "https://me.example.org/book/" in note.source
    assert install.metadata["tags"] == ["install-posgeom"]
    assert '%pip install --quiet "posgeom[nlp] @ git+https://example.org/me/book@dev"' in install.source
    assert not re.search(r'"torch==|posgeom\[nlp\]==', install.source)  # a range, never a pin: a torch is kept
    body = "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")
    assert "Smith et al. (2020) show (Smith et al., 2020)" in body
    assert "[the next one](https://me.example.org/book/notebooks/other.html#sec-a)" in body
    assert "[the guide](https://me.example.org/book/book/guide.html)" in body
    assert "[a site](https://example.org/x.md)" in body
    assert nb.cells[-1].source.startswith("## References\n\n- Ann Smith, Bob Jones, and Cy Lee")
    assert "smith2020" not in body


def _run_install_cell(source: str, *, have: set, system: str, gpu: bool) -> list[str]:
    """The ``%pip`` lines the install cell runs where the modules ``have`` are importable, on ``system``, with or
    without ``nvidia-smi``: the cell as IPython runs it, with the environment stubbed."""
    import importlib.util
    import platform
    import shutil

    from IPython.core.inputtransformer2 import TransformerManager

    ran = []

    class Shell:
        def run_line_magic(self, name, line):
            ran.append(f"%{name} {line}")

    code = TransformerManager().transform_cell(source)
    patches = {(importlib.util, "find_spec"): lambda name, *a: object() if name in have else None,
               (platform, "system"): lambda: system,
               (shutil, "which"): lambda name, *a, **k: "/usr/bin/nvidia-smi" if gpu and name == "nvidia-smi" else None}
    saved = {key: getattr(*key) for key in patches}
    try:
        for (module, name), value in patches.items():
            setattr(module, name, value)
        exec(compile(code, "install-cell", "exec"), {"get_ipython": Shell})
    finally:
        for (module, name), value in saved.items():
            setattr(module, name, value)
    return ran


def test_the_install_cell_keeps_an_installed_torch_and_takes_the_cpu_wheel_only_without_gpu(tmp_path):
    from posgeom.notebooks import torch_requirement

    note, install = plain_notebook(small_book(tmp_path, ["# A chapter", ""])).cells[1:3]
    posgeom = '%pip install --quiet "posgeom[nlp] @ git+https://example.org/me/book@dev"'
    cpu_torch = f'%pip install --quiet "{torch_requirement()}" --index-url https://download.pytorch.org/whl/cpu'
    assert torch_requirement().startswith("torch") and "==" not in torch_requirement()
    # posgeom installed already: nothing
    assert _run_install_cell(install.source, have={"posgeom", "torch"}, system="Linux", gpu=False) == []
    # Colab, a conda or lab environment: its torch is kept (pip is asked for posgeom alone)
    assert _run_install_cell(install.source, have={"torch"}, system="Linux", gpu=True) == [posgeom]
    assert _run_install_cell(install.source, have={"torch"}, system="Linux", gpu=False) == [posgeom]
    # a Linux laptop with no torch and no GPU: PyTorch's CPU wheel first, then posgeom
    assert _run_install_cell(install.source, have=set(), system="Linux", gpu=False) == [cpu_torch, posgeom]
    # a GPU machine, or macOS / Windows (PyPI's wheels are CPU builds there): pip's own choice
    assert _run_install_cell(install.source, have=set(), system="Linux", gpu=True) == [posgeom]
    assert _run_install_cell(install.source, have=set(), system="Darwin", gpu=False) == [posgeom]
    assert torch_requirement() in note.source and "CPU build" in note.source


def test_a_book_without_the_export_settings_is_refused(tmp_path):
    chapter = small_book(tmp_path, ["Text.", ""])
    (tmp_path / "_config.yml").write_text("title: x\n")
    with pytest.raises(ValueError, match="sets no repository.url, repository.branch, html.baseurl"):
        plain_notebook(chapter)


def test_glue_fallback_shows_the_value(capsys):
    from posgeom.notebooks import glue

    glue("posgeom_test_value", 3, display=False)  # with or without myst-nb: no error


def test_the_cache_myst_nb_writes_is_the_one_read(tmp_path):
    """Execute a small chapter through myst-nb's own cache client (as the book build does), then read
    its glued values back: the hash the writer computes matches the one myst-nb stored."""
    import logging

    from myst_nb.core.config import NbParserConfig
    from myst_nb.core.execute import create_client
    from myst_nb.core.read import create_nb_reader
    from myst_parser.config.main import MdParserConfig

    chapter = small_book(tmp_path, GLUE_CHAPTER)
    cache_dir = tmp_path / "_build" / ".jupyter_cache"
    nb_config = NbParserConfig(execution_mode="cache", execution_cache_path=str(cache_dir), execution_timeout=120)
    text = chapter.read_text()
    reader = create_nb_reader(str(chapter), MdParserConfig(enable_extensions={"dollarmath", "colon_fence"}),
                              nb_config, text)
    with create_client(reader.read(text), str(chapter), nb_config, logging.getLogger("posgeom-test"), reader.read_fmt):
        pass
    text = plain_notebook(chapter, executed=cache_dir).cells[-1].source
    assert text.startswith("The rate is 12.3% over 7 runs, b is 0.12.")


def test_substitutions_are_written_out_from_the_measured_times_or_refused(tmp_path):
    """``{{ time_<chapter> }}`` becomes the time the build measured (book/chapter-times.json), as on the
    site; a substitution with no text is an error, never left as MyST."""
    chapter = small_book(tmp_path, ["A run takes {{ time_real_corpora }}; this one {{time_chapter}}.", ""])
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "chapter-times.json").write_text(json.dumps({"seconds": {"real-corpora": 403.2}}))
    def markdown(nb):
        return "\n".join(c.source for c in nb.cells if c.cell_type == "markdown")

    assert "A run takes 6.7 min; this one not measured yet." in markdown(plain_notebook(chapter))
    given = markdown(plain_notebook(chapter, substitutions={"time_chapter": "12 s"}))
    assert "this one 12 s." in given
    chapter.write_text(chapter.read_text() + "\nSee {{ version }}.\n")
    with pytest.raises(ValueError, match=r"\{\{ version \}\}"):
        plain_notebook(chapter)


def test_glue_fields_glues_every_field_of_a_record(monkeypatch):
    from dataclasses import dataclass

    import posgeom.notebooks as nbmod

    @dataclass(frozen=True)
    class Summary:
        rate: float
        worst: str
        steps: int | None

    glued = []
    monkeypatch.setattr(nbmod, "glue", lambda name, value, display=True: glued.append((name, value, display)))
    import numpy as np

    nbmod.glue_fields("t1", Summary(np.float64(0.25), "alibi", None))
    assert glued == [("t1_rate", 0.25, False), ("t1_worst", "alibi", False), ("t1_steps", "none", False)]
    assert type(glued[0][1]) is float  # np.float64 displays as "np.float64(0.25)", which the book cannot format
    glued.clear()
    nbmod.glue_fields("t2", {"rate": np.float64(0.5), "worst": None})  # a mapping is glued the same way
    assert glued == [("t2_rate", 0.5, False), ("t2_worst", "none", False)]
    glued.clear()
    nbmod.glue_fields("t3", {"D": np.eye(3), "peak": np.int64(4)})  # an array is drawn, not quoted: left out
    assert glued == [("t3_peak", 4, False)]
    with pytest.raises(TypeError, match="dataclass instance or a mapping"):
        nbmod.glue_fields("t1", [("rate", 0.25)])
    with pytest.raises(TypeError, match="dataclass instance or a mapping"):
        nbmod.glue_fields("t1", Summary)  # the class, not an instance
    with pytest.raises(ValueError, match="letters, digits and underscores"):
        nbmod.glue_fields("t-1", Summary(0.25, "alibi", 3))


def test_a_number_glued_by_glue_fields_names_its_cell(tmp_path):
    chapter = small_book(tmp_path, [
        "```{code-cell} ipython3", "x = 1", "```", "",
        "```{code-cell} ipython3", ":tags: [remove-cell]", "", "glue_fields(\"t1\", summary)", "```", "",
        "The rate is {glue:text}`t1_rate:.1%`.", "",
    ])
    text = plain_notebook(chapter).cells[-1].source
    assert text.startswith("The rate is [number: run code cell 2].")
