r"""The code key of an experiment: a hash of the source it actually runs.

Hashing the whole package would mark every result stale after any edit (a typo fixed in a plotting helper
would cost hours of GPU time at ``paper`` scale); hashing nothing would serve numbers made by code that has
since changed. The code key is the SHA-256 of the source of an experiment's module and of every posgeom module
it imports, transitively, without what changes no number (:func:`keyed_source`): docstrings, blank lines,
comments, and the layout of a statement over lines, so rewording a docstring or reflowing a call stales nothing.
A ``#:`` comment stays in the key: it is a threshold's reason, quoted on the page beside its verdict.

The import graph is read statically (``ast``, importing nothing): every ``import`` statement counts, inside a
function too (a lazy import still runs); ``from pkg import name`` follows ``name`` to the module that defines
it (a submodule of ``pkg``, or ``sub`` through a re-export ``from .sub import name`` of ``pkg/__init__.py``);
the ``__init__`` itself counts only when it defines ``name`` or the whole package is used as an object
(``import pkg``, ``from .. import pkg``, ``from pkg import *``), and then everything it imports counts too.
The parents of an imported module are not followed (Python runs them, but the experiment does not call what
they import), nor are the modules of :data:`INFRASTRUCTURE`, which never change a number. Third-party code is
not hashed: its versions are recorded in every manifest instead.
"""

from __future__ import annotations

import ast
import hashlib
import re
from functools import lru_cache
from pathlib import Path
from typing import Iterable

__all__ = ["INFRASTRUCTURE", "PACKAGE", "all_modules", "is_infrastructure", "code_key", "code_roots", "keyed_source",
           "module_dependencies", "notebook_modules", "package_root"]

#: The package whose modules are hashed.
PACKAGE = "posgeom"

#: Modules (and packages, with all their submodules) that only store, draw or report results: never part
#: of a code key (:func:`is_infrastructure`).
INFRASTRUCTURE = frozenset({
    "posgeom.codekey", "posgeom.registry", "posgeom.report", "posgeom.plotting", "posgeom.progress",
    "posgeom.about", "posgeom.summary", "posgeom.reproduce", "posgeom.costmodel", "posgeom.cli", "posgeom.commands",
    # durable writes and verified reads (like the registry), and the measured times of the chapters
    "posgeom.storage", "posgeom.timings",
})


def is_infrastructure(module: str) -> bool:
    """Whether ``module`` is in :data:`INFRASTRUCTURE` or inside a package that is (``posgeom.registry.store``)."""
    parts = module.split(".")
    return any(".".join(parts[:k]) in INFRASTRUCTURE for k in range(1, len(parts) + 1))


def package_root() -> Path:
    """The folder of the installed ``posgeom`` package (the one this module belongs to)."""
    return Path(__file__).resolve().parent


def _as_root(root) -> Path:
    return package_root() if root is None else Path(root).resolve()


@lru_cache(maxsize=None)
def _module_file(module: str, root: Path) -> Path | None:
    """``posgeom.a.b`` → ``root/a/b.py`` or ``root/a/b/__init__.py``, else None; cached for one public call (each
    clears it first: files come and go), as a code key asks this of the same names thousands of times."""
    if module != PACKAGE and not module.startswith(PACKAGE + "."):
        return None
    parts = module.split(".")[1:]
    base = root.joinpath(*parts)
    if base.with_suffix(".py").is_file() and parts:
        return base.with_suffix(".py")
    if (base / "__init__.py").is_file():
        return base / "__init__.py"
    return None


def _is_package(module: str, root: Path) -> bool:
    path = _module_file(module, root)
    return path is not None and path.name == "__init__.py"


def _absolute(node: ast.ImportFrom, module: str, root: Path) -> str | None:
    """The absolute module a ``from ... import`` statement in ``module`` reads from."""
    if node.level == 0:
        return node.module
    here = module if _is_package(module, root) else module.rpartition(".")[0]
    parts = here.split(".")
    if node.level - 1 >= len(parts):
        return None
    base = ".".join(parts[: len(parts) - (node.level - 1)])
    return f"{base}.{node.module}" if node.module else base


