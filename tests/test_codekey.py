"""The code key: a hash of the source an experiment runs, tested against hand-made import graphs."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

import posgeom
from posgeom import codekey
from posgeom.codekey import code_key, module_dependencies, notebook_modules
from posgeom.registry import Registry, code_changed


def write_package(root: Path, files: dict[str, str]) -> Path:
    """A throwaway package named ``posgeom`` under ``root`` (the name the key resolves against)."""
    pkg = root / "posgeom"
    for name, text in files.items():
        path = pkg / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return pkg


@pytest.fixture
def toy(tmp_path):
    return write_package(tmp_path, {
        "__init__.py": "from .geo import *\nfrom .geo import dist\n",
        "plot.py": "import matplotlib\n",
        "geo/__init__.py": "from .dist import dist, helper_name\nfrom .rank import *\nKINDS = ('a',)\n",
        "geo/dist.py": "from ._val import check\ndef dist(x):\n    return check(x)\nhelper_name = 1\n",
        "geo/_val.py": "def check(x):\n    return x\n",
        "geo/rank.py": "from .dist import dist\n__all__ = ['rank']\ndef rank(x):\n    return dist(x)\n",
        "exp/__init__.py": "",
        "exp/one.py": textwrap.dedent("""\
            from ..geo import dist
            from ..geo import KINDS
            def run():
                from .. import plot  # lazy: still part of what runs
                return dist(1)
            """),
        "exp/two.py": "from .. import geo\nfrom .one import run\n",
        "exp/cycle_a.py": "from .cycle_b import b\ndef a():\n    return b\n",
        "exp/cycle_b.py": "from .cycle_a import a\ndef b():\n    return a\n",
        "exp/star.py": "from ..geo.rank import *\n",
    })


def test_dependencies_follow_reexports_to_the_defining_module(toy):
    deps = module_dependencies("posgeom.exp.one", root=toy)
    # dist is re-exported by geo/__init__ from geo/dist; KINDS is defined in geo/__init__ itself, which
    # then counts with what it imports (geo.rank); the lazy import inside run() counts; the parents
    # (posgeom/__init__, exp/__init__) do not.
    assert deps == ("posgeom.exp.one", "posgeom.geo", "posgeom.geo._val", "posgeom.geo.dist", "posgeom.geo.rank",
                    "posgeom.plot")
    without_kinds = write_package(toy.parent / "other", {
        "__init__.py": "", "plot.py": "", "geo/__init__.py": "from .dist import dist\nfrom .rank import rank\n",
        "geo/dist.py": "def dist(x):\n    return x\n", "geo/rank.py": "def rank(x):\n    return x\n",
        "exp/__init__.py": "", "exp/one.py": "from ..geo import dist\n"})
    assert module_dependencies("posgeom.exp.one", root=without_kinds) == ("posgeom.exp.one", "posgeom.geo.dist")


def test_a_package_used_as_an_object_brings_everything_it_imports(toy):
    deps = module_dependencies("posgeom.exp.two", root=toy)
    assert {"posgeom.geo", "posgeom.geo.dist", "posgeom.geo.rank", "posgeom.geo._val", "posgeom.exp.one"} <= set(deps)
    assert "posgeom.exp.cycle_a" not in deps


def test_cycles_and_star_imports(toy):
    assert module_dependencies("posgeom.exp.cycle_a", root=toy) == ("posgeom.exp.cycle_a", "posgeom.exp.cycle_b")
    assert module_dependencies("posgeom.exp.star", root=toy) == (
        "posgeom.exp.star", "posgeom.geo._val", "posgeom.geo.dist", "posgeom.geo.rank")


def test_the_key_changes_exactly_when_a_dependency_changes(toy):
    before = code_key("posgeom.exp.one", root=toy)
    (toy / "exp" / "cycle_a.py").write_text("# not used by exp.one\n")
    (toy / "__init__.py").write_text("# a parent package: not part of the key\n")
    assert code_key("posgeom.exp.one", root=toy) == before
    (toy / "geo" / "_val.py").write_text("def check(x):\n    return -x\n")
    assert code_key("posgeom.exp.one", root=toy) != before


def test_the_key_ignores_docstrings_blank_lines_comments_and_layout_and_sees_code_and_reasons(toy):
    dist = toy / "geo" / "dist.py"
    dist.write_text('"""Module doc."""\nfrom ._val import check\n\n\n#: the scale\nSCALE = 2\n\n\ndef dist(x,\n'
                    '         y=1):\n    """One line."""\n    return check(x)  # why\nhelper_name = 1\n')
    before = code_key("posgeom.exp.one", root=toy)
    reworded = ('"""Another module doc,\n\nover three lines."""\nfrom ._val import check\n#: the scale\nSCALE = 2\n'
                '# ---- a rule line ----\ndef dist(x, y=1):\n    """Reworded:\n\n    and longer.\n    """\n\n'
                '    return check(\n        x  # because\n    )   \nhelper_name = 1\n')
    dist.write_text(reworded)
    assert code_key("posgeom.exp.one", root=toy) == before
    edits = [("#: the scale", "#: the new scale"), ("SCALE = 2", "SCALE = 3"), ("        x  #", "        -x  #"),
             ("helper_name = 1", 'helper_name = """One line."""'),  # a string that is not a docstring counts
             ("    return check(", "    if x:\n        return check(")]  # so does an indent
    for edit in edits:
        dist.write_text(reworded.replace(*edit))
        assert code_key("posgeom.exp.one", root=toy) != before, edit


def test_a_statement_is_keyed_the_same_on_one_line_or_on_several():
    one = b"x = f(a, [b, c], {d: e}, g(h))\ny = (1,)\n"
    several = b"x = f(\n    a,\n    [b,\n     c], {\n        d: e},  # why\n    g(h)\n)\ny = (\n    1,\n)\n"
    assert codekey.keyed_source(one) == codekey.keyed_source(several) == one.rstrip()
    # a line break inside a string is the string's own, and a backslash continuation is left as it is
    assert codekey.keyed_source(b's = """a\nb"""\n') == b's = """a\nb"""'
    assert codekey.keyed_source(b"z = 1 + \\\n    2\n") == b"z = 1 + \\\n    2"
    # a docstring is alone on its lines, first in a module or a def/class body; other strings are code
    source = (b'"""Module."""\nclass A(B, metaclass=M):\n    """Class."""\n    x = "not a docstring"\n'
              b'def f(a: dict[str, int] = {"k": 1}, g=lambda: 0) -> list[int]:\n    """Function."""\n'
              b'def g(): "shares its line"\ndef h():\n    "followed by a comment"  # c\n')
    assert codekey.keyed_source(source) == (b'class A(B, metaclass=M):\n    x = "not a docstring"\n'
                                            b'def f(a: dict[str, int] = {"k": 1}, g=lambda: 0) -> list[int]:\n'
                                            b'def g(): "shares its line"\ndef h():\n    "followed by a comment"')
    # nor after a header that is not a def or class, nor in a string, a comment or after a backslash
    assert codekey.keyed_source(b'async def f():\n    async with a:\n        "kept"\n') == \
        b'async def f():\n    async with a:\n        "kept"'
    assert codekey.keyed_source(b'x = ("# not a comment", \'(\',  # a comment (\n     1)\n') == \
        b'x = ("# not a comment", \'(\', 1)'
    assert codekey.keyed_source(b"y = [1, \\\n     2]\n") == b"y = [1, \\\n     2]"


def test_keyed_source_against_an_ast_and_token_reading():
    # the oracle: the strings that stand alone first in a module or a def/class body, read by ast (the key reads
    # them with a regular expression), the comments other than a ``#:`` reason and the line breaks inside brackets are
    # dropped, on every module of the package; what is left is the keyed source's tokens, in order, with its
    # logical lines
    import ast
    import io
    import tokenize

    def code_tokens(source, skip_rows=()):
        out = []
        for tok in tokenize.tokenize(io.BytesIO(source).readline):
            if tok.type in (tokenize.ENCODING, tokenize.ENDMARKER, tokenize.NL, tokenize.INDENT, tokenize.DEDENT):
                continue
            if tok.start[0] in skip_rows or (tok.type == tokenize.COMMENT and not tok.string.startswith("#:")):
                continue
            text = tok.string
            if tok.type == tokenize.STRING:  # blank lines and trailing spaces inside a string are not keyed
                text = "\n".join(line.rstrip() for line in text.split("\n") if line.strip())
            out.append((tok.type, "" if tok.type == tokenize.NEWLINE else text))
        return out

    for path in sorted(Path(posgeom.__file__).parent.rglob("*.py")):
        source = path.read_bytes()
        lines = source.split(b"\n")
        doc_lines = set()
        for node in ast.walk(ast.parse(source)):
            body = getattr(node, "body", None)
            if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) or not body:
                continue
            first = body[0]
            if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                continue
            # alone on its lines (ast's columns count UTF-8 bytes)
            if lines[first.lineno - 1][:first.col_offset].strip() or \
                    lines[first.end_lineno - 1][first.end_col_offset:].strip():
                continue
            doc_lines.update(range(first.lineno, first.end_lineno + 1))
        keyed = codekey.keyed_source(source)
        assert code_tokens(keyed) == code_tokens(source, doc_lines), path
        assert not keyed or all(line.strip() for line in keyed.split(b"\n")), path  # no blank line


def test_the_import_graph_is_walked_once_per_tree_state_and_again_after_an_edit(toy):
    codekey._dependencies_at.cache_clear()
    before = module_dependencies("posgeom.exp.one", root=toy)
    assert module_dependencies("posgeom.exp.one", root=toy) == before
    assert codekey._dependencies_at.cache_info().hits == 1  # the second call walked nothing
    assert "posgeom.exp.cycle_a" not in before
    # a new import (a file edited in this process) is seen at once: the tree's stamp changed
    (toy / "exp" / "one.py").write_text((toy / "exp" / "one.py").read_text() + "from .cycle_a import a\n")
    after = module_dependencies("posgeom.exp.one", root=toy)
    assert set(after) == set(before) | {"posgeom.exp.cycle_a", "posgeom.exp.cycle_b"}
    (toy / "exp" / "new.py").write_text("from ..geo import dist\n")  # a file added: also a new stamp
    assert module_dependencies("posgeom.exp.new", root=toy) == ("posgeom.exp.new", "posgeom.geo._val", "posgeom.geo.dist")


def test_bad_module_names_are_one_clear_error(toy):
    with pytest.raises(ValueError, match="not a module of posgeom"):
        module_dependencies("posgeom.exp.nowhere", root=toy)
    with pytest.raises(ValueError, match="not a module of posgeom"):
        code_key("numpy", root=toy)


@pytest.fixture
def package_copy(tmp_path):
    """A copy of the real posgeom source, to edit without touching the checkout."""
    return Path(shutil.copytree(Path(posgeom.__file__).parent, tmp_path / "posgeom",
                                ignore=shutil.ignore_patterns("__pycache__")))


def append(path: Path, text: str = "\n_AN_EDIT = 1\n") -> None:
    path.write_text(path.read_text() + text)


def test_real_experiment_key_ignores_plotting_and_sees_geometry(package_copy):
    experiment = "posgeom.experiments.corpus_geometry"
    before = code_key(experiment, root=package_copy)
    for untouched in ("plotting.py", "registry/store.py", "report.py", "summary/__init__.py", "summary/page.py", "models/training.py"):
        append(package_copy / untouched)
    assert code_key(experiment, root=package_copy) == before
    append(package_copy / "geometry" / "hellinger.py")
    assert code_key(experiment, root=package_copy) != before


def test_infrastructure_packages_never_count_with_any_of_their_submodules():
    from posgeom.codekey import INFRASTRUCTURE, is_infrastructure, module_dependencies

    assert is_infrastructure("posgeom.registry.store") and is_infrastructure("posgeom.reproduce.chapters")
    assert not is_infrastructure("posgeom.registryx") and not is_infrastructure("posgeom.geometry.hellinger")
    deps = module_dependencies("posgeom.experiments.corpus_geometry")
    assert "posgeom.geometry.hellinger" in deps  # the maths counts
    assert not [d for d in deps if is_infrastructure(d)], "a storing or reporting module counts in a code key"
    assert all(m == "posgeom" or m.startswith("posgeom.") for m in INFRASTRUCTURE)


def test_registry_reuses_a_result_until_its_own_code_changes(package_copy, tmp_path, monkeypatch):
    monkeypatch.setattr(codekey, "package_root", lambda: package_copy)
    registry = Registry(tmp_path / "results")
    calls = []

    def compute():
        calls.append(1)
        return {"calls": len(calls)}

    compute.__module__ = "posgeom.experiments.corpus_geometry"  # as if defined in the experiment module
    first = registry.run("geometry", compute, params={}, scale="quick", seed=0, device="cpu")
    assert first.manifest["code_modules"] == ["posgeom.experiments.corpus_geometry"]
    append(package_copy / "plotting.py")
    assert registry.run("geometry", compute, params={}, scale="quick", seed=0, device="cpu").values["calls"] == 1
    assert not code_changed(first.manifest)
    append(package_copy / "geometry" / "hellinger.py")
    assert code_changed(first.manifest)
    assert registry.run("geometry", compute, params={}, scale="quick", seed=0, device="cpu").values["calls"] == 2


def test_code_defined_outside_the_package_is_keyed_to_all_of_it(package_copy, tmp_path, monkeypatch):
    monkeypatch.setattr(codekey, "package_root", lambda: package_copy)
    registry = Registry(tmp_path / "results")
    entry = registry.run("local", lambda: {"v": 1}, params={}, scale="quick", seed=0, device="cpu")
    assert len(entry.manifest["code_modules"]) > 20
    append(package_copy / "encodings" / "fixed.py")
    assert code_changed(entry.manifest)


def test_a_manifest_without_a_code_key_is_stale():
    assert code_changed({"code_hash": "0123"})
    assert code_changed({"code_key": "x", "code_modules": ["posgeom.no_such_module"]})


def test_notebook_modules_reads_code_cells_only():
    text = textwrap.dedent("""\
        # A chapter
        ```python
        from posgeom.experiments import learned_tables  # prose example, not run
        ```
        ```{code-cell} ipython3
        ---
        tags: [hide-input]
        ---
        %matplotlib inline
        import posgeom
        from posgeom.experiments import corpus_geometry as cg
        from posgeom.geometry import hellinger_matrix
        ```
        ```{code-cell} ipython3
        :tags: [remove-input]
        import numpy as np
        def f():
            from posgeom.encodings import encoding_distances
        ```
        """)
    assert notebook_modules(text) == (
        "posgeom", "posgeom.encodings.named", "posgeom.experiments.corpus_geometry", "posgeom.geometry.hellinger")


def test_every_chapter_is_keyed_to_what_it_imports():
    root = Path(__file__).resolve().parents[1] / "notebooks"
    for notebook in sorted(root.glob("*.md")):
        modules = notebook_modules(notebook.read_text())
        assert modules, f"{notebook.name} imports no posgeom module"
        deps = module_dependencies(modules)
        assert "posgeom.plotting" not in deps and not any(d.startswith("posgeom.registry") for d in deps)


def test_no_keyed_module_reads_a_docstring():
    # docstrings are left out of the key (keyed_source), so code that computed from one would escape it
    root = Path(posgeom.__file__).parent
    readers = []
    for name in codekey.all_modules():
        if codekey.is_infrastructure(name):
            continue
        path = codekey._module_file(name, root)
        source = path.read_text(encoding="utf-8")
        if "__doc__" in source or "getdoc" in source:
            readers.append(name)
    assert readers == []
