"""Score a run against relevance judgements: per query and per model, trec_eval's definitions.

The run (Arrow: model, qid, doc_id, score) and the qrels are encoded as integers with Arrow's
hash kernels; each query's documents are ordered by score descending, then doc_id descending as
text (trec_eval's order, whatever the run's rank column says), and the metrics are the numpy
kernels of embsql.core.ranking.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from embsql.core import ranking
from embsql.core.labels import sort_key
from embsql.errors import InputError
from embsql.io.qrels import Judgements

SUMMARY_COLUMNS = ("model", "metric", "value", "queries", "without_relevant", "missing", "unjudged")
PER_QUERY_COLUMNS = ("model", "qid", "metric", "value")


def _encode(run_values: pa.Array, judged_values: pa.Array) -> tuple[np.ndarray, np.ndarray, pa.Array]:
    """Codes of the run's and the qrels' ids over one dictionary, and the dictionary.  A run that
    is dictionary-encoded already (retrieve's) keeps its codes: only the qrels are looked up."""
    if pa.types.is_dictionary(run_values.type):
        dictionary = run_values.dictionary
        run_codes = run_values.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    else:
        encoded = pc.dictionary_encode(run_values)
        dictionary = encoded.dictionary
        run_codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    # the qrels are the smaller side: hash their distinct ids and probe with the dictionary
    judged = pc.dictionary_encode(judged_values)
    where = pc.index_in(dictionary, value_set=judged.dictionary).to_numpy(zero_copy_only=False)
    present = ~np.isnan(where) if where.dtype.kind == "f" else where >= 0
    code_of = np.full(len(judged.dictionary), -1, dtype=np.int64)
    code_of[where[present].astype(np.int64)] = np.flatnonzero(present)
    unknown = code_of < 0
    if unknown.any():       # judged ids the run never ranks: codes after the dictionary's
        code_of[unknown] = len(dictionary) + np.arange(int(unknown.sum()))
        dictionary = pa.concat_arrays([dictionary.cast(pa.string()),
                                       judged.dictionary.filter(pa.array(unknown)).cast(pa.string())])
    judged_codes = code_of[judged.indices.to_numpy(zero_copy_only=False)]
    return run_codes, judged_codes, dictionary


def _trec_order(rq: np.ndarray, score: np.ndarray, rd: np.ndarray, documents: pa.Array) -> np.ndarray:
    """Row order by query, score descending, then doc_id descending as text (trec_eval's order;
    ``score`` as trec_eval compares it, embsql.core.ranking.trec_scores).
    A run that is already in that order (retrieve's, most run files) is not sorted again, and
    only the rows whose scores tie are ordered by their text."""
    grouped = (rq[1:] > rq[:-1]) | ((rq[1:] == rq[:-1]) & (score[1:] <= score[:-1]))
    order = np.arange(len(rq)) if grouped.all() else np.lexsort((-score, rq))
    q, s = rq[order], score[order]
    tied = (q[1:] == q[:-1]) & (s[1:] == s[:-1])
    if tied.any():
        in_block = np.zeros(len(q), dtype=bool)
        in_block[1:] |= tied
        in_block[:-1] |= tied
        rows = np.flatnonzero(in_block)
        block = np.cumsum(np.r_[True, ~tied])[rows]           # one number per block of equal scores
        text = np.asarray(documents.take(pa.array(rd[order[rows]])).to_pylist(), dtype=object)
        _, rank = np.unique(text.astype(str), return_inverse=True)   # code point order = UTF-8 byte order
        order[rows] = order[rows][np.lexsort((-rank.ravel(), block))]
    return order


def _judgements(rq: np.ndarray, rd: np.ndarray, jq: np.ndarray, jd: np.ndarray, queries: pa.Array,
                documents: pa.Array) -> np.ndarray:
    """The qrels row of each run row (-1: not judged), by one sort of the run's (query, doc)
    keys, which also refuses a document ranked twice for one query."""
    width = np.int64(len(documents))
    keys = rq * width + rd
    # stable (timsort) is several times faster here: the rows come grouped by query
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    repeated = np.flatnonzero(ordered[1:] == ordered[:-1])
    if len(repeated):
        key = int(ordered[repeated[0]])
        raise InputError(f"the run ranks doc_id {documents[key % width].as_py()!r} more than once for qid "
                         f"{queries[key // width].as_py()!r} ({len(repeated)} repeats); a document appears at "
                         "most once per query")
    judged_keys = jq * width + jd
    where = np.minimum(np.searchsorted(ordered, judged_keys), len(ordered) - 1)
    found = ordered[where] == judged_keys            # qrels pairs are unique: one run row at most
    at = np.full(len(keys), -1, dtype=np.int64)
    at[order[where[found]]] = np.flatnonzero(found)
    return at


def evaluate_model(run: pa.Table, qrels: Judgements, metrics: list[ranking.Metric],
                   depth: int | None) -> tuple[pa.Array, dict[str, np.ndarray], np.ndarray, int]:
    """Per-query values of one model's run: (qids evaluated, {metric: values}, R per query, missing)."""
    rq, jq, queries = _encode(run.column("qid").combine_chunks(), qrels.qid)
    rd, jd, documents = _encode(run.column("doc_id").combine_chunks(), qrels.doc_id)
    order = _trec_order(rq, ranking.trec_scores(run.column("score").to_numpy()), rd, documents)
    # the join on the rows in that order: grouped by query, which its stable sort is fast on
    at = np.empty(len(rq), dtype=np.int64)
    at[order] = _judgements(rq[order], rd[order], jq, jd, queries, documents)
    judged = at >= 0
    gain = np.zeros(len(at), dtype=np.int64)
    gain[judged] = qrels.relevance[at[judged]]
    # trec_eval evaluates the queries of the run that have judgements; the others are skipped
    has_judgement = np.zeros(len(queries), dtype=bool)
    has_judgement[jq] = True
    in_run = np.zeros(len(queries), dtype=bool)
    in_run[rq] = True
    evaluated = np.flatnonzero(has_judgement & in_run)
    missing = int((has_judgement & ~in_run).sum())
    index = np.full(len(queries), -1, dtype=np.int64)
    index[evaluated] = np.arange(len(evaluated))
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


@dataclass(frozen=True)
class QueryValues:
    """One model's per-query values of one metric: the qids evaluated (as text) and their values."""

    model: object
    metric: str
    qids: list
    values: np.ndarray

    def rows(self) -> Iterator[tuple[object, object, str, float]]:
        """(model, qid, metric, value) tuples, PER_QUERY_COLUMNS."""
        n = len(self.qids)
        return zip(itertools.repeat(self.model, n), self.qids, itertools.repeat(self.metric, n), self.values.tolist())


def score_runs(table: pa.Table, judgements: Judgements, parsed: list[ranking.Metric], k: int | None, *,
               per_query: bool = False) -> tuple[list[dict], list[QueryValues]]:
    """Summary rows (SUMMARY_COLUMNS) per model and metric, and the per-query values if asked
    (model by model in display order, each model's metrics in the order asked)."""
    summary, chunks = [], []
    models = table.column("model")
    distinct = sorted(pc.unique(models).to_pylist(), key=sort_key)
    for value in distinct:
        part = table if len(distinct) == 1 else table.filter(
            pc.is_null(models) if value is None else pc.equal(models, value))
        qids, values, relevant, missing = evaluate_model(part, judgements, parsed, k)
        if len(qids) == 0:
            raise InputError(f"no query of the run{'' if value is None else f' (model {value!r})'} has judgements "
                             f"in qrels {judgements.source!r}; check that the qids match")
        qid_text = qids.to_pylist() if per_query else []
        for metric in parsed:
            per = values[metric.name]
            summary.append({"model": value, "metric": metric.name, "value": float(per.mean()), "queries": len(qids),
                            "without_relevant": int((relevant == 0).sum()), "missing": missing,
                            "unjudged": float(values[f"unjudged@{metric.cutoff}"].mean())})
            if per_query:
                chunks.append(QueryValues(value, metric.name, qid_text, per))
    return summary, chunks
