"""The names embsql gives the columns it reads, inside its own queries: one set for every reader,
and the checks of a column that every reader makes (a numeric type, no NULL or NaN label).

A stage-1 query (embsql.io.table_stream's stream, embsql.io.portable_sums's portable aggregate, the retrieval
readers) selects the user's columns under these aliases, so no user column name can clash with
them and every reader finds the model and group values under the same names.
"""

from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from embsql.errors import ColumnTypeError, fail

# The prefix of these names, and of the SQL macros' own columns (sql/build.py writes it into the SQL
# as emb__reserved_prefix()).  A model column, the one user column the macros carry beside theirs,
# must not start with it: refused on every route (column.reserved), so that the same call never
# works in Python and fails in SQL.
RESERVED = "__emb_"
B = RESERVED + "b"        # the model column's value (NULL without one)
G = RESERVED + "g"        # the group label
V = RESERVED + "v"        # the vector
KEY = RESERVED + "key"    # an optional row key, to name a bad row
EXTRA = RESERVED + "x"    # an optional extra column (strata, item)


def check_reserved(model: object, function: str = "embsql") -> None:
    """Refuse a model column whose name starts with RESERVED (any case), naming it as SQL quotes it."""
    if isinstance(model, str) and model.lower().startswith(RESERVED):
        fail("column.reserved", role="model", column='"' + model.replace('"', '""') + '"', rule="starts with __emb_",
             function=function)

# DuckDB type names (prefixes) of a numeric column
NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT",
           "FLOAT", "DOUBLE", "REAL", "DECIMAL")


def require_number(column: str, kind: str, source: str) -> None:
    """Refuse a per-query value column whose DuckDB type ``kind`` is not numeric."""
    if not kind.upper().startswith(NUMERIC):
        raise ColumnTypeError(f"value column {column!r} in {source!r} has type {kind}; expected a number per query")


def first_bad_label(values: pa.Array | pa.ChunkedArray) -> tuple[int, str] | None:
    """(row, "NULL" or "NaN") of the first value that cannot be a label (embsql.core.labels), or None."""
    if values.null_count:
        return int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0]), "NULL"
    if pa.types.is_floating(values.type):
        nan = pc.is_nan(values)
        if pc.any(nan).as_py():
            return int(np.flatnonzero(nan.to_numpy(zero_copy_only=False))[0]), "NaN"
    return None


# -- a vector column stored as text ('[0.1, 0.2]', as CSV and JSON files hold it) -----------------
_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
TEXT_TYPES = ("VARCHAR", "JSON")


def sql_name(column: str) -> str:
    """``column`` as an SQL identifier: bare when it is a plain name, double-quoted otherwise."""
    return column if _PLAIN.fullmatch(column) else '"' + column.replace('"', '""') + '"'


def cast_hint(column: str, type_: str) -> str:
    """What to add to the error about a vector column of type ``type_``: for text, the cast that works."""
    if type_.upper() not in TEXT_TYPES:
        return ""
    name = sql_name(column)
    return f"; {CAST_HINT.format(name=name)} (the command line: embsql report --parse-vectors)"


# the SQL macro emb__text_vector_hint says the same (tests/cli/test_cli.py holds them equal)
CAST_HINT = "text like '[0.1, 0.2]' becomes a vector with SELECT * REPLACE ({name}::DOUBLE[] AS {name}) FROM ..."
