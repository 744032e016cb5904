"""Stage 1: reduce an embedding table to sufficient statistics in one streaming pass.

Per (model value, group): the count n_g of vectors, s_g, the sum of their unit vectors, and the
sum of squares of those unit vectors about their group mean (accumulated stably).
DuckDB streams the three columns as Arrow record batches; numpy checks, normalises and sums
each batch, so memory stays O(batch * d + G * d) and nothing is n x n.  (In SQL the same sums
need one aggregate per coordinate, or one row per coordinate; both are several times slower
in DuckDB than this, so the SQL macros are the engine-only route and this is the fast one.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from embsql.core.labels import bad_label, clean_label, sort_key
from embsql.core.sums import Accumulator, GroupSums, UnitRows, bad_vector, normalise
from embsql.errors import InputError, fail
from embsql.io.columns import EXTRA, KEY, B, G, V
from embsql.io.sources import Source
from embsql.result_table import ResultTable

BATCH_ROWS = 65_536
UNIT_CHUNK = 8_192      # model_unit_rows: rows scaled per float64 temporary (25 MB at d = 384)
R = TypeVar("R")

# ---- Bad rows.  A NULL, zero or non-finite vector is an error naming its row (bad_rows="error", the
# default), or, where the caller asks (bad_rows="skip"), the row is left out and counted per model and
# reason.  This is the one rule of which rows may be skipped; every reader of vectors applies it to
# the Arrow batches it streams, before it checks or scales a vector (the SQL macros apply the same
# rule in emb__unusable, sql/modules/10_group_sums.sql).
BAD_ROWS = ("error", "skip")
SKIP_REASONS = ("null", "zero", "nonfinite")     # NULL vector or element; no non-zero coordinate; NaN or inf
SKIPPED_COLUMNS = tuple(f"skipped_{reason}" for reason in SKIP_REASONS)


def unusable(column: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """Per row of a vector column, 0 for a usable vector, else 1 + the index of its reason in
    SKIP_REASONS: NULL (the vector or an element) first, then non-finite (a NaN or infinite
    coordinate), then zero (no coordinate other than 0, or no coordinate at all)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    n = len(column)
    values = pc.list_flatten(column)
    parents = pc.list_parent_indices(column).to_numpy(zero_copy_only=False)
    null = column.is_null().to_numpy(zero_copy_only=False).copy()
    if values.null_count:
        null[parents[values.is_null().to_numpy(zero_copy_only=False)]] = True
        values = values.fill_null(0)
    x = np.asarray(values.to_numpy(zero_copy_only=False), dtype=np.float64)
    nonfinite = np.zeros(n, bool)
    nonfinite[parents[~np.isfinite(x)]] = True
    nonzero = np.zeros(n, bool)
    nonzero[parents[x != 0]] = True
    codes = np.where(null, 1, np.where(nonfinite, 3, np.where(nonzero, 0, 2))).astype(np.int8)
    return codes


