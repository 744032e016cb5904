"""Score a run against relevance judgements: per query and per model, trec_eval's definitions.

The run (Arrow: model, qid, doc_id, score) and the qrels are encoded as integers with Arrow's
hash kernels; each query's documents are ordered by score descending, then doc_id descending as
text (trec_eval's order, whatever the run's rank column says), and the metrics are the numpy
kernels of embsql.core.ranking.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from embsql.core import ranking
from embsql.core.labels import sort_key
from embsql.errors import InputError
from embsql.io.qrels import Qrels
from embsql.io.runs import tie_keys

SUMMARY_COLUMNS = ("model", "metric", "value", "queries", "without_relevant", "missing", "unjudged")
PER_QUERY_COLUMNS = ("model", "qid", "metric", "value")


def _codes(values: pa.Array, universe: pa.Array) -> np.ndarray:
    return pc.index_in(values, value_set=universe).to_numpy(zero_copy_only=False).astype(np.int64)


def evaluate_model(run: pa.Table, qrels: Qrels, metrics: list[ranking.Metric], depth: int | None):
    """Per-query values of one model's run: (qids evaluated, {metric: values}, missing count)."""
    run_q, run_d = run.column("qid").combine_chunks(), run.column("doc_id").combine_chunks()
    queries = pc.unique(pa.concat_arrays([run_q, qrels.qid]))
    documents = pc.unique(pa.concat_arrays([run_d, qrels.doc_id]))
    rq, rd = _codes(run_q, queries), _codes(run_d, documents)
    jq, jd = _codes(qrels.qid, queries), _codes(qrels.doc_id, documents)
    width = np.int64(len(documents))
    judged_keys = jq * width + jd
    by_key = np.argsort(judged_keys)
    sorted_keys = judged_keys[by_key]
    at = np.minimum(np.searchsorted(sorted_keys, rq * width + rd), len(sorted_keys) - 1)
    judged = sorted_keys[at] == rq * width + rd
    gain = np.where(judged, qrels.relevance[by_key][at], 0)
    # trec_eval evaluates the queries of the run that have judgements; the others are skipped
    has_judgement = np.zeros(len(queries), dtype=bool)
    has_judgement[jq] = True
    in_run = np.zeros(len(queries), dtype=bool)
    in_run[rq] = True
    evaluated = np.flatnonzero(has_judgement & in_run)
    missing = int((has_judgement & ~in_run).sum())
    index = np.full(len(queries), -1, dtype=np.int64)
    index[evaluated] = np.arange(len(evaluated))
    order = ranking.run_order(rq, run.column("score").to_numpy(), tie_keys(documents)[rd])
    rq_sorted = rq[order]
    position = ranking.positions(rq_sorted)
    keep = index[rq_sorted] >= 0
    if depth is not None:
        keep &= position < depth
    rows = order[keep]
    cut = max(m.cutoff for m in metrics)
    # the ideal ranking: each query's judged gains, largest first, cut at the largest cutoff
    mine = index[jq] >= 0
    jqi, rel = index[jq[mine]], qrels.relevance[mine]
    by_gain = np.lexsort((-rel, jqi))
    jqi, rel = jqi[by_gain], rel[by_gain]
    ideal_position = ranking.positions(jqi)
    ideal = np.zeros((len(evaluated), cut))
    near = ideal_position < cut
    ideal[jqi[near], ideal_position[near]] = rel[near]
    relevant = np.bincount(jqi, weights=(rel >= 1), minlength=len(evaluated))
    values = ranking.rank_metrics(index[rq[rows]], position[keep], gain[rows], judged[rows], ideal, relevant, metrics)
    return queries.take(pa.array(evaluated)), values, relevant, missing


def score_runs(table: pa.Table, judgements: Qrels, parsed: list[ranking.Metric], k: int | None, *,
               per_query: bool = False) -> tuple[list[dict], list[pa.Table]]:
    """Summary rows (SUMMARY_COLUMNS) per model and metric, and the per-query tables if asked."""
    summary, rows = [], []
    models = table.column("model")
    for value in sorted(pc.unique(models).to_pylist(), key=sort_key):
        part = table if len(pc.unique(models)) == 1 else table.filter(
            pc.is_null(models) if value is None else pc.equal(models, value))
        qids, values, relevant, missing = evaluate_model(part, judgements, parsed, k)
        if len(qids) == 0:
            raise InputError(f"no query of the run{'' if value is None else f' (model {value!r})'} has judgements "
                             f"in qrels {judgements.source!r}; check that the qids match")
        for metric in parsed:
            per = values[metric.name]
            summary.append({"model": value, "metric": metric.name, "value": float(per.mean()), "queries": len(qids),
                            "without_relevant": int((relevant == 0).sum()), "missing": missing,
                            "unjudged": float(values[f"unjudged@{metric.cutoff}"].mean())})
            if per_query:
                rows.append(pa.table({"model": pa.array([value] * len(qids), pa.string()), "qid": qids,
                                      "metric": pa.array([metric.name] * len(qids)), "value": pa.array(per)}))
    return summary, rows
