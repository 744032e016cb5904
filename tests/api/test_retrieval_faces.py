"""The retrieval faces' one form: the column specs (embsql.Queries, Docs, Qrels, Run) and their
checks, an unknown keyword refused as Python refuses it, the output's model column under the input
column's name (hostile names included) or refused where it would collide, NULL models refused on
every route, and the docstring examples."""

from __future__ import annotations

import dataclasses
import doctest
import importlib
import math
import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
import retrieval_data as rd

import embsql
from embsql.errors import ArgumentError, BadLabelError, InputError

pytestmark = pytest.mark.shared_connection


@pytest.fixture(scope="module")
def tables():
    """(queries, docs) with two models, two strengths and topic groups; the model column is "model"."""
    return rd.make(31, models=("m1", "m2"), topics=4, docs_per_topic=4, questions=6, paraphrases=3, levels=2,
                   dose=0.5, dim=8)


def renamed(table: pa.Table, name: str) -> pa.Table:
    return table.rename_columns([name if c == "model" else c for c in table.column_names])


def with_null_model(table: pa.Table, row: int) -> pa.Table:
    models = table.column("model").to_pylist()
    models[row] = None
    return table.set_column(table.column_names.index("model"), "model", pa.array(models, pa.string()))


# ---- the specs -------------------------------------------------------------------------------

@pytest.mark.parametrize("make,words", [
    (lambda: embsql.Queries("q", qid=""), "Queries(qid=...) must be a column name (a non-empty string), not ''"),
    (lambda: embsql.Queries("q", vector=3), "Queries(vector=...) must be a column name (a non-empty string), not 3"),
    (lambda: embsql.Queries("q", group="vector"), "Queries: vector= and group= both name column 'vector'"),
    (lambda: embsql.Docs("d", doc_id=None), "Docs(doc_id=...) must be a column name"),
    (lambda: embsql.Qrels("j", qid="x", doc_id="x"), "Qrels: qid= and doc_id= both name column 'x'"),
    (lambda: embsql.Run("r", score=["s"]), "Run(score=...) must be a column name"),
    (lambda: embsql.Run(None), "Run(source, ...): source must be a table, view or file name, a DataFrame, an Arrow "
                               "table or a ResultTable, not None"),
    (lambda: embsql.Queries(""), "not ''"),
    (lambda: embsql.Queries(embsql.Docs("d")), "not a Docs"),
])
def test_specs_are_checked_when_made(make, words):
    with pytest.raises(InputError) as caught:
        make()
    assert words in str(caught.value)


