"""Python face of model-to-model geometry on the same items: linear CKA and the Procrustes
correlation (kernels, routes and standard errors in embsql.core.geometry)."""

from __future__ import annotations

import duckdb

from embsql.core.geometry import CKA_COLUMNS, PROCRUSTES_COLUMNS, cka_rows, procrustes_rows
from embsql.io.sources import accepts_frames, resolve
from embsql.io.table_stream import unit_rows
from embsql.progress import progress_bar
from embsql.result_table import ResultTable


def model_rows(con, source: str, item: str, model: str, vector: str, group: str | None = None):
    """(model -> (item ids, unit vectors), model -> group labels or None), read in one pass."""
    resolved = resolve(con, source)
    resolved.require(item, "item")
    resolved.require(model, "model")
    parts = unit_rows(con, resolved, item, vector, by=model, extra=group, extra_role="group", group_role="item")
    models = {value: (part.labels, part.unit) for value, part in parts}
    return models, (None if group is None else {value: part.extra for value, part in parts})


@accepts_frames()
def cka(con: duckdb.DuckDBPyConnection, source: str, *, item: str, model: str, vector: str,
        group: str | None = None, debiased: bool = False, permutations: int = 999, seed: int = 42,
        common: bool = False, progress: bool | None = None) -> ResultTable:
    """Linear CKA of every pair of models that embedded the same items (Kornblith et al. 2019).

    One row per pair: ``cka`` on unit vectors centred per model, in [0, 1] (``debiased=True``: the
    ratio of unbiased HSIC estimates, Song et al. 2012, in [-1, 1]: about 0 for unrelated models at
    any n, so negative about as often as positive then; it is reported as it is, since cutting it
    at 0 would bias it upward again); ``se`` its cluster-jackknife SE over the groups of
    ``group=`` (an item's group must be the same in every model), else the delete-one-item
    jackknife; ``p_value`` from ``permutations`` shuffles of the items of model_b (one-sided,
    upper tail, (b + 1) / (B + 1); None with permutations=0); ``level`` = 'similarity': CKA is
    invariant to rotation, uniform scale and embedding into more dimensions.  Items every model
    lacks are an error unless ``common=True`` (then ``items`` says how many were used).
    """
    models, groups = model_rows(con, source, item, model, vector, group)
    with progress_bar("CKA permutations", permutations, progress if permutations else False) as tick:
        rows = cka_rows(models, groups=groups, group=group or "group", debiased=debiased,
                        permutations=permutations, seed=seed, common=common, progress=tick)
    return ResultTable.from_dicts("cka", CKA_COLUMNS, rows)


@accepts_frames()
def procrustes(con: duckdb.DuckDBPyConnection, source: str, *, item: str, model: str, vector: str,
               permutations: int = 999, seed: int = 42, common: bool = False,
               progress: bool | None = None) -> ResultTable:
    """The symmetric Procrustes correlation of every pair of models (vegan's protest).

    One row per pair: ``r`` = sqrt(1 - m12^2) with ``m12_squared`` the residual sum of squares of
    the symmetric fit (both models centred and scaled to unit total variance, the smaller one padded
    with zero dimensions); ``p_value`` permutes the items of model_b and counts r_perm >= r -
    sqrt(machine epsilon), as protest does.  ``level`` = 'similarity'.
    """
    models, _ = model_rows(con, source, item, model, vector)
    with progress_bar("Procrustes permutations", permutations, progress if permutations else False) as tick:
        rows = procrustes_rows(models, permutations=permutations, seed=seed, common=common, progress=tick)
    return ResultTable.from_dicts("procrustes", PROCRUSTES_COLUMNS, rows)
