"""embsql's exceptions: one base class and a few kinds, each naming what was wrong.

Every message names the column and, where there is one, the row, group or value at fault.
SQL macros raise DuckDB errors whose message starts with ``embsql:``; the Python API turns
those into :class:`SqlInputError` so that callers catch one family.
"""

from __future__ import annotations


class EmbsqlError(Exception):
    """Base class of every error embsql raises on purpose."""


class InputError(EmbsqlError, ValueError):
    """The data or the arguments cannot give a defined answer."""


class SourceNotFoundError(InputError, LookupError):
    """A table, view or file named as a source does not exist."""


class ColumnNotFoundError(InputError, LookupError):
    """A column named in the call is not in the source."""


class ColumnTypeError(InputError, TypeError):
    """A column has a type the statistic cannot use (e.g. a vector column of strings)."""


class BadVectorError(InputError):
    """A vector is NULL, zero-length, NaN, infinite, or of another dimension than the rest."""


class BadLabelError(InputError):
    """A group label (or id) is NULL or duplicated."""


class DesignError(InputError):
    """The grouping leaves a statistic undefined (one group, n = G, identical vectors)."""


class DistanceTableError(InputError):
    """A distance table is incomplete, inconsistent or has invalid distances."""


class SqlInputError(InputError):
    """An ``embsql:`` error raised inside DuckDB by one of the SQL macros."""


class EngineError(EmbsqlError):
    """Another SQL engine (Spark, PostgreSQL, or DuckDB running transpiled SQL) rejected a query.

    The message names the dialect and gives the engine's own first message line.
    """


class ArgumentError(InputError, TypeError):
    """A public function was called with an argument it does not take, or with one twice."""


class EmbsqlDeprecationWarning(FutureWarning):
    """An old way of calling embsql that still works: the message says what to write instead.

    A FutureWarning, so that it shows in notebooks and scripts, not only under test runners."""
