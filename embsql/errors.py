"""embsql's exceptions and the catalogue of its checks: each check has a kind, one message template
and one exception class.

Every message names the column and, where there is one, the row, group or value at fault.

* Python raises ``error(kind, **fields)`` (or an exception class directly, which then carries its
  class's own kind, e.g. ``"design"`` for a DesignError raised without a catalogue kind).
* SQL macros and UDFs raise DuckDB errors whose message is ``embsql: [kind] message``; the SQL
  messages of the design checks are generated from CATALOGUE by sql/build.py (``emb__fail_<kind>``
  macros), so both routes word them from the same template.
* :func:`embsql.run_sql` maps ``[kind]`` back to the catalogue's class.  The exception it raises is
  a subclass of both that class and :class:`SqlInputError` (``sql_class``), so ``except DesignError``
  catches the one-group error from Python and from SQL alike, and ``except SqlInputError`` still
  catches every error a SQL macro raised.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import NoReturn


class EmbsqlError(Exception):
    """Base class of every error embsql raises on purpose.

    ``kind`` names the check that failed (a key of CATALOGUE, or the class's own kind when the
    error was raised without one)."""

    kind = "embsql"

    def __init__(self, *args: object, kind: str | None = None) -> None:
        super().__init__(*args)
        if kind is not None:
            self.kind = kind


class InputError(EmbsqlError, ValueError):
    """The data or the arguments cannot give a defined answer."""

    kind = "input"


class SourceNotFoundError(InputError, LookupError):
    """A table, view or file named as a source does not exist."""

    kind = "source.missing"


class ColumnNotFoundError(InputError, LookupError):
    """A column named in the call is not in the source."""

    kind = "column.missing"


class ColumnTypeError(InputError, TypeError):
    """A column has a type the statistic cannot use (e.g. a vector column of strings)."""

    kind = "column.type"


class BadVectorError(InputError):
    """A vector is NULL, zero-length, NaN, infinite, or of another dimension than the rest."""

    kind = "vector"


class BadLabelError(InputError):
    """A group label (or id) is NULL or duplicated."""

    kind = "label"


class DesignError(InputError):
    """The grouping leaves a statistic undefined (one group, n = G, identical vectors)."""

    kind = "design"


class DistanceTableError(InputError):
    """A distance table is incomplete, inconsistent or has invalid distances."""

    kind = "distance"


class SqlInputError(InputError):
    """An ``embsql:`` error raised inside DuckDB by one of the SQL macros or UDFs.

    ``embsql.run_sql`` raises a subclass of this and of the kind's class (see ``sql_class``)."""

    kind = "input"


class ArgumentError(InputError, TypeError):
    """A public function was called with an argument it does not take, or with one twice."""

    kind = "argument"


class EngineError(EmbsqlError):
    """Another SQL engine (Spark, PostgreSQL, or DuckDB running transpiled SQL) rejected a query.

    The message names the dialect and gives the engine's own first message line.
    """

    kind = "engine"


@dataclass(frozen=True)
class Check:
    """One entry of the catalogue: the exception class and the message template (str.format fields)."""

    error: type[EmbsqlError]
    template: str

    def fields(self) -> list[str]:
        """The template's field names, in order (the parameters of its generated SQL macro)."""
        return re.findall(r"{(\w+)(?::[^}]*)?}", self.template)


_VECTOR = "vector column {column} has a {word} vector at {where}; vectors must be non-NULL, finite and of non-zero length"
_ARGUMENT = "{name} must be {rule}, not {value}"

