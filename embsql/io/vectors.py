"""Ids and vectors per model, read for ranking: one copy of the vectors, as stored.

Retrieval over a million documents cannot afford a float64 copy (3 GB at d = 384): FLOAT
vectors stay float32, DOUBLE vectors float64, and only 1 / ||x|| is kept beside them (float64).
Rows stream from DuckDB in Arrow batches into arrays allocated once per model (the row counts
are read first), so the peak is the vectors plus one batch (read_vectors: the queries).  The
documents are not held at all: read_ids reads their ids, and stream_vectors yields them block by
block, each block's vectors a view of its Arrow batch (retrieve ranks them as they come).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from embsql.core.labels import bad_label
from embsql.core.sums import bad_vector
from embsql.errors import BadLabelError, BadVectorError, InputError, fail
from embsql.io.columns import first_bad_label
from embsql.io.sources import Source
from embsql.io.table_stream import BATCH_ROWS, Skipped, raw_vectors, unusable

Namer = Callable[[int], str]      # names row i of a batch part in a message


@dataclass(frozen=True)
class Vectors:
    """The rows of one model: ids as text, optional group labels, vectors and their inverse norms."""

    ids: pa.Array
    group: list | None
    vectors: np.ndarray
    inv_norms: np.ndarray

    def unit(self, rows: slice | np.ndarray = slice(None)) -> np.ndarray:
        """float64 unit vectors of ``rows``."""
        return self.vectors[rows].astype(np.float64) * self.inv_norms[rows, None]


def _select(con: duckdb.DuckDBPyConnection, source: Source, what: str, *, id_col: str, id_role: str, vector: str,
            model: str | None, group: str | None, vectors: bool = True) -> tuple[str, dict, type]:
    """The streamed query (m, i, g, v; without v if not ``vectors``), the row count per model and
    the vectors' dtype."""
    source.require(id_col, id_role)
    if model:
        source.require(model, "model")
    if group:
        source.require(group, "group")
    source.vector_dimension(vector)
    element = source.columns[vector].split("[")[0]
    dtype = np.float32 if element in ("FLOAT", "REAL") else np.float64
    model_expr = exp.column(model, quoted=True) if model else exp.null()
    counts = dict(con.sql(exp.select(model_expr.copy().as_("m"), exp.func("count", exp.Star()))
                          .from_(source.table.copy()).group_by(model_expr.copy()).sql("duckdb")).fetchall())
    if not counts:
        raise InputError(f"{what} {source.name!r} has no rows")
    if model and any(bad_label(value) for value in counts):
        _refuse_bad_model(con, source, what, model, id_col, id_role)
    select = [model_expr.as_("m"), exp.cast(exp.column(id_col, quoted=True), "VARCHAR").as_("i"),
              (exp.column(group, quoted=True) if group else exp.null()).as_("g")]
    if vectors:
        select.append(exp.column(vector, quoted=True).as_("v"))
    return exp.select(*select).from_(source.table.copy()).sql("duckdb"), counts, dtype


def _refuse_bad_model(con: duckdb.DuckDBPyConnection, source: Source, what: str, model: str, id_col: str,
                      id_role: str) -> None:
    """Name the first row whose model is NULL or NaN (label.null): the model column and the id, streamed."""
    query = exp.select(exp.column(model, quoted=True).as_("m"), exp.column(id_col, quoted=True).as_("i")
                       ).from_(source.table.copy()).sql("duckdb")
    first_row = 0
    for batch in con.sql(query).to_arrow_reader(BATCH_ROWS):
        bad = first_bad_label(batch.column("m"))
        if bad is not None:
            fail("label.null", role="model", column=repr(model), word=bad[1],
                 where=f" at row {first_row + bad[0] + 1} ({id_role} {batch.column('i')[bad[0]].as_py()!r}) of "
                       f"{what} {source.name!r}")
        first_row += batch.num_rows


