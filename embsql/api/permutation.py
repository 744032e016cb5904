"""Python face of the permutation tests on the vectors: permanova, permanova_welch and dispersion.

Each function reads the rows once (embsql.io.table_stream.unit_rows) and runs the tests of
embsql.core.row_tests on them (the report's two test sections call the same code); the SQL
functions (emb_permanova, emb_dispersion, ...) call the very same kernels through the UDFs in udfs/.
One statistic per function: pseudo-F (``permanova``), Welch's W*_d (``permanova_welch``) and the
dispersion test (``dispersion``) each have their own fixed columns.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import duckdb

from embsql.calibration import sentence
from embsql.core.arguments import check_permutations, check_seed, check_stop_after
from embsql.core.decomposition import ANOVA_COLUMNS
from embsql.core.dispersion import Dispersion
from embsql.core.row_tests import DISPERSION_COLUMNS, DISPERSION_GROUP_COLUMNS, dispersion_rows, ordered, permanova_row, spread
from embsql.io.sources import TableLike, opened
from embsql.io.table_stream import Skipped, unit_rows
from embsql.progress import DISPERSION_LABEL, permutations_label, progress_bar
from embsql.result_table import ResultTable, ResultTables
from embsql.vocabulary import check_model_name

DISPERSION_ALPHA = 0.05     # permanova warns when the dispersion test rejects at this level

# the tables' columns (after the model column): pseudo-F's test beside the decomposition it tests;
# W*_d with its own p-value, and which groups its default null left out
PERMANOVA_COLUMNS = ANOVA_COLUMNS + ("p_value", "permutations")
WELCH_COLUMNS = ("n", "groups", "w_d", "p_value", "permutations", "null_method", "groups_left_out",
                 "items_left_out", "note")

def permanova(con: duckdb.DuckDBPyConnection, source: TableLike, *, group: str, vector: str,
              permutations: int = 999, seed: int = 42, strata: str | None = None, model: str | None = None,
              progress: bool | None = None, check_dispersion: bool = True, stop_after: int | None = None,
              bad_rows: str = "error") -> ResultTable:
    """PERMANOVA: the decomposition with a permutation p-value of pseudo-F, one row per model.

    The group labels are permuted (freely, or within ``strata``); p = (b + 1) / (B + 1), with b
    the permutations whose pseudo-F reaches the observed one (ties within √ε count, as in vegan).
    The rows are put in a canonical order first, so a seed gives the same p-value whatever order
    the database returns them in.  Pseudo-F is sensitive to unequal spreads in unbalanced designs:
    the dispersion test runs beside it, and a warning says when it rejects;
    :func:`embsql.permanova_welch` tests W*_d, which is not.

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
    permutations : int, default 999
        The number of permutations B (1 to 1,000,000).
    seed : int, default 42
        The random seed (0 or more): the p-value is reproducible from it.
    strata : str, optional
        The strata column: labels are permuted only within its values.
    model : str, optional
        The model column: one row per value, under this column's name.
    progress : bool, optional
        Show a progress bar (None: only in a terminal or notebook).
    check_dispersion : bool
        Run the dispersion test too and warn (UserWarning, at the caller's line) when it rejects at
        5%: pseudo-F may then reflect spread rather than location.
    stop_after : int, optional
        Stop the permutations early, by Besag and Clifford's (1991) sequential rule, once this many
        permuted statistics have reached the observed one (10 is a good choice): then p = h / L after L
        permutations, a valid p-value, and ``permutations`` is L. A p-value under h / B comes out as
        with all B permutations; a large one costs about h / p permutations instead of B.
    bad_rows : {"error", "skip"}
        What a NULL, zero or non-finite (NaN or infinite) vector does: ``"error"`` (the default)
        refuses it, naming its model, group and row (counted from 1); ``"skip"`` leaves its row out
        and counts it in the result's ``skipped`` table (per model: ``skipped_null``,
        ``skipped_zero``, ``skipped_nonfinite``).

    Returns
    -------
    ResultTable
        One row per model, the model column first when ``model`` is given: the columns of
        :func:`embsql.anova` (``n``, ``groups``, ``ss_t``, ``ss_w``, ``ss_b``, ``r2``, ``r2_null``,
        ``f``, ``v``, ``mean_resultant_length``, ``w_bar``), then ``p_value``, the permutation
        p-value of ``f``, and ``permutations``, B (or L, the permutations run, with ``stop_after``).

    Raises
    ------
    InputError
        ``argument.permutations``, ``argument.seed``, ``argument.stop_after``, ``column.missing``, ``column.type``,
        ``column.collision``, ``label.null``, ``vector.*``, ``design.*``, ``source.empty``; a NULL
        stratum.

    Examples
    --------
    >>> import embsql
    >>> con = embsql.connect()
    >>> _ = con.execute("CREATE TABLE ex AS SELECT 'g' || (i % 3) AS topic, [cos(2 * (i % 3) + 0.4 * (i // 3 % 4 - 1.5)), "
    ...                 "sin(2 * (i % 3) + 0.4 * (i // 3 % 4 - 1.5))] AS embedding FROM range(24) t(i)")
    >>> result = embsql.permanova(con, "ex", group="topic", vector="embedding", permutations=199)
    >>> round(result.r2, 4), result.p_value, result.permutations
    (0.8144, 0.005, 199)
    """
    check_permutations(permutations)
    check_seed(seed)
    check_stop_after(stop_after, permutations)
    check_model_name(model, PERMANOVA_COLUMNS, "permanova")
    with opened(con, source) as table:
        parts = unit_rows(con, table, group, vector, model=model, extra=strata, skip=(skipped := Skipped.asked(bad_rows)))
    rows = []
    for value, part in parts:
        model_rows = ordered(part, group, strata=strata is not None)
        with progress_bar(permutations_label(value), permutations, progress) as tick:
            rows.append((value, permanova_row(model_rows, value, permutations=permutations, seed=seed, progress=tick,
                                              stop_after=stop_after)))
        if check_dispersion:
            _warn_on_spread(spread(model_rows, permutations=permutations, seed=seed, stop_after=stop_after),
                            "" if value is None else f", {model} = {value!r}")
    return Skipped.attached(skipped, ResultTable.of_models("permanova", model, PERMANOVA_COLUMNS, rows), model)


def _warn_on_spread(result: Dispersion, where: str) -> None:
    p_value = None if result.test is None else result.test.p_value
    if p_value is not None and p_value <= DISPERSION_ALPHA:
        warnings.warn(   # stacklevel 3: the line that called permanova
            f"the dispersion test is significant (p = {p_value:.3g}{where}): groups differ in spread, "
            f"so a large pseudo-F may reflect spread rather than location (the dispersion test: {sentence('dispersion.level')})",
            stacklevel=3)


def permanova_welch(con: duckdb.DuckDBPyConnection, source: TableLike, *, group: str, vector: str,
                    permutations: int = 999, seed: int = 42, strata: str | None = None, model: str | None = None,
                    null_method: str = "auto", progress: bool | None = None, bad_rows: str = "error") -> ResultTable:
    """Welch's W*_d test (Hamidi et al. 2019): are the group centroids equal, whatever the spreads?

    W*_d weights each group by its own spread, so groups that differ in spread (in unbalanced
    designs, where pseudo-F's test is liberal or conservative) do not make it reject.  By default
    its null distribution is a group-wise wild bootstrap (each group keeps the shape of its own
    spread) on the groups of at least 6 items; smaller groups are left out of that test and
    counted.  ``null_method='permutation'`` permutes the labels over every group instead (exact
    when the groups are exchangeable, not when their spreads differ in shape); ``'wild
    bootstrap'`` bootstraps every group.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection the source is read on.
    source : str or table object
        The table read on ``con`` (a name, a file or a frame, as for :func:`embsql.anova`).
    group : str
        The group column (every group needs at least 2 items).
    vector : str
        The vector column (its vectors are scaled to unit length).
    permutations : int, default 999
        The number of permutations or bootstrap draws B.
    seed : int, default 42
        The random seed (0 or more).
    strata : str, optional
        The strata column: labels are permuted (or residuals bootstrapped) within its values.
    model : str, optional
        The model column: one row per value, under this column's name.
    null_method : str
        ``'auto'`` (the wild bootstrap on the groups of 6 or more items), ``'wild bootstrap'`` or
        ``'permutation'``.
    progress : bool, optional
        Show a progress bar (None: only in a terminal or notebook).
    bad_rows : {"error", "skip"}
        What a NULL, zero or non-finite (NaN or infinite) vector does: ``"error"`` (the default)
        refuses it, naming its model, group and row (counted from 1); ``"skip"`` leaves its row out
        and counts it in the result's ``skipped`` table (per model: ``skipped_null``,
        ``skipped_zero``, ``skipped_nonfinite``).

    Returns
    -------
    ResultTable
        One row per model, the model column first when ``model`` is given:

        - ``n``, ``groups``: the items and groups of the data;
        - ``w_d``: the tested statistic W*_d, and ``p_value``, its p-value, (b + 1) / (B + 1);
        - ``permutations``: B; ``null_method``: where the null came from;
        - ``groups_left_out``, ``items_left_out``: the small groups the default test left out
          (0 when none), and ``note``, which says why (None when none).

    Raises
    ------
    InputError
        ``argument.permutations``, ``argument.seed``, ``argument.null_method``, ``column.missing``,
        ``column.collision``, ``label.null``, ``vector.*``, ``design.*`` (a group of one item).

    Examples
    --------
    >>> import embsql
    >>> con = embsql.connect()
    >>> _ = con.execute("CREATE TABLE ex AS SELECT 'g' || (i % 3) AS topic, [cos(2 * (i % 3) + 0.4 * (i // 3 % 4 - 1.5)), "
    ...                 "sin(2 * (i % 3) + 0.4 * (i // 3 % 4 - 1.5))] AS embedding FROM range(24) t(i)")
    >>> result = embsql.permanova_welch(con, "ex", group="topic", vector="embedding", permutations=199)
    >>> result.columns[:4], round(result.p_value, 3), result.null_method
    (('n', 'groups', 'w_d', 'p_value'), 0.005, 'wild bootstrap')
    """
    check_permutations(permutations)
    check_seed(seed)
    check_model_name(model, WELCH_COLUMNS, "permanova_welch")
    with opened(con, source) as table:
        parts = unit_rows(con, table, group, vector, model=model, extra=strata, skip=(skipped := Skipped.asked(bad_rows)))
    rows = []
    for value, part in parts:
        with progress_bar(permutations_label(value), permutations, progress) as tick:
            rows.append((value, permanova_row(ordered(part, group, strata=strata is not None), value,
                                              permutations=permutations, seed=seed, progress=tick, statistic="welch",
                                              null_method=null_method)))
    return Skipped.attached(skipped, ResultTable.of_models("permanova_welch", model, WELCH_COLUMNS, rows), model)


@dataclass(frozen=True, repr=False)
class DispersionResult(ResultTables):
    """The dispersion test (:func:`embsql.dispersion`): its test table and its per-group table.

    Attributes
    ----------
    test : ResultTable
        One row per model: ``groups``, ``f``, ``p_value``, ``permutations``, ``groups_left_out``,
        ``items_left_out``, ``note``.
    groups : ResultTable
        One row per model and group: ``group``, ``n_g``, ``mean_distance``, ``in_test``.

    Examples
    --------
    >>> import embsql
    >>> con = embsql.connect()
    >>> _ = con.execute("CREATE TABLE t AS SELECT (i % 3)::VARCHAR AS g, [cos(i), sin(i), 1.0] AS v FROM range(30) r(i)")
    >>> spread = embsql.dispersion(con, "t", group="g", vector="v", permutations=99)
    >>> spread.test.columns[:3], len(spread.groups.to_dicts())
    (('groups', 'f', 'p_value'), 3)
    """

    test: ResultTable
    groups: ResultTable


def dispersion(con: duckdb.DuckDBPyConnection, source: TableLike, *, group: str, vector: str,
               permutations: int = 999, seed: int = 42, model: str | None = None,
               progress: bool | None = None, stop_after: int | None = None, bad_rows: str = "error") -> DispersionResult:
    """The dispersion test: do the groups differ in spread about their centroids?

    Each group's spread is W̃_g = n_g/(n_g − 1) · (1 − ‖μ_g‖²), the mean squared distance to its
    centroid with betadisper's bias adjustment (the report's W̃_g; for unit vectors the mean over
    pairs of ½‖z_i − z_j‖²).  For iid unit vectors its variance is exactly 4a/n_g + 2b/(n_g(n_g − 1)),
    a = m'Σm (the items' own spread) and b = tr Σ² (the noise of the estimated centroid); a and b
    are estimated without bias from each group's inner products and pooled.  ``f`` is the
    studentised F of the W̃_g: Σ_g (W̃_g − W̄)² / V_g / (G − 1), V_g that variance, W̄ the
    1/V_g-weighted mean (about 1 under the null).

    The p-value permutes labels, keeping ‖z‖ = 1: each item is first reflected (an orthogonal map)
    so that its group's location lies on one common axis, which removes the groups' locations and keeps
    each item's place about its group's centre; the location is the centroid of the other items of its
    group, shrunk towards the grand mean by the share of the between-group sum of squares that differing
    locations explain (0 when the centroids differ no more than equal locations make them: the items are
    then permuted as they are). Every permuted grouping then re-estimates W̃_g, a and b as the observed
    one did. In simulation {{figure dispersion.level}} (validation/calibration.json, measured by
    validation/dispersion_validity.py).
    The earlier scheme (residual vectors permuted, as vegan's ``permutest`` permutes distances'
    residuals) rejected {{figure dispersion.level_old range}} on the same designs, and vegan's ``permutest``
    {{figure dispersion.level_vegan range}} ({{figure dispersion.level_vegan replicates}} data sets each).
    F is therefore not betadisper's ANOVA F; ``mean_distance`` is betadisper's ``group.distances``.

    Groups of fewer than 4 items are left out of the test (a and b need 4 items) and counted; with
    fewer than two groups left, ``f`` and ``p_value`` are None and ``note`` says why.

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
    permutations : int, default 999
        The number of permutations.
    seed : int, default 42
        The random seed (0 or more).
    model : str, optional
        The model column: one row (and one set of groups) per value, under this column's name.
    progress : bool, optional
        Show a progress bar (None: only in a terminal or notebook).
    stop_after : int, optional
        Stop the permutations early, by Besag and Clifford's (1991) sequential rule, once this many
        permuted statistics have reached the observed one (10 is a good choice): then p = h / L after L
        permutations, a valid p-value, and ``permutations`` is L. A p-value under h / B comes out as
        with all B permutations; a large one costs about h / p permutations instead of B.
    bad_rows : {"error", "skip"}
        What a NULL, zero or non-finite (NaN or infinite) vector does: ``"error"`` (the default)
        refuses it, naming its model, group and row (counted from 1); ``"skip"`` leaves its row out
        and counts it in the result's ``skipped`` table (per model: ``skipped_null``,
        ``skipped_zero``, ``skipped_nonfinite``).

    Returns
    -------
    DispersionResult
        Two tables, the model column first in each when ``model`` is given.

        ``.test``, one row per model: ``groups`` (in the test), ``f`` (the studentised F of the
        groups' W̃_g), ``p_value``, ``permutations``, ``groups_left_out``, ``items_left_out``, ``note``.

        ``.groups``, one row per model and group: ``group``, ``n_g``, ``mean_distance`` (the
        mean distance to the centroid, unadjusted: betadisper's group.distances) and ``in_test``
        (False for a group left out).

    Raises
    ------
    InputError
        ``argument.permutations``, ``argument.seed``, ``argument.stop_after``, ``column.missing``, ``column.collision``,
        ``label.null``, ``vector.*``, ``source.empty``.

    Examples
    --------
    >>> import embsql
    >>> con = embsql.connect()
    >>> _ = con.execute("CREATE TABLE ex AS SELECT 'g' || (i % 3) AS topic, "
    ...                 "[cos(i % 3 + (1 + i % 3) * 0.2 * sin(i)), sin(i % 3 + (1 + i % 3) * 0.2 * sin(i))] AS embedding "
    ...                 "FROM range(30) t(i)")
    >>> result = embsql.dispersion(con, "ex", group="topic", vector="embedding", permutations=199)
    >>> result.test.groups, round(result.test.p_value, 3)
    (3, 0.005)
    >>> result.groups.column("n_g")
    [10, 10, 10]
    """
    check_permutations(permutations)
    check_seed(seed)
    check_stop_after(stop_after, permutations)
    check_model_name(model, DISPERSION_COLUMNS + DISPERSION_GROUP_COLUMNS, "dispersion")
    with opened(con, source) as table:
        parts = unit_rows(con, table, group, vector, model=model, skip=(skipped := Skipped.asked(bad_rows)))
    tests, per_group = [], []
    for value, part in parts:
        with progress_bar(DISPERSION_LABEL, permutations, progress) as tick:
            test, groups = dispersion_rows(ordered(part, group), permutations=permutations, seed=seed, progress=tick,
                                           stop_after=stop_after)
        tests.append((value, test))
        per_group += [(value, row) for row in groups]
    return Skipped.attached(skipped, DispersionResult(
        ResultTable.of_models("dispersion", model, DISPERSION_COLUMNS, tests),
        ResultTable.of_models("dispersion groups", model, DISPERSION_GROUP_COLUMNS, per_group)), model)
