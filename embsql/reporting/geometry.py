"""The report's "models compared" section: every pair of models on the same items, by four
measures at two levels of the invariance hierarchy.

  * similarity level (unchanged by rotation, uniform scale and embedding into more dimensions):
    linear CKA (with its cluster-jackknife SE over the report's groups) and the Procrustes r;
  * monotone level (unchanged also by any order-keeping change of the similarities): k-NN
    agreement and the Mantel r.
The section needs an item column (``item=``): the report's own columns (group, model) say which group
and model a row belongs to, not which item it embeds.  It reads the rows, so it runs on DuckDB
only.  Kernels: embsql.core.geometry and embsql.core.agreement (reporting never calls embsql.api).
"""

from __future__ import annotations

from itertools import combinations

import duckdb

from embsql.calibration import field
from embsql.core.agreement import MANTEL_MAX_ITEMS, knn_rows, mantel_rows
from embsql.core.geometry import LEVEL_MEANING, cka_rows, procrustes_rows
from embsql.core.labels import text_key
from embsql.errors import InputError
from embsql.io.sources import resolve
from embsql.io.table_stream import Skipped, unit_rows
from embsql.reporting.report_result import Section
from embsql.result_table import ResultTable

NAME = "models"
TITLE = "Models compared on the same items"
# corrected: the debiased CKA, the point the CKA interval is built around (value is the biased CKA)
COLUMNS = ("model_a", "model_b", "measure", "invariance", "value", "se", "corrected", "ci_low", "ci_high", "calibrated",
           "p_value", "items")
KNN_K = 10
MEASURES = (   # (measure, invariance level, what that level ignores)
    ("linear CKA", "similarity", LEVEL_MEANING),
    ("Procrustes r", "similarity", LEVEL_MEANING),
    (f"k-NN overlap (k = {KNN_K})", "monotone", "also any order-keeping change of the similarities"),
    ("Mantel r (Spearman)", "monotone", "also any order-keeping change of the similarities"),
)
CAUTION = ("Each row compares two models on the items both embedded. invariance says which transformations of a "
           "model's unit vectors the measure ignores: similarity (CKA, Procrustes r) = rotation, uniform scale and "
           "embedding into more dimensions; monotone (k-NN overlap, Mantel r) = those and also any order-keeping "
           "change of the similarities. Linear CKA is the biased estimate, in [0, 1] (0 for no shared structure is "
           "reached only as n grows: with few items unrelated models give a CKA above 0). "
           "A high similarity-level value means the two geometries agree up to a "
           "rotation and scale; a high monotone-level value with a lower similarity-level one means the models "
           "order neighbours alike but space them differently. CKA's se is the cluster jackknife over the "
           "report's groups; its ci_low-ci_high is a 95% interval for the population CKA, built around the debiased "
           "CKA (corrected) because the biased one is biased upward by far more than its se when the dimension is large next to "
           "the items (calibrated: from 30 groups, where simulation measured " + field("cka.coverage", "range") + " coverage); "
           "p_value permutes the items of the second model (with many items it is tiny even for weak agreement: "
           "read the value, not p). k-NN overlap is chance at k/(n−1); none of these says which model is better.")


def models_section(con: duckdb.DuckDBPyConnection | None, source: str, *, item: str | None, model: str | None,
                   group: str, vector: str, permutations: int, seed: int,
                   asked: bool, bad_rows: str = "error") -> tuple[Section | None, str | None]:
    """(the section, None), or (None, a note saying why not) when it cannot run and was not asked
    for by name (then the reason is an error)."""
    why_not = None
    if item is None:
        why_not = "the models section needs the item column (item=...): which rows embed the same item"
    elif model is None:
        why_not = "the models section compares models: it needs the model column (model=...)"
    elif con is None:
        why_not = "the models section reads the rows, which only DuckDB does"
    if why_not:
        if asked:
            raise InputError(why_not)
        return None, f"no models compared: {why_not}"
    assert item is not None and con is not None   # else why_not is set
    resolved = resolve(con, source)
    resolved.require(item, "item")
    parts = unit_rows(con, resolved, item, vector, model=model, extra=group, extra_role="group", group_role="item",
                      skip=Skipped.asked(bad_rows))
    if len(parts) < 2:
        if asked:
            raise InputError(f"the models section needs two or more models; the model column has {len(parts)}")
        return None, None
    models = {value: (part.labels, part.unit) for value, part in parts}
    groups = {value: part.extra for value, part in parts}
    tests = max(permutations, 0)
    rows: list[dict[str, object]] = []
    note = None
    cka = {(r["model_a"], r["model_b"]): r for r in cka_rows(models, groups=groups, group=group,
                                                            permutations=tests, seed=seed, common=True)}
    procrustes = {(r["model_a"], r["model_b"]): r for r in procrustes_rows(models, permutations=tests, seed=seed,
                                                                          common=True, jackknife=False)}
    knn = {(r["model_a"], r["model_b"]): r for r in knn_rows(models, KNN_K, common=True)[0]}
    items = next(iter(cka.values()))["items"]
    if tests and items <= MANTEL_MAX_ITEMS:
        mantel = {(r["model_a"], r["model_b"]): r for r in mantel_rows(models, permutations=tests, seed=seed,
                                                                      common=True)}
    else:
        mantel = {}
        note = ("no Mantel r in the models section: " + ("it needs permutations > 0" if not tests else
                f"{items:,} items is more than its {MANTEL_MAX_ITEMS:,} (n x n rank matrices)"))
    for a, b in combinations(sorted(models, key=text_key), 2):
        pair = (a, b)
        c = cka[pair]
        found = ((c["cka"], c["se"], c["p_value"], (c["corrected"], c["ci_low"], c["ci_high"], c["calibrated"])),
                 (procrustes[pair]["r"], None, procrustes[pair]["p_value"], None),
                 (knn[pair]["overlap"], knn[pair]["se"], None, None),
                 (mantel[pair]["r"], None, mantel[pair]["p_value"], None) if pair in mantel else None)
        for (measure, invariance, _), values in zip(MEASURES, found):
            if values is not None:
                centre, low, high, calibrated = values[3] or (None, None, None, None)
                rows.append({"model_a": a, "model_b": b, "measure": measure, "invariance": invariance, "value": values[0],
                             "se": values[1], "corrected": centre, "ci_low": low, "ci_high": high,
                             "calibrated": calibrated,
                             "p_value": values[2], "items": items})
    return Section(NAME, TITLE, ResultTable.from_dicts(NAME, COLUMNS, rows), CAUTION), note
