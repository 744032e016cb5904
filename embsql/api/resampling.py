"""Python face of the cluster jackknife, the cluster bootstrap and the paired model comparison.

All three work on per-group sufficient statistics (embsql.io.table_stream), so they cost one pass
over the items; the SQL functions emb_jackknife, emb_bootstrap and emb_compare_structure call the same
kernels (embsql.core.resampling) through the UDFs in udfs/resampling.py.
"""

from __future__ import annotations

import duckdb

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
from embsql.io.sources import TableLike, opened
from embsql.io.table_stream import Skipped, group_sums, unit_rows
from embsql.result_table import ResultTable
from embsql.vocabulary import check_model_name


def jackknife(con: duckdb.DuckDBPyConnection, source: TableLike, *, group: str, vector: str,
              statistic: str = "r2", model: str | None = None, sizes: str = "auto",
              bad_rows: str = "error") -> ResultTable:
    """The leave-one-group-out (cluster jackknife) standard error of a statistic, per model.

    Groups, not items, are the independent units (items of one topic or paraphrase group are
    correlated), so each replicate deletes one whole group and recomputes the statistic from the
    group sums.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection the source is read on.
    source : str or table object
        The table read on ``con`` (a name, a file or a frame, as for :func:`embsql.anova`).
    group : str
        The group column.
    vector : str
        The vector column (its vectors are scaled to unit length).
    statistic : str, default "r2"
        ``'r2'``, ``'r2_adj'``, ``'f'``, ``'v'``, ``'w_bar'`` or ``'icc'``.
    model : str, optional
        The model column: one row per value, under this column's name.
    sizes : str, default "auto"
        ``'fixed'`` when the group sizes are fixed by the design, ``'random'`` when they come with
        the groups, ``'auto'`` to decide from the sizes.
    bad_rows : {"error", "skip"}
        What a NULL, zero or non-finite (NaN or infinite) vector does: ``"error"`` (the default)
        refuses it, naming its model, group and row (counted from 1); ``"skip"`` leaves its row out
        and counts it in the result's ``skipped`` table (per model: ``skipped_null``,
        ``skipped_zero``, ``skipped_nonfinite``).

    Returns
    -------
    ResultTable
        One row per model, the model column first when ``model`` is given: ``statistic`` (the statistic asked for),
        ``estimate`` (its value on all groups), ``se`` (the jackknife standard error), ``groups``
        and ``sizes`` (the rule that was used).

    Raises
    ------
    InputError
        ``argument.stat`` (an unknown statistic), ``column.missing``, ``column.collision``,
        ``label.null``, ``vector.*``, ``design.*`` (too few groups), ``source.empty``.

    Examples
    --------
    >>> import embsql
    >>> con = embsql.connect()
    >>> _ = con.execute("CREATE TABLE ex AS SELECT 'g' || (i % 6) AS topic, [cos(i % 6 + 0.6 * (i // 6 % 3 - 1)), "
    ...                 "sin(i % 6 + 0.6 * (i // 6 % 3 - 1))] AS embedding FROM range(36) t(i)")
    >>> result = embsql.jackknife(con, "ex", group="topic", vector="embedding")
    >>> result.statistic, round(result.estimate, 4), round(result.se, 4), result.groups
    ('r2', 0.7803, 0.0066, 6)
    """
    check_model_name(model, JACKKNIFE_COLUMNS, "jackknife")
    with opened(con, source) as table:
        parts = group_sums(con, table, group, vector, model=model, skip=(skipped := Skipped.asked(bad_rows)))
    rows = []
    for value, sums in parts:
        result = resampling.jackknife(sums, statistic, sizes=sizes)
        rows.append((value, {"statistic": statistic, "estimate": result.estimate, "se": result.se,
                             "groups": len(sums.counts), "sizes": result.sizes}))
    return Skipped.attached(skipped, ResultTable.of_models("jackknife", model, JACKKNIFE_COLUMNS, rows), model)


