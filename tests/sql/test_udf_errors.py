"""Errors raised inside the Python UDFs read like every other embsql error in SQL.

DuckDB 2.0.1 wraps any exception a Python UDF raises, of any type, as
``Invalid Input Error: Python exception occurred while executing the UDF: <type>: <message>``.
So the kernels return the message (embsql/io/udf_errors.py) and the macros raise it with SQL's
error(): what a user of each function that needs Python sees starts with
``Invalid Input Error: embsql: [kind] `` exactly as a macro's error does, with a catalogue kind,
and embsql.run_sql maps it to the kind's class.  Each case below is an error only the UDF finds.
"""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest
from duckdb.func import PythonUDFType
from helpers import example_connection

import embsql
from embsql import sql_reference
from embsql.errors import CATALOGUE


@pytest.fixture(scope="module")
def con():
    con = example_connection()
    con.execute("CREATE TABLE one AS SELECT 'A' AS g, embedding AS v, model, item FROM many WHERE model = 'm0'")
    con.execute("CREATE TABLE zero_query AS SELECT * REPLACE (CASE WHEN qid = 'q2' THEN [0.0, 0.0, 0.0] ELSE vector END "
                "AS vector) FROM queries")
    con.execute("CREATE TABLE zero_para AS SELECT * REPLACE (CASE WHEN qid = 'a2' THEN [0.0, 0.0, 0.0] ELSE vector END "
                "AS vector) FROM para")
    con.execute("CREATE TABLE null_qrels AS SELECT * REPLACE (CASE WHEN doc_id = 'b' THEN NULL ELSE qid END AS qid) "
                "FROM eval_qrels")
    yield con
    con.close()


