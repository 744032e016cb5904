"""PostgreSQL as an engine: run one query (Arrow back), load a table by binary COPY.

Vectors are ``double precision[]`` or pgvector's ``vector`` (float32, any length per row unless the
column says ``vector(d)``).  A query runs in a transaction block (a savepoint inside the caller's
transaction) with ``SET LOCAL jit = off`` and a larger ``work_mem``: at 1M x 384 PostgreSQL
JIT-compiled the 390-expression stage-1 aggregate for about 70 s, with no faster code to show for
it, and the hash table of 10,000 groups spilled 2.7 GB to temporary files at the default 4 MB.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from embsql.engines.tables import loadable
from embsql.errors import EngineError, InputError
from embsql.io.portable_sums import version_tuple

if TYPE_CHECKING:   # optional dependencies: only for the annotations
    import psycopg
    import psycopg2.extensions

    # the connections fetch takes (load needs psycopg 3's COPY)
    Connection: TypeAlias = "psycopg.Connection[Any] | psycopg2.extensions.connection"

# per query, inside its transaction block (SET LOCAL ends with it)
SETTINGS = ("SET LOCAL jit = off", "SET LOCAL work_mem = '256MB'")
VECTOR_TYPES = ("double precision[]", "vector", "halfvec")

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


def fetch(connection: Connection, sql: str) -> pa.Table:
    # psycopg 3: run inside a transaction block (a savepoint when one is open), so a failed query
    # does not leave the caller's connection in an aborted transaction
    block = connection.transaction() if hasattr(connection, "transaction") else None
    cursor = connection.cursor()
    def run() -> tuple[list[Any], list[Any]]:
        if block is not None:
            for setting in SETTINGS:
                cursor.execute(setting)
        cursor.execute(sql)
        if cursor.description is None:  # raised inside the block: a statement run by mistake is rolled back
            raise InputError("fetch_arrow needs a query that returns rows (a SELECT)")
        return cursor.fetchall(), list(cursor.description)

    try:
        if block is not None:
            with block:
                rows, description = run()
        else:
            rows, description = run()
        names = [column.name if hasattr(column, "name") else column[0] for column in description]
        oids = [column.type_code if hasattr(column, "type_code") else column[1] for column in description]
    finally:
        cursor.close()
    arrays = [_pg_column([row[i] for row in rows], oid) for i, oid in enumerate(oids)]
    return pa.Table.from_arrays(arrays, names=names)


def extension_version(connection: Connection) -> str | None:
    """The installed pgvector version ("0.6.2"), or None without the extension."""
    rows = fetch(connection, "SELECT extversion FROM pg_extension WHERE extname = 'vector'").column(0).to_pylist()
    return rows[0] if rows else None


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


def _records(*fields: tuple[str, tuple], size: int) -> np.ndarray:
    records = np.empty(size, dtype=[(name, code) for name, (code, _) in fields])
    for name, (_, value) in fields:
        records[name] = value
    return records


def _scalar_records(values: np.ndarray, code: str) -> np.ndarray:
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


def _pgvector_fields(array: pa.ListArray) -> pa.Array:
    """Lists of numbers as pgvector ``vector`` COPY fields: <int32 4 + 4n><int16 n><int16 0>, then n
    big-endian float4 (vector_recv's format)."""
    flat = pc.list_flatten(array)
    lengths = pc.fill_null(pc.list_value_length(array), 0).to_numpy(zero_copy_only=False).astype(np.int64)
    elements = np.ascontiguousarray(pc.fill_null(flat, 0.0).to_numpy(zero_copy_only=False).astype(">f4"))
    ends = np.concatenate([[0], np.cumsum(lengths)]) * 4
    body = pa.BinaryArray.from_buffers(pa.binary(), len(array), [None, pa.py_buffer(ends.astype(np.int32)),
                                                                 pa.py_buffer(elements)])
    header = _binary(_records(("length", (">i4", 4 + 4 * lengths)), ("dim", (">i2", lengths)),
                              ("unused", (">i2", 0)), size=len(array)))
    return pc.binary_join_element_wise(header, body, b"")


def _copy_fields(array: pa.Array, sql_type: str) -> pa.Array:
    """One column's values as binary COPY fields (length included), NULL as length -1."""
    if sql_type == "vector":
        fields = _pgvector_fields(array)
    elif pa.types.is_list(array.type):
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


def _copy_chunks(table: pa.Table, sql_types: list[str], chunk_bytes: int = 32_000_000) -> Iterator[bytes | memoryview]:
    """The binary COPY stream in pieces of about ``chunk_bytes`` of Arrow data (bounded memory)."""
    yield _COPY_HEADER
    count = pa.scalar(len(table.column_names).to_bytes(2, "big"), pa.binary())
    step = max(1, int(chunk_bytes * table.num_rows / max(table.nbytes, 1)))
    for start in range(0, table.num_rows, step):
        chunk = table.slice(start, step)
        fields = [_copy_fields(pa.concat_arrays(column.chunks), sql_type)
                  for column, sql_type in zip(chunk.columns, sql_types)]
        rows = pc.binary_join_element_wise(count, *fields, b"")
        _, offsets, data = rows.buffers()  # the rows, back to back, are the payload
        first, last = np.frombuffer(offsets, np.int32)[[rows.offset, rows.offset + len(rows)]]
        yield memoryview(data)[first:last]
    yield _COPY_TRAILER


def _quoted(name: str) -> str:
    return exp.to_identifier(name, quoted=True).sql("postgres")


def load(connection: Connection, name: str, table: pa.Table, vector_type: str = "double precision[]") -> None:
    """Create table ``name`` by binary COPY; lists of numbers become ``vector_type`` columns.

    pgvector's ``vector`` is sent as float32 (unconstrained: each row keeps its length);
    ``halfvec`` (pgvector 0.7 and later) is loaded as ``vector`` and converted on the server."""
    if not hasattr(connection, "transaction"):
        raise InputError("load_table into PostgreSQL needs a psycopg 3 connection (it uses COPY)")
    if vector_type not in VECTOR_TYPES:
        raise InputError(f"vector_type must be one of {', '.join(VECTOR_TYPES)}, not {vector_type!r}")
    table, sql_types = loadable(table, "postgres")
    vectors = [column for column, sql_type in zip(table.column_names, sql_types) if sql_type.endswith("[]")]
    if vector_type != "double precision[]" and vectors:
        _require_pgvector(connection, vectors[0], vector_type)
        for column in vectors:
            if pc.list_flatten(table.column(column)).null_count:
                raise InputError(f"load_table: vector column {column!r} has a NULL element, which pgvector's "
                                 f"{vector_type} cannot hold")
        sql_types = ["vector" if t.endswith("[]") else t for t in sql_types]
    target = _quoted(name)
    columns = [_quoted(column) for column in table.column_names]
    definition = ", ".join(f"{column} {sql_type}" for column, sql_type in zip(columns, sql_types))
    with connection.transaction(), connection.cursor() as cursor:
        cursor.execute(f"DROP TABLE IF EXISTS {target}")
        cursor.execute(f"CREATE TABLE {target} ({definition})")
        for column, sql_type in zip(columns, sql_types):
            if sql_type.endswith("[]"):  # vectors of doubles do not compress: skip TOAST's attempt
                cursor.execute(f"ALTER TABLE {target} ALTER COLUMN {column} SET STORAGE EXTERNAL")
        with cursor.copy(f"COPY {target} ({', '.join(columns)}) FROM STDIN (FORMAT BINARY)") as copy:
            for payload in _copy_chunks(table, sql_types):
                copy.write(payload)
        if vector_type == "halfvec":
            for column in vectors:
                cursor.execute(f"ALTER TABLE {target} ALTER COLUMN {_quoted(column)} TYPE halfvec "
                               f"USING {_quoted(column)}::halfvec")


def _require_pgvector(connection: Connection, column: str, vector_type: str) -> None:
    version = extension_version(connection)
    if version is None:
        raise EngineError(f"postgres: column {column!r} needs pgvector's {vector_type} type, and this server has "
                          "no vector extension (CREATE EXTENSION vector, as a user allowed to)")
    if vector_type == "halfvec" and version_tuple(version) < (0, 7):
        raise EngineError(f"postgres: column {column!r} needs pgvector's halfvec type, which arrived in pgvector "
                          f"0.7; this server has {version}")
