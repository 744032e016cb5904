"""emb_compare_classification (SQL, after register): the rows of embsql.compare_classification on
the same predictions (whose McNemar test is scipy's binomial test), with and without clusters, and
its one-line errors."""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from helpers import assert_same_rows
from scipy import stats

import embsql


@pytest.fixture(scope="module")
def con():
    rng = np.random.default_rng(5)
    items = [f"i{n:03d}" for n in range(90)]
    truth = rng.random(90)
    rows = [(m, item, bool(truth[n] < p), f"s{n // 3}") for m, p in (("a", 0.8), ("b", 0.65), ("c", 0.7))
            for n, item in enumerate(items)]
    connection = embsql.connect()
    connection.register("answers_frame", pa.table({"model": [r[0] for r in rows], "item": [r[1] for r in rows],
                                                   "correct": [r[2] for r in rows], "source": [r[3] for r in rows]}))
    connection.execute("CREATE TABLE answers AS SELECT * FROM answers_frame")
    return connection


def _python(con, **options):
    return embsql.compare_classification(con, con.sql("SELECT * FROM answers").to_arrow_table(),
                                         **{"model": "model", "item": "item", **options}).to_dicts()


def test_sql_equals_the_python_face(con):
    sql = con.sql("SELECT * FROM emb_compare_classification('answers')").to_arrow_table().to_pylist()
    assert_same_rows(sql, _python(con))
    assert [(r["model_a"], r["model_b"]) for r in sql] == [("a", "b"), ("a", "c"), ("b", "c")]
    for row in sql:
        assert row["p_exact"] == pytest.approx(
            stats.binomtest(row["a_only"], row["a_only"] + row["b_only"], 0.5).pvalue, rel=1e-12)
        discordant, low = row["a_only"] + row["b_only"], min(row["a_only"], row["b_only"])
        mid = 2 * stats.binom.cdf(low - 1, discordant, 0.5) + stats.binom.pmf(low, discordant, 0.5)
        assert row["p_value"] == pytest.approx(min(1.0, mid), rel=1e-12)
    clustered = con.sql("SELECT * FROM emb_compare_classification('answers', \"group\" := 'source', seed := 3, "
                        "permutations := 2000, p_adjust := 'bonferroni')").to_arrow_table().to_pylist()
    assert_same_rows(clustered, _python(con, group="source", seed=3, permutations=2000, p_adjust="bonferroni"))
    assert {r["method"] for r in clustered} == {"cluster sign-flip"} and {r["groups"] for r in clustered} == {30}


@pytest.mark.parametrize("call, words", [
    ("emb_compare_classification('answers', model := 'nope')", "[column.missing] model column 'nope' not found"),
    ("emb_compare_classification('answers', p_adjust := 'fdr')", "p_adjust"),
])
def test_errors_are_one_line(con, call, words):
    with pytest.raises(duckdb.Error) as raised:
        con.sql(f"SELECT * FROM {call}").fetchall()
    message = str(raised.value)
    assert "embsql:" in message and words in message and "\n" not in message.strip()


def test_an_item_one_model_lacks_is_named(con):
    con.execute("CREATE OR REPLACE TABLE short AS SELECT * FROM answers WHERE NOT (model = 'c' AND item = 'i007')")
    with pytest.raises(duckdb.Error, match=r"item.missing.*'i007'"):
        con.sql("SELECT * FROM emb_compare_classification('short')").fetchall()
