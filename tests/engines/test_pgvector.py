"""pgvector on a real PostgreSQL (16, pgvector 0.6.2, from pgserver: tests/pgvector_fixtures.py).

Stage 1 there is pgvector's avg(vector) of the unit vectors (float32 element-wise, added in double),
so the figures differ from DuckDB's float64 ones by float32 roundings.  The tolerance, derived
(EPS = 2^-23, float32's unit in the last place at 1):

* each unit coordinate is u_ik (1 + d1)(1 + d2), |d| <= 2^-24 (1 / ||v|| rounded to float32, then the
  product); the mean is added in double and rounded to float32 once (|d3| <= 2^-24);
* so |s~_gk - s_gk| <= EPS sum_i |u_ik| + EPS/2 |s_gk|, and ||s~_g||^2 is off by at most
  2 ||s_g|| EPS sum_i |||u_i||| + EPS ||s_g||^2 <= EPS n_g^2 (2 rho_g + rho_g^2) <= 3 EPS n_g^2 (rho_g <= 1);
* W_g = n_g - ||s_g||^2 / n_g is then off by <= 3 EPS n_g, SS_W by <= 3 EPS n, SS_T likewise, SS_B by <= 6 EPS n:
  relative 3 EPS / W-bar for SS_W, 3 EPS / V for SS_T, 6 EPS / (R^2 V) for SS_B; R^2 and F add
  the relative errors of their two parts.
* a jackknife SE is sqrt((G-1)/G sum (theta_-g - mean)^2): off by <= 2 sqrt(G) max |d theta_-g|.
These are worst cases (the roundings are independent, and measure about 1000x smaller); the vectors
here are float32 already, so storing them in pgvector rounds nothing.
"""

import math
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from sqlglot import exp
from test_engines_report import GROUPS, REPORT, engine_table, figures

import embsql
from embsql.engines.connections import fetch_arrow, load_table
from embsql.io import portable_sums

try:
    from engine_fixtures import postgres  # noqa: F401  (the Debian PostgreSQL, without pgvector)
except ImportError:  # the engine fixtures live in conftest.py
    pass

EPS = 2.0 ** -23


@pytest.fixture(scope="module")
def pg(pgvector):
    load_table(pgvector, "emb", engine_table(), vector_type="vector")
    return pgvector


@pytest.fixture(scope="module")
def duckdb_result():
    con = embsql.connect()
    con.register("emb", engine_table())
    return REPORT.run(con)


def decomposition_tolerances(row: dict) -> dict:
    """The derived worst-case relative error of each decomposition figure (module docstring)."""
    v, w_bar, r2 = row["v"], row["w_bar"], row["r2"]
    ss_w, ss_t, ss_b = 3 * EPS / w_bar, 3 * EPS / v, 6 * EPS / (r2 * v)
    return {"ss_w": ss_w, "w_bar": ss_w, "ss_t": ss_t, "v": ss_t, "ss_b": ss_b, "r2": ss_b + ss_t,
            "f": ss_b + ss_w, "mean_resultant_length": 3 * EPS / (1 - v)}


def test_pgvector_column_is_read_with_its_own_aggregate(pg):
    assert fetch_arrow(pg, "SELECT pg_typeof(vec)::text AS t FROM emb LIMIT 1").column("t").to_pylist() == ["vector"]
    result = embsql.run_on(pg, REPORT)
    assert result.meta["engine"] == "postgres" and result.meta["vector_type"] == "vector"
    assert result.meta["pgvector_version"] == "0.6.2"
    assert "avg(case" in result.meta["sql"].lower() and "array_fill" in result.meta["sql"]
    # O(G d): one float32 mean per (model, group), not the rows
    assert 0 < result.meta["stage1_bytes"] < 2 * GROUPS * (64 * 8 + 100)


def test_pgvector_figures_agree_with_duckdb_within_the_float32_bound(pg, duckdb_result):
    result = embsql.run_on(pg, REPORT)
    for expected, got in zip(duckdb_result["decomposition"].to_dicts(), result["decomposition"].to_dicts()):
        for column, tol in decomposition_tolerances(expected).items():
            assert got[column] == pytest.approx(expected[column], rel=tol, abs=0), column
    decomposition = {row["model"]: row for row in duckdb_result["decomposition"].to_dicts()}
    for expected, got in zip(duckdb_result["jackknife"].to_dicts(), result["jackknife"].to_dicts()):
        row = decomposition[expected["model"]]
        tol = decomposition_tolerances(row)[expected["statistic"]]
        # every leave-one-group-out estimate is within tol of its own value; |theta_-g| <= 1.5 |theta| here
        bound = 2 * math.sqrt(expected["groups"]) * tol * 1.5 * abs(expected["estimate"])
        assert abs(got["estimate"] - expected["estimate"]) <= bound, expected
        assert abs(got["se"] - expected["se"]) <= bound, expected


