"""The Python face of the descriptive statistics: anova, groups and anova_dist.

``anova`` and ``groups`` run stage 1 (embsql.io.table_stream) on DuckDB and stage 2
(embsql.core.decomposition) in numpy; ``anova_dist`` reads the distance and labels tables on DuckDB
into a checked matrix of squared distances (embsql.io.distance_tables) and decomposes it in numpy
(embsql.core.decomposition.distance_anova_row).  None of them calls an embsql SQL function, so none
needs ``register``; the SQL function emb_anova_dist, which the stock DuckDB CLI runs without Python,
is held to the same rows by tests.
"""

from __future__ import annotations

import duckdb

from embsql.core.decomposition import ANOVA_COLUMNS, DISTANCE_COLUMNS, GROUP_COLUMNS, anova_row, distance_anova_row, group_rows
from embsql.io.distance_tables import read_distance_table
from embsql.io.sources import TableLike, local_sources, opened, resolve
from embsql.io.table_stream import Skipped, group_sums
from embsql.result_table import ResultTable
from embsql.vocabulary import check_model_name


def anova(con: duckdb.DuckDBPyConnection, source: TableLike, *, group: str, vector: str,
          model: str | None = None, item: str | None = None, bad_rows: str = "error") -> ResultTable:
    """The sum-of-squares decomposition of unit vectors by group, one row per model.

    Every vector is scaled to unit length; SS_T, SS_W and SS_B are the total, within-group and
    between-group sums of squared distances to the means, so R² = SS_B / SS_T is comparable across
    embedding models of any dimension.  One streaming pass over the rows (O(G d) memory).

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection the source is read on (``embsql.connect()``, or any DuckDB connection).
    source : str or table object
        A table or view name, a Parquet/CSV/JSON file or directory, ``FILE.duckdb:TABLE``, a Lance
        dataset, a saved Hugging Face dataset, or a pandas/polars/Arrow object.
    group : str
        The group column (topics, classes, paraphrase groups).
    vector : str
        The vector column (FLOAT[], DOUBLE[], FLOAT[d] or DOUBLE[d]).
    model : str, optional
        The model column: one row per value, under this column's name.
    item : str, optional
        A row id column, used only to name a bad row in an error message.
    bad_rows : {"error", "skip"}
        What a NULL, zero or non-finite (NaN or infinite) vector does: ``"error"`` (the default)
        refuses it, naming its model, item and row (counted from 1); ``"skip"`` leaves its row out
        and counts it in the result's ``skipped`` table (per model: ``skipped_null``,
        ``skipped_zero``, ``skipped_nonfinite``).

    Returns
    -------
    ResultTable
        One row per model (ordered by model), the model column first when ``model`` is given:

        - ``n``, ``groups``: items and groups;
        - ``ss_t``, ``ss_w``, ``ss_b``: total, within- and between-group sums of squares
          (SS_T = SS_W + SS_B);
        - ``r2``: SS_B / SS_T, in [0, 1]; ``r2_null``: (G - 1) / (n - 1), its expectation when
          labels carry no information;
        - ``f``: pseudo-F, (SS_B / (G - 1)) / (SS_W / (n - G));
        - ``v``: SS_T / n, the total variance; ``mean_resultant_length``: the length of the mean
          unit vector (v = 1 - mean_resultant_length²);
        - ``w_bar``: SS_W / n, the mean within-group spread.

    Raises
    ------
    InputError
        ``column.missing``, ``column.type``, ``column.collision`` (a model column named like an
        output column), ``label.null`` (a NULL or NaN group or model value, naming its row),
        ``vector.*`` (a NULL, zero-length, non-finite or other-length vector, naming its row),
        ``design.one_group``, ``design.no_residual_df``, ``design.identical``, ``source.empty``.

    Examples
    --------
    >>> import embsql
    >>> con = embsql.connect()
    >>> _ = con.execute("CREATE TABLE ex AS SELECT * FROM (VALUES ('A', [1.0, 0.0]), ('A', [0.8, 0.6]),"
    ...                 " ('B', [0.0, 1.0]), ('B', [-0.6, 0.8])) t(g, v)")
    >>> result = embsql.anova(con, "ex", group="g", vector="v")
    >>> round(result.ss_t, 12), round(result.ss_w, 12), round(result.r2, 4)
    (2.2, 0.4, 0.8182)
    """
    check_model_name(model, ANOVA_COLUMNS, "anova")
    with opened(con, source) as table:
        parts = group_sums(con, table, group, vector, model=model, item=item, skip=(skipped := Skipped.asked(bad_rows)))
    result = ResultTable.of_models("anova", model, ANOVA_COLUMNS, [(value, anova_row(part, value)) for value, part in parts])
    return result if skipped is None else skipped.attach(result, model)


