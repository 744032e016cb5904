"""The linters stay clean: ``ruff check .`` and ``mypy embsql`` (configured in pyproject.toml) pass.

Each runs from the interpreter that runs the tests, so CI checks with the versions the ``test``
extra pins.  Outside CI a missing tool skips its test; under ``CI=true`` it fails.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
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
    result = run_tool("mypy", "embsql")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Success" in result.stdout
