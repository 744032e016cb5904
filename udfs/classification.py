"""UDF kernels for k-NN and nearest-centroid classification (sql/python/88_classification.sql).

Each call is one model: its rows as lists (labels as text with their rank in SQL's order of the
label column, so numbers keep their number order; item ids, split values and groups as text;
vectors), with the table's column names and types so that a missing column gets the same message
as from Python.  The numerics are embsql.core.classification.classify, which embsql.knn_classify
and embsql.centroid_classify run too.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from embsql.core.classification import classify
from embsql.core.sums import normalise
from embsql.errors import fail
from embsql.io.sources import Source
from embsql.io.table_stream import raw_vectors
from embsql.io.udf_errors import result_type, sql_errors

SUMMARY = ("STRUCT(accuracy DOUBLE, ci_low DOUBLE, ci_high DOUBLE, macro_f1 DOUBLE, macro_f1_ci_low DOUBLE, "
           "macro_f1_ci_high DOUBLE, items BIGINT, classes BIGINT, groups BIGINT, k BIGINT, classifier VARCHAR, "
           "split VARCHAR, level DOUBLE, calibrated BOOLEAN)")
FIELDS = pa.struct([("accuracy", pa.float64()), ("ci_low", pa.float64()), ("ci_high", pa.float64()),
                    ("macro_f1", pa.float64()), ("macro_f1_ci_low", pa.float64()), ("macro_f1_ci_high", pa.float64()),
                    ("items", pa.int64()), ("classes", pa.int64()), ("groups", pa.int64()), ("k", pa.int64()),
                    ("classifier", pa.string()), ("split", pa.string()), ("level", pa.float64()),
                    ("calibrated", pa.bool_())])
ITEMS = "STRUCT(item VARCHAR, label VARCHAR, predicted VARCHAR, correct BOOLEAN, \"group\" VARCHAR)[]"
# the table (name, column names and types), the columns named (label, vector, model, split, item,
# group), the classifier, k, level, the model's value, then its rows: their 0-based rows in the table,
# label ranks and texts, items, splits, groups and vectors
INPUTS = ["VARCHAR", "VARCHAR[]", "VARCHAR[]", "VARCHAR[]", "VARCHAR", "BIGINT", "DOUBLE", "VARCHAR",
          "BIGINT[]", "BIGINT[]", "VARCHAR[]", "VARCHAR[]", "VARCHAR[]", "VARCHAR[]", "DOUBLE[][]"]


def _classify(row, tbl, names, types, columns, classifier, k, level, model, table_rows, ranks, labels, items, splits,
              groups, vectors):
    """(figures, per item) of one call row, after the checks the Python face makes."""
    scalar = lambda array: array[row].as_py()
    label_col, vector_col, model_col, split_col, item_col, group_col = scalar(columns)
    source = Source(scalar(tbl), None, dict(zip(scalar(names), scalar(types))))
    label_type = source.require(label_col, "label")
    for column, role in ((split_col, "split"), (item_col, "item"), (group_col, "group")):
        if column is not None:
            source.require(column, role)
    source.vector_dimension(vector_col)
    ids, numbers = scalar(items), scalar(table_rows)
    m = scalar(model)
    # row i as the Python face names it: its row in the table counted from 1, its model and its item
    named = (lambda i: ([] if model_col is None or m is None else [f"model {m!r}"])
             + ([f"item {ids[i]!r}"] if item_col is not None else []))
    where = lambda i: f"row {numbers[i] + 1}" + (f" ({', '.join(named(i))})" if named(i) else "")
    texts, order = scalar(labels), scalar(ranks)
    if not texts:
        fail("source.empty", source=repr(scalar(tbl)))
    floating = label_type.upper().startswith(("FLOAT", "DOUBLE", "REAL"))
    # (rank, text) sorts as SQL orders the label column; a NULL (or a NaN number) stays a bad label
    keyed = [None if t is None or (floating and t.lower() == "nan") else (r, t) for r, t in zip(order, texts)]
    if any(x is None for x in keyed):
        i = next(i for i, x in enumerate(keyed) if x is None)
        fail("label.null", role="label", column=repr(label_col), word="NULL" if texts[i] is None else "NaN",
             where=f" at {where(i)}")
    unit = raw_vectors(vectors[row].values, where, vector_col, None).astype(np.float64)
    normalise(unit, where, vector_col)
    model_type = dict(zip(scalar(names), scalar(types))).get(model_col, "") if model_col is not None else ""
    if model_col is not None and (m is None or (model_type.upper().startswith(("FLOAT", "DOUBLE", "REAL"))
                                                and str(m).lower() == "nan")):
        # the rows SQL grouped under a NULL (or NaN) model: refused as the Python face refuses them
        fail("label.null", role="model", column=repr(model_col), word="NULL" if m is None else "NaN",
             where=f" at {where(0)}")
    figures, per_item = classify(unit, np.ones(len(unit)), keyed, classifier=scalar(classifier), k=scalar(k),
                                 level=scalar(level), items=ids if item_col is not None else None,
                                 splits=scalar(splits) if split_col is not None else None,
                                 groups=scalar(groups) if group_col is not None else None, label_column=label_col,
                                 split_column=split_col, where=where,
                                 whose="" if model_col is None or m is None else f" (model {m!r})")
    return figures, per_item


ITEM_FIELDS = pa.list_(pa.struct([("item", pa.string()), ("label", pa.string()), ("predicted", pa.string()),
                                   ("correct", pa.bool_()), ("group", pa.string())]))


@sql_errors
def emb__classify(tbl, names, types, columns, classifier, k, level, model, table_rows, ranks, labels, items, splits,
                  groups, vectors, per_item):
    """STRUCT(summary, items): the figures, and the per-item rows when ``per_item`` is true."""
    out = []
    # the models in the order of their first row, so that of two bad models the same one is named
    # whatever order SQL grouped them in
    first_rows = [min(table_rows[row].as_py() or [0]) for row in range(len(tbl))]
    results = {row: _classify(row, tbl, names, types, columns, classifier, k, level, model, table_rows, ranks,
                              labels, items, splits, groups, vectors)
               for row in sorted(range(len(tbl)), key=first_rows.__getitem__)}
    for row in range(len(tbl)):
        figures, per = results[row]
        rows = [] if not per_item[row].as_py() else [
            {"item": None if per["item"] is None else per["item"][i], "label": per["label"][i][1],
             "predicted": per["predicted"][i][1], "correct": per["correct"][i],
             "group": None if per["group"] is None else per["group"][i]} for i in range(len(per["label"]))]
        out.append({"summary": figures, "items": rows})
    return pa.array(out, type=pa.struct([("summary", FIELDS), ("items", ITEM_FIELDS)]))


SPECS = [
    {"name": "emb__classify", "function": emb__classify, "parameters": INPUTS + ["BOOLEAN"],
     "return_type": result_type(f"STRUCT(summary {SUMMARY}, items {ITEMS})"), "null_handling": "special"},
]
