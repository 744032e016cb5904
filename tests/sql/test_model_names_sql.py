"""A model column may have any name, in every SQL function that takes one: the name of one of the
function's output columns is refused (embsql: [column.collision] naming it), a name with the macros'
own prefix __emb_ too (embsql: [column.reserved], in Python as well: test_model_names_python.py),
and any other name, the names the macros use internally included (ss_w in emb_icc, rank in
emb_retrieval_summary, ss_t and f in emb_permanova_welch, r and df in emb_similarity_pearson), gives
the same figures as a column named `model`, under the column's own name.  Names match exactly, case
included: a model column "Model" works as `model := 'Model'`, and `model := 'model'` on it is refused
(embsql: [column.missing], naming the column of the other case), never read as no model column.  A
NULL model value is refused (embsql: [label.null] naming the column).

The calls are the SQL reference's own examples (sql/examples.sql's tables), with their model column
renamed."""

import ast
import functools
import math
import re

import duckdb
import pytest

import embsql
from embsql import sql_reference

# names embsql's macros use beside the user's columns (sql/modules, sql/python), and hostile ones
INTERNAL = ["__emb_b", "__emb_g", "__emb_all", "__emb_null", "__emb_n", "__emb_v", "__emb_k", "__emb_s",
            "__emb_ssw", "__emb_result", "__emb_r", "__emb_row", "rank", "model_a", 'a"b', "select",
            # the columns of emb_anova, which emb_icc and others read internally
            "ss_t", "ss_w", "ss_b", "r2", "f", "w", "n_g", "mrr", "ndcg", "m", "My Model"]
# names some functions use internally, tried on those (as well as the names above, tried on every one)
INTERNAL_OF = {
    # emb_permanova_welch and emb_permanova read the test's rows beside emb_anova's columns
    "emb_permanova_welch": ["v", "statistic", "mean_resultant_length", "r2_null", "w_bar"],
    "emb_permanova": ["statistic", "w_d", "null_method", "groups_left_out", "items_left_out", "note"],
    **{f: ["n", "r", "df", "u", "mx", "sx", "sy", "estimate", "psi", "models", "items", "__emb_m"]
       for f in ("emb_similarity_pearson", "emb_similarity_spearman")},
    **{f: ["model_a", "model_b", "items", "k", "overlap", "r", "cka"]
       for f in ("emb_knn_agreement", "emb_knn_agreement_items", "emb_mantel", "emb_cka", "emb_procrustes",
                 "emb_compare_cka", "emb_compare_structure", "emb_compare_similarity", "emb_compare_retrieval",
                 "emb_compare_classification")},
}

# every function with a model argument: the macros of sql/modules and those that call Python
# (agreement, geometry, permanova_terms, compare, classification, similarity, compare_retrieval)
COVERED = [f.name for f in sql_reference.functions() if any(a.name == "model" for a in f.arguments)]
FUNCTIONS = [f for f in sql_reference.functions() if f.name in COVERED]
# calls other than the example's (whose 'model' is a term, not the model column)
CALLS = {"emb_permanova_terms": "emb_permanova_terms('many', ['topic'], 'embedding', permute := 'rows', "
                                "permutations := 19, model := 'model')"}
# (its example has so few items that 19 resamples leave more undefined than the share allowed)
KEEP_REPLICATES = {"emb_rank_classification"}
NAMES = sorted({c.name.lower() for f in FUNCTIONS for c in f.columns if not c.name.startswith("<")} | set(INTERNAL)
               | {n for names in INTERNAL_OF.values() for n in names})


def call_of(function) -> str:
    """The function call of its example: `emb_x(...)`, balanced parentheses."""
    text = function.example
    start = text.index(function.name + "(")
    depth = 0
    for end in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[end], 0)
        if text[end] == ")" and depth == 0:
            return text[start:end + 1]
    raise AssertionError(function.name)


def _fixture_columns() -> set[str]:
    con = embsql.connect()
    con.execute(sql_reference.fixtures())
    return {c for (c,) in con.sql("SELECT column_name FROM duckdb_columns() WHERE NOT internal").fetchall()}


