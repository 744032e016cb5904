"""Python face of the cluster jackknife, the cluster bootstrap and the paired model comparison.

All three work on per-group sufficient statistics (embsql.io.reading), so they cost one pass
over the items; the SQL functions emb_jackknife, emb_bootstrap and emb_compare call the same
kernels (embsql.core.resampling) through the UDFs in udfs/resampling.py.
"""

from __future__ import annotations

from itertools import combinations

import duckdb
import numpy as np

from embsql.core import resampling
from embsql.errors import BadLabelError, InputError
from embsql.results import ResultTable
from embsql.io.sources import accepts_frames, resolve
from embsql.io.reading import GroupSums, group_sums, unit_rows

JACKKNIFE_COLUMNS = ("stat", "estimate", "se", "groups")
BOOTSTRAP_COLUMNS = ("stat", "estimate", "se", "ci_low", "ci_high", "level", "replicates", "groups", "estimate_bc",
                     "dropped", "calibrated")
COMPARE_COLUMNS = ("model_a", "model_b", "estimate_a", "estimate_b", "difference", "se", "ci_low", "ci_high", "items",
                   "same_items", "shared_items", "dropped", "calibrated")


@accepts_frames()
def jackknife(con: duckdb.DuckDBPyConnection, source: str, group: str, vector: str, *, stat: str = "r2",
              by: str | None = None) -> ResultTable:
    """Leave-one-group-out SE of ``stat`` (r2, f, v, w_bar or icc), per by value."""
    rows = []
    for value, sums in group_sums(con, resolve(con, source), group, vector, by=by):
        result = resampling.jackknife(sums, stat)
        rows.append({**({by: value} if by else {}), "stat": stat, "estimate": result.estimate, "se": result.se,
                     "groups": len(sums.counts)})
    return ResultTable.from_dicts("jackknife", ((by,) if by else ()) + JACKKNIFE_COLUMNS, rows)


@accepts_frames()
def bootstrap(con: duckdb.DuckDBPyConnection, source: str, group: str, vector: str, *, stat: str = "r2",
              replicates: int = 2000, seed: int = 42, level: float = 0.95, by: str | None = None) -> ResultTable:
    """Cluster bootstrap (groups resampled with replacement): the bootstrap SE, and the calibrated
    interval (ci_low, ci_high) around the bias-corrected estimate (estimate_bc); see
    embsql.core.resampling for the method and bench/validity_intervals.py for its coverage."""
    rows = []
    for value, sums in group_sums(con, resolve(con, source), group, vector, by=by):
        result = resampling.bootstrap(canonical(sums), stat, replicates=replicates, seed=seed, level=level)
        rows.append({**({by: value} if by else {}), **bootstrap_row(stat, result, level, replicates, len(sums.counts))})
    return ResultTable.from_dicts("bootstrap", ((by,) if by else ()) + BOOTSTRAP_COLUMNS, rows)


def bootstrap_row(stat: str, result: resampling.Interval, level: float, replicates: int, groups: int) -> dict:
    """One row of BOOTSTRAP_COLUMNS (the report's bootstrap section prints the same)."""
    return {"stat": stat, "estimate": result.estimate, "se": result.se, "ci_low": result.ci_low,
            "ci_high": result.ci_high, "level": level, "replicates": replicates, "groups": groups,
            "estimate_bc": result.estimate_bc, "dropped": result.dropped, "calibrated": result.calibrated}


def canonical(sums: GroupSums) -> GroupSums:
    """Groups sorted by their label as text: the order the seeded resamples refer to."""
    order = np.argsort(np.asarray(sums.labels, dtype=object).astype(str), kind="stable")
    return sums.take(order)


_canonical = canonical  # the old name, still imported by callers written before


def item_positions(items_by_model: dict) -> dict:
    """Per model, item -> its row; a NULL or duplicated item is an error naming the item and the model."""
    rows_of = {}
    for m, items in items_by_model.items():
        position: dict = {}
        for row, item in enumerate(items.tolist()):
            if item is None:
                raise BadLabelError(f"model {m!r} has a NULL item; every row needs an item id")
            if position.setdefault(item, row) != row:
                raise InputError(f"model {m!r} has item {item!r} more than once")
        rows_of[m] = position
    return rows_of


def shared_items(items_by_model: dict, common: bool) -> tuple[list, dict]:
    """Match items across models: the items every model has, in canonical order (sorted by their
    text, the same order from Python and from SQL), and per model the row of each of them.

    A NULL or duplicated item, or (unless ``common``) an item some model lacks, is an error that
    names the item and the model.
    """
    rows_of = item_positions(items_by_model)
    shared = set.intersection(*(set(position) for position in rows_of.values()))
    if not common:
        for m, position in rows_of.items():
            extra = set(position) - shared
            if extra:
                raise InputError(f"model {m!r} has item {min(extra, key=str)!r} that another model lacks "
                                 f"({len(extra)} such items); pass common=True to compare on the "
                                 f"{len(shared)} items every model has")
    order = sorted(shared, key=str)
    return order, {m: np.fromiter((position[x] for x in order), np.int64, len(order))
                   for m, position in rows_of.items()}