def bootstrap(con: duckdb.DuckDBPyConnection, source: TableLike, *, group: str, vector: str,
              statistic: str = "r2", replicates: int = 2000, seed: int = 42, level: float = 0.95,
              model: str | None = None, sizes: str = "auto", bad_rows: str = "error") -> ResultTable:
    """The cluster bootstrap (groups resampled with replacement): a standard error and a
    calibrated confidence interval of a statistic, per model.

    The interval is built around the bias-corrected estimate and calibrated on the jackknife's
    scale (validation/validity_intervals.py measures its coverage); ``calibrated`` says whether the
    statistic and the number of groups are among those whose coverage was measured.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection the source is read on.
    source : str or table object
        The table read on ``con`` (a name, a file or a frame, as for :func:`embsql.anova`).
    group : str
        The group column.
    vector : str
        The vector column (its vectors are scaled to unit length).
    statistic : str, default "r2"
        ``'r2'``, ``'r2_adj'``, ``'f'``, ``'v'``, ``'w_bar'`` or ``'icc'``.
    replicates : int, default 2000
        The number of bootstrap replicates.
    seed : int, default 42
        The random seed (0 or more): the interval is reproducible from it.
    level : float, default 0.95
        The confidence level, strictly between 0 and 1.
    model : str, optional
        The model column: one row per value, under this column's name.
    sizes : str, default "auto"
        ``'fixed'``, ``'random'`` or ``'auto'``, as for :func:`embsql.jackknife`.
    bad_rows : {"error", "skip"}
        What a NULL, zero or non-finite (NaN or infinite) vector does: ``"error"`` (the default)
        refuses it, naming its model, group and row (counted from 1); ``"skip"`` leaves its row out
        and counts it in the result's ``skipped`` table (per model: ``skipped_null``,
        ``skipped_zero``, ``skipped_nonfinite``).

    Returns
    -------
    ResultTable
        One row per model, the model column first when ``model`` is given: ``statistic``, ``estimate``,
        ``se`` (the bootstrap standard error), ``ci_low`` and ``ci_high`` (the interval),
        ``level``, ``replicates``, ``groups``, ``estimate_bc`` (the jackknife bias-corrected estimate the
        interval is centred on, computed on the logit scale for R², W̄ and V and the log scale for F:
        h⁻¹(G·h(θ) − (G − 1)·mean_g h(θ₋g)) with h = logit or log, the figure itself for ``icc`` and
        ``r2_adj``), ``dropped`` (replicates where the statistic was undefined),
        ``calibrated`` and ``sizes``.

    Raises
    ------
    InputError
        ``argument.stat``, ``argument.replicates``, ``argument.seed``, ``argument.level``,
        ``column.missing``, ``column.collision``, ``label.null``, ``vector.*``, ``design.*``
        (``design.dropped_resamples`` when too many replicates leave the statistic undefined).

    Examples
    --------
    >>> import embsql
    >>> con = embsql.connect()
    >>> _ = con.execute("CREATE TABLE ex AS SELECT 'g' || (i % 6) AS topic, [cos(i % 6 + 0.6 * (i // 6 % 3 - 1)), "
    ...                 "sin(i % 6 + 0.6 * (i // 6 % 3 - 1))] AS embedding FROM range(36) t(i)")
    >>> result = embsql.bootstrap(con, "ex", group="topic", vector="embedding", replicates=200)
    >>> result.ci_low < result.estimate_bc < result.ci_high, result.level, result.replicates
    (True, 0.95, 200)
    """
    check_model_name(model, BOOTSTRAP_COLUMNS, "bootstrap")
    with opened(con, source) as table:
        parts = group_sums(con, table, group, vector, model=model, skip=(skipped := Skipped.asked(bad_rows)))
    rows = []
    for value, sums in parts:
        result = resampling.bootstrap(canonical(sums), statistic, replicates=replicates, seed=seed, level=level,
                                      sizes=sizes)
        rows.append((value, bootstrap_row(statistic, result, level, replicates, len(sums.counts))))
    return Skipped.attached(skipped, ResultTable.of_models("bootstrap", model, BOOTSTRAP_COLUMNS, rows), model)


