"""UDF kernels for the retrieval macros (sql/python/80_retrieval.sql): emb_margins by blocked
matrix products, and the dose of emb_retrieval_dose.

Each row of a call is one model: its queries (qids as text for messages, positives, vectors) and
its documents (doc_ids, groups, vectors) as lists.  Vectors are checked and scaled here (naming
the query or document); the numerics are the ones the Python API runs:
embsql.core.margins.model_margins and embsql.core.dose.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from embsql.core.dose import analyse
from embsql.core.margins import model_margins
from embsql.errors import EmbsqlError, fail
from embsql.io.table_stream import unit_vectors
from embsql.io.udf_errors import result_type, sql_errors

MARGINS = "STRUCT(d_pos2 DOUBLE, d_neg2 DOUBLE, margin DOUBLE, m DOUBLE, top1 BOOLEAN, rank BIGINT, ties BIGINT)[]"
FIELDS = pa.struct([("d_pos2", pa.float64()), ("d_neg2", pa.float64()), ("margin", pa.float64()), ("m", pa.float64()),
                    ("top1", pa.bool_()), ("rank", pa.int64()), ("ties", pa.int64())])


def _unit(vectors: pa.Array, ids: list, what: str, table: str, column: str, model) -> np.ndarray:
    where = lambda i: f"{what} {ids[i]!r}"
    try:
        return unit_vectors(vectors, where, column, None)
    except EmbsqlError as error:
        raise type(error)(f"{table}{'' if model is None else f' (model {model!r})'}: {error}", kind=error.kind) from None


@sql_errors
def emb__margin_kernel(qids, positives, q_vectors, doc_ids, doc_groups, d_vectors, scope, names, model):
    out = []
    for row in range(len(qids)):
        table_q, table_d, vector_col, doc_vector_col = names[row].as_py()
        m = model[row].as_py()
        ids = qids[row].as_py()
        if doc_ids[row].as_py() is None:
            fail("model.missing", model=repr(m), side="queries", source=table_q, other_side="docs", other=table_d)
        q_unit = _unit(q_vectors[row].values, ids, "qid", f"queries {table_q}", vector_col, m)
        keys = np.asarray(doc_ids[row].as_py(), dtype=object)
        d_unit = _unit(d_vectors[row].values, keys.tolist(), "doc_id", f"docs {table_d}", doc_vector_col, m)
        if q_unit.shape[1] != d_unit.shape[1]:
            fail("vector.dimension", column=repr(vector_col), dimension=q_unit.shape[1],
                 doc_column=repr(doc_vector_col), doc_dimension=d_unit.shape[1],
                 whose="" if m is None else f" (model {m!r})")
        groups = np.asarray(doc_groups[row].as_py(), dtype=object)
        result = model_margins(ids, np.asarray(positives[row].as_py(), dtype=object), q_unit, keys, groups,
                               d_unit, scope[row].as_py(), m)
        out.append(pa.StructArray.from_arrays(
            [pa.array(result.d_pos2), pa.array(result.d_neg2), pa.array(result.margin), pa.array(result.m),
             pa.array(result.top1), pa.array(result.rank), pa.array(result.ties)], fields=list(FIELDS)))
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in out])]).astype(np.int32)
    values = pa.concat_arrays(out) if out else pa.array([], type=FIELDS)
    return pa.ListArray.from_arrays(pa.array(offsets), values)




DOSE = ("STRUCT(level_code BIGINT, queries BIGINT, groups BIGINT, w_tilde_q DOUBLE, se DOUBLE, step DOUBLE, "
        "step_se DOUBLE, monotone BOOLEAN, p_value DOUBLE, permutations BIGINT, dose_works BOOLEAN)[]")


@sql_errors
def emb__dose_kernel(group_codes, level_codes, qids, vectors, vector_col, permutations, seed, alpha):
    """W~_q per level and the trend test for one model per row (groups and levels as dense ranks,
    so they keep the order SQL gives their values)."""
    out = []
    for row in range(len(qids)):
        ids = qids[row].as_py()
        unit = _unit(vectors[row].values, ids, "qid", "queries", vector_col[row].as_py(), None)
        result = analyse(group_codes[row].as_py(), level_codes[row].as_py(), np.asarray(ids, dtype=object), unit,
                         permutations=permutations[row].as_py(), seed=seed[row].as_py(), alpha=alpha[row].as_py())
        out.append([{"level_code": lv.level, "queries": lv.queries, "groups": lv.groups, "w_tilde_q": lv.w_tilde_q,
                     "se": lv.se, "step": lv.step, "step_se": lv.step_se, "monotone": result.monotone,
                     "p_value": result.p_value, "permutations": result.permutations, "dose_works": result.works}
                    for lv in result.levels])
    return pa.array(out)


SPECS = [
    {"name": "emb__margin_kernel", "function": emb__margin_kernel,
     "parameters": ["VARCHAR[]", "VARCHAR[]", "DOUBLE[][]", "VARCHAR[]", "VARCHAR[]", "DOUBLE[][]", "VARCHAR",
                    "VARCHAR[]", "VARCHAR"],
     "return_type": result_type(MARGINS), "null_handling": "special"},
    {"name": "emb__dose_kernel", "function": emb__dose_kernel,
     "parameters": ["BIGINT[]", "BIGINT[]", "VARCHAR[]", "DOUBLE[][]", "VARCHAR", "BIGINT", "BIGINT", "DOUBLE"],
     "return_type": result_type(DOSE)},
]
