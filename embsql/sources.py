"""Resolve what the user calls a source (table, view, registered frame or file) and its columns.

Names are never spliced into SQL text: they become sqlglot identifiers (quoted) or string
literals (file paths), and every column named in a call is checked before anything runs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import duckdb
from sqlglot import exp

from .errors import ColumnNotFoundError, ColumnTypeError, SourceNotFoundError

_FILE_SUFFIX = re.compile(r"\.(parquet|csv|tsv|json|jsonl|ndjson)(\.gz|\.zst)?$", re.IGNORECASE)
_VECTOR_TYPE = re.compile(r"^(FLOAT|DOUBLE|REAL|DECIMAL\(\d+,\s*\d+\)|TINYINT|SMALLINT|INTEGER|BIGINT)(\[(\d*)\])$")


@dataclass(frozen=True)
class Source:
    """A resolved source: the sqlglot expression to select from, and its column types."""

    name: str
    table: exp.Expression
    columns: dict[str, str]

    def require(self, column: str, role: str) -> str:
        """Return the type of ``column`` or raise naming it and the columns that exist."""
        if column not in self.columns:
            available = ", ".join(self.columns) or "(none)"
            raise ColumnNotFoundError(f"{role} column {column!r} not found in {self.name!r}; its columns are: {available}")
        return self.columns[column]

    def vector_dimension(self, column: str) -> int | None:
        """Check that ``column`` holds numeric vectors; return d for a fixed-size array type."""
        type_ = self.require(column, "vector")
        match = _VECTOR_TYPE.match(type_)
        if not match:
            raise ColumnTypeError(
                f"vector column {column!r} in {self.name!r} has type {type_}; expected FLOAT[], DOUBLE[], FLOAT[d] or DOUBLE[d]")
        return int(match.group(3)) if match.group(3) else None


def is_file(name: str) -> bool:
    return bool(_FILE_SUFFIX.search(name)) or ("/" in name and Path(name).exists())


def source_expression(name: str) -> exp.Expression:
    """A file path becomes a string literal (DuckDB reads it); anything else a quoted table name."""
    if is_file(name):
        return exp.Table(this=exp.Literal.string(name))
    parts = name.split(".")
    return exp.table_(parts[-1], db=parts[-2] if len(parts) > 1 else None,
                      catalog=parts[-3] if len(parts) > 2 else None, quoted=True)


def resolve(con: duckdb.DuckDBPyConnection, name: str) -> Source:
    """Look ``name`` up on ``con`` and read its column names and types."""
    if not isinstance(name, str) or not name:
        raise SourceNotFoundError(f"a source must be a table, view or file name, not {name!r}")
    table = source_expression(name)
    query = exp.select("*").from_(table).sql("duckdb")
    try:
        described = con.sql(f"DESCRIBE {query}").fetchall()
    except duckdb.Error as error:
        raise SourceNotFoundError(f"source {name!r} cannot be read: {str(error).splitlines()[0]}") from None
    return Source(name=name, table=table, columns={row[0]: row[1] for row in described})
