-- Retrieval evaluation with relevance judgements.  Loaded by embsql.register(con) after the UDF
-- in udfs/evaluation.py.  Per model: the exact cosine top-k run of the queries against the
-- documents (ties: doc_id descending as text, trec_eval's order), scored against the qrels
-- with trec_eval's definitions (embsql.core.ranking).  Columns and labels are checked by the
-- same SQL as the retrieval macros (emb__retrieval_rows); vectors, relevance and ids in the UDF.

-- With skip, the rows of either table with an unusable vector are left out of the lists (each
-- aggregate's FILTER) and counted per model and reason, the two tables together (skipped_*).
CREATE OR REPLACE TEMP MACRO emb__retrieval_eval(queries, docs, qrels, k, metrics, model, qid_col, doc_id,
                                                vector, doc_vector, relevance, unknown, skip := false) AS TABLE
WITH q AS (
    SELECT COLUMNS(lambda c: c IN (model, '__emb_all')), __emb_b,
        list(__emb_k ORDER BY __emb_row) FILTER (__emb_bad IS NULL) AS __emb_ids,
        list(__emb_v ORDER BY __emb_row) FILTER (__emb_bad IS NULL) AS __emb_vs,
        list(__emb_bad) FILTER (__emb_bad IS NOT NULL) AS __emb_bads
    FROM emb__retrieval_rows(queries, 'queries', qid_col, 'qid', NULL, 'group', false, NULL, NULL,
                             vector, 'vector', model, skip := skip)
    GROUP BY ALL
),
d AS (
    SELECT __emb_b, list(__emb_k ORDER BY __emb_row) FILTER (__emb_bad IS NULL) AS __emb_ids,
        list(__emb_v ORDER BY __emb_row) FILTER (__emb_bad IS NULL) AS __emb_vs,
        list(__emb_bad) FILTER (__emb_bad IS NOT NULL) AS __emb_bads
    FROM emb__retrieval_rows(docs, 'docs', doc_id, 'doc_id', NULL, 'doc_group', false, NULL, NULL,
                             doc_vector, 'doc_vector', model, skip := skip)
    GROUP BY __emb_b
),
jmeta AS (SELECT * FROM emb__qrels_columns(qrels, qid_col, doc_id, relevance)),
j AS (
    SELECT
        list(coalesce(*COLUMNS(lambda c: c IN (qid_col, '__emb_null')))::VARCHAR) AS __emb_jq,
        list(coalesce(*COLUMNS(lambda c: c IN (doc_id, '__emb_null')))::VARCHAR) AS __emb_jd,
        list(coalesce(*COLUMNS(lambda c: c IN (relevance, '__emb_null')))::VARCHAR) AS __emb_jr
    FROM (SELECT *, NULL AS __emb_null FROM query_table(qrels))
),
checked_j AS (
    SELECT j.* FROM j, jmeta
    WHERE CASE
        WHEN __emb_qcols = 1 THEN error(format('embsql: [column.missing] qid column "{}" not found in qrels {}', qid_col, qrels))
        WHEN __emb_dcols = 1 THEN error(format('embsql: [column.missing] doc_id column "{}" not found in qrels {}', doc_id, qrels))
        WHEN __emb_rcols = 1 THEN error(format('embsql: [column.missing] relevance column "{}" not found in qrels {}', relevance, qrels))
        WHEN __emb_jq IS NULL THEN emb__no_rows_error(qrels)
        ELSE true
    END
),
r AS (
    SELECT q.* EXCLUDE (__emb_ids, __emb_vs, __emb_bads),
        emb__skip_counts(list_concat(q.__emb_bads, d.__emb_bads)) AS __emb_skipped,
        CASE WHEN q.__emb_b IS NULL AND d.__emb_b IS NOT NULL AND model IS NOT NULL THEN error(format(
                 'embsql: [model.missing] model {} is in docs {} but not in queries {}', d.__emb_b, docs, queries))
             ELSE emb__retrieval_eval_kernel(q.__emb_ids, q.__emb_vs, d.__emb_ids, d.__emb_vs, j.__emb_jq, j.__emb_jd,
                      j.__emb_jr, k,
                      coalesce(metrics, ['ndcg@' || k, 'map@' || k, 'recall@' || k, 'precision@' || k, 'mrr@' || k,
                                         'hit_rate@' || k]),
                      [queries, docs, qrels, vector, doc_vector, relevance], unknown, q.__emb_b::VARCHAR)
        END AS __emb_result
    FROM q FULL JOIN d ON q.__emb_b IS NOT DISTINCT FROM d.__emb_b, checked_j j
),
checked AS (SELECT * EXCLUDE (__emb_result), __emb_result.value AS __emb_r FROM r WHERE emb__udf_ok(__emb_result))
SELECT COLUMNS(lambda c: c NOT IN ('__emb_all', '__emb_r', '__emb_u', '__emb_skipped'))
FROM (SELECT *, unnest(__emb_r, recursive := true), unnest(range(len(__emb_r))) AS __emb_u, unnest(__emb_skipped)
      FROM checked)
ORDER BY __emb_b, __emb_u;

-- @function emb_retrieval_eval(queries, docs, qrels, k := 10, metrics := NULL, model := NULL, qid := 'qid', doc_id := 'doc_id', vector := 'vector', doc_vector := 'vector', relevance := 'relevance', unknown := 'error', bad_rows := 'error')
-- Retrieval evaluation from embeddings: per model, every query is ranked against every document of
-- that model by exact cosine similarity, to the depth k (or the largest cutoff in `metrics`, if
-- larger), and the run is scored against the qrels with the definitions of `emb_evaluate`.  One
-- row per model (first, under its own name) and metric, in the order asked.
-- @param queries the queries table: one row per query (and model), with its id and vector
-- @param docs the documents table: one row per document (and model), with its id and vector
-- @param qrels the relevance judgements: `qid, doc_id, relevance` (a whole number ≥ 0)
-- @param k the depth of the run, and the cutoff of the default metrics
-- @param metrics the metrics, a list such as `['ndcg@10', 'map@100', 'recall@10', 'mrr@10', 'precision@10', 'hit_rate@10']` (the kinds `ndcg, map, recall, precision, mrr, hit_rate`, each with a cutoff); NULL: the six kinds at k
-- @param model the model column of the queries and documents: each model's queries are ranked against that model's documents
-- @param qid the query id column of the queries and the qrels
-- @param doc_id the document id column of the documents and the qrels
-- @param vector the queries' vector column
-- @param doc_vector the documents' vector column
-- @param relevance the qrels' relevance column
-- @param unknown what to do with a qrels row whose qid or doc_id is not among the queries or documents: `'error'` or `'skip'`
-- @param bad_rows `'error'` (the default): a NULL, zero or non-finite vector is an error naming its table, row (from 1) and id; `'skip'`: those rows of either table are left out and counted in the `skipped_` columns (a query left out is then not among the queries: its qrels rows need `unknown := 'skip'`)
-- @column <model> the model, under the model column's own name (only with `model`)
-- @column metric the metric and its cutoff
-- @column value the mean over the queries evaluated
-- @column queries the queries evaluated
-- @column without_relevant judged queries without a relevant document
-- @column missing judged queries the model does not rank
-- @column unjudged the mean share of each query's top cutoff that has no judgement, a warning sign for incomplete qrels
-- @column skipped_null rows of the queries and documents left out for a NULL vector (or a NULL element), per model, on each of its rows (only with `bad_rows := 'skip'`)
-- @column skipped_zero rows left out for a zero vector (only with `bad_rows := 'skip'`)
-- @column skipped_nonfinite rows left out for a NaN or infinite coordinate (only with `bad_rows := 'skip'`)
-- @notes
-- Ranking is in blocks: float32 products pick candidates, float64 decides; scores are cosines
-- rounded to 2^-40, ties ordered by doc_id descending as text, which is trec_eval's order.
-- `embsql.evaluate` gives the same numbers in Python (`per_query=True` the per-query values), and
-- `embsql.retrieve` the run itself.
-- @example
-- SELECT metric, round(value, 4) AS value
-- FROM emb_retrieval_eval('eval_queries', 'eval_docs', 'eval_qrels', k := 2, metrics := ['ndcg@2', 'recall@1']);
-- -- ndcg@2 0.9299, recall@1 0.75
CREATE OR REPLACE TEMP MACRO emb_retrieval_eval(queries, docs, qrels, k := 10, metrics := NULL, model := NULL,
                                                qid := 'qid', doc_id := 'doc_id', vector := 'vector',
                                                doc_vector := 'vector', relevance := 'relevance', unknown := 'error',
                                                bad_rows := 'error') AS TABLE
SELECT COLUMNS(lambda c: c <> '__emb_b'
                         AND (emb__skip_asked(bad_rows) OR c NOT IN ('skipped_null', 'skipped_zero', 'skipped_nonfinite')))
FROM emb__retrieval_eval(
         emb__checked_source(queries, 'emb_retrieval_eval', model, emb__outputs_emb_retrieval_eval()),
         docs, qrels, k, metrics, model, qid, doc_id, vector, doc_vector, relevance, unknown,
         skip := emb__skip_rows(bad_rows)) r;
