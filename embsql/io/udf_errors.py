"""The one adapter from embsql exceptions to DuckDB errors, for every Python UDF in udfs/.

Use it on each UDF kernel (the function named in its SPECS entry)::

    from embsql.io.udf_errors import sql_errors

    @sql_errors
    def emb__my_kernel(labels, vectors, ...):
        ...          # adapt the Arrow arguments, call embsql.core, build the Arrow result

An embsql exception raised anywhere in the call (any row) leaves DuckDB as
``ValueError("embsql: [kind] message")``, the kind being the catalogue's (embsql.errors); a Ctrl-C
(KeyboardInterrupt, or embsql.io.interrupts' QueryInterrupted) becomes
``embsql: [query.interrupted] ...``.  embsql.run_sql turns either back into the kind's class.
Any other exception is a bug and passes through unchanged.  The kernel itself then holds no
try/except and no message of its own.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from embsql.errors import EmbsqlError, error, sql_message

F = TypeVar("F", bound=Callable[..., Any])


def sql_error(exception: BaseException, *, stopped: str = "the computation") -> ValueError:
    """The DuckDB-bound error for ``exception``: ``ValueError('embsql: [kind] message')``."""
    if isinstance(exception, KeyboardInterrupt):   # Ctrl-C while the kernel ran on the main thread
        exception = error("query.interrupted", what=stopped)
    return ValueError(sql_message(exception))


def sql_errors(function: F | None = None, *, stopped: str = "the computation") -> Any:
    """Decorate a UDF kernel so that embsql errors (and Ctrl-C) reach SQL as ``embsql: [kind] ...``.

    ``@sql_errors`` or ``@sql_errors(stopped="the permutation test")`` (what an interrupt message
    says stopped)."""
    def decorate(kernel: F) -> F:
        @functools.wraps(kernel)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return kernel(*args, **kwargs)
            except (EmbsqlError, KeyboardInterrupt) as exception:
                raise sql_error(exception, stopped=stopped) from None
        return wrapper  # type: ignore[return-value]
    return decorate if function is None else decorate(function)
