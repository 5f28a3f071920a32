r"""Chapters as plain Jupyter notebooks: MyST blocks turned into Markdown that any Jupyter renders.

:func:`plain_notebook` turns a chapter (``notebooks/*.md``) into an ``.ipynb`` that reads like the page in
JupyterLab or Colab without any extension: directives become bold run-in headings, block quotes or display
maths; solutions are left out unless ``solutions=True`` (a gated solution's stub cell shows in its place);
glued numbers are written as the site shows them, from an executed copy (the book's jupyter-cache, an executed
``.ipynb`` or its values), or as "[number: run code cell N]"; citations become author–year text with a
reference list; links to other pages point to the published site; the ``{posgeom-needs}`` box becomes its text;
and a first cell installs posgeom from the repository (keeping an installed PyTorch within posgeom's range,
taking PyTorch's CPU wheel on a Linux machine with neither PyTorch nor a GPU).
"""

from __future__ import annotations

import ast
import json
import posixpath
import re
from functools import partial
from pathlib import Path

from .timings import chapter_memory, chapter_times, time_substitution

__all__ = ["plain_notebook", "plain_markdown", "glue_values", "glue", "glue_fields", "write_plain_notebook", "export_settings",
           "cached_execution", "INSTALL_TAG", "NEEDS_DIRECTIVE"]

#: Tag of the exported notebook's first code cell, which installs posgeom (the grader leaves it out).
INSTALL_TAG = "install-posgeom"

_OPEN = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<name>[\w:-]+)\}[ \t]*(?P<arg>.*)$")
_OPTION = re.compile(r"^:([\w-]+):[ \t]*(.*)$")
_ROLE = re.compile(r"\{(?P<name>[\w:-]+)\}`(?P<body>[^`]*)`")
_TARGET = re.compile(r"^\([\w.:-]+\)=[ \t]*$")
_GLUE_CALL = re.compile(r"""glue\(\s*(?P<f>[fF]?)(?P<q>["'])(?P<key>.+?)(?P=q)""")
_GLUE_FIELDS_CALL = re.compile(r"""glue_fields\(\s*(?P<f>[fF]?)(?P<q>["'])(?P<prefix>[\w{}.\[\]'"]+?)(?P=q)""")
_GLUE_IMPORT = re.compile(r"^from myst_nb import glue[ \t]*$", re.M)
_LINK = re.compile(r"\]\((?P<target>(?![a-z][\w+.-]*:|#|/)[^)\s]+?)\.(?:md|ipynb)(?P<anchor>#[^)\s]*)?\)")

#: Directive name → the run-in heading it gets (numbered kinds are counted per chapter).
_HEADINGS = {"exercise": "Exercise", **{f"prf:{kind}": kind.capitalize() for kind in (
    "theorem", "proposition", "lemma", "corollary", "definition", "conjecture", "remark", "example", "assumption",
    "algorithm", "proof")}}
_UNNUMBERED = {"prf:proof", "prf:remark"}
#: The directive of the box "What this chapter needs" (its argument, optional, names the page; default: the
#: page it is on). The book renders it (``book/_ext/posgeom_reader.py``), a download writes its text
#: (``posgeom.reproduce.box.needs_box``).
NEEDS_DIRECTIVE = "posgeom-needs"
_ADMONITIONS = {"admonition", "note", "tip", "hint", "important", "warning", "caution", "attention",
                "danger", "error", "seealso"}


def glue(name: str, value, display: bool = True) -> None:
    """``myst_nb.glue`` without myst-nb: the same output, so :func:`glue_values` reads an exported notebook's run."""
    from IPython.core.formatters import format_display_data
    from IPython.display import display as _display
    bundle, metadata = format_display_data(value)
    prefix = "" if display else "application/papermill.record/"
    metadata["scrapbook"] = {"name": name, "mime_prefix": prefix}
    _display({prefix + k: v for k, v in bundle.items()}, raw=True, metadata=metadata)


def glue_fields(prefix: str, record) -> None:
    """Glue every field of a dataclass instance or mapping as ``<prefix>_<field>``, not displayed (``None`` as
    ``"none"``, a NumPy scalar as its Python number; arrays are left out)."""
    import dataclasses
    from collections.abc import Mapping
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        record = {f.name: getattr(record, f.name) for f in dataclasses.fields(record)}
    if not isinstance(record, Mapping):
        raise TypeError(f"glue_fields needs a dataclass instance or a mapping, got {type(record).__name__}")
    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_]*", prefix):
        raise ValueError(f"glue prefix {prefix!r} must be letters, digits and underscores, starting with a letter")
    for name, value in ((n, v) for n, v in record.items() if getattr(v, "ndim", 0) == 0):
        if hasattr(value, "item") and getattr(value, "ndim", None) == 0:
            value = value.item()  # a NumPy scalar displays as np.float64(...), which the book cannot format
        glue(f"{prefix}_{name}", "none" if value is None else value, display=False)


