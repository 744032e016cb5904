"""compare_retrieval: is model A better than model B on these queries, significantly?

The input is a per-query evaluation table (model, qid, metric, value), as embsql.evaluate(...,
per_query=True) returns; the numerics are embsql.core.retrieval_comparison (a cluster sign-flip test and a
cluster-robust t interval over paraphrase groups).
"""

from __future__ import annotations

from contextlib import ExitStack

import duckdb
from sqlglot import exp

from embsql.core.retrieval_comparison import PAIR_COLUMNS, compare_metric
from embsql.errors import InputError, fail
from embsql.io.columns import first_bad_label, require_number
from embsql.io.retrieval_tables import Queries, arrow_of, as_table, check_model
from embsql.io.sources import local_source, resolve
from embsql.result_table import ResultTable


def _select(con: duckdb.DuckDBPyConnection, name: str, columns: dict[str, str], what: str) -> dict[str, list]:
    """{role: list of values} of the named columns of a source (each column checked first; a NULL
    or NaN model is refused, naming its row)."""
    source = resolve(con, name)
    for role, column in columns.items():
        kind = source.require(column, role)
        if role == "value":
            require_number(column, kind, source.name)
    query = exp.select(*(exp.alias_(exp.column(c, quoted=True), f"__emb_{r}", quoted=True) for r, c in columns.items())
                       ).from_(source.table.copy())
    table = con.sql(query.sql("duckdb")).to_arrow_table()
    if "model" in columns:
        bad = first_bad_label(table.column("__emb_model"))
        if bad is not None:
            fail("label.null", role="model", column=repr(columns["model"]), word=bad[1],
                 where=f" at row {bad[0] + 1} of {what} {source.name!r}")
    return {role: table.column(f"__emb_{role}").to_pylist() for role in columns}


def _query_groups(con: duckdb.DuckDBPyConnection, queries: Queries, qids: list) -> list:
    """The paraphrase group of each qid, from a queries table (one group per qid; every qid there)."""
    known = _select(con, str(queries.source), {"qid": queries.qid, "group": queries.group}, "queries")
    pairs: dict[str, set] = {}
    for q, g in zip(known["qid"], known["group"]):
        pairs.setdefault(str(q), set()).add(g)
    split = next((q for q, gs in pairs.items() if len(gs) > 1), None)
    if split is not None:
        raise InputError(f"queries: qid {split!r} is in more than one group ({sorted(map(str, pairs[split]))}); "
                         "each query belongs to one paraphrase group")
    missing = [q for q in qids if str(q) not in pairs]
    if missing:
        raise InputError(f"evaluation: qid {missing[0]!r} is not in queries ({len(set(map(str, missing)))} such "
                         f"queries), so it has no paraphrase group ({queries.group!r})")
    return [next(iter(pairs[str(q)])) for q in qids]


def evaluation_columns(con: duckdb.DuckDBPyConnection, stack: ExitStack, evaluation: object, *,
                       queries: Queries | object | None, group: str | None, model: str,
                       function: str) -> tuple[dict[str, list], list | None]:
    """The columns (model, qid, metric, value) of a per-query evaluation as lists, and each row's
    paraphrase group (from ``queries`` or the evaluation's ``group`` column; None without groups).
    ``stack`` holds the registered sources for as long as the caller reads them."""
    if queries is not None and group is not None:
        raise InputError(f"{function} takes the paraphrase groups from queries= (its group column, "
                         "Queries(source, group=...)) or from group= (a column of the evaluation), not both")
    columns = {"model": model, "qid": "qid", "metric": "metric", "value": "value"}
    if group is not None:
        columns["group"] = group
    rows = _select(con, stack.enter_context(local_source(con, arrow_of(evaluation))), columns, "evaluation")
    groups = rows.get("group")
    if queries is not None:
        spec = stack.enter_context(as_table(queries, Queries, "queries").on(con))
        groups = _query_groups(con, spec, rows["qid"])
    return rows, groups


