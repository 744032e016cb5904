"""The one table of SQL dialects: which ones embsql writes stage 1 in, and which it also runs on.

A report's stage 1 (embsql.io.portable_sums) is a sqlglot AST, so it can be written for every dialect
below (``embsql sql --dialect``, ``Report.sql``).  embsql runs it itself only where it recognises
a connection (embsql.engines.connections, ``embsql.run_on``): the others get printed SQL to run
there, and their Arrow result could be finished with ``Report.run_stage1``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Dialect:
    name: str        # the sqlglot dialect name
    engine: str      # the engine, for people
    runs: bool       # embsql runs stage 1 on a connection of this engine (else: it writes the SQL only)


TABLE = (
    Dialect("duckdb", "DuckDB", runs=True),
    Dialect("spark", "Apache Spark", runs=True),
    Dialect("postgres", "PostgreSQL", runs=True),
    Dialect("trino", "Trino", runs=False),
    Dialect("bigquery", "BigQuery", runs=False),
    Dialect("snowflake", "Snowflake", runs=False),
)

WRITABLE = tuple(d.name for d in TABLE)               # embsql writes the report's SQL in these
RUNNABLE = tuple(d.name for d in TABLE if d.runs)     # ... and runs it on a connection of these
