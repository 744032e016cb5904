"""`embsql sql-path` prints the installed embsql.sql, so the stock DuckDB CLI loads the macros
outside a checkout: ``duckdb -c ".read $(embsql sql-path)"``, as the DuckDB CLI guide shows it.

Run from an empty directory, through a shell, with the console script and the stock CLI (the
duckdb-cli package) of this Python's environment; R² is checked against numpy on the same rows.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from helpers import ROOT

import embsql
from embsql.io.resources import sql_entry_file

BIN = Path(sys.executable).parent


def _needs(program: str) -> Path:
    path = BIN / program
    if not path.exists():
        pytest.skip(f"{program} is not installed in this environment (pip install '.[test]')")
    return path


def _r2_numpy(path: Path, model: str) -> float:
    table = pq.read_table(path).to_pydict()
    rows = [i for i, m in enumerate(table["model"]) if m == model]
    x = np.array([table["embedding"][i] for i in rows], dtype=np.float64)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    labels = np.array([table["topic"][i] for i in rows])
    ss_t = ((x - x.mean(axis=0)) ** 2).sum()
    ss_w = sum(((x[labels == g] - x[labels == g].mean(axis=0)) ** 2).sum() for g in np.unique(labels))
    return float(1 - ss_w / ss_t)


def test_sql_path_prints_the_file_the_package_reads():
    done = subprocess.run([str(_needs("embsql")), "sql-path"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stderr == ""
    path = Path(done.stdout.strip())
    assert path == sql_entry_file() and path.name == "embsql.sql" and path.is_file()
    if "site-packages" in str(Path(embsql.__file__)):        # CI installs the wheel: the file is inside the package
        assert path == Path(embsql.__file__).parent / "sql" / "embsql.sql"


def test_the_stock_cli_runs_the_macros_through_sql_path_outside_a_checkout(tmp_path):
    _needs("embsql"), _needs("duckdb")
    shutil.copy(ROOT / "examples" / "embeddings.parquet", tmp_path / "emb.parquet")
    command = ('duckdb -csv -c ".read $(embsql sql-path)" -c "SELECT model, r2 FROM emb_anova(\'emb.parquet\', '
               '\'topic\', \'embedding\', model := \'model\') ORDER BY model"')
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, cwd=tmp_path, timeout=120,
                          env={**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"})
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "sql").exists() and not (tmp_path / "embsql").exists()
    rows = [line.split(",") for line in done.stdout.strip().splitlines()[1:]]
    assert [model for model, _ in rows] == ["base-768", "mini-384"]
    for model, r2 in rows:
        assert float(r2) == pytest.approx(_r2_numpy(tmp_path / "emb.parquet", model), abs=1e-9)
