"""Runs (ranked lists of documents per query): rank documents by exact cosine (retrieve_run),
read a run table or a TREC run file, write the TREC run format.

A TREC run line is ``qid Q0 doc_id rank score tag``.  trec_eval ignores the rank field and
orders each query's documents by score descending, then doc_id descending; embsql.evaluate does
the same, so a run evaluates alike here and there, and write_trec_run writes the ranks of that
order (which are retrieve's).  A TREC run file's fields are qid, Q0, doc_id, rank, score and tag:
with ``model="tag"`` each tag is a model.

Inside embsql a run is an Arrow table (model, qid, doc_id, score[, rank]) whose model column is
NULL when the run has none; the faces give the output model column the input column's name.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from embsql.core import ranking
from embsql.core.labels import sort_key
from embsql.errors import ColumnTypeError, InputError, fail, option
from embsql.io.columns import first_bad_label
from embsql.io.qrels import is_number, is_trec_text, read_trec_columns
from embsql.io.retrieval_tables import Docs, Queries, Run
from embsql.io.sources import resolve
from embsql.io.table_stream import Skipped
from embsql.io.vectors import read_ids, read_vectors, stream_vectors

RUN_COLUMNS = ("qid", "doc_id", "rank", "score")     # retrieve's run, after its model column (if any)
TREC_FIELDS = "qid, Q0, doc_id, rank, score and tag"
_SPACE = re.compile(r"\s")
_NUMBER = re.compile(r"^(FLOAT|DOUBLE|REAL|DECIMAL|TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|U)")


def arrow_run(table: pa.Table, name: str, run: Run, model: str | None) -> pa.Table:
    """A run given as an Arrow table, checked and cast without a round trip through SQL: the Arrow
    table (model, qid, doc_id, score) that embsql.io.scoring reads (model NULL without ``model``)."""
    for column, role in ((run.qid, "qid"), (run.doc_id, "doc_id"), (run.score, "score"), (model, "model")):
        if column is not None and column not in table.column_names:
            fail("column.missing", role=role, column=repr(column), source=f"run {name!r}",
                 hint=f"; its columns are: {', '.join(table.column_names)}")
    kind = table.schema.field(run.score).type
    if not (pa.types.is_floating(kind) or pa.types.is_integer(kind)):
        raise ColumnTypeError(f"score column {run.score!r} in {name!r} has type {kind}; expected numbers")
    # text ids; retrieve's dictionary-encoded ids stay encoded (scoring reads their codes)
    text = lambda c: c if pa.types.is_string(c.type) or (pa.types.is_dictionary(c.type) and pa.types.is_string(
        c.type.value_type)) else pc.cast(c, pa.string())
    rows = table.num_rows
    out = pa.table({"model": table.column(model) if model else pa.nulls(rows, pa.string()),
                    "qid": text(table.column(run.qid)), "doc_id": text(table.column(run.doc_id)),
                    "score": pc.cast(table.column(run.score), pa.float64())})
    return _checked(out.combine_chunks(), name, model)


def read_run(con: duckdb.DuckDBPyConnection, run: Run, model: str | None) -> pa.Table:
    """A run as an Arrow table (model, qid, doc_id as text; score float64): ``run.source`` names a
    table on ``con`` or a file, or is a TREC run file, whose tag column is called ``tag``.  ``model``
    names the model column (None: the run is one model, model NULL)."""
    source = run.source
    if is_trec_text(source):
        assert isinstance(source, str)
        if run.columns() != Run(source).columns():
            raise InputError(f"TREC run file {source!r} has fixed fields ({TREC_FIELDS}): its column names cannot "
                             "be chosen; pass Run(path) with the default names")
        if model not in (None, "tag"):
            fail("column.missing", role="model", column=repr(model), source=f"TREC run file {source!r}",
                 hint=f"; its fields are {TREC_FIELDS} (model='tag' evaluates each tag as a model)")
        q, _, d, _, s, tag = read_trec_columns(source, 6, "TREC run")
        if not q:
            raise InputError(f"TREC run file {source!r} has no lines; an empty run cannot be evaluated")
        tags = sorted(set(tag))
        if model is None and len(tags) > 1:
            raise InputError(f"TREC run file {source!r} holds {len(tags)} runs (tags {', '.join(map(repr, tags[:3]))}"
                             f"{', ...' if len(tags) > 3 else ''}); pass {option('model', 'tag')} to evaluate each as a model")
        try:
            scores = np.asarray(s, dtype=np.float64)
        except ValueError:
            bad = next(i for i, v in enumerate(s) if not is_number(v))
            raise InputError(f"TREC run file {source!r} line {bad + 1}: score {s[bad]!r} is not a number") from None
        table = pa.table({"model": pa.array(tag, pa.string()) if model else pa.nulls(len(q), pa.string()),
                          "qid": pa.array(q, pa.string()), "doc_id": pa.array(d, pa.string()), "score": scores})
        return _checked(table, source, model)
    resolved = resolve(con, str(source))
    for column, role in ((run.qid, "qid"), (run.doc_id, "doc_id"), (run.score, "score"), (model, "model")):
        if column is not None:
            resolved.require(column, role)
    kind = resolved.columns[run.score]
    if not _NUMBER.match(kind):
        raise ColumnTypeError(f"score column {run.score!r} in {resolved.name!r} has type {kind}; expected numbers")
    select = [exp.column(model, quoted=True).as_("model") if model else exp.cast(exp.null(), "VARCHAR").as_("model"),
              exp.cast(exp.column(run.qid, quoted=True), "VARCHAR").as_("qid"),
              exp.cast(exp.column(run.doc_id, quoted=True), "VARCHAR").as_("doc_id"),
              exp.cast(exp.column(run.score, quoted=True), "DOUBLE").as_("score")]
    table = con.sql(exp.select(*select).from_(resolved.table.copy()).sql("duckdb")).to_arrow_table()
    return _checked(table.combine_chunks(), resolved.name, model)


def _checked(table: pa.Table, name: str, model: str | None) -> pa.Table:
    """Refuse an empty run, a NULL (or NaN) model, qid or doc_id and a score that is not finite, naming the row."""
    if table.num_rows == 0:
        raise InputError(f"run {name!r} has no rows; an empty run cannot be evaluated")
    for part, column in (("model", model), ("qid", "qid"), ("doc_id", "doc_id")):
        bad = None if column is None else first_bad_label(table.column(part))
        if bad is not None:
            fail("label.null", role=part, column=repr(column), word=bad[1], where=f" at row {bad[0] + 1} of run {name!r}")
    scores = table.column("score").to_numpy()
    if not np.isfinite(scores).all():
        row = int(np.flatnonzero(~np.isfinite(scores))[0])
        raise InputError(f"run {name!r}: score {scores[row]!r} at row {row + 1} is not finite")
    # a document ranked twice for one query is refused when the run is scored (embsql.io.scoring)
    return table


def trec_rows(run: pa.Table) -> Iterator[tuple[object, str, str, int, float]]:
    """(model, qid, doc_id, rank, score) of a run (model, qid, doc_id, score), each query's documents
    ranked by score descending, then doc_id descending as text: trec_eval's order, and retrieve's."""
    text = {c: pc.cast(run.column(c), pa.string()) for c in ("qid", "doc_id")}     # dictionary ids as text
    table = pa.table({"model": run.column("model"), **text, "score": run.column("score")})
    ordered = table.sort_by([("model", "ascending"), ("qid", "ascending"), ("score", "descending"),
                             ("doc_id", "descending")])
    previous: tuple[object, object] | None = None
    rank = 0
    for model, qid, doc_id, score in zip(*(ordered.column(c).to_pylist() for c in ordered.column_names)):
        rank = rank + 1 if (model, qid) == previous else 1
        previous = (model, qid)
        yield model, qid, doc_id, rank, score


def write_trec_run(rows: Iterable[tuple[object, object, object, int, float]], path: str, *,
                   tag: str | None = None) -> int:
    """Write ``rows`` (model, qid, doc_id, rank, score) as a TREC run file; the tag is ``tag``, else
    the row's model, else "embsql".  Scores keep every digit (repr), so trec_eval orders them as
    embsql did.  Returns the number of lines."""
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


def _run_table(model: object, qids: pa.Array, idx: np.ndarray, scores: np.ndarray, doc_ids: pa.Array) -> pa.Table:
    n, depth = idx.shape
    return pa.table({
        # the model's value as it is in the tables (NULL without a model column)
        "model": pa.nulls(n * depth, pa.string()) if model is None else pa.repeat(pa.scalar(model), n * depth),
        # ids dictionary-encoded over the tables' ids: scoring reads the codes without hashing text
        "qid": pa.DictionaryArray.from_arrays(pa.array(np.repeat(np.arange(n), depth)), qids),
        "doc_id": pa.DictionaryArray.from_arrays(pa.array(idx.ravel()), doc_ids),
        "rank": pa.array(np.tile(np.arange(1, depth + 1), n)),
        "score": pa.array(scores.ravel())})


def ranked(model: object, qids: pa.Array, unit: np.ndarray, doc_ids: pa.Array, docs: np.ndarray,
           inv_norms: np.ndarray, k: int) -> pa.Table:
    """One model's run as Arrow (model, qid, doc_id, rank, score), the documents in memory."""
    idx, scores = ranking.top_k(unit, docs, inv_norms, tie_keys(doc_ids), k)
    return _run_table(model, qids, idx, scores, doc_ids)


