"""Builders of small Arrow tables for the tests, and helpers to read SQL results and errors."""

from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest

import embsql
from embsql import sql_reference

TESTS = Path(__file__).resolve().parent      # the tests folder: reference/ and golden/ are here
ROOT = TESTS.parent                            # the checkout



def example_connection():
    """embsql.connect() with the tables the SQL reference's examples read (sql/examples.sql)."""
    con = embsql.connect()
    con.execute(sql_reference.fixtures())
    return con


def public_functions(con) -> dict[str, list[str]]:
    """Every public emb_* SQL function on ``con`` with its parameters (a name twice: more than one signature)."""
    rows = con.sql("SELECT function_name, parameters FROM duckdb_functions() "
                   "WHERE starts_with(function_name, 'emb_') AND NOT starts_with(function_name, 'emb__')").fetchall()
    out: dict[str, list[str]] = {}
    for name, parameters in rows:
        assert name not in out, f"{name} has more than one signature"
        out[name] = parameters
    return out


def sql_rows(con, query):
    return con.sql(query).to_arrow_table().to_pylist()


def sql_error(con, query, *, prefixed=True):
    """The error ``query`` raises: from 'embsql:' on (its first line when ``prefixed``, which also
    requires the prefix), or the whole DuckDB message when there is no such prefix."""
    with pytest.raises(duckdb.Error) as info:
        con.sql(query).fetchall()
    message = str(info.value)
    if prefixed:
        assert "embsql:" in message, message
        return message[message.index("embsql:"):].splitlines()[0]
    return message[message.index("embsql:"):] if "embsql:" in message else message


def vectors_table(vectors: np.ndarray, labels, *, fixed: bool = False, dtype=pa.float64(), **extra) -> pa.Table:
    """An Arrow table with a group column 'g' and a vector column 'v' (list or fixed-size list)."""
    vectors = np.asarray(vectors, dtype=np.float64)
    flat = pa.array(vectors.ravel(), type=dtype)
    if fixed:
        column = pa.FixedSizeListArray.from_arrays(flat, vectors.shape[1])
    else:
        column = pa.ListArray.from_arrays(pa.array(np.arange(0, vectors.size + 1, vectors.shape[1]), pa.int32()), flat)
    return pa.table({**extra, "g": pa.array(list(labels)), "v": column})


def distance_table(points: np.ndarray) -> tuple[pa.Table, pa.Table]:
    """Euclidean distances of ``points`` as an (i, j, d) table for i < j."""
    diff = points[:, None, :] - points[None, :, :]
    dist = np.sqrt(np.einsum("ijk,ijk->ij", diff, diff))
    i, j = np.triu_indices(len(points), 1)
    return pa.table({"i": i, "j": j, "d": dist[i, j]})


def assert_same_rows(got: list[dict], expected: list[dict]) -> None:
    """``got`` has ``expected``'s rows in order: every key of ``expected`` equal (floats to 1e-12 relative)."""
    assert len(got) == len(expected)
    for mine, theirs in zip(got, expected):
        for key, value in theirs.items():
            assert mine[key] == (pytest.approx(value, rel=1e-12, abs=1e-15) if isinstance(value, float) else value), key
