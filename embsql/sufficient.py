"""Stage 1: reduce an embedding table to sufficient statistics in one aggregate query.

Per (by value, group): the count n_g of usable vectors and s_g, the sum of their unit vectors,
in the wide form (one column per dimension).  The query is a sqlglot AST, so the same stage
can be printed or transpiled; DuckDB runs it in one streaming pass with O(G * d) state.
The wide form is several times faster in DuckDB than unnesting to one row per coordinate,
which is what the dimension-agnostic SQL macros have to do.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb
import numpy as np
from sqlglot import exp

from .errors import BadLabelError, BadVectorError, InputError
from .sources import Source

# Internal expressions are written in DuckDB's SQL (1-based list indexes): parse them so.
DIALECT = "duckdb"
B, G, V, KEY, D, NRM2, BAD, INV = ("__emb_b", "__emb_g", "__emb_v", "__emb_key", "__emb_d", "__emb_nrm2", "__emb_bad",
                                   "__emb_inv")

# The order matters: the first true condition names what is wrong with a vector.
_BAD_VECTOR = f"""CASE
    WHEN {V} IS NULL THEN 'NULL'
    WHEN {NRM2} IS NULL THEN 'NULL-element'
    WHEN isnan({NRM2}) THEN 'NaN'
    WHEN isinf({NRM2}) THEN 'infinite'
    WHEN {NRM2} = 0 THEN 'zero-length'