def compare_rows(models: dict, stat: str, *, replicates: int, seed: int, level: float, common: bool) -> list[dict]:
    """``models``: model -> (item ids, group labels, unit vectors).  One row per pair of models.

    Models are paired by group label: the same groups are left out (jackknife) and drawn (bootstrap)
    for both, whatever items each model has in them.  Groups are the sampled units, so the items
    need not be the same; an item both models have must be in the same group for both.  With
    ``common`` only the items every model has are used.  same_items and shared_items say how far
    the two item sets agree."""
    if common:
        _, rows_of = shared_items({m: items for m, (items, _, _) in models.items()}, common=True)
    else:
        rows_of = {m: np.arange(len(items)) for m, (items, _, _) in models.items()}
        item_positions({m: items for m, (items, _, _) in models.items()})
    group_of, item_sets, per_model = {}, {}, {}
    for m, (items, labels, unit) in models.items():
        keep = rows_of[m]
        for item, label in zip(items[keep].tolist(), labels[keep].tolist()):
            if group_of.setdefault(item, label) != label:
                raise InputError(f"item {item!r} is in group {group_of[item]!r} for one model and {label!r} for "
                                 f"model {m!r}; the groups must be the same for every model")
        item_sets[m] = set(items[keep].tolist())
        per_model[m] = canonical(GroupSums.from_rows(labels[keep], unit[keep]))
    rows = []
    for a, b in combinations(sorted(per_model, key=str), 2):
        _check_same_groups(a, per_model[a], b, per_model[b])
        estimate_a, estimate_b, diff = resampling.paired(per_model[a], per_model[b], stat, replicates=replicates,
                                                         seed=seed, level=level)
        shared = len(item_sets[a] & item_sets[b])
        rows.append(compare_row(a, b, estimate_a, estimate_b, diff, items=len(item_sets[a] | item_sets[b]),
                                same_items=item_sets[a] == item_sets[b], shared_items=shared))
    return rows


def compare_row(a, b, estimate_a: float, estimate_b: float, diff: resampling.Interval, *, items, same_items,
                shared_items) -> dict:
    """One row of COMPARE_COLUMNS (the report's compare section prints the same)."""
    return {"model_a": a, "model_b": b, "estimate_a": estimate_a, "estimate_b": estimate_b,
            "difference": diff.estimate, "se": diff.se, "ci_low": diff.ci_low, "ci_high": diff.ci_high,
            "items": items, "same_items": same_items, "shared_items": shared_items, "dropped": diff.dropped,
            "calibrated": diff.calibrated}


def same_groups_problem(a, sums_a: GroupSums, b, sums_b: GroupSums) -> str | None:
    """Why two models' groups cannot be paired (a group only one of them has), or None."""
    only_a = set(sums_a.labels.tolist()) - set(sums_b.labels.tolist())
    only_b = set(sums_b.labels.tolist()) - set(sums_a.labels.tolist())
    for model, other, only in ((a, b, only_a), (b, a, only_b)):
        if only:
            return (f"group {min(only, key=str)!r} has items from model {model!r} but none from model {other!r} "
                    f"({len(only)} such groups), so the two models' groups cannot be paired")
    return None


def _check_same_groups(a, sums_a: GroupSums, b, sums_b: GroupSums) -> None:
    problem = same_groups_problem(a, sums_a, b, sums_b)
    if problem:
        raise InputError(problem)


@accepts_frames()
def compare(con: duckdb.DuckDBPyConnection, source: str, group: str, vector: str, model: str, item: str, *,
            stat: str = "r2", replicates: int = 2000, seed: int = 42, level: float = 0.95,
            common: bool = False) -> ResultTable:
    """Paired comparison of every pair of models, paired by group label.

    difference = estimate_a - estimate_b; se from the paired cluster jackknife (the same group
    deletions for both models); ci_low/ci_high the studentized paired cluster bootstrap (the same
    resamples for both models).  items: the items either model has; shared_items: those both
    have; same_items: whether the two sets are equal.  common=True keeps only the items every
    model has.
    """
    parts = unit_rows(con, resolve(con, source), group, vector, by=model, extra=item, extra_role="item")
    if len(parts) < 2:
        raise InputError(f"model column {model!r} has {len(parts)} model(s); a comparison needs at least two")
    models = {value: (part.extra, part.labels, part.unit) for value, part in parts}
    rows = compare_rows(models, stat, replicates=replicates, seed=seed, level=level, common=common)
    return ResultTable.from_dicts("compare", COMPARE_COLUMNS, rows)
