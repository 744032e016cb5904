"""The surfaces users meet: the stock DuckDB CLI, registration, data sources, the demo, the SQL file."""

import doctest
import importlib
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest
import sqlglot

import embsql
from embsql.io.resources import sql_entry_file

EXAMPLE = "SELECT * FROM (VALUES ('A', [1.0, 0.0]), ('A', [0.8, 0.6]), ('B', [0.0, 1.0]), ('B', [-0.6, 0.8])) t(g, v)"


def duckdb_cli() -> str:
    found = shutil.which("duckdb") or str(Path(sys.executable).parent / "duckdb")
    assert Path(found).exists(), "the duckdb CLI (pip package duckdb-cli, in the test extra) is missing"
    return found


def test_stock_duckdb_cli_reads_the_entry_file(tmp_path):
    """From the CLI with no Python: .read the one entry file, then query a Parquet file."""
    data = tmp_path / "ex.parquet"
    duckdb.sql(f"COPY ({EXAMPLE}) TO '{data}'")
    script = f".read {sql_entry_file()}\n.mode csv\nSELECT * FROM emb_anova('{data}', 'g', 'v');\n"
    out = subprocess.run([duckdb_cli()], input=script, capture_output=True, text=True, check=True).stdout
    header, row = out.strip().splitlines()
    assert header == "n,groups,ss_t,ss_w,ss_b,r2,r2_null,f,v,mean_resultant_length,w_bar"
    values = [float(x) for x in row.split(",")]
    assert values[:6] == pytest.approx([4, 2, 2.2, 0.4, 1.8, 0.8181818181818182], rel=1e-12)


def test_stock_duckdb_cli_error_starts_with_embsql(tmp_path):
    script = f".read {sql_entry_file()}\nCREATE TABLE ex AS {EXAMPLE};\nSELECT * FROM emb_anova('ex', 'g', 'nope');\n"
    result = subprocess.run([duckdb_cli()], input=script, capture_output=True, text=True)
    assert 'embsql: [column.missing] vector column "nope" not found in ex' in result.stdout + result.stderr


def test_register_twice_is_register_once():
    con = duckdb.connect()
    embsql.register(con)
    functions = con.sql("SELECT function_name, parameters FROM duckdb_functions() WHERE function_name LIKE 'emb%' "
                        "ORDER BY ALL").fetchall()
    embsql.register(con)
    assert con.sql("SELECT function_name, parameters FROM duckdb_functions() WHERE function_name LIKE 'emb%' "
                   "ORDER BY ALL").fetchall() == functions
    assert {"emb_anova", "emb_groups", "emb_anova_dist", "emb_unit"} <= {f for f, _ in functions}
    con.execute(f"CREATE TABLE ex AS {EXAMPLE}")
    assert con.sql("SELECT round(r2, 6) FROM emb_anova('ex', 'g', 'v')").fetchall() == [(0.818182,)]


def _frames():
    vectors = np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0], [-0.6, 0.8]], dtype=np.float32)
    arrow = pa.table({"g": ["A", "A", "B", "B"],
                      "v": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), 2)})
    yield "arrow", arrow
    yield "pandas", arrow.to_pandas()
    polars = pytest.importorskip("polars")
    yield "polars", polars.from_arrow(arrow)
    yield "numpy", {"g": np.array(["A", "A", "B", "B"]), "v": list(vectors)}


@pytest.mark.parametrize("kind,frame", list(_frames()))
def test_data_from_python_objects(con, kind, frame):
    if kind == "numpy":  # a dict of numpy arrays goes through Arrow
        frame = pa.table({"g": frame["g"], "v": pa.array([list(map(float, v)) for v in frame["v"]])})
    con.register("frame", frame)
    sql_row = con.sql("SELECT ss_t, ss_w, r2 FROM emb_anova('frame', 'g', 'v')").fetchall()[0]
    assert sql_row == pytest.approx((2.2, 0.4, 1.8 / 2.2), rel=1e-6)   # float32 input
    assert embsql.anova(con, "frame", group="g", vector="v").r2 == pytest.approx(1.8 / 2.2, rel=1e-6)


def test_by_returns_one_row_per_model_with_the_column_first(con):
    con.execute(f"CREATE TABLE ex AS SELECT 'm1' AS model, * FROM ({EXAMPLE}) "
                f"UNION ALL SELECT 'm2', g, [v[1], v[2], 1.0] FROM ({EXAMPLE})")
    rows = con.sql("SELECT * FROM emb_anova('ex', 'g', 'v', model := 'model')").to_arrow_table()
    python = embsql.anova(con, "ex", group="g", vector="v", model="model")
    assert rows.column_names[0] == "model" and rows.column_names[1:] == list(python.columns[1:])
    assert rows.column("model").to_pylist() == ["m1", "m2"]
    for sql_row, py_row in zip(rows.to_pylist(), python.to_dicts()):
        assert sql_row.pop("model") == py_row.pop("model")
        assert sql_row == pytest.approx(py_row, rel=1e-12)
    # m2 is the exact lift with lambda = 1/2 of m1: R2 unchanged, V halved
    assert rows.column("r2")[1].as_py() == pytest.approx(rows.column("r2")[0].as_py(), rel=1e-12)
    assert rows.column("v")[1].as_py() == pytest.approx(rows.column("v")[0].as_py() / 2, rel=1e-12)
    groups = con.sql("SELECT * FROM emb_groups('ex', 'g', 'v', model := 'model')").to_arrow_table()
    assert groups.column_names == ["model", "group", "n_g", "w", "w_tilde", "resolved"]


