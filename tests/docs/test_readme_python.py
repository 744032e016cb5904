"""The README's examples run as written, from the checkout's root, and its links resolve.

- the ```python block, statement by statement (a relation left as a value is fetched, as the
  REPL would show it), and its printed verdict is the one the README quotes;
- the ```sql block in the stock DuckDB CLI (the duckdb-cli package), `.read` included;
- the two commands (install and run the main job; the tests) are the ones .ci/run runs;
- every relative link and image points to a file of the checkout.
"""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from helpers import ROOT
from test_docs import run_python

README = (ROOT / "README.md").read_text(encoding="utf-8")


def block(language: str) -> str:
    found = re.findall(rf"^```{language}\n(.*?)^```$", README, re.MULTILINE | re.DOTALL)
    assert len(found) == 1, f"the README has one ```{language} block"
    return found[0]


def test_the_readme_is_a_front_door():
    assert 80 <= len(README.splitlines()) <= 140
    assert len(block("python").strip().splitlines()) <= 11 and len(block("sql").strip().splitlines()) <= 11


@pytest.mark.slow
def test_the_python_block_runs_as_written(monkeypatch):
    monkeypatch.chdir(ROOT)
    namespace: dict = {}
    printed = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(printed):
        warnings.simplefilter("ignore", UserWarning)      # permanova's spread warning fires on the example
        run_python(block("python"), namespace)
    verdict = printed.getvalue().strip()
    quoted = " ".join(block("text").split())
    assert verdict.startswith("base-768 separates the topic groups more than mini-384") and verdict == quoted
    assert namespace["html"].lstrip().lower().startswith("<!doctype html")


def test_the_sql_block_runs_in_the_stock_cli():
    cli = Path(sys.executable).parent / "duckdb"
    if not cli.exists():
        pytest.skip("the stock DuckDB CLI is not installed (pip install '.[test]': duckdb-cli)")
    done = subprocess.run([str(cli), "-csv", ":memory:"], input=".bail on\n" + block("sql"), capture_output=True,
                          text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "base-768" in done.stdout and "mini-384" in done.stdout


def test_the_two_commands_are_the_ones_ci_runs():
    commands = [line for line in block("bash").splitlines() if line and not line.startswith("#")]
    assert commands == [
        "python3 -m venv .venv && .venv/bin/pip install . && .venv/bin/embsql demo && .venv/bin/embsql report "
        "examples/embeddings.parquet --vector embedding --group topic --model model",
        "bash .ci/run"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "pytest -q -n auto --dist loadscope --durations=15 tests" in ci and "lowest-bounds.sh" in ci


def png_text(path: Path) -> dict[str, str]:
    """The tEXt chunks of a PNG file (key -> value), read by hand."""
    data, chunks, at = path.read_bytes(), {}, 8
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    while at < len(data):
        length, kind = int.from_bytes(data[at:at + 4], "big"), data[at + 4:at + 8]
        if kind == b"tEXt":
            key, _, value = data[at + 8:at + 8 + length].partition(b"\0")
            chunks[key.decode("latin-1")] = value.decode("latin-1")
        at += 12 + length
    return chunks


def test_the_screenshot_is_the_report_of_the_readmes_command():
    """docs/images/report.png is made by docs/screenshot.py from the README's command (its 999
    permutations, p = 0.001), which it records in the PNG; and that is the command the README runs."""
    made_by = png_text(ROOT / "docs" / "images" / "report.png").get("embsql-command")
    assert made_by is not None, "the screenshot was not made by docs/screenshot.py (python docs/screenshot.py)"
    assert block("bash").splitlines()[2].endswith(".venv/bin/" + made_by)
    assert "--permutations" not in made_by   # the default, 999: as the command a reader runs


def test_the_sql_section_says_where_the_duckdb_binary_comes_from():
    section = README[README.index("## Ten lines of SQL"):README.index("## Ten lines of Python")]
    assert "pip install duckdb-cli" in section


def test_every_link_resolves():
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README)
    assert len(links) >= 10
    missing = [link for link in links if not link.startswith("http") and not (ROOT / link).exists()]
    assert missing == []