def _statements(tree: ast.AST):
    """Every statement in ``tree``, however deeply nested, skipping expressions (no expression holds an
    ``import``, and they are most of a tree: several times faster than ``ast.walk``)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, list):
                stack.extend(v for v in value if isinstance(v, (ast.stmt, ast.excepthandler, ast.match_case)))


@lru_cache(maxsize=None)
def _parse(path: Path, mtime_ns: int) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _tree(module: str, root: Path) -> ast.Module | None:
    path = _module_file(module, root)
    return None if path is None else _parse(path, path.stat().st_mtime_ns)


def _defines(tree: ast.Module, name: str) -> bool:
    """Whether a module body itself binds ``name`` (a def, a class or an assignment)."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
        for target in targets:
            if any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(target)):
                return True
    return False


def _name_sources(package: str, name: str, root: Path, seen: frozenset = frozenset()) -> set[str]:
    """The modules that ``from package import name`` really depends on."""
    sub = f"{package}.{name}"
    if _module_file(sub, root) is not None:  # a submodule (or subpackage) imported by name
        return {sub}
    tree = _tree(package, root)
    if tree is None or (package, name) in seen:
        return set()
    if _defines(tree, name):
        return {package}
    seen = seen | {(package, name)}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            source = _absolute(node, package, root)
            if source is None:
                continue
            for alias in node.names:
                if alias.name == "*" or (alias.asname or alias.name) == name:
                    if alias.name == "*":
                        found = _name_sources(source, name, root, seen)
                        if found:
                            return found
                    else:
                        return _name_sources(source, alias.name, root, seen) or {source}
    # Not found statically (a name made at run time): depend on the whole package.
    return {package}


def _source_stamp(root: Path) -> tuple:
    """Path, modification time and size of every source file under ``root``: a result cached under a stamp is
    reused while it is equal, so the graph is walked once per tree state rather than once per code key."""
    return tuple((str(path), st.st_mtime_ns, st.st_size) for path in sorted(root.rglob("*.py"))
                 for st in (path.stat(),))


