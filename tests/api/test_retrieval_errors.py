"""Bad input to the margins: a clear embsql error naming the column, row or value, from the Python
API (an embsql exception class) and from both SQL routes (a message starting 'embsql:')."""

import math

import duckdb
import pyarrow as pa
import pytest
import retrieval_data as rd
from helpers import sql_error

import embsql
from embsql.errors import BadLabelError, BadVectorError, ColumnNotFoundError, DesignError, InputError
from embsql.io.resources import sql_entry_file


def base():
    queries, docs = rd.make(8, questions=3, topics=3, docs_per_topic=3, dim=6)
    return queries.drop_columns(["model"]), docs.drop_columns(["model"])


def set_cell(table: pa.Table, column: str, row: int, value) -> pa.Table:
    values = table.column(column).to_pylist()
    values[row] = value
    return table.set_column(table.column_names.index(column), column, pa.array(values, type=table.column(column).type))


def with_model(q, d, q_models, d_models):
    return (q.append_column("model", pa.array(q_models)), d.append_column("model", pa.array(d_models)))


def only_topic_member(q, d):
    """Put document d0_0 alone in its group and make it the positive of the first query."""
    return set_cell(q, "positive", 0, "d0_0"), set_cell(d, "group", 0, "alone")


Q_ID = "q0_0_1"
CASES = {
    # name: (change (q, d) -> (q, d), keyword arguments, Python class, fragments every route's message has)
    "missing positive": (lambda q, d: (set_cell(q, "positive", 1, "nope"), d), {}, BadLabelError,
                         ["nope", "not a doc_id", Q_ID]),
    "NULL positive": (lambda q, d: (set_cell(q, "positive", 1, None), d), {}, BadLabelError,
                      ["positive column", "NULL", "row 2"]),
    "NULL qid": (lambda q, d: (set_cell(q, "qid", 2, None), d), {}, BadLabelError, ["qid column", "NULL", "row 3"]),
    "NULL doc_id": (lambda q, d: (q, set_cell(d, "doc_id", 4, None)), {}, BadLabelError,
                    ["doc_id column", "NULL", "row 5"]),
    "duplicate doc_id": (lambda q, d: (q, set_cell(d, "doc_id", 4, "d0_0")), {}, BadLabelError,
                         ["doc_id column", "'d0_0' more than once"]),
    "duplicate qid": (lambda q, d: (set_cell(q, "qid", 2, "q0_0_0"), d), {}, BadLabelError,
                      ["qid column", "'q0_0_0' more than once"]),
    "NULL query vector": (lambda q, d: (set_cell(q, "vector", 1, None), d), {}, BadVectorError,
                          ["NULL vector", Q_ID]),
    "NaN query vector": (lambda q, d: (set_cell(q, "vector", 1, [math.nan] + [1.0] * 5), d), {}, BadVectorError,
                         ["NaN vector", Q_ID]),
    "zero document vector": (lambda q, d: (q, set_cell(d, "vector", 4, [0.0] * 6)), {}, BadVectorError,
                             ["zero-length vector", "d1_1"]),
    "infinite document vector": (lambda q, d: (q, set_cell(d, "vector", 4, [math.inf] + [0.0] * 5)), {},
                                 BadVectorError, ["infinite vector", "d1_1"]),
    "NULL element": (lambda q, d: (q, set_cell(d, "vector", 4, [None] + [1.0] * 5)), {}, BadVectorError,
                     ["NULL-element vector", "d1_1"]),
    "document lengths differ": (lambda q, d: (q, set_cell(d, "vector", 4, [1.0] * 7)), {}, BadVectorError,
                                ["7", ("length", "dimension")]),
    "query and document dimensions differ": (
        lambda q, d: (q.set_column(q.column_names.index("vector"), "vector",
                                   pa.array([v + [0.5] for v in q.column("vector").to_pylist()])), d),
        {}, BadVectorError, ["dimension 7", "dimension 6"]),
    "unknown scope": (lambda q, d: (q, d), {"scope": "topic"}, InputError, ["scope must be 'corpus' or 'group'", "topic"]),
    "missing qid column": (lambda q, d: (q, d), {"qid": "id"}, ColumnNotFoundError, ["qid column", "id", "not found"]),
    "missing positive column": (lambda q, d: (q, d), {"positive": "answer"}, ColumnNotFoundError,
                                ["positive column", "answer", "not found"]),
    "missing vector column": (lambda q, d: (q, d), {"vector": "emb"}, ColumnNotFoundError,
                              ["vector column", "emb", "not found"]),
    "missing doc_id column": (lambda q, d: (q, d), {"doc_id": "doc"}, ColumnNotFoundError,
                              ["doc_id column", "doc", "not found"]),
    "missing doc_vector column": (lambda q, d: (q, d), {"doc_vector": "emb"}, ColumnNotFoundError,
                                  [("doc_vector column", "document vector column"), "emb", "not found"]),
    "missing doc_group column (scope group)": (lambda q, d: (q, d), {"doc_group": "topic", "scope": "group"},
                                               ColumnNotFoundError,
                                               [("doc_group column", "document group column"), "topic", "not found"]),
    "missing model column": (lambda q, d: (q, d), {"model": "model"}, ColumnNotFoundError,
                             ["model column", "model", "not found"]),
    "no distractor in the group": (only_topic_member, {"scope": "group"}, DesignError,
                                   ["q0_0_0", "no distractor", "d0_0"]),
    "model only in queries": (lambda q, d: with_model(q, d, ["a"] * (len(q) - 1) + ["b"], ["a"] * len(d)),
                              {"model": "model"}, InputError, ["model", "b", "not in"]),
    "model only in docs": (lambda q, d: with_model(q, d, ["a"] * len(q), ["a"] * (len(d) - 1) + ["c"]),
                           {"model": "model"}, InputError, ["model", "c", "not in"]),
}
# the cases' column keywords as fields of the specs (the Python face) and as SQL's named arguments
QUERY_FIELDS = {"qid": "qid", "positive": "positive", "vector": "vector"}
DOC_FIELDS = {"doc_id": "doc_id", "doc_vector": "vector", "doc_group": "group"}


