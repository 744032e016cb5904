"""A model column whose name starts with __emb_ (embsql's own prefix, any case) is refused by the
Python faces and the report as the SQL functions refuse it (embsql: [column.reserved]: the SQL side
is tests/sql/test_model_names_sql.py): one rule, the prefix in embsql/io/columns.py.  The same call
with the column renamed to `model` runs, so the refusal is the name's, not the data's."""

import pyarrow as pa
import pytest

import embsql
from embsql import sql_reference
from embsql.errors import CATALOGUE

RESERVED = ["__emb_b", "__EMB_g", "__emb_model"]

# face -> the call on the examples' tables (sql/examples.sql), its model column named m
CALLS = {
    "anova": lambda con, m: embsql.anova(con, "ex", group="topic", vector="embedding", model=m),
    "groups": lambda con, m: embsql.groups(con, "ex", group="topic", vector="embedding", model=m),
    "permanova": lambda con, m: embsql.permanova(con, "ex", group="topic", vector="embedding", model=m,
                                                 permutations=9, progress=False),
    "permanova_welch": lambda con, m: embsql.permanova_welch(con, "ex", group="topic", vector="embedding", model=m,
                                                             permutations=9, null_method="permutation",
                                                             progress=False),
    "jackknife": lambda con, m: embsql.jackknife(con, "many", group="topic", vector="embedding", model=m),
    "bootstrap": lambda con, m: embsql.bootstrap(con, "many", group="topic", vector="embedding", model=m,
                                                 replicates=9),
    "permanova_terms": lambda con, m: embsql.permanova_terms(con, "many", terms=["topic"], vector="embedding",
                                                             model=m, permutations=9, permute="rows"),
    "compare_structure": lambda con, m: embsql.compare_structure(con, "many", group="topic", vector="embedding", model=m,
                                                                 item="item",
                                             replicates=9),
    "knn_agreement": lambda con, m: embsql.knn_agreement(con, "neighbours", item="item_id", model=m,
                                                         vector="embedding", k=2),
    "mantel": lambda con, m: embsql.mantel(con, "neighbours", item="item_id", model=m, vector="embedding",
                                           permutations=9, progress=False),
    "cka": lambda con, m: embsql.cka(con, "geometry", item="item_id", model=m, vector="embedding", permutations=9,
                                     progress=False),
    "procrustes": lambda con, m: embsql.procrustes(con, "geometry", item="item_id", model=m, vector="embedding",
                                                   permutations=9, progress=False),
    "similarity_eval": lambda con, m: embsql.similarity_eval(con, "judged_pairs", "word_vectors", model=m, vector="vector",
                                                             item="item"),
    "knn_classify": lambda con, m: embsql.knn_classify(con, "many", label="topic", vector="embedding", model=m, k=5),
    "compare_retrieval": lambda con, m: embsql.compare_retrieval(con, "evaluation", model=m, permutations=99),
    "dispersion": lambda con, m: embsql.dispersion(con, "many", group="topic", vector="embedding", model=m,
                                                   permutations=9, progress=False),
    "pairwise_permanova": lambda con, m: embsql.pairwise_permanova(con, "many", group="topic", vector="embedding",
                                                                   model=m, group_pairs=[("g0", "g1")],
                                                                   permutations=9),
    "margins": lambda con, m: embsql.margins(con, "queries_m", "docs_m", model=m),
    "report": lambda con, m: embsql.report("many", vector="embedding", group="topic", model=m,
                                           sections=("decomposition",), permutations=0).run(con, progress=False),
}


def connection(name: str):
    con = embsql.connect()
    con.execute(sql_reference.fixtures())
    con.execute("CREATE TABLE queries_m AS SELECT *, 'm1' AS model FROM queries")    # (the retrieval faces)
    con.execute("CREATE TABLE docs_m AS SELECT *, 'm1' AS model FROM docs")
    for (table,) in con.sql("SELECT table_name FROM duckdb_columns() WHERE column_name = 'model'").fetchall():
        if name != "model":
            con.execute(f'ALTER TABLE "{table}" RENAME COLUMN model TO "{name}"')
    return con


@pytest.mark.parametrize("face", sorted(CALLS))
def test_a_reserved_model_name_is_refused_in_python(face):
    CALLS[face](connection("model"), "model")         # the same call, the column named model: it runs
    for name in RESERVED:
        with pytest.raises(embsql.InputError) as raised:
            CALLS[face](connection(name), name)
        assert raised.value.kind == "column.reserved" and isinstance(raised.value, CATALOGUE["column.reserved"].error)
        assert str(raised.value).startswith(f'model column "{name}" starts with __emb_'), str(raised.value)


def test_python_and_sql_refuse_alike():
    con = connection("__emb_b")
    with pytest.raises(embsql.InputError) as python:
        embsql.anova(con, "ex", group="topic", vector="embedding", model="__emb_b")
    with pytest.raises(embsql.SqlInputError) as sql:
        embsql.run_sql(con, "SELECT * FROM emb_anova('ex', 'topic', 'embedding', model := '__emb_b')")
    assert python.value.kind == sql.value.kind == "column.reserved"
    assert type(python.value) in type(sql.value).__mro__


CASE_TABLE = pa.table({"Model": ["a"] * 6 + ["b"] * 6, "item": [f"i{k}" for k in range(6)] * 2,
                       "label": ["x", "x", "x", "y", "y", "y"] * 2,
                       "vector": [[1.0, 0.1 * k] for k in range(6)] + [[0.1 * k, 1.0] for k in range(6)]})


@pytest.mark.parametrize("face", [
    lambda con, t: embsql.knn_classify(con, t, label="label", k=2, vector="vector", model="model"),
    lambda con, t: embsql.centroid_classify(con, t, label="label", vector="vector", model="model"),
    lambda con, t: embsql.knn_classify(con, t, label="label", k=2, model="mdl", vector="vector"),
], ids=["knn default", "centroid default", "knn another name"])
def test_a_model_column_of_another_case_is_refused_not_pooled(face):
    """A column "Model" beside the default model="model": refused naming it, as the SQL macros do
    (before, the classification faces read the table as one model of 12 items); and a model name
    that is not a column is refused, not read as no model column."""
    with pytest.raises(embsql.EmbsqlError) as info:
        face(embsql.connect(), CASE_TABLE)
    assert info.value.kind == "column.missing"
    assert "'mdl' not found" in str(info.value) or "its column 'Model' differs only in case" in str(info.value)
    rows = embsql.knn_classify(embsql.connect(), CASE_TABLE, label="label", k=2, model="Model", vector="vector").to_dicts()
    assert [(r["Model"], r["items"]) for r in rows] == [("a", 6), ("b", 6)]