@dataclass
class Skipped:
    """The rows a face skipped (bad_rows="skip"): counts per model value and reason (SKIP_REASONS),
    with every model value seen, so that a model none of whose rows was skipped shows zeros."""

    counts: dict = field(default_factory=dict)

    @staticmethod
    def asked(bad_rows: object) -> Skipped | None:
        """A counter when ``bad_rows`` is "skip", None when it is "error"; refuse any other value."""
        if bad_rows not in BAD_ROWS:
            fail("argument.bad_rows", name="bad_rows", rule="'error' or 'skip'", value=repr(bad_rows))
        return Skipped() if bad_rows == "skip" else None

    def drop(self, batch: pa.RecordBatch, vector: str, model: str | None) -> tuple[pa.RecordBatch, np.ndarray | None]:
        """(``batch`` without its unusable rows, the kept rows' positions in ``batch``, or None when
        every row is kept); the dropped rows are counted.  ``vector`` and ``model`` are the batch's
        column names (``model`` None: one model, counted under None)."""
        codes = unusable(batch.column(vector))
        models = [None] * batch.num_rows if model is None else batch.column(model).to_pylist()
        for value in (set(models) if model is not None else {None}):
            self.counts.setdefault(value, np.zeros(len(SKIP_REASONS), np.int64))
        if not codes.any():
            return batch, None
        for row in np.flatnonzero(codes):
            self.counts[models[row]][codes[row] - 1] += 1
        keep = np.flatnonzero(codes == 0)
        return batch.take(pa.array(keep)), keep

    def total(self) -> int:
        return int(sum(int(c.sum()) for c in self.counts.values()))

    def table(self, model: str | None) -> ResultTable:
        """One row per model (under the model column ``model``, none when it is None):
        skipped_null, skipped_zero and skipped_nonfinite."""
        return ResultTable.of_models("skipped rows", model, SKIPPED_COLUMNS, [
            (value, dict(zip(SKIPPED_COLUMNS, (int(c) for c in self.counts[value]))))
            for value in sorted(self.counts, key=sort_key)])

    def attach(self, result: R, model: str | None) -> R:
        """``result`` with the counts as its ``skipped`` attribute (a ResultTable)."""
        object.__setattr__(result, "skipped", self.table(model))
        return result

    @staticmethod
    def attached(skipped: Skipped | None, result: R, model: str | None) -> R:
        """``result``, with ``skipped``'s counts attached when the face was asked to skip."""
        return result if skipped is None else skipped.attach(result, model)

    def nothing_left(self, source: str) -> None:
        """Refuse a source every row of which was skipped (called when no row is left)."""
        counts = "; ".join(f"{'' if v is None else f'model {v!r}: '}{int(c.sum())}"
                           for v, c in sorted(self.counts.items(), key=lambda kv: sort_key(kv[0])))
        raise InputError(f"every row of {source} has an unusable vector (skipped {counts}); nothing is left "
                         f"to compute on", kind="source.empty")


def skip_note(skipped: ResultTable, model: str | None) -> str:
    """One line saying how many rows were skipped, per model and reason (for a report), or ''."""
    parts, total = [], 0
    for row in skipped.to_dicts():
        counts = [f"{row[c]} {reason}" for c, reason in zip(SKIPPED_COLUMNS, ("NULL", "zero", "NaN/inf")) if row[c]]
        total += sum(row[c] for c in SKIPPED_COLUMNS)
        if counts:
            parts.append((f"model {row[model]}: " if model is not None else "") + ", ".join(counts))
    return f"skipped {total} row(s) with an unusable vector ({'; '.join(parts)})" if total else ""


def _column(name: str) -> exp.Column:
    return exp.column(name, quoted=True)


def _query(source: Source, group: str, vector: str, model: str | None, item: str | None, extra: str | None,
           extra_role: str = "strata", group_role: str = "group", one_model: bool = False) -> exp.Select:
    """The rows' query; with ``one_model``, only the rows whose model is the query's one parameter (?)."""
    for name, role in ((group, group_role), (model, "model"), (item, "item"), (extra, extra_role)):
        if name is not None:
            source.require(name, role)
    source.vector_dimension(vector)
    if model is not None and model == group:
        raise InputError(f"model column {model!r} is also the {group_role} column; pass the column that names each row's model")
    select = exp.select(
        exp.alias_(_column(model) if model else exp.null(), B),
        exp.alias_(_column(group), G),
        exp.alias_(_column(vector), V),
        exp.alias_(_column(item) if item else exp.null(), KEY),
        exp.alias_(_column(extra) if extra else exp.null(), EXTRA),
    ).from_(source.table.copy())
    return select.where(exp.EQ(this=_column(model), expression=exp.Placeholder())) if one_model and model else select


Part = tuple[object, list, np.ndarray, np.ndarray, pa.Array, "RowNamer"]