# kind -> Check.  The design kinds are also SQL macros (sql/build.py); the other SQL messages carry
# their kind and say the same thing in place (tests/api/test_catalogue.py holds both to this table).
CATALOGUE: dict[str, Check] = {
    # ---- the design: the grouping leaves the statistic undefined
    "design.one_group": Check(DesignError, "{subject} has only one group{where}: {needs} needs at least two"),
    "design.no_residual_df": Check(
        DesignError, "every group{within} has one {unit} (n = G = {n}{where}): no within-group degrees of "
                     "freedom, so {undefined} are undefined"),
    "design.identical": Check(
        DesignError, "{what}{whose} are identical to within floating-point precision (root-mean-square spread "
                     "{spread:.2g} < {resolution:.2g}); {undefined} undefined"),
    "design.zero_distances": Check(DesignError, "every distance is 0 (SS_T = 0): {undefined} undefined"),
    "design.equal_values": Check(
        DesignError, "all {n} values in {column} are equal (MS_B + (n0-1) MS_W = 0{where}): ICC is undefined"),
    "design.min_groups": Check(DesignError, "the {what} needs at least {minimum} groups{why}"),
    "design.undefined_statistic": Check(
        DesignError, "{stat} is undefined on these groups (fewer than 2 groups, as many groups as items, or "
                     "no variation)"),
    "design.undefined_replicates": Check(
        DesignError, "{bad} of {total} {what} replicates leave the statistic undefined (too few groups, or a "
                     "replicate with no within-group variation)"),
    "design.dropped_resamples": Check(
        DesignError, "{dropped} of {total} bootstrap resamples leave the statistic undefined (more than "
                     "{share}), so no interval: too few groups, or too many groups of one item"),
    "design.k_items": Check(
        DesignError, "k = {k} neighbours needs more than k {what}, but there are {n}{whose}; choose k below {n}"),
    "design.k_jackknife": Check(
        DesignError, "k = {k} needs at least k + 2 = {need} items (each item has n - 1 = {others} other items, and the "
                     "jackknife deletes one); there are {n}"),
    "design.empty_split": Check(
        DesignError, "split column {column} has no {side} items{whose}: a train/test classification needs both"),
    "design.debiased_hsic": Check(
        DesignError, "the debiased CKA{whose} is undefined: the unbiased HSIC of model {model} with itself is {value} "
                     "<= 0 on these {n} items"),
    "design.no_distractor": Check(
        DesignError, "query {query}{whose}: scope {scope} leaves it no distractor (its positive {positive} is the "
                     "only document{where})"),
    # ---- vectors
    "vector.null": Check(BadVectorError, _VECTOR),
    "vector.null_element": Check(BadVectorError, _VECTOR),
    "vector.zero": Check(BadVectorError, _VECTOR),
    "vector.nonfinite": Check(BadVectorError, _VECTOR),
    "vector.length": Check(
        BadVectorError, "vector column {column} has a vector of length {length} at {where}; other vectors have "
                        "length {other}, and every vector must have the same length"),
    "vector.dimension": Check(
        BadVectorError, "query vectors ({column}) have dimension {dimension} but document vectors ({doc_column}) "
                        "have dimension {doc_dimension}{whose}; queries and documents must be embedded by the "
                        "same model"),
    # ---- labels, ids and models
    "label.null": Check(
        BadLabelError, "{role} column {column} has a {word} label{where}; every row needs a label (filter those "
                       "rows out, or give them one)"),
    "label.duplicate": Check(BadLabelError, "id {id} appears more than once in {source}"),
    "label.unknown_positive": Check(
        BadLabelError, "query {query}{whose} has positive {positive}, which is not a doc_id of {docs}"),
    "item.missing": Check(
        InputError, "item {item} has a prediction from model {has} but not from model {lacks} in {source} ({count} "
                    "such items); models are compared on the same items"),
    "pair.same_item": Check(
        InputError, "pair at row {row} of {source} has item {item} as both {a} and {b}; a pair must compare two "
                    "different items"),
    "pair.no_vector": Check(
        InputError, "item {item} ({column} at row {row} of pairs {source}) has no vector in model {model} of "
                    "{embeddings}; pass {option} to leave out the pairs whose items lack a vector"),
    "pair.too_few": Check(DesignError, "{what} has {pairs} pair(s); a correlation needs at least {minimum}"),
    "pair.constant": Check(
        DesignError, "{what}: {name} is the same on every pair ({value}), so no correlation is defined"),
    "model.missing": Check(InputError, "model {model} is in {side} {source} but not in {other_side} {other}"),
    "model.too_few": Check(InputError, "{column} has {models} model(s); {needs} needs at least two"),
    "model.unpaired_groups": Check(
        InputError, "models {models} do not have the same groups ({example}), so a ranking cannot pair them by group"),
    "model.reference": Check(InputError, "reference {reference} is not a model of model column {column}; its models "
                                         "are {models}"),
    # ---- columns and sources
    "column.missing": Check(ColumnNotFoundError, "{role} column {column} not found in {source}{hint}"),
    "column.type": Check(ColumnTypeError, "{role} column {column} in {source} has type {type}: {hint}"),
    "source.empty": Check(InputError, "source {source} has no rows"),
    "value.null": Check(InputError, "{role} column {column} has {count} NULL value(s){where}"),
    "value.nonfinite": Check(InputError, "{role} column {column} has {count} {word} value(s){where}"),
    "value.split": Check(
        InputError, "split column {column} has {value} at {where}; its values must be 'train' or 'test'"),
    "value.relevance": Check(
        InputError, "relevance column {column} has {value} at {where}; relevance must be a whole number of 0 or more"),
    # ---- retrieval metrics
    "metric.unknown": Check(
        InputError, "unknown metric {metric}; metrics are {names} with a cutoff k of 1 or more, e.g. 'ndcg@10'"),
    "metric.repeated": Check(InputError, "metric {metric} is named twice"),
    "metric.empty": Check(InputError, "metrics is empty; name at least one, e.g. ['ndcg@10']"),
    "metric.absent": Check(InputError, "{what} has no rows for metric {metric}; its metrics are: {shown}"),
    # ---- distance tables (emb_anova_dist, emb_permanova_dist)
    "distance.null_id": Check(DistanceTableError, "distance table {source} has a NULL id in {first} or {second}"),
    "distance.invalid": Check(DistanceTableError, "distance for pair ({i}, {j}) in column {column} is {problem}"),
    "distance.self": Check(DistanceTableError, "distance of id {id} to itself is {distance}, not 0"),
    "distance.asymmetric": Check(
        DistanceTableError, "pair ({i}, {j}) is given in both orders with different distances ({d} and {other})"),
    "distance.unlabelled": Check(DistanceTableError, "id {id} in distance table {source} has no label in {labels}"),
    "distance.incomplete": Check(
        DistanceTableError, "distance table {source} has {pairs} distinct pairs, but {n} labelled ids need "
                            "{needed}: missing pair(s), e.g. {example}"),
    # ---- arguments
    "argument.permutations": Check(InputError, _ARGUMENT),
    "argument.seed": Check(InputError, _ARGUMENT),
    "argument.stop_after": Check(InputError, _ARGUMENT),
    "argument.replicates": Check(InputError, _ARGUMENT),
    "argument.level": Check(InputError, _ARGUMENT),
    "argument.statistic": Check(InputError, _ARGUMENT),
    "argument.stat": Check(InputError, "statistic must be one of {names}, not {value}"),
    "argument.null_method": Check(InputError, _ARGUMENT),
    "argument.scope": Check(InputError, _ARGUMENT),
    "argument.range": Check(InputError, "{name} must be in {interval}, got {name} = {value}"),
    "argument.k": Check(InputError, _ARGUMENT),
    "argument.interrupt": Check(InputError, _ARGUMENT),
    "argument.sums": Check(InputError, _ARGUMENT),
    "argument.bad_rows": Check(InputError, _ARGUMENT),
    "argument.permute": Check(InputError, _ARGUMENT),
    "argument.missing": Check(InputError, _ARGUMENT),
    "argument.p_adjust": Check(InputError, _ARGUMENT),
    "argument.intervals": Check(InputError, _ARGUMENT),
    # a named argument a SQL function does not take (DuckDB's binder error, turned by embsql.run_sql)
    "argument.unknown": Check(ArgumentError, "{where} has no argument {name}; it takes: {takes}"),
    "column.collision": Check(
        InputError, "model column {column} has the name of one of {function}'s output columns (the output keeps "
                    "the model column's name); rename it, e.g. SELECT {column} AS model_name"),
    "column.reserved": Check(
        InputError, "{role} column {column} {rule}, which {function} keeps for its own columns; rename it, "
                    "e.g. SELECT {column} AS {role}_name"),
    # ---- the query itself
    "query.interrupted": Check(EmbsqlError, "the query was interrupted; {what} stopped"),
    # a function of sql/python/ called where only sql/embsql.sql was read (the stock DuckDB CLI)
    "query.needs_python": Check(
        EmbsqlError, "{name} needs the Python package: run it through embsql.connect() or embsql report"),
}