def glue_values(executed: str | Path | dict) -> dict[str, str]:
    """The ``text/plain`` value of every glued variable of an executed notebook (its path or JSON)."""
    nb = executed if isinstance(executed, dict) else json.loads(Path(executed).read_text())
    if "cells" not in nb:  # already the values
        return dict(nb)
    values = {}
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            scrap = output.get("metadata", {}).get("scrapbook") or {}
            text = output.get("data", {}).get(scrap.get("mime_prefix", "") + "text/plain") if scrap else None
            if text is not None:
                values[scrap["name"]] = "".join(text) if isinstance(text, list) else text
    return values


_NUMPY_SCALAR = re.compile(r"^np\.(?:float|int|uint|bool_?)\d*\((.*)\)$", re.S)


def _format_plain(text: str, spec: str) -> str:
    """The text of ``{glue:text}`key:spec``` as the book shows it (myst-nb's rule)."""
    text = _NUMPY_SCALAR.sub(r"\1", text)  # np.float64(0.5) -> 0.5 (numpy >= 2 reprs)
    try:
        value = ast.literal_eval(text)
    except (SyntaxError, ValueError):
        value = text
    if not spec:
        return str(value)
    cast = str if spec[-1] == "s" else int if spec[-1] in "bcdoxX" else float if spec[-1] in "eEfFgGn%" else None
    return format(cast(value) if cast else value, spec)


def _glue_cells(code_cells: list[str]) -> list[tuple[re.Pattern, int]]:
    """(pattern of the keys glued, 1-based code cell number) for every ``glue(...)`` call, the most specific first."""
    found = []
    for number, source in enumerate(code_cells, start=1):
        for m in _GLUE_CALL.finditer(source):
            key = m.group("key")
            if m.group("f"):  # f"{corpus}_{key}_viol": any text where the fields are
                parts = re.split(r"\{[^{}]*\}", key)
                pattern, specific = ".+".join(re.escape(p) for p in parts), len("".join(parts))
            else:
                pattern, specific = re.escape(key), float("inf")
            found.append((re.compile(pattern + r"\Z"), number, specific))
        for m in _GLUE_FIELDS_CALL.finditer(source):  # glue_fields("t1", summary): every "t1_<field>"
            parts = re.split(r"\{[^{}]*\}", m.group("prefix")) if m.group("f") else [m.group("prefix")]
            pattern = r"\w+".join(re.escape(p) for p in parts)  # f"sm_{key}": sm_<any key>_<field>
            found.append((re.compile(pattern + r"_\w+\Z"), number, len("".join(parts))))
    return [(pattern, number) for pattern, number, _ in sorted(found, key=lambda f: -f[2])]


def _role_text(name: str, body: str, ctx: dict) -> str:
    if name.startswith("glue"):
        key, _, spec = body.rpartition(":") if ":" in body else (body, "", "")
        key = key or body
        if key in ctx["values"]:
            return _format_plain(ctx["values"][key], spec)
        cell = next((number for pattern, number in ctx["glue_cells"] if pattern.match(key)), None)
        if cell is None:
            raise ValueError(f"no code cell of the chapter glues {key!r}; fix the {{glue:text}} role or the glue call")
        ctx["named_cells"].add(cell)
        return f"[number: run code cell {cell}]"
    title, _, target = body.partition("<")
    text = (title.strip() if target else body).strip()
    if name == "prf:ref" and not target:
        return ctx["labels"].get(text, text)
    if name.startswith("cite"):
        return _citation(name, body, ctx)
    if name == "doc":
        page = target.rstrip(">").strip() if target else text
        url = _site_url(page, ctx)
        label = text if target else Path(page).name.replace("-", " ")
        return f"[{label}]({url})" if url else label
    if name == "ref" and not target:
        return Path(text).name.replace("-", " ")
    if name == "math":
        return f"${text}$"
    return f"`{text}`" if name in ("code", "py:func", "py:class", "py:mod", "py:meth", "py:data") else text


