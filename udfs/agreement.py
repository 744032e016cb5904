"""UDF kernels for cross-model agreement, called by sql/python/85_agreement.sql.

Each call gets the whole table as lists (models, items, vectors) plus the table's column names
and types, so that a missing or mistyped column gives the same message as from Python.  The
numerics are embsql.core.agreement, shared with embsql.knn_agreement and embsql.mantel.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from embsql.core.agreement import knn_rows, mantel_rows
from embsql.core.labels import clean_labels
from embsql.errors import fail
from embsql.io.interrupts import Watch
from embsql.io.sources import Source
from embsql.io.table_stream import unit_vectors
from embsql.io.udf_errors import result_type, sql_errors

KNN = "STRUCT(model_a VARCHAR, model_b VARCHAR, k BIGINT, overlap DOUBLE, se DOUBLE, chance DOUBLE, items BIGINT)[]"
KNN_ITEMS = "STRUCT(model_a VARCHAR, model_b VARCHAR, item VARCHAR, overlap DOUBLE)[]"
MANTEL = ("STRUCT(model_a VARCHAR, model_b VARCHAR, r DOUBLE, p_value DOUBLE, permutations BIGINT, "
          "items BIGINT)[]")
# the table (name, column names and types), the three columns named in the call, their values, and
# each value's row in the table (from 1), by which a bad vector is named
INPUTS = ["VARCHAR", "VARCHAR[]", "VARCHAR[]", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR[]", "VARCHAR[]",
          "DOUBLE[][]", "BIGINT[]"]


def _models(row, tbl, names, types, item_col, model_col, vector_col, models, items, vectors, rows) -> dict:
    """model -> (item ids, unit vectors) for one call row, after checking the columns exist."""
    scalar = lambda array: array[row].as_py()
    source = Source(scalar(tbl), None, dict(zip(scalar(names), scalar(types))))
    source.require(scalar(item_col), "item")
    source.require(scalar(model_col), "model")
    source.vector_dimension(scalar(vector_col))
    model_of = np.asarray(scalar(models), dtype=object)
    item_of = np.asarray(scalar(items), dtype=object)
    row_of = np.asarray(scalar(rows), dtype=np.int64)
    if len(model_of) == 0:
        fail("source.empty", source=repr(scalar(tbl)))
    # a NULL or NaN model is refused naming the column and an item, as the Python faces refuse it
    clean_labels(model_of, scalar(model_col), "model", lambda i: f"item {item_of[i]!r}")
    column = vectors[row].values
    out = {}
    for m in sorted(set(model_of.tolist()), key=str):      # models may differ in dimension
        mask = np.fromiter((x == m for x in model_of.tolist()), bool, len(model_of))
        where = (lambda i, ids=item_of[mask], at=row_of[mask], m=m:     # as the Python faces name a row
                 f"row {at[i]} (model {m!r}, item {ids[i]!r})")
        out[m] = (item_of[mask], unit_vectors(column.filter(pa.array(mask)), where, scalar(vector_col), None))
    return out


def _rows(rows: list[dict]) -> list[dict]:
    return [{k: (str(v) if k in ("model_a", "model_b", "item") else v) for k, v in r.items()} for r in rows]


def _each(inputs: tuple, compute) -> pa.Array:
    """Run ``compute(models, row)`` for every row of the chunk."""
    out = []
    for row in range(len(inputs[0])):
        out.append(_rows(compute(_models(row, *inputs), row)))
    return pa.array(out)


@sql_errors(stopped="the permutation test")
def emb__knn_agreement(tbl, names, types, item_col, model_col, vector_col, models, items, vectors, rows, k, common):
    inputs = (tbl, names, types, item_col, model_col, vector_col, models, items, vectors, rows)
    return _each(inputs, lambda data, row: knn_rows(data, k[row].as_py(), common=common[row].as_py())[0])


@sql_errors(stopped="the permutation test")
def emb__knn_agreement_items(tbl, names, types, item_col, model_col, vector_col, models, items, vectors, rows, k,
                             common):
    inputs = (tbl, names, types, item_col, model_col, vector_col, models, items, vectors, rows)
    return _each(inputs, lambda data, row: knn_rows(data, k[row].as_py(), common=common[row].as_py())[1])


@sql_errors(stopped="the permutation test")
def emb__mantel(tbl, names, types, item_col, model_col, vector_col, models, items, vectors, rows, permutations,
                seed, common):
    inputs = (tbl, names, types, item_col, model_col, vector_col, models, items, vectors, rows)
    return _each(inputs, lambda data, row: mantel_rows(data, permutations=permutations[row].as_py(),
                                                       seed=seed[row].as_py(), common=common[row].as_py(),
                                                       progress=Watch()))


SPECS = [
    {"name": "emb__knn_agreement", "function": emb__knn_agreement,
     "parameters": INPUTS + ["BIGINT", "BOOLEAN"], "return_type": result_type(KNN), "null_handling": "special"},
    {"name": "emb__knn_agreement_items", "function": emb__knn_agreement_items,
     "parameters": INPUTS + ["BIGINT", "BOOLEAN"], "return_type": result_type(KNN_ITEMS), "null_handling": "special"},
    {"name": "emb__mantel", "function": emb__mantel,
     "parameters": INPUTS + ["BIGINT", "BIGINT", "BOOLEAN"], "return_type": result_type(MANTEL), "null_handling": "special"},
]
