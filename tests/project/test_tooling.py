"""The linters stay clean: ``ruff check .`` and ``mypy embsql`` (configured in pyproject.toml) pass.

Each runs from the interpreter that runs the tests, so CI checks with the versions the ``test``
extra pins.  Outside CI a missing tool skips its test; under ``CI=true`` it fails.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tomllib

import pytest
from helpers import ROOT


def run_tool(module: str, *args: str) -> subprocess.CompletedProcess:
    if importlib.util.find_spec(module) is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{module} is not installed (it is in the 'test' extra)")
        pytest.skip(f"{module} is not installed (pip install '.[test]')")
    return subprocess.run([sys.executable, "-m", module, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def test_ruff_finds_nothing():
    result = run_tool("ruff", "check", "--no-cache", "--output-format", "concise", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_passes_on_the_package():
    result = run_tool("mypy", "--config-file", "pyproject.toml", "embsql")   # a stray mypy.ini would win otherwise
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success" in result.stdout


def _ini_value(value: object) -> str:
    return ", ".join(map(str, value)) if isinstance(value, list) else str(value)


def test_mypy_relaxes_only_the_modules_not_yet_annotated(tmp_path):
    """disallow_untyped_defs and check_untyped_defs hold package-wide; [[tool.mypy.overrides]] only turns
    disallow_untyped_defs off, and only for modules that still have an unannotated function: run without
    the overrides, mypy fails on exactly those modules (so an entry is removed once its module is typed)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert config["disallow_untyped_defs"] is True and config["check_untyped_defs"] is True
    relaxed = set()
    for override in config.get("overrides", []):
        assert set(override) == {"module", "disallow_untyped_defs"} and override["disallow_untyped_defs"] is False, \
            override
        modules = override["module"]
        relaxed |= {modules} if isinstance(modules, str) else set(modules)
    ini = tmp_path / "mypy.ini"
    ini.write_text("[mypy]\n" + "".join(f"{key} = {_ini_value(value)}\n" for key, value in config.items()
                                        if key != "overrides"))
    result = run_tool("mypy", "--config-file", str(ini), "--cache-dir", str(ROOT / ".mypy_cache" / "no-overrides"),
                      "embsql")
    failing = {path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
               for path in re.findall(r"^(embsql/\S+?\.py):\d+: error", result.stdout, re.MULTILINE)}
    assert failing == relaxed, result.stdout + result.stderr


# ---------------------------------------------------------------- the site from the docs extra alone (issue 32)

def _requirement_names(requirements: list[str]) -> set[str]:
    return {re.match(r"[A-Za-z0-9_.-]+", r)[0].lower().replace("_", "-") for r in requirements}


def test_ci_builds_the_site_from_a_venv_with_only_the_docs_extra():
    run = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^bash \.ci/docs\.sh$", run, re.MULTILINE), "the CI entry point runs .ci/docs.sh"
    script = (ROOT / ".ci" / "docs.sh").read_text()
    installs = re.findall(r"^\S*pip install (.*)$", script, re.MULTILINE)
    assert installs == ["-q --upgrade pip", "-q '.[docs]'"], installs
    assert re.search(r"^\S*python3 -m venv (\S+)$", script, re.MULTILINE)[1] == ".venv-docs"
    assert re.search(r"^.*\.venv-docs/bin/mkdocs build --strict\b", script, re.MULTILINE)
    ignored = (ROOT / ".gitignore").read_text().split()
    assert "site/" in ignored and ".venv-docs/" in ignored


def test_the_docs_extra_holds_what_the_site_build_imports():
    """The modules docs/hooks.py and the notebook guide's cells import (and the DataFrame libraries the
    cells convert to) come from the docs extra or the runtime dependencies, not the test extra."""
    import ast
    from importlib.metadata import packages_distributions

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    available = _requirement_names(project["dependencies"]) | _requirement_names(
        project["optional-dependencies"]["docs"])
    notebook = (ROOT / "docs" / "guides" / "notebook.md").read_text()
    cells = "\n".join(re.findall(r"^```python\n(.*?)^```", notebook, re.MULTILINE | re.DOTALL))
    modules = set()
    for source in (cells, (ROOT / "docs" / "hooks.py").read_text()):
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Import):
                modules |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                modules.add(node.module.split(".")[0])
    for method, module in {"to_pandas": "pandas", "to_polars": "polars", "to_arrow": "pyarrow"}.items():
        if f".{method}()" in cells:
            modules.add(module)
    assert {"pandas", "nbclient"} <= modules
    distributions = packages_distributions()
    for module in sorted(modules - set(sys.stdlib_module_names) - {"embsql"}):
        names = {d.lower().replace("_", "-") for d in distributions.get(module, [module])}
        assert names & available, f"{module} ({names}) is imported building the site but not in the docs extra"
