"""Python face of cross-model agreement on the same items: k-NN agreement and the Mantel test
(kernels, tie rule and standard errors in embsql.core.agreement)."""

from __future__ import annotations

import duckdb

from embsql.compat import keyword_arguments
from embsql.core.agreement import KNN_COLUMNS, KNN_ITEM_COLUMNS, MANTEL_COLUMNS, knn_rows, mantel_rows
from embsql.io.sources import accepts_frames, resolve
from embsql.io.table_stream import unit_rows
from embsql.progress import progress_bar
from embsql.result_table import ResultTable


def _models(con, source: str, item: str, model: str, vector: str) -> dict:
    resolved = resolve(con, source)
    resolved.require(item, "item")
    resolved.require(model, "model")
    parts = unit_rows(con, resolved, item, vector, by=model, group_role="item")
    return {value: (part.labels, part.unit) for value, part in parts}


@keyword_arguments("item", "model", "vector")
@accepts_frames()
def knn_agreement(con: duckdb.DuckDBPyConnection, source: str, *, item: str, model: str, vector: str,
                  k: int = 10, per_item: bool = False, common: bool = False) -> ResultTable:
    """k-NN agreement of every pair of models that embedded the same items.

    One row per pair: ``overlap`` = mean over items of |N_A(i) & N_B(i)| / k, where N_M(i) are
    the k nearest other items of i under model M (cosine distance; ties at the k-th neighbour go
    to the item first in the canonical order, items sorted by their text); ``se`` its
    delete-one-item jackknife SE, recomputing the neighbour sets that the deleted item was part
    of; ``chance`` = k / (n - 1), the overlap of unrelated neighbour sets; ``items`` = n.
    With ``per_item=True``: one row per pair of models and item instead (model_a, model_b, item,
    overlap).  With ``common=True`` only the items every model has are used.
    """
    rows, item_rows = knn_rows(_models(con, source, item, model, vector), k, common=common)
    if per_item:
        return ResultTable.from_dicts("knn_agreement_items", KNN_ITEM_COLUMNS, item_rows)
    return ResultTable.from_dicts("knn_agreement", KNN_COLUMNS, rows)


@keyword_arguments("item", "model", "vector")
@accepts_frames()
def mantel(con: duckdb.DuckDBPyConnection, source: str, *, item: str, model: str, vector: str,
           permutations: int = 999, seed: int = 42, common: bool = False,
           progress: bool | None = None) -> ResultTable:
    """Mantel test of every pair of models that embedded the same items.

    ``r``: Spearman correlation of the two models' cosine distances over item pairs i < j (tied
    distances get average ranks).  ``p_value``: the items of model B are permuted (the same
    seeded permutations for every pair), one-sided upper tail, p = (b + 1) / (B + 1) with b the
    permutations whose r reaches the observed one.  Time O(n^2 log n + B n^2), memory O(n^2);
    at most MANTEL_MAX_ITEMS items.
    """
    models = _models(con, source, item, model, vector)
    with progress_bar("Mantel permutations", permutations, progress) as tick:
        rows = mantel_rows(models, permutations=permutations, seed=seed, common=common, progress=tick)
    return ResultTable.from_dicts("mantel", MANTEL_COLUMNS, rows)
