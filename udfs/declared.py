"""The one UDF adapter of the declared statistics (embsql.statistics), called by the macros that
sql/build.py generates into sql/python/86_statistics.sql: emb__<name> per declaration.

Each call gets the whole table as lists (models, items, groups, vectors) plus the table's column
names and types, so that a missing or mistyped column gives the same message as from Python, and
then the declared SQL options in order.  The numerics are the declaration's kernel, as in the
Python face (embsql.api.driver).
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pyarrow as pa

from embsql.core.labels import clean_labels
from embsql.errors import fail
from embsql.io.interrupts import Watch
from embsql.io.sources import Source
from embsql.io.table_stream import unit_vectors
from embsql.io.udf_errors import result_type, sql_errors
from embsql.statistics import STATISTICS, Statistic

# the table (name, column names and types), the four columns named in the call (the group column
# NULL for a statistic without one), their values, and each value's row in the table (from 1), by
# which a bad vector is named
INPUTS = ["VARCHAR", "VARCHAR[]", "VARCHAR[]", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR",
          "VARCHAR[]", "VARCHAR[]", "VARCHAR[]", "DOUBLE[][]", "BIGINT[]"]
LABELS = ("model_a", "model_b", "item", "reference")      # output columns SQL holds as text


def read_models(row: int, tbl, names, types, item_col, model_col, vector_col, group_col, models, items, groups,
                vectors, rows) -> tuple[dict, dict | None, str | None]:
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


def option_value(value: Any, sql_type: str) -> Any:
    """An option as the kernel takes it (a NULL flag is false, as SQL's WHERE reads it)."""
    return bool(value) if sql_type == "BOOLEAN" else value


def adapter(statistic: Statistic):
    """The UDF of ``statistic``: for every row of the chunk, its kernel's rows on the table that row names."""
    options = statistic.sql_options()

    @sql_errors(stopped=statistic.stopped)
    def kernel(*columns: pa.Array) -> pa.Array:
        inputs, values = columns[:len(INPUTS)], columns[len(INPUTS):]
        out = []
        for row in range(len(inputs[0])):
            models, groups, group = read_models(row, *inputs)
            chosen = {o.name: option_value(v[row].as_py(), o.type_in_sql()) for o, v in zip(options, values)}
            found = statistic.run(models, groups, group, inputs[4][row].as_py(), chosen, progress=Watch())
            out.append([{k: (str(v) if k in LABELS else v) for k, v in r.items()} for r in found])
        return pa.array(out)

    kernel.__name__ = kernel.__qualname__ = statistic.udf_name
    # DuckDB counts the kernel's parameters: one per SQL argument
    kernel.__signature__ = inspect.Signature(   # type: ignore[attr-defined]
        [inspect.Parameter(f"arg{i}", inspect.Parameter.POSITIONAL_ONLY) for i in range(len(INPUTS) + len(options))])
    return kernel


SPECS = [{"name": s.udf_name, "function": adapter(s), "parameters": INPUTS + [o.type_in_sql() for o in s.sql_options()],
          "return_type": result_type(s.struct_type()), "null_handling": "special"} for s in STATISTICS]