def test_other_sections_are_close_and_the_bound_is_not_vacuous(pg, duckdb_result):
    """bootstrap and compare: within 1e-6 relative (measured: 6e-8); and the decomposition bound
    is far below what float32 sums (pgvector's sum(vector)) would give on a large group."""
    result = embsql.run_on(pg, REPORT)
    expected, got = figures(duckdb_result), figures(result)
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, rel=1e-6, abs=1e-12), key


def test_a_large_group_is_summed_in_double(pgvector):
    """40,000 vectors in one group: avg(vector) adds in double, so the mean resultant length is
    within 3 EPS / rho of float64's; float32 running sums (sum(vector)) would drift by ~n EPS."""
    rng = np.random.default_rng(3)
    n, d = 40_000, 16
    x = (rng.standard_normal((n, d)) * 0.3 + 1.0).astype(np.float32)
    labels = np.where(np.arange(n) < n - 100, "big", "small")
    table = pa.table({"g": labels, "v": pa.array(list(x), pa.list_(pa.float32()))})
    load_table(pgvector, "large", table, vector_type="vector")
    report = embsql.report("large", vector="v", group="g", sections=["decomposition", "groups"])
    got = embsql.run_on(pgvector, report)["decomposition"].to_dicts()[0]
    u = x.astype(np.float64) / np.linalg.norm(x.astype(np.float64), axis=1, keepdims=True)
    rho = np.linalg.norm(u.sum(axis=0)) / n
    assert got["mean_resultant_length"] == pytest.approx(rho, rel=3 * EPS / rho)
    float32_sum = np.linalg.norm(np.cumsum(u.astype(np.float32), axis=0, dtype=np.float32)[-1]) / n
    assert abs(float32_sum - rho) > 2 * 3 * EPS       # twice the tolerance: the bound would not let it through


def test_tiny_and_huge_vectors_get_their_unit_vectors(pgvector):
    """1 / ||v|| outside float32's normal range goes through a power-of-ten scale.  Powers of two
    keep the float32 inputs exact multiples of each other: only the 3 EPS / W-bar of the products remain."""
    base = np.array([[1.0, 2.0, 2.0], [2.0, 1.0, 2.0], [2.0, 2.0, 1.0], [1.0, 0.0, 0.0]])
    # about 7e-43 (float32 subnormals: 1 / norm would overflow float32) and 8.5e37 (1 / norm subnormal)
    vectors = np.vstack([base * 2.0 ** -140, base * 2.0 ** 125, base])
    table = pa.table({"g": ["a"] * 4 + ["b"] * 4 + ["c"] * 4, "v": pa.array(list(vectors), pa.list_(pa.float64()))})
    load_table(pgvector, "scales", table, vector_type="vector")
    rows = embsql.run_on(pgvector, embsql.report("scales", vector="v", group="g", sections=["groups"]))["groups"]
    spread = {row["group"]: row["w_tilde"] for row in rows.to_dicts()}
    assert 0 < spread["c"] < 1
    tol = 3 * EPS / spread["c"]
    assert spread["a"] == pytest.approx(spread["c"], rel=tol) and spread["b"] == pytest.approx(spread["c"], rel=tol)


def test_mixed_dimensions_name_the_engine_and_the_column(pgvector):
    table = pa.table({"g": ["a", "a", "b", "b"],
                      "v": pa.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.5, 1.0, 1.0, 2.0]])})
    load_table(pgvector, "mixed", table, vector_type="vector")    # an unconstrained vector column
    with pytest.raises(embsql.BadVectorError, match=r"^postgres: vector column 'v' has a vector of length 4 "
                                                    r"in group 'b'") as info:
        embsql.run_on(pgvector, embsql.report("mixed", vector="v", group="g"))
    assert "\n" not in str(info.value)


def test_zero_vector_is_counted_not_divided_by(pgvector):
    load_table(pgvector, "zero", pa.table({"g": ["a", "a", "b", "b"],
                                           "v": [[1.0, 0.0], [0.0, 0.0], [1.0, 1.0], [0.5, 1.0]]}),
               vector_type="vector")
    with pytest.raises(embsql.BadVectorError, match=r"^postgres: vector column 'v' has 1 vector\(s\) .*zero length "
                                                    r"in group 'a'"):
        embsql.run_on(pgvector, embsql.report("zero", vector="v", group="g"))


def test_missing_table_and_non_vector_column_name_the_engine(pgvector):
    with pytest.raises(embsql.EngineError, match=r"^postgres: cannot read table 'no_such_table': .*does not exist"):
        embsql.run_on(pgvector, embsql.report("no_such_table", vector="v", group="g"))
    pgvector.execute("DROP TABLE IF EXISTS texts")
    pgvector.execute("CREATE TABLE texts AS SELECT 'a' AS g, 'not a vector' AS v")
    with pytest.raises(embsql.ColumnTypeError, match=r"^postgres: vector column 'v' of 'texts' is text; it must be an "
                                                     r"array of numbers or pgvector's vector"):
        embsql.run_on(pgvector, embsql.report("texts", vector="v", group="g"))


