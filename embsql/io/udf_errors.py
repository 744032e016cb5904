"""The one adapter from embsql exceptions to SQL errors, for every Python UDF in udfs/.

DuckDB 2.0 wraps every exception a Python UDF raises, of any type (``ValueError``,
``duckdb.InvalidInputException`` ...), as ``Invalid Input Error: Python exception occurred while
executing the UDF: <type>: <message>``.  So a kernel does not raise: decorated with
:func:`sql_errors`, it returns ``STRUCT(error VARCHAR, value <its result>)`` (declare the return
type with :func:`result_type`).  ``error`` is NULL, or ``embsql: [kind] message`` for an embsql
exception raised anywhere in the call (every row of the chunk carries it), and the macro calling
the kernel raises it with SQL's ``error()`` (``emb__udf_ok`` in sql/python/50_udf_results.sql), so
the message reads ``Invalid Input Error: embsql: [kind] message``, as every macro's error does::

    from embsql.io.udf_errors import result_type, sql_errors

    @sql_errors
    def emb__my_kernel(labels, vectors, ...):
        ...          # adapt the Arrow arguments, call embsql.core, build the Arrow result

    SPECS = [{"name": "emb__my_kernel", "function": emb__my_kernel, ..., "return_type": result_type("DOUBLE")}]

A Ctrl-C (KeyboardInterrupt, or embsql.io.interrupts' QueryInterrupted) becomes
``embsql: [query.interrupted] ...``.  embsql.run_sql turns any of them back into the kind's class.
Any other exception is a bug and passes through unchanged.  The kernel itself then holds no
try/except and no message of its own.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import pyarrow as pa

from embsql.errors import EmbsqlError, error, spoken_in, sql_message
from embsql.io.interrupts import kernel_running

F = TypeVar("F", bound=Callable[..., Any])


def result_type(value_type: str) -> str:
    """The SQL return type of a kernel whose result has type ``value_type``."""
    return f"STRUCT(error VARCHAR, value {value_type})"


def sql_error(exception: BaseException, *, stopped: str = "the computation") -> str:
    """The ``embsql: [kind] message`` text a UDF hands to SQL for ``exception``."""
    if isinstance(exception, KeyboardInterrupt):   # Ctrl-C while the kernel ran on the main thread
        exception = error("query.interrupted", what=stopped)
    return sql_message(exception)


def _result(error_text: str | None, value: pa.Array | None, rows: int) -> pa.StructArray:
    """The STRUCT(error, value) array of a chunk of ``rows`` rows."""
    if isinstance(value, pa.ChunkedArray):
        value = value.combine_chunks()
    errors = pa.array([error_text] * rows, pa.string())
    return pa.StructArray.from_arrays([errors, pa.nulls(rows) if value is None else value], names=["error", "value"])


def sql_errors(function: F | None = None, *, stopped: str = "the computation") -> Any:
    """Decorate a UDF kernel so that its result travels as STRUCT(error, value) and embsql errors (and
    Ctrl-C) reach SQL as ``embsql: [kind] ...``.

    ``@sql_errors`` or ``@sql_errors(stopped="the permutation test")`` (what an interrupt message
    says stopped)."""
    def decorate(kernel: F) -> F:
        @functools.wraps(kernel)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            rows = len(args[0])
            try:
                with kernel_running(), spoken_in("sql"):   # (a message suggests `name := value`)
                    value = kernel(*args, **kwargs)
            except (EmbsqlError, KeyboardInterrupt) as exception:
                return _result(sql_error(exception, stopped=stopped), None, rows)
            return _result(None, value, rows)
        return wrapper  # type: ignore[return-value]
    return decorate if function is None else decorate(function)
