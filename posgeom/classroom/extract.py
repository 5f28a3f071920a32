r"""What one exercise needs from a submission: the student's function and the definitions it uses.

The grader never runs a notebook top to bottom: for each exercise it keeps the last top-level definition of
the function and, recursively, the top-level statements that bind the global names it reads, in notebook
order, so a hung or failing cell costs only the exercises that depend on it. A global changed by a method
call (``table.append(...)``) or through ``globals()`` is not seen.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass

__all__ = ["Program", "code_cells", "exercise_program"]

_BUILTINS = frozenset(dir(builtins))


@dataclass(frozen=True)
class Program:
    """The statements one exercise needs (empty when ``function`` is never defined); ``skipped`` numbers the code
    cells (1-based) that are not Python."""

    function: str
    source: str
    skipped: tuple[int, ...] = ()

    @property
    def defined(self) -> bool:
        return bool(self.source)


def _python(source: str) -> str:
    """A cell's source with IPython's magics and shell escapes turned into plain Python calls."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:  # without IPython a cell holding a magic is simply not Python
        return source
    return TransformerManager().transform_cell(source)


def code_cells(nb) -> tuple[list[ast.Module], tuple[int, ...]]:
    """The parsed code cells of ``nb`` (a notebook node) and the numbers of those that do not parse."""
    modules, skipped = [], []
    cells = [cell for cell in nb.cells if cell.get("cell_type") == "code"]
    for number, cell in enumerate(cells, 1):
        try:
            modules.append(ast.parse(_python(cell.get("source", ""))))
        except (SyntaxError, ValueError):
            skipped.append(number)
    return modules, tuple(skipped)


class _Names(ast.NodeVisitor):
    """The names a top-level statement binds at module level and the global names it reads."""

    def __init__(self):
        self.binds: set[str] = set()
        self.reads: set[str] = set()

    def visit_Import(self, node):
        for alias in node.names:  # import a.b binds a; a from-import's names have no dots
            self.binds.add(alias.asname or alias.name.split(".")[0])

    visit_ImportFrom = visit_Import

    def visit_Name(self, node):
        (self.binds if isinstance(node.ctx, ast.Store) else self.reads).add(node.id)

    def _scope(self, node):
        """A function, class or lambda: its name is bound here; its body reads what it does not bind."""
        if getattr(node, "name", None) is not None:
            self.binds.add(node.name)
        outer = [*getattr(node, "decorator_list", []), *getattr(node, "bases", []),
                 *[k.value for k in getattr(node, "keywords", [])]]
        arguments, local = getattr(node, "args", None), set()
        if isinstance(arguments, ast.arguments):  # a class has none
            outer += [d for d in arguments.defaults + arguments.kw_defaults if d is not None]
            parameters = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs, arguments.vararg,
                          arguments.kwarg]
            local = {a.arg for a in parameters if a is not None}
        for child in outer:
            self.visit(child)
        inner = _Names()
        declared = {n for stmt in ast.walk(node) if isinstance(stmt, ast.Global) for n in stmt.names}
        for stmt in node.body if isinstance(node.body, list) else [node.body]:  # a lambda's body is an expression
            inner.visit(stmt)
        self.reads |= inner.reads - ((inner.binds | local) - declared)
        self.binds |= inner.binds & declared

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = _scope

    def _comprehension(self, node):
        inner = _Names()  # its loop variables are its own
        inner.generic_visit(node)
        self.reads |= inner.reads - inner.binds

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension


def _statement_names(stmt: ast.stmt) -> tuple[set[str], set[str]]:
    names = _Names()
    names.visit(stmt)
    return names.binds, names.reads - _BUILTINS


def exercise_program(nb, function: str) -> Program:
    """The statements of the submission ``nb`` (an nbformat 4 node) that the exercise's ``function`` needs."""
    modules, skipped = code_cells(nb)
    statements = [stmt for module in modules for stmt in module.body]
    table = [_statement_names(stmt) for stmt in statements]
    defining = [i for i, (binds, _) in enumerate(table) if function in binds]
    if not defining:
        return Program(function, "", skipped)
    last = defining[-1]
    chosen, wanted, seen = {last}, list(table[last][1]), {function}
    while wanted:
        name = wanted.pop()
        if name in seen:
            continue
        seen.add(name)
        # every statement that binds the name, in notebook order, as a run of the whole notebook would
        # leave it (an augmented assignment builds on the earlier ones)
        binding = [i for i, (binds, _) in enumerate(table) if name in binds and not (function in binds and i != last)]
        for i in binding:
            if i not in chosen:
                chosen.add(i)
                wanted.extend(table[i][1] - seen)
        if not binding:  # bound by no statement: perhaps by a star import (from numpy import *)
            chosen |= {i for i, (binds, _) in enumerate(table) if "*" in binds}
    source = "\n\n".join(ast.unparse(statements[i]) for i in sorted(chosen))
    return Program(function, source + "\n", skipped)
