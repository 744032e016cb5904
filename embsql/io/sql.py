"""Running embsql's SQL on DuckDB from Python: an ``embsql: [kind]`` error raised by a macro or UDF
comes back as the catalogue's exception for that kind (embsql.errors)."""

from __future__ import annotations

import duckdb
import pyarrow as pa

from embsql.errors import from_sql


def run_sql(con: duckdb.DuckDBPyConnection, query: str) -> pa.Table:
    """Run ``query`` and return its result as Arrow.

    An ``embsql: [kind] ...`` error becomes the kind's class (DesignError for ``design.one_group``,
    ...), raised as a subclass of that class and of SqlInputError, so both ``except DesignError``
    and ``except SqlInputError`` catch it; its message is the SQL message's first line."""
    try:
        return con.sql(query).to_arrow_table()
    except duckdb.Error as error:
        if "embsql:" in str(error):
            raise from_sql(str(error)) from None
        raise
