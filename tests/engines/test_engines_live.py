"""embsql.engines.connections on real engines started by the tests: DuckDB, PostgreSQL (a scratch server) and
Spark (local). Queries are written once with sqlglot and transpiled, as the stage-1 builder does;
every number is checked against numpy on the source arrays."""

import subprocess
import sys

import engine_fixtures
import numpy as np
import pyarrow as pa
import pytest
import sqlglot
from sqlglot import exp

from embsql.engines.connections import dialect_of, fetch_arrow, load_table
from embsql.errors import EngineError, InputError

pytestmark = pytest.mark.engines

D = 5
TABLE = "emb_vectors"


def source_arrays(seed=7, n=40):
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(n, D)) * 10.0 ** rng.integers(-5, 5, size=(n, 1))  # not rounded by text I/O
    groups = rng.choice(["A", "b", "C c"], size=n)
    counts = np.where(rng.random(n) < 0.2, -1, rng.integers(-10, 10, n))
    return vectors, groups, counts


@pytest.fixture(scope="module")
def loaded(engine):
    """``engine`` with TABLE loaded: id, g (one NULL), v (a FIXED_SIZE list; one NULL vector), k (NULLs)."""
    vectors, groups, counts = source_arrays()
    null_vector = 3
    flat = pa.array(vectors.ravel())
    v = pa.FixedSizeListArray.from_arrays(flat, D, mask=pa.array(np.arange(len(vectors)) == null_vector))
    table = pa.table({"id": np.arange(len(vectors)), "g": pa.array([None, *groups[1:]]), "v": v,
                      "k": pa.array(counts, mask=counts == -1)})
    load_table(engine, TABLE, table)
    return engine, vectors, groups, counts, null_vector


def sql_for(connection, query: exp.Expression) -> str:
    return query.sql(dialect=dialect_of(connection))


def test_dialect_of_each_engine(engine, request):
    assert dialect_of(engine) == request.node.callspec.params["engine"]


def test_dialect_of_rejects_other_objects_naming_the_type():
    with pytest.raises(InputError, match=r"builtins\.dict.*duckdb.*SparkSession.*psycopg"):
        dialect_of({"not": "a connection"})


def test_engines_module_imports_neither_pyspark_nor_psycopg():
    code = ("import sys, embsql.engines.connections; "
            "print(sorted(m for m in ('pyspark', 'psycopg', 'psycopg2') if m in sys.modules))")
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "[]"


def test_fetch_arrow_names_types_and_nulls(engine):
    # written once (DuckDB SQL) and transpiled: decimals, an integer sum, an all-NULL group, a quoted name
    sql = ('SELECT g AS "Group", count(*) AS n, count(x) AS nx, sum(x) AS total, sum(k) AS ksum, '
           'max(CASE WHEN x > 100 THEN x END) AS big, min(s) AS s '
           "FROM (VALUES ('a', 1.5, 1, 'p'), ('a', 2.25, 2, NULL), ('b', NULL, NULL, 'q')) AS t(g, x, k, s) "
           "GROUP BY g ORDER BY g")
    result = fetch_arrow(engine, sqlglot.transpile(sql, read="duckdb", write=dialect_of(engine))[0])
    assert result.column_names == ["Group", "n", "nx", "total", "ksum", "big", "s"]
    assert [field.type for field in result.schema] == [pa.string(), pa.int64(), pa.int64(), pa.float64(),
                                                      pa.int64(), pa.float64(), pa.string()]
    assert result.to_pylist() == [
        {"Group": "a", "n": 2, "nx": 2, "total": 3.75, "ksum": 3, "big": None, "s": "p"},
        {"Group": "b", "n": 1, "nx": 0, "total": None, "ksum": None, "big": None, "s": "q"},
    ]


def test_load_table_round_trip_is_exact(loaded):
    connection, vectors, groups, counts, null_vector = loaded
    query = exp.select("id", "g", "v", "k").from_(exp.table_(TABLE, quoted=True)).order_by("id")
    result = fetch_arrow(connection, sql_for(connection, query))
    assert result.schema.field("v").type == pa.list_(pa.float64())
    assert result.schema.field("k").type == pa.int64()
    rows = result.to_pylist()
    assert [row["id"] for row in rows] == list(range(len(vectors)))
    assert [row["g"] for row in rows] == [None, *groups[1:]]
    assert [row["k"] for row in rows] == [None if c == -1 else c for c in counts]
    assert rows[null_vector]["v"] is None
    kept = np.array([row["v"] for i, row in enumerate(rows) if i != null_vector])
    np.testing.assert_allclose(kept, np.delete(vectors, null_vector, axis=0), rtol=0, atol=1e-15)
    assert np.array_equal(kept, np.delete(vectors, null_vector, axis=0))  # in fact bit for bit


