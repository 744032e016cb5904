"""Run one query on another SQL engine and get Arrow back: the plumbing under the transpiled stage 1.

embsql's aggregate stage (per-group counts and sums of unit vectors) can run on DuckDB, Spark or
PostgreSQL; the small result then comes back as Arrow and is finished in Python. embsql does not
depend on pyspark or psycopg: a connection is recognised by its type, looking only at modules that
are already imported (whoever made the connection imported them).

``load_table`` is for tests and benchmarks: it puts an Arrow table with a vector column on an
engine quickly (Parquet for Spark, COPY for PostgreSQL).
"""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
import uuid
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from sqlglot import exp

from embsql.engines.dialects import RUNNABLE as DIALECTS  # noqa: F401  (the dialects run_on runs)
from embsql.errors import EngineError, InputError

# (dialect, module, class): checked only when the module is already in sys.modules
_CONNECTION_TYPES = (
    ("spark", "pyspark.sql.session", "SparkSession"),
    ("spark", "pyspark.sql.connect.session", "SparkSession"),
    ("postgres", "psycopg", "Connection"),
    ("postgres", "psycopg2.extensions", "connection"),
)

# the exception classes each engine raises, looked up the same way
_ENGINE_ERRORS = {
    "spark": (("pyspark.errors", "PySparkException"), ("py4j.protocol", "Py4JError")),
    "postgres": (("psycopg", "Error"), ("psycopg2", "Error")),
}


def _loaded(module: str, name: str):
    return getattr(sys.modules[module], name, None) if module in sys.modules else None


def dialect_of(connection) -> str:
    """The sqlglot dialect of ``connection``: "duckdb", "spark" or "postgres"."""
    if isinstance(connection, duckdb.DuckDBPyConnection):
        return "duckdb"
    for dialect, module, name in _CONNECTION_TYPES:
        cls = _loaded(module, name)
        if cls is not None and isinstance(connection, cls):
            return dialect
    kind = f"{type(connection).__module__}.{type(connection).__qualname__}"
    raise InputError(f"cannot run SQL on a {kind}; supported connections are a duckdb.DuckDBPyConnection, "
                     "a pyspark.sql.SparkSession and a psycopg (3) or psycopg2 connection")


def _engine_error(dialect: str, error: Exception) -> EngineError:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    first = lines[0] if lines else type(error).__name__
    return EngineError(f"{dialect} rejected the query: {first}")


def _errors_of(dialect: str) -> tuple[type[BaseException], ...]:
    if dialect == "duckdb":
        return (duckdb.Error,)
    found = (_loaded(module, name) for module, name in _ENGINE_ERRORS[dialect])
    return tuple(cls for cls in found if cls is not None)


# ---------------------------------------------------------------- results


def _uniform_type(type_: pa.DataType) -> pa.DataType:
    """Integers become int64, floats and non-integral decimals float64, lists list<...>."""
    if pa.types.is_integer(type_):
        return pa.int64()
    if pa.types.is_decimal(type_):
        return pa.int64() if type_.scale == 0 else pa.float64()
    if pa.types.is_floating(type_):
        return pa.float64()
    if pa.types.is_large_string(type_) or pa.types.is_string_view(type_):
        return pa.string()
    if pa.types.is_list(type_) or pa.types.is_large_list(type_) or pa.types.is_fixed_size_list(type_):
        return pa.list_(_uniform_type(type_.value_type))
    return type_


def _uniform(table: pa.Table) -> pa.Table:
    columns = []
    for column in table.columns:
        target = _uniform_type(column.type)
        try:
            columns.append(column.cast(target))
        except pa.ArrowInvalid:  # an integral decimal beyond int64 (a huge sum): keep it as a float
            columns.append(column.cast(pa.float64()))
    return pa.Table.from_arrays(columns, names=table.column_names)


# PostgreSQL type OIDs -> Arrow types, for the types an aggregate query returns
_PG_INT, _PG_FLOAT, _PG_NUMERIC = {20, 21, 23, 26}, {700, 701}, {1700}
_PG_TYPES = {16: pa.bool_(), 25: pa.string(), 1043: pa.string(), 1042: pa.string(), 19: pa.string(),
             **{oid: pa.int64() for oid in _PG_INT}, **{oid: pa.float64() for oid in _PG_FLOAT | _PG_NUMERIC},
             1005: pa.list_(pa.int64()), 1007: pa.list_(pa.int64()), 1016: pa.list_(pa.int64()),
             1021: pa.list_(pa.float64()), 1022: pa.list_(pa.float64()), 1231: pa.list_(pa.float64())}


