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
