"""The same report on PostgreSQL and Spark as on DuckDB: stage 1 transpiled and run there, stage 2
here, so every figure must agree to 1e-9 relative (the engines only add in another order)."""

import numpy as np
import pyarrow as pa
import pytest

import embsql
from embsql.engines.connections import load_table

pytestmark = pytest.mark.engines

N_PER_MODEL, D, GROUPS = 10_000, 64, 50
TOL = 1e-9


def engine_table() -> pa.Table:
    """20,000 rows: 2 models x 10,000 items, d = 64, 50 unequal groups, float32 vectors."""
    rng = np.random.default_rng(11)
    parts = []
    labels = rng.integers(0, GROUPS, N_PER_MODEL) ** 2 % GROUPS      # the same items in both models; unequal groups
    for model, strength in (("m1", 0.6), ("m2", 0.9)):
        centres = rng.standard_normal((GROUPS, D))
        x = (strength * centres[labels] + rng.standard_normal((N_PER_MODEL, D)) + 0.3).astype(np.float32)
        parts.append(pa.table({"model": [model] * N_PER_MODEL, "topic": [f"g{g:02d}" for g in labels],
                               "vec": pa.array(list(x), pa.list_(pa.float32()))}))
    return pa.concat_tables(parts)


REPORT = embsql.report("emb", vector="vec", group="topic", model="model", replicates=500, seed=5,
                       sections=["decomposition", "jackknife", "bootstrap", "compare"])


@pytest.fixture(scope="module")
def duckdb_result():
    con = embsql.connect()
    con.register("emb", engine_table())
    return REPORT.run(con)


def figures(result) -> dict:
    out = {}
    for name in ("decomposition", "jackknife", "bootstrap", "compare"):
        for i, row in enumerate(result[name].to_dicts()):
            for column, value in row.items():
                if isinstance(value, float):
                    out[(name, i, column)] = value
    return out


def test_every_engine_gives_the_duckdb_figures(engine, duckdb_result):
    table = engine_table()
    assert table.num_rows >= 20_000
    load_table(engine, "emb", table)
    result = embsql.run_on(engine, REPORT)
    expected, got = figures(duckdb_result), figures(result)
    assert got.keys() == expected.keys() and len(got) > 40
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, rel=TOL, abs=1e-12), key
    assert result.meta["stage1_bytes"] < 200 * GROUPS * D      # O(G d): the rows never cross
    assert result.meta["dialect"] == embsql.engines.connections.dialect_of(engine)


def test_engine_errors_name_the_column_or_the_rows(engine):
    load_table(engine, "bad", pa.table({"topic": ["a", "a", "b", "b"],
                                        "vec": pa.array([[1.0, 0.0], [0.0, 0.0], [1.0, 1.0], [0.5, 1.0]],
                                                        pa.list_(pa.float64()))}))
    with pytest.raises(embsql.ColumnNotFoundError, match="group column 'nope'"):
        embsql.run_on(engine, embsql.report("bad", vector="vec", group="nope"))
    # DuckDB streams the rows through embsql.anova's accumulator, which names the row; the other
    # engines' aggregate names the group
    zero = r"zero-length vector at row 2 \(group 'a'\)" if embsql.engines.connections.dialect_of(engine) == "duckdb" \
        else "zero length in group 'a'"
    with pytest.raises(embsql.BadVectorError, match=zero):
        embsql.run_on(engine, embsql.report("bad", vector="vec", group="topic"))
    if embsql.engines.connections.dialect_of(engine) != "duckdb":   # DuckDB runs the permutation tests
        with pytest.raises(embsql.InputError, match="permanova section needs the rows"):
            embsql.run_on(engine, embsql.report("bad", vector="vec", group="topic", permutations=9,
                                                sections=("decomposition", "permanova")))


def test_spark_vector_column_must_be_an_array_of_numbers(spark):  # noqa: F811
    spark.sql("SELECT 'a' AS topic, 'x y' AS vec").createOrReplaceTempView("strings")
    spark.sql("SELECT 'a' AS topic, array('x', 'y') AS vec").createOrReplaceTempView("string_arrays")
    for name, kind in (("strings", "string"), ("string_arrays", "array<string>")):
        with pytest.raises(embsql.ColumnTypeError, match=rf"^spark: vector column 'vec' of '{name}' is {kind}; it "
                                                         "must be an array of numbers$"):
            embsql.run_on(spark, embsql.report(name, vector="vec", group="topic"))
    with pytest.raises(embsql.EngineError, match=r"^spark: cannot read table 'no_such_view': .*no_such_view"):
        embsql.run_on(spark, embsql.report("no_such_view", vector="vec", group="topic"))


