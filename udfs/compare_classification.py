"""UDF kernel for emb_compare_classification (sql/python/89_compare_classification.sql).

One call gets the whole per-item predictions table as lists (model, item and group as text,
correct as a boolean) with the table's column names and types, so a missing column gets the same
message as from Python; the numerics are embsql.core.classification (align, paired_rows), which
embsql.compare_classification runs too.
"""

from __future__ import annotations

import pyarrow as pa

from embsql.core.classification import COMPARE_COLUMNS, align, paired_rows
from embsql.io.sources import Source
from embsql.io.udf_errors import result_type, sql_errors

TYPES = {"model_a": pa.string(), "model_b": pa.string(), "accuracy_a": pa.float64(), "accuracy_b": pa.float64(),
         "difference": pa.float64(), "se": pa.float64(), "ci_low": pa.float64(), "ci_high": pa.float64(),
         "p_value": pa.float64(), "p_exact": pa.float64(), "p_adjusted": pa.float64(), "p_adjust": pa.string(),
         "items": pa.int64(),
         "groups": pa.int64(), "a_only": pa.int64(), "b_only": pa.int64(), "permutations": pa.int64(),
         "method": pa.string(), "level": pa.float64(), "calibrated": pa.bool_()}
SQL_TYPES = {"string": "VARCHAR", "double": "DOUBLE", "int64": "BIGINT", "bool": "BOOLEAN"}
PAIRS = "STRUCT(" + ", ".join(f"{c} {SQL_TYPES[str(TYPES[c])]}" for c in COMPARE_COLUMNS) + ")[]"


@sql_errors
def emb__compare_classification(tbl, names, types, model_col, item_col, group_col, models, items, correct, groups,
                                level, p_adjust, permutations, seed):
    out = []
    for row in range(len(tbl)):
        scalar = lambda array, row=row: array[row].as_py()
        source = Source(scalar(tbl), None, dict(zip(scalar(names), scalar(types))))
        for column, role in ((scalar(model_col), "model"), (scalar(item_col), "item"), ("correct", "correct")) + \
                (((scalar(group_col), "group"),) if scalar(group_col) else ()):
            source.require(column, role)
        paired, clusters = align(scalar(models), scalar(items), scalar(correct),
                                 scalar(groups) if scalar(group_col) else None, f"predictions {scalar(tbl)!r}")
        method = scalar(p_adjust)
        rows = paired_rows(paired, clusters, level=scalar(level), p_adjust=None if method in (None, "none") else method,
                           permutations=scalar(permutations), seed=scalar(seed))
        out.append([{**r, "model_a": str(r["model_a"]), "model_b": str(r["model_b"])} for r in rows])
    return pa.array(out, type=pa.list_(pa.struct([(c, TYPES[c]) for c in COMPARE_COLUMNS])))


SPECS = [
    {"name": "emb__compare_classification", "function": emb__compare_classification,
     "parameters": ["VARCHAR", "VARCHAR[]", "VARCHAR[]", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR[]", "VARCHAR[]",
                    "BOOLEAN[]", "VARCHAR[]", "DOUBLE", "VARCHAR", "BIGINT", "BIGINT"],
     "return_type": result_type(PAIRS), "null_handling": "special"},
]
