"""sql/embsql.sql in the stock DuckDB CLI that pip installs beside the duckdb module (duckdb-cli).

Each test runs the real CLI binary as a subprocess, on an in-memory database and on a database file
the CLI itself created, for every documented vector type; the figures are checked against numpy.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from embsql.io.resources import sql_entry_file

VECTOR_TYPES = ["FLOAT[]", "FLOAT[3]", "DOUBLE[]", "DOUBLE[3]"]
RNG = np.random.default_rng(11)
LABELS = np.repeat(["a", "b", "c"], 5)
X = (np.eye(3)[[0] * 5 + [1] * 5 + [2] * 5] + 0.8 * RNG.standard_normal((15, 3))).astype(np.float32)


def duckdb_cli() -> str:
    """The CLI of the pip package duckdb-cli, in the same environment as this Python."""
    found = Path(sys.executable).parent / "duckdb"
    assert found.exists(), "the duckdb CLI (pip package duckdb-cli, in the test extra) is missing"
    return str(found)


def run_cli(script: str, database: Path | None = None) -> subprocess.CompletedProcess:
    args = [duckdb_cli()] + ([str(database)] if database is not None else [])
    return subprocess.run(args, input=script, capture_output=True, text=True, timeout=120)


def create_table(vector_type: str) -> str:
    rows = ", ".join(f"('{g}', [{', '.join(repr(float(c)) for c in v)}])" for g, v in zip(LABELS, X))
    return f"CREATE TABLE t AS SELECT g, v::{vector_type} AS v FROM (VALUES {rows}) x(g, v);\n"


def numpy_figures() -> dict:
    z = X.astype(np.float64)
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    ss_t = ((z - z.mean(axis=0)) ** 2).sum()
    w = {g: ((z[LABELS == g] - z[LABELS == g].mean(axis=0)) ** 2).sum(axis=1).mean() for g in "abc"}
    ss_w = 5 * sum(w.values())
    ms_b, ms_w = (ss_t - ss_w) / 2, ss_w / 12
    return {"r2": (ss_t - ss_w) / ss_t, "f": ms_b / ms_w, "w": w, "icc": (ms_b - ms_w) / (ms_b + 4 * ms_w)}


def queries() -> str:
    return (f".read {sql_entry_file()}\n.mode csv\n.headers off\n"
            "SELECT r2, f FROM emb_anova('t', 'g', 'v');\n"
            "SELECT \"group\", w FROM emb_groups('t', 'g', 'v');\n"
            "SELECT icc, kind FROM emb_icc('t', 'g', 'v');\n")


def check_output(out: str) -> None:
    lines = out.strip().splitlines()
    assert len(lines) == 5, out
    ref = numpy_figures()
    r2, f = (float(x) for x in lines[0].split(","))
    assert (r2, f) == pytest.approx((ref["r2"], ref["f"]), rel=1e-6)  # float32 input, float64 sums
    assert {g: float(w) for g, w in (line.split(",") for line in lines[1:4])} == pytest.approx(ref["w"], rel=1e-6)
    icc, kind = lines[4].split(",")
    assert (float(icc), kind) == (pytest.approx(ref["icc"], rel=1e-6), "trace")


@pytest.mark.parametrize("vector_type", VECTOR_TYPES)
def test_in_memory_database(vector_type):
    result = run_cli(create_table(vector_type) + queries())
    assert result.returncode == 0, result.stderr
    check_output(result.stdout)


@pytest.mark.parametrize("vector_type", VECTOR_TYPES)
def test_database_file_made_by_the_cli_keeps_nothing_of_embsql(tmp_path, vector_type):
    database = tmp_path / "cli.duckdb"
    made = run_cli(create_table(vector_type), database)
    assert made.returncode == 0, made.stderr
    result = run_cli(queries(), database)
    assert result.returncode == 0, result.stderr
    check_output(result.stdout)
    after = run_cli(".mode csv\n.headers off\nSELECT count(*) FROM duckdb_functions() WHERE function_name LIKE 'emb%';\n"
                    "SELECT count(*) FROM duckdb_tables();\n", database)
    assert after.stdout.split() == ["0", "1"], after.stdout + after.stderr


@pytest.mark.parametrize("query,message", [
    ("SELECT r2 FROM emb_anova('s', 'g', 'v')", 'embsql: [column.type] vector column "v" in s has type VARCHAR'),
    ("SELECT r2 FROM emb_anova('t', 'g', 'v', model := 'mdl')", 'embsql: [column.missing] model column "mdl" not found in t'),
    ("SELECT f FROM emb_anova('one', 'g', 'v')", 'embsql: [design.one_group] group column "g" has only one group'),
    ("SELECT r2 FROM emb_anova('same', 'g', 'v')",
     "embsql: [design.identical] the vectors are identical to within floating-point precision"),
    ("SELECT r2 FROM emb_anova('empty', 'g', 'v')", "embsql: [source.empty] source 'empty' has no rows"),
])
def test_errors_start_with_embsql(tmp_path, query, message):
    setup = (create_table("DOUBLE[3]")
             + "CREATE TABLE s AS SELECT g, v::VARCHAR AS v FROM t;\n"
             + "CREATE TABLE one AS SELECT 'a' AS g, v FROM t;\n"
             + "CREATE TABLE same AS SELECT g, [1.0, 2.0, 3.0]::DOUBLE[3] AS v FROM t;\n"
             + "CREATE TABLE empty AS SELECT * FROM t LIMIT 0;\n")
    result = run_cli(setup + f".read {sql_entry_file()}\n{query};\n", tmp_path / "errors.duckdb")
    assert message in result.stdout + result.stderr

