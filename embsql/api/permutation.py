"""Python face of the permutation tests: permanova (vector route), dispersion.

Each function reads the rows once (embsql.io.reading.unit_rows), puts them in canonical order,
and runs the kernels of embsql.core.permutation and embsql.dispersion; the SQL functions
(emb_permanova, emb_dispersion, ...) call the very same kernels through the UDFs in udfs/.
"""

from __future__ import annotations

import warnings

import duckdb
import numpy as np

from embsql.api.permanova_terms import permanova_terms
from embsql.core import decomposition
from embsql.core.arguments import check_permutations, check_seed
from embsql.core.dispersion import dispersion_test
from embsql.core.labels import clean_labels
from embsql.core.permutation import STATISTICS, canonical_order, design, permanova_vectors
from embsql.core.progress import progress_bar
from embsql.core.sums import GroupSums
from embsql.errors import InputError
from embsql.io.reading import unit_rows
from embsql.io.sources import accepts_frames, resolve
from embsql.results import ResultTable

PERMANOVA_COLUMNS = decomposition.ANOVA_COLUMNS + ("p_value", "permutations", "statistic", "w_d",
                                                     "null_method", "groups_left_out", "items_left_out", "note")
DISPERSION_COLUMNS = ("groups", "f", "p_value", "permutations", "groups_left_out", "items_left_out", "note")
DISPERSION_GROUP_COLUMNS = ("group", "n_g", "mean_distance", "in_test")
DISPERSION_ALPHA = 0.05     # permanova warns when the dispersion test rejects at this level


def _ordered(part, strata: bool, group: str):
    labels = clean_labels(part.labels, group)
    order = canonical_order(labels, part.extra if strata else None, part.unit)
    return labels[order], part.unit[order], (part.extra[order] if strata else None)


def _check_arguments(permutations, seed, statistic="pseudo-f") -> None:
    check_permutations(permutations)
    check_seed(seed)
    if statistic not in STATISTICS:
        raise InputError(f"statistic must be 'pseudo-f' or 'welch', not {statistic!r}", kind="argument.statistic")


@accepts_frames()
def permanova(con: duckdb.DuckDBPyConnection, source: str, group: str | None = None, vector: str | None = None, *,
              permutations: int = 999, seed: int = 42, strata: str | None = None, by: str | None = None,
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
        return permanova_terms(con, source, terms=terms, vector=vector, by_terms=by_terms, permutations=permutations, seed=seed,
                               strata=strata, model=by, progress=progress)
    if group is None or vector is None:
        raise InputError("permanova needs a group column and a vector column (or terms=[...] and vector=...)")
    _check_arguments(permutations, seed, statistic)
    rows = []
    for value, part in unit_rows(con, resolve(con, source), group, vector, by=by, extra=strata):
        labels, unit, extra = _ordered(part, strata is not None, group)
        d = design(labels, extra)
        with progress_bar(f"permutations{'' if value is None else f' ({value})'}", permutations, progress) as tick:
            test = permanova_vectors(unit, d, permutations=permutations, seed=seed, method=method, progress=tick,
                                     statistic=statistic, null=null_method)
        row = decomposition.anova_row(GroupSums.from_rows(labels, unit), value)
        rows.append({**({by: value} if by else {}), **row, "p_value": test.p_value, "permutations": test.permutations,
                     "statistic": statistic, "w_d": test.statistic if statistic == "welch" else None,
                     "null_method": test.null, "groups_left_out": test.groups_left_out,
                     "items_left_out": test.items_left_out, "note": test.note})
        if check_dispersion:
            _warn_on_spread(dispersion_test(unit, d, permutations=permutations, seed=seed),
                            "" if value is None else f", {by} = {value!r}")
    return ResultTable.from_dicts("permanova", ((by,) if by else ()) + PERMANOVA_COLUMNS, rows)


def _warn_on_spread(spread, where: str) -> None:
    if spread.test is not None and spread.test.p_value <= DISPERSION_ALPHA:
        warnings.warn(
            f"the dispersion test is significant (p = {spread.test.p_value:.3g}{where}): groups differ in spread, "
            "so a large pseudo-F may reflect spread rather than location", stacklevel=3)


@accepts_frames()
def dispersion(con: duckdb.DuckDBPyConnection, source: str, group: str, vector: str, *,
               permutations: int = 999, seed: int = 42, by: str | None = None,
               progress: bool | None = None) -> tuple[ResultTable, ResultTable]:
    """The dispersion test (F and p of the bias-adjusted distances to the group centroids) and the
    per-group mean distance to the centroid.  Groups with fewer than 4 items are left out of the
    test (``groups_left_out``, ``items_left_out``, ``note``; ``in_test`` per group); with fewer than
    two groups left, f and p_value are None and the note says why."""
    _check_arguments(permutations, seed)
    tests, groups = [], []
    for value, part in unit_rows(con, resolve(con, source), group, vector, by=by):
        labels, unit, _ = _ordered(part, False, group)
        d = design(labels)
        with progress_bar("dispersion permutations", permutations, progress) as tick:
            result = dispersion_test(unit, d, permutations=permutations, seed=seed, progress=tick)
        prefix = {by: value} if by else {}
        test = result.test
        tests.append({**prefix, "groups": result.groups, "f": None if test is None else test.statistic,
                      "p_value": None if test is None else test.p_value,
                      "permutations": None if test is None else test.permutations,
                      "groups_left_out": result.groups_left_out, "items_left_out": result.items_left_out,
                      "note": result.note})
        names = np.unique(np.asarray(labels, dtype=object).astype(str))
        first_label = {str(x): x for x in labels}
        groups += [{**prefix, "group": first_label[name], "n_g": int(size), "mean_distance": float(mean),
                    "in_test": bool(tested)}
                   for name, size, mean, tested in zip(names, result.sizes, result.mean_distance, result.tested)]
    key = (by,) if by else ()
    return (ResultTable.from_dicts("dispersion", key + DISPERSION_COLUMNS, tests),
            ResultTable.from_dicts("dispersion groups", key + DISPERSION_GROUP_COLUMNS, groups))