def test_optional_fields_and_defaults():
    assert embsql.Queries("q").strength is None and embsql.Qrels("j", relevance=None).relevance is None
    assert embsql.Queries("q").columns() == {"qid": "qid", "vector": "vector", "group": "group",
                                             "positive": "positive", "strength": None}
    assert embsql.Docs("d").columns() == {"doc_id": "doc_id", "vector": "vector", "group": "group"}
    assert embsql.Run("r").columns() == {"qid": "qid", "doc_id": "doc_id", "score": "score"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        embsql.Queries("q").qid = "id"  # type: ignore[misc]


def test_a_spec_of_the_wrong_kind_is_refused(con, tables):
    queries, docs = tables
    with pytest.raises(InputError, match="queries must be a Queries or a source, not a Docs"):
        embsql.margins(con, embsql.Docs(docs), docs, model="model")
    with pytest.raises(InputError, match="run must be a Run or a source, not a Qrels"):
        embsql.evaluate(con, embsql.Qrels("j"), "j")


def test_a_plain_source_is_the_spec_with_default_names(con, tables):
    queries, docs = tables
    assert embsql.margins(con, queries, docs, model="model").rows == \
        embsql.margins(con, embsql.Queries(queries), embsql.Docs(docs), model="model").rows


def test_trec_files_have_fixed_fields(con, tmp_path):
    run, qrels = tmp_path / "run.trec", tmp_path / "qrels.txt"
    run.write_text("q1 Q0 a 1 0.5 x\n")
    qrels.write_text("q1 0 a 1\n")
    with pytest.raises(InputError, match="TREC run file .* has fixed fields"):
        embsql.evaluate(con, embsql.Run(str(run), score="s"), str(qrels))
    with pytest.raises(InputError, match="TREC qrels file .* has fixed fields"):
        embsql.evaluate(con, str(run), embsql.Qrels(str(qrels), relevance="grade"))
    with pytest.raises(embsql.ColumnNotFoundError, match="model column 'encoder' not found in TREC run file"):
        embsql.evaluate(con, str(run), str(qrels), model="encoder")


# ---- unknown keywords: the names these faces took before 0.1.0, and others --------------------------

@pytest.mark.parametrize("call,keyword", [
    (lambda con, q, d: embsql.margins(con, q, d, level="level"), "level"),
    (lambda con, q, d: embsql.margins(con, q, d, doc_group="group"), "doc_group"),
    (lambda con, q, d: embsql.retrieval_summary(con, q, d, qid="qid"), "qid"),
    (lambda con, q, d: embsql.pairing(con, q, d, positive="positive"), "positive"),
    (lambda con, q, d: embsql.retrieval_dose(con, q, level="level"), "level"),
    (lambda con, q, d: embsql.retrieval_dose(con, q, scope="corpus"), "scope"),
    (lambda con, q, d: embsql.retrieval_layers(con, q, d, level_col="level"), "level_col"),
    (lambda con, q, d: embsql.retrieve(con, q, d, doc_vector="vector"), "doc_vector"),
    (lambda con, q, d: embsql.retrieve(con, q, d, vector="vector"), "vector"),
    (lambda con, q, d: embsql.retrieve(con, q, d, by="model"), "by"),
    (lambda con, q, d: embsql.evaluate(con, None, "j", queries=q, docs=d), "queries"),
    (lambda con, q, d: embsql.evaluate(con, "r", "j", k=10), "k"),
    (lambda con, q, d: embsql.evaluate(con, "r", None, positive="positive"), "positive"),
    (lambda con, q, d: embsql.evaluate(con, "r", "j", unknown="skip"), "unknown"),
    (lambda con, q, d: embsql.compare_retrieval(con, "e", qid="qid", model="model"), "qid"),
    (lambda con, q, d: embsql.margins(con, q, d, threshold=2), "threshold"),
])
def test_an_unknown_keyword_is_pythons_type_error(con, tables, call, keyword):
    queries, docs = tables
    with pytest.raises(TypeError, match=rf"^\w+\(\) got an unexpected keyword argument '{keyword}'$") as caught:
        call(con, queries, docs)
    assert not isinstance(caught.value, embsql.EmbsqlError)


def test_write_trec_run_takes_the_connection_first(con, tables, tmp_path):
    run = embsql.retrieve(con, *tables, k=2, model="model")
    with pytest.raises(ArgumentError, match=r"write_trec_run takes the connection first, write_trec_run\(con, run, "
                                            r"path\), not a ResultTable"):
        embsql.write_trec_run(run, run, str(tmp_path / "run.trec"))     # type: ignore[arg-type]


def test_the_report_refuses_level_for_strength(con, tables):
    queries, docs = tables
    con.register("q", queries)
    con.register("d", docs)
    with pytest.raises(InputError, match="unknown setting 'level' in the report's retrieval settings; the settings are: "
                                         "qid, group, strength,"):
        embsql.report("q", vector="vector", group="group", model="model", queries="q", docs="d",
                      sections=("retrieval",), retrieval={"level": "level"}).run(con)


# ---- the output's model column ------------------------------------------------------------------

# (a name with embsql's own prefix __emb_ is refused on every route: tests/api/test_model_names_python.py)
HOSTILE = ["encoder", "a b", 'we"ird', "select", "Model"]


@pytest.mark.parametrize("name", HOSTILE)
def test_every_face_keeps_the_model_columns_name(con, tables, name, tmp_path):
    queries, docs = (renamed(t, name) for t in tables)
    plain = embsql.margins(con, *tables, model="model")
    results = {
        "margins": embsql.margins(con, queries, docs, model=name),
        "retrieval_summary": embsql.retrieval_summary(con, queries, docs, model=name),
        "pairing": embsql.pairing(con, queries, docs, model=name),
        "retrieval_dose": embsql.retrieval_dose(con, embsql.Queries(queries, strength="level"), docs, model=name,
                                                permutations=19),
        "retrieve": embsql.retrieve(con, queries, docs, k=3, model=name),
    }
    first = tables[0].filter(pc.equal(tables[0].column("model"), "m1"))      # each model has the same qids
    qrels = pa.table({"qid": first.column("qid"), "doc_id": first.column("positive"), "relevance": [1] * first.num_rows})
    results["evaluate"] = embsql.evaluate(con, results["retrieve"], qrels, model=name, metrics=["mrr@3"])
    per_query = embsql.evaluate(con, results["retrieve"], qrels, model=name, metrics=["mrr@3"], per_query=True)
    results["evaluate per query"] = per_query
    for face, table in results.items():
        assert table.columns[0] == name and set(table.column(name)) == {"m1", "m2"}, face
        assert "model" not in table.columns, face
    assert results["margins"].rows == plain.rows            # the name changes nothing else
    compared = embsql.compare_retrieval(con, per_query, model=name, metric="mrr@3", queries=queries).to_dicts()
    assert [(r["model_a"], r["model_b"]) for r in compared] == [("m1", "m2")]
    path = tmp_path / "run.trec"
    assert embsql.write_trec_run(con, results["retrieve"], str(path), model=name) == 2 * 36 * 3
    assert {line.split()[-1] for line in path.read_text().splitlines()} == {"m1", "m2"}


@pytest.mark.parametrize("call,name,function", [
    (lambda con, q, d, n: embsql.margins(con, q, d, model=n), "rank", "margins"),
    (lambda con, q, d, n: embsql.margins(con, q, d, model=n), "qid", "margins"),
    (lambda con, q, d, n: embsql.retrieval_summary(con, q, d, model=n), "top1", "retrieval_summary"),
    (lambda con, q, d, n: embsql.pairing(con, q, d, model=n), "measure", "pairing"),
    (lambda con, q, d, n: embsql.retrieval_dose(con, embsql.Queries(q, strength="level"), model=n), "strength", "retrieval_dose"),
    (lambda con, q, d, n: embsql.retrieve(con, q, d, model=n), "rank", "retrieve"),
    (lambda con, q, d, n: embsql.retrieve(con, q, d, model=n), "score", "retrieve"),
    (lambda con, q, d, n: embsql.evaluate(con, "r", "j", model=n), "value", "evaluate"),
    (lambda con, q, d, n: embsql.evaluate(con, "r", "j", model=n, per_query=True), "qid", "evaluate"),
])
def test_a_model_column_named_like_an_output_column_is_refused(con, tables, call, name, function):
    queries, docs = (renamed(t, name) for t in tables)
    with pytest.raises(InputError) as caught:
        call(con, queries, docs, name)
    assert caught.value.kind == "column.collision"
    assert f"model column \"{name}\" has the name of one of {function}'s output columns" in str(caught.value)


def test_layers_are_a_report_whose_model_column_is_model(con, tables):
    queries, docs = (renamed(t, "encoder") for t in tables)
    report = embsql.retrieval_layers(con, embsql.Queries(queries, strength="level"), docs, model="encoder",
                                     permutations=19)
    assert isinstance(report, embsql.ReportResult)
    for table in [report.summary] + [s.table for s in report.sections]:
        assert table.columns[0] == "model" and set(table.column("model")) == {"m1", "m2"}, table.title


# ---- NULL models ------------------------------------------------------------------------------

def _route_calls(con, queries, docs, tmp_path):
    evaluation = pa.table({"model": queries.column("model"), "qid": queries.column("qid"),
                           "metric": ["ndcg@10"] * queries.num_rows, "value": [0.5] * queries.num_rows})
    run = pa.table({"model": queries.column("model"), "qid": queries.column("qid"),
                    "doc_id": queries.column("positive"), "score": [0.5] * queries.num_rows})
    qrels = pa.table({"qid": ["q0_0_0"], "doc_id": ["d0_0"], "relevance": [1]})
    return {
        "margins": lambda: embsql.margins(con, queries, docs, model="model"),
        "retrieval_summary": lambda: embsql.retrieval_summary(con, queries, docs, model="model"),
        "pairing": lambda: embsql.pairing(con, queries, docs, model="model"),
        "retrieval_dose": lambda: embsql.retrieval_dose(con, embsql.Queries(queries, strength="level"), model="model",
                                                        permutations=9),
        "retrieval_layers": lambda: embsql.retrieval_layers(con, queries, docs, model="model"),
        "retrieve": lambda: embsql.retrieve(con, queries, docs, model="model"),
        "evaluate": lambda: embsql.evaluate(con, run, qrels, model="model"),
        "evaluate (DuckDB table)": lambda: (con.register("null_run", run),
                                            embsql.evaluate(con, "null_run", qrels, model="model")),
        "write_trec_run": lambda: embsql.write_trec_run(con, run, str(tmp_path / "x.trec"), model="model"),
        "compare_retrieval": lambda: embsql.compare_retrieval(con, evaluation, model="model"),
    }


ROUTES = ("margins", "retrieval_summary", "pairing", "retrieval_dose", "retrieval_layers", "retrieve", "evaluate",
          "evaluate (DuckDB table)", "write_trec_run", "compare_retrieval")


@pytest.mark.parametrize("route", ROUTES)
def test_a_null_model_is_refused_on_every_route_naming_the_column_and_a_row(con, tables, route, tmp_path):
    queries, docs = tables
    queries = with_null_model(queries, 7)
    with pytest.raises(BadLabelError) as caught:
        _route_calls(con, queries, docs, tmp_path)[route]()
    assert caught.value.kind == "label.null"
    message = str(caught.value)
    assert message.startswith("model column 'model' has a NULL label at row 8 "), message   # counted from 1


def test_a_nan_model_is_refused_too(con):
    queries = pa.table({"model": [1.0, math.nan], "qid": ["a", "b"], "positive": ["x", "x"],
                        "vector": [[1.0, 0.0], [0.0, 1.0]]})
    docs = pa.table({"model": [1.0, 1.0], "doc_id": ["x", "y"], "vector": [[1.0, 0.0], [0.0, 1.0]]})
    for call in (lambda: embsql.margins(con, queries, docs, model="model"),
                 lambda: embsql.retrieve(con, queries, docs, model="model")):
        with pytest.raises(BadLabelError, match=r"model column 'model' has a NaN label at row 2 "):
            call()


# ---- documentation -----------------------------------------------------------------------------

@pytest.mark.parametrize("module", ["embsql.io.retrieval_tables", "embsql.api.retrieval", "embsql.api.evaluation",
                                    "embsql.api.compare_retrieval"])
def test_docstring_examples_run(module):
    failed, attempted = doctest.testmod(importlib.import_module(module))
    assert attempted >= 4 and failed == 0


FACES = ("margins", "retrieval_summary", "pairing", "retrieval_dose", "retrieval_layers", "retrieve", "evaluate",
         "compare_retrieval", "write_trec_run")


@pytest.mark.parametrize("face", FACES)
def test_faces_are_plain_small_and_documented(face):
    import inspect

    function = getattr(embsql, face)
    parameters = inspect.signature(function).parameters
    assert not hasattr(function, "__wrapped__")                            # no decorator
    # compare_retrieval takes one more: intervals= (marginal or simultaneous), as compare does
    assert len(parameters) <= (12 if face == "compare_retrieval" else 10)
    assert all(p.kind is not inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    columns = {"qid", "group", "level", "positive", "vector", "doc_id", "doc_group", "doc_vector", "relevance"}
    # compare_retrieval's group is the evaluation's group column, its level the confidence level
    assert not columns & (set(parameters) - ({"group", "level"} if face == "compare_retrieval" else set())), face
    doc = function.__doc__
    for heading in ("Parameters", "Returns", "Raises", "Examples"):
        assert f"\n    {heading}\n    ---" in doc, (face, heading)
    for name in parameters:
        assert f"\n    {name} :" in doc, (face, name)


SNIPPET = textwrap.dedent("""
    import embsql
    con = embsql.connect()
    embsql.margins(con, "q", "d", level="level")
    embsql.evaluate(con, "run", "qrels", queries="q")
    embsql.retrieval_dose(con, embsql.Queries("q", strength="level"), permutations=9)
""")


@pytest.mark.slow
def test_mypy_flags_an_old_keyword(tmp_path):
    path = tmp_path / "snippet.py"
    path.write_text(SNIPPET)
    done = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--follow-imports=silent", str(path)],
                          capture_output=True, text=True, timeout=600)
    lines = [line for line in done.stdout.splitlines() if "snippet.py" in line and ": error:" in line]
    assert len(lines) == 2, done.stdout
    assert ':4: error: Unexpected keyword argument "level" for "margins"' in lines[0]
    assert ':5: error: Unexpected keyword argument "queries" for "evaluate"' in lines[1]


def test_rows_stay_numbers_not_text(con):
    """The model column keeps its values' type (an integer model column stays integers), as GROUP BY would."""
    queries = pa.table({"mdl": [1, 1, 2, 2], "qid": ["a", "b", "a", "b"], "positive": ["x", "y", "x", "y"],
                        "vector": np.eye(2).tolist() * 2})
    docs = pa.table({"mdl": [1, 1, 2, 2], "doc_id": ["x", "y", "x", "y"], "vector": np.eye(2).tolist() * 2})
    assert embsql.retrieve(con, queries, docs, k=1, model="mdl").column("mdl") == [1, 1, 2, 2]
    assert embsql.margins(con, queries, docs, model="mdl").column("mdl") == [1, 1, 2, 2]
    with pytest.raises(InputError, match="model column \"m\" has the name of one of margins's output columns"):
        embsql.margins(con, queries.rename_columns(["m", *queries.column_names[1:]]), docs, model="m")
