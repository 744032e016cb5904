"""Run one query on another SQL engine and get Arrow back: the plumbing under the transpiled stage 1.

embsql's aggregate stage (per-group counts and sums of unit vectors) can run on DuckDB, Spark or
PostgreSQL; the small result then comes back as Arrow and is finished in Python. embsql does not
depend on pyspark or psycopg: a connection is recognised by its type, looking only at modules that
are already imported (whoever made the connection imported them).

What differs between the engines is declared by their classes (embsql.engines.dialects); each
engine's own code is there (DuckDB) or in embsql.engines.postgres and .spark.  ``load_table`` is for tests
and benchmarks: it puts an Arrow table with a vector column on an engine quickly (Parquet for
Spark, COPY for PostgreSQL).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from embsql.engines.dialects import CONNECTABLE, ENGINES, engine_of
from embsql.engines.dialects import RUNNABLE as DIALECTS  # noqa: F401  (the dialects run_on runs)
from embsql.engines.tables import uniform
from embsql.errors import InputError


def dialect_of(connection: object) -> str:
    """The sqlglot dialect of ``connection``: "duckdb", "spark" or "postgres"."""
    return engine_of(connection).name


def fetch_arrow(connection: object, sql: str) -> pa.Table:
    """Run one SELECT on ``connection``'s engine; its result as Arrow with the query's column names.

    Integer columns come back as int64 and floating or decimal ones as float64 (integral decimals,
    such as DuckDB's sum of BIGINT, as int64; PostgreSQL numeric as float64); NULLs stay NULL.
    An error of the engine becomes :class:`EngineError` naming the dialect.
    """
    engine = engine_of(connection)
    if not isinstance(sql, str) or not sql.strip():
        raise InputError(f"fetch_arrow needs the SQL text of one query, not {sql!r}")
    try:
        table = engine.fetch(connection, sql)
    except engine.errors() as error:
        raise engine.error(error) from error
    return uniform(table)


def load_table(connection: object, name: str, table: pa.Table, *, vector_type: str | None = None) -> None:
    """Create or replace table ``name`` on ``connection``'s engine with the rows of ``table``.

    For tests and benchmarks. Lists of numbers (list, large_list, fixed_size_list) become
    ``array<double>`` in Spark (a temporary view over a Parquet file) and, in PostgreSQL (loaded
    with COPY), ``vector_type``: ``double precision[]`` (the default), or pgvector's ``vector``
    or ``halfvec`` (the extension must be installed); DuckDB takes the Arrow types as they are.
    """
    engine = engine_of(connection)
    if not isinstance(name, str) or not name:
        raise InputError(f"load_table needs a table name, not {name!r}")
    if not isinstance(table, pa.Table) or table.num_columns == 0:
        raise InputError(f"load_table needs a pyarrow.Table with at least one column, not {type(table).__name__}")
    if vector_type is not None and not engine.vector_types:
        raise InputError(f"vector_type is for PostgreSQL; {engine.name} stores vectors as arrays of doubles")
    try:
        engine.load(connection, name, table, vector_type)
    except engine.errors() as error:
        raise engine.error(error) from error


@contextlib.contextmanager
def connect(engine: str, *, dsn: str | None = None, spark_master: str | None = None) -> Iterator[Any]:
    """A connection to ``engine`` for the command line: PostgreSQL from a libpq ``dsn`` (psycopg 3),
    Spark as a SparkSession on ``spark_master`` (default local[*]); closed (stopped) on exit.

    A missing client library, or a server that refuses the connection, is an EngineError of one
    line naming the engine."""
    if engine not in CONNECTABLE:
        raise InputError(f"engine must be one of {', '.join(CONNECTABLE)}, not {engine!r}")
    with ENGINES[engine].connect(dsn=dsn, spark_master=spark_master) as connection:
        yield connection