def test_load_table_round_trip_of_edge_values(engine):
    """The values each encoding has a special path for: NULL inside a vector, an empty vector,
    float32 elements, non-finite and subnormal doubles, booleans, strings with tabs, newlines,
    backslashes and non-ASCII letters."""
    table = pa.table({
        "id": [0, 1, 2, 3],
        "w": pa.array([[1.5, None, -2.0], [], None, [0.25]], pa.list_(pa.float32())),
        "x": [float("nan"), float("-inf"), -0.0, 5e-324],
        "b": [True, None, False, True],
        "s": ["tab\there", "new\nline \\ back", None, "é ü 日本"],
    })
    load_table(engine, "edge_values", table)
    query = exp.select("*").from_(exp.table_("edge_values", quoted=True)).order_by("id")
    result = fetch_arrow(engine, sql_for(engine, query))
    assert result.schema.field("w").type == pa.list_(pa.float64())
    rows = result.to_pylist()
    assert [row["w"] for row in rows] == [[1.5, None, -2.0], [], None, [0.25]]
    assert [row["b"] for row in rows] == [True, None, False, True]
    assert [row["s"] for row in rows] == ["tab\there", "new\nline \\ back", None, "é ü 日本"]
    x = np.array([row["x"] for row in rows])
    assert np.isnan(x[0]) and x[1] == -np.inf and x[2] == 0 and np.signbit(x[2]) and x[3] == 5e-324


def test_engine_error_names_dialect_and_engine_message(loaded):
    connection = loaded[0]
    dialect = dialect_of(connection)
    with pytest.raises(EngineError, match=rf"^{dialect} rejected the query: .*no_such_column") as info:
        fetch_arrow(connection, f"SELECT no_such_column FROM {TABLE}")
    assert "\n" not in str(info.value)
    # the connection is still usable (PostgreSQL: no transaction left aborted)
    assert fetch_arrow(connection, "SELECT 1 AS one").to_pylist() == [{"one": 1}]


def test_per_group_count_and_element_sums_match_numpy(loaded):
    """A preview of stage 1: per group count(*), the sum of element 1 and of element D (1-based,
    written with sqlglot's Bracket offset=1), and the array length, on each engine."""
    connection, vectors, groups, _, null_vector = loaded
    v = exp.column("v", quoted=True)

    def element(i):  # 1-based element i of v, whatever the engine's own index base
        return exp.Bracket(this=v.copy(), expressions=[exp.Literal.number(i)], offset=1)

    query = (exp.select(exp.column("g", quoted=True),
                        exp.alias_(exp.Count(this=exp.Star()), "n"),
                        exp.alias_(exp.Sum(this=element(1)), "s1"),
                        exp.alias_(exp.Sum(this=element(D)), "sd"),
                        exp.alias_(exp.Max(this=exp.ArraySize(this=v.copy())), "d"))
             .from_(exp.table_(TABLE, quoted=True)).where(exp.column("g", quoted=True).is_(exp.null()).not_())
             .group_by(exp.column("g", quoted=True)).order_by(exp.column("g", quoted=True)))
    result = fetch_arrow(connection, sql_for(connection, query)).to_pylist()

    labels = np.array([None, *groups[1:]], dtype=object)
    present = np.ones(len(vectors), bool)
    present[null_vector] = False
    expected = []
    for g in sorted(set(groups[1:])):
        in_g = labels == g
        expected.append({"g": g, "n": int(in_g.sum()), "d": D,
                         "s1": vectors[in_g & present, 0].sum(), "sd": vectors[in_g & present, D - 1].sum()})
    assert [(r["g"], r["n"], r["d"]) for r in result] == [(e["g"], e["n"], e["d"]) for e in expected]
    for row, want in zip(result, expected):
        np.testing.assert_allclose([row["s1"], row["sd"]], [want["s1"], want["sd"]], rtol=1e-12, atol=0)


def test_bracket_offset_transpiles_to_each_engines_index_base():
    one_based = exp.Bracket(this=exp.column("v"), expressions=[exp.Literal.number(1)], offset=1)
    assert {d: one_based.sql(d) for d in ("duckdb", "postgres", "trino", "spark", "snowflake", "bigquery")} == {
        "duckdb": "v[1]", "postgres": "v[1]", "trino": "v[1]", "spark": "v[0]", "snowflake": "v[0]",
        "bigquery": "v[ORDINAL(1)]"}
    # an index of unknown type is NOT shifted (sqlglot only shifts integer-typed indexes): cast it
    untyped = exp.Bracket(this=exp.column("v"), expressions=[exp.column("k")], offset=1)
    assert untyped.sql("spark") == "v[k]"
    typed = exp.Bracket(this=exp.column("v"), expressions=[exp.cast(exp.column("k"), "int")], offset=1)
    assert typed.sql("spark") == "v[CAST(k AS INT) + -1]"


def test_load_table_rejects_columns_it_cannot_send(postgres):
    table = pa.table({"id": [1], "when": pa.array([0], pa.timestamp("s"))})
    with pytest.raises(InputError, match=r"column 'when' of type timestamp\[s\]"):
        load_table(postgres, "bad", table)


def test_fetch_arrow_needs_a_query(postgres):
    with pytest.raises(InputError, match="SQL text"):
        fetch_arrow(postgres, None)
    with pytest.raises(InputError, match="returns rows"):
        fetch_arrow(postgres, "CREATE TABLE made_by_mistake (x integer)")
    # rolled back with the transaction block it ran in
    assert fetch_arrow(postgres, "SELECT to_regclass('made_by_mistake') IS NULL AS gone").to_pylist() == [{"gone": True}]


@pytest.mark.parametrize("ci, outcome", [("true", pytest.fail.Exception), ("", pytest.skip.Exception)])
def test_missing_engine_fails_under_ci_and_skips_locally(monkeypatch, ci, outcome):
    monkeypatch.setenv("CI", ci)
    with pytest.raises(outcome, match="no such engine"):
        engine_fixtures.engine_missing("no such engine")
