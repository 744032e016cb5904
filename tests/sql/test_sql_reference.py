"""The SQL reference cannot drift from the code: every public SQL function has a doc block beside
its macro (embsql/sql_reference.py), and the block says what DuckDB registers.

- every emb_* function in duckdb_functions() after embsql.connect() has a block, and no block
  documents a function that does not exist;
- a block's arguments are duckdb_functions()'s parameters, in order, and its defaults are the ones
  DuckDB's binder lists for the macro;
- a block's output columns are the columns of a DESCRIBE of its example (a scalar's type too);
- every example runs: in the stock DuckDB CLI for the functions that do not need Python, through
  embsql.connect() for the others, after sql/examples.sql;
- sql/README.md is the rendering of the blocks (python sql/build.py), and its index lists every
  function and says which need Python.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from helpers import example_connection, public_functions

import embsql
from embsql import sql_reference
from embsql.io.resources import resource_dir, sql_entry_file
from embsql.sql_reference import MODEL_COLUMN, split_arguments

FUNCTIONS = sql_reference.functions()
BY_NAME = {f.name: f for f in FUNCTIONS}
SQL = resource_dir("sql")


@pytest.fixture(scope="module")
def con():
    con = example_connection()
    yield con
    con.close()


def candidate_signature(con, function: sql_reference.Function) -> list[tuple[str, str | None]]:
    """(name, default) of each parameter, as DuckDB's binder lists the macro when a call does not match."""
    probe = f"{function.name}(__emb_no_such_argument := 1)"
    with pytest.raises(duckdb.BinderException) as refused:
        con.sql(f"SELECT {probe}" if function.returns else f"SELECT * FROM {probe}")
    listed = re.search(rf"^\t{function.name}\((.*)\)$", str(refused.value), re.MULTILINE)
    assert listed, str(refused.value)
    out = []
    for part in split_arguments(listed.group(1)):
        name, _, default = part.partition(":=")
        out.append((name.strip(), default.strip() or None))
    return out


def statements(example: str) -> list[str]:
    """The example's statements, without whole-line comments."""
    out = []
    for statement in example.split(";"):
        code = "\n".join(line for line in statement.splitlines() if not line.strip().startswith("--")).strip()
        if code:
            out.append(code)
    return out


def test_every_public_function_has_a_block_and_every_block_a_function(con):
    assert sorted(public_functions(con)) == sorted(BY_NAME)
    assert len(FUNCTIONS) == len(BY_NAME) >= 29


def test_the_cli_file_defines_every_function_and_the_python_ones_say_they_need_python():
    con = duckdb.connect()
    con.execute(sql_entry_file().read_text(encoding="utf-8"))
    assert sorted(public_functions(con)) == sorted(BY_NAME)
    for function in FUNCTIONS:
        if function.needs_python:
            query = f"SELECT {function.call}" if function.returns else f"SELECT * FROM {function.call}"
            with pytest.raises(duckdb.Error, match=rf"embsql: \[query.needs_python\] {function.name} needs the Python"):
                con.sql(query).fetchall()


@pytest.mark.parametrize("name", sorted(f.name for f in FUNCTIONS if f.needs_python))
def test_a_python_function_in_the_stock_cli_says_it_needs_the_python_package(tmp_path, name):
    cli = Path(sys.executable).parent / "duckdb"
    if not cli.exists():
        pytest.skip("the stock DuckDB CLI is not installed (pip install '.[test]': duckdb-cli)")
    function = BY_NAME[name]
    query = f"SELECT {function.call} AS x;" if function.returns else f"SELECT * FROM {function.call};"
    script = [f".read {sql_entry_file()}", f".read {SQL / 'examples.sql'}", ".bail on", query]
    out = subprocess.run([str(cli), ":memory:"], input="\n".join(script), capture_output=True, text=True,
                         cwd=tmp_path, timeout=60)
    assert out.returncode != 0
    assert (f"embsql: [query.needs_python] {name} needs the Python package: run it through embsql.connect() "
            "or embsql report") in out.stderr, out.stderr
    assert "Did you mean" not in out.stderr


