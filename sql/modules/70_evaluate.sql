-- ---------------------------------------------------------------------------
-- Rank metrics of a run against relevance judgements, in plain SQL (the stock DuckDB CLI).
--   run:   qid, doc_id, score (optionally a model column)
--   qrels: qid, doc_id, relevance (a whole number >= 0; relevant = relevance >= 1)
-- trec_eval's definitions and order: each query's documents by score descending, then doc_id
-- descending as text (the run's own rank column is ignored, as trec_eval does; scores are compared
-- as 32-bit floats, as trec_eval stores them).  Per query q
-- with R relevant documents and gains g_i = relevance of the document at rank i (0 unjudged):
--   ndcg@k      sum_{i<=k} g_i / log2(i + 1)  /  the same sum over the judged gains sorted
--               descending (0 when that is 0)
--   map@k       sum over relevant documents at ranks i <= k of (relevant in the top i) / i, / R
--   recall@k    relevant in the top k / R           precision@k  relevant in the top k / k
--   mrr@k       1 / rank of the first relevant document in the top k (0 if none)
--   hit_rate@k  1 if a relevant document is in the top k
-- Queries of the run without any judgement are skipped; judged queries without a relevant
-- document score 0 and count (as in trec_eval).  ids are compared as text.
-- ---------------------------------------------------------------------------

-- A score as trec_eval compares it: a 32-bit float (its run entries keep scores as C floats), so
-- scores closer than float32's resolution tie and go by doc_id; +-inf beyond float32's range.
CREATE OR REPLACE TEMP MACRO emb__trec_score(s) AS
    CASE WHEN s > 3.4028234663852886e38 THEN 'inf'::FLOAT
         WHEN s < -3.4028234663852886e38 THEN '-inf'::FLOAT
         ELSE s::FLOAT END;

-- One row per (model, qid, metric) with the internal columns (__emb_b model value, __emb_o
-- metric order, __emb_none: the query has no relevant document); model is NULL or the model column.
-- Whether the qrels table has each named column (1 = missing: only the NULL placeholder matched);
-- the plain-SQL run metrics and emb_retrieval_eval check their qrels with it.
CREATE OR REPLACE TEMP MACRO emb__qrels_columns(qrels, qid_col, doc_id, relevance) AS TABLE
SELECT
    len(list_value(*COLUMNS(lambda c: c IN (qid_col, '__emb_null')))) AS __emb_qcols,
    len(list_value(*COLUMNS(lambda c: c IN (doc_id, '__emb_null')))) AS __emb_dcols,
    len(list_value(*COLUMNS(lambda c: c IN (relevance, '__emb_null')))) AS __emb_rcols
FROM (SELECT 1) LEFT JOIN (SELECT *, NULL AS __emb_null FROM query_table(qrels) LIMIT 1) ON true;

CREATE OR REPLACE TEMP MACRO emb__run_metric_rows(run, qrels, k, model, qid_col, doc_id, score,
                                             relevance) AS TABLE