def test_halfvec_needs_pgvector_07(pgvector):
    """pgvector 0.6.2 has no halfvec (it arrived in 0.7, with l2_normalize): loading one is refused
    naming the version, and the 0.7 form of the query is written (not run here) for such servers."""
    assert fetch_arrow(pgvector, "SELECT to_regtype('halfvec')::text AS t").column("t").to_pylist() == [None]
    with pytest.raises(embsql.EngineError, match=r"^postgres: column 'v' needs pgvector's halfvec .*0\.7; this "
                                                 r"server has 0\.6\.2"):
        load_table(pgvector, "half", pa.table({"v": [[1.0, 2.0]]}), vector_type="halfvec")
    table = exp.to_table("emb")
    dims = portable_sums.Dimensions({None: 3})
    newer = portable_sums.pgvector_sums_query(table, "g", "v", dims, version="0.7.4", halfvec=True)
    assert 'l2_normalize("__emb_v")' in newer and 'CAST("v" AS VECTOR)' in newer and "array_fill" not in newer
    older = portable_sums.pgvector_sums_query(table, "g", "v", dims, version="0.6.2")
    assert "l2_normalize" not in older and "array_fill" in older


def test_a_server_without_the_extension_is_named(postgres):
    """The Debian PostgreSQL of tests/engine_fixtures.py has no pgvector."""
    with pytest.raises(embsql.EngineError, match=r"^postgres: column 'v' needs pgvector's vector type, and this "
                                                 r"server has no vector extension"):
        load_table(postgres, "needs_vector", pa.table({"g": ["a"], "v": [[1.0, 2.0]]}), vector_type="vector")


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "embsql.cli", *args], capture_output=True, text=True, timeout=300)


def test_command_line_runs_stage_1_on_postgres(pg, duckdb_result):
    import json

    dsn = pg.info.dsn
    out = cli("report", "--engine", "postgres", "--dsn", dsn, "--table", "emb", "--vector", "vec", "--group", "topic",
              "--model", "model", "--sections", "decomposition", "--format", "json")
    assert out.returncode == 0, out.stderr
    document = json.loads(out.stdout)
    assert document["meta"]["engine"] == "postgres" and document["meta"]["vector_type"] == "vector"
    assert document["meta"]["stage1_bytes"] > 0
    section = next(s for s in document["sections"] if s["name"] == "decomposition")
    rows = {row[section["columns"].index("model")]: dict(zip(section["columns"], row)) for row in section["rows"]}
    expected = {row["model"]: row for row in duckdb_result["decomposition"].to_dicts()}
    for model, row in expected.items():
        assert rows[model]["r2"] == pytest.approx(row["r2"], rel=decomposition_tolerances(row)["r2"])


def test_command_line_engine_errors_are_one_line(pg):
    dsn = pg.info.dsn
    wrong_user = cli("report", "--engine", "postgres", "--dsn", dsn + " user=nobody", "--table", "emb",
                     "--vector", "vec", "--group", "topic")
    assert wrong_user.returncode == 2
    assert wrong_user.stderr.count("\n") == 1 and "postgres: cannot connect" in wrong_user.stderr
    assert 'role "nobody" does not exist' in wrong_user.stderr
    missing = cli("report", "--engine", "postgres", "--dsn", dsn, "--table", "nope", "--vector", "vec", "--group", "t")
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1
    assert "postgres: cannot read table 'nope'" in missing.stderr
    no_dsn = cli("report", "--engine", "postgres", "--table", "emb", "--vector", "vec", "--group", "topic")
    assert no_dsn.returncode == 2 and "--dsn is needed" in no_dsn.stderr


def test_models_of_different_lengths_share_one_column(pgvector):
    """An unconstrained vector column with d = 5 for one model and d = 8 for another: each model's
    rows are checked against its own d, and the figures match DuckDB's within the float32 bound."""
    rng = np.random.default_rng(8)
    parts = []
    for model, d in (("small", 5), ("large", 8)):
        labels = rng.integers(0, 6, 300)
        x = (rng.standard_normal((6, d))[labels] + rng.standard_normal((300, d))).astype(np.float32)
        parts.append(pa.table({"model": [model] * 300, "g": [f"g{k}" for k in labels],
                               "v": pa.array(list(x), pa.list_(pa.float32()))}))
    table = pa.concat_tables(parts)
    load_table(pgvector, "two_lengths", table, vector_type="vector")
    report = embsql.report("two_lengths", vector="v", group="g", model="model", sections=["decomposition"])
    got = embsql.run_on(pgvector, report)
    assert got.meta["dimensions"] == {"small": 5, "large": 8}
    con = embsql.connect()
    con.register("two_lengths", table)
    expected = report.run(con)["decomposition"].to_dicts()
    for want, have in zip(expected, got["decomposition"].to_dicts()):
        assert want["model"] == have["model"]
        for column, tol in decomposition_tolerances(want).items():
            assert have[column] == pytest.approx(want[column], rel=tol), (want["model"], column)