def test_command_line_runs_stage_1_on_spark(spark, duckdb_result, capsys):  # noqa: F811
    """embsql report --engine spark --table db.emb: this process's session runs stage 1 (and stays up)."""
    import json

    from embsql.cli import main

    load_table(spark, "emb", engine_table())
    spark.sql("CREATE DATABASE IF NOT EXISTS lake")
    spark.sql("DROP TABLE IF EXISTS lake.emb")
    spark.sql("CREATE TABLE lake.emb USING parquet AS SELECT * FROM emb")
    assert main(["report", "--engine", "spark", "--table", "lake.emb", "--vector", "vec", "--group", "topic",
                 "--model", "model", "--sections", "decomposition", "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["meta"]["engine"] == "spark" and document["meta"]["stage1_bytes"] > 0
    section = next(s for s in document["sections"] if s["name"] == "decomposition")
    got = {row[0]: dict(zip(section["columns"], row)) for row in section["rows"]}
    for row in duckdb_result["decomposition"].to_dicts():
        assert got[row["model"]]["r2"] == pytest.approx(row["r2"], rel=TOL)
    assert spark.sql("SELECT 1 AS one").collect()[0].one == 1          # the session was left running


def awkward_table() -> pa.Table:
    """Two models of different d (3 and 5), a group of nearly identical vectors (spread 1e-7, where
    n - ||s||^2 / n loses every digit), vectors of magnitude 1e-300 and 1e300, float32 and double."""
    rng = np.random.default_rng(21)
    models, topics, vectors = [], [], []
    for model, d in (("short", 3), ("long", 5)):
        base = rng.standard_normal(d)
        for i in range(600):
            topic = ("close", "wide", "tiny", "huge")[i % 4]
            v = {"close": base + 1e-7 * rng.standard_normal(d), "wide": rng.standard_normal(d) + 0.5,
                 "tiny": (rng.standard_normal(d) + 1.0) * 1e-300, "huge": (rng.standard_normal(d) + 1.0) * 1e300}[topic]
            models.append(model)
            topics.append(topic)
            vectors.append(list(v))
    return pa.table({"model": models, "topic": topics, "vec": pa.array(vectors, pa.list_(pa.float64()))})


def test_spark_stage1_over_several_partitions_keeps_every_digit(spark):  # noqa: F811
    """The same figures as DuckDB (1e-9) with groups spread over several partitions (the workers'
    partial sums merged on the driver), models of different d, near-duplicates and extreme scales."""
    table = awkward_table()
    load_table(spark, "awkward_file", table)
    spark.table("awkward_file").repartition(5).createOrReplaceTempView("awkward")
    report = embsql.report("awkward", vector="vec", group="topic", model="model", sections=["decomposition"])
    con = embsql.connect()
    con.register("awkward", table)
    expected, got = report.run(con)["decomposition"].to_dicts(), embsql.run_on(spark, report)["decomposition"].to_dicts()
    assert [row["model"] for row in got] == [row["model"] for row in expected] == ["long", "short"]
    for want, row in zip(expected, got):
        floats = [column for column, value in want.items() if isinstance(value, float)]
        assert len(floats) >= 5 and want["ss_w"] > 0
        for column in floats:
            assert row[column] == pytest.approx(want[column], rel=TOL, abs=1e-12), (row["model"], column)
    # per group, the within-group sum of squares of the near-duplicates too (lost in SS_W's total)
    from sqlglot import exp

    from embsql.engines.spark import group_sums
    from embsql.io import portable_sums

    dims = portable_sums.Dimensions({"short": 3, "long": 5})
    ours = group_sums(spark, exp.to_table("awkward"), "topic", "vec", dims, "model").to_pylist()
    sql = portable_sums.group_sums_query(exp.to_table("awkward"), "topic", "vec", dims, "model").sql("duckdb")
    duck = {(r[portable_sums.B], r[portable_sums.G]): r for r in con.sql(sql).to_arrow_table().to_pylist()}
    assert len(ours) == len(duck) == 8
    for row in ours:
        want = duck[(row[portable_sums.B], row[portable_sums.G])]
        assert row[portable_sums.N] == want[portable_sums.N] == 150
        assert row[portable_sums.WITHIN] == pytest.approx(want[portable_sums.WITHIN], rel=TOL), row[portable_sums.G]
    close = [row[portable_sums.WITHIN] for row in ours if row[portable_sums.G] == "close"]
    assert all(0 < w < 1e-10 for w in close)


def test_spark_stage1_names_a_nan_and_a_short_vector(spark):  # noqa: F811
    for vectors, message in (([[1.0, 0.0], [float("nan"), 1.0]], r"^spark: vector column 'vec' has a NaN"),
                             ([[1.0, 0.0], [1.0, 2.0, 3.0]], r"^spark: vector column 'vec' has a vector of length 3")):
        load_table(spark, "odd", pa.table({"topic": ["a", "b"], "vec": pa.array(vectors, pa.list_(pa.float64()))}))
        with pytest.raises(embsql.BadVectorError, match=message):
            embsql.run_on(spark, embsql.report("odd", vector="vec", group="topic", sections=["decomposition"]))


def test_spark_sql_says_what_run_on_runs_there(spark):  # noqa: F811
    """Report.sql(dialect="spark") starts with comment lines saying that run_on reads the rows with the
    query shown (and sums them in Python workers); that query is the one run_on ran, and runs."""
    load_table(spark, "emb", engine_table())
    report = embsql.report("emb", vector="vec", group="topic", model="model", sections=["decomposition"],
                           where="topic <> 'g00'")
    printed = report.sql("spark", dims={"m1": D, "m2": D})
    comment = printed.split("\n\n")[0].splitlines()
    assert all(line.startswith("-- ") for line in comment) and "mapInArrow" in printed.split("\n\n")[0]
    rows_query = comment[-1][3:]
    assert rows_query.startswith("SELECT") and "WHERE" in rows_query
    assert embsql.run_on(spark, report).meta["sql"] == rows_query
    read = spark.sql(rows_query).toArrow()
    assert read.column_names == ["__emb_b", "__emb_g", "__emb_v"]
    assert read.num_rows == sum(1 for t in engine_table().column("topic").to_pylist() if t != "g00")
    assert "-- On Spark" not in report.sql("postgres", dims={"m1": D, "m2": D})