WITH rmeta AS (
    SELECT
        len(list_value(*COLUMNS(lambda c: c IN (qid_col, '__emb_null')))) AS __emb_qcols,
        len(list_value(*COLUMNS(lambda c: c IN (doc_id, '__emb_null')))) AS __emb_dcols,
        len(list_value(*COLUMNS(lambda c: c IN (score, '__emb_null')))) AS __emb_scols,
        len(list_value(*COLUMNS(lambda c: c IN (model, '__emb_null')))) AS __emb_bcols
    FROM (SELECT 1) LEFT JOIN (SELECT *, NULL AS __emb_null FROM query_table(run) LIMIT 1) ON true
),
jmeta AS (SELECT * FROM emb__qrels_columns(qrels, qid_col, doc_id, relevance)),
r0 AS (
    SELECT
        COLUMNS(lambda c: c IN (model, '__emb_all')),
        coalesce(*COLUMNS(lambda c: c IN (model, '__emb_null'))) AS __emb_b,
        coalesce(*COLUMNS(lambda c: c IN (qid_col, '__emb_null')))::VARCHAR AS __emb_q,
        coalesce(*COLUMNS(lambda c: c IN (doc_id, '__emb_null')))::VARCHAR AS __emb_d,
        coalesce(*COLUMNS(lambda c: c IN (score, '__emb_null')))::DOUBLE AS __emb_s,
        row_number() OVER () AS __emb_row      -- counted from 1, as the Python readers name rows
    FROM (SELECT *, 1 AS __emb_all, NULL AS __emb_null FROM query_table(run))
),
r AS (
    SELECT r0.*,
        row_number() OVER (PARTITION BY __emb_b, __emb_q ORDER BY emb__trec_score(__emb_s) DESC, __emb_d DESC) AS __emb_pos,
        count(*) OVER (PARTITION BY __emb_b, __emb_q, __emb_d) AS __emb_dup
    FROM r0, rmeta m
    WHERE CASE
        WHEN k IS NULL OR k < 1 OR k <> floor(k) THEN error(format('embsql: [argument.k] k must be a whole number of 1 or more, not {}', k))
        WHEN m.__emb_qcols = 1 THEN error(format('embsql: [column.missing] qid column "{}" not found in run {}', qid_col, run))
        WHEN m.__emb_dcols = 1 THEN error(format('embsql: [column.missing] doc_id column "{}" not found in run {}', doc_id, run))
        WHEN m.__emb_scols = 1 THEN error(format('embsql: [column.missing] score column "{}" not found in run {}', score, run))
        WHEN model IS NOT NULL AND m.__emb_bcols = 1
            THEN error(format('embsql: [column.missing] model column "{}" not found in run {}', model, run))
        WHEN model IS NOT NULL AND __emb_b IS NULL
            THEN error(format('embsql: [label.null] run {}: model column "{}" is NULL at row {}', run, model, __emb_row))
        WHEN __emb_q IS NULL OR __emb_d IS NULL OR __emb_s IS NULL
            THEN error(format('embsql: [label.null] run {}: NULL qid, doc_id or score at row {}', run, __emb_row))
        WHEN isnan(__emb_s) OR isinf(__emb_s)
            THEN error(format('embsql: [value.nonfinite] run {}: score {} at row {} is not finite', run, __emb_s, __emb_row))
        ELSE true
    END
),
j AS (
    SELECT
        coalesce(*COLUMNS(lambda c: c IN (qid_col, '__emb_null')))::VARCHAR AS __emb_q,
        coalesce(*COLUMNS(lambda c: c IN (doc_id, '__emb_null')))::VARCHAR AS __emb_d,
        coalesce(*COLUMNS(lambda c: c IN (relevance, '__emb_null'))) AS __emb_r0,
        try_cast(coalesce(*COLUMNS(lambda c: c IN (relevance, '__emb_null'))) AS DOUBLE) AS __emb_r,
        row_number() OVER () AS __emb_row      -- counted from 1, as the Python readers name rows
    FROM (SELECT *, NULL AS __emb_null FROM query_table(qrels))
),
judged AS (
    SELECT j.__emb_q, j.__emb_d, j.__emb_r::BIGINT AS __emb_r,
        count(*) OVER (PARTITION BY j.__emb_q, j.__emb_d) AS __emb_dup
    FROM j, jmeta m
    WHERE CASE
        WHEN m.__emb_qcols = 1 THEN error(format('embsql: [column.missing] qid column "{}" not found in qrels {}', qid_col, qrels))
        WHEN m.__emb_dcols = 1 THEN error(format('embsql: [column.missing] doc_id column "{}" not found in qrels {}', doc_id, qrels))
        WHEN m.__emb_rcols = 1 THEN error(format('embsql: [column.missing] relevance column "{}" not found in qrels {}', relevance, qrels))
        WHEN j.__emb_q IS NULL OR j.__emb_d IS NULL OR j.__emb_r0 IS NULL
            THEN error(format('embsql: [label.null] qrels {}: NULL qid, doc_id or relevance at row {}', qrels, j.__emb_row))
        WHEN j.__emb_r IS NULL OR j.__emb_r < 0 OR j.__emb_r <> floor(j.__emb_r) OR isinf(j.__emb_r) THEN error(format(
            'embsql: [value.relevance] qrels {}: relevance {} at row {}; relevance must be a whole number of 0 or more',
            qrels, j.__emb_r0, j.__emb_row))
        ELSE true
    END
),
judged_once AS (
    SELECT __emb_q, __emb_d, __emb_r FROM judged
    WHERE CASE WHEN __emb_dup > 1 THEN error(format(
        'embsql: [label.duplicate] qrels {}: (qid {}, doc_id {}) is judged {} times; each pair must be judged once',
        qrels, __emb_q, __emb_d, __emb_dup)) ELSE true END
),
per_qid AS (
    -- R and the ideal DCG@k of each judged query
    SELECT __emb_q, count(*) FILTER (WHERE __emb_r >= 1) AS __emb_nrel,
        sum(CASE WHEN __emb_i <= k THEN __emb_r / log2(__emb_i + 1) ELSE 0 END) AS __emb_idcg
    FROM (SELECT *, row_number() OVER (PARTITION BY __emb_q ORDER BY __emb_r DESC) AS __emb_i FROM judged_once)
    GROUP BY __emb_q
),
top AS (
    SELECT r.* EXCLUDE (__emb_dup), coalesce(jo.__emb_r, 0) AS __emb_g
    FROM r LEFT JOIN judged_once jo ON r.__emb_q = jo.__emb_q AND r.__emb_d = jo.__emb_d
    WHERE CASE WHEN r.__emb_dup > 1 THEN error(format(
        'embsql: [label.duplicate] run {}: doc_id {} is ranked {} times for qid {}; a document appears at most once per query',
        run, r.__emb_d, r.__emb_dup, r.__emb_q)) ELSE r.__emb_pos <= k END
),
scored AS (
    SELECT *, sum((__emb_g >= 1)::INTEGER) OVER (PARTITION BY __emb_b, __emb_q ORDER BY __emb_pos) AS __emb_found
    FROM top
),
per_query AS (
    SELECT COLUMNS(lambda c: c IN (model, '__emb_all')), s.__emb_b, s.__emb_q AS qid,
        CASE WHEN any_value(p.__emb_idcg) > 0 THEN sum(__emb_g / log2(__emb_pos + 1)) / any_value(p.__emb_idcg)
             ELSE 0.0 END AS __emb_m_ndcg,
        CASE WHEN any_value(p.__emb_nrel) > 0
             THEN sum(CASE WHEN __emb_g >= 1 THEN __emb_found / __emb_pos ELSE 0 END) / any_value(p.__emb_nrel)
             ELSE 0.0 END AS __emb_m_map,
        CASE WHEN any_value(p.__emb_nrel) > 0 THEN count(*) FILTER (WHERE __emb_g >= 1) / any_value(p.__emb_nrel)
             ELSE 0.0 END AS __emb_m_recall,
        count(*) FILTER (WHERE __emb_g >= 1) / k AS __emb_m_precision,
        coalesce(max(1.0 / __emb_pos) FILTER (WHERE __emb_g >= 1), 0.0) AS __emb_m_mrr,
        CASE WHEN count(*) FILTER (WHERE __emb_g >= 1) > 0 THEN 1.0 ELSE 0.0 END AS __emb_m_hit_rate,
        any_value(p.__emb_nrel) = 0 AS __emb_none
    FROM scored s JOIN per_qid p ON s.__emb_q = p.__emb_q
    GROUP BY ALL
)
SELECT * EXCLUDE (__emb_m_ndcg, __emb_m_map, __emb_m_recall, __emb_m_precision, __emb_m_mrr, __emb_m_hit_rate),
    unnest([format('ndcg@{}', k), format('map@{}', k), format('recall@{}', k), format('precision@{}', k),
            format('mrr@{}', k), format('hit_rate@{}', k)]) AS metric,
    unnest([__emb_m_ndcg, __emb_m_map, __emb_m_recall, __emb_m_precision, __emb_m_mrr, __emb_m_hit_rate]) AS value,
    unnest(range(6)) AS __emb_o
