"""UDF kernel for emb_compare_retrieval (sql/python/95_compare_retrieval.sql).

One call gets the whole per-query evaluation table as lists (model, qid, metric, value, group as
text) with the table's column names and types, so a missing column gets the same message as from
Python; the numerics are embsql.core.retrieval_comparison, which embsql.compare_retrieval runs too.
"""

from __future__ import annotations

import pyarrow as pa

from embsql.core.model_ranking import RANK_SQL_TYPE
from embsql.core.retrieval_comparison import compare_metric, rank_metric
from embsql.io.columns import require_number
from embsql.io.sources import Source
from embsql.io.udf_errors import result_type, sql_errors

PAIRS = ("STRUCT(model_a VARCHAR, model_b VARCHAR, metric VARCHAR, mean_a DOUBLE, mean_b DOUBLE, difference DOUBLE, "
         "se DOUBLE, ci_low DOUBLE, ci_high DOUBLE, p_value DOUBLE, p_adjusted DOUBLE, p_adjust VARCHAR, "
         "queries BIGINT, groups BIGINT, permutations BIGINT, method VARCHAR, level DOUBLE, calibrated BOOLEAN, "
         "interval VARCHAR)[]")


def _checked(row, tbl, names, types, model_col, qid_col, group_col, value_type):
    """The call row's scalar reader, after its columns are checked as the Python faces check them."""
    scalar = lambda array: array[row].as_py()
    source = Source(scalar(tbl), None, dict(zip(scalar(names), scalar(types))))
    for column, role in ((scalar(model_col), "model"), (scalar(qid_col), "qid"), ("metric", "metric"),
                         ("value", "value")) + (((scalar(group_col), "group"),) if scalar(group_col) else ()):
        source.require(column, role)
    require_number("value", scalar(value_type), scalar(tbl))
    return scalar


@sql_errors
def emb__compare_retrieval(tbl, names, types, model_col, qid_col, group_col, value_type, models, qids, metrics,
                           values, groups, metric, permutations, seed, level, p_adjust, intervals, replicates):
    out = []
    for row in range(len(tbl)):
        scalar = _checked(row, tbl, names, types, model_col, qid_col, group_col, value_type)
        method = scalar(p_adjust)
        rows = compare_metric(scalar(models), scalar(qids), scalar(metrics), scalar(values),
                              scalar(groups) if scalar(group_col) else None, metric=scalar(metric),
                              what=f"evaluation {scalar(tbl)!r}", permutations=scalar(permutations),
                              seed=scalar(seed), level=scalar(level),
                              p_adjust=None if method in (None, "none") else method, intervals=scalar(intervals),
                              replicates=scalar(replicates))
        out.append([{**r, "model_a": str(r["model_a"]), "model_b": str(r["model_b"])} for r in rows])
    return pa.array(out, type=pa.list_(pa.struct([
        ("model_a", pa.string()), ("model_b", pa.string()), ("metric", pa.string()), ("mean_a", pa.float64()),
        ("mean_b", pa.float64()), ("difference", pa.float64()), ("se", pa.float64()), ("ci_low", pa.float64()),
        ("ci_high", pa.float64()), ("p_value", pa.float64()), ("p_adjusted", pa.float64()), ("p_adjust", pa.string()),
        ("queries", pa.int64()), ("groups", pa.int64()), ("permutations", pa.int64()), ("method", pa.string()),
        ("level", pa.float64()), ("calibrated", pa.bool_()), ("interval", pa.string())])))


@sql_errors
def emb__rank_retrieval(tbl, names, types, model_col, qid_col, group_col, value_type, models, qids, metrics, values,
                        groups, metric, replicates, seed, level):
    out = []
    for row in range(len(tbl)):
        scalar = _checked(row, tbl, names, types, model_col, qid_col, group_col, value_type)
        rows = rank_metric(scalar(models), scalar(qids), scalar(metrics), scalar(values),
                           scalar(groups) if scalar(group_col) else None, metric=scalar(metric),
                           what=f"evaluation {scalar(tbl)!r}", replicates=scalar(replicates), seed=scalar(seed),
                           level=scalar(level))
        out.append([{**r, "model": str(r["model"])} for r in rows])
    return pa.array(out)


SPECS = [
    {"name": "emb__compare_retrieval", "function": emb__compare_retrieval,
     "parameters": ["VARCHAR", "VARCHAR[]", "VARCHAR[]", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR[]",
                    "VARCHAR[]", "VARCHAR[]", "DOUBLE[]", "VARCHAR[]", "VARCHAR", "BIGINT", "BIGINT", "DOUBLE",
                    "VARCHAR", "VARCHAR", "BIGINT"],
     "return_type": result_type(PAIRS), "null_handling": "special"},
    {"name": "emb__rank_retrieval", "function": emb__rank_retrieval,
     "parameters": ["VARCHAR", "VARCHAR[]", "VARCHAR[]", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR[]",
                    "VARCHAR[]", "VARCHAR[]", "DOUBLE[]", "VARCHAR[]", "VARCHAR", "BIGINT", "BIGINT", "DOUBLE"],
     "return_type": result_type(RANK_SQL_TYPE), "null_handling": "special"},
]