def compare_retrieval(con: duckdb.DuckDBPyConnection, evaluation: object, *, model: str,
                      queries: Queries | object | None = None, group: str | None = None, metric: str = "ndcg@10",
                      permutations: int = 10_000, seed: int = 42, level: float = 0.95, p_adjust: str | None = "holm",
                      intervals: str = "marginal", replicates: int = 2000) -> ResultTable:
    """Every pair of models on one metric, on the same queries: the difference, its interval and a
    paired randomization p-value that respects paraphrase groups.

    Per query d = x_a - x_b; queries fall in G clusters (paraphrase groups; without groups each
    query is its own).  difference = mean_a - mean_b; se is cluster-robust (CR1); the interval is
    difference -/+ t(G - 1) se.  The p-value swaps the two models' scores for whole clusters (a
    sign flip of each cluster's summed difference), two-sided, exact when 2^G <= permutations.
    Swapping single paraphrases of one question would make the test reject too often.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection the tables are read on.
    evaluation : source or ResultTable
        A per-query evaluation: ``evaluate(..., per_query=True)``'s result, or a table, file or
        DataFrame with the columns ``<model>``, ``qid``, ``metric`` and ``value``.
    model : str
        The evaluation's model column (evaluate names it after the run's model column).
    queries : Queries or source, optional
        A queries table whose group column gives each qid's paraphrase group (``Queries.qid`` and
        ``Queries.group``; a model column there is not read).
    group : str, optional
        Instead of ``queries``: the evaluation's own paraphrase-group column.  Neither: each query is
        its own cluster.
    metric : str, default "ndcg@10"
        The metric compared (a value of the evaluation's metric column).
    permutations : int, default 10000
        Random sign vectors of the test (every sign vector when 2^G is fewer).
    seed : int, default 42
        The random seed (a seed gives the same p whatever the row order, and from SQL).
    level : float, default 0.95
        The confidence level of the interval.
    p_adjust : {"holm", "bh", "bonferroni", None}, default "holm"
        The adjustment of the p-values across the pairs.
    intervals : {"marginal", "simultaneous"}, default "marginal"
        ``'marginal'``: each pair's t interval holds ``level`` on its own.  ``'simultaneous'``:
        the K(K-1)/2 intervals hold ``level`` together: difference -/+ c se, c the ``level``
        quantile of the largest studentized difference |t*| over all pairs in joint cluster
        bootstrap resamples (the same resamples of clusters for every model; a single-step
        max-|t|).  The table gains a column ``interval`` = ``'simultaneous'``; the p-values are
        unchanged (adjusted by ``p_adjust``).  All the intervals held together in
        {{figure rank_sets.simultaneous_ndcg range}} of simulated data sets at 95% (3 to 10 models, 30 or 100
        clusters; validation/rank_sets.py).
    replicates : int, default 2000
        The joint cluster bootstrap resamples of ``intervals='simultaneous'``.

    Returns
    -------
    ResultTable
        One row per pair of models (in display order): ``model_a``, ``model_b``, ``metric``,
        ``mean_a``, ``mean_b``, ``difference`` (a - b), ``se``, ``ci_low``, ``ci_high``, ``p_value``,
        ``p_adjusted``, ``p_adjust``, ``queries``, ``groups``, ``permutations`` (sign vectors used),
        ``method`` ("group sign-flip" or "query sign-flip", "exact " when enumerated), ``level``,
        ``calibrated`` (30 or more clusters, where the interval's simulated coverage held); with
        ``intervals='simultaneous'`` also ``interval``.

    Raises
    ------
    InputError
        No rows for the metric, a model without a value for a qid another model has, a value twice or
        not finite, a qid in two groups or missing from ``queries``, both ``queries`` and ``group``,
        a bad permutations, seed, level, p_adjust or intervals.
    DesignError
        Fewer than two models.
    ColumnNotFoundError, ColumnTypeError, BadLabelError
        A missing column, a value column that is not numeric, a NULL model or group (label.null).

    Examples
    --------
    >>> import embsql, pyarrow as pa
    >>> evaluation = pa.table({"model": ["a"] * 5 + ["b"] * 5, "qid": [f"q{i}" for i in range(5)] * 2,
    ...                        "metric": ["ndcg@10"] * 10, "value": [1.0, 1.0, 1.0, 1.0, 2.0] + [0.0] * 5,
    ...                        "group": ["A", "B", "B", "C", "C"] * 2})
    >>> row = embsql.compare_retrieval(embsql.connect(), evaluation, group="group", model="model").to_dicts()[0]
    >>> row["difference"], row["p_value"], row["method"]
    (1.2, 0.25, 'exact group sign-flip')
    """
    check_model(model, (), "compare_retrieval")
    with ExitStack() as stack:
        rows, groups = evaluation_columns(con, stack, evaluation, queries=queries, group=group, model=model,
                                          function="compare_retrieval")
    result = compare_metric(rows["model"], rows["qid"], rows["metric"], rows["value"], groups, metric=metric,
                            permutations=permutations, seed=seed, level=level, p_adjust=p_adjust, intervals=intervals,
                            replicates=replicates)
    shown = PAIR_COLUMNS + (("interval",) if intervals == "simultaneous" else ())
    return ResultTable.from_dicts(f"paired comparison of {metric}", shown, result)
