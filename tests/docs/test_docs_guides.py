"""Every code block of the guides runs as written, top to bottom, on the bundled example.

Each page (docs/index.md, docs/guides/*.md) runs in an empty directory that holds only
examples/embeddings.parquet, as a user who follows it would:

- ```python blocks, in order, in one namespace per page (a relation left as a statement's value is
  fetched, as a notebook would show it);
- ```sql blocks, in one session of the stock DuckDB CLI (the duckdb-cli package) after
  ``.read`` of the installed embsql.sql, so they use only what the CLI has;
- ```bash blocks, with this environment's ``embsql`` and ``duckdb`` on PATH.

A block right after ``<!-- not run: REASON -->`` is shown, not run (a PostgreSQL server or a Spark
cluster); the reason names the test that runs the same code on a live server.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from helpers import ROOT
from test_docs import run_python

from embsql.io.resources import sql_entry_file

BIN = Path(sys.executable).parent
PAGES = [ROOT / "docs" / "index.md", *sorted((ROOT / "docs" / "guides").glob("*.md"))]
FENCE = re.compile(r"^(?P<skip><!-- not run: [^>]+-->\n)?```(?P<language>\w+)[^\n]*\n(?P<code>.*?)^```$",
                   re.MULTILINE | re.DOTALL)
RUN = ("python", "sql", "bash")


def blocks(page: Path) -> list[tuple[str, str, bool]]:
    """(language, code, run?) of every fenced block of the page, in order."""
    return [(m["language"], m["code"], m["skip"] is None) for m in FENCE.finditer(page.read_text(encoding="utf-8"))]


def _env() -> dict[str, str]:
    return {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", "NO_COLOR": "1"}


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.stem)
def test_every_block_of_the_page_runs(page, tmp_path, monkeypatch):
    found = blocks(page)
    assert all(language in RUN or language in ("text", "toml") for language, _, _ in found), \
        f"{page.name}: a block in a language the test does not run: {[lang for lang, _, _ in found]}"
    (tmp_path / "examples").mkdir()
    shutil.copy(ROOT / "examples" / "embeddings.parquet", tmp_path / "examples")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    sql = [".bail on", f".read {sql_entry_file()}"]
    ran = 0
    for number, (language, code, run) in enumerate(found, 1):
        if not run or language not in RUN:
            continue
        ran += 1
        if language == "python":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                try:
                    run_python(code, namespace)
                except Exception as error:
                    raise AssertionError(f"{page.name}, block {number} (python) failed: {error}\n{code}") from error
        elif language == "sql":
            sql += [f"SELECT 'block {number}' AS guide_block;", code]
        else:
            done = subprocess.run(["bash", "-euo", "pipefail", "-c", code], capture_output=True, text=True,
                                  env=_env(), timeout=600)
            assert done.returncode == 0, f"{page.name}, block {number} (bash) failed: {done.stderr[-2000:]}\n{code}"
    if len(sql) > 2:
        done = subprocess.run([str(BIN / "duckdb"), ":memory:"], input="\n".join(sql), capture_output=True, text=True,
                              env=_env(), timeout=600)
        last = re.findall(r"block \d+", done.stdout)
        assert done.returncode == 0, f"{page.name}: the SQL after {last[-1] if last else 'the start'} failed: {done.stderr}"
    print(f"{page.name}: {ran} blocks ran")


def test_the_not_run_blocks_say_why_and_are_few():
    skipped = [(p.name, code) for p in PAGES for _, code, run in blocks(p) if not run]
    text = "".join(p.read_text(encoding="utf-8") for p in PAGES)
    assert len(skipped) <= 4 and len(re.findall(r"<!-- not run: .*?tests/(?:\w+/)?test_\w+\.py", text)) == len(skipped)
