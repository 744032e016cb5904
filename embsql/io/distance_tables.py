"""Reading a distance table (i, j, distance) and a labels table (item, group) into the n x n matrix of
squared distances of the labelled items, with every check of the distance route.

The checks, in the order they are made: the columns exist (``column.missing``); no NULL or NaN item
id or group label, -0.0 and 0.0 one group (``label.null``, the rule of embsql.core.labels); no item
twice (``label.duplicate``); some labelled item (``source.empty``); no NULL id in the distance table
(``distance.null_id``); no NULL, NaN, infinite or negative distance (``distance.invalid``); every id
of the distance table labelled (``distance.unlabelled``); an item's distance to itself 0
(``distance.self``); a pair given in both orders with one distance (``distance.asymmetric``); every
pair of labelled items there (``distance.incomplete``).  Messages name columns as the SQL function
emb_anova_dist names them (double-quoted), so both routes word a refusal alike.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from embsql.core.labels import bad_label, clean_label
from embsql.errors import fail
from embsql.io.sources import Source


@dataclass(frozen=True)
class DistanceTable:
    """The labelled items (ordered by id), their groups and squared distances."""

    ids: list
    codes: np.ndarray        # each item's group, 0..G-1 in order of first appearance
    squared: np.ndarray      # n x n, symmetric, zero diagonal


def _quoted(column: str) -> str:
    return f'"{column}"'


def _columns(con: duckdb.DuckDBPyConnection, source: Source, columns: dict[str, str],
             double: str | None = None) -> pa.Table:
    """``columns`` (role -> column name) of ``source``, each checked to exist, read as Arrow (the
    column of role ``double`` cast to DOUBLE, as emb_anova_dist casts the distances)."""
    for role, column in columns.items():
        if column not in source.columns:
            fail("column.missing", role=role, column=_quoted(column), source=source.name, hint="")
    selected = [exp.cast(exp.column(c, quoted=True), "DOUBLE") if role == double else exp.column(c, quoted=True)
                for role, c in columns.items()]
    return con.sql(exp.select(*selected).from_(source.table).sql("duckdb")).to_arrow_table()


def _labels(table: pa.Table, source: Source, group: str, item: str) -> tuple[pa.Array, np.ndarray]:
    """The labelled ids (sorted) and their groups as codes, under the label rule."""
    ids, groups = table.column(0).combine_chunks(), table.column(1).to_pylist()
    for row, value in enumerate(ids.to_pylist()):
        word = bad_label(value)
        if word is not None:
            fail("label.null", role="id", column=_quoted(item), word=word, where=f" at row {row + 1} of {source.name}")
    if len(ids) == 0:
        fail("source.empty", source=repr(source.name))
    order = pc.sort_indices(ids)
    ids, groups = ids.take(order), [groups[k] for k in order.to_pylist()]
    listed = ids.to_pylist()
    for value, label in zip(listed, groups):
        word = bad_label(label)
        if word is not None:
            fail("label.null", role="group", column=_quoted(group), word=word, where=f" for id {value}")
    repeated = next((value for value, after in zip(listed, listed[1:]) if value == after), None)
    if repeated is not None:
        fail("label.duplicate", id=repeated, source=source.name)
    index: dict[object, int] = {}
    return ids, np.fromiter((index.setdefault(clean_label(label, group), len(index)) for label in groups), np.int64,
                            len(groups))


def _positions(column: pa.ChunkedArray, ids: pa.Array) -> np.ndarray:
    """Where each id of ``column`` is among the sorted labelled ``ids`` (-1: not labelled), matched
    by value (an id column of another type is cast to the labels' type, else both compared as text)."""
    column = column.combine_chunks()
    if column.type != ids.type:
        try:
            column = column.cast(ids.type)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            column, ids = column.cast(pa.string()), ids.cast(pa.string())
    return pc.index_in(column, value_set=ids).fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)