@pytest.mark.parametrize("order", ["stubs first", "stubs after"])
def test_registration_makes_the_real_functions_win_over_the_stubs(order):
    con = duckdb.connect()
    stubs = sql_entry_file().read_text(encoding="utf-8")
    if order == "stubs first":
        con.execute(stubs)
    embsql.register(con)
    if order == "stubs after":
        con.execute(stubs)
    # numpy: [3, 4] / 5
    assert con.sql("SELECT emb_unit([3.0, 4.0])").fetchall()[0][0] == pytest.approx([0.6, 0.8])
    con.execute("CREATE TABLE t AS SELECT (i % 2)::VARCHAR AS g, [i::DOUBLE, (i * i % 7)::DOUBLE + 1] AS v "
                "FROM range(12) r(i)")
    rows = con.sql("SELECT * FROM emb_permanova('t', 'g', 'v', permutations := 9)").fetchall()
    assert len(rows) == 1


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_the_arguments_and_defaults_are_the_ones_duckdb_registers(con, name):
    function = BY_NAME[name]
    parameters = public_functions(con)[name]
    documented = [a.name for a in function.arguments]
    assert parameters == documented
    listed = candidate_signature(con, function)
    assert listed == [(a.name, a.default) for a in function.arguments]


@pytest.mark.parametrize("name", sorted(BY_NAME))
def test_the_output_columns_are_a_describe_of_the_example(con, name):
    function = BY_NAME[name]
    call = function.call
    if function.returns:
        described = con.sql(f"DESCRIBE SELECT {call} AS x").fetchall()
        assert [row[1] for row in described] == [function.returns[0]]
        return
    model = re.search(r"\bmodel := '(\w+)'", call)
    # a column documented "(only with `bad_rows := 'skip'`)" is there exactly when the call says so
    conditions = {c.only_with for c in function.columns} - {None}
    calls = [call] + [call[:-1] + f", {condition})" for condition in sorted(conditions) if condition not in call]
    for each in calls:
        described = [row[0] for row in con.sql(f"DESCRIBE SELECT * FROM {each}").fetchall()]
        columns = [c.name for c in function.columns if c.only_with is None or c.only_with in each]
        if MODEL_COLUMN in columns:
            assert columns.index(MODEL_COLUMN) == 0, "the model column comes first"
            columns = ([model.group(1)] if model else []) + columns[1:]
        assert described == columns, each


def test_the_examples_of_the_cli_functions_run_in_the_stock_cli(tmp_path):
    cli = Path(sys.executable).parent / "duckdb"
    if not cli.exists():
        pytest.skip("the stock DuckDB CLI is not installed (pip install '.[test]': duckdb-cli)")
    script = [".bail on", f".read {sql_entry_file()}", f".read {SQL / 'examples.sql'}"]
    for function in FUNCTIONS:
        if not function.needs_python:
            script += [f"SELECT 'the example of {function.name}' AS embsql_example;", function.example]
    script.append("SELECT 'every example ran' AS embsql_example;")
    out = subprocess.run([str(cli), ":memory:"], input="\n".join(script), capture_output=True, text=True,
                         cwd=tmp_path, timeout=300)
    last = re.findall(r"the example of (\w+)", out.stdout)
    assert out.returncode == 0 and "every example ran" in out.stdout, \
        f"the example of {last[-1] if last else '?'} failed in the stock CLI: {out.stderr.strip()}"
    ran = len(re.findall(r"the example of", out.stdout))
    assert ran == sum(not f.needs_python for f in FUNCTIONS) >= 11


@pytest.mark.parametrize("name", sorted(f.name for f in FUNCTIONS if f.needs_python))
def test_the_examples_of_the_python_functions_run_through_embsql_connect(con, name):
    for statement in statements(BY_NAME[name].example):
        rows = con.sql(statement).fetchall()
        assert rows, statement


def test_each_block_is_the_documentation_of_the_macro_below_it():
    for function in FUNCTIONS:
        text = function.path.read_text(encoding="utf-8").splitlines()
        below = next(line for line in text[function.line - 1:] if not line.startswith("--"))
        assert below.startswith(f"CREATE OR REPLACE TEMP MACRO {function.name}("), function.name
        assert function.path.parent.name == ("python" if function.needs_python else "modules")