FIXTURE_COLUMNS = _fixture_columns()


def quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def literal(name: str) -> str:
    return "'" + name.replace("'", "''") + "'"


def connection_with_model(name: str, *, value="'m1'"):
    """The examples' tables, with their model column (one added, holding `value`, where a table has
    none) named `name`."""
    con = embsql.connect()
    con.execute(sql_reference.fixtures())
    for (table,) in con.sql("SELECT table_name FROM duckdb_tables() WHERE NOT temporary").fetchall():
        columns = [c for (c,) in con.sql(f"SELECT column_name FROM duckdb_columns() WHERE table_name = '{table}'").fetchall()]
        if "model" not in columns:
            con.execute(f"ALTER TABLE {quoted(table)} ADD COLUMN model VARCHAR DEFAULT {value}")
        if name == "Model":      # (by way of another name: DuckDB's names are case-insensitive)
            con.execute(f"ALTER TABLE {quoted(table)} RENAME COLUMN model TO __case")
            con.execute(f"ALTER TABLE {quoted(table)} RENAME COLUMN __case TO {quoted(name)}")
        elif name != "model" and name.lower() not in [c.lower() for c in columns]:   # (else a collision, refused)
            con.execute(f"ALTER TABLE {quoted(table)} RENAME COLUMN model TO {quoted(name)}")
    return con


def query(function, name: str) -> str:
    # fewer permutations and replicates than the examples: the figures are compared, not judged
    call = CALLS.get(function.name) or call_of(function)
    if function.name not in KEEP_REPLICATES:
        call = re.sub(r"(permutations|replicates) := \d+", r"\1 := 19", call)
    if "'model'" in call:
        call = call.replace("'model'", literal(name))
    else:
        call = call[:-1] + f", model := {literal(name)})"
    return f"SELECT * FROM {call}"


def rows(con, sql):
    relation = con.sql(sql)
    return relation.columns, sorted(map(repr, relation.fetchall()))


@functools.cache
def baseline(function_name):
    function = next(f for f in FUNCTIONS if f.name == function_name)
    return rows(connection_with_model("model"), query(function, "model"))


def test_covers_every_function_with_a_model_column():
    # (by hand: a new function with a model argument shows here, to be checked in the matrix)
    assert set(COVERED) == {
        "emb_anova", "emb_groups", "emb_icc", "emb_margins", "emb_retrieval_summary", "emb_evaluate",
        "emb_evaluate_per_query", "emb_similarity_pearson", "emb_similarity_spearman", "emb_permanova",
        "emb_permanova_welch", "emb_dispersion", "emb_dispersion_groups", "emb_permanova_terms", "emb_jackknife",
        "emb_bootstrap", "emb_compare_structure", "emb_retrieval_dose", "emb_knn_agreement", "emb_knn_agreement_items",
        "emb_mantel", "emb_cka", "emb_procrustes", "emb_compare_cka", "emb_knn_classify", "emb_knn_classify_items",
        "emb_centroid_classify", "emb_similarity_eval", "emb_compare_similarity", "emb_retrieval_eval",
        "emb_compare_retrieval", "emb_compare_classification", "emb_rank_models", "emb_rank_retrieval",
        "emb_rank_similarity", "emb_rank_classification", "emb_rank_cka"}