def _stream(con: duckdb.DuckDBPyConnection, source: Source, group: str, vector: str, model: str | None = None,
            item: str | None = None, extra: str | None = None, unit: bool = True, extra_role: str = "strata",
            group_role: str = "group", skip: Skipped | None = None, only: tuple[object] | None = None) -> Iterator[Part]:
    """Yield (model value, labels, label codes, vectors, extra values, row namer) per part of each Arrow batch.

    ``only``: (a model value,) to read that model's rows alone (DuckDB filters them; rows are then
    numbered within them).
    Vectors are checked and scaled to unit length, or with ``unit=False`` checked for NULLs and
    lengths only and returned as they are (the caller scales them and checks their norms).
    ``group_role`` names the label column in messages (e.g. "item" when items are the labels).
    A NULL or NaN model value is refused naming its row: it names no model, and a filter on it
    would drop its rows without a word.  With ``skip``, rows with an unusable vector are left out
    (and counted there) before anything else is checked."""
    dims: dict[object, int] = {}
    first_row = kept = 0
    query = _query(source, group, vector, model, item, extra, extra_role, group_role, one_model=only is not None)
    params = list(only) if only is not None and model is not None else None
    for batch in con.sql(query.sql("duckdb"), params=params).to_arrow_reader(BATCH_ROWS):
        read = batch.num_rows
        if model is not None:
            _check_models(batch.column(B), model, RowNamer(batch, np.arange(batch.num_rows), first_row, group_role,
                                                           model=True))
        positions = None
        if skip is not None:
            batch, positions = skip.drop(batch, V, B if model is not None else None)
            kept += batch.num_rows
            if batch.num_rows == 0:
                first_row += read
                continue
        model_values = batch.column(B)
        values = [None] if model is None else pc.unique(model_values).to_pylist()
        # a batch of one model value (a table stored model by model) is used as it is: no filtered copy
        parts = [(values[0], None)] if len(values) == 1 else [
            (value, pc.equal(model_values, pa.scalar(value, model_values.type))) for value in values]
        for value, mask in parts:
            rows = np.arange(batch.num_rows) if mask is None else np.flatnonzero(mask.to_numpy(zero_copy_only=False))
            # a run of rows (a batch where one model's rows end and the next's begin) is a zero-copy slice
            part = (batch if mask is None else batch.slice(int(rows[0]), len(rows))
                    if len(rows) and rows[-1] - rows[0] + 1 == len(rows) else batch.filter(mask))
            where = RowNamer(batch, rows, first_row, group_role, model=model is not None, positions=positions)
            vectors = (unit_vectors if unit else raw_vectors)(part.column(V), where, vector, dims.get(value))
            dims.setdefault(value, vectors.shape[1])
            names, codes = _coded_labels(part.column(G), group, group_role, where)
            yield value, names, codes, vectors, part.column(EXTRA), where
        first_row += read
    if first_row == 0:
        fail("source.empty", source=repr(source.name))
    if skip is not None and kept == 0:
        skip.nothing_left(repr(source.name))


def _check_models(values: pa.Array, model: str, where: RowNamer) -> None:
    """Refuse a NULL or NaN model value (label.null, role "model"), naming its first row."""
    bad = values.is_null()
    if pa.types.is_floating(values.type):
        bad = pc.or_(bad, pc.is_nan(values))
    if pc.any(bad).as_py():
        row = int(np.flatnonzero(bad.to_numpy(zero_copy_only=False))[0])
        clean_label(values[row].as_py(), model, where(row), role="model")


def _coded_labels(column: pa.Array, group: str, role: str, where: RowNamer) -> tuple[list, np.ndarray]:
    """(distinct labels under the label rule, each row's index into them); a NULL or NaN label
    raises naming its first row."""
    labels = column.dictionary_encode()
    if labels.null_count:
        clean_label(None, group, where(int(np.flatnonzero(labels.is_null().to_numpy(zero_copy_only=False))[0])), role)
    codes = labels.indices.to_numpy(zero_copy_only=False)
    names = labels.dictionary.to_pylist()
    if pa.types.is_string(labels.dictionary.type) or pa.types.is_large_string(labels.dictionary.type):
        return names, codes        # text is never NaN nor -0.0: the rule leaves every name as it is
    for j, name in enumerate(names):
        if bad_label(name):
            clean_label(name, group, where(int(np.flatnonzero(codes == j)[0])), role)
    return [clean_label(name, group, role=role) for name in names], codes


