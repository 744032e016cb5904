"""The retrieval tables as the faces take them: Queries, Docs, Qrels and Run.

Each is a small frozen description of one table, as ranx's ``Qrels`` and ``Run`` are: its source (a
table or view, a Parquet/CSV/JSON file, ``FILE.duckdb:TABLE``, a Lance or Hugging Face dataset, a
pandas/polars/Arrow object or an embsql ResultTable; see embsql.io.sources) and the names of its
columns.  Every retrieval face takes a spec or a plain source, which is the spec with the default
names: ``margins(con, "q", "d")`` is ``margins(con, Queries("q"), Docs("d"))``.  The fields are
checked when a spec is made; that the columns exist is checked when a face reads them, naming the
table and the column.

The model column is not a field: it is the face's ``model=``, one column name for both tables, and the
output keeps that name, as ``GROUP BY`` would (:func:`model_table`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar, NamedTuple, TypeVar

import duckdb
import pyarrow as pa

from embsql.errors import InputError
from embsql.io.columns import check_reserved
from embsql.io.sources import describe, local_source
from embsql.result_table import ResultTable
from embsql.vocabulary import check_model_name

T = TypeVar("T", bound="Table")


@dataclass(frozen=True)
class Table:
    """What the four specs share: a source, and column names that are checked when a spec is made."""

    source: object
    OPTIONAL: ClassVar[tuple[str, ...]] = ()        # the fields that may be None

    def __post_init__(self) -> None:
        kind = type(self).__name__
        empty = self.source is None or (isinstance(self.source, str) and not self.source)
        if empty or isinstance(self.source, Table):
            shown = repr(self.source) if empty else f"a {type(self.source).__name__}"
            raise InputError(f"{kind}(source, ...): source must be a table, view or file name, a DataFrame, an Arrow "
                             f"table or a ResultTable, not {shown}")
        named: dict[str, str] = {}
        for field in dataclasses.fields(self)[1:]:
            column = getattr(self, field.name)
            if column is None and field.name in self.OPTIONAL:
                continue
            if not isinstance(column, str) or not column:
                raise InputError(f"{kind}({field.name}=...) must be a column name (a non-empty string), not {column!r}")
            if column in named:
                raise InputError(f"{kind}: {named[column]}= and {field.name}= both name column {column!r}; each role "
                                 "needs a column of its own")
            named[column] = field.name

    def columns(self) -> dict[str, str | None]:
        """The column fields by name (``source`` left out), e.g. for a report's meta."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)[1:]}

    @contextmanager
    def on(self: T, con: duckdb.DuckDBPyConnection) -> Iterator[T]:
        """This spec with its source as a name on ``con`` (embsql.io.sources.local_source): an in-memory
        object is registered for the length of the ``with`` block, ``FILE.duckdb:TABLE`` attached."""
        with local_source(con, arrow_of(self.source)) as name:
            yield dataclasses.replace(self, source=name)


@dataclass(frozen=True)
class Queries(Table):
    """A queries table: one row per query (and per model, with a model column).

    Parameters
    ----------
    source : str or DataFrame or Arrow table
        The table (see :class:`Table` for what a source may be).
    qid : str, default "qid"
        The query id column (text or numbers; ids are matched as text).
    vector : str, default "vector"
        The query vector column (FLOAT[], DOUBLE[], FLOAT[d] or DOUBLE[d]); vectors are scaled to unit length.
    group : str, default "group"
        The paraphrase-group column: which queries ask the same question (read by the faces that
        need it: summaries, pairing, dose, the layers, and compare_retrieval).
    positive : str, default "positive"
        The id of each query's one relevant document (read by margins and the summaries when no qrels
        are given).
    strength : str or None, default None
        The paraphrase-strength column, an ordered dose level (read by dose, which needs it, and by
        retrieval_layers, which adds the dose section when it is given).

    Raises
    ------
    InputError
        A field that is not a non-empty string (``strength`` may be None), two fields naming one
        column, or no source.

    Examples
    --------
    >>> import embsql
    >>> embsql.Queries("queries.parquet", qid="id", strength="level").strength
    'level'
    >>> embsql.Queries("q", qid="")
    Traceback (most recent call last):
    ...
    embsql.errors.InputError: Queries(qid=...) must be a column name (a non-empty string), not ''
    """

    qid: str = "qid"
    vector: str = "vector"
    group: str = "group"
    positive: str = "positive"
    strength: str | None = None
    OPTIONAL: ClassVar[tuple[str, ...]] = ("strength",)


@dataclass(frozen=True)
class Docs(Table):
    """A documents table: one row per document (and per model, with a model column).

    Parameters
    ----------
    source : str or DataFrame or Arrow table
        The table.
    doc_id : str, default "doc_id"
        The document id column (matched to the queries' positives and the qrels as text).
    vector : str, default "vector"
        The document vector column.
    group : str, default "group"
        The topic-group column: read by ``scope="group"`` (the distractors are the other documents of
        the positive's group), by dose (W~_g) and by retrieval_layers (the document-structure layer).

    Raises
    ------
    InputError
        A field that is not a non-empty string, two fields naming one column, or no source.

    Examples
    --------
    >>> import embsql
    >>> embsql.Docs("docs.parquet", doc_id="id", vector="embedding").columns()
    {'doc_id': 'id', 'vector': 'embedding', 'group': 'group'}
    """

    doc_id: str = "doc_id"
    vector: str = "vector"
    group: str = "group"


