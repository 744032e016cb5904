"""Registration behaves like DuckDB: per database instance (the UDFs) and per connection (the macros).

DuckDB keeps a Python UDF in the instance's system catalog, so every connection of the instance
(its cursors, a second duckdb.connect of the same file in this process) sees it; the macros are
TEMP, each connection's own.  So ``register`` must be idempotent on any connection of an instance
(a cursor, a second connect), the UDFs must keep working after the connection that made them
closes, and nothing may reach the user's file.  References: the figures of the README's example
table (R² = 0.8182, source Example 1) and the same query on the first connection.
"""

from __future__ import annotations

import doctest
import gc
import hashlib
import os
import threading
from pathlib import Path

import duckdb
import pytest

import embsql
import embsql.io.interrupts as interrupts

EXAMPLE = ("SELECT * FROM (VALUES ('A', [1.0, 0.0]), ('A', [0.8, 0.6]), ('B', [0.0, 1.0]), ('B', [-0.6, 0.8])) "
           "v(g, v)")
ANOVA = "SELECT round(r2, 4) FROM emb_anova('t', 'g', 'v')"
PERMANOVA = "SELECT p_value, permutations FROM emb_permanova('t', 'g', 'v', permutations := 99, seed := 1)"  # a UDF


def example_file(tmp_path: Path) -> str:
    path = str(tmp_path / "user.duckdb")
    with duckdb.connect(path) as con:
        con.execute(f"CREATE TABLE t AS {EXAMPLE}")
    return path


def digest(path: str) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_cursors_of_a_registered_connection_work_once_registered():
    """A cursor is a new connection: it sees the instance's UDFs, and register(cursor) -- which
    failed with 'Scalar Function ... already exists' -- adds its macros."""
    con = embsql.connect()
    con.execute(f"CREATE TABLE t AS {EXAMPLE}")
    expected = con.sql(PERMANOVA).fetchall()
    cur = con.cursor()
    kernels = "SELECT count(*) FROM duckdb_functions() WHERE function_name = 'emb__unit'"
    assert cur.sql(kernels).fetchall()[0][0] > 0             # the UDFs are the instance's: a cursor sees them
    assert embsql.register(cur) is cur
    assert cur.sql(ANOVA).fetchall() == [(0.8182,)]
    assert cur.sql(PERMANOVA).fetchall() == expected
    assert embsql.register(cur).sql(ANOVA).fetchall() == [(0.8182,)]        # again: idempotent


def test_a_users_own_connection_and_its_cursors():
    con = embsql.register(duckdb.connect())
    con.execute(f"CREATE TABLE t AS {EXAMPLE}")
    assert embsql.register(con.cursor()).sql(ANOVA).fetchall() == [(0.8182,)]
    assert embsql.register(con).sql(ANOVA).fetchall() == [(0.8182,)]


def test_threads_each_with_a_registered_cursor():
    """The DuckDB docs' way to use one database from several threads, with registrations racing."""
    con = embsql.connect()
    con.execute(f"CREATE TABLE t AS {EXAMPLE}")
    expected = con.sql(PERMANOVA).fetchall()
    results: dict[int, object] = {}

    def work(k: int) -> None:
        try:
            cur = embsql.register(con.cursor())
            results[k] = (cur.sql(ANOVA).fetchall(), cur.sql(PERMANOVA).fetchall())
        except Exception as error:  # reported below, with the thread's number
            results[k] = error

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {k: ([(0.8182,)], expected) for k in range(4)}


def test_two_connects_to_one_file_and_closing_the_first(tmp_path):
    """A notebook cell run again: a second embsql.connect of an open file gets the same instance.
    After the first connection closes, the UDFs it made still call live kernels (DuckDB's catalog
    keeps a borrowed pointer to them; the connection held the reference)."""
    path = example_file(tmp_path)
    first = embsql.connect(path)
    expected = first.sql(PERMANOVA).fetchall()
    second = embsql.connect(path)
    assert second.sql(ANOVA).fetchall() == [(0.8182,)]
    first.close()
    del first
    gc.collect()
    _ = [object() for _ in range(100_000)]   # would reuse the memory of freed kernels
    assert second.sql(PERMANOVA).fetchall() == expected
    assert embsql.connect(path).sql(PERMANOVA).fetchall() == expected
    second.close()


