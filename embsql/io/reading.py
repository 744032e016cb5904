"""Stage 1: reduce an embedding table to sufficient statistics in one streaming pass.

Per (by value, group): the count n_g of vectors, s_g, the sum of their unit vectors, and the
sum of squares of those unit vectors about their group mean (accumulated stably).
DuckDB streams the three columns as Arrow record batches; numpy checks, normalises and sums
each batch, so memory stays O(batch * d + G * d) and nothing is n x n.  (In SQL the same sums
need one aggregate per coordinate, or one row per coordinate; both are several times slower
in DuckDB than this, so the SQL macros are the engine-only route and this is the fast one.)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from embsql.errors import BadVectorError, InputError
from embsql.core.labels import bad_label, clean_label
from embsql.io.sources import Source

B, G, V, KEY, EXTRA = "__emb_b", "__emb_g", "__emb_v", "__emb_key", "__emb_x"
BATCH_ROWS = 65_536
SEGMENT_ROWS = 1024
TINY_SQUARED, HUGE_SQUARED = 1e-290, 1e290  # ||x||^2 outside these is recomputed with scaling
SPREAD_FLOOR = 1e-4  # a block's run of one group with mean squared spread below this gets the two-pass sum


@dataclass(frozen=True)
class GroupSums:
    """Sufficient statistics of one by value: labels, counts n_g, sums s_g (G x d, float64) and
    ``within``, the per-group sum of squares about the group mean, sum_i ||u_i - s_g / n_g||^2.

    ``within`` is accumulated stably (two-pass per block of rows, merged across blocks by Chan et
    al.'s pairwise update), so it keeps its digits when a group's vectors are close together; the
    textbook n_g - ||s_g||^2 / n_g loses them all there.  It is None in a GroupSums built from sums
    alone (a route that only has s_g); within_ss() then falls back to that formula."""

    labels: np.ndarray
    counts: np.ndarray
    sums: np.ndarray
    within: np.ndarray | None = None

    @classmethod
    def from_rows(cls, labels, unit: np.ndarray) -> "GroupSums":
        """The sums of rows already in memory (labels and unit vectors)."""
        labels = list(labels)
        names = sorted(set(labels), key=_sort_key)
        accumulator = _Accumulator(dim=unit.shape[1])
        lookup = dict(zip(names, accumulator.codes(names)))
        accumulator.add_unit(np.fromiter((lookup[x] for x in labels), np.int64, len(labels)),
                             np.asarray(unit, dtype=np.float64))
        return accumulator.result()

    def within_ss(self) -> np.ndarray:
        """Per group sum_i ||u_i - mean_g||^2: the stable figure, or n_g - ||s_g||^2 / n_g without one."""
        if self.within is not None:
            return self.within
        counts = self.counts.astype(np.float64)
        return np.maximum(0.0, counts - np.einsum("gk,gk->g", self.sums, self.sums) / counts)

    def take(self, order) -> "GroupSums":
        """The same statistics with the groups in ``order`` (an index array)."""
        return GroupSums(self.labels[order], self.counts[order], self.sums[order],
                         None if self.within is None else self.within[order])


@dataclass(frozen=True)
class UnitRows:
    """The rows of one by value: group labels, unit vectors and an optional extra column."""

    labels: np.ndarray
    unit: np.ndarray
    extra: np.ndarray | None


@dataclass
class _Accumulator:
    """Running n_g, s_g and within-group sum of squares of one by value; groups are numbered in
    order of first appearance."""

    dim: int
    index: dict = field(default_factory=dict)
    labels: list = field(default_factory=list)
    counts: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    sums: np.ndarray = field(init=False)
    within: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __post_init__(self):
        self.sums = np.zeros((0, self.dim))

    def codes(self, labels: list) -> np.ndarray:
        """Global codes of a batch's distinct labels, growing the arrays for new ones."""
        for label in labels:
            if label not in self.index:
                self.index[label] = len(self.labels)
                self.labels.append(label)
        grow = len(self.labels) - len(self.counts)
        if grow > 0:
            size = len(self.counts) + max(grow, len(self.counts))
            self.counts = np.concatenate([self.counts, np.zeros(size - len(self.counts), np.int64)])
            self.within = np.concatenate([self.within, np.zeros(size - len(self.within))])
            self.sums = np.vstack([self.sums, np.zeros((size - len(self.sums), self.dim))])
        return np.fromiter((self.index[label] for label in labels), np.int64, len(labels))

    def add(self, codes: np.ndarray, raw: np.ndarray, where=None, vector: str = "") -> None:
        """Add the rows ``raw`` (any float dtype; scaled to unit length here) to their groups."""
        self._add(codes, raw, lambda x, rows: _normalise(x, where, vector, rows), scaled=True)

    def add_unit(self, codes: np.ndarray, unit: np.ndarray) -> None:
        """Add rows that are unit vectors already (float64; their norms are not assumed to be 1)."""
        self._add(codes, unit, lambda x, rows: None, scaled=False)

    def _add(self, codes: np.ndarray, raw: np.ndarray, normalise, scaled: bool) -> None:
        """Sorted by group and taken a few rows at a time, the gather, the norm, the scaling and
        np.add.reduceat all stay in cache: several times faster than each over the whole batch.

        Each run of one group in a block gets its sum and its sum of squares about its own mean,
        and is merged into the group's running figures by Chan et al.'s update
            M2 = M2_a + M2_b + ||mean_b - mean_a||^2 n_a n_b / (n_a + n_b).
        A run's M2_b is k - ||s||^2 / k (rows we scaled have ||u||^2 = 1 to rounding) when that is
        at least k * SPREAD_FLOOR: its rounding, about 2 k eps relative to ||s||^2 / k, is then
        below 1e-8 of M2_b.  A tighter run (near-duplicates) gets the two-pass sum of its squared
        deviations from its mean instead, which keeps its digits at any spread."""
        order = np.argsort(codes, kind="stable")
        sorted_codes = codes[order]
        for low in range(0, len(codes), SEGMENT_ROWS):
            rows = order[low:low + SEGMENT_ROWS]
            block = sorted_codes[low:low + SEGMENT_ROWS]
            x = np.asarray(raw[rows], dtype=np.float64)  # a fresh copy (fancy indexing): safe to scale in place
            normalise(x, rows)
            starts = np.flatnonzero(np.r_[True, block[1:] != block[:-1]])
            size = np.diff(np.r_[starts, len(block)])
            run_sums = np.add.reduceat(x, starts, axis=0)
            run_means = run_sums / size[:, None]
            if scaled:  # a run of one row has M2 = 0 exactly
                run_within = np.where(size > 1, size - np.einsum("gk,gk->g", run_sums, run_means), 0.0)
                tight = (size > 1) & (run_within < size * SPREAD_FLOOR)
            if not scaled or tight.any():
                x -= np.repeat(run_means, size, axis=0)
                two_pass = np.add.reduceat(np.einsum("ij,ij->i", x, x), starts)
                run_within = np.where(tight, two_pass, run_within) if scaled else two_pass
            # each code is one run of a sorted block, so the fancy-indexed updates touch each code once
            group = block[starts]
            before = self.counts[group].astype(np.float64)
            previous = self.sums[group]
            delta = run_means - previous / np.maximum(before, 1.0)[:, None]
            self.within[group] += run_within + np.einsum("gk,gk->g", delta, delta) * before * size / (before + size)
            self.sums[group] = previous + run_sums
            self.counts[group] += size

    def result(self) -> GroupSums:
        n = len(self.labels)
        order = sorted(range(n), key=lambda i: _sort_key(self.labels[i]))
        labels = np.empty(n, dtype=object)
        labels[:] = [self.labels[i] for i in order]
        return GroupSums(labels, self.counts[:n][order], self.sums[:n][order], self.within[:n][order])


def _sort_key(value):
    return (value is None, str(type(value)), value)


def _column(name: str) -> exp.Column:
    return exp.column(name, quoted=True)


def _query(source: Source, group: str, vector: str, by: str | None, key: str | None, extra: str | None,
           extra_role: str = "strata", group_role: str = "group"):
    for name, role in ((group, group_role), (by, "by"), (key, "key"), (extra, extra_role)):
        if name is not None:
            source.require(name, role)
    source.vector_dimension(vector)
    if by is not None and by == group:
        raise InputError(f"by column {by!r} is the {group_role} column; pass a different column (e.g. the model)")
    return exp.select(
        exp.alias_(_column(by) if by else exp.null(), B),
        exp.alias_(_column(group), G),
        exp.alias_(_column(vector), V),
        exp.alias_(_column(key) if key else exp.null(), KEY),
        exp.alias_(_column(extra) if extra else exp.null(), EXTRA),
    ).from_(source.table.copy())


def _stream(con, source, group, vector, by=None, key=None, extra=None, unit=True, extra_role="strata",
            group_role="group"):
    """Yield (by value, labels, vectors, extra values, row namer) per part of each Arrow batch.

    Vectors are checked and scaled to unit length, or with ``unit=False`` checked for NULLs and
    lengths only and returned as they are (the caller scales them and checks their norms).
    ``group_role`` names the label column in messages (e.g. "item" when items are the labels)."""
    dims: dict[object, int] = {}
    first_row = 0
    query = _query(source, group, vector, by, key, extra, extra_role, group_role)
    for batch in con.sql(query.sql("duckdb")).to_arrow_reader(BATCH_ROWS):
        by_values = batch.column(B)
        parts = [(None, None)] if by_values.null_count == len(by_values) else [
            (value, pc.equal(by_values, pa.scalar(value, by_values.type))) for value in pc.unique(by_values).to_pylist()]
        for value, mask in parts:
            rows = np.arange(batch.num_rows) if mask is None else np.flatnonzero(mask.to_numpy(zero_copy_only=False))
            part = batch if mask is None else batch.filter(mask)
            where = _RowNamer(batch, rows, first_row, group_role)
            vectors = (_unit_vectors if unit else _raw_vectors)(part.column(V), where, vector, dims.get(value))
            dims.setdefault(value, vectors.shape[1])
            names, codes = _coded_labels(part.column(G), group, group_role, where)
            yield value, names, codes, vectors, part.column(EXTRA), where
        first_row += batch.num_rows
    if first_row == 0:
        raise InputError(f"source {source.name!r} has no rows")


def _coded_labels(column: pa.Array, group: str, role: str, where) -> tuple[list, np.ndarray]:
    """(distinct labels under the label rule, each row's index into them); a NULL or NaN label
    raises naming its first row."""
    labels = column.dictionary_encode()
    if labels.null_count:
        clean_label(None, group, where(int(np.flatnonzero(labels.is_null().to_numpy(zero_copy_only=False))[0])), role)
    codes = labels.indices.to_numpy(zero_copy_only=False)
    names = labels.dictionary.to_pylist()
    for j, name in enumerate(names):
        if bad_label(name):
            clean_label(name, group, where(int(np.flatnonzero(codes == j)[0])), role)
    return [clean_label(name, group, role=role) for name in names], codes


def group_sums(con: duckdb.DuckDBPyConnection, source: Source, group: str, vector: str,
               by: str | None = None, key: str | None = None) -> list[tuple[object, GroupSums]]:
    """Stage 1 on DuckDB: [(by value, GroupSums)] in by order; raise naming the first bad row."""
    accumulators: dict[object, _Accumulator] = {}
    for value, names, codes, raw, _, where in _stream(con, source, group, vector, by, key, unit=False):
        accumulator = accumulators.setdefault(value, _Accumulator(dim=raw.shape[1]))
        accumulator.add(accumulator.codes(names)[codes], raw, where, vector)
    return [(value, accumulators[value].result()) for value in sorted(accumulators, key=_sort_key)]


def unit_rows(con: duckdb.DuckDBPyConnection, source: Source, group: str, vector: str,
              by: str | None = None, key: str | None = None, extra: str | None = None,
              extra_role: str = "strata", group_role: str = "group") -> list[tuple[object, UnitRows]]:
    """Every checked unit vector with its label (and extra column), per by value: O(n d) memory."""
    parts: dict[object, list] = {}
    for value, names, codes, unit, extra_values, _ in _stream(con, source, group, vector, by, key, extra,
                                                              extra_role=extra_role, group_role=group_role):
        labels = np.empty(len(names), dtype=object)
        labels[:] = names
        parts.setdefault(value, []).append((labels[codes].tolist(), unit, extra_values.to_pylist()))
    out = []
    for value in sorted(parts, key=_sort_key):
        labels = np.asarray([x for chunk in parts[value] for x in chunk[0]], dtype=object)
        extra_values = np.asarray([x for chunk in parts[value] for x in chunk[2]], dtype=object) if extra else None
        out.append((value, UnitRows(labels, np.vstack([chunk[1] for chunk in parts[value]]), extra_values)))
    return out


class _RowNamer:
    """Names a row of the current batch part as users see it: 0-based row in scan order, key, label
    (``role`` says what the label is: a group, or an item)."""

    def __init__(self, batch, rows, first_row, role="group"):
        self.batch, self.rows, self.first_row, self.role = batch, rows, first_row, role

    def __call__(self, i: int) -> str:
        row = int(self.rows[i])
        key = self.batch.column(KEY)[row].as_py()
        label = self.batch.column(G)[row].as_py()
        return (f"row {self.first_row + row}" + ("" if key is None else f" (key {key!r})")
                + ("" if label is None else f" ({self.role} {label!r})"))


def _bad(vector: str, word: str, where) -> BadVectorError:
    return BadVectorError(f"vector column {vector!r} has a {word} vector at {where}; "
                          "vectors must be non-NULL, finite and of non-zero length")


def _raw_vectors(column: pa.Array, where, vector: str, dim: int | None) -> np.ndarray:
    """Check NULLs and lengths; return the vectors as an n x d view of the Arrow values."""
    if column.null_count:
        raise _bad(vector, "NULL", where(int(np.flatnonzero(column.is_null().to_numpy(zero_copy_only=False))[0])))
    if isinstance(column, pa.FixedSizeListArray):
        lengths = np.full(len(column), column.type.list_size)
    else:
        lengths = np.diff(np.asarray(column.offsets))
    expected = dim if dim is not None else (int(np.bincount(lengths).argmax()) if len(column) else 0)
    if len(column) and (lengths != expected).any():
        i = int(np.flatnonzero(lengths != expected)[0])
        raise BadVectorError(f"vector column {vector!r} has a vector of length {lengths[i]} at {where(i)}; "
                             f"other vectors have length {expected}, and every vector must have the same length")
    values = column.flatten()
    if values.null_count:
        element = int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0])
        raise _bad(vector, "NULL-element", where(int(np.searchsorted(np.cumsum(lengths), element, side="right"))))
    return values.to_numpy(zero_copy_only=False).reshape(len(column), expected)