def _pg_column(values: list, oid: int) -> pa.Array:
    if oid == 1700:  # numeric (e.g. sum of bigint) arrives as Decimal
        values = [None if v is None else float(v) for v in values]
    elif oid == 1231:
        values = [None if v is None else [None if x is None else float(x) for x in v] for v in values]
    target = _PG_TYPES.get(oid)
    try:
        return pa.array(values, type=target)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # e.g. a two-dimensional array: let Arrow infer
        return pa.array(values)


def _fetch_postgres(connection, sql: str) -> pa.Table:
    # psycopg 3: run inside a transaction block (a savepoint when one is open), so a failed query
    # does not leave the caller's connection in an aborted transaction
    block = connection.transaction() if hasattr(connection, "transaction") else None
    cursor = connection.cursor()
    def run():
        cursor.execute(sql)
        if cursor.description is None:  # raised inside the block: a statement run by mistake is rolled back
            raise InputError("fetch_arrow needs a query that returns rows (a SELECT)")
        return cursor.fetchall()

    try:
        if block is not None:
            with block:
                rows = run()
        else:
            rows = run()
        names = [column.name if hasattr(column, "name") else column[0] for column in cursor.description]
        oids = [column.type_code if hasattr(column, "type_code") else column[1] for column in cursor.description]
    finally:
        cursor.close()
    arrays = [_pg_column([row[i] for row in rows], oid) for i, oid in enumerate(oids)]
    return pa.Table.from_arrays(arrays, names=names)


def _fetch_spark(session, sql: str) -> pa.Table:
    frame = session.sql(sql)
    if hasattr(frame, "toArrow"):  # pyspark >= 4
        return frame.toArrow()
    return pa.Table.from_pandas(frame.toPandas(), preserve_index=False)


def _fetch_duckdb(connection, sql: str) -> pa.Table:
    relation = connection.sql(sql)
    if relation is None:
        raise InputError("fetch_arrow needs a query that returns rows (a SELECT)")
    return relation.to_arrow_table()


_FETCH = {"duckdb": _fetch_duckdb, "spark": _fetch_spark, "postgres": _fetch_postgres}


def fetch_arrow(connection, sql: str) -> pa.Table:
    """Run one SELECT on ``connection``'s engine; its result as Arrow with the query's column names.

    Integer columns come back as int64 and floating or decimal ones as float64 (integral decimals,
    such as DuckDB's sum of BIGINT, as int64; PostgreSQL numeric as float64); NULLs stay NULL.
    An error of the engine becomes :class:`EngineError` naming the dialect.
    """
    dialect = dialect_of(connection)
    if not isinstance(sql, str) or not sql.strip():
        raise InputError(f"fetch_arrow needs the SQL text of one query, not {sql!r}")
    try:
        table = _FETCH[dialect](connection, sql)
    except _errors_of(dialect) as error:
        raise _engine_error(dialect, error) from error
    return _uniform(table)


# ---------------------------------------------------------------- loading (tests, benchmarks)


def _is_listlike(type_: pa.DataType) -> bool:
    return pa.types.is_list(type_) or pa.types.is_large_list(type_) or pa.types.is_fixed_size_list(type_)


def _loadable(table: pa.Table, dialect: str) -> tuple[pa.Table, list[str]]:
    """The table with numeric vectors as list<double>, and each column's PostgreSQL type."""
    columns, sql_types = [], []
    for name, column in zip(table.column_names, table.columns):
        type_ = column.type
        if _is_listlike(type_) and (pa.types.is_integer(type_.value_type) or pa.types.is_floating(type_.value_type)
                                    or pa.types.is_decimal(type_.value_type)):
            column, sql_type = column.cast(pa.list_(pa.float64())), "double precision[]"
        elif pa.types.is_integer(type_):
            column, sql_type = column.cast(pa.int64()), "bigint"
        elif pa.types.is_floating(type_) or pa.types.is_decimal(type_):
            column, sql_type = column.cast(pa.float64()), "double precision"
        elif pa.types.is_boolean(type_):
            sql_type = "boolean"
        elif pa.types.is_string(type_) or pa.types.is_large_string(type_):
            column, sql_type = column.cast(pa.string()), "text"
        else:
            raise InputError(f"load_table cannot send column {name!r} of type {type_} to {dialect}; "
                             "it takes numbers, booleans, strings and lists of numbers")
        columns.append(column)
        sql_types.append(sql_type)
    return pa.Table.from_arrays(columns, names=table.column_names), sql_types


