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

BATCH_ROWS = 65_536


def _column(name: str) -> exp.Column:
    return exp.column(name, quoted=True)


def _query(source: Source, group: str, vector: str, model: str | None, item: str | None, extra: str | None,
           extra_role: str = "strata", group_role: str = "group") -> exp.Select:
    for name, role in ((group, group_role), (model, "model"), (item, "item"), (extra, extra_role)):
        if name is not None:
            source.require(name, role)
    source.vector_dimension(vector)
    if model is not None and model == group:
        raise InputError(f"model column {model!r} is also the {group_role} column; pass the column that names each row's model")
    return exp.select(
        exp.alias_(_column(model) if model else exp.null(), B),
        exp.alias_(_column(group), G),
        exp.alias_(_column(vector), V),
        exp.alias_(_column(item) if item else exp.null(), KEY),
        exp.alias_(_column(extra) if extra else exp.null(), EXTRA),
    ).from_(source.table.copy())


Part = tuple[object, list, np.ndarray, np.ndarray, pa.Array, "RowNamer"]


def _stream(con: duckdb.DuckDBPyConnection, source: Source, group: str, vector: str, model: str | None = None,
            item: str | None = None, extra: str | None = None, unit: bool = True, extra_role: str = "strata",
            group_role: str = "group") -> Iterator[Part]:
    """Yield (model value, labels, label codes, vectors, extra values, row namer) per part of each Arrow batch.

    Vectors are checked and scaled to unit length, or with ``unit=False`` checked for NULLs and
    lengths only and returned as they are (the caller scales them and checks their norms).
    ``group_role`` names the label column in messages (e.g. "item" when items are the labels).
    A NULL or NaN model value is refused naming its row: it names no model, and a filter on it
    would drop its rows without a word."""
    dims: dict[object, int] = {}
    first_row = 0
    query = _query(source, group, vector, model, item, extra, extra_role, group_role)
    for batch in con.sql(query.sql("duckdb")).to_arrow_reader(BATCH_ROWS):
        model_values = batch.column(B)
        if model is not None:
            _check_models(model_values, model, RowNamer(batch, np.arange(batch.num_rows), first_row, group_role))
        values = [None] if model is None else pc.unique(model_values).to_pylist()
        # a batch of one model value (a table stored model by model) is used as it is: no filtered copy
        parts = [(values[0], None)] if len(values) == 1 else [
            (value, pc.equal(model_values, pa.scalar(value, model_values.type))) for value in values]
        for value, mask in parts:
            rows = np.arange(batch.num_rows) if mask is None else np.flatnonzero(mask.to_numpy(zero_copy_only=False))
            # a run of rows (a batch where one model's rows end and the next's begin) is a zero-copy slice
            part = (batch if mask is None else batch.slice(int(rows[0]), len(rows))
                    if len(rows) and rows[-1] - rows[0] + 1 == len(rows) else batch.filter(mask))
            where = RowNamer(batch, rows, first_row, group_role)
            vectors = (unit_vectors if unit else raw_vectors)(part.column(V), where, vector, dims.get(value))
            dims.setdefault(value, vectors.shape[1])
            names, codes = _coded_labels(part.column(G), group, group_role, where)
            yield value, names, codes, vectors, part.column(EXTRA), where
        first_row += batch.num_rows
    if first_row == 0:
        fail("source.empty", source=repr(source.name))


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
               model: str | None = None, item: str | None = None) -> list[tuple[object, GroupSums]]:
    """Stage 1 on DuckDB: [(model value, GroupSums)] in model order; raise naming the first bad row."""
    accumulators: dict[object, Accumulator] = {}
    for value, names, codes, raw, _, where in _stream(con, source, group, vector, model, item, unit=False):
        accumulator = accumulators.setdefault(value, Accumulator(dim=raw.shape[1]))
        accumulator.add(accumulator.codes(names)[codes], raw, where, vector)
    return [(value, accumulators[value].result()) for value in sorted(accumulators, key=sort_key)]


def unit_rows(con: duckdb.DuckDBPyConnection, source: Source, group: str, vector: str,
              model: str | None = None, item: str | None = None, extra: str | None = None,
              extra_role: str = "strata", group_role: str = "group") -> list[tuple[object, UnitRows]]:
    """Every checked unit vector with its label (and extra column), per model value: O(n d) memory.

    The rows are kept as read (views of the Arrow batches) until the scan ends; then each model
    value's float64 array is allocated once and every part is scaled into its place, in scan
    order (so a bad vector is still named by its first row): one copy of the vectors, not three."""
    parts: dict[object, list] = {}
    dims: dict[object, int] = {}
    rows_of: dict[object, int] = {}
    read: list[tuple[object, int, np.ndarray, RowNamer]] = []
    for value, names, codes, raw, extra_values, where in _stream(con, source, group, vector, model, item, extra,
                                                                 unit=False, extra_role=extra_role,
                                                                 group_role=group_role):
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


class RowNamer:
    """Names a row of the current batch part as users see it: 0-based row in scan order, its id
    (the ``item`` column a face was given to name rows; ``id_role`` says what the id is) and label
    (``role`` says what the label is: a group, or an item)."""

    def __init__(self, batch: pa.RecordBatch, rows: np.ndarray, first_row: int, role: str | None = "group",
                 id_role: str = "item") -> None:
        self.batch, self.rows, self.first_row, self.role, self.id_role = batch, rows, first_row, role, id_role

    def __call__(self, i: int) -> str:
        row = int(self.rows[i])
        key = self.batch.column(KEY)[row].as_py()
        label = self.batch.column(G)[row].as_py()
        return (f"row {self.first_row + row}" + ("" if key is None else f" ({self.id_role} {key!r})")
                + ("" if label is None else f" ({self.role} {label!r})"))


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
