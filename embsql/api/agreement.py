"""Python face of cross-model agreement on the same items: k-NN agreement and the Mantel test
(kernels, tie rule and standard errors in embsql.core.agreement)."""

from __future__ import annotations

import duckdb

from embsql.api.driver import drive
from embsql.io.sources import TableLike
from embsql.result_table import ResultTable
from embsql.statistics.agreement import KNN_AGREEMENT, KNN_AGREEMENT_ITEMS, MANTEL


def knn_agreement(con: duckdb.DuckDBPyConnection, source: TableLike, *, item: str, model: str, vector: str,
                  k: int = 10, per_item: bool = False, common: bool = False, bad_rows: str = "error") -> ResultTable:
    """k-NN agreement of every pair of models that embedded the same items.

    For each item, its k nearest other items under each model (cosine distance; ties at the k-th
    neighbour go to the item first in the canonical order, items sorted by their text); the
    agreement of two models is the mean share of neighbours they have in common.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection the source is read on.
    source : str or table object
        The table read on ``con``: one row per model and item (as for :func:`embsql.anova`).
    item : str
        The item column (which rows of different models embed the same item).
    model : str
        The model column (at least two models).
    vector : str
        The vector column (its vectors are scaled to unit length).
    k : int
        How many neighbours (default 10; less than the number of items).
    per_item : bool
        One row per pair of models and item instead of one per pair of models.
    common : bool
        Use only the items every model has (instead of refusing items one model lacks).
    bad_rows : {"error", "skip"}
        What a NULL, zero or non-finite (NaN or infinite) vector does: ``"error"`` (the default)
        refuses it, naming its model, item and row (counted from 1); ``"skip"`` leaves its row out
        and counts it in the result's ``skipped`` table (per model: ``skipped_null``,
        ``skipped_zero``, ``skipped_nonfinite``). A skipped row leaves its item missing in
        that model, so ``common=True`` compares the others on the items every model kept.

    Returns
    -------
    ResultTable
        One row per pair of models: ``model_a``, ``model_b``, ``k``, ``overlap`` (the mean over
        items of |N_A(i) ∩ N_B(i)| / k), ``se`` (its delete-one-item jackknife SE, recomputing the
        neighbour sets the deleted item was part of), ``chance`` (k / (n - 1), the overlap of
        unrelated neighbour sets) and ``items`` (n).  With ``per_item=True``: ``model_a``,
        ``model_b``, ``item``, ``overlap``.

    Raises
    ------
    InputError
        ``argument.k``, ``model.too_few``, ``model.missing`` (an item one model lacks, without
        ``common=True``), ``column.missing``, ``label.null``, ``label.duplicate``, ``vector.*``.

    Examples
    --------
    >>> import embsql
    >>> con = embsql.connect()
    >>> _ = con.execute("CREATE TABLE ex AS SELECT m AS model, 'doc' || i AS item_id, "
    ...                 "[cos(i), sin(i), w * cos(3 * i)] AS embedding FROM range(12) t(i), "
    ...                 "(VALUES ('small', 0.0), ('large', 0.3)) m(m, w)")
    >>> result = embsql.knn_agreement(con, "ex", item="item_id", model="model", vector="embedding", k=3)
    >>> result.model_a, result.model_b, result.items, round(result.chance, 4)
    ('large', 'small', 12, 0.2727)
    """
    return drive(KNN_AGREEMENT_ITEMS if per_item else KNN_AGREEMENT, locals())


def mantel(con: duckdb.DuckDBPyConnection, source: TableLike, *, item: str, model: str, vector: str,
           permutations: int = 999, seed: int = 42, common: bool = False,
           progress: bool | None = None, bad_rows: str = "error") -> ResultTable:
    """The Mantel test of every pair of models that embedded the same items.

    The Spearman correlation of the two models' cosine distances over the item pairs i < j, with a
    permutation p-value (the items of one model permuted).  Time O(n² log n + B n²), memory
    O(n²): at most 10,000 items.

    Parameters
    ----------
    con : duckdb.DuckDBPyConnection
        The connection the source is read on.
    source : str or table object
        The table read on ``con``: one row per model and item (as for :func:`embsql.anova`).
    item : str
        The item column (which rows of different models embed the same item).
    model : str
        The model column (at least two models).
    vector : str
        The vector column (its vectors are scaled to unit length).
    permutations : int, default 999
        The number of permutations B; every pair gets the same seeded permutations.
    seed : int, default 42
        The random seed (0 or more).
    common : bool
        Use only the items every model has.
    progress : bool, optional
        Show a progress bar (None: only in a terminal or notebook).
    bad_rows : {"error", "skip"}
        What a NULL, zero or non-finite (NaN or infinite) vector does: ``"error"`` (the default)
        refuses it, naming its model, item and row (counted from 1); ``"skip"`` leaves its row out
        and counts it in the result's ``skipped`` table (per model: ``skipped_null``,
        ``skipped_zero``, ``skipped_nonfinite``). A skipped row leaves its item missing in
        that model, so ``common=True`` compares the others on the items every model kept.

    Returns
    -------
    ResultTable
        One row per pair of models: ``model_a``, ``model_b``, ``r`` (Spearman's correlation of the
        distances; tied distances get average ranks), ``p_value`` (one-sided, upper tail,
        (b + 1) / (B + 1)), ``permutations`` and ``items``.

    Raises
    ------
    InputError
        ``argument.permutations``, ``argument.seed``, ``model.too_few``, ``model.missing``,
        ``column.missing``, ``label.null``, ``label.duplicate``, ``vector.*``; more than 10,000 items.

    Examples
    --------
    >>> import embsql
    >>> con = embsql.connect()
    >>> _ = con.execute("CREATE TABLE ex AS SELECT m AS model, 'doc' || i AS item_id, "
    ...                 "[cos(i), sin(i), w * cos(3 * i)] AS embedding FROM range(12) t(i), "
    ...                 "(VALUES ('small', 0.0), ('large', 0.3)) m(m, w)")
    >>> result = embsql.mantel(con, "ex", item="item_id", model="model", vector="embedding", permutations=199)
    >>> round(result.r, 4), result.p_value
    (0.9925, 0.005)
    """
    return drive(MANTEL, locals())