def _parts(con: duckdb.DuckDBPyConnection, source: Source, what: str, query: str, *, id_col: str, id_role: str,
           vector: str, model: str | None, group: str | None,
           batch_rows: int, skip: Skipped | None = None) -> Iterator[tuple[object, pa.Array, list | None, np.ndarray, Namer]]:
    """Yield (model value, ids, group labels or None, raw vectors, row namer) per model per Arrow
    batch, the ids and vectors checked (NULL ids and groups, NULL vectors and lengths).  With
    ``skip`` (bad_rows="skip"), the rows with an unusable vector are left out and counted there."""
    dim = source.vector_dimension(vector)
    first_row = 0
    for batch in con.sql(query).to_arrow_reader(batch_rows):
        read, kept = batch.num_rows, None        # kept: with skip, the kept rows' positions in the batch as read
        if skip is not None:
            batch, kept = skip.drop(batch, "v", "m" if model else None)
        models = batch.column("m")
        values = [None] if not model else pc.unique(models).to_pylist()
        for value in values:
            if len(values) == 1:            # one model in the batch (a table in model order): no copy
                part, rows = batch, np.arange(batch.num_rows)
            else:
                mask = pc.equal(models, pa.scalar(value, models.type))
                part, rows = batch.filter(mask), np.flatnonzero(mask.to_numpy(zero_copy_only=False))
            ids = part.column("i")
            if kept is not None:
                rows = kept[rows]
            whose = f"model {value!r}, " if model else ""      # (the model, when there is a model column)
            where = (lambda i, ids=ids, rows=rows, first=first_row, whose=whose:     # counted from 1
                     f"row {first + int(rows[i]) + 1} ({whose}{id_role} {ids[i].as_py()!r})")
            if ids.null_count:
                raise BadLabelError(f"{what} {source.name!r}: {id_role} column {id_col!r} is NULL at "
                                    f"row {first_row + int(rows[_first_null(ids)]) + 1}")
            if group and part.column("g").null_count:
                raise BadLabelError(f"{what} {source.name!r}: group column {group!r} is NULL at "
                                    f"{where(_first_null(part.column('g')))}")
            try:
                raw = raw_vectors(part.column("v"), where, vector, dim)
            except BadVectorError as error:
                raise BadVectorError(f"{what} {source.name!r}: {error}", kind=error.kind) from None
            yield value, ids, part.column("g").to_pylist() if group else None, raw, where
        first_row += read


def _check_width(raw: np.ndarray, width: int, what: str, name: str, vector: str, where: Namer) -> None:
    if raw.shape[1] != width:
        raise BadVectorError(f"{what} {name!r}: vector column {vector!r} has a vector of length "
                             f"{raw.shape[1]} at {where(0)}; other vectors have length {width}")


def read_vectors(con: duckdb.DuckDBPyConnection, source: Source, what: str, *, id_col: str, id_role: str,
                 vector: str, model: str | None, group: str | None = None,
                 skip: Skipped | None = None) -> dict[object, Vectors]:
    """{model value (None without a model column): Vectors}, checking NULL ids and vectors, lengths,
    zero or non-finite vectors and repeated ids (each named by row).  With ``skip``
    (bad_rows="skip"), the rows with an unusable vector are left out and counted there; a model
    none of whose rows is left is left out."""
    query, counts, dtype = _select(con, source, what, id_col=id_col, id_role=id_role, vector=vector, model=model,
                                   group=group)
    parts: dict[object, dict] = {m: {"ids": [], "group": [], "vectors": None, "filled": 0, "namers": []}
                                 for m in counts}
    for value, ids, labels, raw, where in _parts(con, source, what, query, id_col=id_col, id_role=id_role,
                                                 vector=vector, model=model, group=group, batch_rows=BATCH_ROWS,
                                                 skip=skip):
        state = parts[value]
        if state["vectors"] is None:
            state["vectors"] = np.empty((counts[value], raw.shape[1]), dtype=dtype)
        _check_width(raw, state["vectors"].shape[1], what, source.name, vector, where)
        state["vectors"][state["filled"]:state["filled"] + len(raw)] = raw
        state["namers"].append((state["filled"], where))    # the part's first row in vectors, and its namer
        state["filled"] += len(raw)
        state["ids"].append(ids)
        if group:
            state["group"].extend(labels)
    out = {}
    for value, state in parts.items():
        if state["vectors"] is None:            # every row of this model was skipped
            continue
        vectors = state["vectors"][:state["filled"]]
        ids = pa.concat_arrays(state["ids"]) if len(state["ids"]) > 1 else state["ids"][0]
        out[value] = Vectors(ids, state["group"] if group else None, vectors,
                             _inverse_norms(vectors, ids, what, source.name, vector, id_role,
                                            _joined_namer(state["namers"])))
        _check_unique(ids, what, source.name, id_col, id_role, value)
    if not out and skip is not None:
        skip.nothing_left(f"{what} {source.name!r}")
    return out


