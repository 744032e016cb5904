"""Paired comparison of models on the same groups: matching items and groups across models, and the
rows of the bootstrap and comparison tables.  Models are paired by group label; the kernels are in
embsql.core.resampling.
"""

from __future__ import annotations

import operator
from itertools import combinations

import numpy as np

from embsql.core import resampling
from embsql.core.labels import text_key, text_order
from embsql.core.model_ranking import (
    RANK_CALIBRATED_GROUPS,
    RANK_CALIBRATED_STATS,
    check_intervals,
    simultaneous_intervals,
    structure_family,
)
from embsql.core.sums import GroupSums
from embsql.errors import BadLabelError, InputError, option

JACKKNIFE_COLUMNS = ("statistic", "estimate", "se", "groups", "sizes")
BOOTSTRAP_COLUMNS = ("statistic", "estimate", "se", "ci_low", "ci_high", "level", "replicates", "groups", "estimate_bc",
                     "dropped", "calibrated", "sizes")
COMPARE_COLUMNS = ("model_a", "model_b", "estimate_a", "estimate_b", "difference", "se", "ci_low", "ci_high", "items",
                   "same_items", "shared_items", "dropped", "calibrated", "sizes")


def bootstrap_row(stat: str, result: resampling.Interval, level: float, replicates: int, groups: int) -> dict:
    """One row of BOOTSTRAP_COLUMNS (the report's bootstrap section prints the same)."""
    return {"statistic": stat, "estimate": result.estimate, "se": result.se, "ci_low": result.ci_low,
            "ci_high": result.ci_high, "level": level, "replicates": replicates, "groups": groups,
            "estimate_bc": result.estimate_bc, "dropped": result.dropped, "calibrated": result.calibrated,
            "sizes": result.sizes}


def canonical(sums: GroupSums) -> GroupSums:
    """Groups in the resampling order (embsql.core.labels.text_order): what the seeded resamples refer to."""
    return sums.take(text_order(sums.labels))


def item_positions(items_by_model: dict) -> dict:
    """Per model, item -> its row; a NULL or duplicated item is an error naming the item and the model."""
    rows_of = {}
    for m, items in items_by_model.items():
        ids = items if isinstance(items, list) else items.tolist()
        position = dict(zip(ids, range(len(ids))))       # a C-level loop; checked by its size
        if len(position) != len(ids) or None in position:
            _refuse_items(m, ids)
        rows_of[m] = position
    return rows_of


def _refuse_items(m: object, ids: list) -> None:
    """The first NULL or repeated item of one model, named."""
    seen: set = set()
    for item in ids:
        if item is None:
            raise BadLabelError(f"model {m!r} has a NULL item; every row needs an item id")
        if item in seen:
            raise InputError(f"model {m!r} has item {item!r} more than once")
        seen.add(item)


def shared_items(items_by_model: dict, common: bool) -> tuple[list, dict]:
    """Match items across models: the items every model has, in canonical order (sorted by their
    text, the same order from Python and from SQL), and per model the row of each of them.

    A NULL or duplicated item, or (unless ``common``) an item some model lacks, is an error that
    names the item and the model.  Text ids stored sorted and the same in every model (the usual
    table) need no lookup: strictly increasing means distinct, and for str that is the text order.
    """
    lists = {m: items.tolist() for m, items in items_by_model.items()}
    first = next(iter(lists.values()), None)
    if (first is not None and all(type(x) is str for x in first) and all(ids == first for ids in lists.values())
            and all(map(operator.lt, first, first[1:]))):
        return first, {m: np.arange(len(first), dtype=np.int64) for m in lists}
    rows_of = item_positions(lists)
    shared = set.intersection(*(set(position) for position in rows_of.values()))
    if not common:
        for m, position in rows_of.items():
            extra = set(position) - shared
            if extra:
                raise InputError(f"model {m!r} has item {min(extra, key=str)!r} that another model lacks "
                                 f"({len(extra)} such items); pass {option('common', True)} to compare on the "
                                 f"{len(shared)} items every model has")
    order = sorted(shared, key=text_key)
    return order, {m: np.fromiter(map(position.__getitem__, order), np.int64, len(order))
                   for m, position in rows_of.items()}