def _site_url(page: str, ctx: dict) -> str | None:
    """The published address of a book page named relative to the chapter (or from the book's root)."""
    if ctx.get("site") is None:
        return None
    page, hash_sign, anchor = page.partition("#")
    anchor = hash_sign + anchor
    page = re.sub(r"\.(md|ipynb)$", "", page)
    where = page.lstrip("/") if page.startswith("/") else posixpath.normpath(posixpath.join(ctx["folder"], page))
    return f"{ctx['site']}{where}.html{anchor}"


def _links(text: str, ctx: dict) -> str:
    def to_site(m: re.Match) -> str:
        url = _site_url(m.group("target") + ".md" + (m.group("anchor") or ""), ctx)
        return f"]({url})" if url else m.group(0)

    return _LINK.sub(to_site, text)


def _citation(name: str, body: str, ctx: dict) -> str:
    """``{cite:p}`a,b``` as "(A et al., 2019; B, 2020)", ``{cite:t}`` as "A et al. (2019)"."""
    works = ctx["bibliography"]
    keys = [k.strip() for k in body.split(",") if k.strip()]
    unknown = [k for k in keys if works is None or k not in works]
    if unknown:
        raise ValueError(f"{ctx['chapter']}: no reference {', '.join(unknown)} in the book's references.bib; "
                         "add it there or fix the citation")
    ctx["cited"].extend(k for k in dict.fromkeys(keys) if k not in ctx["cited"])
    pairs = [works[k]["authors_year"] for k in keys]
    if name in ("cite:t", "cite:ts"):
        return "; ".join(f"{who} ({year})" for who, year in pairs)
    return "(" + "; ".join(f"{who}, {year}" for who, year in pairs) + ")"


def _roles(text: str, ctx: dict) -> str:
    return _links(_ROLE.sub(lambda m: _role_text(m.group("name"), m.group("body"), ctx), text), ctx)


def _needs_lines(arg: str, ctx: dict) -> list[str]:
    """The ``{posgeom-needs}`` box as a block quote (``posgeom.reproduce.box.needs_box``)."""
    from .reproduce.box import needs_box, needs_title
    page = arg or ctx["page"]
    if not page:
        raise ValueError(f"{{{NEEDS_DIRECTIVE}}} needs the page it describes: write its slug after the directive")
    inner = needs_box(page, root=ctx.get("root")).split("\n")
    return ["> " + f"**{needs_title(page)}**", ">"] + [("> " + x) if x.strip() else ">" for x in inner]


def _blocks(lines: list[str], ctx: dict) -> list[str]:
    """Rewrite one Markdown cell's lines (directives recursively)."""
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _OPEN.match(line)
        if not m:
            if not _TARGET.match(line) and not line.startswith("%"):
                out.append(line)
            i += 1
            continue
        fence, name, arg = m.group("fence"), m.group("name"), m.group("arg").strip()
        end = next((j for j in range(i + 1, len(lines)) if lines[j].rstrip() == fence), len(lines))
        body = lines[i + 1:end]
        options = {}
        while body and _OPTION.match(body[0]):
            options.update([_OPTION.match(body.pop(0)).groups()])
        i = end + 1
        if name == "solution" and not ctx["solutions"]:
            continue
        if name == NEEDS_DIRECTIVE:
            out += _needs_lines(arg, ctx) + [""]
            continue
        inner = _blocks(body, ctx)
        while inner and not inner[0].strip():
            inner.pop(0)
        if name in _HEADINGS or name == "solution":
            word = _HEADINGS.get(name, "Solution")
            if name in _HEADINGS and name not in _UNNUMBERED and "nonumber" not in options:
                ctx["counts"][word] = ctx["counts"].get(word, 0) + 1
                word = f"{word} {ctx['counts'][word]}"
            title = f" ({_roles(arg, ctx)})" if arg and name != "solution" else ""
            if "label" in options:
                ctx["labels"][options["label"]] = word
            lead = f"**{word}{title}.**" if name != "prf:proof" else "*Proof.*"
            out += [lead, ""] + inner
            if name == "prf:proof":
                out += ["", "$\\blacksquare$"]
        elif name in _ADMONITIONS:
            title = _roles(arg, ctx) if arg else name.capitalize()
            out += ["> " + f"**{title}**", ">"] + [("> " + x) if x.strip() else ">" for x in inner]
        elif name == "math":
            out += ["$$"] + inner + ["$$"]
        else:
            out += inner
        out.append("")
    return out