def test_register_is_the_same_on_every_connection_of_an_instance(tmp_path):
    path = example_file(tmp_path)
    listing = ("SELECT database_name, function_name, parameters FROM duckdb_functions() "
               "WHERE function_name LIKE 'emb%' ORDER BY ALL")
    con = embsql.connect(path)
    once = con.sql(listing).fetchall()
    for other in (embsql.register(con), embsql.register(con.cursor()), embsql.connect(path), embsql.register(con)):
        assert other.sql(listing).fetchall() == once
    assert {db for db, _, _ in once} == {"temp", "system"}     # the macros TEMP, the UDFs the instance's
    assert {"emb_anova", "emb_permanova", "emb__permanova"} <= {name for _, name, _ in once}


def test_nothing_reaches_the_users_file(tmp_path):
    """The file's bytes are the same after registering and querying; its catalog gets no macro (a
    plain connection sees no embsql function), and EXPORT DATABASE carries none."""
    path = example_file(tmp_path)
    before = digest(path)
    con = embsql.connect(path)
    assert con.sql(ANOVA).fetchall() == [(0.8182,)]
    con.sql(PERMANOVA).fetchall()
    assert con.sql("SELECT count(*) FROM duckdb_functions() WHERE database_name = 'user'").fetchall() == [(0,)]
    con.execute(f"EXPORT DATABASE '{tmp_path / 'export'}'")
    assert "emb_" not in (tmp_path / "export" / "schema.sql").read_text()
    con.close()
    assert digest(path) == before
    with duckdb.connect(path) as plain:
        assert plain.sql("SELECT count(*) FROM duckdb_functions() WHERE function_name LIKE 'emb%'").fetchall() == [(0,)]


def test_read_only_files(tmp_path):
    path = example_file(tmp_path)
    before = digest(path)
    con = embsql.connect(path, read_only=True)
    assert con.sql(ANOVA).fetchall() == [(0.8182,)]
    expected = con.sql(PERMANOVA).fetchall()
    again = embsql.connect(path, read_only=True)                 # the same instance, registered again
    assert again.sql(PERMANOVA).fetchall() == expected
    assert embsql.register(con.cursor()).sql(PERMANOVA).fetchall() == expected
    with pytest.raises(duckdb.Error, match="read-only"):
        con.execute("CREATE TABLE u (x INTEGER)")
    con.close()
    again.close()
    assert digest(path) == before


@pytest.mark.parametrize("value", ["yes", 1, None])
def test_interrupt_must_be_true_or_false(value):
    with pytest.raises(embsql.InputError, match=r"^interrupt must be True or False, not ") as info:
        embsql.connect(interrupt=value)
    assert info.value.kind == "argument.interrupt"


def test_interrupt_is_set_from_the_main_thread():
    caught: list[BaseException] = []

    def work() -> None:
        try:
            embsql.connect(interrupt=True)
        except embsql.InputError as error:
            caught.append(error)

    thread = threading.Thread(target=work, name="worker")
    thread.start()
    thread.join()
    assert [str(e) for e in caught] == ["interrupt must be set from the main thread, where Python runs signal "
                                        "handlers, not True from thread 'worker'"]


def test_the_interrupt_docstring_example_runs():
    assert doctest.testmod(interrupts).failed == 0


def test_connect_takes_duckdbs_arguments_by_name_and_refuses_a_misspelling(tmp_path):
    """connect's keywords are typed (read_only, config, interrupt): a misspelt one is a TypeError at run
    time and a mypy error before it (issue 32), where **kwargs let any keyword through to DuckDB."""
    con = embsql.connect(config={"threads": 1})
    assert con.execute("SELECT current_setting('threads')").fetchall() == [(1,)]
    with pytest.raises(TypeError, match="read_onyl"):
        embsql.connect(read_onyl=True)


@pytest.mark.slow
def test_mypy_flags_a_misspelt_keyword_of_connect(tmp_path):
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (the test extra)")
    script = tmp_path / "misspelt.py"
    script.write_text("import embsql\n\nembsql.connect(read_onyl=True)\nembsql.connect(read_only=True)\n")
    done = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--ignore-missing-imports",
                           "--cache-dir", str(tmp_path / "cache"), str(script)],
                          capture_output=True, text=True, timeout=600, cwd=tmp_path,
                          env={**os.environ, "PYTHONPATH": str(Path(embsql.__file__).parents[1])})
    assert done.returncode == 1, done.stdout + done.stderr
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and ":3:" in errors[0] and '"read_onyl"' in errors[0], done.stdout