def compare_rows(models: dict, stat: str, *, replicates: int, seed: int, level: float, common: bool,
                 sizes: str = "auto", intervals: str = "marginal") -> list[dict]:
    """``models``: model -> (item ids, group labels, unit vectors).  One row per pair of models.

    Models are paired by group label: the same groups are left out (jackknife) and drawn (bootstrap)
    for both, whatever items each model has in them.  Groups are the sampled units, so the items
    need not be the same; an item both models have must be in the same group for both.  With
    ``common`` only the items every model has are used.  same_items and shared_items say how far
    the two item sets agree.

    With ``intervals='simultaneous'`` every row's interval is d -/+ c se, c the single-step max-|t|
    critical value over all pairs (embsql.core.model_ranking.simultaneous_intervals, from the same
    joint resamples of groups for all models as rank_models), and the row gains ``interval``."""
    intervals = check_intervals(intervals)
    if common:
        _, rows_of = shared_items({m: items for m, (items, _, _) in models.items()}, common=True)
    else:
        rows_of = {m: np.arange(len(items)) for m, (items, _, _) in models.items()}
        item_positions({m: items for m, (items, _, _) in models.items()})
    group_of: dict = {}
    item_sets, per_model = {}, {}
    for m, (items, labels, unit) in models.items():
        keep = rows_of[m]
        for item, label in zip(items[keep].tolist(), labels[keep].tolist()):
            if group_of.setdefault(item, label) != label:
                raise InputError(f"item {item!r} is in group {group_of[item]!r} for one model and {label!r} for "
                                 f"model {m!r}; the groups must be the same for every model")
        item_sets[m] = set(items[keep].tolist())
        per_model[m] = canonical(GroupSums.from_rows(labels[keep], unit[keep]))
    rows = []
    for a, b in combinations(sorted(per_model, key=text_key), 2):
        check_same_groups(a, per_model[a], b, per_model[b])
        estimate_a, estimate_b, diff = resampling.paired(per_model[a], per_model[b], stat, replicates=replicates,
                                                         seed=seed, level=level, sizes=sizes)
        shared = len(item_sets[a] & item_sets[b])
        rows.append(compare_row(a, b, estimate_a, estimate_b, diff, items=len(item_sets[a] | item_sets[b]),
                                same_items=item_sets[a] == item_sets[b], shared_items=shared))
    if intervals == "simultaneous":
        names = sorted(per_model, key=text_key)
        _, fam, _ = structure_family([per_model[m] for m in names], stat, replicates=replicates, seed=seed,
                                     sizes=sizes)
        low, high = simultaneous_intervals(fam, level)
        # calibrated where validation/rank_sets.py measured the simultaneous coverage
        measured = stat in RANK_CALIBRATED_STATS and len(per_model[names[0]].counts) >= RANK_CALIBRATED_GROUPS
        for p, row in enumerate(rows):
            row.update(se=float(fam.se[p]), ci_low=float(low[p]), ci_high=float(high[p]), interval="simultaneous",
                       calibrated=bool(row["calibrated"]) and measured)
    return rows


def compare_row(a: object, b: object, estimate_a: float, estimate_b: float, diff: resampling.Interval, *,
                items: int | None, same_items: bool | None, shared_items: int | None) -> dict:
    """One row of COMPARE_COLUMNS (the report's compare section prints the same)."""
    return {"model_a": a, "model_b": b, "estimate_a": estimate_a, "estimate_b": estimate_b,
            "difference": diff.estimate, "se": diff.se, "ci_low": diff.ci_low, "ci_high": diff.ci_high,
            "items": items, "same_items": same_items, "shared_items": shared_items, "dropped": diff.dropped,
            "calibrated": diff.calibrated, "sizes": diff.sizes}


def same_groups_problem(a: object, sums_a: GroupSums, b: object, sums_b: GroupSums) -> str | None:
    """Why two models' groups cannot be paired (a group only one of them has), or None."""
    only_a = set(sums_a.labels.tolist()) - set(sums_b.labels.tolist())
    only_b = set(sums_b.labels.tolist()) - set(sums_a.labels.tolist())
    for model, other, only in ((a, b, only_a), (b, a, only_b)):
        if only:
            return (f"group {min(only, key=str)!r} has items from model {model!r} but none from model {other!r} "
                    f"({len(only)} such groups), so the two models' groups cannot be paired")
    return None


def check_same_groups(a: object, sums_a: GroupSums, b: object, sums_b: GroupSums) -> None:
    problem = same_groups_problem(a, sums_a, b, sums_b)
    if problem:
        raise InputError(problem)