# function -> (query, kind, words of the message)
CASES = {
    "emb_unit": ("SELECT emb_unit([0.0, 0.0])", "vector.zero", "cannot scale vector 0"),
    "emb_permanova": ("SELECT * FROM emb_permanova('ex', 'topic', 'embedding', model := 'model', permutations := 0)",
                      "argument.permutations", "permutations must be a whole number from 1 to 1,000,000, not 0"),
    "emb_permanova_dist": ("SELECT * FROM emb_permanova_dist('dist', 'lab', 'topic', seed := -1)", "argument.seed",
                           "seed must be a whole number (0 or more), not -1"),
    "emb_permanova_welch": ("SELECT * FROM emb_permanova_welch('ex', 'topic', 'embedding', model := 'model', "
                            "null_method := 'exact')", "argument.null_method", "null_method must be"),
    "emb_permanova_welch_dist": ("SELECT * FROM emb_permanova_welch_dist('dist', 'lab', 'topic', seed := -1)",
                                 "argument.seed", "seed must be a whole number (0 or more), not -1"),
    "emb_dispersion": ("SELECT * FROM emb_dispersion('one', 'g', 'v')", "design.one_group", "only one group"),
    "emb_dispersion_groups": ("SELECT * FROM emb_dispersion_groups('one', 'g', 'v')", "design.one_group",
                              "only one group"),
    "emb_permanova_terms": ("SELECT * FROM emb_permanova_terms('many', ['nope'], 'embedding')", "column.missing",
                            "term column 'nope' not found in many"),
    "emb_permanova_terms_dist": ("SELECT * FROM emb_permanova_terms_dist('dist', 'lab', ['nope'])", "column.missing",
                                 "term column 'nope' not found in lab"),
    "emb_jackknife": ("SELECT * FROM emb_jackknife('ex', 'topic', 'embedding', model := 'model')", "design.min_groups",
                      "the cluster jackknife needs at least 3 groups"),
    "emb_bootstrap": ("SELECT * FROM emb_bootstrap('many', 'topic', 'embedding', level := 2.0)", "argument.level",
                      "level must be a number between 0 and 1, not 2.0"),
    "emb_compare_structure": ("SELECT * FROM emb_compare_structure('one', 'g', 'v', 'model', 'item')", "model.too_few",
                    "the model column has 1 model(s); a comparison needs at least two"),
    "emb_margins": ("SELECT * FROM emb_margins('zero_query', 'docs')", "vector.zero",
                    "has a zero-length vector at row 2 (qid 'q2')"),
    "emb_retrieval_summary": ("SELECT * FROM emb_retrieval_summary('zero_query', 'docs')", "vector.zero",
                              "has a zero-length vector at row 2 (qid 'q2')"),
    "emb_retrieval_dose": ("SELECT * FROM emb_retrieval_dose('zero_para')", "vector.zero",
                           "has a zero-length vector at row 2 (qid 'a2')"),
    "emb_mantel": ("SELECT * FROM emb_mantel('one', 'item', 'model', 'v')", "model.too_few",
                   "the model column has 1 model(s); agreement needs at least two"),
    "emb_similarity_eval": ("SELECT * FROM emb_similarity_eval('judged_pairs', 'word_vectors', missing := 'drop')",
                            "argument.missing", "missing must be 'error' or 'skip', not 'drop'"),
    "emb_compare_similarity": ("SELECT * FROM emb_compare_similarity('judged_pairs', 'word_vectors', score := 'gold')",
                               "column.missing", "score column 'gold' not found in 'judged_pairs'"),
    "emb_knn_agreement": ("SELECT * FROM emb_knn_agreement('one', 'item', 'model', 'v')", "model.too_few",
                          "the model column has 1 model(s)"),
    "emb_knn_agreement_items": ("SELECT * FROM emb_knn_agreement_items('one', 'item', 'model', 'v')", "model.too_few",
                                "the model column has 1 model(s)"),
    "emb_cka": ("SELECT * FROM emb_cka('geometry', 'item_id', 'model', 'nope')", "column.missing", "'nope'"),
    "emb_procrustes": ("SELECT * FROM emb_procrustes('geometry', 'item_id', 'model', 'nope')", "column.missing",
                       "'nope'"),
    "emb_compare_cka": ("SELECT * FROM emb_compare_cka('geometry3', 'item_id', 'model', 'embedding', 'nope')",
                        "model.reference", "reference 'nope' is not a model of model column 'model'"),
    "emb_retrieval_eval": ("SELECT * FROM emb_retrieval_eval('eval_queries', 'eval_docs', 'null_qrels')", "label.null",
                           "qid column 'qid' has a NULL label at row 3 of qrels null_qrels"),
    "emb_compare_retrieval": ("SELECT * FROM emb_compare_retrieval('evaluation', model := 'nope')", "column.missing",
                              "model column 'nope' not found"),
    "emb_knn_classify": ("SELECT * FROM emb_knn_classify('many', label := 'topic', vector := 'embedding', "
                         "model := NULL, k := 288)", "design.k_items",
                         "k = 288 neighbours needs more than k items, but there are 288; choose k below 288"),
    "emb_knn_classify_items": ("SELECT * FROM emb_knn_classify_items('many', label := 'topic', vector := 'embedding', "
                               "split := 'topic')", "value.split", "split column 'topic' has 'g0' at row "),
    "emb_centroid_classify": ("SELECT * FROM emb_centroid_classify('many', label := 'nope', vector := 'embedding')",
                              "column.missing", "label column 'nope' not found"),
    "emb_compare_classification": ("SELECT * FROM emb_compare_classification('predictions', item := 'nope')",
                                   "column.missing", "item column 'nope' not found in 'predictions'"),
    "emb_rank_models": ("SELECT * FROM emb_rank_models('one', 'item', 'v', 'model')", "model.too_few",
                        "the model column has 1 model(s); a ranking needs at least two"),
    "emb_rank_retrieval": ("SELECT * FROM emb_rank_retrieval('evaluation', metric := 'mrr@10')", "metric.absent",
                           "has no rows for metric 'mrr@10'"),
    "emb_rank_classification": ("SELECT * FROM emb_rank_classification('predictions', item := 'nope')",
                                "column.missing", "item column 'nope' not found in 'predictions'"),
    "emb_rank_similarity": ("SELECT * FROM emb_rank_similarity('judged_pairs', 'word_vectors', score := 'gold')",
                            "column.missing", "score column 'gold' not found"),
    "emb_rank_cka": ("SELECT * FROM emb_rank_cka('geometry3', 'item_id', 'embedding', 'nope')", "model.reference",
                     "'nope'"),
}