@dataclass(frozen=True)
class Qrels(Table):
    """Relevance judgements: one row per judged (query, document) pair.

    Parameters
    ----------
    source : str or DataFrame or Arrow table
        A table or a Parquet/CSV file with the three columns, or a TREC qrels text file
        (``qid 0 doc_id relevance`` per line; its fields are fixed, so the column names must be the defaults).
    qid : str, default "qid"
        The query id column.
    doc_id : str, default "doc_id"
        The document id column.
    relevance : str or None, default "relevance"
        The relevance grade column, a whole number of 0 or more (relevant: at least 1, or the
        face's ``relevance_threshold``).  None: every row is one relevant document with grade 1,
        e.g. a queries table's positive column, ``Qrels(queries, doc_id="positive", relevance=None)``.

    Raises
    ------
    InputError
        A field that is not a non-empty string (``relevance`` may be None), two fields naming one
        column, or no source.

    Examples
    --------
    >>> import embsql
    >>> embsql.Qrels("qrels.txt").columns()
    {'qid': 'qid', 'doc_id': 'doc_id', 'relevance': 'relevance'}
    """

    qid: str = "qid"
    doc_id: str = "doc_id"
    relevance: str | None = "relevance"
    OPTIONAL: ClassVar[tuple[str, ...]] = ("relevance",)


@dataclass(frozen=True)
class Run(Table):
    """A ranked run: one row per (query, retrieved document) with its score (rank 1 = highest score).

    Parameters
    ----------
    source : str or DataFrame or Arrow table or ResultTable
        retrieve's result, a table or a Parquet/CSV file, or a TREC run file (``qid Q0 doc_id rank
        score tag`` per line; its fields are fixed, and its tag column is called ``tag``).
    qid : str, default "qid"
        The query id column.
    doc_id : str, default "doc_id"
        The document id column.
    score : str, default "score"
        The score column (larger is better).  A run's own rank column is not read: documents are
        ranked by score descending, then doc_id descending as text, as trec_eval does.

    Raises
    ------
    InputError
        A field that is not a non-empty string, two fields naming one column, or no source.

    Examples
    --------
    >>> import embsql
    >>> embsql.Run("run.parquet", score="similarity").score
    'similarity'
    """

    qid: str = "qid"
    doc_id: str = "doc_id"
    score: str = "score"


def as_table(value: object, kind: type[T], role: str) -> T:
    """``value`` as a ``kind`` spec: itself, or a plain source with the default column names; another
    kind of spec (Docs where Queries belong) is refused, naming both."""
    if isinstance(value, kind):
        return value
    if isinstance(value, Table):
        raise InputError(f"{role} must be a {kind.__name__} or a source, not a {type(value).__name__}")
    return kind(value)


def arrow_of(source: object) -> object:
    """A ResultTable as an Arrow table (column by column, without a row-wise copy); any other source as it is."""
    if isinstance(source, ResultTable):
        return pa.table({c: pa.array(source.column(c)) for c in source.columns})
    return source


def shown(source: object) -> str:
    """How a message names a source: its name, or e.g. "pyarrow Table (600 rows)"."""
    return describe(arrow_of(source))


def check_model(model: str | None, output: Iterable[str], function: str) -> None:
    """Refuse a ``model=`` that is not a column name, or one named like an output column of ``function``
    (kind column.collision): the output keeps the model column's name."""
    if model is not None and (not isinstance(model, str) or not model):
        raise InputError(f"model must be a column name (a non-empty string) or None, not {model!r}")
    check_reserved(model, function)
    check_model_name(model, output, function)


def model_table(title: str, model: str | None, columns: tuple[str, ...],
                rows: Iterable[Mapping[str, object]]) -> ResultTable:
    """A face's result: the model column first, under the input column's name (absent without a model
    column), then ``columns``.  ``rows`` carry the model's value under the key "model"."""
    if model is None:
        return ResultTable(title, columns, tuple(tuple(row[c] for c in columns) for row in rows))
    return ResultTable(title, (model, *columns), tuple((row["model"], *(row[c] for c in columns)) for row in rows))


# The report's retrieval settings (Report(retrieval={...}), a TOML file's [report.retrieval]): one key per
# column of the three tables, and the layers' options scope and alpha; Report checks the keys when it is made.
REPORT_OPTIONS = ("qid", "group", "strength", "positive", "vector", "doc_id", "doc_group", "doc_vector", "relevance",
                  "scope", "alpha")


class ReportTables(NamedTuple):
    """The report's retrieval tables as specs, and the layers' two options."""

    queries: Queries
    docs: Docs
    qrels: Qrels | None
    scope: str
    alpha: float


def report_tables(queries: object, docs: object, qrels: object | None, options: Mapping[str, object]) -> ReportTables:
    """The report's retrieval tables from its settings (keys of REPORT_OPTIONS): ``vector`` names both
    tables' vector column unless ``doc_vector`` names the documents', ``qid`` and ``doc_id`` are the
    qrels' too, and ``relevance`` is the qrels' alone."""
    given: dict[str, Any] = {key: value for key, value in options.items() if value is not None}
    pick = lambda *names: {field: given[key] for key, field in names if key in given}   # the spec checks the values
    spec_queries = Queries(queries, **pick(("qid", "qid"), ("group", "group"), ("strength", "strength"),
                                           ("positive", "positive"), ("vector", "vector")))
    spec_docs = Docs(docs, **pick(("doc_id", "doc_id"), ("doc_group", "group"),
                                  ("doc_vector" if "doc_vector" in given else "vector", "vector")))
    spec_qrels = None if qrels is None else Qrels(qrels, **pick(("qid", "qid"), ("doc_id", "doc_id"),
                                                                ("relevance", "relevance")))
    alpha = given.get("alpha", 0.05)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)):
        raise InputError(f"report: the retrieval setting alpha must be a number between 0 and 1, not {alpha!r}")
    return ReportTables(spec_queries, spec_docs, spec_qrels, str(given.get("scope", "corpus")), float(alpha))