# What a NULL, zero or non-finite vector is called in messages (both routes) -> its kind
VECTOR_KINDS = {"NULL": "vector.null", "NULL-element": "vector.null_element", "zero-length": "vector.zero",
                "NaN": "vector.nonfinite", "infinite": "vector.nonfinite"}


# ---- how a message suggests an argument, spelled for the surface the call came through
SURFACES = ("python", "sql", "cli")
_SURFACE: ContextVar[str] = ContextVar("embsql_surface", default="python")
# the command line's flags for an argument and value (other arguments are settings of the --config file)
CLI_FLAGS = {("bad_rows", "skip"): "--skip-bad-rows", ("parse_vectors", True): "--parse-vectors"}
# the table of the --config file an argument without a flag is set in (the report's settings)
CLI_TABLES = {"missing": "report.similarity"}


@contextmanager
def spoken_in(surface: str) -> Iterator[None]:
    """Within the block, :func:`option` spells arguments for ``surface`` (the UDFs: "sql"; the command
    line: "cli"; by default "python")."""
    if surface not in SURFACES:
        raise ValueError(f"surface must be one of {SURFACES}, not {surface!r}")
    token = _SURFACE.set(surface)
    try:
        yield
    finally:
        _SURFACE.reset(token)


def option(name: str, value: object) -> str:
    """How a message tells the user to pass argument ``name`` with ``value``, on the current surface.

    >>> option("common", True), option("missing", "skip")
    ('common=True', "missing='skip'")
    >>> with spoken_in("sql"):
    ...     option("common", True), option("missing", "skip")
    ('common := true', "missing := 'skip'")
    >>> with spoken_in("cli"):
    ...     print(option("bad_rows", "skip"), option("missing", "skip"), sep="; ")
    --skip-bad-rows; missing = "skip" in the --config file's [report.similarity]
    """
    surface = _SURFACE.get()
    if surface == "python":
        return f"{name}={value!r}"
    if isinstance(value, bool):
        literal = str(value).lower()
    elif isinstance(value, str):
        literal = "'" + value.replace("'", "''") + "'" if surface == "sql" else '"' + value.replace('"', '\\"') + '"'
    else:
        literal = str(value)
    if surface == "sql":
        return f"{name} := {literal}"
    flag = CLI_FLAGS.get((name, value))
    if flag is not None:
        return flag
    table = CLI_TABLES.get(name)
    return f"{name} = {literal} in the --config file" + (f"'s [{table}]" if table else "")