@dataclass(frozen=True)
class Block:
    """A block of one model's rows as streamed: their positions among that model's rows (in
    the order of ``read_ids``), vectors as stored (a view of the Arrow batch) and 1 / ||x||."""

    model: object
    positions: np.ndarray
    vectors: np.ndarray
    inv_norms: np.ndarray


def read_ids(con: duckdb.DuckDBPyConnection, source: Source, what: str, *, id_col: str, id_role: str,
             vector: str, model: str | None, skip: bool = False) -> dict[object, pa.Array]:
    """{model value: ids as text}, in table order, without the vectors (NULL and repeated ids are
    refused here, before any vector is read).  With ``skip`` (bad_rows="skip"), the ids of the rows
    whose vector is usable: the vectors are streamed once to see which (stream_vectors counts them)."""
    query, counts, _ = _select(con, source, what, id_col=id_col, id_role=id_role, vector=vector, model=model,
                               group=None, vectors=skip)
    if skip:
        kept, first_row = [], 0
        for batch in con.sql(query).to_arrow_reader(BATCH_ROWS):
            if batch.column("i").null_count:     # named by its row as read, before any is left out
                raise BadLabelError(f"{what} {source.name!r}: {id_role} column {id_col!r} is NULL at row "
                                    f"{first_row + _first_null(batch.column('i')) + 1}")
            kept.append(batch.filter(pa.array(unusable(batch.column("v")) == 0)).select(["m", "i"]))
            first_row += batch.num_rows
        table = pa.Table.from_batches(kept)
        counts = {value: None for value in pc.unique(table.column("m")).to_pylist()} if model else \
            ({None: None} if table.num_rows else {})
        if not counts:
            raise InputError(f"every row of {what} {source.name!r} has an unusable vector; nothing is left to "
                             "compute on", kind="source.empty")
    else:
        table = con.sql(query).to_arrow_table()
    models, ids = table.column("m").combine_chunks(), table.column("i").combine_chunks()
    if ids.null_count:
        raise BadLabelError(f"{what} {source.name!r}: {id_role} column {id_col!r} is NULL at row {_first_null(ids) + 1}")
    out = {}
    for value in counts:
        mine = ids if not model else ids.filter(pc.equal(models, pa.scalar(value, models.type)))
        _check_unique(mine, what, source.name, id_col, id_role, value)
        out[value] = mine
    return out


