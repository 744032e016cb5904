"""Running embsql's SQL on DuckDB from Python: an ``embsql:`` error raised by a macro comes back as
an embsql exception."""

from __future__ import annotations

import duckdb
import pyarrow as pa

from embsql.errors import SqlInputError


def run_sql(con: duckdb.DuckDBPyConnection, query: str) -> pa.Table:
    """Run ``query`` and return its result as Arrow; an ``embsql:`` error becomes SqlInputError."""
    try:
        return con.sql(query).to_arrow_table()
    except duckdb.Error as error:
        message = str(error)
        if "embsql:" in message:
            raise SqlInputError(message[message.index("embsql:"):].splitlines()[0]) from None
        raise