def rows_query(source: Source, group: str, vector: str, model: str | None = None) -> str:
    """The DuckDB SQL that group_sums streams (the report records it as the SQL that ran)."""
    return _query(source, group, vector, model, None, None).sql("duckdb")


def group_sums(con: duckdb.DuckDBPyConnection, source: Source, group: str, vector: str,
               model: str | None = None, item: str | None = None,
               skip: Skipped | None = None) -> list[tuple[object, GroupSums]]:
    """Stage 1 on DuckDB: [(model value, GroupSums)] in model order; raise naming the first bad row (or,
    with ``skip``, leave out the rows with an unusable vector and count them there)."""
    accumulators: dict[object, Accumulator] = {}
    for value, names, codes, raw, _, where in _stream(con, source, group, vector, model, item, unit=False, skip=skip):
        accumulator = accumulators.setdefault(value, Accumulator(dim=raw.shape[1]))
        accumulator.add(accumulator.codes(names)[codes], raw, where, vector)
    return [(value, accumulators[value].result()) for value in sorted(accumulators, key=sort_key)]


def unit_rows(con: duckdb.DuckDBPyConnection, source: Source, group: str, vector: str,
              model: str | None = None, item: str | None = None, extra: str | None = None,
              extra_role: str = "strata", group_role: str = "group",
              skip: Skipped | None = None) -> list[tuple[object, UnitRows]]:
    """Every checked unit vector with its label (and extra column), per model value: O(n d) memory.

    The rows are kept as read (views of the Arrow batches) until the scan ends; then each model
    value's float64 array is allocated once and every part is scaled into its place, in scan
    order (so a bad vector is still named by its first row): one copy of the vectors, not three.
    With ``skip``, rows with an unusable vector are left out and counted there."""
    parts: dict[object, list] = {}
    dims: dict[object, int] = {}
    rows_of: dict[object, int] = {}
    read: list[tuple[object, int, np.ndarray, RowNamer]] = []
    for value, names, codes, raw, extra_values, where in _stream(con, source, group, vector, model, item, extra,
                                                                 unit=False, extra_role=extra_role,
                                                                 group_role=group_role, skip=skip):
        labels = np.empty(len(names), dtype=object)
        labels[:] = names
        dims[value] = raw.shape[1]
        read.append((value, rows_of.get(value, 0), raw, where))
        rows_of[value] = rows_of.get(value, 0) + len(raw)
        parts.setdefault(value, []).append((labels[codes], extra_values.to_pylist() if extra else None))
    unit = {value: np.empty((rows_of[value], dims[value])) for value in parts}
    for value, low, raw, where in read:
        rows = unit[value][low:low + len(raw)]
        if raw.dtype == np.float64:        # scaled straight from the Arrow values into place
            normalise(rows, where, vector, source=raw)
        else:                              # other floats: widened first, so the norms are float64 sums
            rows[:] = raw
            normalise(rows, where, vector)
    out = []
    for value in sorted(parts, key=sort_key):
        labels = np.concatenate([chunk[0] for chunk in parts[value]])
        extra_values = np.asarray([x for chunk in parts[value] for x in chunk[1]], dtype=object) if extra else None
        out.append((value, UnitRows(labels, unit[value], extra_values)))
    return out


