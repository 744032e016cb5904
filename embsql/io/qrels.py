"""Relevance judgements (qrels): read and check them.

A qrels source (embsql.io.retrieval_tables.Qrels) is a table or view, a Parquet or CSV file (columns
qid, doc_id, relevance), a TREC qrels text file (``qid 0 doc_id relevance`` per line,
whitespace-separated), or in-memory frames (see embsql.io.sources).  Without a relevance column
(``Qrels(queries, doc_id="positive", relevance=None)``) each distinct pair is one relevant document
with relevance 1: the shorthand of a queries table's positive column.

Rules: ids are compared as text (as the retrieval functions match positives); relevance is a
whole number >= 0 (1.0 is accepted as 1, 1.5 is refused); no NULLs; each (qid, doc_id) once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from embsql.errors import BadLabelError, ColumnTypeError, InputError, fail, option
from embsql.io.retrieval_tables import Qrels
from embsql.io.sources import resolve

_NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT",
            "FLOAT", "DOUBLE", "REAL")


@dataclass(frozen=True)
class Judgements:
    """Qrels as read: text ids and int64 relevance, checked; ``source`` names them in messages."""

    qid: pa.Array
    doc_id: pa.Array
    relevance: np.ndarray
    source: str

    def __len__(self) -> int:
        return len(self.relevance)

    def filter(self, mask: np.ndarray) -> Judgements:
        keep = pa.array(mask)
        return Judgements(self.qid.filter(keep), self.doc_id.filter(keep), self.relevance[mask], self.source)


def is_trec_text(name: object) -> bool:
    """A path to an existing file that is not Parquet/CSV/JSON: read as TREC text."""
    return isinstance(name, str) and Path(name).is_file() and not _tabular(name)


def _tabular(name: str) -> bool:
    return name.lower().rsplit(".", 2)[-1] in ("parquet", "csv", "tsv", "json", "jsonl", "ndjson") or \
        name.lower().endswith((".csv.gz", ".parquet.gz", ".csv.zst"))


def read_trec_columns(path: str, width: int, what: str) -> list[list[str]]:
    """The whitespace-separated fields of a TREC text file, checking each line has ``width``."""
    columns: list[list[str]] = [[] for _ in range(width)]
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            fields = line.split()
            if not fields:
                continue
            if len(fields) != width:
                raise InputError(f"{what} file {path!r} line {number}: expected {width} fields separated by spaces, "
                                 f"found {len(fields)}: {line.strip()[:80]!r}")
            for column, field in zip(columns, fields):
                column.append(field)
    return columns


def check_relevance(values: pa.Array, where: Callable[[int], str], column: str) -> np.ndarray:
    """int64 relevance, refusing NULL, non-whole and negative values (naming the first)."""
    if values.null_count:
        raise BadLabelError(f"relevance column {column!r} is NULL at {where(_first(values.is_null()))}")
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        try:
            numbers = pc.cast(values, pa.float64())
        except pa.ArrowInvalid:
            text = values.to_pylist()
            first = next(i for i, v in enumerate(text) if not is_number(v))
            raise InputError(f"relevance column {column!r} has {text[first]!r} at {where(first)}; relevance must be "
                             "a whole number of 0 or more") from None
        values = numbers
    x = np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.float64)
    bad = np.flatnonzero(~np.isfinite(x) | (x != np.floor(x)) | (x < 0))
    if len(bad):
        i = int(bad[0])
        shown = int(x[i]) if np.isfinite(x[i]) and x[i] == np.floor(x[i]) else float(x[i])
        raise InputError(f"relevance column {column!r} has {shown!r} at {where(i)}; relevance must be a whole number "
                         f"of 0 or more ({len(bad)} such rows)")
    return x.astype(np.int64)


def is_number(text: str) -> bool:
    """Whether a field of a text file reads as a number (to name the first one that does not)."""
    try:
        float(text)
        return True
    except ValueError:
        return False


def _first(mask: pa.Array) -> int:
    return int(np.flatnonzero(mask.to_numpy(zero_copy_only=False))[0])


def check_unique_pairs(qid: pa.Array, doc_id: pa.Array, where: Callable[[int], str], source: str) -> None:
    table = pa.table({"q": qid, "d": doc_id})
    counts = table.group_by(["q", "d"]).aggregate([([], "count_all")])
    repeated = pc.greater(counts.column("count_all"), 1)
    if pc.any(repeated).as_py():
        row = counts.filter(repeated).slice(0, 1).to_pylist()[0]
        raise InputError(f"qrels {source!r}: (qid {row['q']!r}, doc_id {row['d']!r}) is judged {row['count_all']} times "
                         f"({pc.sum(repeated).as_py()} pairs repeated); each pair must be judged once")


def read_qrels(con: duckdb.DuckDBPyConnection, qrels: Qrels) -> Judgements:
    """Read and check qrels (``qrels.source`` a name on ``con``, a file, or a TREC qrels text file)."""
    source = qrels.source
    if is_trec_text(source):
        assert isinstance(source, str)
        if qrels.columns() != Qrels(source).columns():
            raise InputError(f"TREC qrels file {source!r} has fixed fields (qid 0 doc_id relevance): its column names "
                             "cannot be chosen; pass Qrels(path) with the default names")
        q, _, d, rel = read_trec_columns(source, 4, "TREC qrels")
        if not q:
            raise InputError(f"TREC qrels file {source!r} has no judgements")
        where = lambda i: f"line {i + 1}"
        qids, docs = pa.array(q, pa.string()), pa.array(d, pa.string())
        values = check_relevance(pa.array(rel, pa.string()), where, "relevance (4th field)")
        check_unique_pairs(qids, docs, where, source)
        return Judgements(qids, docs, values, source)
    resolved = resolve(con, str(source))
    for column, role in ((qrels.qid, "qid"), (qrels.doc_id, "doc_id")):
        resolved.require(column, role)
    select = [exp.cast(exp.column(qrels.qid, quoted=True), "VARCHAR").as_("q"),
              exp.cast(exp.column(qrels.doc_id, quoted=True), "VARCHAR").as_("d")]
    if qrels.relevance is not None:
        kind = resolved.require(qrels.relevance, "relevance").split("(")[0]
        if kind not in _NUMERIC and kind != "VARCHAR" and not kind.startswith("DECIMAL"):
            raise ColumnTypeError(f"relevance column {qrels.relevance!r} in {resolved.name!r} has type "
                                  f"{resolved.columns[qrels.relevance]}; expected whole numbers")
        select.append(exp.column(qrels.relevance, quoted=True).as_("r"))
    query = exp.select(*select).from_(resolved.table.copy())
    if qrels.relevance is None:          # a table with one row per model lists each pair once per model
        query = query.distinct()
    table = con.sql(query.sql("duckdb")).to_arrow_table()
    if table.num_rows == 0:
        raise InputError(f"qrels {resolved.name!r} has no rows")
    where = lambda i: f"row {i + 1}"      # counted from 1
    for name, role, column in (("q", "qid", qrels.qid), ("d", "doc_id", qrels.doc_id)):
        values = table.column(name).combine_chunks()
        if values.null_count:
            fail("label.null", role=role, column=repr(column), word="NULL",
                 where=f" at {where(_first(values.is_null()))} of qrels {resolved.name!r}")
    qids, docs = table.column("q").combine_chunks(), table.column("d").combine_chunks()
    if qrels.relevance is None:
        return Judgements(qids, docs, np.ones(table.num_rows, dtype=np.int64),
                          f"{resolved.name} ({qrels.doc_id} column)")
    values = check_relevance(table.column("r").combine_chunks(), where, qrels.relevance)
    check_unique_pairs(qids, docs, where, resolved.name)
    return Judgements(qids, docs, values, resolved.name)


def check_known(qrels: Judgements, ids: pa.Array, role: str, column: pa.Array, unknown: str,
                where: str) -> tuple[Judgements, int]:
    known = pc.is_in(column, value_set=ids).to_numpy(zero_copy_only=False)
    if known.all():
        return qrels, 0
    bad = int(np.flatnonzero(~known)[0])
    if unknown == "error":
        raise InputError(f"qrels {qrels.source!r} row {bad + 1}: {role} {column[bad].as_py()!r} is not in {where} "
                         f"({int((~known).sum())} qrels rows are not); pass {option('unknown', 'skip')} to leave them "
                         "out (counted)")
    return qrels.filter(known), int((~known).sum())
