"""The SQL face speaks the one vocabulary (embsql/vocabulary.py).

- every public SQL function's parameter names are in vocabulary.NAMES; an old spelling
  (vocabulary.REMOVED) is a parameter only to refuse itself (``by := ...``, on the functions that
  took it), and it does refuse, in the stock CLI too;
- every other old spelling is a binder error, which embsql.run_sql turns into argument.renamed
  naming the new one;
- where a function returns one row per model, the model column keeps the input column's name,
  retrieval functions included.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers import example_connection, public_functions

import embsql
from embsql import sql_reference, vocabulary
from embsql.io.resources import resource_dir, sql_entry_file
from embsql.sql_reference import MODEL_COLUMN, REFUSED, spelled

FUNCTIONS = {f.name: f for f in sql_reference.functions()}
# the functions that took by := before it was model := (CHANGELOG.md): they keep a refusing "by"
TOOK_BY = {"emb_anova", "emb_groups", "emb_icc", "emb_permanova", "emb_dispersion", "emb_dispersion_groups",
           "emb_jackknife", "emb_bootstrap", "emb_compare_retrieval", "emb_run_metrics", "emb_run_metrics_per_query",
           "emb_retrieval_eval"}


@pytest.fixture(scope="module")
def con():
    con = example_connection()
    yield con
    con.close()


def test_every_parameter_name_is_in_the_vocabulary(con):
    found = public_functions(con)
    assert len(found) >= 29
    for function, names in found.items():
        for name in names:
            if name in REFUSED:
                assert name in vocabulary.REMOVED and function in TOOK_BY, (function, name)
            else:
                assert name in vocabulary.NAMES, f"{function}({name} := ...): not in embsql.vocabulary.NAMES"
                assert name not in vocabulary.REMOVED, (function, name)


def test_the_functions_that_took_by_refuse_it_in_sql_itself(con):
    found = public_functions(con)
    assert {f for f, names in found.items() if "by" in names} == TOOK_BY
    for name in TOOK_BY:
        call = FUNCTIONS[name].call[:-1] + ", by := 'model')"
        with pytest.raises(Exception) as refused:
            con.sql(f"SELECT * FROM {call}").fetchall()
        assert str(refused.value) == f"Invalid Input Error: embsql: [argument.renamed] by := is now model := (in {name})"


def test_the_stock_cli_refuses_by_with_the_new_name(tmp_path):
    cli = Path(sys.executable).parent / "duckdb"
    if not cli.exists():
        pytest.skip("the stock DuckDB CLI is not installed (pip install '.[test]': duckdb-cli)")
    script = (f".read {sql_entry_file()}\n.read {resource_dir('sql') / 'examples.sql'}\n"
              "SELECT * FROM emb_anova('ex', 'topic', 'embedding', by := 'model');\n")
    out = subprocess.run([str(cli), ":memory:"], input=script, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert "embsql: [argument.renamed] by := is now model := (in emb_anova)" in out.stdout + out.stderr


def _old_names(function) -> list[tuple[str, str]]:
    """(old, new) for each argument of ``function`` that had another name."""
    taken = {a.name for a in function.arguments}
    return [(old, new) for old, new in vocabulary.REMOVED.items() if new in taken and old not in taken | set(REFUSED)]


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_run_sql_names_the_new_spelling_of_every_old_one(con, name):
    function = FUNCTIONS[name]
    call = function.call
    for old, new in _old_names(function):
        query = call[:-1] + f", {old} := 'x')"
        with pytest.raises(embsql.ArgumentError) as refused:
            embsql.run_sql(con, f"SELECT {query}" if function.returns else f"SELECT * FROM {query}")
        assert str(refused.value) == f"embsql: [argument.renamed] {old} := is now {spelled(new)} := (in {name})"
        assert isinstance(refused.value, embsql.SqlInputError)


def test_a_name_a_function_never_took_lists_what_it_takes(con):
    with pytest.raises(embsql.ArgumentError) as refused:
        embsql.run_sql(con, "SELECT * FROM emb_anova('ex', 'topic', 'embedding', permutation := 9)")
    assert str(refused.value) == ('embsql: [argument.unknown] emb_anova has no argument permutation :=; it takes: '
                                  'source, "group", vector, model, bad_rows')
    # a name inside a string is not an argument; an error that is not about the names stays DuckDB's
    with pytest.raises(Exception) as other:
        embsql.run_sql(con, "SELECT * FROM emb_anova('group_col := 1')")
    assert "Binder Error" in str(other.value) and not isinstance(other.value, embsql.EmbsqlError)


@pytest.fixture(scope="module")
def renamed(con):
    """The example tables with the model column called encoder (and one for each retrieval table)."""
    con.execute("CREATE OR REPLACE TABLE ex2 AS SELECT * RENAME (model AS encoder) FROM ex")
    con.execute("CREATE OR REPLACE TABLE many2 AS SELECT * RENAME (model AS encoder) FROM many")
    for table in ("queries", "docs", "para", "run", "eval_queries", "eval_docs"):
        con.execute(f"CREATE OR REPLACE TABLE {table}2 AS SELECT *, 'bge' AS encoder FROM {table}")
    return con


@pytest.mark.parametrize("call", [
    "emb_anova('ex2', 'topic', 'embedding', model := 'encoder')",
    "emb_groups('ex2', 'topic', 'embedding', model := 'encoder')",
    "emb_icc('ex2', 'topic', 'embedding', model := 'encoder')",
    "emb_permanova('ex2', 'topic', 'embedding', model := 'encoder', permutations := 9)",
    "emb_dispersion('many2', 'topic', 'embedding', model := 'encoder', permutations := 9)",
    "emb_dispersion_groups('many2', 'topic', 'embedding', model := 'encoder', permutations := 9)",
    "emb_jackknife('many2', 'topic', 'embedding', model := 'encoder')",
    "emb_bootstrap('many2', 'topic', 'embedding', model := 'encoder', replicates := 50)",
    "emb_permanova_terms('many2', ['topic'], 'embedding', model := 'encoder', permutations := 9)",
    "emb_margins('queries2', 'docs2', model := 'encoder')",
    "emb_retrieval_summary('queries2', 'docs2', model := 'encoder')",
    "emb_retrieval_dose('para2', model := 'encoder', permutations := 9)",
    "emb_run_metrics('run2', 'qrels', model := 'encoder')",
    "emb_run_metrics_per_query('run2', 'qrels', model := 'encoder')",
    "emb_retrieval_eval('eval_queries2', 'eval_docs2', 'eval_qrels', model := 'encoder')",
])
def test_the_model_column_keeps_its_own_name(renamed, call):
    columns = [row[0] for row in renamed.sql(f"DESCRIBE SELECT * FROM {call}").fetchall()]
    assert columns[0] == "encoder" and "model" not in columns, columns
    name = call.split("(")[0]
    # the skipped_* columns come only with bad_rows := 'skip', which these calls do not pass
    assert columns[1:] == [c.name for c in FUNCTIONS[name].columns if c.name != MODEL_COLUMN and c.only_with is None]