def error(kind: str, **fields: object) -> EmbsqlError:
    """The exception for check ``kind``, its message the kind's template filled with ``fields``.

    >>> str(error("source.empty", source="'t'"))
    "source 't' has no rows"
    """
    check = CATALOGUE[kind]
    return check.error(check.template.format(**fields), kind=kind)


def fail(kind: str, **fields: object) -> NoReturn:
    """Raise ``error(kind, **fields)``."""
    raise error(kind, **fields)


def sql_message(exception: BaseException) -> str:
    """The text a SQL error carries for an embsql exception: ``embsql: [kind] message``."""
    kind = getattr(exception, "kind", EmbsqlError.kind)
    return f"embsql: [{kind}] {exception}"


_FAMILIES: dict[str, type[EmbsqlError]] = {
    cls.kind: cls for cls in (InputError, SourceNotFoundError, ColumnNotFoundError, ColumnTypeError, BadVectorError,
                              BadLabelError, DesignError, DistanceTableError, EngineError)}
_SQL_CLASSES: dict[type[EmbsqlError], type[SqlInputError]] = {}


def class_of(kind: str) -> type[EmbsqlError]:
    """The exception class of ``kind``: the catalogue's, else the class whose own kind (or family,
    the part before the dot) it is, else InputError."""
    if kind in CATALOGUE:
        return CATALOGUE[kind].error
    return _FAMILIES.get(kind) or _FAMILIES.get(kind.split(".")[0]) or InputError


def sql_class(cls: type[EmbsqlError]) -> type[SqlInputError]:
    """``cls`` as raised from SQL: a subclass of both ``cls`` and SqlInputError (one per class)."""
    if issubclass(cls, SqlInputError):
        return cls
    if issubclass(SqlInputError, cls):           # InputError, EmbsqlError: SqlInputError is one already
        return SqlInputError
    if cls not in _SQL_CLASSES:
        bases = (cls, SqlInputError)
        name = f"Sql{cls.__name__}"
        _SQL_CLASSES[cls] = type(name, bases, {"__module__": __name__, "__qualname__": name,
                                               "__doc__": f"A {cls.__name__} raised by embsql's SQL."})
        globals()[name] = _SQL_CLASSES[cls]   # so that it pickles
    return _SQL_CLASSES[cls]


SQL_MESSAGE = re.compile(r"embsql: \[([\w.]+)\] (.*)")


def from_sql(message: str) -> EmbsqlError:
    """The exception for the first ``embsql:`` line of a DuckDB error message.

    Its text stays the SQL message (``embsql: [kind] ...``); its kind and class come from the tag
    (a message without one is a plain SqlInputError)."""
    line = message[message.index("embsql:"):].splitlines()[0]
    match = SQL_MESSAGE.match(line)
    if match is None:
        return SqlInputError(line)
    return sql_class(class_of(match.group(1)))(line, kind=match.group(1))

