"""Retrieval evaluation with relevance judgements: runs from embeddings, trec_eval's metrics.

* ``retrieve`` ranks every document of a model for every query of that model by cosine (exact,
  in blocks; embsql.core.ranking.top_k) and returns the run ``model, qid, doc_id, rank, score``.
* ``evaluate`` scores a run (retrieve's, a run table or a TREC run file) against qrels: per
  query, and the mean per model.  The definitions and the treatment of queries without
  relevant documents are trec_eval's (see embsql.core.ranking).
* ``write_trec_run`` writes a run for trec_eval, pytrec_eval or ranx.

The tie rule is trec_eval's: score descending, then doc_id descending as text.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from embsql.core import ranking
from embsql.core.labels import sort_key
from embsql.errors import DesignError, InputError
from embsql.io.qrels import Qrels, qrels_from_positives, read_qrels
from embsql.io.runs import RUN_COLUMNS, read_run
from embsql.io.runs import write_trec_run as _write_lines
from embsql.io.sources import accepts_frames, local_source, resolve
from embsql.io.vectors import read_vectors
from embsql.results import ResultTable

SUMMARY_COLUMNS = ("model", "metric", "value", "queries", "without_relevant", "missing", "unjudged")
PER_QUERY_COLUMNS = ("model", "qid", "metric", "value")
UNKNOWN = ("error", "skip")


# ---- runs --------------------------------------------------------------------------------


def tie_keys(doc_ids: pa.Array) -> np.ndarray:
    """Position of each doc_id in descending text order: the smaller key wins a tie (trec_eval)."""
    order = pc.array_sort_indices(doc_ids, order="descending").to_numpy()
    keys = np.empty(len(doc_ids), dtype=np.int64)
    keys[order] = np.arange(len(doc_ids))
    return keys


def ranked(model, qids: pa.Array, unit: np.ndarray, doc_ids: pa.Array, docs: np.ndarray, inv_norms: np.ndarray,
           k: int) -> pa.Table:
    """One model's run as Arrow: model, qid, doc_id, rank, score."""
    idx, scores = ranking.top_k(unit, docs, inv_norms, tie_keys(doc_ids), k)
    n, depth = idx.shape
    return pa.table({
        "model": pa.array([None if model is None else str(model)] * (n * depth), pa.string()),
        "qid": qids.take(pa.array(np.repeat(np.arange(n), depth))),
        "doc_id": doc_ids.take(pa.array(idx.ravel())),
        "rank": pa.array(np.tile(np.arange(1, depth + 1), n)),
        "score": pa.array(scores.ravel())})


def retrieve_arrow(con, queries: str, docs: str, *, k: int, model: str | None, qid: str, doc_id: str,
                   vector: str, doc_vector: str | None) -> pa.Table:
    k = ranking.check_k(k)
    q = read_vectors(con, resolve(con, queries), "queries", id_col=qid, id_role="qid", vector=vector, model=model)
    d = read_vectors(con, resolve(con, docs), "docs", id_col=doc_id, id_role="doc_id",
                     vector=doc_vector or vector, model=model)
    for value in q:
        if value not in d:
            raise DesignError(f"model {value!r} is in queries {queries!r} but not in docs {docs!r}")
    for value in d:
        if value not in q:
            raise DesignError(f"model {value!r} is in docs {docs!r} but not in queries {queries!r}")
    parts = []
    for value in sorted(q, key=sort_key):
        qv, dv = q[value], d.pop(value)
        if qv.vectors.shape[1] != dv.vectors.shape[1]:
            of_model = "" if value is None else f" (model {value!r})"
            raise DesignError(f"query vectors have dimension {qv.vectors.shape[1]} but document vectors "
                              f"{dv.vectors.shape[1]}{of_model}; queries and documents must be embedded by the same model")
        parts.append(ranked(value, qv.ids, qv.unit(), dv.ids, dv.vectors, dv.inv_norms, k))
        del dv
    return pa.concat_tables(parts)