def compare_structure(con: duckdb.DuckDBPyConnection, source: TableLike, *, group: str, vector: str, model: str, item: str,
            statistic: str = "r2", replicates: int = 2000, seed: int = 42, level: float = 0.95,
            common: bool = False, sizes: str = "auto", intervals: str = "marginal",
            bad_rows: str = "error") -> ResultTable:
    """The paired comparison of every pair of models that embedded the same items, paired by group.

    The difference of a statistic between two models, with a standard error from the paired
    cluster jackknife (the same group deletions for both models) and an interval from the
    studentized paired cluster bootstrap (the same resamples for both models).

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection the source is read on.
    source : str or table object
        The table to read: one row per model and item.
    group : str
        The group column (an item's group must be the same in every model).
    vector : str
        The vector column; vectors are scaled to unit length.
    model : str
        The model column (at least two models).
    item : str
        The item column: which rows of different models embed the same item.
    statistic : str, default "r2"
        ``'r2'``, ``'r2_adj'``, ``'f'``, ``'v'``, ``'w_bar'`` or ``'icc'``.
    replicates : int, default 2000
        The number of bootstrap replicates.
    seed : int, default 42
        The random seed (0 or more).
    level : float, default 0.95
        The confidence level, strictly between 0 and 1.
    common : bool
        Keep only the items every model has (instead of refusing items one model lacks).
    sizes : str, default "auto"
        ``'fixed'``, ``'random'`` or ``'auto'``, as for :func:`embsql.jackknife`.
    intervals : str
        ``'marginal'`` (default): each pair's interval holds ``level`` on its own.
        ``'simultaneous'``: with K models the K(K-1)/2 intervals hold ``level`` together:
        difference -/+ c se, c the ``level`` quantile of the largest studentized difference
        |t*| over all pairs in the same joint resamples of groups (a single-step max-|t|, the
        resampling of :func:`embsql.rank_models`; se is then the jackknife SE of that joint
        resampling).  The table gains a column ``interval`` = ``'simultaneous'``.  Use it when
        you read three or more models' pairs together.  All the intervals held together in
        {{figure rank_sets.simultaneous_r2 range}} of simulated data sets at 95% (3 to 10 models, 30 or 100
        groups; validation/rank_sets.py); ``calibrated`` is then true only for R² from 30 groups on.
    bad_rows : {"error", "skip"}
        What a NULL, zero or non-finite (NaN or infinite) vector does: ``"error"`` (the default)
        refuses it, naming its model, item and row (counted from 1); ``"skip"`` leaves its row out
        and counts it in the result's ``skipped`` table (per model: ``skipped_null``,
        ``skipped_zero``, ``skipped_nonfinite``). A skipped row leaves its item missing in
        that model, so ``common=True`` compares the others on the items every model kept.

    Returns
    -------
    ResultTable
        One row per pair of models (in model order): ``model_a``, ``model_b``, ``estimate_a``,
        ``estimate_b``, ``difference`` (estimate_a - estimate_b), ``se``, ``ci_low``, ``ci_high``,
        ``items`` (the items either model has), ``same_items`` (whether the two sets are equal),
        ``shared_items`` (those both have), ``dropped`` and ``calibrated`` (as for
        :func:`embsql.bootstrap`) and ``sizes``; with ``intervals='simultaneous'`` also ``interval``.

    Raises
    ------
    InputError
        ``model.too_few`` (one model), ``argument.*`` (``argument.intervals``), ``column.missing``, ``label.null``,
        ``label.duplicate`` (an item twice in one model), ``vector.*``, ``design.*``.

    Examples
    --------
    >>> import embsql
    >>> con = embsql.connect()
    >>> _ = con.execute("CREATE TABLE ex AS SELECT m AS model, i AS item_id, 'g' || (i % 6) AS topic, "
    ...                 "[cos(i % 6 + s * sin(i)), sin(i % 6 + s * sin(i))] AS embedding "
    ...                 "FROM range(36) t(i), (VALUES ('tight', 0.1), ('loose', 0.5)) m(m, s)")
    >>> result = embsql.compare_structure(con, "ex", group="topic", vector="embedding", model="model", item="item_id",
    ...                         replicates=200)
    >>> result.model_a, result.model_b, result.difference < 0, result.shared_items
    ('loose', 'tight', True, 36)
    """
    with opened(con, source) as table:
        parts = unit_rows(con, table, group, vector, model=model, item=item, extra=item, extra_role="item",
                          skip=(skipped := Skipped.asked(bad_rows)))
    if len(parts) < 2:
        fail("model.too_few", column=f"model column {model!r}", models=len(parts), needs="a comparison")
    models = {value: (part.extra, part.labels, part.unit) for value, part in parts}
    rows = compare_rows(models, statistic, replicates=replicates, seed=seed, level=level, common=common, sizes=sizes,
                        intervals=intervals)
    columns = COMPARE_COLUMNS + (("interval",) if intervals == "simultaneous" else ())
    return Skipped.attached(skipped, ResultTable.from_dicts("compare_structure", columns, rows), model)
