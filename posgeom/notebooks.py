r"""Chapters as plain Jupyter notebooks: MyST blocks turned into Markdown that any Jupyter renders.

A chapter (``notebooks/*.md``, a MyST Markdown notebook) uses Sphinx directives and roles that only
the book understands. :func:`plain_notebook` turns it into an ``.ipynb`` that reads like the page in
JupyterLab or Colab without any extension:

* theorem, proposition, proof, exercise, admonition and note blocks become bold run-in headings
  ("Theorem 1 (title).") over their Markdown and maths, admonitions a block quote; maths blocks stay
  display maths;
* solution blocks are left out (an instructor edition may keep them: ``solutions=True``); a gated
  solution (``{solution-start}`` … ``{solution-end}`` around code cells) is left out with its code
  cells, and the exercise's stub cell (tagged ``exercise-stub``, hidden on the site) is shown in its
  place; with ``solutions=True`` the solution's code cells stay and the stub goes;
* glued numbers (the ``glue:text`` role) are written out from the values of an executed copy of the
  chapter when it is given (formatted as the book formats them); otherwise the glue key is shown and
  the cell says which code cell computes it;
* cross-references (``prf:ref``, ``ref``, ``doc``, ``cite:p`` ...) become their text, and label
  targets and MyST comments are dropped;
* ``from myst_nb import glue`` becomes ``from posgeom.notebooks import glue``, which works without
  the book's tools.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

__all__ = ["plain_notebook", "plain_markdown", "glue_values", "glue", "write_plain_notebook"]

_OPEN = re.compile(r"^(?P<fence>`{3,}|:{3,})\{(?P<name>[\w:-]+)\}[ \t]*(?P<arg>.*)$")
_OPTION = re.compile(r"^:([\w-]+):[ \t]*(.*)$")
_ROLE = re.compile(r"\{(?P<name>[\w:-]+)\}`(?P<body>[^`]*)`")
_TARGET = re.compile(r"^\([\w.:-]+\)=[ \t]*$")
_GLUE_CALL = re.compile(r"""glue\(\s*(?P<f>[fF]?)(?P<q>["'])(?P<key>.+?)(?P=q)""")
_GLUE_IMPORT = re.compile(r"^from myst_nb import glue[ \t]*$", re.M)

#: Directive name → the run-in heading it gets (numbered kinds are counted per chapter).
_HEADINGS = {
    "prf:theorem": "Theorem", "prf:proposition": "Proposition", "prf:lemma": "Lemma",
    "prf:corollary": "Corollary", "prf:definition": "Definition", "prf:conjecture": "Conjecture",
    "prf:remark": "Remark", "prf:example": "Example", "prf:assumption": "Assumption",
    "prf:algorithm": "Algorithm", "prf:proof": "Proof", "exercise": "Exercise",
}
_UNNUMBERED = {"prf:proof", "prf:remark"}
_ADMONITIONS = {"admonition", "note", "tip", "hint", "important", "warning", "caution", "attention",
                "danger", "error", "seealso"}


def glue(name: str, value, display: bool = True) -> None:
    """``myst_nb.glue`` where myst-nb is installed; elsewhere, show the value when ``display`` is True."""
    try:
        from myst_nb import glue as _myst_glue
    except ImportError:
        if display:
            from IPython.display import display as _display

            _display(value)
        return
    _myst_glue(name, value, display)


def glue_values(executed: str | Path | dict) -> dict[str, str]:
    """The ``text/plain`` value of every glued variable of an executed notebook (its path or JSON)."""
    nb = executed if isinstance(executed, dict) else json.loads(Path(executed).read_text())
    values = {}
    for cell in nb.get("cells", []):
        for output in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            scrap = output.get("metadata", {}).get("scrapbook")
            if not scrap:
                continue
            prefix = scrap.get("mime_prefix", "")
            text = output.get("data", {}).get(prefix + "text/plain")
            if text is not None:
                values[scrap["name"]] = "".join(text) if isinstance(text, list) else text
    return values


def _format_plain(text: str, spec: str) -> str:
    """The text of ``{glue:text}`key:spec``` as the book shows it (myst-nb's rule)."""
    try:
        value = ast.literal_eval(text)
    except (SyntaxError, ValueError):
        value = text
    if not spec:
        return str(value)
    kind = spec[-1]
    if kind == "s":
        value = str(value)
    elif kind in "bcdoxX":
        value = int(value)
    elif kind in "eEfFgGn%":
        value = float(value)
    return format(value, spec)


def _glue_cells(code_cells: list[str]) -> list[tuple[re.Pattern, int]]:
    """(pattern of the keys glued, 1-based code cell number) for every ``glue(...)`` call."""
    found = []
    for number, source in enumerate(code_cells, start=1):
        for m in _GLUE_CALL.finditer(source):
            key = m.group("key")
            if m.group("f"):  # f"{corpus}_{key}_viol": any text where the fields are
                parts = re.split(r"\{[^{}]*\}", key)
                pattern = ".+".join(re.escape(p) for p in parts)
            else:
                pattern = re.escape(key)
            found.append((re.compile(pattern + r"\Z"), number))
    return found


def _role_text(name: str, body: str, ctx: dict) -> str:
    if name.startswith("glue"):
        key, _, spec = body.rpartition(":") if ":" in body else (body, "", "")
        key = key or body
        if key in ctx["values"]:
            return _format_plain(ctx["values"][key], spec)
        cell = next((number for pattern, number in ctx["glue_cells"] if pattern.match(key)), None)
        if cell:
            ctx["named_cells"].add(cell)
        return f"`{key}`"
    title, _, target = body.partition("<")
    text = (title.strip() if target else body).strip()
    if name == "prf:ref" and not target:
        return ctx["labels"].get(text, text)
    if name.startswith("cite"):
        return f"[{text}]"
    if name in ("doc", "ref") and not target:
        return Path(text).name.replace("-", " ")
    if name in ("math",):
        return f"${text}$"
    return f"`{text}`" if name in ("code", "py:func", "py:class", "py:mod", "py:meth", "py:data") else text


def _roles(text: str, ctx: dict) -> str:
    return _ROLE.sub(lambda m: _role_text(m.group("name"), m.group("body"), ctx), text)


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
            key, value = _OPTION.match(body[0]).groups()
            options[key] = value
            body = body[1:]
        i = end + 1
        if name == "solution" and not ctx["solutions"]:
            continue
        inner = _blocks(body, ctx)
        while inner and not inner[0].strip():
            inner = inner[1:]
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
                   solutions: bool = False, labels: dict | None = None, counts: dict | None = None) -> str:
    """One Markdown cell of a chapter as plain Markdown (see the module docstring).

    Parameters
    ----------
    source : str
        The MyST Markdown of the cell.
    values : dict, optional
        Glue key → ``text/plain`` value (:func:`glue_values`); keys missing here name their code cell.
    code_cells : list of str
        The chapter's code cells, in order (to name the cell that glues a value).
    solutions : bool
        Keep ``{solution}`` blocks (the instructor's edition).
    labels, counts : dict, optional
        Shared across the cells of a chapter: block labels → their heading, and the numbering.
    """
    ctx = {"values": values or {}, "glue_cells": _glue_cells(list(code_cells)), "solutions": solutions,
           "labels": {} if labels is None else labels, "counts": {} if counts is None else counts,
           "named_cells": set()}
    text = re.sub(r"\n{3,}", "\n\n", _roles("\n".join(_blocks(source.split("\n"), ctx)), ctx)).strip("\n")
    if ctx["named_cells"]:
        cells = sorted(ctx["named_cells"])
        where = ", ".join(map(str, cells))
        text += (f"\n\n*Numbers shown as `names` are computed in code cell{'s' if len(cells) > 1 else ''} {where} "
                 "(count code cells from the top); run it and print them.*")
    return text


def plain_notebook(path: str | Path, *, executed: str | Path | dict | None = None, solutions: bool = False):
    """A chapter as an ``nbformat`` notebook that renders without the book's tools.

    Parameters
    ----------
    path : path
        The chapter, a MyST Markdown notebook (``notebooks/*.md``).
    executed : path or dict, optional
        An executed copy of the chapter (``.ipynb``): its glued values are written out.
    solutions : bool
        Keep the exercises' solutions (default: leave them out).

    Returns
    -------
    nbformat.NotebookNode
        Without outputs; the kernel is Python 3.
    """
    import jupytext

    nb = jupytext.read(Path(path))
    nb.cells = _gated_solutions(nb.cells, solutions)
    values = glue_values(executed) if executed is not None else {}
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    labels: dict = {}
    counts: dict = {}
    # A first pass collects the headings of labelled blocks, so a reference before its target resolves.
    first_counts: dict = {}
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            plain_markdown(cell.source, code_cells=code, solutions=solutions, labels=labels, counts=first_counts)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = plain_markdown(cell.source, values=values, code_cells=code, solutions=solutions,
                                         labels=labels, counts=counts)
        elif cell.cell_type == "code":
            cell.source = _GLUE_IMPORT.sub("from posgeom.notebooks import glue", cell.source)
    nb.cells = [c for c in nb.cells if c.cell_type != "markdown" or c.source.strip()]
    nb.metadata.pop("jupytext", None)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


_GATE = re.compile(r"^(?P<fence>`{3,}|:{3,})\{solution-(?P<kind>start|end)\}[^\n]*\n(?::[\w-]+:[^\n]*\n)*(?P=fence)[ \t]*$", re.M)


def _gated_solutions(cells, solutions: bool):
    """Drop (student) or keep (instructor) the cells of gated solutions; swap the stub cells accordingly.

    A Markdown cell may hold several gates and text on both sides of each (an exercise, the
    ``solution-start`` under it, the solution's words, a ``solution-end``, the next exercise ...): it
    is cut at every gate and only the pieces outside a solution are kept (all of them, with a
    "**Solution.**" heading at each start, for the instructor).
    """
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
