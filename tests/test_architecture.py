"""Guards of the package's shape: layer contracts (import-linter), a small lint rule set (ruff), and
no private name used across modules."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "posgeom"


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str | None:
    if node.level == 0:
        return node.module
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def private_uses(path: Path) -> list[str]:
    """``from posgeom.x import _name`` and ``alias._name`` (alias a posgeom module) in one file."""
    module = _module_name(path)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found, aliases = [], {}
    is_package = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = _resolve(node, module, is_package)
            if not source or not source.startswith("posgeom"):
                continue
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                is_module = (ROOT / Path(*submodule.split("."))).with_suffix(".py").is_file() or (
                    ROOT / Path(*submodule.split(".")) / "__init__.py").is_file()
                if is_module:
                    aliases[alias.asname or alias.name] = submodule
                elif alias.name.startswith("_") and not alias.name.startswith("__") and source != module:
                    # a package may gather its own private modules' names
                    if not (is_package and source.startswith(module + ".")):
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {alias.name} from {source}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("posgeom") and alias.asname:
                    aliases[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and node.attr.startswith("_") and not node.attr.startswith("__")):
            target = aliases[node.value.id]
            if not (is_package and target.startswith(module + ".")) and target != module:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} uses {node.value.id}.{node.attr} of {target}")
    return found


def import_graph() -> dict[str, set[str]]:
    """Every posgeom module → the posgeom modules it imports anywhere in its file (inside functions too;
    imports under ``if TYPE_CHECKING:`` are left out: they never run)."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        type_only = {id(inner) for node in ast.walk(tree)
                     if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                     for inner in ast.walk(node)}
        targets = set()
        for node in ast.walk(tree):
            if id(node) in type_only:
                continue
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                source = _resolve(node, module, path.name == "__init__.py") or ""
                # `from pkg import sub` imports the module pkg.sub; `from mod import name`, the module mod
                names = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source
                         for alias in node.names]
            else:
                continue
            for name in names:
                while name and name not in modules and "." in name:
                    name = name.rsplit(".", 1)[0]  # a name imported from a module → that module
                if name in modules and name != module:
                    targets.add(name)
        graph[module] = targets
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_cycle_hidden_in_a_function():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert import_cycles(graph) == [["a", "b", "c"]]
    assert import_cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_among_posgeom_modules():
    """No two modules import each other, directly or round a loop, not even from inside a function
    (a child reading its parent's settings that way hid two cycles)."""
    graph = import_graph()
    assert "posgeom.experiments.lowrank_training" in graph and graph["posgeom.experiments.minimal_parametrisation"]
    cycles = import_cycles(graph)
    assert not cycles, f"import cycles: {cycles}"


def _tool(name: str) -> str:
    """A console script of the venv running the tests (the pinned version), else one on PATH."""
    beside = Path(sys.executable).with_name(name)
    found = str(beside) if beside.is_file() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: run the README's test command (it installs posgeom[test])")
    return found


def test_layer_contracts_hold():
    done = subprocess.run([_tool("lint-imports"), "--config", str(ROOT / ".importlinter")], cwd=ROOT,
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_ruff_rule_set_is_clean():
    done = subprocess.run([_tool("ruff"), "check", "--no-cache", "--output-format", "concise", "posgeom", "tests",
                           "benchmarks", "scripts", "book/_ext"], cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_no_private_name_is_used_across_modules():
    found = [use for path in sorted(PACKAGE.rglob("*.py")) for use in private_uses(path)]
    assert not found, "private names used outside their module (make them public in the layer both import):\n" + \
        "\n".join(found)


def test_no_source_holds_a_control_character():
    """A tab or BEL inside a docstring is a backslash lost on the way (``"\\alpha"`` written without ``r``):
    the API page would show broken maths. Sources hold no control character but the newline."""
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if any(ord(c) < 32 for c in line):
                bad.append(f"{path.relative_to(ROOT)}:{number}")
    assert not bad, f"control characters (a lost backslash?) at {', '.join(bad)}"


def test_no_module_of_the_package_star_imports():
    """A code key follows ``from pkg import name`` to the module that defines ``name``; through
    ``from .part import *`` it cannot tell which part defines a name, so the key takes in code the experiment
    never runs (a star import in ``posgeom.verdicts`` once made ``separation.converged`` depend on another part's
    rules, and go stale)."""
    stars = [f"{path.relative_to(ROOT)}:{node.lineno}" for path in sorted(PACKAGE.rglob("*.py"))
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names)]
    assert not stars, f"star imports (name what is imported) at {', '.join(stars)}"


def _linter_layers() -> list[str]:
    """The layers of ``.importlinter``'s layer contract, top to bottom, as written (``a | b`` for siblings)."""
    import configparser

    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter", encoding="utf-8")
    contract = config["importlinter:contract:layers"]
    assert contract.get("exhaustive", "").strip() == "true", "the layer contract must be exhaustive"
    return [" | ".join(part.strip() for part in line.split("|")) for line in contract["layers"].split("\n")
            if line.strip()]


def test_every_module_of_the_package_sits_in_a_layer():
    layered = {name.strip() for layer in _linter_layers() for name in layer.split("|")}
    children = {p.stem if p.suffix == ".py" else p.name for p in (ROOT / "posgeom").iterdir()
                if (p.suffix == ".py" and p.stem not in ("__init__", "__main__")) or (p / "__init__.py").is_file()}
    assert children - layered == set(), "modules in no layer of .importlinter"
    assert layered - children == set(), "layers of .importlinter that name no module"


def test_the_architecture_drawing_lists_the_layers_in_the_linters_order():
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    drawing = text.split("```\n", 2)[1]
    layers = _linter_layers()
    # a layer's name starts a line of the drawing (the descriptions are indented past the arrows)
    starts = [line.split("  ")[0].strip() for line in drawing.splitlines() if line and not line.startswith(" ")]
    drawn, pending = [], ""
    for head in starts:  # a long sibling list wraps: "experiments |" then "diagnose"
        pending = f"{pending} {head}".strip()
        if not pending.endswith("|"):
            drawn.append(pending)
            pending = ""
    assert drawn == layers


#: No module of the package is longer than this (issue #46: a module a reader can hold; split a coherent part off
#: beyond it).
MAX_MODULE_LINES = 600


def test_no_module_of_the_package_is_longer_than_a_reader_can_hold():
    lengths = {str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines()) for p in PACKAGE.rglob("*.py")}
    assert {path: n for path, n in lengths.items() if n > MAX_MODULE_LINES} == {}