FROM per_query;

-- One row per (model, metric): the mean over the queries evaluated, their number, and how many
-- of them have no relevant document.
CREATE OR REPLACE TEMP MACRO emb__evaluate(run, qrels, k, model, qid_col, doc_id, score, relevance) AS TABLE
SELECT COLUMNS(lambda c: c NOT IN ('__emb_all', '__emb_o')) FROM (
    SELECT COLUMNS(lambda c: c IN (model, '__emb_all')), __emb_b, __emb_o, metric, avg(value) AS value,
        count(*) AS queries, count(*) FILTER (WHERE __emb_none) AS without_relevant
    FROM emb__run_metric_rows(run, qrels, k, model, qid_col, doc_id, score, relevance)
    GROUP BY ALL
)
ORDER BY __emb_b, __emb_o;

-- @function emb_evaluate(run, qrels, k := 10, model := NULL, qid := 'qid', doc_id := 'doc_id', score := 'score', relevance := 'relevance')
-- Rank metrics of a run (any retrieval system's output: `qid, doc_id, score`, optionally a model
-- column) against relevance judgements (`qid, doc_id, relevance`), in plain SQL for the stock
-- DuckDB CLI.  One row per model (the model column first, under its own name) and metric, the
-- metrics `ndcg@k, map@k, recall@k, precision@k, mrr@k, hit_rate@k` in that order.
-- @param run the run: one row per (qid, doc_id) ranked, with a score (and a model column)
-- @param qrels the relevance judgements: one row per judged (qid, doc_id), relevance a whole number ≥ 0 (relevant means relevance ≥ 1)
-- @param k the depth: the metrics at cutoff k
-- @param model the run's model column: the metrics per model
-- @param qid the query id column of both tables
-- @param doc_id the document id column of both tables
-- @param score the run's score column
-- @param relevance the qrels' relevance column
-- @column <model> the model, under the model column's own name (only with `model`)
-- @column metric the metric and its cutoff, e.g. `ndcg@10`
-- @column value the mean over the queries evaluated
-- @column queries the queries evaluated: the queries of the run that have judgements
-- @column without_relevant judged queries without a relevant document (they score 0 and count, as in trec_eval)
-- @notes
-- The definitions and the order are trec_eval's: each query's documents by score descending, then
-- doc_id descending as text (a rank column in the run is ignored, as trec_eval ignores it), with
-- scores compared as 32-bit floats as trec_eval stores them (scores closer than about 6e-8 at 0.5
-- tie, and go by doc_id); nDCG uses the relevance as gain and log2(rank + 1) as discount over the
-- ideal DCG of the judged relevances; MAP and recall divide by R, the number of relevant judged
-- documents (retrieved or not); precision divides by k.  Queries of the run without any judgement
-- are skipped.  Unjudged documents are not relevant.  Refused with an `embsql:` error: k < 1, a
-- missing column, NULL ids or scores, a non-finite score, a relevance that is negative or not
-- whole, a (qid, doc_id) judged twice, a document ranked twice for one query.  The same numbers
-- as `embsql.evaluate` and pytrec_eval (tested to 1e-12).  In the example's q2, a and c tie at
-- 0.7 and c (later in text order) ranks first, as in trec_eval.
-- @example
-- SELECT metric, round(value, 4) AS value, queries FROM emb_evaluate('run', 'qrels', k := 2);
-- -- ndcg@2 0.5553, map@2 0.375, recall@2 0.75, precision@2 0.5, mrr@2 0.5, hit_rate@2 1.0 (2 queries)
CREATE OR REPLACE TEMP MACRO emb_evaluate(run, qrels, k := 10, model := NULL, qid := 'qid', doc_id := 'doc_id',
                                             score := 'score', relevance := 'relevance') AS TABLE