# Errors the UDFs find in embsql/core (not in the SQL face), each once raised with a bare family
# kind (embsql: [design], [input]); now each has its catalogue kind.  case -> (query, kind, words)
CORE = {
    "k too large (core/agreement.py _check_k)": (
        "SELECT * FROM emb_knn_agreement('neighbours', 'item_id', 'model', 'embedding', k := 20)", "design.k_jackknife",
        "k = 20 needs at least k + 2 = 22 items"),
    "k not positive (core/agreement.py _check_k)": (
        "SELECT * FROM emb_knn_agreement('neighbours', 'item_id', 'model', 'embedding', k := 0)", "argument.k",
        "k must be a positive whole number, not 0"),
    "one model (core/geometry.py: model count)": ("SELECT * FROM emb_cka('one', 'item', 'model', 'v')", "model.too_few",
                                                  "the model column has 1 model(s); comparing geometry needs at least two"),
    "unknown metric (core/ranking.py parse_metrics)": (
        "SELECT * FROM emb_retrieval_eval('eval_queries', 'eval_docs', 'eval_qrels', metrics := ['bogus@3'])",
        "metric.unknown", "unknown metric 'bogus@3'; metrics are ndcg@k, "),
    "repeated metric (core/ranking.py parse_metrics)": (
        "SELECT * FROM emb_retrieval_eval('eval_queries', 'eval_docs', 'eval_qrels', metrics := ['mrr@3', 'MRR@3'])",
        "metric.repeated", "metric 'MRR@3' is named twice"),
    "no rows for the metric (core/retrieval_comparison.py)": (
        "SELECT * FROM emb_compare_retrieval('evaluation', metric := 'mrr@10')", "metric.absent",
        "has no rows for metric 'mrr@10'; its metrics are: "),
    "p_adjust (core/retrieval_comparison.py)": (
        "SELECT * FROM emb_compare_retrieval('evaluation', p_adjust := 'fdr')", "argument.p_adjust",
        "p_adjust must be one of 'holm', 'bh', 'bonferroni' or None, not 'fdr'"),
}


def raw_error(con, query: str) -> str:
    with pytest.raises(duckdb.Error) as raised:
        con.sql(query).fetchall()
    return str(raised.value)


def test_every_function_that_needs_python_has_a_case():
    # (emb_margins and emb_retrieval_summary run in the CLI too; registered, a UDF computes them)
    assert set(CASES) == {f.name for f in sql_reference.functions() if f.needs_python} | {"emb_margins",
                                                                                         "emb_retrieval_summary"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_udf_error_reads_like_a_macro_error_with_a_catalogue_kind(con, name):
    query, kind, words = CASES[name]
    message = raw_error(con, query)
    assert message.startswith(f"Invalid Input Error: embsql: [{kind}] "), message
    assert "Python exception" not in message and kind in CATALOGUE
    assert words in message.splitlines()[0]
    with pytest.raises(embsql.EmbsqlError) as mapped:
        embsql.run_sql(con, query)
    assert mapped.value.kind == kind and isinstance(mapped.value, CATALOGUE[kind].error)
    assert isinstance(mapped.value, embsql.SqlInputError)
    assert str(mapped.value) == message.splitlines()[0].removeprefix("Invalid Input Error: ")


@pytest.mark.parametrize("case", sorted(CORE))
def test_a_core_error_has_its_catalogue_kind(con, case):
    query, kind, words = CORE[case]
    message = raw_error(con, query)
    assert message.startswith(f"Invalid Input Error: embsql: [{kind}] "), message
    assert kind in CATALOGUE and words in message.splitlines()[0]
    with pytest.raises(embsql.EmbsqlError) as mapped:
        embsql.run_sql(con, query)
    assert mapped.value.kind == kind and isinstance(mapped.value, CATALOGUE[kind].error)


def test_what_duckdb_does_with_an_exception_from_a_python_udf():
    """The reason for the STRUCT(error, value) results: raised, any exception gets DuckDB's prefix."""
    con = duckdb.connect()

    def kernel(x):
        raise duckdb.InvalidInputException("embsql: [design.one_group] raised")

    con.create_function("raising", kernel, ["BIGINT"], "BIGINT", type=PythonUDFType.ARROW)
    message = raw_error(con, "SELECT raising(1)")
    assert message == ("Invalid Input Error: Python exception occurred while executing the UDF: InvalidInputException: "
                       "embsql: [design.one_group] raised")
    assert embsql.errors.from_sql(message).kind == "design.one_group"      # run_sql still reads it

    def returning(x):
        return pa.StructArray.from_arrays([pa.array(["embsql: [design.one_group] returned"] * len(x)), pa.nulls(len(x))],
                                          names=["error", "value"])

    con.create_function("returned", returning, ["BIGINT"], "STRUCT(error VARCHAR, value BIGINT)",
                        type=PythonUDFType.ARROW)
    con.execute("CREATE MACRO ok(r) AS CASE WHEN r.error IS NOT NULL THEN error(r.error) ELSE true END")
    assert raw_error(con, "SELECT r.value FROM (SELECT returned(1) AS r) WHERE ok(r)") == \
        "Invalid Input Error: embsql: [design.one_group] returned"
