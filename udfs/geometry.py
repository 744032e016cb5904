"""UDF kernels for model-to-model geometry, called by sql/python/87_geometry.sql.

Each call gets the whole table as lists (models, items, groups, vectors) plus the table's column
names and types, so that a missing or mistyped column gives the same message as from Python.  The
numerics are embsql.core.geometry, shared with embsql.cka and embsql.procrustes.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from embsql.core.geometry import cka_rows, compare_cka_rows, procrustes_rows, rank_cka_rows
from embsql.core.labels import clean_labels
from embsql.core.model_ranking import RANK_SQL_TYPE
from embsql.errors import fail
from embsql.io.interrupts import Watch
from embsql.io.sources import Source
from embsql.io.table_stream import unit_vectors
from embsql.io.udf_errors import result_type, sql_errors

CKA = ("STRUCT(model_a VARCHAR, model_b VARCHAR, cka DOUBLE, se DOUBLE, corrected DOUBLE, ci_low DOUBLE, "
       "ci_high DOUBLE, "
       "calibrated BOOLEAN, p_value DOUBLE, permutations BIGINT, items BIGINT, groups BIGINT, debiased BOOLEAN, "
       "invariance VARCHAR, note VARCHAR)[]")
PROCRUSTES = ("STRUCT(model_a VARCHAR, model_b VARCHAR, r DOUBLE, m12_squared DOUBLE, se DOUBLE, ci_low DOUBLE, "
              "ci_high DOUBLE, calibrated BOOLEAN, p_value DOUBLE, permutations BIGINT, items BIGINT, groups BIGINT, "
              "invariance VARCHAR)[]")
COMPARE_CKA = ("STRUCT(model_a VARCHAR, model_b VARCHAR, reference VARCHAR, cka_a DOUBLE, cka_b DOUBLE, "
               "difference DOUBLE, se DOUBLE, ci_low DOUBLE, ci_high DOUBLE, p_value DOUBLE, calibrated BOOLEAN, "
               "items BIGINT, groups BIGINT, debiased BOOLEAN)[]")
# the table (name, column names and types), the four columns named in the call, their values, and
# each value's row in the table (from 1), by which a bad vector is named
INPUTS = ["VARCHAR", "VARCHAR[]", "VARCHAR[]", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR",
          "VARCHAR[]", "VARCHAR[]", "VARCHAR[]", "DOUBLE[][]", "BIGINT[]"]


def _read(row, tbl, names, types, item_col, model_col, vector_col, group_col, models, items, groups, vectors, rows):
    """(model -> (item ids, unit vectors), model -> group labels or None, group column) for one call row."""
    scalar = lambda array: array[row].as_py()
    source = Source(scalar(tbl), None, dict(zip(scalar(names), scalar(types))))
    source.require(scalar(item_col), "item")
    source.require(scalar(model_col), "model")
    group = scalar(group_col)
    if group is not None:
        source.require(group, "group")
    source.vector_dimension(scalar(vector_col))
    model_of = np.asarray(scalar(models), dtype=object)
    item_of, group_of = np.asarray(scalar(items), dtype=object), np.asarray(scalar(groups), dtype=object)
    row_of = np.asarray(scalar(rows), dtype=np.int64)
    if len(model_of) == 0:
        fail("source.empty", source=repr(scalar(tbl)))
    # a NULL or NaN model is refused naming the column and an item, as the Python faces refuse it
    clean_labels(model_of, scalar(model_col), "model", lambda i: f"item {item_of[i]!r}")
    column = vectors[row].values
    out, labels = {}, {}
    for m in sorted(set(model_of.tolist()), key=str):      # models may differ in dimension
        mask = np.fromiter((x == m for x in model_of.tolist()), bool, len(model_of))
        where = (lambda i, ids=item_of[mask], at=row_of[mask], m=m:     # as the Python faces name a row
                 f"row {at[i]} (model {m!r}, item {ids[i]!r})")
        out[m] = (item_of[mask], unit_vectors(column.filter(pa.array(mask)), where, scalar(vector_col), None))
        labels[m] = group_of[mask]
    return out, (labels if group is not None else None), group


def _each(inputs: tuple, compute) -> pa.Array:
    """Run ``compute(row, models, groups, group)`` for every row of the chunk."""
    out = []
    for row in range(len(inputs[0])):
        rows = compute(row, *_read(row, *inputs))
        out.append([{**r, **{k: str(r[k]) for k in ("model_a", "model_b", "reference") if k in r}} for r in rows])
    return pa.array(out)


@sql_errors(stopped="the permutation test")
def emb__cka(tbl, names, types, item_col, model_col, vector_col, group_col, models, items, groups, vectors, rows,
             debiased, permutations, seed, common):
    inputs = (tbl, names, types, item_col, model_col, vector_col, group_col, models, items, groups, vectors, rows)
    return _each(inputs, lambda row, data, labels, group: cka_rows(
        data, groups=labels, group=group or "group", debiased=bool(debiased[row].as_py()),
        permutations=permutations[row].as_py(), seed=seed[row].as_py(), common=bool(common[row].as_py()),
        progress=Watch()))


@sql_errors(stopped="the permutation test")
def emb__procrustes(tbl, names, types, item_col, model_col, vector_col, group_col, models, items, groups, vectors,
                    rows, permutations, seed, common):
    inputs = (tbl, names, types, item_col, model_col, vector_col, group_col, models, items, groups, vectors, rows)
    return _each(inputs, lambda row, data, labels, group: procrustes_rows(
        data, groups=labels, group=group or "group", permutations=permutations[row].as_py(), seed=seed[row].as_py(),
        common=bool(common[row].as_py()), progress=Watch()))


@sql_errors(stopped="the paired CKA comparison")
def emb__compare_cka(tbl, names, types, item_col, model_col, vector_col, group_col, models, items, groups, vectors,
                     rows, reference, debiased, common):
    inputs = (tbl, names, types, item_col, model_col, vector_col, group_col, models, items, groups, vectors, rows)
    return _each(inputs, lambda row, data, labels, group: compare_cka_rows(
        data, reference[row].as_py(), groups=labels, group=group or "group", debiased=bool(debiased[row].as_py()),
        common=bool(common[row].as_py()), model=model_col[row].as_py()))


@sql_errors
def emb__rank_cka(tbl, names, types, item_col, model_col, vector_col, group_col, models, items, groups, vectors, rows,
                  reference, level, replicates, seed):
    """emb_rank_cka (sql/python/97_model_ranking_families.sql): embsql.rank_models' CKA family."""
    inputs = (tbl, names, types, item_col, model_col, vector_col, group_col, models, items, groups, vectors, rows)
    return _each(inputs, lambda row, data, labels, group: [{**r, "model": str(r["model"])} for r in rank_cka_rows(
        data, reference[row].as_py(), groups=labels, group=group or "group", model=model_col[row].as_py(),
        level=level[row].as_py(), replicates=replicates[row].as_py(), seed=seed[row].as_py())])


SPECS = [
    {"name": "emb__cka", "function": emb__cka, "parameters": INPUTS + ["BOOLEAN", "BIGINT", "BIGINT", "BOOLEAN"],
     "return_type": result_type(CKA), "null_handling": "special"},
    {"name": "emb__procrustes", "function": emb__procrustes, "parameters": INPUTS + ["BIGINT", "BIGINT", "BOOLEAN"],
     "return_type": result_type(PROCRUSTES), "null_handling": "special"},
    {"name": "emb__compare_cka", "function": emb__compare_cka, "parameters": INPUTS + ["VARCHAR", "BOOLEAN", "BOOLEAN"],
     "return_type": result_type(COMPARE_CKA), "null_handling": "special"},
    {"name": "emb__rank_cka", "function": emb__rank_cka, "parameters": INPUTS + ["VARCHAR", "DOUBLE", "BIGINT", "BIGINT"],
     "return_type": result_type(RANK_SQL_TYPE), "null_handling": "special"},
]