def plain_markdown(source: str, *, values: dict | None = None, code_cells: list[str] = (),
                   solutions: bool = False, labels: dict | None = None, counts: dict | None = None,
                   book: dict | None = None) -> str:
    """One Markdown cell of a chapter as plain Markdown (see the module docstring).

    Parameters
    ----------
    source : str
    values : dict, optional
        Glue key → ``text/plain`` value (:func:`glue_values`); keys missing here name their code cell.
    code_cells : list of str
        The chapter's code cells, in order (to name the cell that glues a value).
    solutions : bool
        Keep ``{solution}`` blocks (the instructor's edition).
    labels, counts : dict, optional
        Shared across the cells of a chapter: block labels → their heading, and the numbering.
    book : dict, optional
        The site, the chapter's folder, the bibliography and the works cited so far (built by
        :func:`plain_notebook`). Without it links stay as written and a citation is an error.
    """
    book = book or {}
    source = _substituted(source, book.get("substitutions"), book.get("times", {}), book.get("memory", {}))
    ctx = {"values": values or {}, "glue_cells": _glue_cells(list(code_cells)), "solutions": solutions,
           "labels": {} if labels is None else labels, "counts": {} if counts is None else counts,
           "named_cells": set(), "site": book.get("site"), "folder": book.get("folder", ""),
           "bibliography": book.get("bibliography"), "cited": book.get("cited", []),
           "chapter": book.get("chapter", "the chapter"), "page": book.get("page", ""), "root": book.get("root")}
    text = re.sub(r"\n{3,}", "\n\n", _roles("\n".join(_blocks(source.split("\n"), ctx)), ctx)).strip("\n")
    if ctx["named_cells"]:
        cells = sorted(ctx["named_cells"])
        where = ", ".join(map(str, cells))
        text += (f"\n\n*The numbers marked [number: ...] are computed in code cell{'s' if len(cells) > 1 else ''} "
                 f"{where} (count code cells from the top): run {'them' if len(cells) > 1 else 'it'} to see them.*")
    return text


_SUBSTITUTION = re.compile(r"\{\{\s*(?P<key>[A-Za-z_][\w]*)\s*\}\}")


def _substituted(source: str, substitutions: dict | None, times: dict[str, float],
                 memory: dict[str, float] | None = None) -> str:
    """``{{ key }}`` replaced by its text from ``substitutions``, else a chapter's measured time or peak memory."""
    def text(m: re.Match) -> str:
        key = m.group("key")
        if substitutions and key in substitutions:
            return str(substitutions[key])
        value = time_substitution(key, times, memory or {})
        if value is None:
            raise ValueError(f"the chapter uses the substitution {{{{ {key} }}}} but no text was given for it; "
                             "pass substitutions= (the book's myst_substitutions)")
        return value

    return _SUBSTITUTION.sub(text, source)


def _book_root(chapter: Path) -> Path | None:
    """The book's folder (the one holding ``_config.yml``) above a chapter, or None."""
    return next((folder for folder in Path(chapter).resolve().parents if (folder / "_config.yml").is_file()), None)


def export_settings(config: str | Path) -> dict:
    """Where exported notebooks point: ``{"repository", "branch", "site"}`` from the book's ``_config.yml``
    (``repository.url``, ``repository.branch``, ``html.baseurl``)."""
    import yaml
    path = Path(config)
    data = yaml.safe_load(path.read_text()) or {}
    repository, html = data.get("repository") or {}, data.get("html") or {}
    found = {"repository.url": repository.get("url"), "repository.branch": repository.get("branch"),
             "html.baseurl": html.get("baseurl")}
    missing = [key for key, value in found.items() if not value]
    if missing:
        raise ValueError(f"{path} sets no {', '.join(missing)}: exported notebooks install posgeom from the "
                         "repository and link to the published site; add them to _config.yml")
    return {"repository": str(repository["url"]).rstrip("/"), "branch": str(repository["branch"]),
            "site": str(html["baseurl"]).rstrip("/") + "/"}