# PostgreSQL's binary COPY format: a header, then per row an int16 field count and per field an
# int32 byte length (-1 for NULL) and the value in network byte order; a -1 int16 ends the data.
# Built with numpy and Arrow kernels a column at a time: formatting and parsing decimal text for
# 10^8 doubles would take minutes, binary takes seconds.
_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + (0).to_bytes(4, "big") + (0).to_bytes(4, "big")
_COPY_TRAILER = b"\xff\xff"
_NULL_FIELD = pa.scalar(b"\xff\xff\xff\xff", pa.binary())
_FLOAT8_OID = 701


def _binary(records: np.ndarray) -> pa.Array:
    """A packed numpy record array as an Arrow binary array, one record per value."""
    width = records.dtype.itemsize
    fixed = pa.FixedSizeBinaryArray.from_buffers(pa.binary(width), len(records), [None, pa.py_buffer(records)])
    return fixed.cast(pa.binary())


def _records(*fields: tuple[str, object], size: int) -> np.ndarray:
    records = np.empty(size, dtype=[(name, code) for name, (code, _) in fields])
    for name, (_, value) in fields:
        records[name] = value
    return records


def _scalar_records(values, code: str) -> np.ndarray:
    """Fixed-width values as packed COPY fields: <int32 width><big-endian value>."""
    return _records(("length", (">i4", np.dtype(code).itemsize)), ("value", (code, values)), size=len(values))


