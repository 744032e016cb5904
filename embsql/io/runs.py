"""Runs (ranked lists of documents per query): rank documents by exact cosine (retrieve_run),
read a run table or a TREC run file, write the TREC run format.

A TREC run line is ``qid Q0 doc_id rank score tag``.  trec_eval ignores the rank field and
orders each query's documents by score descending, then doc_id descending; embsql.evaluate does
the same, so a run evaluates alike here and there.  Reading a TREC run file gives the columns
``model`` (the tag), ``qid``, ``doc_id``, ``rank``, ``score``.
"""

from __future__ import annotations

import math
import re

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from embsql.core import ranking
from embsql.core.labels import sort_key
from embsql.errors import BadLabelError, ColumnNotFoundError, ColumnTypeError, DesignError, InputError
from embsql.io.qrels import is_number, is_trec_text, read_trec_columns
from embsql.io.sources import resolve
from embsql.io.vectors import read_ids, read_vectors, stream_vectors

RUN_COLUMNS = ("model", "qid", "doc_id", "rank", "score")
_SPACE = re.compile(r"\s")


def arrow_run(table: pa.Table, name: str, *, qid: str = "qid", doc_id: str = "doc_id", score: str = "score",
              model: str | None = None) -> pa.Table:
    """A run given as an Arrow table, checked and cast without a round trip through SQL."""
    if model is None and "model" in table.column_names:
        model = "model"
    for column, role in ((qid, "qid"), (doc_id, "doc_id"), (score, "score")) + (((model, "model"),) if model else ()):
        if column not in table.column_names:
            raise ColumnNotFoundError(f"{role} column {column!r} not found in run {name!r}; its columns are: "
                                      f"{', '.join(table.column_names)}")
    if not (pa.types.is_floating(table.schema.field(score).type) or pa.types.is_integer(table.schema.field(score).type)):
        raise ColumnTypeError(f"score column {score!r} in {name!r} has type {table.schema.field(score).type}; "
                              "expected numbers")
    # text ids; retrieve's dictionary-encoded ids stay encoded (scoring reads their codes)
    text = lambda c: c if pa.types.is_string(c.type) or (pa.types.is_dictionary(c.type) and pa.types.is_string(
        c.type.value_type)) else pc.cast(c, pa.string())
    rows = table.num_rows
    out = pa.table({"model": text(table.column(model)) if model else pa.nulls(rows, pa.string()),
                    "qid": text(table.column(qid)), "doc_id": text(table.column(doc_id)),
                    "score": pc.cast(table.column(score), pa.float64())})
    return _checked(out.combine_chunks(), name, model)


def read_run(con: duckdb.DuckDBPyConnection, source, *, qid: str = "qid", doc_id: str = "doc_id",
             score: str = "score", model: str | None = None) -> pa.Table:
    """A run as an Arrow table (model, qid, doc_id as text; score float64).  ``model`` names the
    model column; None uses a column called "model" if there is one (retrieve's output and TREC
    run files have it), else the run is one model (model NULL)."""
    if is_trec_text(source):
        q, _, d, _, s, tag = read_trec_columns(source, 6, "TREC run")
        if not q:
            raise InputError(f"TREC run file {source!r} has no lines; an empty run cannot be evaluated")
        try:
            scores = np.asarray(s, dtype=np.float64)
        except ValueError:
            bad = next(i for i, v in enumerate(s) if not is_number(v))
            raise InputError(f"TREC run file {source!r} line {bad + 1}: score {s[bad]!r} is not a number") from None
        table = pa.table({"model": pa.array(tag, pa.string()), "qid": pa.array(q, pa.string()),
                          "doc_id": pa.array(d, pa.string()), "score": scores})
        return _checked(table, source)
    resolved = resolve(con, source)
    if model is None and "model" in resolved.columns:
        model = "model"
    for column, role in ((qid, "qid"), (doc_id, "doc_id"), (score, "score")) + (((model, "model"),) if model else ()):
        resolved.require(column, role)
    kind = resolved.columns[score]
    if not re.match(r"^(FLOAT|DOUBLE|REAL|DECIMAL|TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|U)", kind):
        raise ColumnTypeError(f"score column {score!r} in {resolved.name!r} has type {kind}; expected numbers")
    select = [exp.cast(exp.column(model, quoted=True), "VARCHAR").as_("model") if model else
              exp.cast(exp.null(), "VARCHAR").as_("model"),
              exp.cast(exp.column(qid, quoted=True), "VARCHAR").as_("qid"),
              exp.cast(exp.column(doc_id, quoted=True), "VARCHAR").as_("doc_id"),
              exp.cast(exp.column(score, quoted=True), "DOUBLE").as_("score")]
    table = con.sql(exp.select(*select).from_(resolved.table.copy()).sql("duckdb")).to_arrow_table()
    return _checked(table.combine_chunks(), resolved.name, model)


def _checked(table: pa.Table, name: str, model: str | None = "model") -> pa.Table:
    if table.num_rows == 0:
        raise InputError(f"run {name!r} has no rows; an empty run cannot be evaluated")
    for column in ("qid", "doc_id", "score") + (("model",) if model else ()):
        values = table.column(column)
        if column == "model" and values.null_count == len(values):
            continue                 # a model column that is NULL throughout: one model (retrieve without model=)
        if values.null_count:
            row = int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0])
            raise BadLabelError(f"run {name!r}: {column} is NULL at row {row}")
    scores = table.column("score").to_numpy()
    if not np.isfinite(scores).all():
        row = int(np.flatnonzero(~np.isfinite(scores))[0])
        raise InputError(f"run {name!r}: score {scores[row]!r} at row {row} is not finite")
    # a document ranked twice for one query is refused when the run is scored (embsql.io.scoring)
    return table