def _bibliography(root: Path) -> dict:
    """Citation key → {"authors_year": (names, year), "entry": formatted Markdown} for the book's .bib files."""
    import yaml
    from pybtex.backends.markdown import Backend
    from pybtex.database import parse_file
    from pybtex.richtext import Text
    from pybtex.style.formatting.plain import Style
    files = (yaml.safe_load((root / "_config.yml").read_text()) or {}).get("bibtex_bibfiles") or []
    works, style, backend = {}, Style(), Backend()
    for name in files:
        data = parse_file(str(root / name))
        formatted = {e.key: e.text.render(backend) for e in style.format_entries(data.entries.values())}
        for key, entry in data.entries.items():
            people = entry.persons.get("author") or entry.persons.get("editor") or []
            surnames = [str(Text.from_latex(" ".join(p.prelast_names + p.last_names))) for p in people]
            # "Smith", "Smith and Jones", "Smith et al."; a work with no person is named by its institution or title
            who = (" and ".join(surnames) if len(surnames) <= 2 else f"{surnames[0]} et al.") if surnames else \
                str(Text.from_latex(entry.fields.get("institution", entry.fields.get("title", key))))
            works[key] = {"authors_year": (who, entry.fields.get("year", "n.d.")),
                          "entry": " ".join(formatted[key].split("\n"))}
    return works


def cached_execution(chapter: str | Path, cache: str | Path):
    """The executed notebook the book's jupyter-cache holds for the chapter's current source, or None (matched by the
    hash of the chapter's code, so an edited chapter gives None)."""
    cache = Path(cache)
    if not (cache / "global.db").is_file():
        return None
    from jupyter_cache import get_cache
    from myst_nb.core.read import read_myst_markdown_notebook
    from myst_parser.config.main import MdParserConfig

    chapter = Path(chapter)
    nb = read_myst_markdown_notebook(chapter.read_text(), config=MdParserConfig(), add_source_map=True, path=str(chapter))
    store = get_cache(str(cache))
    try:
        record = store.match_cache_notebook(nb)
    except KeyError:
        return None
    return store.get_cache_bundle(record.pk).nb


#: Where PyTorch's own CPU wheels are (PyPI's Linux wheel of torch is a CUDA build of several GB).
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def torch_requirement() -> str:
    """posgeom's declared PyTorch range (``"torch>=2.5,<3"``), from the installed package's metadata."""
    from importlib.metadata import PackageNotFoundError, requires
    try:
        declared = requires("posgeom") or []
    except PackageNotFoundError:
        raise RuntimeError("posgeom's metadata is missing: install the package (pip install -e .) before exporting "
                           "a chapter") from None
    for line in declared:
        if re.match(r"torch\b(?![-_.\w])", line) and "extra ==" not in line:
            return line.split(";")[0].replace(" ", "")
    raise RuntimeError("posgeom's metadata declares no torch requirement: reinstall the package (pip install -e .)")


def _install_cells(settings: dict) -> list:
    import nbformat
    source, torch = f"{settings['repository']}@{settings['branch']}", torch_requirement()
    note = nbformat.v4.new_markdown_cell(
        f"*A chapter of [The geometry of positional encodings]({settings['site']}), as a plain notebook. "
        "The next cell installs posgeom where it is not installed (a minute or two, once). A PyTorch you already "
        f"have (Colab's, a conda or cluster build) is kept when it is within posgeom's range ({torch}); on a "
        "machine with neither PyTorch nor an NVIDIA GPU it installs PyTorch's CPU build (about 200 MB) instead of "
        "the several-GB CUDA build pip would otherwise take.*")
    # The same decision as the README's "plain pip" path: keep an installed torch, pick the CPU wheel where no
    # GPU could use CUDA (Linux only: PyPI's macOS and Windows wheels are CPU builds already).
    code = nbformat.v4.new_code_cell(
        "import importlib.util\n"
        "import platform\n"
        "import shutil\n\n"
        "if importlib.util.find_spec(\"posgeom\") is None:\n"
        "    no_gpu = platform.system() == \"Linux\" and shutil.which(\"nvidia-smi\") is None\n"
        "    if importlib.util.find_spec(\"torch\") is None and no_gpu:\n"
        f"        %pip install --quiet \"{torch}\" --index-url {TORCH_CPU_INDEX}\n"
        f"    %pip install --quiet \"posgeom[nlp] @ git+{source}\"")  # [nlp]: the chapters on real corpora and BERT
    code.metadata["tags"] = [INSTALL_TAG]
    return [note, code]