def _result(title: str, table: pa.Table) -> ResultTable:
    columns = [table.column(c).to_pylist() for c in table.column_names]
    return ResultTable(title, tuple(table.column_names), tuple(zip(*columns)))


@accepts_frames("queries", "docs")
def retrieve(con, queries, docs, *, k: int = 100, model: str | None = None, qid: str = "qid",
             doc_id: str = "doc_id", vector: str = "vector", doc_vector: str | None = None) -> ResultTable:
    """The exact cosine top-k run: ``model, qid, doc_id, rank, score`` (rank 1 = best).

    Each model's queries are ranked against that model's documents (``model`` names the model
    column of both tables).  Scores are cosines rounded to 2^-40; equal scores are ordered by
    doc_id descending as text, which is trec_eval's order, so trec_eval reproduces the ranks.

    >>> import embsql, pandas as pd
    >>> con = embsql.connect()
    >>> q = pd.DataFrame({"qid": ["q1"], "vector": [[1.0, 0.0]]})
    >>> d = pd.DataFrame({"doc_id": ["a", "b", "c"], "vector": [[1.0, 0.1], [0.0, 1.0], [1.0, 0.1]]})
    >>> [(r["doc_id"], r["rank"]) for r in embsql.retrieve(con, q, d, k=2).to_dicts()]
    [('c', 1), ('a', 2)]
    """
    return _result("retrieve", retrieve_arrow(con, queries, docs, k=k, model=model, qid=qid, doc_id=doc_id,
                                              vector=vector, doc_vector=doc_vector))


def run_table(con, run, *, model: str | None = None) -> pa.Table:
    """A run as Arrow (model, qid, doc_id, score): a ResultTable, an Arrow table or frame, a
    table name, a Parquet/CSV file or a TREC run file."""
    if isinstance(run, ResultTable):
        missing = [c for c in ("qid", "doc_id", "score") if c not in run.columns]
        if missing:
            raise InputError(f"run {run.title!r} has no column {missing[0]!r}; a run has qid, doc_id and score")
        run = pa.table({c: pa.array(run.column(c)) for c in run.columns if c in RUN_COLUMNS})
    if isinstance(run, pa.Table) and model is None and "model" in run.column_names:
        model = "model"
    with local_source(con, run) as name:
        return read_run(con, name, model=model)


def write_trec_run(run, path: str, *, tag: str | None = None) -> int:
    """Write a run (retrieve's ResultTable, or any table with qid, doc_id, rank, score and an
    optional model) in TREC run format ``qid Q0 doc_id rank score tag``.  The tag is ``tag``,
    else the model, else "embsql".  Returns the number of lines written."""
    if isinstance(run, ResultTable):
        table = {c: run.column(c) for c in run.columns}
    else:
        if hasattr(run, "to_arrow"):
            run = run.to_arrow()
        elif type(run).__module__.startswith("pandas"):
            run = pa.Table.from_pandas(run)
        if not isinstance(run, pa.Table):
            raise InputError(f"a run must be a ResultTable or a table, not a {type(run).__name__}")
        table = {c: run.column(c).to_pylist() for c in run.column_names}
    for column in ("qid", "doc_id", "rank", "score"):
        if column not in table:
            raise InputError(f"the run has no {column!r} column; a TREC run needs qid, doc_id, rank and score")
    if not table["qid"]:
        raise InputError("the run has no rows; an empty run cannot be written")
    models = table.get("model", [None] * len(table["qid"]))
    return _write_lines(zip(models, table["qid"], table["doc_id"], table["rank"], table["score"]), path, tag=tag)


# ---- evaluation --------------------------------------------------------------------------


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


def check_known(qrels: Qrels, ids: pa.Array, role: str, column: pa.Array, unknown: str, where: str) -> tuple[Qrels, int]:
    known = pc.is_in(column, value_set=ids).to_numpy(zero_copy_only=False)
    if known.all():
        return qrels, 0
    bad = int(np.flatnonzero(~known)[0])
    if unknown == "error":
        raise InputError(f"qrels {qrels.source!r} row {bad}: {role} {column[bad].as_py()!r} is not in {where} "
                         f"({int((~known).sum())} qrels rows are not); pass unknown='skip' to leave them out (counted)")
    return qrels.filter(known), int((~known).sum())


