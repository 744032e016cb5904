"""The package's import rules, read from the source with ast (README, "Layout").

Every import statement counts, wherever it is: at module level, inside a function, or under
``if TYPE_CHECKING:``.  None of them is exempt from a rule:

- core/ imports numpy, embsql.errors, core/ itself and the standard library, nothing else;
- reporting/ never imports api/; render/ never imports reporting/ (reporting calls render);
- no module imports another module's private (_underscore) name, and udfs/ import public names only;
- no import of embsql inside a function, except in cli.py (which imports lazily, for start-up time);
- no ``TYPE_CHECKING`` import is a back-edge (one whose target imports the importer, so that the
  import only works because it never runs);
- the imports, all of them together, have no cycle;
- embsql/__init__.py holds public names only.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import ROOT

PACKAGE = ROOT / "embsql"
# threadpoolctl: the kernels that share small BLAS products between their own threads hold BLAS to one
# thread (core.permutation.one_blas_thread); it controls the computation, it reads and writes nothing
# scipy.sparse: arithmetic on arrays (core.sums.add_runs adds runs of rows as a sparse 0/1 product)
CORE_MAY_IMPORT = ("numpy", "threadpoolctl", "scipy.sparse", "embsql.errors", "embsql.core")
LAZY_IMPORTS_ALLOWED = ("embsql.cli",)   # the command line imports the package when a command runs


@dataclass(frozen=True)
class Import:
    """One import statement of a module."""

    target: str                 # the module it names (a relative import resolved)
    names: tuple[str, ...]      # the names taken from it (from X import a, b)
    line: int
    where: str                  # "module" (runs on import), "function" or "type_checking"


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports_of(source: str, name: str, is_package: bool) -> list[Import]:
    """Every import statement in ``source`` (the module ``name``), with where it runs."""
    package = name if is_package else name.rsplit(".", 1)[0]

    def visit(nodes, where: str) -> Iterator[Import]:
        for node in nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield Import(alias.name, (), node.lineno, where)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[: len(parts) - node.level + 1] + ([base] if base else []))
                yield Import(base, tuple(a.name for a in node.names), node.lineno, where)
            elif isinstance(node, ast.If) and _type_checking(node):
                yield from visit(node.body, "type_checking" if where == "module" else where)
                yield from visit(node.orelse, where)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                yield from visit(ast.iter_child_nodes(node), "function")
            else:
                yield from visit(ast.iter_child_nodes(node), where)

    return list(visit(ast.parse(source).body, "module"))


def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def read_package(root: Path) -> dict[str, list[Import]]:
    """module name -> its imports, for embsql/ and udfs/ under ``root``."""
    files = list((root / "embsql").rglob("*.py")) + list((root / "udfs").glob("*.py"))
    return {module_name(p, root): imports_of(p.read_text(), module_name(p, root), p.name == "__init__.py")
            for p in files}


def loaded(imp: Import, known: set[str]) -> list[str]:
    """The package's modules an import statement loads: ``from embsql.core import sums`` loads embsql.core.sums."""
    out = [imp.target] if imp.target in known else []
    return out + [f"{imp.target}.{n}" for n in imp.names if f"{imp.target}.{n}" in known]


def graph(modules: dict[str, list[Import]], wheres: tuple[str, ...]) -> dict[str, set[str]]:
    """module -> the modules it imports, over the imports of the given kinds."""
    known = set(modules)
    return {name: {target for imp in found if imp.where in wheres for target in loaded(imp, known) if target != name}
            for name, found in modules.items()}


def reaches(edges: dict[str, set[str]], start: str, goal: str) -> bool:
    seen, todo = set(), [start]
    while todo:
        node = todo.pop()
        if node == goal:
            return True
        if node not in seen:
            seen.add(node)
            todo += sorted(edges.get(node, ()))
    return False


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle (its modules, the first repeated at the end), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def in_function_imports(modules: dict[str, list[Import]]) -> list[str]:
    """Imports of embsql inside a function, outside the modules allowed to import lazily."""
    return [f"{name}:{imp.line} imports {imp.target}" for name, found in sorted(modules.items())
            for imp in found if imp.where == "function" and imp.target.split(".")[0] in ("embsql", "udfs")
            and name not in LAZY_IMPORTS_ALLOWED]


def type_checking_back_edges(modules: dict[str, list[Import]]) -> list[str]:
    """``TYPE_CHECKING`` imports whose target imports (at run time) the importing module."""
    known = set(modules)
    running = graph(modules, ("module", "function"))
    return [f"{name}:{imp.line} imports {target} for type hints, and {target} imports {name}"
            for name, found in sorted(modules.items()) for imp in found if imp.where == "type_checking"
            for target in loaded(imp, known) if reaches(running, target, name)]


def core_import_problems(modules: dict[str, list[Import]]) -> list[str]:
    allowed_top = set(sys.stdlib_module_names)
    return [f"{name}:{imp.line} imports {imp.target}; core/ imports numpy, scipy.sparse, threadpoolctl, errors and"
            " the standard library only"
            for name, found in sorted(modules.items()) if name == "embsql.core" or name.startswith("embsql.core.")
            for imp in found
            if imp.target.split(".")[0] not in allowed_top
            and not any(imp.target == m or imp.target.startswith(m + ".") for m in CORE_MAY_IMPORT)]


MODULES = read_package(ROOT)


