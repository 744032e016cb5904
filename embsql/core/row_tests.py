"""The two tests that need the rows themselves, from one model's rows to its result rows.

PERMANOVA (embsql.core.permutation) and the dispersion test (embsql.core.dispersion) run on
every unit vector, not on group sums.  This is the one place that puts a model's rows in
canonical order and turns the kernels' results into table rows, so that embsql.permanova,
embsql.dispersion and the report's two test sections give the same numbers from the same code.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from embsql.core import decomposition
from embsql.core.design import check_groups
from embsql.core.dispersion import Dispersion, dispersion_test
from embsql.core.labels import clean_labels
from embsql.core.permutation import Design, canonical_order, design, permanova_vectors
from embsql.core.precision import check_spread
from embsql.core.sums import GroupSums, UnitRows
from embsql.errors import DesignError

PERMANOVA_COLUMNS = decomposition.ANOVA_COLUMNS + ("p_value", "permutations", "statistic", "w_d", "null_method",
                                                     "groups_left_out", "items_left_out", "note")
DISPERSION_COLUMNS = ("groups", "f", "p_value", "permutations", "groups_left_out", "items_left_out", "note")
DISPERSION_GROUP_COLUMNS = ("group", "n_g", "mean_distance", "in_test")


@dataclass(frozen=True)
class Ordered:
    """One model's rows in canonical order, with their permutation design."""

    labels: np.ndarray
    unit: np.ndarray
    design: Design


REORDER_COLUMNS = 32   # ordered(in_place=True): columns moved per temporary (n x 32)


def ordered(part: UnitRows, group: str, *, strata: bool = False, in_place: bool = False) -> Ordered:
    """``part`` with its labels checked (``group`` names the column in messages), in the canonical
    order the seeded shuffles start from, so a p-value does not depend on the row order.

    ``in_place``: reorder part.unit's rows where they are, a few columns at a time, instead of in a
    copy (the report, which reads each model's rows for this alone: one n x d array, not two)."""
    labels = clean_labels(part.labels, group)
    order = canonical_order(labels, part.extra if strata else None, part.unit)
    labels, extra = labels[order], (part.extra[order] if strata and part.extra is not None else None)
    if not in_place:
        return Ordered(labels, part.unit[order], design(labels, extra))
    unit = part.unit
    for low in range(0, unit.shape[1], REORDER_COLUMNS):
        unit[:, low:low + REORDER_COLUMNS] = unit[order, low:low + REORDER_COLUMNS]   # the right side is a copy
    return Ordered(labels, unit, design(labels, extra))


def permanova_row(rows: Ordered, value: object, *, permutations: int, seed: int, method: str = "auto",
                  progress: Callable[[int, int], None] | None = None, statistic: str = "pseudo-f",
                  null_method: str = "auto", stop_after: int | None = None) -> dict:
    """emb_anova's figures of one model plus the permutation p-value (PERMANOVA_COLUMNS);
    ``progress(done, total)`` is called as the permutations run; ``stop_after`` as for permanova_vectors."""
    test = permanova_vectors(rows.unit, rows.design, permutations=permutations, seed=seed, method=method,
                             progress=progress, statistic=statistic, null=null_method, stop_after=stop_after)
    row = decomposition.anova_row(GroupSums.from_rows(rows.labels, rows.unit), value)
    return {**row, "p_value": test.p_value, "permutations": test.permutations, "statistic": statistic,
            "w_d": test.statistic if statistic == "welch" else None, "null_method": test.null,
            "groups_left_out": test.groups_left_out, "items_left_out": test.items_left_out, "note": test.note}


def anova_parts(labels: np.ndarray, unit: np.ndarray) -> tuple[dict, bool]:
    """n, groups, ss_w, ss_b and mean_resultant_length of one model, from the sums permanova_row uses,
    and whether the decomposition is defined there (its checks, embsql.core.design and precision).

    For the SQL route (udfs/inference.py), which reads the vectors once: emb_permanova derives emb_anova's
    other columns from these in SQL and, where the design is not defined, refuses it in emb_anova's words."""
    parts = decomposition.sums_of_squares(GroupSums.from_rows(labels, unit))
    n = parts["n"]
    try:
        check_groups(parts["groups"], n, needs="the decomposition")
        check_spread(parts["ss_w"] + parts["ss_b"], parts["ss_w"], n)
    except DesignError:
        return parts, False
    return parts, True


def spread(rows: Ordered, *, permutations: int, seed: int, progress: Callable[[int, int], None] | None = None,
           stop_after: int | None = None) -> Dispersion:
    """The dispersion test of one model (embsql.core.dispersion.dispersion_test)."""
    return dispersion_test(rows.unit, rows.design, permutations=permutations, seed=seed, progress=progress,
                           stop_after=stop_after)


def dispersion_rows(rows: Ordered, *, permutations: int, seed: int,
                    progress: Callable[[int, int], None] | None = None,
                    stop_after: int | None = None) -> tuple[dict, list[dict]]:
    """The dispersion test's row (DISPERSION_COLUMNS) and one row per group (DISPERSION_GROUP_COLUMNS);
    ``progress(done, total)`` is called as the permutations run; ``stop_after`` as for dispersion_test."""
    result = spread(rows, permutations=permutations, seed=seed, progress=progress, stop_after=stop_after)
    test = result.test
    row = {"groups": result.groups, "f": None if test is None else test.statistic,
           "p_value": None if test is None else test.p_value,
           "permutations": None if test is None else test.permutations,
           "groups_left_out": result.groups_left_out, "items_left_out": result.items_left_out, "note": result.note}
    names = np.unique(np.asarray(rows.labels, dtype=object).astype(str))
    first_label = {str(x): x for x in rows.labels}
    groups = [{"group": first_label[name], "n_g": int(size), "mean_distance": float(mean), "in_test": bool(tested)}
              for name, size, mean, tested in zip(names, result.sizes, result.mean_distance, result.tested)]
    return row, groups