def _ids(con, source, column: str, role: str) -> pa.Array:
    from sqlglot import exp

    resolved = resolve(con, source)
    resolved.require(column, role)
    query = exp.select(exp.cast(exp.column(column, quoted=True), "VARCHAR").as_("i")).distinct().from_(resolved.table.copy())
    return con.sql(query.sql("duckdb")).to_arrow_table().column("i").combine_chunks()


@accepts_frames("qrels", "queries", "docs")
def evaluate(con, run=None, qrels=None, *, metrics=ranking.DEFAULT_METRICS, model: str | None = None,
             queries=None, docs=None, k: int | None = None, per_query: bool = False, qid: str = "qid",
             doc_id: str = "doc_id", vector: str = "vector", doc_vector: str | None = None,
             relevance: str = "relevance", positive: str = "positive", unknown: str = "error") -> ResultTable:
    """Score a run against relevance judgements with trec_eval's definitions.

    run: a ResultTable (retrieve's), a run table or file (qid, doc_id, score; optional model) or a
    TREC run file; or None with ``queries=`` and ``docs=`` to retrieve first (depth k, default
    the largest cutoff).  qrels: a table or file (qid, doc_id, relevance) or a TREC qrels file;
    None with ``queries=`` uses its ``positive`` column (one relevant document per query).
    k: the depth evaluated (a deeper run is cut).  unknown: a qrels row whose qid or doc_id is
    not in ``queries``/``docs`` is an error, or with "skip" left out and counted.

    Returns per model and metric ``model, metric, value, queries, without_relevant, missing,
    unjudged`` (value = the mean over the queries evaluated: those of the run with judgements,
    as in trec_eval; without_relevant of them have judgements but no relevant document and
    score 0; missing = judged queries the run does not rank; unjudged = mean share of the top
    cutoff without a judgement), or with ``per_query=True`` one row per ``model, qid, metric, value``.
    """
    parsed = ranking.parse_metrics(metrics)
    if k is not None:
        k = ranking.check_k(k)
    if unknown not in UNKNOWN:
        raise InputError(f"unknown must be 'error' or 'skip', not {unknown!r}")
    if run is None:
        if queries is None or docs is None:
            raise InputError("evaluate needs a run, or queries= and docs= to retrieve one")
        depth = k or max(m.cutoff for m in parsed)
        table = retrieve_arrow(con, queries, docs, k=depth, model=model, qid=qid, doc_id=doc_id, vector=vector,
                               doc_vector=doc_vector)
    else:
        table = run_table(con, run, model=model)
    if qrels is None:
        if queries is None:
            raise InputError("evaluate needs qrels, or queries= with a positive column")
        judgements = qrels_from_positives(con, queries, qid=qid, positive=positive)
    else:
        judgements = read_qrels(con, qrels, qid=qid, doc_id=doc_id, relevance=relevance)
    skipped = 0
    if queries is not None:
        judgements, n = check_known(judgements, _ids(con, queries, qid, "qid"), "qid", judgements.qid, unknown,
                                     f"queries {queries!r}")
        skipped += n
    if docs is not None:
        judgements, n = check_known(judgements, _ids(con, docs, doc_id, "doc_id"), "doc_id", judgements.doc_id,
                                     unknown, f"docs {docs!r}")
        skipped += n
    if len(judgements) == 0:
        raise InputError(f"qrels {judgements.source!r} has no judgements left to evaluate with")
    summary, rows = score_runs(table, judgements, parsed, k, per_query=per_query)
    if per_query:
        return _result("evaluate (per query)", pa.concat_tables(rows))
    title = "evaluate" + (f" ({skipped} qrels rows with unknown ids skipped)" if skipped else "")
    return ResultTable.from_dicts(title, SUMMARY_COLUMNS, summary)