def python_call(con, kwargs):
    queries = embsql.Queries("q", **{QUERY_FIELDS[k]: v for k, v in kwargs.items() if k in QUERY_FIELDS})
    docs = embsql.Docs("d", **{DOC_FIELDS[k]: v for k, v in kwargs.items() if k in DOC_FIELDS})
    return embsql.margins(con, queries, docs, **{k: v for k, v in kwargs.items() if k in ("scope", "model")})


def sql_call(kwargs) -> str:
    """The SQL call with the Python call's keywords: SQL's named arguments are spelled the same."""
    args = "".join(f", {k} := '{v}'" for k, v in kwargs.items())
    return f"SELECT * FROM emb_margins('q', 'd'{args})"


@pytest.fixture(scope="module")
def routes():
    """One connection per route for the whole module (each test re-registers q and d)."""
    plain = duckdb.connect()
    plain.execute(sql_entry_file().read_text())
    return {"sql": plain, "udf": embsql.connect()}


@pytest.mark.parametrize("case", list(CASES))
def test_python_raises_a_named_embsql_error(case, routes):
    change, kwargs, error, fragments = CASES[case]
    q, d = change(*base())
    con = routes["udf"]
    con.register("q", q)
    con.register("d", d)
    with pytest.raises(error) as info:
        python_call(con, kwargs)
    for fragment in fragments:
        assert any(f in str(info.value) for f in (fragment if isinstance(fragment, tuple) else (fragment,))), \
            (fragment, str(info.value))


@pytest.mark.parametrize("route", ["sql", "udf"])
@pytest.mark.parametrize("case", list(CASES))
def test_sql_routes_raise_embsql_errors(route, case, routes):
    change, kwargs, _, fragments = CASES[case]
    q, d = change(*base())
    con = routes[route]
    con.register("q", q)
    con.register("d", d)
    message = sql_error(con, sql_call(kwargs))
    for fragment in fragments:   # SQL quotes names as "x" and values as x or 'x': compare without quotes
        assert any(f.replace("'", "") in message.replace("'", "").replace('"', "") for f in
                   (fragment if isinstance(fragment, tuple) else (fragment,))), (fragment, message)


def test_summary_needs_the_paraphrase_group_column():
    q, d = base()
    con = embsql.connect()
    con.register("q", q.drop_columns(["group"]))
    con.register("d", d)
    embsql.margins(con, "q", "d")                            # margins do not use it
    with pytest.raises(ColumnNotFoundError, match="group column 'group' not found"):
        embsql.retrieval_summary(con, "q", "d")
    assert 'group column "group" not found' in sql_error(con, "SELECT * FROM emb_retrieval_summary('q', 'd')")
