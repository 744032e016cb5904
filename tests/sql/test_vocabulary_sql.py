"""The SQL face speaks the one vocabulary (embsql/vocabulary.py).

- every public SQL function's parameter names are in vocabulary.NAMES, and nothing else: no
  parameter is kept to refuse an old spelling;
- a named argument a function does not take (an old spelling, a misspelling) is DuckDB's binder
  error, which lists the function's arguments; embsql.run_sql turns it into argument.unknown
  listing them, and the stock CLI shows DuckDB's own;
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
from embsql.sql_reference import MODEL_COLUMN

FUNCTIONS = {f.name: f for f in sql_reference.functions()}


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
            assert name in vocabulary.NAMES, f"{function}({name} := ...): not in embsql.vocabulary.NAMES"
    assert not [f for f, names in found.items() if "by" in names]      # by := was model := before 0.1.0


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
@pytest.mark.parametrize("unknown", ["by", "group_col", "no_such_argument"])
def test_run_sql_lists_what_a_function_takes_for_a_name_it_does_not(con, name, unknown):
    """The list comes from DuckDB's binder; it must be the function's documented arguments, in order."""
    function = FUNCTIONS[name]
    query = function.call[:-1] + f", {unknown} := 'x')"
    with pytest.raises(embsql.ArgumentError) as refused:
        embsql.run_sql(con, f"SELECT {query}" if function.returns else f"SELECT * FROM {query}")
    takes = ", ".join(a.spelled for a in function.arguments)
    assert str(refused.value) == f"embsql: [argument.unknown] {name} has no argument {unknown} :=; it takes: {takes}"
    assert refused.value.kind == "argument.unknown"
    assert isinstance(refused.value, embsql.SqlInputError) and isinstance(refused.value, TypeError)


def test_a_name_a_function_never_took_lists_what_it_takes(con):
    with pytest.raises(embsql.ArgumentError) as refused:
        embsql.run_sql(con, "SELECT * FROM emb_anova('ex', 'topic', 'embedding', permutation := 9)")
    assert str(refused.value) == ('embsql: [argument.unknown] emb_anova has no argument permutation :=; it takes: '
                                  'source, "group", vector, model, item, bad_rows')
    # a name inside a string is not an argument; an error that is not about the names stays DuckDB's
    with pytest.raises(Exception) as other:
        embsql.run_sql(con, "SELECT * FROM emb_anova('group_col := 1')")
    assert "Binder Error" in str(other.value) and not isinstance(other.value, embsql.EmbsqlError)


def test_the_stock_cli_lists_what_a_function_takes_for_a_name_it_does_not(tmp_path):
    cli = Path(sys.executable).parent / "duckdb"
    if not cli.exists():
        pytest.skip("the stock DuckDB CLI is not installed (pip install '.[test]': duckdb-cli)")
    script = (f".read {sql_entry_file()}\n.read {resource_dir('sql') / 'examples.sql'}\n"
              "SELECT * FROM emb_anova('ex', 'topic', 'embedding', by := 'model');\n")
    out = subprocess.run([str(cli), ":memory:"], input=script, capture_output=True, text=True, cwd=tmp_path, timeout=120)
    said = out.stdout + out.stderr
    assert "Macro emb_anova() does not support the supplied arguments" in said
    assert "emb_anova(source, group, vector, model := NULL, item := NULL, bad_rows := 'error')" in said, said


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
    "emb_evaluate('run2', 'qrels', model := 'encoder')",
    "emb_evaluate_per_query('run2', 'qrels', model := 'encoder')",
    "emb_retrieval_eval('eval_queries2', 'eval_docs2', 'eval_qrels', model := 'encoder')",
])
def test_the_model_column_keeps_its_own_name(renamed, call):
    columns = [row[0] for row in renamed.sql(f"DESCRIBE SELECT * FROM {call}").fetchall()]
    assert columns[0] == "encoder" and "model" not in columns, columns
    name = call.split("(")[0]
    # the skipped_* columns come only with bad_rows := 'skip', which these calls do not pass
    assert columns[1:] == [c.name for c in FUNCTIONS[name].columns if c.name != MODEL_COLUMN and c.only_with is None]
