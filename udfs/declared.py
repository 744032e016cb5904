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

import pyarrow as pa

from embsql.io.interrupts import Watch
from embsql.io.model_item_inputs import INPUTS, LABELS, read_models
from embsql.io.udf_errors import result_type, sql_errors
from embsql.statistics import STATISTICS, Statistic


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
