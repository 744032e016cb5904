"""UDF kernel for emb_compare_classification (sql/python/89_compare_classification.sql).

One call gets the whole per-item predictions table as lists (model, item and group as text,
correct as a boolean) with the table's column names and types, so a missing column gets the same
message as from Python; the numerics are embsql.core.classification (align, paired_rows), which
embsql.compare_classification runs too.
"""

from __future__ import annotations

import pyarrow as pa

from embsql.core.classification import COMPARE_COLUMNS, align, paired_rows, rank_predictions
from embsql.core.model_ranking import RANK_SQL_TYPE
from embsql.io.sources import Source
from embsql.io.udf_errors import result_type, sql_errors

TYPES = {"model_a": pa.string(), "model_b": pa.string(), "accuracy_a": pa.float64(), "accuracy_b": pa.float64(),
         "difference": pa.float64(), "se": pa.float64(), "ci_low": pa.float64(), "ci_high": pa.float64(),
         "p_value": pa.float64(), "p_exact": pa.float64(), "p_adjusted": pa.float64(), "p_adjust": pa.string(),
         "items": pa.int64(),
         "groups": pa.int64(), "a_only": pa.int64(), "b_only": pa.int64(), "permutations": pa.int64(),
         "method": pa.string(), "level": pa.float64(), "calibrated": pa.bool_(), "interval": pa.string()}
SHOWN = COMPARE_COLUMNS + ("interval",)
SQL_TYPES = {"string": "VARCHAR", "double": "DOUBLE", "int64": "BIGINT", "bool": "BOOLEAN"}
PAIRS = "STRUCT(" + ", ".join(f"{c} {SQL_TYPES[str(TYPES[c])]}" for c in SHOWN) + ")[]"


def _checked(row, tbl, names, types, model_col, item_col, group_col, wanted):
    """The call row's scalar reader, after its columns (``wanted`` besides model, item and group)
    are checked as the Python faces check them."""
    scalar = lambda array: array[row].as_py()
    source = Source(scalar(tbl), None, dict(zip(scalar(names), scalar(types))))
    for column, role in ((scalar(model_col), "model"), (scalar(item_col), "item")) + \
            tuple((c, c) for c in wanted) + (((scalar(group_col), "group"),) if scalar(group_col) else ()):
        source.require(column, role)
    return scalar


@sql_errors
def emb__compare_classification(tbl, names, types, model_col, item_col, group_col, models, items, correct, groups,
                                level, p_adjust, permutations, seed, intervals, replicates):
    out = []
    for row in range(len(tbl)):
        scalar = _checked(row, tbl, names, types, model_col, item_col, group_col, ("correct",))
        paired, clusters = align(scalar(models), scalar(items), scalar(correct),
                                 scalar(groups) if scalar(group_col) else None, f"predictions {scalar(tbl)!r}")
        method = scalar(p_adjust)
        rows = paired_rows(paired, clusters, level=scalar(level), p_adjust=None if method in (None, "none") else method,
                           permutations=scalar(permutations), seed=scalar(seed), intervals=scalar(intervals),
                           replicates=scalar(replicates))
        out.append([{**r, "model_a": str(r["model_a"]), "model_b": str(r["model_b"])} for r in rows])
    return pa.array(out, type=pa.list_(pa.struct([(c, TYPES[c]) for c in SHOWN])))


@sql_errors
def emb__rank_classification(tbl, names, types, model_col, item_col, group_col, models, items, correct, labels,
                             predicted, groups, statistic, replicates, seed, level):
    out = []
    for row in range(len(tbl)):
        stat = statistic[row].as_py()
        scalar = _checked(row, tbl, names, types, model_col, item_col, group_col,
                          ("label", "predicted") if stat == "macro_f1" else ("correct",))
        rows = rank_predictions(scalar(models), scalar(items), scalar(groups) if scalar(group_col) else None,
                                statistic=stat, correct=scalar(correct), labels=scalar(labels),
                                predicted=scalar(predicted), what=f"predictions {scalar(tbl)!r}",
                                column=f"model column {scalar(model_col)!r}", level=scalar(level),
                                replicates=scalar(replicates), seed=scalar(seed))
        out.append([{**r, "model": str(r["model"])} for r in rows])
    return pa.array(out)


SPECS = [
    {"name": "emb__compare_classification", "function": emb__compare_classification,
     "parameters": ["VARCHAR", "VARCHAR[]", "VARCHAR[]", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR[]", "VARCHAR[]",
                    "BOOLEAN[]", "VARCHAR[]", "DOUBLE", "VARCHAR", "BIGINT", "BIGINT", "VARCHAR", "BIGINT"],
     "return_type": result_type(PAIRS), "null_handling": "special"},
    {"name": "emb__rank_classification", "function": emb__rank_classification,
     "parameters": ["VARCHAR", "VARCHAR[]", "VARCHAR[]", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR[]", "VARCHAR[]",
                    "BOOLEAN[]", "VARCHAR[]", "VARCHAR[]", "VARCHAR[]", "VARCHAR", "BIGINT", "BIGINT", "DOUBLE"],
     "return_type": result_type(RANK_SQL_TYPE), "null_handling": "special"},
]