@pytest.mark.parametrize("name", NAMES)
def test_a_model_column_of_any_name(name):
    con = connection_with_model(name)
    for function in FUNCTIONS:
        outputs = [c.name.lower() for c in function.columns if not c.name.startswith("<")]
        keeps_model = any(c.name == "<model>" for c in function.columns)
        if name not in INTERNAL and name not in INTERNAL_OF.get(function.name, ()) and name.lower() not in outputs:
            continue   # another function's output column: tested there (and as INTERNAL where it matters)
        sql = query(function, name)
        if name.lower().startswith("__emb_"):   # the macros' own prefix: refused, never a binder error
            with pytest.raises(duckdb.Error, match=r"embsql: \[column.reserved\] model column " + re.escape(quoted(name))):
                con.sql(sql).fetchall()
            continue
        if keeps_model and name.lower() in outputs:
            with pytest.raises(duckdb.Error, match=r"embsql: \[column.collision\] model column " + re.escape(quoted(name))):
                con.sql(sql).fetchall()
            continue
        if name.lower() in [c.lower() for c in FIXTURE_COLUMNS]:
            continue   # a column the examples' tables have already (qid, value ...): the call would mean that one
        try:
            columns, got = rows(con, sql)
        except duckdb.Error as e:
            raise AssertionError(f"{function.name} with a model column named {name!r}: {e}") from None
        base_columns, base = baseline(function.name)
        want_columns = [name if c == "model" and keeps_model else c for c in base_columns]
        assert columns == want_columns, (function.name, name, columns)
        renamed = [r.replace("'model'", literal(name)) for r in base]
        assert same_rows(got, renamed) or same_rows(got, base), (function.name, name, got[:3])


def same_rows(got: list[str], want: list[str]) -> bool:
    """The rows (their reprs) equal, floats to 1e-12 relative: another plan may sum in another order
    (DuckDB 2.0.0 does for a renamed column), which moves the last bits and nothing else."""
    if len(got) != len(want):
        return False
    for a, b in zip(got, want, strict=True):
        if a == b:
            continue
        try:
            x, y = ast.literal_eval(a), ast.literal_eval(b)
        except (ValueError, SyntaxError):
            return False
        if len(x) != len(y) or not all(u == v or (isinstance(u, float) and isinstance(v, float)
                                                  and math.isclose(u, v, rel_tol=1e-12, abs_tol=1e-15))
                                       for u, v in zip(x, y, strict=True)):
            return False
    return True


# the functions whose NULL model is refused naming the column (also some that the name matrix above
# does not cover yet)
NULL_REFUSED = COVERED
NULL_FUNCTIONS = [f for f in sql_reference.functions() if f.name in NULL_REFUSED]


@pytest.mark.parametrize("function", NULL_FUNCTIONS, ids=[f.name for f in NULL_FUNCTIONS])
def test_a_null_model_is_refused(function):
    con = connection_with_model("model", value="NULL")
    # (not the qrels: judgements are not per model, and a second copy would be a second fault, label.duplicate,
    # which DuckDB may find first)
    for (table,) in con.sql("SELECT table_name FROM duckdb_tables() WHERE NOT temporary AND table_name <> 'qrels'").fetchall():
        con.execute(f"INSERT INTO {quoted(table)} BY NAME SELECT * EXCLUDE (model), NULL AS model FROM {quoted(table)}")
    # (an item once per model in the similarity functions' embeddings: one model's rows made NULL instead)
    con.execute("DELETE FROM word_vectors WHERE model IS NULL")
    con.execute("UPDATE word_vectors SET model = NULL WHERE model = 'noisy'")
    with pytest.raises(duckdb.Error, match=r'embsql: \[label.null\] .*["\']model["\']'):
        con.sql(query(function, "model")).fetchall()


@pytest.mark.parametrize("function", FUNCTIONS, ids=[f.name for f in FUNCTIONS])
def test_a_model_column_of_another_case(function):
    """A model column "Model": `model := 'Model'` gives the figures of a column `model`; `model := 'model'`
    (the default of the functions whose model column is optional) is refused naming "Model", never
    read as a table of one model."""
    con = connection_with_model("Model")
    columns, got = rows(con, query(function, "Model"))
    base_columns, base = baseline(function.name)
    keeps_model = any(c.name == "<model>" for c in function.columns)
    assert columns == [("Model" if c == "model" and keeps_model else c) for c in base_columns]
    assert same_rows(got, [r.replace("'model'", "'Model'") for r in base]) or same_rows(got, base)
    with pytest.raises(duckdb.Error, match=r"embsql: \[column.missing\] model column ['\"]model['\"] not found in ") as e:
        con.sql(query(function, "model")).fetchall()
    # (where the model column is optional, the refusal names the column of the other case)
    if any(a.name == "model" and a.default == "'model'" for a in function.arguments):
        assert "its column 'Model' differs only in case" in str(e.value)