def groups(con: duckdb.DuckDBPyConnection, source: TableLike, *, group: str, vector: str,
           model: str | None = None, item: str | None = None, bad_rows: str = "error") -> ResultTable:
    """The spread of each group: n_g, W_g and the size-corrected W̃_g, per model.

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
    model : str, optional
        The model column: one set of groups per value, under this column's name.
    item : str, optional
        A row id column, used only to name a bad row in an error message.
    bad_rows : {"error", "skip"}
        What a NULL, zero or non-finite (NaN or infinite) vector does: ``"error"`` (the default)
        refuses it, naming its model, item and row (counted from 1); ``"skip"`` leaves its row out
        and counts it in the result's ``skipped`` table (per model: ``skipped_null``,
        ``skipped_zero``, ``skipped_nonfinite``).

    Returns
    -------
    ResultTable
        One row per model and group (by model, then by group label), the model column first when
        ``model`` is given:

        - ``group``: the group label;
        - ``n_g``: its items;
        - ``w``: W_g, the mean squared distance of its unit vectors to their mean (0 for one item);
        - ``w_tilde``: W̃_g = n_g / (n_g - 1) W_g, unbiased for the group's spread (None for a
          group of one item);
        - ``resolved``: False where the spread is above 0 but below float64 resolution, so that
          ``w`` is rounding noise and must not be read as a figure.

    Raises
    ------
    InputError
        ``column.missing``, ``column.type``, ``column.collision``, ``label.null``, ``vector.*``,
        ``source.empty``.

    Examples
    --------
    >>> import embsql
    >>> con = embsql.connect()
    >>> _ = con.execute("CREATE TABLE ex AS SELECT * FROM (VALUES ('A', [1.0, 0.0]), ('A', [0.8, 0.6]),"
    ...                 " ('B', [0.0, 1.0]), ('B', [-0.6, 0.8])) t(g, v)")
    >>> [(row["group"], row["n_g"], round(row["w"], 4)) for row in embsql.groups(con, "ex", group="g", vector="v").to_dicts()]
    [('A', 2, 0.1), ('B', 2, 0.1)]
    """
    check_model_name(model, GROUP_COLUMNS, "groups")
    with opened(con, source) as table:
        parts = group_sums(con, table, group, vector, model=model, item=item, skip=(skipped := Skipped.asked(bad_rows)))
    result = ResultTable.of_models("groups", model, GROUP_COLUMNS,
                                   [(value, row) for value, part in parts for row in group_rows(part)])
    return result if skipped is None else skipped.attach(result, model)


def anova_dist(con: duckdb.DuckDBPyConnection, distances: TableLike, *, labels: TableLike, group: str,
               item: str, i: str = "i", j: str = "j", distance: str = "d") -> ResultTable:
    """The decomposition from a distance table and a labels table, for any dissimilarity.

    SS_T = (1/n) Σ_{i<j} d_ij², SS_W = Σ_g (1/n_g) Σ_{i<j in g} d_ij² (the sums of squares of the
    principal-coordinates embedding); with cosine-derived distances d² = 2 (1 - cos) it equals
    :func:`embsql.anova` on the vectors.  The tables are read once on DuckDB and the sums taken in
    numpy (memory O(n²) for n labelled items, as the table itself); the SQL function
    ``emb_anova_dist`` computes the same rows in SQL alone.

    SS_B = SS_T - SS_W is returned signed, with R² and F as their definitions give, as vegan's
    ``adonis2`` does: it is never negative for a Euclidean-embeddable dissimilarity, but for one that
    is not (its principal coordinates have negative eigenvalues) SS_W can exceed SS_T, and SS_B, R²
    and F are then negative.  A negative SS_B says the dissimilarity is not Euclidean-embeddable.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection the tables are read on.
    distances : str or table object
        The distance table: one row per pair of items (either order, each pair once or both ways
        with the same distance).
    labels : str or table object
        The labels table: one row per item, with its id and group.
    group : str
        The labels table's group column.
    item : str
        The labels table's item id column.
    i : str, default "i"
        The distance table's first item column.
    j : str, default "j"
        The distance table's second item column.
    distance : str, default "d"
        The distance table's distance column.

    Returns
    -------
    ResultTable
        One row: ``n``, ``groups``, ``ss_t``, ``ss_w``, ``ss_b``, ``r2``, ``r2_null`` and ``f``,
        as in :func:`embsql.anova` (``ss_b``, ``r2`` and ``f`` signed, see above).

    Raises
    ------
    InputError
        ``distance.*`` (DistanceTableError: a NULL id, a NULL, NaN, infinite or negative distance,
        an item's non-zero distance to itself, a pair given in both orders with different
        distances, a missing pair, an unlabelled item), ``column.missing``, ``label.null`` (a NULL
        or NaN id or group label), ``label.duplicate``, ``source.empty``, ``design.*`` (one group,
        n = G, every distance 0).

    Examples
    --------
    >>> import embsql
    >>> con = embsql.connect()
    >>> _ = con.execute("CREATE TABLE lab AS SELECT * FROM (VALUES (1, 'A'), (2, 'A'), (3, 'B'), (4, 'B')) t(id, g)")
    >>> _ = con.execute("CREATE TABLE dist AS SELECT a.id AS i, b.id AS j, "
    ...                 "CASE WHEN a.g = b.g THEN 0.5 ELSE 1.5 END AS d FROM lab a JOIN lab b ON a.id < b.id")
    >>> round(embsql.anova_dist(con, "dist", labels="lab", group="g", item="id").r2, 4)
    0.8947
    """
    with local_sources(con, distances, labels) as (distances_name, labels_name):
        table = read_distance_table(con, resolve(con, distances_name), resolve(con, labels_name), group=group,
                                    item=item, i=i, j=j, distance=distance)
    return ResultTable.from_dicts("anova_dist", DISTANCE_COLUMNS,
                                  [distance_anova_row(table.squared, table.codes, column=group)])
