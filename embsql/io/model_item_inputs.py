"""What the UDFs of the model-item statistics receive (sql/python/85_model_items.sql gathers it):
the table's name, column names and types, the columns named in the call, their values and each
value's row, read back into each model's item ids and unit vectors, so that a missing or mistyped
column, or a bad vector, is named as the Python faces name it.  Read by udfs/declared.py and
udfs/model_ranking.py."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from sqlglot import exp

from embsql.core.labels import clean_labels
from embsql.errors import fail
from embsql.io.sources import Source
from embsql.io.table_stream import unit_vectors

# the table (name, column names and types), the four columns named in the call (the group column
# NULL for a statistic without one), their values, and each value's row in the table (from 1), by
# which a bad vector is named
INPUTS = ["VARCHAR", "VARCHAR[]", "VARCHAR[]", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR",
          "VARCHAR[]", "VARCHAR[]", "VARCHAR[]", "DOUBLE[][]", "BIGINT[]"]
LABELS = ("model_a", "model_b", "item", "reference")      # output columns SQL holds as text


def read_models(row: int, tbl: pa.Array, names: pa.Array, types: pa.Array, item_col: pa.Array, model_col: pa.Array,
                vector_col: pa.Array, group_col: pa.Array, models: pa.Array, items: pa.Array, groups: pa.Array,
                vectors: pa.Array, rows: pa.Array) -> tuple[dict, dict | None, str | None]:
    """(model -> (item ids, unit vectors), model -> group labels or None, group column) for one call row."""
    scalar = lambda array: array[row].as_py()
    # no expression to select from: the UDF has the rows already, and only checks the columns
    source = Source(scalar(tbl), exp.Table(), dict(zip(scalar(names), scalar(types))))
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
