"""Stage 1 of a report on DuckDB: the rows streamed through the one-pass accumulator that
embsql.anova uses (embsql.io.table_stream), not the portable aggregate.

DuckDB runs in this process, so its rows need not stay in the engine: streamed as Arrow batches
and summed by numpy (embsql.core.sums.Accumulator: stable within-group sums of squares, merged
in scan order, so run to run the same bits), they cost one pass.  The portable aggregate
(embsql.io.portable_sums) computes the same figures in SQL with a SUM and a VAR_POP per coordinate;
on DuckDB that took 3-5x the stream at d = 384 (bench/report_anova.py).  It stays the route of the
other engines, where the rows live on a server, and what ``Report.sql`` prints for any dialect.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import duckdb
from sqlglot import exp

from embsql.core.sums import GroupSums
from embsql.io import table_stream
from embsql.io.portable_sums import Dimensions
from embsql.io.sources import resolve


@dataclass(frozen=True)
class StreamedSums:
    """The group sums of each model, and what a report records about how they were read."""

    parts: list[tuple[object, GroupSums]]    # [(model value, or None without a model column; GroupSums)]
    dims: Dimensions                         # d of each model, read from its vectors
    sql: str                                 # the query DuckDB streamed
    nbytes: int                              # the sums handed to stage 2: O(G d), as an engine returns them


def streamed_sums(con: duckdb.DuckDBPyConnection, source: str, relation: exp.Expression, group: str, vector: str,
                  model: str | None = None, where: str | None = None,
                  skip: table_stream.Skipped | None = None) -> StreamedSums:
    """The group sums of ``relation`` (``source``, a name on ``con``, filtered by ``where``).

    Bad rows are refused as embsql.anova refuses them (naming the row, counted among the rows
    that pass ``where``, and its group); ``source`` and ``where`` name the rows in messages.  With
    ``skip`` (bad_rows="skip") the rows with an unusable vector are left out and counted there."""
    resolved = resolve(con, source)
    shown = resolved.name if where is None else f"{resolved.name} where {where}"
    rows = dataclasses.replace(resolved, name=shown, table=relation)
    parts = table_stream.group_sums(con, rows, group, vector, model=model, skip=skip)
    dims = Dimensions({value: sums.sums.shape[1] for value, sums in parts})
    nbytes = sum(sums.counts.nbytes + sums.sums.nbytes + sums.within_ss().nbytes for _, sums in parts)
    return StreamedSums(parts, dims, table_stream.rows_query(rows, group, vector, model), nbytes)
