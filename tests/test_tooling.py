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
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


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
