"""The package's import rules, read from the source with ast (README, "Layout"):

- core/ imports nothing of embsql except core/ and errors, and no duckdb, sqlglot, pyarrow or pandas;
- reporting/ never imports api/;
- no module imports another module's private (_underscore) name, and udfs/ import public names only;
- module-level imports have no cycle (imports inside functions, and under TYPE_CHECKING, are not
  module-level: they run after both modules exist);
- embsql/__init__.py holds public names only.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "embsql"
ENGINE_LIBRARIES = ("duckdb", "sqlglot", "pyarrow", "pandas", "polars", "pyspark", "psycopg")

# Imports that break a rule today, each with the issue step that removes it.  Empty is the goal.
KNOWN: set[tuple[str, str]] = {
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def sources() -> dict[str, Path]:
    files = list(PACKAGE.rglob("*.py")) + list((ROOT / "udfs").glob("*.py"))
    return {module_name(p): p for p in files}


def _type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or \
        (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def imports(path: Path, *, module_level: bool):
    """(imported module, imported names, line) of every import in ``path``; with ``module_level``
    only those that run when the module is imported."""
    tree = ast.parse(path.read_text(), str(path))
    package = module_name(path).rsplit(".", 1)[0] if path.name != "__init__.py" else module_name(path)

    def visit(nodes, top):
        for node in nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    yield alias.name, [], node.lineno
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
                yield base, [a.name for a in node.names], node.lineno
            elif isinstance(node, ast.If) and _type_checking(node):
                if not module_level:
                    yield from visit(node.body, top)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                if not module_level:
                    yield from visit(ast.iter_child_nodes(node), False)
            elif isinstance(node, ast.ClassDef) or hasattr(node, "body") or isinstance(node, ast.Try):
                yield from visit(ast.iter_child_nodes(node), top)

    yield from visit(tree.body, True)


def resolved(base: str, names: list[str], known: set[str]) -> list[str]:
    """The embsql modules an import statement loads: ``from embsql.core import sums`` loads embsql.core.sums."""
    out = [base] if base in known else []
    out += [f"{base}.{n}" for n in names if f"{base}.{n}" in known]
    return out


MODULES = sources()


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n.startswith("embsql.core")))
def test_core_imports_only_core_errors_and_numpy(name):
    for base, _names, line in imports(MODULES[name], module_level=False):
        if (name, base) in KNOWN:
            continue
        top = base.split(".")[0]
        assert top not in ENGINE_LIBRARIES, f"{name}:{line} imports {base}; core/ is numpy only"
        if top == "embsql":
            assert base == "embsql.errors" or base.startswith("embsql.core"), f"{name}:{line} imports {base}"


@pytest.mark.parametrize("name", sorted(n for n in MODULES if n.startswith("embsql.reporting")))
def test_reporting_never_imports_api(name):
    for base, names, line in imports(MODULES[name], module_level=False):
        if (name, base) in KNOWN:
            continue
        loaded = [base] + [f"{base}.{n}" for n in names]
        assert not any(m == "embsql.api" or m.startswith("embsql.api.") for m in loaded), \
            f"{name}:{line} imports {base}; the report computes from core/ and reads through io/"


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_module_imports_a_private_name(name):
    for base, names, line in imports(MODULES[name], module_level=False):
        if not base.startswith("embsql"):
            continue
        private = [n for n in names if n.startswith("_") and not n.startswith("__")]
        private += [part for part in base.split(".") if part.startswith("_") and part != "__init__"]
        assert not private, f"{name}:{line} imports the private name {private[0]} from {base}"


def test_no_import_cycle():
    known = set(MODULES)
    graph = {name: set() for name in known}
    for name, path in MODULES.items():
        for base, names, _ in imports(path, module_level=True):
            for target in resolved(base, names, known):
                # importing a submodule runs its packages' __init__ first; those are trivial here
                if target != name:
                    graph[name].add(target)
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycle = stack[stack.index(nxt):] + [nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)


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


def test_the_rules_catch_what_they_are_meant_to(tmp_path):
    """The checker itself: a private import, a core module importing duckdb, and a cycle are seen."""
    (tmp_path / "embsql" / "core").mkdir(parents=True)
    bad = tmp_path / "embsql" / "core" / "bad.py"
    bad.write_text("import duckdb\nfrom embsql.io.table_stream import _stream\n\ndef f():\n    from embsql.api import x\n")
    global ROOT
    saved = ROOT
    ROOT = tmp_path
    try:
        found = list(imports(bad, module_level=False))
        top = list(imports(bad, module_level=True))
    finally:
        ROOT = saved
    assert ("duckdb", [], 1) in found and ("embsql.io.table_stream", ["_stream"], 2) in found
    assert ("embsql.api", ["x"], 5) in found and ("embsql.api", ["x"], 5) not in top