SELECT r.* EXCLUDE (__emb_b)
FROM emb__evaluate(
         emb__checked_source(run, 'emb_evaluate', model, emb__outputs_emb_evaluate()),
         qrels, k, model, qid, doc_id, score, relevance) r;

-- @function emb_evaluate_per_query(run, qrels, k := 10, model := NULL, qid := 'qid', doc_id := 'doc_id', score := 'score', relevance := 'relevance')
-- The per-query values behind `emb_evaluate`: one row per model (the model column first, under
-- its own name), metric and query, ordered by model, metric and qid.  Same definitions, skips and
-- errors.  Use it for a paired comparison of two runs query by query.
-- @param run the run: one row per (qid, doc_id) ranked, with a score (and a model column)
-- @param qrels the relevance judgements: one row per judged (qid, doc_id), relevance a whole number ≥ 0
-- @param k the depth: the metrics at cutoff k
-- @param model the run's model column: the values per model
-- @param qid the query id column of both tables
-- @param doc_id the document id column of both tables
-- @param score the run's score column
-- @param relevance the qrels' relevance column
-- @column <model> the model, under the model column's own name (only with `model`)
-- @column qid the query (as text)
-- @column metric the metric and its cutoff, e.g. `mrr@5`
-- @column value the query's value of the metric
-- @example
-- SELECT qid, value FROM emb_evaluate_per_query('run', 'qrels', k := 5) WHERE metric = 'mrr@5';
-- -- q1 0.5, q2 0.5 (in q2 the unjudged c ranks first, the relevant a second)
CREATE OR REPLACE TEMP MACRO emb_evaluate_per_query(run, qrels, k := 10, model := NULL, qid := 'qid',
                                                       doc_id := 'doc_id', score := 'score',
                                                       relevance := 'relevance') AS TABLE
SELECT r.* EXCLUDE (__emb_all, __emb_b, __emb_none, __emb_o)
FROM emb__run_metric_rows(
         emb__checked_source(run, 'emb_evaluate_per_query', model, emb__outputs_emb_evaluate_per_query()),
         qrels, k, model, qid, doc_id, score, relevance) r
ORDER BY r.__emb_b, r.__emb_o, r.qid;
