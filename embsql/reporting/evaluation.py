"""The report's retrieval evaluation (``--qrels`` with ``--queries/--docs``): metrics per model
with cluster bootstrap intervals, and the per-query distribution of nDCG@10.

The run is the exact cosine top-100 of each model (embsql.io.runs.retrieve_run), scored with
trec_eval's definitions (embsql.io.scoring); the intervals resample paraphrase groups when the
queries table has a group column, else single queries (embsql.core.query_means).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import duckdb
import numpy as np
from sqlglot import exp

from embsql.core import ranking
from embsql.core.query_means import cluster_codes, mean_interval
from embsql.core.retrieval_comparison import PAIR_COLUMNS, compare_metric, rank_metric
from embsql.io.qrels import check_known, read_qrels
from embsql.io.retrieval_tables import Docs, Qrels, Queries
from embsql.io.runs import retrieve_run, run_ids
from embsql.io.scoring import QueryValues, score_runs
from embsql.io.sources import resolve, shown_name
from embsql.io.table_stream import Skipped, skip_note
from embsql.reporting.rank_sets import Blocks
from embsql.reporting.report_result import Section
from embsql.result_table import ResultTable

REPORT_METRICS = ("ndcg@10", "map@100", "recall@10", "recall@100", "mrr@10", "precision@10", "hit_rate@10")
DEPTH = 100
METRIC_COLUMNS = ("model", "metric", "value", "se", "ci_low", "ci_high", "queries", "clusters", "without_relevant",
                  "unjudged")
DISTRIBUTION_COLUMNS = ("model", "metric", "queries", "mean", "p05", "p25", "median", "p75", "p95", "zero", "perfect")
DISTRIBUTION_METRIC = "ndcg@10"

METRICS_CAUTION = (
    "trec_eval's definitions on the exact cosine top-100 of each model (ties: doc_id descending, as trec_eval); "
    "relevant means relevance >= 1, nDCG uses the relevance as gain. value is the mean over the queries that have "
    "judgements; queries judged but without a relevant document (without_relevant) score 0 and count, as in "
    "trec_eval. se and ci_low/ci_high are a cluster bootstrap over {unit} (percentile interval at {level:.0%}): "
    "{why} unjudged is the mean share of each query's top cutoff without a judgement; a large share means the "
    "qrels miss documents this model finds, and every metric is then a lower bound.")
CLUSTERED = "paraphrases of one question are resampled together, because they are not independent queries."
PAIRED_CLUSTERED = "Paraphrases of one question are swapped together, because they are not independent queries."
UNCLUSTERED = ("the queries table has no group column, so queries are taken as independent; if some are "
               "paraphrases of one question, the interval is too narrow (give the group column).")
DISTRIBUTION_CAUTION = (
    "How nDCG@10 spreads over the queries: quantiles per model, zero = share of queries with no relevant document "
    "in the top 10, perfect = share with the ideal top 10. A mean can hide a model that fails a few queries "
    "completely.")


def _groups(con: duckdb.DuckDBPyConnection, queries: Queries) -> dict | None:
    """qid (as text) -> group label, or None when the queries table has no group column."""
    source = resolve(con, str(queries.source))
    if queries.group not in source.columns:
        return None
    query = exp.select(exp.cast(exp.column(queries.qid, quoted=True), "VARCHAR").as_("q"),
                       exp.column(queries.group, quoted=True).as_("g")).distinct().from_(source.table.copy())
    return dict(con.sql(query.sql("duckdb")).fetchall())


COMPARE_PERMUTATIONS = 10_000   # the sign-flip test is cheap (0.35 s at 10,000 queries): its p-value to 1e-4
COMPARE_CAUTION = (
    "Every pair of models on nDCG@10, on the same queries: difference = mean_a - mean_b. p_value: a paired "
    "randomization test that swaps the two models' scores for whole {unit} (a sign flip of each {one}'s summed "
    "difference), two-sided; p_adjusted: Holm across the pairs. ci_low/ci_high: a cluster-robust t interval over "
    "{unit}; calibrated says whether its coverage was measured to be nominal (30 or more clusters). "
    "{why}")


def _only(chunk: QueryValues, qids: set) -> QueryValues:
    """``chunk`` restricted to the queries ``qids``, in its own order."""
    keep = np.array([q in qids for q in chunk.qids], dtype=bool)
    return dataclasses.replace(chunk, qids=[q for q, k in zip(chunk.qids, keep) if k], values=chunk.values[keep])


def evaluation_sections(con: duckdb.DuckDBPyConnection, *, queries: Queries, docs: Docs, qrels: Qrels,
                        model: str | None, replicates: int, seed: int, level: float,
                        permutations: int = 999, notes: list[str] | None = None,
                        ranks: Blocks | None = None, skip: Skipped | None = None) -> list[Section]:
    """The evaluation sections of a report (the three tables as names on ``con``).  The paired
    comparison of the models runs whatever ``permutations`` is (its sign-flip test is cheap: at least
    COMPARE_PERMUTATIONS flips); where it cannot run (one model), ``notes`` is told why.  With two or
    more models, ``ranks`` gets their rank confidence sets by nDCG@10 (the queries clustered as above).

    With ``skip`` (bad_rows="skip"), the queries and documents with an unusable vector are left out
    (a skipped query has no run in its model, a skipped document is never ranked) and counted in a
    note; the qrels rows of ids no model kept are left out and counted; and the models are compared
    and ranked on the queries every one of them kept (the others are counted in a note)."""
    if notes is None:
        notes = []
    run = retrieve_run(con, queries, docs, k=DEPTH, model=model, skip=skip)
    if skip is not None and (said := skip_note(skip.table(model), model)) and said not in notes:
        notes.append(said)        # (the retrieval layers read the same tables: their note counts the same rows)
    judgements = read_qrels(con, qrels)
    # the run holds every qid and doc_id of the two tables (run_ids): no second read of them
    unknown = "error" if skip is None else "skip"
    left_out = 0
    for role, source in (("qid", f"queries {shown_name(queries.source)!r}"),
                         ("doc_id", f"docs {shown_name(docs.source)!r}")):
        judgements, dropped = check_known(judgements, run_ids(run, role), role,
                                          judgements.qid if role == "qid" else judgements.doc_id, unknown, source)
        left_out += dropped
    if left_out:
        notes.append(f"evaluation: {left_out} qrels row(s) left out: their query or document is not in the tables "
                     "once the rows with an unusable vector are skipped")
    parsed = ranking.parse_metrics(REPORT_METRICS)
    summary, per_query = score_runs(run, judgements, parsed, None, per_query=True)
    groups = _groups(con, queries)
    rows: list[dict[str, Any]] = []
    spread: list[dict[str, Any]] = []
    for row, chunk in zip(summary, per_query):      # score_runs gives both in one order
        values = chunk.values
        codes = cluster_codes([groups[q] for q in chunk.qids] if groups is not None else chunk.qids)
        interval = mean_interval(values, codes, replicates=replicates, seed=seed, level=level)
        rows.append({**row, "se": interval.se, "ci_low": interval.ci_low, "ci_high": interval.ci_high,
                     "clusters": interval.clusters})
        if row["metric"] == DISTRIBUTION_METRIC:
            p = np.quantile(values, [0.05, 0.25, 0.5, 0.75, 0.95])
            spread.append({"model": row["model"], "metric": row["metric"], "queries": len(values),
                           "mean": float(values.mean()), "p05": p[0], "p25": p[1], "median": p[2], "p75": p[3],
                           "p95": p[4], "zero": float((values == 0).mean()),
                           "perfect": float((values >= 1 - 1e-12).mean())})
    unit = "paraphrase groups" if groups is not None else "queries"
    caution = METRICS_CAUTION.format(unit=unit, level=level, why=CLUSTERED if groups is not None else UNCLUSTERED)
    sections = [Section("evaluation", "Retrieval evaluation with relevance judgements",
                        ResultTable.from_dicts("evaluation", METRIC_COLUMNS, rows), caution),
                Section("evaluation_queries", "Per-query distribution of nDCG@10",
                        ResultTable.from_dicts("evaluation_queries", DISTRIBUTION_COLUMNS, spread),
                        DISTRIBUTION_CAUTION)]
    compared = [chunk for chunk in per_query if chunk.metric == DISTRIBUTION_METRIC]
    if skip is not None and len(compared) >= 2:   # the queries every model kept
        common = set.intersection(*(set(chunk.qids) for chunk in compared))
        partial = set.union(*(set(chunk.qids) for chunk in compared)) - common
        if partial:
            notes.append(f"evaluation: the models are compared and ranked on nDCG@10 over the {len(common)} queries "
                         f"every model kept; {len(partial)} query(ies) whose vector some model skipped are left out "
                         "of the comparison")
            compared = [_only(chunk, common) for chunk in compared]
    if len(compared) < 2:
        notes.append("no paired comparison of models on nDCG@10: the run has one model"
                     + (" (give the model column to compare models)" if model is None else ""))
    if len(compared) >= 2:   # even with 0 permutations: the sign flips are cheap, and the comparison is the answer
        models = [chunk.model for chunk in compared for _ in chunk.qids]
        qids = [q for chunk in compared for q in chunk.qids]
        scores = [v for chunk in compared for v in chunk.values.tolist()]
        pairs = compare_metric(models, qids, [DISTRIBUTION_METRIC] * len(qids), scores,
                               None if groups is None else [groups[q] for q in qids], metric=DISTRIBUTION_METRIC,
                               permutations=max(permutations, COMPARE_PERMUTATIONS), seed=seed, level=level,
                               what="the report's evaluation")
        if ranks is not None:
            ranks.add(rank_metric(models, qids, [DISTRIBUTION_METRIC] * len(qids), scores,
                                  None if groups is None else [groups[q] for q in qids], metric=DISTRIBUTION_METRIC,
                                  replicates=replicates, seed=seed, level=level, what="the report's evaluation"))
        sections.append(Section("evaluation_compare", "Paired comparison of models on nDCG@10",
                                ResultTable.from_dicts("evaluation_compare", PAIR_COLUMNS, pairs),
                                COMPARE_CAUTION.format(unit=unit, one="group" if groups is not None else "query",
                                                       why=PAIRED_CLUSTERED if groups is not None else
                                                       UNCLUSTERED[0].upper() + UNCLUSTERED[1:])))
    return sections
