"""Make a DuckDB connection speak embsql: the SQL macros plus the Python UDF kernels.

Order: sql/embsql.sql (pure SQL, the same file the CLI reads), then the UDFs from udfs/*.py,
then sql/python/*.sql (macros built on those UDFs).

Where DuckDB (2.0) keeps each, and so what ``register`` does:

- The macros are ``CREATE OR REPLACE TEMP``: they live in the connection's own temp catalog, as
  long as the connection.  Nothing is written into the user's database (nor carried along by its
  ``EXPORT DATABASE`` or ``COPY FROM DATABASE``), and a read-only file can be registered too.  The
  price: every connection needs its own, and a cursor (``con.cursor()``) is a new connection that
  starts without them.  DuckDB has no other place for a macro that every connection of a database
  sees: the search path is set per connection (``SET GLOBAL search_path`` is refused, and a cursor
  starts from the default one), and the system catalog refuses ``CREATE``.  The database's own
  catalog would do, but that is the user's file (and, in memory, what the user exports).
- The UDFs live in the database instance's system catalog: once one connection has created them,
  every connection of that instance sees them (its cursors, and a second ``duckdb.connect`` of the
  same file in this process, which DuckDB hands the same instance).  The catalog holds only a
  borrowed pointer to each Python kernel; the reference that keeps it alive belongs to the
  connection that created it, and goes when that connection closes while the instance lives on.
  So the kernels are loaded once per process and kept here, whichever connection registers them.

``register`` creates what is missing: the UDFs the instance lacks, the macros the connection
lacks.  It is idempotent on any connection of an instance, and quick on one that has everything.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import duckdb
from duckdb.func import FunctionNullHandling, PythonUDFType

from embsql.io.interrupts import stop_on_ctrl_c
from embsql.io.resources import resource_dir, sql_entry_file

# one registration at a time in this process: DuckDB refuses a second CREATE of a UDF that another
# connection of the same instance made in between our look and our create
_lock = threading.Lock()

@dataclass(frozen=True)
class UdfSpec:
    """One Python UDF: its SQL name, kernel and signature, declared once (in udfs/*.py)."""

    name: str
    function: Callable[..., Any]
    parameters: tuple[str, ...]
    return_type: str
    null_handling: str = "default"
    side_effects: bool = False


@functools.cache
def udf_specs() -> tuple[UdfSpec, ...]:
    """Every ``SPECS`` entry of the kernel modules in udfs/, loaded once per process.

    Once: the kernels must outlive any one connection (see the module docstring)."""
    specs = []
    for path in sorted(resource_dir("udfs").glob("*.py")):
        if path.name.startswith("_"):
            continue
        spec = importlib.util.spec_from_file_location(f"embsql._udfs.{path.stem}", path)
        assert spec is not None and spec.loader is not None, path  # a .py file always has a loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for item in getattr(module, "SPECS", []):
            specs.append(UdfSpec(**{**item, "parameters": tuple(item["parameters"])}))
    return tuple(specs)


@functools.cache
def macro_scripts() -> tuple[str, str, str]:
    """(the pure-SQL script, the script of the macros on the UDFs, a digest of both)."""
    plain = sql_entry_file().read_text(encoding="utf-8")
    on_udfs = "\n".join(path.read_text(encoding="utf-8") for path in sorted((resource_dir("sql") / "python").glob("*.sql")))
    return plain, on_udfs, hashlib.sha256(f"{plain}\0{on_udfs}".encode()).hexdigest()[:16]


# The two scripts' statements, parsed once per process (by the first connection registered): parsing
# is about half the time a connection's registration takes, and a parsed statement runs on any connection.
_parsed: list[list[duckdb.Statement]] = []


# Markers, made last, say that everything before them is there: asking duckdb_functions() takes a
# good part of a second (it renders every macro's text), a marker takes a millisecond.
_MACROS_MARKER = "emb__macros_registered"    # TEMP macro: this connection has the macros (its value: their digest)
_KERNELS_MARKER = "emb__kernels_registered"  # UDF: this database instance has the kernels


def _marker(con: duckdb.DuckDBPyConnection, name: str) -> str | None:
    try:
        return con.execute(f"SELECT {name}()").fetchall()[0][0]
    except duckdb.CatalogException:
        return None


def _create_udf(con: duckdb.DuckDBPyConnection, spec: UdfSpec) -> None:
    try:
        con.create_function(
            spec.name,
            spec.function,
            [duckdb.sqltype(t) for t in spec.parameters],
            duckdb.sqltype(spec.return_type),
            type=PythonUDFType.ARROW,
            null_handling=(FunctionNullHandling.SPECIAL if spec.null_handling == "special"
                           else FunctionNullHandling.DEFAULT),
            side_effects=spec.side_effects,
        )
    except (duckdb.CatalogException, duckdb.NotImplementedException):
        pass  # made by an earlier registration of this instance that stopped before its marker


def _kernels_marker() -> str:
    return "registered"


def register(con: duckdb.DuckDBPyConnection, *, interrupt: bool = False) -> duckdb.DuckDBPyConnection:
    """Define every embsql macro and UDF on ``con`` and return it.

    The macros are temporary (this connection's own; nothing is written into the database), the UDFs
    belong to the database instance.  Call it on every connection that runs embsql's SQL, a cursor
    included: ``con.cursor()`` is a new connection, which sees the UDFs but not the macros.  Calling
    it again, on this or any other connection of the same database, is harmless and quick.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        Any DuckDB connection or cursor: in memory, a file, or a file opened ``read_only=True``.
    interrupt : bool, default False
        Let Ctrl-C stop a running embsql function (a permutation test, a bootstrap) at once, also
        when DuckDB runs it on one of its worker threads, where Python raises no KeyboardInterrupt.
        This chains a handler in front of the process's SIGINT handler (which still runs: by
        default it raises KeyboardInterrupt), for the rest of the process; a Ctrl-C then stops
        every embsql function running in the process.  Without it embsql leaves the SIGINT
        handler alone, and Ctrl-C stops such a function only when it runs on the calling thread
        (otherwise the query ends when the function does).  To stop one from another thread, use
        :func:`embsql.interrupt`.

    Returns
    -------
    duckdb.DuckDBPyConnection
        ``con`` itself.

    Raises
    ------
    embsql.InputError
        ``interrupt`` is not True or False, or is True off the main thread (Python runs signal
        handlers there only).

    Examples
    --------
    >>> import duckdb, embsql
    >>> con = embsql.register(duckdb.connect())
    >>> con.sql("SELECT emb_unit([3.0, 4.0]) AS z").fetchall()
    [([0.6, 0.8],)]
    >>> cur = embsql.register(con.cursor())     # a cursor is a new connection: register it too
    >>> cur.sql("SELECT emb_unit([0.0, 2.0]) AS z").fetchall()
    [([0.0, 1.0],)]
    """
    if interrupt is not False:
        stop_on_ctrl_c(interrupt)
    *scripts, digest = macro_scripts()
    with _lock:
        if _marker(con, _MACROS_MARKER) == digest:
            return con
        if not _parsed:
            _parsed.extend(con.extract_statements(text) for text in scripts)
        plain, on_udfs = _parsed
        for statement in plain:
            con.execute(statement)
        if _marker(con, _KERNELS_MARKER) is None:
            for spec in udf_specs():
                _create_udf(con, spec)
            con.create_function(_KERNELS_MARKER, _kernels_marker, [], duckdb.sqltype("VARCHAR"))
        for statement in on_udfs:
            con.execute(statement)
        con.execute(f"CREATE OR REPLACE TEMP MACRO {_MACROS_MARKER}() AS '{digest}'")
    return con


def connect(database: str | os.PathLike[str] = ":memory:", *, read_only: bool = False,
            config: Mapping[str, Any] | None = None, interrupt: bool = False) -> duckdb.DuckDBPyConnection:
    """Open a DuckDB connection (in memory by default) with every embsql function registered.

    A second ``connect`` of the same file in this process (a notebook cell run again while the
    first connection is open) gets the same database and works; so does a file opened
    ``read_only=True``.  Nothing is written into the file.  A cursor (``con.cursor()``, the way to
    use one database from several threads) is a new connection: ``embsql.register(con.cursor())``.

    Parameters
    ----------
    database : str or path, default ":memory:"
        What ``duckdb.connect`` opens: ``":memory:"`` or a DuckDB file.
    read_only : bool, default False
        Open the file read-only (``duckdb.connect``'s ``read_only``).
    config : dict, optional
        DuckDB settings for the new database (``duckdb.connect``'s ``config``: ``{"threads": 2}``).
    interrupt : bool, default False
        Let Ctrl-C stop a running embsql function at once (see :func:`register`).

    Returns
    -------
    duckdb.DuckDBPyConnection
        The new connection, registered.

    Raises
    ------
    embsql.InputError
        As :func:`register`; and DuckDB's own errors for the file (missing, locked by another process).

    Examples
    --------
    >>> import embsql
    >>> con = embsql.connect()
    >>> con.sql("SELECT emb_unit([0.0, 2.0]) AS z").fetchall()
    [([0.0, 1.0],)]
    """
    return register(duckdb.connect(os.fspath(database), read_only=read_only, config=dict(config or {})),
                    interrupt=interrupt)