def plain_notebook(path: str | Path, *, executed: str | Path | dict | None = None, solutions: bool = False,
                   substitutions: dict | None = None):
    """A chapter as an ``nbformat`` notebook that renders without the book's tools.

    Parameters
    ----------
    path : path
        The chapter (``notebooks/*.md``) inside the book (the folder of ``_config.yml``).
    executed : path or dict, optional
        Where the glued values come from: the book's jupyter-cache folder, an executed copy of the chapter
        (``.ipynb`` or its JSON), or the values themselves (glue key → ``text/plain``).
    solutions : bool
        Keep the exercises' solutions (default: leave them out).
    substitutions : dict, optional
        The text of each MyST substitution ``{{ key }}`` (the book's ``myst_substitutions``); by default a
        chapter's measured time is read from the book (:mod:`posgeom.timings`).

    Returns
    -------
    nbformat.NotebookNode
        Without outputs; the kernel is Python 3.
    """
    import jupytext
    import nbformat
    path = Path(path)
    if (root := _book_root(path)) is None:
        raise ValueError(f"{path} is not inside a book (no _config.yml above it); export the chapters of a posgeom checkout")
    settings = export_settings(root / "_config.yml")
    book = {"site": settings["site"], "folder": path.resolve().parent.relative_to(root).as_posix(),
            "bibliography": _bibliography(root), "cited": [], "chapter": path.name,
            "substitutions": substitutions, "times": chapter_times(root), "memory": chapter_memory(root),
            "page": path.stem, "root": root}
    nb = jupytext.read(path)
    nb.cells = _gated_solutions(nb.cells, solutions)
    if executed is not None and not isinstance(executed, dict) and Path(executed).is_dir():
        executed = cached_execution(path, executed)
    values = glue_values(executed) if executed is not None else {}
    labels, counts, first_counts = {}, {}, {}  # a first pass collects the labelled blocks' headings (forward references)
    markdown = partial(plain_markdown, values=values, code_cells=[c.source for c in nb.cells if c.cell_type == "code"],
                       solutions=solutions, labels=labels)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            markdown(cell.source, counts=first_counts, book={**book, "cited": []})
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = markdown(cell.source, counts=counts, book=book)
        elif cell.cell_type == "code":
            cell.source = _GLUE_IMPORT.sub("from posgeom.notebooks import glue", cell.source)
            figure = cell.metadata.get("mystnb", {}).get("figure", {})
            if figure.get("caption"):  # a caption quotes the settings in force through glue roles too
                figure["caption"] = markdown(figure["caption"], counts=counts, book=book)
    nb.cells = [c for c in nb.cells if c.cell_type != "markdown" or c.source.strip()]
    first = next((i for i, c in enumerate(nb.cells) if c.cell_type == "code"), len(nb.cells))
    nb.cells[first:first] = _install_cells(settings)
    if book["cited"]:
        works = book["bibliography"]
        entries = sorted(book["cited"], key=lambda k: (works[k]["authors_year"][0].lower(), works[k]["authors_year"][1]))
        nb.cells.append(nbformat.v4.new_markdown_cell(
            "## References\n\n" + "\n".join(f"- {works[k]['entry']}" for k in entries)))
    nb.metadata.pop("jupytext", None)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


_GATE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{solution-(?P<kind>start|end)\}[^\n]*\n(?::[\w-]+:[^\n]*\n)*(?P=fence)[ \t]*$", re.M)


def _gated_solutions(cells, solutions: bool):
    """Drop (student) or keep (instructor) the cells of gated solutions, cutting a Markdown cell at every gate;
    swap the stub cells accordingly."""
    out, inside = [], False
    for cell in cells:
        tags = cell.get("metadata", {}).get("tags", [])
        if cell.cell_type == "markdown" and _GATE.search(cell.source):
            kept, position = [], 0
            for m in _GATE.finditer(cell.source):
                if solutions or not inside:
                    kept.append(cell.source[position:m.start()])
                inside = m.group("kind") == "start"
                if inside and solutions:
                    kept.append("**Solution.**\n")
                position = m.end()
            if solutions or not inside:
                kept.append(cell.source[position:])
            text = re.sub(r"\n{3,}", "\n\n", "".join(kept)).strip()
            if text:
                cell.source = text
                out.append(cell)
            continue
        if "exercise-stub" in tags:
            if not solutions:
                cell.metadata["tags"] = [t for t in tags if t != "remove-cell"]
                out.append(cell)
            continue
        if inside and not solutions:
            continue
        out.append(cell)
    return out


def write_plain_notebook(path: str | Path, target: str | Path, **kwargs) -> Path:
    """Write :func:`plain_notebook` of ``path`` to ``target`` (``.ipynb``); returns ``target``."""
    import nbformat
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(plain_notebook(path, **kwargs), str(target))
    return target
