"""Relevance judgements (qrels): read and check them.

A qrels source is a table or view, a Parquet or CSV file (columns qid, doc_id, relevance), a
TREC qrels text file (``qid 0 doc_id relevance`` per line, whitespace-separated), or in-memory
frames (see embsql.io.sources).  A queries table with a ``positive`` column is the shorthand for
one relevant document (relevance 1) per query.

Rules: ids are compared as text (as the retrieval functions match positives); relevance is a
whole number >= 0 (1.0 is accepted as 1, 1.5 is refused); no NULLs; each (qid, doc_id) once.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from embsql.errors import BadLabelError, ColumnTypeError, InputError
from embsql.io.sources import resolve

_NUMERIC = ("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT",
            "FLOAT", "DOUBLE", "REAL")


@dataclass(frozen=True)
class Qrels:
    """Judgements as text ids and int64 relevance, checked; ``source`` names them in messages."""

    qid: pa.Array
    doc_id: pa.Array
    relevance: np.ndarray
    source: str

    def __len__(self) -> int:
        return len(self.relevance)

    def filter(self, mask: np.ndarray) -> Qrels:
        keep = pa.array(mask)
        return Qrels(self.qid.filter(keep), self.doc_id.filter(keep), self.relevance[mask], self.source)


def is_trec_text(name) -> bool:
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


def check_relevance(values: pa.Array, where, column: str) -> np.ndarray:
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


def check_unique_pairs(qid: pa.Array, doc_id: pa.Array, where, source: str) -> None:
    table = pa.table({"q": qid, "d": doc_id})
    counts = table.group_by(["q", "d"]).aggregate([([], "count_all")])
    repeated = pc.greater(counts.column("count_all"), 1)
    if pc.any(repeated).as_py():
        row = counts.filter(repeated).slice(0, 1).to_pylist()[0]
        raise InputError(f"qrels {source!r}: (qid {row['q']!r}, doc_id {row['d']!r}) is judged {row['count_all']} times "
                         f"({pc.sum(repeated).as_py()} pairs repeated); each pair must be judged once")


def read_qrels(con: duckdb.DuckDBPyConnection, source: str, *, qid: str = "qid", doc_id: str = "doc_id",
               relevance: str = "relevance") -> Qrels:
    """Read and check a qrels source (a name on ``con``, a file, or a TREC qrels text file)."""
    if is_trec_text(source):
        q, _, d, rel = read_trec_columns(source, 4, "TREC qrels")
        if not q:
            raise InputError(f"TREC qrels file {source!r} has no judgements")
        where = lambda i: f"line {i + 1}"
        qids, docs = pa.array(q, pa.string()), pa.array(d, pa.string())
        values = check_relevance(pa.array(rel, pa.string()), where, "relevance (4th field)")
        check_unique_pairs(qids, docs, where, source)
        return Qrels(qids, docs, values, source)
    resolved = resolve(con, source)
    for column, role in ((qid, "qid"), (doc_id, "doc_id"), (relevance, "relevance")):
        resolved.require(column, role)
    kind = resolved.columns[relevance].split("(")[0]
    if kind not in _NUMERIC and kind != "VARCHAR" and not kind.startswith("DECIMAL"):
        raise ColumnTypeError(f"relevance column {relevance!r} in {resolved.name!r} has type {resolved.columns[relevance]}; "
                              "expected whole numbers")
    query = exp.select(exp.cast(exp.column(qid, quoted=True), "VARCHAR").as_("q"),
                       exp.cast(exp.column(doc_id, quoted=True), "VARCHAR").as_("d"),
                       exp.column(relevance, quoted=True).as_("r")).from_(resolved.table.copy())
    table = con.sql(query.sql("duckdb")).to_arrow_table()
    if table.num_rows == 0:
        raise InputError(f"qrels {resolved.name!r} has no rows")
    where = lambda i: f"row {i}"
    for name, role, column in (("q", "qid", qid), ("d", "doc_id", doc_id)):
        values = table.column(name).combine_chunks()
        if values.null_count:
            raise BadLabelError(f"qrels {resolved.name!r}: {role} column {column!r} is NULL at {where(_first(values.is_null()))}")
    qids, docs = table.column("q").combine_chunks(), table.column("d").combine_chunks()
    values = check_relevance(table.column("r").combine_chunks(), where, relevance)
    check_unique_pairs(qids, docs, where, resolved.name)
    return Qrels(qids, docs, values, resolved.name)


def qrels_from_positives(con: duckdb.DuckDBPyConnection, queries: str, *, qid: str = "qid",
                         positive: str = "positive") -> Qrels:
    """The shorthand: each query's ``positive`` document with relevance 1 (distinct pairs, so a
    queries table with one row per model gives each pair once)."""
    resolved = resolve(con, queries)
    resolved.require(qid, "qid")
    resolved.require(positive, "positive")
    query = exp.select(exp.cast(exp.column(qid, quoted=True), "VARCHAR").as_("q"),
                       exp.cast(exp.column(positive, quoted=True), "VARCHAR").as_("d")
                       ).distinct().from_(resolved.table.copy())
    table = con.sql(query.sql("duckdb")).to_arrow_table()
    for name, column in (("q", qid), ("d", positive)):
        if table.column(name).null_count:
            raise BadLabelError(f"queries {resolved.name!r}: column {column!r} is NULL")
    if table.num_rows == 0:
        raise InputError(f"queries {resolved.name!r} has no rows")
    return Qrels(table.column("q").combine_chunks(), table.column("d").combine_chunks(),
                 np.ones(table.num_rows, dtype=np.int64), f"{resolved.name} ({positive} column)")


def check_known(qrels: Qrels, ids: pa.Array, role: str, column: pa.Array, unknown: str, where: str) -> tuple[Qrels, int]:
    known = pc.is_in(column, value_set=ids).to_numpy(zero_copy_only=False)
    if known.all():
        return qrels, 0
    bad = int(np.flatnonzero(~known)[0])
    if unknown == "error":
        raise InputError(f"qrels {qrels.source!r} row {bad}: {role} {column[bad].as_py()!r} is not in {where} "
                         f"({int((~known).sum())} qrels rows are not); pass unknown='skip' to leave them out (counted)")
    return qrels.filter(known), int((~known).sum())


def table_ids(con, source, column: str, role: str) -> pa.Array:
    resolved = resolve(con, source)
    resolved.require(column, role)
    query = exp.select(exp.cast(exp.column(column, quoted=True), "VARCHAR").as_("i")).distinct().from_(resolved.table.copy())
    return con.sql(query.sql("duckdb")).to_arrow_table().column("i").combine_chunks()
