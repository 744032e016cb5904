"""Reading the retrieval tables: queries and documents from DuckDB, per model, as unit vectors.

The tables are described by embsql.io.retrieval_tables (Queries: qid, paraphrase group, optional
strength, the id of its one correct document (positive), vector; Docs: doc_id, topic group, vector).
Both may carry a model column (the faces' ``model=``): each model's queries are then matched with
that model's documents.

The rows stream from DuckDB as Arrow batches (as in embsql.io.table_stream); every vector is checked
and scaled to unit length there, and a bad one is named by its row and id.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from embsql.core.labels import sort_key
from embsql.core.margins import model_text
from embsql.errors import BadLabelError, BadVectorError, InputError, fail
from embsql.io.columns import first_bad_label
from embsql.io.retrieval_tables import Docs, Queries
from embsql.io.sources import Source, resolve
from embsql.io.table_stream import BATCH_ROWS, KEY, G, RowNamer, Skipped, unit_vectors


@dataclass(frozen=True)
class Rows:
    """The rows of one model of one table, in scan order."""

    ids: list                       # the id column as it is (qid or doc_id)
    keys: np.ndarray                # the same ids as text: how positives are matched to doc_ids
    group: np.ndarray | None
    strength: np.ndarray | None
    positive: np.ndarray | None     # queries: the positive's id as text
    unit: np.ndarray


_ALIASES = {"model": "__emb_b", "id": KEY, "key": "__emb_kstr", "group": G, "strength": "__emb_l",
            "positive": "__emb_p", "vector": "__emb_v"}
Parts = dict[str, tuple[str | None, str]]     # part (id, group, ...) -> (column name or None, role for messages)


def read_rows(con: duckdb.DuckDBPyConnection, source: Source, columns: Parts, what: str,
              skip: Skipped | None = None) -> dict[object, Rows]:
    """Read one table: ``columns`` maps a part (id, group, strength, positive, vector, model) to
    (column name or None, role name for messages).  Returns {model value: Rows}.  With ``skip``
    (bad_rows="skip"), the rows with an unusable vector are left out and counted there."""
    select = []
    for part, alias in _ALIASES.items():
        if part == "key":
            name = columns["id"][0]
            assert name is not None
            select.append(exp.alias_(exp.cast(exp.column(name, quoted=True), "VARCHAR"), alias, quoted=True))
            continue
        name, role = columns.get(part, (None, part))
        if name is None:
            select.append(exp.alias_(exp.null(), alias, quoted=True))
            continue
        source.require(name, role)
        column = exp.column(name, quoted=True)
        # positives are matched to doc_ids as text (the key), as in the SQL macros
        select.append(exp.alias_(exp.cast(column, "VARCHAR") if part == "positive" else column, alias, quoted=True))
    vector = columns["vector"][0]
    model = columns.get("model", (None, "model"))[0]
    assert vector is not None
    source.vector_dimension(vector)
    query = exp.select(*select).from_(source.table.copy()).sql("duckdb")
    parts: dict[object, list] = {}
    dims: dict[object, int] = {}
    first_row = 0
    for batch in con.sql(query).to_arrow_reader(BATCH_ROWS):
        models = batch.column("__emb_b")
        everything = RowNamer(batch, np.arange(batch.num_rows), first_row, "group", id_role=columns["id"][1])
        bad = first_bad_label(models) if model is not None else None
        if bad is not None:
            fail("label.null", role="model", column=repr(model), word=bad[1],
                 where=f" at {everything(bad[0])} of {what} {source.name!r}")
        read, positions = batch.num_rows, None    # with skip: the kept rows' positions in the batch as read
        if skip is not None:
            batch, positions = skip.drop(batch, "__emb_v", "__emb_b" if model is not None else None)
            models = batch.column("__emb_b")
        values = [None] if model is None else pc.unique(models).to_pylist()
        for value in values:
            mask = None if value is None else pc.equal(models, pa.scalar(value, models.type))
            rows = np.arange(batch.num_rows) if mask is None else np.flatnonzero(mask.to_numpy(zero_copy_only=False))
            part = batch if mask is None else batch.filter(mask)
            where = RowNamer(batch, rows, first_row, "group", id_role=columns["id"][1], positions=positions)
            for name in ("id", "group", "strength", "positive"):
                column_name, role = columns.get(name, (None, name))
                if column_name is not None and part.column(_ALIASES[name]).null_count:
                    first = int(np.flatnonzero(part.column(_ALIASES[name]).is_null().to_numpy(zero_copy_only=False))[0])
                    fail("label.null", role=role, column=repr(column_name), word="NULL",
                         where=f" at {where(first)} of {what} {source.name!r}")
            try:
                unit = unit_vectors(part.column("__emb_v"), where, vector, dims.get(value))
            except BadVectorError as error:
                raise BadVectorError(f"{what} {source.name!r}{model_text(value)}: {error}", kind=error.kind) from None
            dims.setdefault(value, unit.shape[1])
            # keep the labels and the unit vectors, not the raw vectors (memory: one copy of the data)
            labels = [name for name in part.schema.names if name != "__emb_v"]
            parts.setdefault(value, []).append((pa.RecordBatch.from_arrays([part.column(x) for x in labels], labels),
                                                unit))
        first_row += read
    if first_row == 0:
        raise InputError(f"{what} {source.name!r} has no rows")
    if skip is not None and not parts:
        skip.nothing_left(f"{what} {source.name!r}")
    out = {}
    for value in list(parts):
        chunks = parts.pop(value)
        table = pa.Table.from_batches([c[0] for c in chunks])
        keys = objects(table, _ALIASES["key"])
        out[value] = Rows(table.column(KEY).to_pylist(), keys,
                          objects(table, G) if columns.get("group", (None,))[0] else None,
                          objects(table, "__emb_l") if columns.get("strength", (None,))[0] else None,
                          objects(table, "__emb_p") if columns.get("positive", (None,))[0] else None,
                          np.vstack([c[1] for c in chunks]))
        check_unique(keys, columns["id"], what, source.name, value)
    return out


def objects(table: pa.Table, alias: str) -> np.ndarray:
    return np.asarray(table.column(alias).to_pylist(), dtype=object)


def check_unique(keys: np.ndarray, column: tuple[str | None, str], what: str, name: str, model: object) -> None:
    if len(set(keys.tolist())) == len(keys):
        return
    seen: set = set()
    for duplicate in keys.tolist():    # the first id met a second time
        if duplicate in seen:
            break
        seen.add(duplicate)
    raise BadLabelError(f"{what} {name!r}{model_text(model)}: {column[1]} column {column[0]!r} has "
                        f"{duplicate!r} more than once; each {column[1]} must identify one row", kind="label.duplicate")


def load_models(con: duckdb.DuckDBPyConnection, queries: Queries, docs: Docs | None, *, model: str | None,
                query_group: bool, query_strength: bool, doc_group: bool,
                positive: bool = True, skip: Skipped | None = None) -> list[tuple[object, Rows, Rows | None]]:
    """[(model, query rows, doc rows)] in model order, each model's tables checked against each other.
    ``queries`` and ``docs`` name tables on ``con`` (Queries.on); the flags say which columns to read.
    With ``skip`` (bad_rows="skip"), the rows of either table with an unusable vector are left out
    and counted there, the two tables' counts added per model."""
    q_source = resolve(con, str(queries.source))
    q = read_rows(con, q_source, {
        "id": (queries.qid, "qid"), "group": (queries.group if query_group else None, "group"),
        "strength": (queries.strength if query_strength else None, "strength"),
        "positive": (queries.positive if positive else None, "positive"), "vector": (queries.vector, "vector"),
        "model": (model, "model")}, "queries", skip)
    if docs is None:
        return [(m, q[m], None) for m in sorted(q, key=sort_key)]
    d_source = resolve(con, str(docs.source))
    d = read_rows(con, d_source, {
        "id": (docs.doc_id, "doc_id"), "group": (docs.group if doc_group else None, "document group"),
        "vector": (docs.vector, "document vector"), "model": (model, "model")}, "docs", skip)
    for m in set(q) ^ set(d):
        side, other = ("queries", "docs") if m in q else ("docs", "queries")
        fail("model.missing", model=repr(m), side=side, source=repr(q_source.name if m in q else d_source.name),
             other_side=other, other=repr(d_source.name if m in q else q_source.name))
    out: list[tuple[object, Rows, Rows | None]] = []
    for m in sorted(q, key=sort_key):
        if q[m].unit.shape[1] != d[m].unit.shape[1]:
            fail("vector.dimension", column=repr(queries.vector), dimension=q[m].unit.shape[1],
                 doc_column=repr(docs.vector), doc_dimension=d[m].unit.shape[1], whose=model_text(m))
        out.append((m, q[m], d[m]))
    return out