END"""


@dataclass(frozen=True)
class GroupSums:
    """Sufficient statistics: one row per (by, group); ``sums`` is G x d, float64."""

    by: np.ndarray | None
    labels: np.ndarray
    counts: np.ndarray
    sums: np.ndarray

    def partitions(self):
        """Yield (by value, GroupSums of that by value), in sorted by order."""
        if self.by is None:
            yield None, self
            return
        for value in sorted(set(self.by.tolist()), key=lambda v: (v is None, v)):
            keep = self.by == value
            yield value, GroupSums(None, self.labels[keep], self.counts[keep], self.sums[keep])


def _column(name: str) -> exp.Column:
    return exp.column(name, quoted=True)


def rows_query(source: Source, group: str, vector: str, by: str | None, key: str | None = None) -> exp.Select:
    """One row per input row: by, group, vector, dimension, squared norm and a defect word."""
    picked = exp.select(
        exp.alias_(_column(by) if by else exp.null(), B),
        exp.alias_(_column(group), G),
        exp.alias_(_column(vector), V),
        exp.alias_(_column(key) if key else exp.null(), KEY),
    ).from_(source.table.copy())
    # The squared norm as in sql/embsql.sql (emb__rows), which says why not list_dot_product.
    measured = exp.select(B, G, V, KEY, f"len({V}) AS {D}",
                          f"CASE WHEN list_count({V}) = len({V}) "
                          f"THEN list_sum(list_transform({V}, lambda x: CAST(x AS DOUBLE) * x)) END AS {NRM2}",
                          dialect=DIALECT).from_(picked.subquery("picked"))
    return exp.select(B, G, V, KEY, D, NRM2, f"{_BAD_VECTOR} AS {BAD}",
                      dialect=DIALECT).from_(measured.subquery("measured"))


def group_sums_query(source: Source, group: str, vector: str, by: str | None, dim: int) -> exp.Select:
    """The stage-1 aggregate: counts, defect counts, dimensions and per-dimension sums."""
    scaled = exp.select(B, G, V, D, BAD, f"CASE WHEN {BAD} IS NULL THEN 1.0 / sqrt({NRM2}) END AS {INV}",
                        dialect=DIALECT).from_(rows_query(source, group, vector, by).subquery("rows"))
    sums = [f"sum({V}[{k}] * {INV}) AS __emb_s{k}" for k in range(1, dim + 1)]
    return (exp.select(B, G,
                       f"count(*) FILTER (WHERE {BAD} IS NULL) AS __emb_n",
                       f"count(*) FILTER (WHERE {BAD} IS NOT NULL) AS __emb_nbad",
                       f"min({D}) AS __emb_dmin", f"max({D}) AS __emb_dmax", *sums, dialect=DIALECT)
            .from_(scaled.subquery("scaled")).group_by(B, G))


def vector_dimension(con: duckdb.DuckDBPyConnection, source: Source, vector: str) -> int:
    """d from the column type for FLOAT[d]; otherwise the longest vector in the column."""
    fixed = source.vector_dimension(vector)
    if fixed is not None:
        return fixed
    query = exp.select(exp.func("max", exp.func("len", _column(vector)))).from_(source.table.copy())
    longest = con.sql(query.sql("duckdb")).fetchall()[0][0]
    if longest is None:
        raise BadVectorError(f"vector column {vector!r} in {source.name!r} has no vectors")
    return int(longest)


def group_sums(con: duckdb.DuckDBPyConnection, source: Source, group: str, vector: str,
               by: str | None = None, key: str | None = None) -> GroupSums:
    """Run stage 1 on DuckDB and check the input; raise naming the row for any bad vector."""
    for name, role in ((group, "group"), (by, "by"), (key, "key")):
        if name is not None:
            source.require(name, role)
    if by is not None and by == group:
        raise InputError(f"by column {by!r} is the group column; pass a different column (e.g. the model)")
    dim = vector_dimension(con, source, vector)
    table = con.sql(group_sums_query(source, group, vector, by, dim).sql("duckdb")).to_arrow_table()
    if table.num_rows == 0:
        raise InputError(f"source {source.name!r} has no rows")
    labels = np.asarray(table.column(G).to_pylist(), dtype=object)
    by_values = np.asarray(table.column(B).to_pylist(), dtype=object) if by else None
    nbad = np.asarray(table.column("__emb_nbad"))
    dmin, dmax = np.asarray(table.column("__emb_dmin")), np.asarray(table.column("__emb_dmax"))
    # models (by values) may differ in dimension; within one, every vector has the same length
    mixed = any(dmin[part].min() != dmax[part].max()
                for part in ([by_values == v for v in set(by_values.tolist())] if by else [slice(None)]))
    if any(label is None for label in labels) or nbad.sum() > 0 or mixed:
        _raise_first_bad_row(con, source, group, vector, by, key, dim)
    sums = np.column_stack([np.asarray(table.column(f"__emb_s{k}"), dtype=np.float64) for k in range(1, dim + 1)])
    # a by value with fewer dimensions than the longest has NULL sums past its own length
    sums[np.arange(dim)[None, :] >= dmax[:, None]] = 0.0
    return GroupSums(by_values, labels, np.asarray(table.column("__emb_n"), dtype=np.int64), sums)


def _raise_first_bad_row(con, source, group, vector, by, key, dim) -> None:
    """Only on the error path: find the first offending row (0-based, in scan order)."""
    rows = rows_query(source, group, vector, by, key)
    numbered = exp.select("*", "row_number() OVER () - 1 AS __emb_row", f"max({D}) OVER (PARTITION BY {B}) AS __emb_dim",
                          dialect=DIALECT).from_(rows.subquery("r"))
    condition = f"{G} IS NULL OR {BAD} IS NOT NULL OR {D} <> __emb_dim"
    found = con.sql(exp.select("*").from_(numbered.subquery("n")).where(condition, dialect=DIALECT).limit(1).sql("duckdb"))
    row = dict(zip(found.columns, found.fetchall()[0]))
    where = f"row {row['__emb_row']}" + (f" (key {row[KEY]!r})" if key else "")
    if row[G] is None:
        raise BadLabelError(f"group column {group!r} has a NULL label at {where}")
    if row[BAD] is not None:
        raise BadVectorError(f"vector column {vector!r} has a {row[BAD]} vector at {where} (group {row[G]!r}); "
                             "vectors must be non-NULL, finite and of non-zero length")
    raise BadVectorError(f"vector column {vector!r} has a vector of length {row[D]} at {where} (group {row[G]!r}); "
                         f"the longest vectors have length {row['__emb_dim']}, and every vector must have the same length")