STREAM_ROWS = 16_384    # documents per streamed block (25 MB of float32 at d = 384): larger Arrow batches raise the peak


def retrieve_run(con: duckdb.DuckDBPyConnection, queries: Queries, docs: Docs, *, k: int, model: str | None,
                 stream_rows: int = STREAM_ROWS, skip: Skipped | None = None) -> pa.Table:
    """The exact top-k run of every model (``queries`` and ``docs`` name tables on ``con``: Queries.on).
    The queries are read whole (they are few); the documents stream through in blocks of
    ``stream_rows`` (embsql.core.ranking.StreamedTopK), so memory holds the queries, one block and the
    running top-k, never all documents.  With ``skip`` (bad_rows="skip"), the queries and documents
    with an unusable vector are left out and counted there."""
    k = ranking.check_k(k)
    q_source, d_source = resolve(con, str(queries.source)), resolve(con, str(docs.source))
    q = read_vectors(con, q_source, "queries", id_col=queries.qid, id_role="qid", vector=queries.vector, model=model,
                     skip=skip)
    ids = read_ids(con, d_source, "docs", id_col=docs.doc_id, id_role="doc_id", vector=docs.vector, model=model,
                   skip=skip is not None)
    for value in sorted(set(q) ^ set(ids), key=sort_key):
        side, other = ("queries", "docs") if value in q else ("docs", "queries")
        fail("model.missing", model=repr(value), side=side, other_side=other,
             source=repr(q_source.name if value in q else d_source.name),
             other=repr(d_source.name if value in q else q_source.name))
    running = {value: ranking.StreamedTopK(q[value].unit(), tie_keys(ids[value]), k) for value in q}
    for block in stream_vectors(con, d_source, "docs", ids, id_col=docs.doc_id, id_role="doc_id", vector=docs.vector,
                                model=model, batch_rows=stream_rows, skip=skip):
        width = q[block.model].vectors.shape[1]
        if block.vectors.shape[1] != width:
            fail("vector.dimension", column=repr(queries.vector), dimension=width, doc_column=repr(docs.vector),
                 doc_dimension=block.vectors.shape[1], whose="" if block.model is None else f" (model {block.model!r})")
        running[block.model].add(block.vectors, block.inv_norms, block.positions)
    return pa.concat_tables([_run_table(value, q[value].ids, *running[value].result(), ids[value])
                             for value in sorted(q, key=sort_key)])


def run_ids(run: pa.Table, column: str) -> pa.Array:
    """The distinct ids of retrieve_run's ``column`` ("qid" or "doc_id"): every id of the queries
    or documents table, since each model's ids are the dictionary of its chunk (the documents
    that no query ranks in its top k included)."""
    chunks = run.column(column).chunks
    return pc.unique(pa.concat_arrays([chunk.dictionary for chunk in chunks]))
