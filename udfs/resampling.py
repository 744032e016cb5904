"""UDF kernels for the jackknife, the bootstrap and the paired comparison (sql/python/70_resampling.sql).

emb__jackknife and emb__bootstrap get one row per by value with that value's per-group counts and
sums (lists); emb__compare gets the items of every model, as embsql.compare_structure does from Python.  The
numerics are embsql.core.resampling and embsql.api.resampling, shared with the Python functions.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from embsql.core import resampling
from embsql.core.model_comparison import canonical, compare_rows
from embsql.core.sums import GroupSums
from embsql.errors import fail
from embsql.io.table_stream import unit_vectors
from embsql.io.udf_errors import result_type, sql_errors

INTERVAL = ("STRUCT(estimate DOUBLE, se DOUBLE, ci_low DOUBLE, ci_high DOUBLE, groups BIGINT, estimate_bc DOUBLE, "
            "dropped BIGINT, calibrated BOOLEAN, sizes VARCHAR)")
INTERVAL_TYPE = pa.struct([("estimate", pa.float64()), ("se", pa.float64()), ("ci_low", pa.float64()),
                           ("ci_high", pa.float64()), ("groups", pa.int64()), ("estimate_bc", pa.float64()),
                           ("dropped", pa.int64()), ("calibrated", pa.bool_()), ("sizes", pa.string())])
COMPARISON = ("STRUCT(model_a VARCHAR, model_b VARCHAR, estimate_a DOUBLE, estimate_b DOUBLE, difference DOUBLE, "
              "se DOUBLE, ci_low DOUBLE, ci_high DOUBLE, items BIGINT, same_items BOOLEAN, shared_items BIGINT, "
              "dropped BIGINT, calibrated BOOLEAN, sizes VARCHAR)[]")


def _sums(labels, counts, within, sums, row) -> GroupSums:
    """One by value's GroupSums; ``within`` is each group's within sum of squares, summed stably by
    emb__group_sums (so near-duplicate vectors resample as exactly as in Python)."""
    names = np.asarray(labels[row].as_py(), dtype=object)
    vectors = sums[row].values
    width = len(vectors[0]) if len(vectors) else 0
    matrix = np.asarray(vectors.flatten().to_numpy(zero_copy_only=False), dtype=float).reshape(len(vectors), width)
    return canonical(GroupSums(names, np.asarray(counts[row].as_py(), dtype=np.int64), matrix,
                               within=np.asarray(within[row].as_py(), dtype=float)))


@sql_errors
def emb__jackknife(labels, counts, within, sums, stat):
    out = []
    for row in range(len(labels)):
        group_sums = _sums(labels, counts, within, sums, row)
        result = resampling.jackknife(group_sums, stat[row].as_py())
        out.append(_interval(result, len(group_sums.counts)))
    return pa.array(out, type=INTERVAL_TYPE)


def _interval(result: resampling.Interval, groups: int) -> dict:
    return {"estimate": result.estimate, "se": result.se, "ci_low": result.ci_low, "ci_high": result.ci_high,
            "groups": groups, "estimate_bc": result.estimate_bc, "dropped": result.dropped,
            "calibrated": result.calibrated, "sizes": result.sizes}


@sql_errors
def emb__bootstrap(labels, counts, within, sums, stat, replicates, seed, level):
    out = []
    for row in range(len(labels)):
        group_sums = _sums(labels, counts, within, sums, row)
        result = resampling.bootstrap(group_sums, stat[row].as_py(), replicates=replicates[row].as_py(),
                                      seed=seed[row].as_py(), level=level[row].as_py())
        out.append(_interval(result, len(group_sums.counts)))
    return pa.array(out, type=INTERVAL_TYPE)


@sql_errors
def emb__compare(models, items, labels, vectors, vector_col, stat, replicates, seed, level, common):
    out = []
    for row in range(len(models)):
        model_of = np.asarray(models[row].as_py(), dtype=object)
        item_of = np.asarray(items[row].as_py(), dtype=object)
        label_of = np.asarray(labels[row].as_py(), dtype=object)
        column = vectors[row].values
        data = {}
        for m in sorted(set(model_of.tolist()), key=str):   # models may differ in dimension
            mask = model_of == m
            unit = unit_vectors(column.filter(pa.array(mask)),
                                lambda i, items=item_of[mask], m=m: f"item {items[i]!r} of model {m!r}",
                                vector_col[row].as_py(), None)
            data[m] = (item_of[mask], label_of[mask], unit)
        if len(data) < 2:
            fail("model.too_few", column="the model column", models=len(data), needs="a comparison")
        out.append(compare_rows(data, stat[row].as_py(), replicates=replicates[row].as_py(),
                                seed=seed[row].as_py(), level=level[row].as_py(), common=common[row].as_py()))
    return pa.array([[{k: (str(v) if k.startswith("model") else v) for k, v in r.items()} for r in rows]
                     for rows in out])


SPECS = [
    {"name": "emb__jackknife", "function": emb__jackknife,
     "parameters": ["VARCHAR[]", "BIGINT[]", "DOUBLE[]", "DOUBLE[][]", "VARCHAR"], "return_type": result_type(INTERVAL)},
    {"name": "emb__bootstrap", "function": emb__bootstrap,
     "parameters": ["VARCHAR[]", "BIGINT[]", "DOUBLE[]", "DOUBLE[][]", "VARCHAR", "BIGINT", "BIGINT", "DOUBLE"],
     "return_type": result_type(INTERVAL)},
    {"name": "emb__compare", "function": emb__compare,
     "parameters": ["VARCHAR[]", "VARCHAR[]", "VARCHAR[]", "DOUBLE[][]", "VARCHAR", "VARCHAR", "BIGINT", "BIGINT",
                    "DOUBLE", "BOOLEAN"],
     "return_type": result_type(COMPARISON)},
]
