"""compare_retrieval: is model A better than model B on these queries, significantly?

The input is a per-query evaluation table (model, qid, metric, value), as embsql.evaluate(...,
per_query=True) returns; the numerics are embsql.core.retrieval_comparison (a cluster sign-flip test and a
cluster-robust t interval over paraphrase groups).
"""

from __future__ import annotations

import duckdb
from sqlglot import exp

from embsql.core.retrieval_comparison import PAIR_COLUMNS, compare_metric
from embsql.errors import InputError
from embsql.io.columns import require_number
from embsql.io.sources import local_sources, resolve
from embsql.result_table import ResultTable


def _table(source):
    """A ResultTable becomes an Arrow table (a frame the sources accept); anything else as it is."""
    return source.to_arrow() if isinstance(source, ResultTable) else source


def _select(con, name: str, columns: dict[str, str]) -> dict:
    """{role: list of values} of the named columns of a source (each column checked first)."""
    source = resolve(con, name)
    for role, column in columns.items():
        kind = source.require(column, role)
        if role == "value":
            require_number(column, kind, source.name)
    query = exp.select(*(exp.alias_(exp.column(c, quoted=True), f"__emb_{r}", quoted=True) for r, c in columns.items())
                       ).from_(source.table.copy())
    table = con.sql(query.sql("duckdb")).to_arrow_table()
    return {role: table.column(f"__emb_{role}").to_pylist() for role in columns}


def compare_retrieval(con: duckdb.DuckDBPyConnection, evaluation, *, queries=None, metric: str = "ndcg@10",
                      model: str = "model", qid: str = "qid", group: str | None = None, permutations: int = 10_000,
                      seed: int = 42, level: float = 0.95, p_adjust: str | None = "holm") -> ResultTable:
    """Every pair of models on one metric: mean_a, mean_b, difference (a - b), its cluster-robust
    se, a ``level`` t interval with G - 1 degrees of freedom (ci_low, ci_high), the two-sided
    paired randomization p-value (scores swapped between the two models for whole paraphrase
    groups, or single queries without ``group``) and p_adjusted across all pairs (``p_adjust``:
    'holm', 'bh', 'bonferroni' or None).  calibrated is true from 30 groups on, where the
    interval's simulated coverage held.

    ``evaluation``: a table, file, DataFrame, Arrow table or ResultTable with columns ``model``,
    ``qid``, ``metric`` and ``value``.  ``group`` names the paraphrase-group column, read from
    ``queries`` (a table with ``qid`` and ``group``; a model column there is ignored) when given,
    else from the evaluation table.
    """
    return _compare(con, _table(evaluation), _table(queries), metric=metric, model=model, qid=qid, group=group,
                    permutations=permutations, seed=seed, level=level, p_adjust=p_adjust)


def _compare(con, evaluation, queries, *, metric, model, qid, group, permutations, seed, level, p_adjust):
    with local_sources(con, evaluation, queries) as (evaluation, queries):
        columns = {"model": model, "qid": qid, "metric": "metric", "value": "value"}
        if group is not None and queries is None:
            columns["group"] = group
        rows = _select(con, evaluation, columns)
        groups = rows.get("group")
        if group is not None and queries is not None:
            known = _select(con, queries, {"qid": qid, "group": group})
            pairs = {}
            for q, g in zip(known["qid"], known["group"]):
                pairs.setdefault(str(q), set()).add(g)
            split = next((q for q, gs in pairs.items() if len(gs) > 1), None)
            if split is not None:
                raise InputError(f"queries: qid {split!r} is in more than one group ({sorted(map(str, pairs[split]))}); "
                                 "each query belongs to one paraphrase group")
            missing = [q for q in rows["qid"] if str(q) not in pairs]
            if missing:
                raise InputError(f"evaluation: qid {missing[0]!r} is not in queries ({len(set(map(str, missing)))} such "
                                 f"queries), so it has no paraphrase group ({group!r})")
            groups = [next(iter(pairs[str(q)])) for q in rows["qid"]]
        result = compare_metric(rows["model"], rows["qid"], rows["metric"], rows["value"], groups, metric=metric,
                                permutations=permutations, seed=seed, level=level, p_adjust=p_adjust)
        return ResultTable.from_dicts(f"paired comparison of {metric}", PAIR_COLUMNS, result)
