"""Running embsql's SQL on DuckDB from Python: an ``embsql: [kind]`` error raised by a macro or UDF
comes back as the catalogue's exception for that kind (embsql.errors), and a call that DuckDB's
binder refuses because it names an argument the function does not take comes back as
``embsql: [argument.unknown]``, an ArgumentError listing the arguments the function takes."""

from __future__ import annotations

import re

import duckdb
import pyarrow as pa

from embsql.errors import EmbsqlError, error, from_sql, sql_message
from embsql.sql_reference import spelled, split_arguments

# DuckDB 2.0's binder, for a macro call whose arguments match no signature:
#   Binder Error: Macro emb_anova() does not support the supplied arguments. ...
#   Candidate macros:
#   \temb_anova(source, group, vector, model := NULL)
_REFUSED_CALL = re.compile(r"Macro (\w+)\(\) does not support the supplied arguments")
_LITERAL = re.compile(r"'(?:[^']|'')*'")
_NAMED = re.compile(r'^\s*("?)(\w+)\1\s*:=')


def run_sql(con: duckdb.DuckDBPyConnection, query: str) -> pa.Table:
    """Run ``query`` and return its result as Arrow.

    An ``embsql: [kind] ...`` error becomes the kind's class (DesignError for ``design.one_group``,
    ...), raised as a subclass of that class and of SqlInputError, so both ``except DesignError``
    and ``except SqlInputError`` catch it; its message is the SQL message's first line.  A call of
    an embsql function with a named argument it does not take raises ``argument.unknown``
    (ArgumentError), listing the arguments the function takes.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        A connection the embsql functions are registered on (``embsql.connect()``).
    query : str
        The SQL to run.

    Returns
    -------
    pyarrow.Table
        The query's result.

    Raises
    ------
    SqlInputError
        An ``embsql: [kind]`` error of a SQL function, as a subclass of the kind's class too
        (``except DesignError`` catches ``design.one_group``).
    ArgumentError
        ``argument.unknown``: a named argument the function does not take.

    Examples
    --------
    >>> import embsql
    >>> con = embsql.connect()
    >>> _ = con.execute("CREATE TABLE ex AS SELECT * FROM (VALUES ('A', [1.0, 0.0]), ('A', [0.8, 0.6]),"
    ...                 " ('B', [0.0, 1.0]), ('B', [-0.6, 0.8])) t(g, v)")
    >>> embsql.run_sql(con, "SELECT round(r2, 4) AS r2 FROM emb_anova('ex', 'g', 'v')").to_pylist()
    [{'r2': 0.8182}]
    >>> try:
    ...     embsql.run_sql(con, "SELECT * FROM emb_anova('ex', 'g', 'v', models := 'm')")
    ... except embsql.ArgumentError as error:
    ...     print(error)
    embsql: [argument.unknown] emb_anova has no argument models :=; it takes: source, "group", vector, model, item, bad_rows
    """
    try:
        return con.sql(query).to_arrow_table()
    except duckdb.InterruptException:
        raise error("query.interrupted", what="the query") from None
    except duckdb.Error as raised:
        message = str(raised)
        if "embsql:" in message:
            raise from_sql(message) from None
        argument = argument_error(query, message)
        if argument is not None:
            raise from_sql(sql_message(argument)) from None
        raise


def argument_error(query: str, message: str) -> EmbsqlError | None:
    """The ArgumentError for a binder error ``message`` that refused a call of ``query`` naming an
    argument its function does not take; None for any other error."""
    refused = _REFUSED_CALL.search(message)
    if refused is None or "Candidate macros:" not in message:
        return None
    function = refused.group(1)
    candidate = re.search(rf"^\t{re.escape(function)}\((.*)\)$", message, re.MULTILINE)
    if candidate is None:
        return None
    takes = [part.partition(":=")[0].strip() for part in split_arguments(candidate.group(1))]
    for name in named_arguments(query, function):
        if name not in takes:
            return error("argument.unknown", name=f"{name} :=", where=function, takes=", ".join(spelled(t) for t in takes))
    return None


def named_arguments(query: str, function: str) -> list[str]:
    """The names of the named arguments (``name := value``) of every call of ``function`` in ``query``."""
    text = _LITERAL.sub("''", query)
    names = []
    for call in re.finditer(rf"\b{re.escape(function)}\s*\(", text, re.IGNORECASE):
        depth, end = 1, call.end()
        while end < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[end], 0)
            end += 1
        for part in split_arguments(text[call.end():end - 1]):
            named = _NAMED.match(part)
            if named:
                names.append(named.group(2).lower())
    return names