def test_core_imports_only_numpy_errors_and_the_standard_library():
    assert core_import_problems(MODULES) == []


@pytest.mark.parametrize("layer, never", [("embsql.reporting", "embsql.api"), ("embsql.render", "embsql.reporting")])
def test_a_layer_never_imports_the_one_above(layer, never):
    """reporting computes from core and reads through io, never through api; reporting calls render, never
    the other way (render draws what embsql.render.document describes)."""
    known = set(MODULES)
    found = [f"{name}:{imp.line} imports {imp.target}" for name, imports in sorted(MODULES.items())
             if name == layer or name.startswith(layer + ".") for imp in imports
             if any(m == never or m.startswith(never + ".") for m in [imp.target] + loaded(imp, known))]
    assert found == []


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_imports_a_private_name(name):
    for imp in MODULES[name]:
        if not imp.target.startswith("embsql"):
            continue
        private = [n for n in imp.names if n.startswith("_") and not n.startswith("__")]
        private += [part for part in imp.target.split(".") if part.startswith("_") and part != "__init__"]
        assert not private, f"{name}:{imp.line} imports the private name {private[0]} from {imp.target}"


def test_embsql_is_imported_inside_a_function_only_by_the_command_line():
    found = in_function_imports(MODULES)
    assert len(found) == 0, "\n".join(found)
    lazy = [imp for name in LAZY_IMPORTS_ALLOWED for imp in MODULES[name] if imp.where == "function"]
    assert lazy, "cli.py imports the package lazily (for start-up time); the rule's exemption is still needed"


def test_no_type_checking_import_is_a_back_edge():
    found = type_checking_back_edges(MODULES)
    assert len(found) == 0, "\n".join(found)


def test_no_import_cycle():
    cycle = find_cycle(graph(MODULES, ("module", "function", "type_checking")))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_package_init_holds_public_names_only():
    import embsql

    for name in embsql.__all__:
        assert not name.startswith("_") and hasattr(embsql, name)
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    for node in tree.body:
        assert isinstance(node, (ast.Expr, ast.ImportFrom, ast.Import, ast.Assign, ast.AnnAssign)), \
            f"embsql/__init__.py line {node.lineno}: only imports and __all__/__version__ belong there"


def test_subpackage_modules_are_not_shadowed_by_functions():
    """``import embsql.reporting.build`` gives the module, never a function of the same name."""
    import importlib

    import embsql

    for name in sorted(MODULES):
        if name.startswith("embsql.") and name.count(".") == 1 and name != "embsql.__main__":
            module = importlib.import_module(name)
            assert getattr(embsql, name.split(".")[1]) is module, f"{name} is rebound in embsql/__init__.py"


BAD_PACKAGE = {   # a package that breaks every rule once
    "embsql/__init__.py": "",
    "embsql/errors.py": "",
    "embsql/core/__init__.py": "",
    "embsql/core/bad.py": "import math\nimport duckdb\nfrom embsql.io.table_stream import _stream\n"
                          "from . import sums\n",
    "embsql/core/sums.py": "import numpy as np\nfrom embsql.errors import fail\n",
    "embsql/io/__init__.py": "",
    "embsql/io/table_stream.py": "from embsql.core import sums\n\ndef f():\n    from embsql.reporting import a\n",
    "embsql/reporting/__init__.py": "",
    "embsql/reporting/a.py": "from typing import TYPE_CHECKING\nfrom embsql.render import b\n"
                             "if TYPE_CHECKING:\n    import pandas\n",
    "embsql/render/__init__.py": "",
    "embsql/render/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from embsql.reporting.a import A\n",
    "embsql/cli.py": "def main():\n    from embsql.reporting import a\n",
}


def test_the_rules_catch_what_they_are_meant_to(tmp_path):
    """The checker itself, on a package made to break each rule: every break is seen, and nothing else."""
    for path, text in BAD_PACKAGE.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    modules = read_package(tmp_path)
    assert Import("embsql.core", ("sums",), 4, "module") in modules["embsql.core.bad"]   # relative, resolved
    assert [p.split(" imports ")[1].split(";")[0] for p in core_import_problems(modules)] == \
        ["duckdb", "embsql.io.table_stream"]                                   # math and numpy are fine
    assert in_function_imports(modules) == ["embsql.io.table_stream:4 imports embsql.reporting"]   # not cli's
    assert type_checking_back_edges(modules) == [
        "embsql.render.b:3 imports embsql.reporting.a for type hints, and embsql.reporting.a imports embsql.render.b"]
    assert find_cycle(graph(modules, ("module",))) is None                    # hidden from a module-level check
    assert find_cycle(graph(modules, ("module", "function", "type_checking"))) == \
        ["embsql.reporting.a", "embsql.render.b", "embsql.reporting.a"]
    private = [imp for imp in modules["embsql.core.bad"] if any(n.startswith("_") for n in imp.names)]
    assert [imp.line for imp in private] == [3]


def test_bench_and_validation_use_public_names_only():
    """bench/ times and validation/ measures what a user can call: no private module, function or method
    (an attribute or import starting with one underscore, other than the script's own self._x)."""
    found = []
    for path in sorted([*(ROOT / "bench").glob("*.py"), *(ROOT / "validation").glob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__") \
                    and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append(f"{path.name}:{node.lineno} {ast.unparse(node)}")
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("embsql"):
                found += [f"{path.name}:{node.lineno} imports {a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    assert found == []