def model_unit_rows(con: duckdb.DuckDBPyConnection, source: Source, group: str, vector: str, model: str | None,
                    value: object, rows: int, dtype: type[np.float64] | type[np.float32] = np.float64,
                    skip: Skipped | None = None) -> UnitRows:
    """The checked unit vectors of one model (``value`` of the ``model`` column; every row when ``model`` is
    None) and their labels: ``rows`` rows (stage 1 counted them), each batch scaled straight into one n x d
    array of ``dtype`` as it is read (norms in float64), so the peak is that array and one batch.

    The report reads its models one at a time with it (embsql.reporting.sections.Run), so that only
    one model's rows are held at once."""
    unit = np.empty((rows, 0 if rows == 0 else 1), dtype=dtype)
    labels: list[np.ndarray] = []
    low = 0
    for _, names, codes, raw, _, where in _stream(con, source, group, vector, model, unit=False, skip=skip,
                                                  only=(value,)):
        if unit.shape[1] != raw.shape[1]:
            unit = np.empty((rows, raw.shape[1]), dtype=dtype)
        if low + len(raw) > rows:
            raise InputError(f"the rows of {source.name!r} changed while the report read them "
                             f"(more than the {rows} counted)")
        for start in range(0, len(raw), UNIT_CHUNK):   # float64 norms, a few rows at a time
            chunk = np.array(raw[start:start + UNIT_CHUNK], dtype=np.float64)
            normalise(chunk, where, vector, rows=np.arange(start, start + len(chunk)))
            unit[low + start:low + start + len(chunk)] = chunk
        named = np.empty(len(names), dtype=object)
        named[:] = names
        labels.append(named[codes])
        low += len(raw)
    if low != rows:
        raise InputError(f"the rows of {source.name!r} changed while the report read them ({low} read, {rows} counted)")
    return UnitRows(np.concatenate(labels) if labels else np.empty(0, dtype=object), unit, None)


class RowNamer:
    """Names a row of the current batch part as users see it: its row in scan order, counted from 1
    (``first_row`` rows came in earlier batches; ``positions`` maps a batch whose unusable rows were
    skipped back to the rows as read), then in parentheses its model (with ``model``), its id (the
    ``item`` column a face was given to name rows; ``id_role`` says what the id is) and its label
    (``role`` says what the label is: a group, or an item)."""

    def __init__(self, batch: pa.RecordBatch, rows: np.ndarray, first_row: int, role: str | None = "group",
                 id_role: str = "item", model: bool = False, positions: np.ndarray | None = None) -> None:
        self.batch, self.rows, self.first_row, self.role, self.id_role = batch, rows, first_row, role, id_role
        self.model, self.positions = model, positions

    def __call__(self, i: int) -> str:
        row = int(self.rows[i])
        number = self.first_row + 1 + (row if self.positions is None else int(self.positions[row]))
        model = self.batch.column(B)[row].as_py() if self.model else None
        key = self.batch.column(KEY)[row].as_py()
        label = self.batch.column(G)[row].as_py()
        # (a NULL or NaN value names nothing: it is what the message is about)
        named = [f"{what} {value!r}" for what, value in (("model", model), (self.id_role, key), (self.role, label))
                 if value is not None and value == value]
        return f"row {number}" + (f" ({', '.join(named)})" if named else "")


def raw_vectors(column: pa.Array, where: Callable[[int], str], vector: str, dim: int | None) -> np.ndarray:
    """Check NULLs and lengths; return the vectors as an n x d view of the Arrow values."""
    if column.null_count:
        raise bad_vector(vector, "NULL", where(int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0])))
    if isinstance(column, pa.FixedSizeListArray):
        lengths = np.full(len(column), column.type.list_size)
    else:
        lengths = np.diff(np.asarray(column.offsets))
    expected = dim if dim is not None else (int(np.bincount(lengths).argmax()) if len(column) else 0)
    if len(column) and (lengths != expected).any():
        i = int(np.flatnonzero(lengths != expected)[0])
        fail("vector.length", column=repr(vector), length=lengths[i], where=where(i), other=expected)
    values = column.flatten()
    if values.null_count:
        element = int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0])
        raise bad_vector(vector, "NULL-element", where(int(np.searchsorted(np.cumsum(lengths), element, side="right"))))
    return values.to_numpy(zero_copy_only=False).reshape(len(column), expected)


def unit_vectors(column: pa.Array, where: Callable[[int], str], vector: str, dim: int | None) -> np.ndarray:
    """Check every vector and return them scaled to unit length, as float64 rows."""
    x = np.array(raw_vectors(column, where, vector, dim), dtype=np.float64)
    normalise(x, where, vector)
    return x
