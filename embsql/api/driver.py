"""The one driver of the declared statistics' Python faces (embsql.statistics): a face's body is
``drive(DECLARATION, locals())``.

It opens the source, checks the columns (the model, item and group columns exist; the vectors
are usable, or skipped with ``bad_rows='skip'``), splits the rows by model, runs the kernel with
the face's options (and a progress bar where the declaration names one) and builds the
ResultTable with the declared columns.  As scipy's ``_axis_nan_policy`` factory does for its
reductions: the face says what it takes, the driver does what every face does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import duckdb
import numpy as np

from embsql.io.sources import TableLike, opened
from embsql.io.table_stream import Skipped, unit_rows
from embsql.progress import progress_bar
from embsql.result_table import ResultTable
from embsql.statistics import Statistic

Models = dict[object, tuple[np.ndarray, np.ndarray]]     # model value -> (item ids, unit vectors)


def model_rows(con: duckdb.DuckDBPyConnection, source: TableLike, item: str, model: str, vector: str,
               group: str | None = None,
               skip: Skipped | None = None) -> tuple[Models, dict[object, np.ndarray | None] | None]:
    """(model -> (item ids, unit vectors), model -> group labels or None), read in one pass
    (``skip``: bad_rows="skip")."""
    with opened(con, source) as table:
        table.require(item, "item")
        table.require(model, "model")
        parts = unit_rows(con, table, item, vector, model=model, extra=group, extra_role="group", group_role="item",
                          skip=skip)
    models = {value: (part.labels, part.unit) for value, part in parts}
    return models, (None if group is None else {value: part.extra for value, part in parts})


def drive(statistic: Statistic, arguments: Mapping[str, Any]) -> ResultTable:
    """The face of ``statistic`` called with ``arguments`` (the face's ``locals()``)."""
    model, group = arguments["model"], arguments.get("group")
    skipped = Skipped.asked(arguments["bad_rows"])
    models, groups = model_rows(arguments["con"], arguments["source"], arguments["item"], model, arguments["vector"],
                                group, skipped)
    options = {o.name: arguments[o.name] for o in statistic.options}
    shown = arguments.get("progress") if statistic.progress and options.get("permutations", 1) else False
    with progress_bar(statistic.progress or statistic.name, options.get("permutations", 0), shown) as tick:
        rows = statistic.run(models, groups, group, model, options, progress=tick)
    return Skipped.attached(skipped, ResultTable.from_dicts(statistic.name, statistic.column_names(options), rows),
                            model)