def _distinct_pairs(keys: np.ndarray, d: np.ndarray, n: int, ids: list) -> np.ndarray:
    """The distinct keys a * n + b of the pairs a < b (sorted); a pair given twice with two distances
    is refused, naming the first such pair (by its ids)."""
    order = np.argsort(keys, kind="stable")
    keys, d = keys[order], d[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    low, high = np.minimum.reduceat(d, starts), np.maximum.reduceat(d, starts)
    clash = np.flatnonzero(low != high)
    if len(clash):
        k = int(clash[0])
        a, b = divmod(int(keys[starts[k]]), n)
        fail("distance.asymmetric", i=ids[a], j=ids[b], d=float(low[k]), other=float(high[k]))
    return keys[starts]


def _missing_pair(distinct: np.ndarray, n: int) -> tuple[int, int]:
    """The first pair (a, b), a < b, in row order whose key a * n + b is not among the sorted
    ``distinct`` keys (some is missing)."""
    rows = np.arange(n, dtype=np.int64)
    firsts = rows * n - rows * (rows + 1) // 2          # the rank of pair (r, r + 1) in row order
    a, b = np.divmod(distinct, n)
    gaps = np.flatnonzero(firsts[a] + (b - a - 1) != np.arange(len(distinct)))
    rank = int(gaps[0]) if len(gaps) else len(distinct)
    row = int(np.searchsorted(firsts, rank, side="right")) - 1
    return row, rank - int(firsts[row]) + row + 1


def read_distance_table(con: duckdb.DuckDBPyConnection, distances: Source, labels: Source, *, group: str,
                        item: str, i: str, j: str, distance: str) -> DistanceTable:
    """The checked squared-distance matrix of the labelled items of ``labels`` from ``distances``
    (one row per pair of items, in either order, each pair once or both ways with one distance;
    zero self-distances allowed)."""
    ids, codes = _labels(_columns(con, labels, {"id": item, "group": group}), labels, group, item)
    pairs = _columns(con, distances, {"first item": i, "second item": j, "distance": distance},
                     double="distance")
    first, second = pairs.column(0), pairs.column(1)
    if first.null_count or second.null_count:
        fail("distance.null_id", source=distances.name, first=_quoted(i), second=_quoted(j))
    d = pairs.column(2).to_numpy().astype(np.float64)       # NULL reads as NaN
    bad = np.flatnonzero(~(d >= 0) | np.isinf(d))
    if len(bad):
        k = int(bad[0])
        problem = "NULL or NaN" if np.isnan(d[k]) else "infinite" if np.isinf(d[k]) else f"negative ({d[k]})"
        fail("distance.invalid", i=first[k].as_py(), j=second[k].as_py(), column=_quoted(distance), problem=problem)
    a, b = _positions(first, ids), _positions(second, ids)
    unlabelled = np.flatnonzero((a < 0) | (b < 0))
    if len(unlabelled):
        k = int(unlabelled[0])
        fail("distance.unlabelled", id=(first if a[k] < 0 else second)[k].as_py(), source=distances.name,
             labels=labels.name)
    listed = ids.to_pylist()
    self_pair = a == b
    wrong_self = np.flatnonzero(self_pair & (d != 0))
    if len(wrong_self):
        at = a[wrong_self[0]]
        fail("distance.self", id=listed[at], distance=float(d[self_pair & (a == at)].max()))
    low, high, d = np.minimum(a, b)[~self_pair], np.maximum(a, b)[~self_pair], d[~self_pair]
    n, needed = len(listed), len(listed) * (len(listed) - 1) // 2
    complete = False
    if len(d) >= needed:      # (with fewer rows some pair is missing: no n x n matrix is allocated)
        upper = np.full((n, n), np.nan)
        upper[low, high] = d
        complete = bool(np.all(upper[low, high] == d)) and int(np.count_nonzero(~np.isnan(upper))) == needed
    if not complete:          # a pair with two distances, else a missing pair: name the first
        distinct = _distinct_pairs(low * n + high, d, n, listed)
        gap = _missing_pair(distinct, n)
        fail("distance.incomplete", source=distances.name, pairs=len(distinct), n=n, needed=needed,
             example=f"({listed[gap[0]]}, {listed[gap[1]]})")
    np.nan_to_num(upper, copy=False, nan=0.0)      # the diagonal and the lower triangle
    squared = upper * upper
    squared += squared.T
    return DistanceTable(ids=listed, codes=codes, squared=squared)
