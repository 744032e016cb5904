"""DuckDB as an engine: run one query, load a table (the rest of embsql talks to DuckDB directly)."""

from __future__ import annotations

import uuid

import duckdb
import pyarrow as pa
from sqlglot import exp

from embsql.errors import InputError

ERRORS = (duckdb.Error,)


def fetch(connection: duckdb.DuckDBPyConnection, sql: str) -> pa.Table:
    relation = connection.sql(sql)
    if relation is None:
        raise InputError("fetch_arrow needs a query that returns rows (a SELECT)")
    return relation.to_arrow_table()


def load(connection: duckdb.DuckDBPyConnection, name: str, table: pa.Table) -> None:
    view = f"embsql_load_{uuid.uuid4().hex}"
    connection.register(view, table)
    try:
        target, rows = (exp.to_identifier(n, quoted=True).sql("duckdb") for n in (name, view))
        connection.execute(f"CREATE OR REPLACE TABLE {target} AS SELECT * FROM {rows}")
    finally:
        connection.unregister(view)
