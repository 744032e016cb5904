"""A minimal qrels reader for the margins: (qid, doc_id, relevance) rows from a table, a Parquet or
CSV file, a DataFrame, or a TREC qrels text file (``qid 0 doc_id relevance`` per line).

Ids are read as text (they are matched to the queries' qids and the documents' doc_ids as text, as
positives are); relevance must be a whole number >= 0.  A NULL, a negative or fractional
relevance, and a (qid, doc_id) pair given twice are errors naming the row.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from pathlib import Path

import duckdb
from sqlglot import exp

from embsql.errors import InputError
from embsql.io.sources import is_file, resolve, shown_name


@dataclass(frozen=True)
class Qrels:
    qids: list[str]
    doc_ids: list[str]
    relevance: list[int]
    name: str


def is_trec_text(source) -> bool:
    """A path to an existing file that is not a table format DuckDB reads by its suffix."""
    return isinstance(source, str) and Path(source).is_file() and not is_file(Path(source).name)


def _trec_rows(path: str) -> tuple[list, list, list]:
    qids, docs, relevance = [], [], []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        fields = line.split()
        if len(fields) != 4:
            raise InputError(f"qrels {path!r} line {number}: expected 'qid iteration doc_id relevance' (4 fields), "
                             f"got {len(fields)}: {line.strip()!r}")
        try:
            value = int(fields[3])
        except ValueError:
            raise InputError(f"qrels {path!r} line {number}: relevance {fields[3]!r} is not a whole number") from None
        qids.append(fields[0])
        docs.append(fields[2])
        relevance.append(value)
    return qids, docs, relevance


def read_qrels(con: duckdb.DuckDBPyConnection, source, *, qid: str = "qid", doc_id: str = "doc_id",
               relevance: str = "relevance") -> Qrels:
    """Read and check qrels (see the module docstring)."""
    if is_trec_text(source):
        qids, docs, values = _trec_rows(source)
        name = source
    else:
        table = resolve(con, source)
        for column, role in ((qid, "qid"), (doc_id, "doc_id"), (relevance, "relevance")):
            table.require(column, role)
        query = exp.select(exp.cast(exp.column(qid, quoted=True), "VARCHAR"),
                           exp.cast(exp.column(doc_id, quoted=True), "VARCHAR"),
                           exp.column(relevance, quoted=True)).from_(table.table.copy())
        rows = con.sql(query.sql("duckdb")).fetchall()
        qids, docs, values = ([r[k] for r in rows] for k in range(3))
        name = shown_name(source)
    seen: set[tuple[str, str]] = set()
    for row, (q, d, value) in enumerate(zip(qids, docs, values), 1):
        where = f"qrels {name!r} row {row} (qid {q!r}, doc_id {d!r})"
        if q is None or d is None:
            raise InputError(f"{where}: qid and doc_id must not be NULL")
        whole = isinstance(value, numbers.Integral) or (isinstance(value, numbers.Real) and float(value).is_integer())
        if isinstance(value, bool) or value is None or not whole or value < 0:
            raise InputError(f"{where}: relevance {value!r} is not a whole number >= 0")
        if (q, d) in seen:
            raise InputError(f"{where}: this (qid, doc_id) pair is given more than once; one judgement each")
        seen.add((q, d))
    if not qids:
        raise InputError(f"qrels {name!r} has no rows")
    return Qrels(list(qids), list(docs), [int(v) for v in values], name)
