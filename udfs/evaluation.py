"""UDF kernel of emb_retrieval_eval (sql/python/90_evaluation.sql): per model, the exact cosine
top-k run of its queries against its documents, scored against the qrels with trec_eval's
definitions.  The numerics are the Python API's (embsql.io.runs, embsql.io.scoring, embsql.core.ranking);
vectors, relevance values and ids are checked here, naming the row."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from embsql.core.ranking import check_k, parse_metrics
from embsql.errors import error, fail
from embsql.io.qrels import Judgements, check_known, check_relevance, check_unique_pairs
from embsql.io.runs import ranked
from embsql.io.scoring import score_runs
from embsql.io.table_stream import unit_vectors
from embsql.io.udf_errors import result_type, sql_errors

RESULT = ("STRUCT(metric VARCHAR, value DOUBLE, queries BIGINT, without_relevant BIGINT, missing BIGINT, "
          "unjudged DOUBLE)[]")
FIELDS = pa.struct([("metric", pa.string()), ("value", pa.float64()), ("queries", pa.int64()),
                    ("without_relevant", pa.int64()), ("missing", pa.int64()), ("unjudged", pa.float64())])


def _unit(vectors: pa.Array, ids: list, what: str, table: str, column: str, model) -> np.ndarray:
    whose = "" if model is None else f" (model {model!r})"
    return unit_vectors(vectors, lambda i: f"row {i + 1} ({what} {ids[i]!r}) of {table}{whose}", column, None)


@sql_errors
def emb__retrieval_eval_kernel(qids, q_vectors, doc_ids, d_vectors, j_qids, j_docs, j_rel, k, metrics, names,
                               unknown, model):
    out = []
    for row in range(len(qids)):
        table_q, table_d, table_j, vector_col, doc_vector_col, relevance_col = names[row].as_py()
        m = model[row].as_py()
        if doc_ids[row].as_py() is None:
            fail("model.missing", model=repr(m), side="queries", source=table_q, other_side="docs", other=table_d)
        depth = check_k(k[row].as_py())
        parsed = parse_metrics(metrics[row].as_py())
        depth = max(depth, *(x.cutoff for x in parsed))
        ids = pa.array(qids[row].as_py(), pa.string())
        docs = pa.array(doc_ids[row].as_py(), pa.string())
        q_unit = _unit(q_vectors[row].values, ids.to_pylist(), "qid", f"queries {table_q}", vector_col, m)
        d_unit = _unit(d_vectors[row].values, docs.to_pylist(), "doc_id", f"docs {table_d}", doc_vector_col, m)
        if q_unit.shape[1] != d_unit.shape[1]:
            raise error("vector.dimension", column=repr(vector_col), dimension=q_unit.shape[1],
                        doc_column=repr(doc_vector_col), doc_dimension=d_unit.shape[1],
                        whose="" if m is None else f" (model {m!r})")
        jq, jd = j_qids[row].values, j_docs[row].values
        where = lambda i: f"row {i + 1}"      # counted from 1
        for values, role in ((jq, "qid"), (jd, "doc_id")):
            if values.null_count:
                bad = int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0])
                fail("label.null", role=role, column=repr(role), word="NULL", where=f" at row {bad + 1} of qrels {table_j}")
        relevance = check_relevance(j_rel[row].values, where, relevance_col)
        check_unique_pairs(jq, jd, where, table_j)
        judgements = Judgements(jq, jd, relevance, table_j)
        policy = unknown[row].as_py()
        if policy not in ("error", "skip"):
            fail("argument.range", name="unknown", interval="('error', 'skip')", value=repr(policy))
        judgements, _ = check_known(judgements, ids, "qid", judgements.qid, policy, f"queries {table_q}")
        judgements, _ = check_known(judgements, docs, "doc_id", judgements.doc_id, policy, f"docs {table_d}")
        run = ranked(m, ids, q_unit, docs, d_unit, np.ones(len(d_unit)), depth)
        summary, _ = score_runs(run, judgements, parsed, depth)
        out.append(pa.array([{c: r[c] for c in FIELDS.names} for r in summary], type=FIELDS))
    offsets = np.concatenate([[0], np.cumsum([len(x) for x in out])]).astype(np.int32)
    values = pa.concat_arrays(out) if out else pa.array([], type=FIELDS)
    return pa.ListArray.from_arrays(pa.array(offsets), values)


SPECS = [
    {"name": "emb__retrieval_eval_kernel", "function": emb__retrieval_eval_kernel,
     "parameters": ["VARCHAR[]", "DOUBLE[][]", "VARCHAR[]", "DOUBLE[][]", "VARCHAR[]", "VARCHAR[]", "VARCHAR[]",
                    "BIGINT", "VARCHAR[]", "VARCHAR[]", "VARCHAR", "VARCHAR"],
     "return_type": result_type(RESULT), "null_handling": "special"},
]
