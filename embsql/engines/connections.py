"""Run one query on another SQL engine and get Arrow back: the plumbing under the transpiled stage 1.

embsql's aggregate stage (per-group counts and sums of unit vectors) can run on DuckDB, Spark or
PostgreSQL; the small result then comes back as Arrow and is finished in Python. embsql does not
depend on pyspark or psycopg: a connection is recognised by its type, looking only at modules that
are already imported (whoever made the connection imported them).

This module is the dispatch; each engine's own code is in embsql.engines.duckdb, .postgres and
.spark.  ``load_table`` is for tests and benchmarks: it puts an Arrow table with a vector column on
an engine quickly (Parquet for Spark, COPY for PostgreSQL).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import cast

import duckdb
import pyarrow as pa

from embsql.engines import duckdb as duckdb_engine
from embsql.engines import postgres, spark
from embsql.engines.dialects import RUNNABLE as DIALECTS  # noqa: F401  (the dialects run_on runs)
from embsql.engines.tables import uniform
from embsql.errors import EngineError, InputError

_MODULES = {"duckdb": duckdb_engine, "spark": spark, "postgres": postgres}


def _loaded(module: str, name: str) -> type | None:
    return getattr(sys.modules[module], name, None) if module in sys.modules else None


def dialect_of(connection: object) -> str:
    """The sqlglot dialect of ``connection``: "duckdb", "spark" or "postgres"."""
    if isinstance(connection, duckdb.DuckDBPyConnection):
        return "duckdb"
    for dialect in ("spark", "postgres"):
        for module, name in _MODULES[dialect].CONNECTIONS:
            cls = _loaded(module, name)
            if cls is not None and isinstance(connection, cls):
                return dialect
    kind = f"{type(connection).__module__}.{type(connection).__qualname__}"
    raise InputError(f"cannot run SQL on a {kind}; supported connections are a duckdb.DuckDBPyConnection, "
                     "a pyspark.sql.SparkSession and a psycopg (3) or psycopg2 connection")


def engine_error(dialect: str, error: BaseException) -> EngineError:
    """The engine's exception as one line naming the dialect."""
    return EngineError(f"{dialect} rejected the query: {_first_line(error)}")


def errors_of(dialect: str) -> tuple[type[BaseException], ...]:
    """The exception classes ``dialect``'s client raises (of the modules already imported)."""
    if dialect == "duckdb":
        return duckdb_engine.ERRORS
    found = (_loaded(module, name) for module, name in _MODULES[dialect].ERRORS)
    return tuple(cls for cls in found if cls is not None)


def fetch_arrow(connection: object, sql: str) -> pa.Table:
    """Run one SELECT on ``connection``'s engine; its result as Arrow with the query's column names.

    Integer columns come back as int64 and floating or decimal ones as float64 (integral decimals,
    such as DuckDB's sum of BIGINT, as int64; PostgreSQL numeric as float64); NULLs stay NULL.
    An error of the engine becomes :class:`EngineError` naming the dialect.
    """
    dialect = dialect_of(connection)
    if not isinstance(sql, str) or not sql.strip():
        raise InputError(f"fetch_arrow needs the SQL text of one query, not {sql!r}")
    try:
        table = _MODULES[dialect].fetch(connection, sql)
    except errors_of(dialect) as error:
        raise engine_error(dialect, error) from error
    return uniform(table)


def load_table(connection: object, name: str, table: pa.Table, *, vector_type: str | None = None) -> None:
    """Create or replace table ``name`` on ``connection``'s engine with the rows of ``table``.

    For tests and benchmarks. Lists of numbers (list, large_list, fixed_size_list) become
    ``array<double>`` in Spark (a temporary view over a Parquet file) and, in PostgreSQL (loaded
    with COPY), ``vector_type``: ``double precision[]`` (the default), or pgvector's ``vector``
    or ``halfvec`` (the extension must be installed); DuckDB takes the Arrow types as they are.
    """
    dialect = dialect_of(connection)
    if not isinstance(name, str) or not name:
        raise InputError(f"load_table needs a table name, not {name!r}")
    if not isinstance(table, pa.Table) or table.num_columns == 0:
        raise InputError(f"load_table needs a pyarrow.Table with at least one column, not {type(table).__name__}")
    if vector_type is not None and dialect != "postgres":
        raise InputError(f"vector_type is for PostgreSQL; {dialect} stores vectors as arrays of doubles")
    try:
        if dialect == "postgres":
            # dialect_of recognised a psycopg (or psycopg2) connection
            postgres.load(cast("postgres.Connection", connection), name, table, vector_type or "double precision[]")
        else:
            _MODULES[dialect].load(connection, name, table)
    except errors_of(dialect) as error:
        raise engine_error(dialect, error) from error


ENGINES = ("postgres", "spark")


@contextlib.contextmanager
def connect(engine: str, *, dsn: str | None = None,
            spark_master: str | None = None) -> Iterator[postgres.Connection | spark.Session]:
    """A connection to ``engine`` for the command line: PostgreSQL from a libpq ``dsn`` (psycopg 3),
    Spark as a SparkSession on ``spark_master`` (default local[*]); closed (stopped) on exit.

    A missing client library, or a server that refuses the connection, is an EngineError of one
    line naming the engine."""
    if engine not in ENGINES:
        raise InputError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    if engine == "postgres":
        if not dsn:
            raise InputError("postgres: --dsn is needed (a libpq connection string, e.g. \"host=db dbname=emb\")")
        try:
            import psycopg
        except ImportError:
            raise EngineError("postgres: psycopg is not installed (pip install 'embsql[postgres]')") from None
        try:
            connection = psycopg.connect(dsn, autocommit=True)
        except psycopg.Error as error:
            raise EngineError(f"postgres: cannot connect: {_first_line(error)}") from None
        with connection:
            yield connection
        return
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise EngineError("spark: pyspark is not installed (pip install 'embsql[spark]')") from None
    running = SparkSession.getActiveSession()     # this process's own session: use it, leave it running
    builder = SparkSession.builder.master(spark_master or "local[*]").appName("embsql")
    if (spark_master or "local").startswith("local") and "PYSPARK_PYTHON" not in os.environ:
        # local workers run this Python, which has what stage 1's workers need (numpy, pyarrow, embsql)
        builder = builder.config("spark.pyspark.python", sys.executable)
    try:
        session = running or builder.getOrCreate()
    except Exception as error:  # py4j / JVM start-up: no Java, a master that does not answer
        raise EngineError(f"spark: cannot start a session on {spark_master or 'local[*]'}: {_first_line(error)}") from None
    try:
        yield session
    finally:
        if running is None:
            session.stop()


def _first_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    return lines[0] if lines else type(error).__name__