def _vector_fields(array: pa.ListArray) -> pa.Array:
    """Lists of doubles as float8[] COPY fields: a 20-byte array header (one dimension, lower
    bound 1; 12 bytes and no dimension for an empty list), then each element as a field."""
    flat = pc.list_flatten(array)
    lengths = pc.fill_null(pc.list_value_length(array), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    elements = _scalar_records(pc.fill_null(flat, 0.0).to_numpy(zero_copy_only=False), ">f8")
    ends = np.concatenate([[0], np.cumsum(lengths)])
    has_null = int(flat.null_count > 0)
    if has_null:  # rare (a bad vector): element by element
        elements = pc.if_else(flat.is_null(), _NULL_FIELD, _binary(elements))
        body = pc.binary_join(pa.ListArray.from_arrays(pa.array(ends.astype(np.int32)), elements), b"")
    else:  # each row's elements are contiguous in the packed buffer: slice it, no copy
        body = pa.BinaryArray.from_buffers(pa.binary(), len(array), [None, pa.py_buffer((ends * 12).astype(np.int32)),
                                                                     pa.py_buffer(elements)])
    size = len(array)
    header = _binary(_records(("length", (">i4", 20 + pc.binary_length(body).to_numpy())), ("ndim", (">i4", 1)),
                              ("flags", (">i4", has_null)), ("oid", (">i4", _FLOAT8_OID)),
                              ("n", (">i4", lengths)), ("lower", (">i4", 1)), size=size))
    empty = pa.scalar(b"".join(v.to_bytes(4, "big") for v in (12, 0, 0, _FLOAT8_OID)), pa.binary())
    header = pc.if_else(pa.array(lengths == 0), empty, header)
    return pc.binary_join_element_wise(header, body, b"")


def _copy_fields(array: pa.Array) -> pa.Array:
    """One column's values as binary COPY fields (length included), NULL as length -1."""
    if pa.types.is_list(array.type):
        fields = _vector_fields(array)
    elif pa.types.is_string(array.type):
        data = array.cast(pa.binary())
        lengths = pc.fill_null(pc.binary_length(data), 0).to_numpy(zero_copy_only=False)
        prefix = _binary(_records(("length", (">i4", lengths)), size=len(array)))
        fields = pc.binary_join_element_wise(prefix, pc.fill_null(data, b""), b"")
    else:
        code = {pa.int64(): ">i8", pa.float64(): ">f8", pa.bool_(): ">u1"}[array.type]
        values = pc.fill_null(array, False if code == ">u1" else 0).to_numpy(zero_copy_only=False)
        fields = _binary(_scalar_records(values, code))
    return pc.if_else(array.is_null(), _NULL_FIELD, fields) if array.null_count else fields


def _copy_chunks(table: pa.Table, chunk_bytes: int = 32_000_000):
    """The binary COPY stream in pieces of about ``chunk_bytes`` of Arrow data (bounded memory)."""
    yield _COPY_HEADER
    count = pa.scalar(len(table.column_names).to_bytes(2, "big"), pa.binary())
    step = max(1, int(chunk_bytes * table.num_rows / max(table.nbytes, 1)))
    for start in range(0, table.num_rows, step):
        chunk = table.slice(start, step)
        fields = [_copy_fields(pa.concat_arrays(column.chunks)) for column in chunk.columns]
        rows = pc.binary_join_element_wise(count, *fields, b"")
        _, offsets, data = rows.buffers()  # the rows, back to back, are the payload
        first, last = np.frombuffer(offsets, np.int32)[[rows.offset, rows.offset + len(rows)]]
        yield memoryview(data)[first:last]
    yield _COPY_TRAILER


def _quoted(name: str, dialect: str) -> str:
    return exp.to_identifier(name, quoted=True).sql(dialect)


def _load_postgres(connection, name: str, table: pa.Table) -> None:
    if not hasattr(connection, "transaction"):
        raise InputError("load_table into PostgreSQL needs a psycopg 3 connection (it uses COPY)")
    table, sql_types = _loadable(table, "postgres")
    target = _quoted(name, "postgres")
    columns = [_quoted(column, "postgres") for column in table.column_names]
    definition = ", ".join(f"{column} {sql_type}" for column, sql_type in zip(columns, sql_types))
    with connection.transaction(), connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {target}")
        cursor.execute(f"CREATE TABLE {target} ({definition})")
        for column, sql_type in zip(columns, sql_types):
            if sql_type.endswith("[]"):  # vectors of doubles do not compress: skip TOAST's attempt
                cursor.execute(f"ALTER TABLE {target} ALTER COLUMN {column} SET STORAGE EXTERNAL")
        with cursor.copy(f"COPY {target} ({', '.join(columns)}) FROM STDIN (FORMAT BINARY)") as copy:
            for payload in _copy_chunks(table):
                copy.write(payload)


_spark_files: Path | None = None


def _spark_directory() -> Path:
    """A directory for the Parquet files behind Spark views, removed when Python exits."""
    global _spark_files
    if _spark_files is None:
        _spark_files = Path(tempfile.mkdtemp(prefix="embsql-spark-"))
        atexit.register(shutil.rmtree, _spark_files, ignore_errors=True)
    return _spark_files


def _load_spark(session, name: str, table: pa.Table) -> None:
    # a Parquet file read back by Spark: bounded memory on both sides, unlike a driver-side
    # DataFrame of the whole table; the view lives as long as the session (and the file)
    table, _ = _loadable(table, "spark")
    path = _spark_directory() / f"{uuid.uuid4().hex}.parquet"
    # row groups of ~64 MB: Spark reads (and splits work) by row group, and a 1M-row group of
    # 384-d vectors (pyarrow's default) is 3 GB for one task
    rows = max(1, int(64_000_000 * table.num_rows / max(table.nbytes, 1)))
    pq.write_table(table, path, row_group_size=rows)
    session.read.parquet(str(path)).createOrReplaceTempView(name)


def _load_duckdb(connection, name: str, table: pa.Table) -> None:
    view = f"embsql_load_{uuid.uuid4().hex}"
    connection.register(view, table)
    try:
        connection.execute(f"CREATE OR REPLACE TABLE {_quoted(name, 'duckdb')} AS SELECT * FROM {_quoted(view, 'duckdb')}")
    finally:
        connection.unregister(view)


_LOAD = {"duckdb": _load_duckdb, "spark": _load_spark, "postgres": _load_postgres}


def load_table(connection, name: str, table: pa.Table) -> None:
    """Create or replace table ``name`` on ``connection``'s engine with the rows of ``table``.

    For tests and benchmarks. Lists of numbers (list, large_list, fixed_size_list) become
    ``array<double>`` in Spark (a temporary view over a Parquet file) and ``double precision[]``
    in PostgreSQL (loaded with COPY); DuckDB takes the Arrow types as they are.
    """
    dialect = dialect_of(connection)
    if not isinstance(name, str) or not name:
        raise InputError(f"load_table needs a table name, not {name!r}")
    if not isinstance(table, pa.Table) or table.num_columns == 0:
        raise InputError(f"load_table needs a pyarrow.Table with at least one column, not {type(table).__name__}")
    try:
        _LOAD[dialect](connection, name, table)
    except _errors_of(dialect) as error:
        raise _engine_error(dialect, error) from error