def write_trec_run(rows, path: str, *, tag: str | None = None) -> int:
    """Write ``rows`` (dicts or tuples with model, qid, doc_id, rank, score) as a TREC run file;
    the tag is ``tag``, else the row's model, else "embsql".  Scores keep every digit (repr),
    so trec_eval orders them as embsql did.  Returns the number of lines."""
    lines = 0
    with open(path, "w", encoding="utf-8") as handle:
        for model, qid, doc_id, rank, score in rows:
            name = tag if tag is not None else ("embsql" if model is None else str(model))
            for value, what in ((qid, "qid"), (doc_id, "doc_id"), (name, "tag")):
                text = str(value)
                if not text or _SPACE.search(text):
                    raise InputError(f"{what} {text!r} cannot be written in a TREC run: it is empty or has white space")
            if not math.isfinite(score):
                raise InputError(f"score {score!r} of qid {qid!r}, doc_id {doc_id!r} is not finite")
            handle.write(f"{qid} Q0 {doc_id} {int(rank)} {float(score)!r} {name}\n")
            lines += 1
    return lines


# ---- runs from embeddings ------------------------------------------------------------


def tie_keys(doc_ids: pa.Array) -> np.ndarray:
    """Position of each doc_id in descending text order: the smaller key wins a tie (trec_eval)."""
    order = pc.array_sort_indices(doc_ids, order="descending").to_numpy()
    keys = np.empty(len(doc_ids), dtype=np.int64)
    keys[order] = np.arange(len(doc_ids))
    return keys


def _run_table(model, qids: pa.Array, idx: np.ndarray, scores: np.ndarray, doc_ids: pa.Array) -> pa.Table:
    n, depth = idx.shape
    return pa.table({
        "model": pa.array([None if model is None else str(model)] * (n * depth), pa.string()),
        # ids dictionary-encoded over the tables' ids: scoring reads the codes without hashing text
        "qid": pa.DictionaryArray.from_arrays(pa.array(np.repeat(np.arange(n), depth)), qids),
        "doc_id": pa.DictionaryArray.from_arrays(pa.array(idx.ravel()), doc_ids),
        "rank": pa.array(np.tile(np.arange(1, depth + 1), n)),
        "score": pa.array(scores.ravel())})


def ranked(model, qids: pa.Array, unit: np.ndarray, doc_ids: pa.Array, docs: np.ndarray, inv_norms: np.ndarray,
           k: int) -> pa.Table:
    """One model's run as Arrow (model, qid, doc_id, rank, score), the documents in memory."""
    idx, scores = ranking.top_k(unit, docs, inv_norms, tie_keys(doc_ids), k)
    return _run_table(model, qids, idx, scores, doc_ids)


STREAM_ROWS = 16_384    # documents per streamed block (25 MB of float32 at d = 384): larger Arrow batches raise the peak


def retrieve_run(con, queries: str, docs: str, *, k: int, model: str | None, qid: str, doc_id: str,
                 vector: str, doc_vector: str | None, stream_rows: int = STREAM_ROWS) -> pa.Table:
    """The exact top-k run of every model.  The queries are read whole (they are few); the
    documents stream through in blocks of ``stream_rows`` (embsql.core.ranking.StreamedTopK), so
    memory holds the queries, one block and the running top-k, never all documents."""
    k = ranking.check_k(k)
    q = read_vectors(con, resolve(con, queries), "queries", id_col=qid, id_role="qid", vector=vector, model=model)
    source = resolve(con, docs)
    doc_column = doc_vector or vector
    ids = read_ids(con, source, "docs", id_col=doc_id, id_role="doc_id", vector=doc_column, model=model)
    for value in q:
        if value not in ids:
            raise DesignError(f"model {value!r} is in queries {queries!r} but not in docs {docs!r}")
    for value in ids:
        if value not in q:
            raise DesignError(f"model {value!r} is in docs {docs!r} but not in queries {queries!r}")
    running = {value: ranking.StreamedTopK(q[value].unit(), tie_keys(ids[value]), k) for value in q}
    for block in stream_vectors(con, source, "docs", ids, id_col=doc_id, id_role="doc_id", vector=doc_column,
                                model=model, batch_rows=stream_rows):
        width = q[block.model].vectors.shape[1]
        if block.vectors.shape[1] != width:
            of_model = "" if block.model is None else f" (model {block.model!r})"
            raise DesignError(f"query vectors have dimension {width} but document vectors "
                              f"{block.vectors.shape[1]}{of_model}; queries and documents must be embedded by the same model")
        running[block.model].add(block.vectors, block.inv_norms, block.positions)
    return pa.concat_tables([_run_table(value, q[value].ids, *running[value].result(), ids[value])
                             for value in sorted(q, key=sort_key)])


def run_ids(run: pa.Table, column: str) -> pa.Array:
    """The distinct ids of retrieve_run's ``column`` ("qid" or "doc_id"): every id of the queries
    or documents table, since each model's ids are the dictionary of its chunk (the documents
    that no query ranks in its top k included)."""
    chunks = run.column(column).chunks
    return pc.unique(pa.concat_arrays([chunk.dictionary for chunk in chunks]))
