"""Generated retrieval data for the tests: topics of documents, questions with paraphrases.

Each topic has a random unit centre; its documents are the centre plus noise (so documents of a
topic are near-miss distractors of each other).  Each question picks one document as its correct
answer; its paraphrases are that document plus noise whose size can grow with a level.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def vector_column(vectors: np.ndarray, dtype=None) -> pa.Array:
    vectors = np.asarray(vectors, dtype=np.float64)
    flat = pa.array(vectors.ravel(), type=dtype or pa.float64())
    return pa.ListArray.from_arrays(pa.array(np.arange(0, vectors.size + 1, vectors.shape[1]), pa.int32()), flat)


def make(seed: int = 0, *, models=("m1",), dims=None, topics: int = 6, docs_per_topic: int = 5, questions: int = 10,
         paraphrases: int = 3, levels=None, doc_noise: float = 0.5, query_noise: float = 0.8, dose: float = 0.0,
         dim: int = 16):
    """(queries, docs) as Arrow tables with a model column.

    ``levels``: paraphrase levels 0, 1, ...: each question gets ``paraphrases`` queries per level,
    with noise query_noise * (1 + dose * level).  Without levels each question gets ``paraphrases``
    queries and the level column is 0.
    """
    rng = np.random.default_rng(seed)
    dims = dims or [dim] * len(models)
    q_parts, d_parts = [], []
    n_levels = levels or 1
    for model, d in zip(models, dims):
        centres = unit(rng.normal(size=(topics, d)))
        doc_vectors, doc_ids, doc_groups = [], [], []
        for t in range(topics):
            for k in range(docs_per_topic):
                doc_vectors.append(centres[t] + doc_noise * rng.normal(size=d) / np.sqrt(d))
                doc_ids.append(f"d{t}_{k}")
                doc_groups.append(f"topic{t}")
        doc_vectors = np.array(doc_vectors)
        q_vectors, qids, q_groups, q_levels, q_pos = [], [], [], [], []
        for j in range(questions):
            p = int(rng.integers(len(doc_ids)))
            for level in range(n_levels):
                for r in range(paraphrases):
                    noise = query_noise * (1 + dose * level)
                    q_vectors.append(unit(doc_vectors[p]) + noise * rng.normal(size=d) / np.sqrt(d))
                    qids.append(f"q{j}_{level}_{r}")
                    q_groups.append(f"question{j}")
                    q_levels.append(level)
                    q_pos.append(doc_ids[p])
        q_parts.append(pa.table({"model": [model] * len(qids), "qid": qids, "group": q_groups, "level": q_levels,
                                 "positive": q_pos, "vector": vector_column(np.array(q_vectors))}))
        d_parts.append(pa.table({"model": [model] * len(doc_ids), "doc_id": doc_ids, "group": doc_groups,
                                 "vector": vector_column(doc_vectors)}))
    return pa.concat_tables(q_parts), pa.concat_tables(d_parts)


def arrays(table: pa.Table, model=None) -> dict:
    """Columns of one model as numpy (vectors as a float64 matrix, not normalised)."""
    if model is not None:
        table = table.filter(pa.compute.equal(table.column("model"), model))
    out = {name: np.asarray(table.column(name).to_pylist(), dtype=object) for name in table.column_names
           if name != "vector"}
    out["vector"] = np.array(table.column("vector").to_pylist(), dtype=np.float64)
    return out


def brute_force(queries: dict, docs: dict, scope: str = "corpus") -> list[dict]:
    """Margins by the definition, with the full similarity matrix in float64 (small data only)."""
    q, d = unit(queries["vector"]), unit(docs["vector"])
    sim = q @ d.T
    dim = q.shape[1]
    tol = 2 * (dim + 4) * np.finfo(float).eps
    index = {k: i for i, k in enumerate(docs["doc_id"].tolist())}
    rows = []
    for i, qid in enumerate(queries["qid"].tolist()):
        p = index[queries["positive"][i]]
        others = np.ones(len(d), bool)
        others[p] = False
        if scope == "group":
            others &= docs["group"] == docs["group"][p]
        s_pos, s_other = sim[i, p], sim[i, others]
        best = np.flatnonzero(others)[np.argmax(s_other)]
        higher, ties = int(np.sum(s_other > s_pos + tol)), int(np.sum(np.abs(s_other - s_pos) <= tol))
        d_pos2, d_neg2 = float(np.sum((q[i] - d[p]) ** 2)), float(np.sum((q[i] - d[best]) ** 2))
        tie = higher == 0 and ties > 0
        rows.append({"qid": qid, "d_pos2": d_pos2, "d_neg2": d_neg2,
                     "margin": 0.0 if tie else float(s_pos - s_other.max()),
                     "m": 0.0 if tie else (d_neg2 - d_pos2) / (d_neg2 + d_pos2),
                     "top1": higher + ties == 0, "rank": 1 + higher + ties, "ties": ties})
    return rows
