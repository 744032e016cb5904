"""Python face of the permutation tests: permanova (vector route), dispersion.

Each function reads the rows once (embsql.io.table_stream.unit_rows) and runs the tests of
embsql.core.row_tests on them (the report's two test sections call the same code); the SQL
functions (emb_permanova, emb_dispersion, ...) call the very same kernels through the UDFs in udfs/.
"""

from __future__ import annotations

import warnings

import duckdb

from embsql.api.permanova_terms import permanova_terms
from embsql.compat import keyword_arguments
from embsql.core.arguments import check_permutations, check_seed
from embsql.core.permutation import STATISTICS
from embsql.core.row_tests import (
    DISPERSION_COLUMNS,
    DISPERSION_GROUP_COLUMNS,
    PERMANOVA_COLUMNS,
    dispersion_rows,
    ordered,
    permanova_row,
    spread,
)
from embsql.errors import InputError
from embsql.io.sources import accepts_frames, resolve
from embsql.io.table_stream import unit_rows
from embsql.progress import DISPERSION_LABEL, permutations_label, progress_bar
from embsql.result_table import ResultTable

DISPERSION_ALPHA = 0.05     # permanova warns when the dispersion test rejects at this level


def _check_arguments(permutations, seed, statistic="pseudo-f") -> None:
    check_permutations(permutations)
    check_seed(seed)
    if statistic not in STATISTICS:
        raise InputError(f"statistic must be 'pseudo-f' or 'welch', not {statistic!r}", kind="argument.statistic")


@keyword_arguments("group", "vector", by="model")
@accepts_frames()
def permanova(con: duckdb.DuckDBPyConnection, source: str, *, group: str | None = None, vector: str | None = None,
              permutations: int = 999, seed: int = 42, strata: str | None = None, model: str | None = None,
              method: str = "auto", progress: bool | None = None, check_dispersion: bool = True,
              statistic: str = "pseudo-f", null_method: str = "auto", terms=None,
              by_terms: str = "sequential") -> ResultTable:
    """emb_anova's columns plus a permutation p-value of pseudo-F (labels permuted within strata).

    ``statistic='welch'`` tests W*_d (Hamidi et al. 2019) instead: it weights each group by its
    own spread, so unequal spreads in unbalanced designs do not inflate it; its value is in ``w_d``.
    Its p-value comes from a group-wise wild bootstrap (each group keeps its own covariance shape) on
    the groups of at least 6 items; smaller groups are left out of that default test and counted
    (``groups_left_out``, ``items_left_out``, ``note``).  ``null_method='permutation'`` permutes labels
    over every group instead (exact when groups are exchangeable, not when they differ in the shape of
    their spread), ``'wild bootstrap'`` bootstraps every group (``'auto'``: embsql.core.permutation.default_null).
    Warns when the dispersion test is significant at 5%: F may then reflect spread, not location.

    ``terms=[...]`` (instead of ``group``): the multi-term test with adonis2's semantics, one row per
    term (embsql.api.permanova_terms.permanova_terms; ``by_terms='sequential'`` or ``'margin'``).
    """
    if terms is not None:
        if group is not None:
            raise InputError("give either group or terms, not both (a one-term call is terms=[group])")
        return permanova_terms(con, source, terms=terms, vector=vector, by_terms=by_terms, permutations=permutations,
                               seed=seed, strata=strata, model=model, progress=progress)
    if group is None or vector is None:
        raise InputError("permanova needs a group column and a vector column (or terms=[...] and vector=...)")
    _check_arguments(permutations, seed, statistic)
    rows = []
    for value, part in unit_rows(con, resolve(con, source), group, vector, by=model, extra=strata):
        model_rows = ordered(part, group, strata=strata is not None)
        with progress_bar(permutations_label(value), permutations, progress) as tick:
            row = permanova_row(model_rows, value, permutations=permutations, seed=seed, method=method,
                                progress=tick, statistic=statistic, null_method=null_method)
        rows.append({**({model: value} if model else {}), **row})
        if check_dispersion:
            _warn_on_spread(spread(model_rows, permutations=permutations, seed=seed),
                            "" if value is None else f", {model} = {value!r}")
    return ResultTable.from_dicts("permanova", ((model,) if model else ()) + PERMANOVA_COLUMNS, rows)


def _warn_on_spread(result, where: str) -> None:
    if result.test is not None and result.test.p_value <= DISPERSION_ALPHA:
        warnings.warn(
            f"the dispersion test is significant (p = {result.test.p_value:.3g}{where}): groups differ in spread, "
            "so a large pseudo-F may reflect spread rather than location", stacklevel=3)


@keyword_arguments("group", "vector", by="model")
@accepts_frames()
def dispersion(con: duckdb.DuckDBPyConnection, source: str, *, group: str, vector: str,
               permutations: int = 999, seed: int = 42, model: str | None = None,
               progress: bool | None = None) -> tuple[ResultTable, ResultTable]:
    """The dispersion test (F and p of the bias-adjusted distances to the group centroids) and the
    per-group mean distance to the centroid.  Groups with fewer than 4 items are left out of the
    test (``groups_left_out``, ``items_left_out``, ``note``; ``in_test`` per group); with fewer than
    two groups left, f and p_value are None and the note says why."""
    _check_arguments(permutations, seed)
    tests, groups = [], []
    for value, part in unit_rows(con, resolve(con, source), group, vector, by=model):
        with progress_bar(DISPERSION_LABEL, permutations, progress) as tick:
            test, per_group = dispersion_rows(ordered(part, group), permutations=permutations, seed=seed,
                                              progress=tick)
        prefix = {model: value} if model else {}
        tests.append({**prefix, **test})
        groups += [{**prefix, **row} for row in per_group]
    key = (model,) if model else ()
    return (ResultTable.from_dicts("dispersion", key + DISPERSION_COLUMNS, tests),
            ResultTable.from_dicts("dispersion groups", key + DISPERSION_GROUP_COLUMNS, groups))
