"""The Python face of the descriptive statistics: anova, groups and anova_dist.

``anova`` and ``groups`` run stage 1 (embsql.io.table_stream) on DuckDB and stage 2
(embsql.core.decomposition) in numpy; ``anova_dist`` runs the emb_anova_dist macro, so the
distance route has exactly one implementation.
"""

from __future__ import annotations

import duckdb
from sqlglot import exp

from embsql.compat import keyword_arguments
from embsql.core import decomposition
from embsql.io.registration import register
from embsql.io.sources import accepts_frames, resolve
from embsql.io.sql import run_sql
from embsql.io.table_stream import group_sums
from embsql.result_table import ResultTable


@keyword_arguments("group", "vector", by="model")
@accepts_frames()
def anova(con: duckdb.DuckDBPyConnection, source: str, *, group: str, vector: str,
          model: str | None = None, key: str | None = None) -> ResultTable:
    """SS_T, SS_W, SS_B, R2, pseudo-F, V, mean resultant length and W-bar (one row per value of
    the ``model`` column, which keeps its name in the output).

    >>> import embsql
    >>> con = embsql.connect()
    >>> _ = con.execute("CREATE TABLE ex AS SELECT * FROM (VALUES ('A', [1.0, 0.0]), ('A', [0.8, 0.6]),"
    ...                 " ('B', [0.0, 1.0]), ('B', [-0.6, 0.8])) t(g, v)")
    >>> round(embsql.anova(con, "ex", group="g", vector="v").r2, 4)
    0.8182
    """
    parts = group_sums(con, resolve(con, source), group, vector, by=model, key=key)
    rows = [{**({model: value} if model else {}), **decomposition.anova_row(part, value)} for value, part in parts]
    return ResultTable.from_dicts("anova", ((model,) if model else ()) + decomposition.ANOVA_COLUMNS, rows)


@keyword_arguments("group", "vector", by="model")
@accepts_frames()
def groups(con: duckdb.DuckDBPyConnection, source: str, *, group: str, vector: str,
           model: str | None = None, key: str | None = None) -> ResultTable:
    """Per group: n_g, W_g and the size-corrected W~_g (None for a singleton group)."""
    parts = group_sums(con, resolve(con, source), group, vector, by=model, key=key)
    rows = [{**({model: value} if model else {}), **row} for value, part in parts
            for row in decomposition.group_rows(part)]
    return ResultTable.from_dicts("groups", ((model,) if model else ()) + decomposition.GROUP_COLUMNS, rows)


@keyword_arguments("labels", "group")
@accepts_frames("distances", "labels")
def anova_dist(con: duckdb.DuckDBPyConnection, distances: str, *, labels: str, group: str,
               i: str = "i", j: str = "j", d: str = "d", id: str = "id") -> ResultTable:
    """The decomposition from a distance table (i, j, d) and a labels table (id, group)."""
    if not con.sql("SELECT 1 FROM duckdb_functions() WHERE function_name = 'emb_anova_dist'").fetchall():
        register(con)  # a plain connection: the macro is needed; re-running the SQL file each call is not
    for name in (distances, labels):
        resolve(con, name)
    call = exp.func("emb_anova_dist", *(exp.Literal.string(s) for s in (distances, labels, group)),
                    *(exp.Kwarg(this=exp.var(k), expression=exp.Literal.string(v))
                      for k, v in (("i", i), ("j", j), ("distance", d), ("item", id))))
    result = run_sql(con, exp.select("*").from_(call).sql("duckdb"))
    return ResultTable.from_dicts("anova_dist", result.column_names, result.to_pylist())
