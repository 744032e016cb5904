"""Vector columns stored as text, as CSV and JSON files often hold them.

What an error about a text vector column adds, the cast that reads it, is
embsql.io.columns.cast_hint.

- :func:`parsed_view` (``embsql report --parse-vectors``): a view of a file whose text vector
  column is parsed into DOUBLE[].  It reads the three spellings users have: a JSON array
  (``[0.1, 0.2]``), a Python or NumPy list (``[0.1, 0.2]``, ``[0.1 0.2]``) and a space- or
  comma-separated list (``0.1 0.2``).  A value that is not a list of numbers is an ``embsql:``
  error naming the column, the 1-based row and the value.
"""

from __future__ import annotations

import duckdb
from sqlglot import exp

from embsql.errors import ColumnTypeError, InputError
from embsql.io.columns import TEXT_TYPES, sql_name
from embsql.io.sources import duckdb_table, is_file, resolve, source_expression

PARSED_VIEW = "embsql_parsed_vectors"


def parse_expression(column: str, shown: str) -> str:
    """DuckDB SQL for the text in ``column`` as DOUBLE[] (NULL stays NULL); ``__emb_row`` is the row."""
    name = sql_name(column)
    text = f"trim(regexp_replace(CAST({name} AS VARCHAR), '[\\[\\]]', '', 'g'))"
    parts = f"list_transform(regexp_split_to_array({text}, '[\\s,]+'), lambda x: TRY_CAST(x AS DOUBLE))"
    where = shown.replace("'", "''").replace("{", "(").replace("}", ")")
    bad = (f"error(format('embsql: [column.type] vector column \"{column.replace(chr(39), chr(39) * 2)}\" in {where}: "
           f"row {{}} reads {{}}, which is not a list of numbers (--parse-vectors reads [0.1, 0.2], [0.1 0.2] and 0.1 0.2)', "
           f"__emb_row, left(CAST({name} AS VARCHAR), 60)))")
    return (f"CASE WHEN {name} IS NULL THEN NULL::DOUBLE[] WHEN {text} = '' THEN []::DOUBLE[] "
            f"WHEN list_bool_or(list_transform({parts}, lambda y: y IS NULL)) THEN {bad}::DOUBLE[] ELSE {parts} END")


def parsed_view(con: duckdb.DuckDBPyConnection, data: str, column: str, view: str = PARSED_VIEW) -> str:
    """Create a temporary view of the file ``data`` with its text column ``column`` parsed into
    DOUBLE[]; returns the view's name.  A column that already holds vectors is left as it is."""
    if duckdb_table(data) is not None or not is_file(data):
        raise InputError(f"--parse-vectors reads a CSV, JSON or Parquet file; {data!r} is not one")
    source = resolve(con, data)
    type_ = source.require(column, "vector")
    origin = source_expression(data).sql("duckdb")
    if type_.upper() not in TEXT_TYPES:
        con.execute(f"CREATE OR REPLACE TEMP VIEW {view} AS SELECT * FROM {origin}")
        return view
    if "__emb_row" in source.columns:
        raise ColumnTypeError(f"{data!r} has a column named __emb_row, a name embsql keeps for its own columns")
    parsed = parse_expression(column, data)
    con.execute(f"CREATE OR REPLACE TEMP VIEW {view} AS SELECT * EXCLUDE (__emb_row) REPLACE ({parsed} AS "
                f"{exp.to_identifier(column, quoted=True).sql('duckdb')}) "
                f"FROM (SELECT *, row_number() OVER () AS __emb_row FROM {origin})")
    return view