def test_result_object_renders_and_converts(con):
    con.execute(f"CREATE TABLE ex AS {EXAMPLE}")
    result = embsql.anova(con, "ex", group="g", vector="v")
    assert "<table>" in result._repr_html_() and "r2" in repr(result)
    assert result.to_pandas().shape == (1, 11)
    assert result.to_arrow().column_names == list(result.columns)


def test_demo_reproduces_the_source_experiment():
    """S8: V falls >= 4x from c = 0 to 16 while R2 moves < 0.01; R2 rises as s falls; lift exact."""
    from embsql.demo import run_demo

    rows = run_demo(embsql.connect(), seeds=10).to_pylist()
    common = [r for r in rows if r["experiment"].startswith("common")]
    shrink = [r for r in rows if r["experiment"].startswith("within")]
    lift = [r for r in rows if r["experiment"].startswith("exact")]
    assert [r["param"] for r in common] == [0, 2, 4, 8, 16]
    assert all(a["v"] > b["v"] for a, b in zip(common, common[1:]))
    assert common[0]["v"] / common[-1]["v"] >= 4
    assert max(r["r2"] for r in common) - min(r["r2"] for r in common) < 0.01
    assert common[0]["v"] == pytest.approx(0.962, abs=0.02) and common[0]["r2"] == pytest.approx(0.790, abs=0.02)
    assert [r["param"] for r in shrink] == [1.0, 0.7, 0.4]
    assert shrink[0]["r2"] < shrink[1]["r2"] < shrink[2]["r2"]
    assert shrink[2]["r2"] == pytest.approx(0.959, abs=0.02)
    for r in lift:
        assert r["r2"] == pytest.approx(lift[0]["r2"], abs=1e-12)
        assert r["v"] == pytest.approx(r["param"] * lift[0]["v"], rel=1e-12)


def test_cli_demo_runs_as_a_subprocess():
    out = subprocess.run([sys.executable, "-m", "embsql", "demo", "--seeds", "3"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "common direction c" in out.stdout and "within-group shrink s" in out.stdout


def test_cli_help_and_bad_arguments():
    assert subprocess.run([sys.executable, "-m", "embsql", "demo", "--help"], capture_output=True, text=True
                          ).stdout.count("example:") == 1
    bad = subprocess.run([sys.executable, "-m", "embsql", "demo", "--seeds", "x"], capture_output=True, text=True)
    assert bad.returncode == 2 and "invalid int value: 'x'" in bad.stderr


def test_every_sql_statement_parses_with_sqlglot():
    """House style: the macros parse with sqlglot's DuckDB dialect.  sqlglot does not know macro
    parameters with defaults (name := value in the parameter list); those macros are left out."""
    statements = [s for s in sql_entry_file().read_text().split(";\n") if "CREATE" in s]
    with_defaults = [s for s in statements if ":=" in s.split(" AS ")[0]]
    assert len(statements) - len(with_defaults) >= 7
    for statement in statements:
        if statement not in with_defaults:
            sqlglot.parse_one(statement, read="duckdb")


def test_entry_file_is_built_from_the_modules():
    """sql/embsql.sql is generated from sql/modules by sql/build.py; it must be current."""
    import importlib.util

    path = sql_entry_file().parent / "build.py"
    if not path.exists():
        pytest.skip("sql/build.py is a source-tree tool; the wheel carries the built file only")
    spec = importlib.util.spec_from_file_location("sql_build", path)
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    assert sql_entry_file().read_text() == build.entry_text(), "run: python sql/build.py"


def test_every_public_sql_macro_is_documented():
    readme = (sql_entry_file().parent / "README.md").read_text()
    con = embsql.connect()
    public = {f for (f,) in con.sql("SELECT DISTINCT function_name FROM duckdb_functions() "
                                     "WHERE function_name LIKE 'emb\\_%' ESCAPE '\\'").fetchall()}
    public = {name for name in public if not name.startswith("emb__")}
    assert {"emb_anova", "emb_groups", "emb_anova_dist", "emb_unit"} <= public
    for name in public:
        assert f"## {name}" in readme, name


@pytest.mark.parametrize("module", ["embsql", "embsql.api.decomposition", "embsql.io.registration"])
def test_docstring_examples(module):
    failed, attempted = doctest.testmod(importlib.import_module(module))
    assert attempted > 0 and failed == 0


def test_installed_wheel_carries_sql_and_udfs():
    """CI installs a built wheel: the macros and kernels must come from inside the package."""
    package = Path(embsql.__file__).parent
    if "site-packages" not in str(package):
        pytest.skip("running from a source checkout; CI (.ci/run) tests the installed wheel")
    assert sql_entry_file() == package / "sql" / "embsql.sql"
    assert (package / "udfs" / "unit.py").is_file()
