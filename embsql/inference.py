"""Python face of the permutation tests: permanova (vector route), dispersion.

Each function reads the rows once (embsql.sufficient.unit_rows), puts them in canonical order,
and runs the kernels of embsql.permutation and embsql.dispersion; the SQL functions
(emb_permanova, emb_dispersion, ...) call the very same kernels through the UDFs in udfs/.
"""

from __future__ import annotations

import warnings

import duckdb
import numpy as np

from . import decomposition
from .dispersion import dispersion_test
from .permutation import canonical_order, design, permanova_vectors
from .progress import progress_bar
from .results import ResultTable
from .sources import accepts_frames, resolve
from .sufficient import GroupSums, unit_rows

PERMANOVA_COLUMNS = decomposition.ANOVA_COLUMNS + ("p_value", "permutations")
DISPERSION_COLUMNS = ("groups", "f", "p_value", "permutations")
DISPERSION_GROUP_COLUMNS = ("group", "n_g", "mean_distance")


def _ordered(part, strata: bool):
    order = canonical_order(part.labels, part.extra if strata else None, part.unit)
    return part.labels[order], part.unit[order], (part.extra[order] if strata else None)


@accepts_frames()
def permanova(con: duckdb.DuckDBPyConnection, source: str, group: str, vector: str, *,
              permutations: int = 999, seed: int = 42, strata: str | None = None, by: str | None = None,
              method: str = "auto", progress: bool | None = None, check_dispersion: bool = True) -> ResultTable:
    """emb_anova's columns plus a permutation p-value of pseudo-F (labels permuted within strata).

    Warns when the dispersion test is significant at 5%: F may then reflect spread, not location.
    """
    rows = []
    for value, part in unit_rows(con, resolve(con, source), group, vector, by=by, extra=strata):
        labels, unit, extra = _ordered(part, strata is not None)
        d = design(labels, extra)
        with progress_bar(f"permutations{'' if value is None else f' ({value})'}", permutations, progress) as tick:
            test = permanova_vectors(unit, d, permutations=permutations, seed=seed, method=method, progress=tick)
        row = decomposition.anova_row(GroupSums.from_rows(labels, unit), value)
        rows.append({**({by: value} if by else {}), **row, "p_value": test.p_value, "permutations": test.permutations})
        if check_dispersion:
            spread = dispersion_test(unit, d, permutations=permutations, seed=seed)
            if spread.test.p_value <= 0.05:
                warnings.warn(
                    f"the dispersion test is significant (p = {spread.test.p_value:.3g}"
                    f"{'' if value is None else f', {by} = {value!r}'}): groups differ in spread, so a large "
                    "pseudo-F may reflect spread rather than location (SPEC S14)", stacklevel=2)
    return ResultTable.from_dicts("permanova", ((by,) if by else ()) + PERMANOVA_COLUMNS, rows)


@accepts_frames()
def dispersion(con: duckdb.DuckDBPyConnection, source: str, group: str, vector: str, *,
               permutations: int = 999, seed: int = 42, by: str | None = None,
               progress: bool | None = None) -> tuple[ResultTable, ResultTable]:
    """The dispersion test (F and p) and the per-group mean distance to the centroid."""
    tests, groups = [], []
    for value, part in unit_rows(con, resolve(con, source), group, vector, by=by):
        labels, unit, _ = _ordered(part, False)
        d = design(labels)
        with progress_bar("dispersion permutations", permutations, progress) as tick:
            result = dispersion_test(unit, d, permutations=permutations, seed=seed, progress=tick)
        prefix = {by: value} if by else {}
        tests.append({**prefix, "groups": result.groups, "f": result.test.statistic,
                      "p_value": result.test.p_value, "permutations": result.test.permutations})
        names = np.unique(np.asarray(labels, dtype=object).astype(str))
        first_label = {str(x): x for x in labels}
        groups += [{**prefix, "group": first_label[name], "n_g": int(size), "mean_distance": float(mean)}
                   for name, size, mean in zip(names, result.sizes, result.mean_distance)]
    key = (by,) if by else ()
    return (ResultTable.from_dicts("dispersion", key + DISPERSION_COLUMNS, tests),
            ResultTable.from_dicts("dispersion groups", key + DISPERSION_GROUP_COLUMNS, groups))