def _build():
    path = SQL / "build.py"
    if not path.exists():
        pytest.skip("sql/build.py is a source-tree tool; the wheel carries the built files only")
    spec = importlib.util.spec_from_file_location("sql_build", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_sql_readme_is_the_rendering_of_the_blocks():
    assert (SQL / "README.md").read_text(encoding="utf-8") == _build().readme_text(), "run: python sql/build.py"


def test_the_index_lists_every_function_and_says_which_need_python():
    readme = (SQL / "README.md").read_text(encoding="utf-8")
    index = readme[readme.index("## Index"):readme.index("Every example below runs")]
    cli, python = index.split("**Only from Python")
    for function in FUNCTIONS:
        assert f"[`{function.name}`]" in (python if function.needs_python else cli), function.name
    for name in ("emb_evaluate", "emb_evaluate_per_query", "emb_retrieval_eval"):
        assert f"[`{name}`]" in index
    words = {11: "Eleven", 13: "Thirteen", 19: "nineteen", 20: "twenty", 21: "twenty-one", 22: "twenty-two", 23: "twenty-three",
             24: "twenty-four", 25: "twenty-five", 26: "twenty-six", 27: "twenty-seven", 28: "twenty-eight",
             29: "twenty-nine", 30: "thirty", 31: "thirty-one", 32: "thirty-two"}
    cli, python = sum(not f.needs_python for f in FUNCTIONS), sum(f.needs_python for f in FUNCTIONS)
    assert re.search(rf"{words[cli]} functions run in the stock CLI; the other {words[python]} call Python", readme)
    assert cli == 13 and python >= 26


def test_the_collision_list_is_the_blocks_output_columns(con):
    for function in FUNCTIONS:
        if not function.returns:
            listed = con.sql(f"SELECT emb__outputs_{function.name}()").fetchall()[0][0]
            assert listed == [c.lower() for c in function.output_columns], function.name


@pytest.mark.parametrize("name", sorted(f.name for f in FUNCTIONS if any(a.name == "model" and a.default == "NULL"
                                                                           for a in f.arguments)))
def test_a_model_column_named_like_an_output_column_is_refused(con, name):
    function = BY_NAME[name]
    column = function.output_columns[-1].upper()        # names are compared as DuckDB does: case-insensitively
    call = function.call
    call = re.sub(r"model := '\w+'", f"model := '{column}'", call) if "model :=" in call \
        else call[:-1] + f", model := '{column}')"
    with pytest.raises(embsql.InputError) as refused:
        embsql.run_sql(con, f"SELECT * FROM {call}")
    assert refused.value.kind == "column.collision"
    assert str(refused.value) == (f'embsql: [column.collision] model column "{column}" has the name of one of '
                                  f"{name}'s output columns (the output keeps the model column's name); rename it, "
                                  f'e.g. SELECT "{column}" AS model_name')


def test_each_python_function_section_says_the_stock_cli_raises_query_needs_python():
    # the stubs of embsql.sql (issue 32): the reference must not say the name is absent from the CLI file
    readme = (SQL / "README.md").read_text(encoding="utf-8")
    assert "not in the CLI file" not in readme
    for function in FUNCTIONS:
        section = sql_reference.render(function)
        assert ("a stub that raises `embsql: [query.needs_python]`" in section) == function.needs_python, function.name
        assert section in readme, function.name


def test_the_interrupt_the_reference_names_is_the_one_that_ends_with_query_interrupted():
    # con.interrupt() alone lets a running permutation test finish; embsql.interrupt(con) stops it
    readme = (SQL / "README.md").read_text(encoding="utf-8")
    row = next(line for line in readme.splitlines() if line.startswith("| `query.interrupted`"))
    assert "embsql.interrupt(con)" in row and "con.interrupt()" not in row.replace("embsql.interrupt(con)", "")
    permanova = sql_reference.render(BY_NAME["emb_permanova"])
    assert "`embsql.interrupt(con)`" in permanova and "`embsql: [query.interrupted]`" in permanova
    assert "`con.interrupt()` or Ctrl-C stops" not in permanova