@lru_cache(maxsize=8192)  # bounded: a process that edits files (the tests) leaves old stamps behind
def _direct_imports_at(module: str, root: Path, stamp: tuple) -> frozenset[str]:
    """The posgeom modules that ``module`` imports anywhere, in the tree stamped ``stamp`` (cached: walking
    every syntax tree is most of a code key's cost)."""
    tree = _tree(module, root)
    if tree is None:
        return frozenset()
    out: set[str] = set()
    for node in _statements(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _module_file(alias.name, root) is not None:
                    out.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(node, module, root)
            if source is None or _module_file(source, root) is None:
                continue
            for alias in node.names:
                if alias.name == "*":
                    out.add(source)  # the package as a whole
                else:
                    out |= _name_sources(source, alias.name, root)
    return frozenset(out)


def module_dependencies(modules: str | Iterable[str], *, root=None) -> tuple[str, ...]:
    """The posgeom modules that ``modules`` (dotted names) run: themselves and what they import, transitively,
    sorted, :data:`INFRASTRUCTURE` left out; ``root``: the package folder to read (default: the installed posgeom).
    """
    _module_file.cache_clear()
    root = _as_root(root)
    names = [modules] if isinstance(modules, str) else list(modules)
    for name in names:
        if _module_file(name, root) is None:
            raise ValueError(f"{name!r} is not a module of {PACKAGE} under {root.name}/; pass a dotted name "
                             f"such as 'posgeom.experiments.corpus_geometry'")
    if set(all_modules(root=root)) <= set(names):
        # the whole package (the key of code defined outside it): its imports cannot reach past it, so
        # nothing need be read (most of a code key's time is parsing every module)
        return tuple(sorted(name for name in set(names) if not is_infrastructure(name)))
    return _dependencies_at(tuple(sorted(set(names))), root, _source_stamp(root))


@lru_cache(maxsize=1024)
def _dependencies_at(modules: tuple[str, ...], root: Path, stamp: tuple) -> tuple[str, ...]:
    """``module_dependencies`` of the tree stamped ``stamp``."""
    queue, seen = list(modules), set()
    while queue:
        name = queue.pop()
        if name in seen or is_infrastructure(name):
            continue
        seen.add(name)
        queue.extend(_direct_imports_at(name, root, stamp) - seen)
    return tuple(sorted(seen))


def all_modules(*, root=None) -> tuple[str, ...]:
    """Every module of the package (the key of code whose imports cannot be traced)."""
    root = _as_root(root)
    names = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        names.append(".".join((PACKAGE, *parts)))
    return tuple(names)


def code_roots(module: str | None, *, root=None) -> tuple[str, ...]:
    """The modules whose code key stands for code defined in ``module``: a posgeom module itself; code defined
    anywhere else (a notebook's ``__main__``, a test) cannot be traced, so every module of the package."""
    _module_file.cache_clear()
    root = _as_root(root)
    if module and _module_file(module, root) is not None:
        return (module,)
    return all_modules(root=root)


def code_key(modules: str | Iterable[str], *, root=None) -> str:
    """A 16-hex-digit SHA-256 of the source of ``modules`` (dotted names) and of everything they import: equal for
    two trees exactly when the files of :func:`module_dependencies` have equal :func:`keyed_source`; ``root``: the
    package folder to read (default: the installed posgeom)."""
    _module_file.cache_clear()
    root = _as_root(root)
    digest = hashlib.sha256()
    for name in module_dependencies(modules, root=root):
        path = _module_file(name, root)
        stat = path.stat()
        digest.update(name.encode() + b"\0")
        digest.update(_keyed_file(path, stat.st_mtime_ns, stat.st_size) + b"\0")
    return digest.hexdigest()[:16]


@lru_cache(maxsize=4096)  # a file is read again when its time or size changes
def _keyed_file(path: Path, mtime_ns: int, size: int) -> bytes:
    return keyed_source(path.read_bytes())


#: What the key's reading of a source tells apart: strings (with their prefix), comments, brackets, line ends;
#: the rest (names, numbers, operators) is copied as it stands. Strings go first, so a ``#`` or a bracket inside one
#: is the string's.
_SCAN = re.compile(r'''
    (?P<string>[rRbBuUfF]{0,2}(?:\'\'\'(?:\\.|[^\\])*?\'\'\'|"""(?:\\.|[^\\])*?"""|'(?:\\.|[^\\'\n])*'|"(?:\\.|[^\\"\n])*"))
  | (?P<comment>\#[^\n]*)
  | (?P<open>[(\[{])
  | (?P<close>[)\]}])
  | (?P<newline>\n)
''', re.VERBOSE | re.DOTALL)


def _read(text: str, lines: list[str]) -> tuple[set[int], dict[int, int], set[int]]:
    """One scan of a module's text: the rows (0-based) that hold only a docstring (a string that is the first
    statement of the module or of a ``def``/``class`` body, alone on its lines), the column where a comment other
    than a ``#:`` reason starts on each row, and the rows of code that end inside brackets. A regular expression,
    not the tokenizer (five times slower in Python 3.11) nor ``ast`` (which has no comments): the tests hold it
    to both."""
    docstrings: set[int] = set()
    cut: dict[int, int] = {}         # a comment other than a ``#:`` reason starts here: what the key drops
    comment: dict[int, int] = {}     # any comment starts here: what is not code
    continued: set[int] = set()
    row = depth = line_start = 0
    first_row, expect, starts, maybe = 0, True, True, None

    def code_of(k: int) -> str:
        return lines[k][:comment[k]].strip() if k in comment else lines[k].strip()

    for match in _SCAN.finditer(text):
        kind, start = match.lastgroup, match.start()
        if kind == "newline":
            if maybe is not None and not text[maybe[2]:start].strip():
                docstrings.update(range(maybe[0], maybe[1] + 1))
            maybe = None
            backslash = start > 0 and text[start - 1] == "\\" and row not in comment
            if depth > 0 and not backslash and code_of(row):
                continued.add(row)
            elif depth == 0 and not backslash and code_of(row):  # a logical line ends
                # a header whose body starts on the next line: its first statement may be a docstring
                expect = (lines[first_row].lstrip().startswith(("def ", "class ", "async def "))
                          and code_of(row).endswith(":"))
                starts = True
            row, line_start = row + 1, start + 1
            first_row = row if depth == 0 and not backslash else first_row
            continue
        if kind == "comment":
            comment[row] = start - line_start
            if not match.group().startswith("#:"):
                cut[row] = comment[row]
            continue
        if depth == 0 and starts:  # the first bracket or string of a logical line
            first_row, starts = row, False
            if expect and kind == "string" and not text[line_start:start].strip():
                maybe = (row, row + match.group().count("\n"), match.end())
            expect = False
        else:
            maybe = None
        if kind == "string" and "\n" in match.group():
            row += match.group().count("\n")
            line_start = start + match.group().rfind("\n") + 1
        elif kind == "open":
            depth += 1
        elif kind == "close":
            depth -= 1
    return docstrings, cut, continued


def keyed_source(source: bytes) -> bytes:
    """What a module's code key hashes: its source (UTF-8 bytes) without docstrings, blank lines and comments
    other than a ``#:`` reason, each statement on one line. A statement that spans lines inside brackets is joined
    (its continuation lines stripped, a space between them, none after an opening or before a closing bracket),
    so sources that differ only in layout, docstrings, comments or trailing spaces give the same bytes, and any
    other change (code, a ``#:`` reason, an indent) does not. A source that is not UTF-8 is returned whole."""
    source = source.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    try:
        text = source.decode("utf-8")
    except UnicodeDecodeError:
        return source
    lines = text.split("\n")
    docstrings, cut, continued = _read(text, lines)
    kept: list[str] = []
    join = False
    for k, line in enumerate(lines):
        if k in docstrings:
            continue
        line = line[:cut[k]].rstrip() if k in cut else line.rstrip()
        if not line.strip():
            continue  # blank, or only a comment: a line break inside brackets stays pending
        if join:
            piece = line.strip()
            # one space between the joined pieces, as a formatter writes them
            tight = kept[-1].endswith(("(", "[", "{")) or piece.startswith((")", "]", "}"))
            kept[-1] += piece if tight else " " + piece
        else:
            kept.append(line)
        join = k in continued
    return "\n".join(kept).encode("utf-8")


def notebook_modules(source: str, *, root=None) -> tuple[str, ...]:
    """The posgeom modules, sorted, imported by the ``{code-cell}`` cells of a MyST notebook's text (prose and other
    fences skipped); ``import posgeom`` counts as the package (and all it re-exports); ``root``: the package folder
    (default: the installed posgeom)."""
    _module_file.cache_clear()
    root = _as_root(root)
    modules: set[str] = set()
    lines = source.splitlines()
    cells, inside, fence = [], False, ""
    for line in lines:
        stripped = line.strip()
        if not inside and stripped.startswith("```") and "{code-cell}" in stripped:
            inside, fence, cell = True, stripped[: len(stripped) - len(stripped.lstrip("`"))], []
        elif inside and stripped == fence:
            inside = False
            if cell and cell[0].strip() == "---":  # a YAML block of cell options
                end = next((i for i in range(1, len(cell)) if cell[i].strip() == "---"), len(cell) - 1)
                cell = cell[end + 1:]
            cells.append("\n".join(c for c in cell if not c.lstrip().startswith((":", "%", "!"))))
        elif inside:
            cell.append(line)
    for code in cells:
        try:
            tree = ast.parse(code)
        except SyntaxError:
            continue  # a cell the kernel would reject anyway; it imports nothing we can trust
        for node in _statements(tree):
            if isinstance(node, ast.Import):
                modules.update(a.name for a in node.names if _module_file(a.name, root) is not None)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                if _module_file(node.module, root) is None:
                    continue
                for alias in node.names:
                    modules |= {node.module} if alias.name == "*" else _name_sources(node.module, alias.name, root)
    return tuple(sorted(modules))