def _normalise(x: np.ndarray, where, vector: str, rows: np.ndarray | None = None) -> None:
    """Scale the float64 rows of x to unit length in place; a zero, NaN or infinite vector names its
    row (rows maps to the part).

    ||x||^2 is summed directly, except where it would underflow (squares of coordinates below about
    1e-154 lose digits or vanish) or overflow (above about 1e154): those rows are first divided by
    their largest |x_k|, so a finite non-zero vector of any magnitude gets its unit vector."""
    norms2 = np.einsum("ij,ij->i", x, x)
    awkward = np.flatnonzero(~((norms2 > TINY_SQUARED) & (norms2 < HUGE_SQUARED)))  # NaN is awkward too
    scaled = None
    if len(awkward):
        largest = np.max(np.abs(x[awkward]), axis=1)
        bad = ~(np.isfinite(largest) & (largest > 0))
        if bad.any():
            i = int(awkward[np.flatnonzero(bad)[0]])
            word = "zero-length" if largest[bad][0] == 0 else "NaN" if np.isnan(x[i]).any() else "infinite"
            raise _bad(vector, word, where(int(i if rows is None else rows[i])))
        scaled = x[awkward] / largest[:, None]
        scaled /= np.sqrt(np.einsum("ij,ij->i", scaled, scaled))[:, None]
        norms2[awkward] = 1.0
    x *= (1.0 / np.sqrt(norms2))[:, None]
    if scaled is not None:
        x[awkward] = scaled


def _unit_vectors(column: pa.Array, where, vector: str, dim: int | None) -> np.ndarray:
    """Check every vector and return them scaled to unit length, as float64 rows."""
    x = np.array(_raw_vectors(column, where, vector, dim), dtype=np.float64)
    _normalise(x, where, vector)
    return x
