"""Python face of the cluster jackknife, the cluster bootstrap and the paired model comparison.

All three work on per-group sufficient statistics (embsql.io.table_stream), so they cost one pass
over the items; the SQL functions emb_jackknife, emb_bootstrap and emb_compare call the same
kernels (embsql.core.resampling) through the UDFs in udfs/resampling.py.
"""

from __future__ import annotations

import duckdb

from embsql.compat import keyword_arguments
from embsql.core import resampling
from embsql.core.model_comparison import (
    BOOTSTRAP_COLUMNS,
    COMPARE_COLUMNS,
    JACKKNIFE_COLUMNS,
    bootstrap_row,
    canonical,
    compare_rows,
)
from embsql.errors import fail
from embsql.io.sources import accepts_frames, resolve
from embsql.io.table_stream import group_sums, unit_rows
from embsql.result_table import ResultTable


@keyword_arguments("group", "vector", by="model")
@accepts_frames()
def jackknife(con: duckdb.DuckDBPyConnection, source: str, *, group: str, vector: str, stat: str = "r2",
              model: str | None = None, sizes: str = "auto") -> ResultTable:
    """Leave-one-group-out SE of ``stat`` (r2, f, v, w_bar or icc), per value of the model column.
    ``sizes``: "fixed" when the group sizes are fixed by the design, "random" when they come with the
    groups, "auto" to decide from the sizes (embsql.core.resampling.size_strata); the ``sizes``
    column says which was used."""
    rows = []
    for value, sums in group_sums(con, resolve(con, source), group, vector, by=model):
        result = resampling.jackknife(sums, stat, sizes=sizes)
        rows.append({**({model: value} if model else {}), "stat": stat, "estimate": result.estimate,
                     "se": result.se, "groups": len(sums.counts), "sizes": result.sizes})
    return ResultTable.from_dicts("jackknife", ((model,) if model else ()) + JACKKNIFE_COLUMNS, rows)


@keyword_arguments("group", "vector", by="model")
@accepts_frames()
def bootstrap(con: duckdb.DuckDBPyConnection, source: str, *, group: str, vector: str, stat: str = "r2",
              replicates: int = 2000, seed: int = 42, level: float = 0.95, model: str | None = None,
              sizes: str = "auto") -> ResultTable:
    """Cluster bootstrap (groups resampled with replacement): the bootstrap SE, and the calibrated
    interval (ci_low, ci_high) around the bias-corrected estimate (estimate_bc); see
    embsql.core.resampling for the method and bench/validity_intervals.py for its coverage."""
    rows = []
    for value, sums in group_sums(con, resolve(con, source), group, vector, by=model):
        result = resampling.bootstrap(canonical(sums), stat, replicates=replicates, seed=seed, level=level,
                                      sizes=sizes)
        rows.append({**({model: value} if model else {}),
                     **bootstrap_row(stat, result, level, replicates, len(sums.counts))})
    return ResultTable.from_dicts("bootstrap", ((model,) if model else ()) + BOOTSTRAP_COLUMNS, rows)


@keyword_arguments("group", "vector", "model", "item")
@accepts_frames()
def compare(con: duckdb.DuckDBPyConnection, source: str, *, group: str, vector: str, model: str, item: str,
            stat: str = "r2", replicates: int = 2000, seed: int = 42, level: float = 0.95,
            common: bool = False, sizes: str = "auto") -> ResultTable:
    """Paired comparison of every pair of models, paired by group label.

    difference = estimate_a - estimate_b; se from the paired cluster jackknife (the same group
    deletions for both models); ci_low/ci_high the studentized paired cluster bootstrap (the same
    resamples for both models).  items: the items either model has; shared_items: those both
    have; same_items: whether the two sets are equal.  common=True keeps only the items every
    model has.
    """
    parts = unit_rows(con, resolve(con, source), group, vector, by=model, extra=item, extra_role="item")
    if len(parts) < 2:
        fail("model.too_few", column=f"model column {model!r}", models=len(parts), needs="a comparison")
    models = {value: (part.extra, part.labels, part.unit) for value, part in parts}
    rows = compare_rows(models, stat, replicates=replicates, seed=seed, level=level, common=common, sizes=sizes)
    return ResultTable.from_dicts("compare", COMPARE_COLUMNS, rows)
