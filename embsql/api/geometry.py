"""Python face of model-to-model geometry on the same items: linear CKA and the Procrustes
correlation (kernels, routes and standard errors in embsql.core.geometry)."""

from __future__ import annotations

import duckdb
import numpy as np

from embsql.core.geometry import CKA_COLUMNS, PROCRUSTES_COLUMNS, cka_rows, procrustes_rows
from embsql.io.sources import TableLike, opened
from embsql.io.table_stream import unit_rows
from embsql.progress import progress_bar
from embsql.result_table import ResultTable
from embsql.vocabulary import Never, refuse

Models = dict[object, tuple[np.ndarray, np.ndarray]]     # model value -> (item ids, unit vectors)


def model_rows(con: duckdb.DuckDBPyConnection, source: TableLike, item: str, model: str, vector: str,
               group: str | None = None) -> tuple[Models, dict[object, np.ndarray | None] | None]:
    """(model -> (item ids, unit vectors), model -> group labels or None), read in one pass."""
    with opened(con, source) as table:
        table.require(item, "item")
        table.require(model, "model")
        parts = unit_rows(con, table, item, vector, by=model, extra=group, extra_role="group", group_role="item")
    models = {value: (part.labels, part.unit) for value, part in parts}
    return models, (None if group is None else {value: part.extra for value, part in parts})


def cka(con: duckdb.DuckDBPyConnection, source: TableLike, *, item: str, model: str, vector: str,
        group: str | None = None, debiased: bool = False, permutations: int = 999, seed: int = 42,
        common: bool = False, progress: bool | None = None, **removed: Never) -> ResultTable:
    """Linear CKA (Kornblith et al. 2019) of every pair of models that embedded the same items.

    CKA compares the two models' similarity structures on unit vectors centred per model; it is
    invariant to rotation, uniform scale and embedding into more dimensions, so models of any
    dimension compare.

    Parameters
    ----------
    con, source
        The connection, and the table read on it: one row per model and item (as for :func:`embsql.anova`).
    item, model, vector : str
        The item column (which rows of different models embed the same item), the model column (at
        least two models) and the vector column (its vectors are scaled to unit length).
    group : str, optional
        A group column: the standard error is then the cluster jackknife over its groups (an
        item's group must be the same in every model), else the delete-one-item jackknife.
    debiased : bool
        The ratio of unbiased HSIC estimates (Song et al. 2012), in [-1, 1]: about 0 for unrelated
        models at any n, so negative about as often as positive then (it is reported as it is:
        cutting it at 0 would bias it upward again).
    permutations, seed : int
        Shuffles of the items of model_b for the p-value (default 999; 0 for none); the random seed (0
        or more).
    common : bool
        Use only the items every model has (instead of refusing items one model lacks).
    progress : bool, optional
        Show a progress bar (None: only in a terminal or notebook).

    Returns
    -------
    ResultTable
        One row per pair of models: ``model_a``, ``model_b``, ``cka`` (in [0, 1]; debiased in
        [-1, 1]), ``se``, ``p_value`` (one-sided, upper tail, (b + 1) / (B + 1); None with
        permutations=0), ``permutations``, ``items``, ``groups`` (of ``group``, else None),
        ``debiased`` and ``level`` (``'similarity'``, its level of the invariance hierarchy).

    Raises
    ------
    ArgumentError
        ``argument.unknown``.
    InputError
        ``argument.permutations``, ``argument.seed``, ``model.too_few``, ``model.missing``,
        ``column.missing``, ``label.null``, ``label.duplicate``, ``vector.*``, ``design.*`` (a
        model with no spread, or too few items).

    Examples
    --------
    >>> import embsql
    >>> con = embsql.connect()
    >>> _ = con.execute("CREATE TABLE ex AS SELECT m AS model, 'doc' || i AS item_id, "
    ...                 "[cos(i), sin(i), w * cos(3 * i)] AS embedding FROM range(12) t(i), "
    ...                 "(VALUES ('small', 0.0), ('large', 0.3)) m(m, w)")
    >>> result = embsql.cka(con, "ex", item="item_id", model="model", vector="embedding", permutations=0)
    >>> result.model_a, result.model_b, round(result.cka, 4), result.level
    ('large', 'small', 0.9978, 'similarity')
    """
    refuse(cka, removed)
    models, groups = model_rows(con, source, item, model, vector, group)
    with progress_bar("CKA permutations", permutations, progress if permutations else False) as tick:
        rows = cka_rows(models, groups=groups, group=group or "group", debiased=debiased,
                        permutations=permutations, seed=seed, common=common, progress=tick)
    return ResultTable.from_dicts("cka", CKA_COLUMNS, rows)


def procrustes(con: duckdb.DuckDBPyConnection, source: TableLike, *, item: str, model: str, vector: str,
               permutations: int = 999, seed: int = 42, common: bool = False,
               progress: bool | None = None, **removed: Never) -> ResultTable:
    """The symmetric Procrustes correlation of every pair of models (vegan's protest).

    Both models are centred and scaled to unit total variance (the smaller one padded with zero
    dimensions), one is rotated onto the other, and r = √(1 - m12²), with m12² the residual sum
    of squares of that fit.

    Parameters
    ----------
    con, source
        The connection, and the table read on it: one row per model and item (as for :func:`embsql.anova`).
    item, model, vector : str
        The item column (which rows of different models embed the same item), the model column (at
        least two models) and the vector column (its vectors are scaled to unit length).
    permutations, seed : int
        Shuffles of the items of model_b for the p-value (default 999; 0 for none); the random seed (0
        or more).
    common : bool
        Use only the items every model has.
    progress : bool, optional
        Show a progress bar (None: only in a terminal or notebook).

    Returns
    -------
    ResultTable
        One row per pair of models: ``model_a``, ``model_b``, ``r``, ``m12_squared``, ``p_value``
        (counting r_perm ≥ r - √ε, as protest does; None with permutations=0), ``permutations``,
        ``items`` and ``level`` (``'similarity'``).

    Raises
    ------
    ArgumentError
        ``argument.unknown``.
    InputError
        ``argument.permutations``, ``argument.seed``, ``model.too_few``, ``model.missing``,
        ``column.missing``, ``label.null``, ``label.duplicate``, ``vector.*``, ``design.*``.

    Examples
    --------
    >>> import embsql
    >>> con = embsql.connect()
    >>> _ = con.execute("CREATE TABLE ex AS SELECT m AS model, 'doc' || i AS item_id, "
    ...                 "[cos(i), sin(i), w * cos(3 * i)] AS embedding FROM range(12) t(i), "
    ...                 "(VALUES ('small', 0.0), ('large', 0.3)) m(m, w)")
    >>> result = embsql.procrustes(con, "ex", item="item_id", model="model", vector="embedding", permutations=99)
    >>> round(result.r, 4), result.p_value
    (0.9787, 0.01)
    """
    refuse(procrustes, removed)
    models, _ = model_rows(con, source, item, model, vector)
    with progress_bar("Procrustes permutations", permutations, progress if permutations else False) as tick:
        rows = procrustes_rows(models, permutations=permutations, seed=seed, common=common, progress=tick)
    return ResultTable.from_dicts("procrustes", PROCRUSTES_COLUMNS, rows)