def stream_vectors(con: duckdb.DuckDBPyConnection, source: Source, what: str, ids: dict[object, pa.Array], *,
                   id_col: str, id_role: str, vector: str, model: str | None,
                   batch_rows: int = BATCH_ROWS, skip: Skipped | None = None) -> Iterator[Block]:
    """Yield a Block per model per Arrow batch, checked like read_vectors, so that the vectors are
    never held whole: the peak is one batch.  ``ids`` is read_ids's answer for the same source;
    rows are matched to it by position (the order DuckDB streams in), or by value if that differs.
    With ``skip`` (bad_rows="skip"; ``ids`` read with skip=True), the rows with an unusable vector
    are left out and counted there."""
    query, _, dtype = _select(con, source, what, id_col=id_col, id_role=id_role, vector=vector, model=model,
                              group=None)
    filled = dict.fromkeys(ids, 0)
    width: dict[object, int] = {}
    for value, part_ids, _, raw, where in _parts(con, source, what, query, id_col=id_col, id_role=id_role,
                                                 vector=vector, model=model, group=None, batch_rows=batch_rows,
                                                 skip=skip):
        _check_width(raw, width.setdefault(value, raw.shape[1]), what, source.name, vector, where)
        start = filled[value]
        known = ids[value]
        if start + len(part_ids) <= len(known) and known.slice(start, len(part_ids)).equals(part_ids):
            positions = np.arange(start, start + len(part_ids))
        else:
            where_in = pc.index_in(part_ids, value_set=known)
            if where_in.null_count:         # the table changed between the two reads
                raise InputError(f"{what} {source.name!r} changed while it was read ({id_role} "
                                 f"{part_ids[_first_null(where_in)].as_py()!r} is new); read it again")
            positions = where_in.to_numpy(zero_copy_only=False).astype(np.int64)
        filled[value] += len(part_ids)
        vectors = raw if raw.dtype == dtype else raw.astype(dtype)
        yield Block(value, positions, vectors, _inverse_norms(vectors, part_ids, what, source.name, vector, id_role,
                                                             where))


def _joined_namer(namers: list[tuple[int, Namer]]) -> Namer:
    """Name row i of a model's vectors gathered from several parts: by the namer of its part, which
    counts the table's rows (a row's place among one model's vectors is not its row in the table)."""
    starts = [start for start, _ in namers]

    def where(i: int) -> str:
        k = bisect.bisect_right(starts, i) - 1
        start, namer = namers[k]
        return namer(i - start)
    return where


def _first_null(values: pa.Array) -> int:
    return int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0])


def _inverse_norms(vectors: np.ndarray, ids: pa.Array, what: str, name: str, vector: str, role: str,
                   where: Namer | None = None) -> np.ndarray:
    """1 / ||x|| in float64, block by block; a zero or non-finite vector is named (by ``where``,
    the row namer of a streamed block, else by its position in ``vectors``)."""
    out = np.empty(len(vectors))
    # float32 rows: their squares cannot overflow or underflow in float64, so the sum of squares is
    # taken unscaled, in blocks of 1024 rows (a float64 copy of 3 MB at d = 384, within the cache)
    single = vectors.dtype == np.float32
    step = 1024 if single else 8192        # a float64 copy of a block, not of all
    for a in range(0, len(vectors), step):
        block = vectors[a:a + step].astype(np.float64)
        if single:
            squares = np.einsum("ij,ij->i", block, block)
            good = np.isfinite(squares) & (squares > 0)
            if good.all():
                out[a:a + len(block)] = 1.0 / np.sqrt(squares)
                continue
        scale = np.max(np.abs(block), axis=1)
        good = np.isfinite(scale) & (scale > 0)
        if not good.all():
            i = a + int(np.flatnonzero(~good)[0])
            row = block[i - a]
            word = "zero-length" if np.isfinite(scale[i - a]) else "NaN" if np.isnan(row).any() else "infinite"
            place = f"row {i + 1} ({role} {ids[i].as_py()!r})" if where is None else where(i)
            error = bad_vector(vector, word, place)
            raise BadVectorError(f"{what} {name!r}: {error}", kind=error.kind)
        block /= scale[:, None]            # no overflow or underflow in the squares
        out[a:a + len(block)] = 1.0 / (np.sqrt(np.einsum("ij,ij->i", block, block)) * scale)
    return out


def _check_unique(ids: pa.Array, what: str, name: str, column: str, role: str, model: object) -> None:
    if len(pc.unique(ids)) == len(ids):
        return
    counts = pa.table({"i": ids}).group_by("i").aggregate([([], "count_all")])
    repeated = counts.filter(pc.greater(counts.column("count_all"), 1)).column("i")[0].as_py()
    of_model = "" if model is None else f" (model {model!r})"
    raise BadLabelError(f"{what} {name!r}{of_model}: {role} column {column!r} has {repeated!r} more than once; "
                        f"each {role} must identify one row", kind="label.duplicate")
