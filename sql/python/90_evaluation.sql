-- Retrieval evaluation with relevance judgements.  Loaded by embsql.register(con) after the UDF
-- in udfs/evaluation.py.  Per model: the exact cosine top-k run of the queries against the
-- documents (ties: doc_id descending as text, trec_eval's order), scored against the qrels
-- with trec_eval's definitions (embsql.core.ranking).  Columns and labels are checked by the
-- same SQL as the retrieval macros (emb__retrieval_rows); vectors, relevance and ids in the UDF.

CREATE OR REPLACE TEMP MACRO emb_retrieval_eval(queries, docs, qrels, k := 10, metrics := NULL, "by" := NULL,
                                           qid_col := 'qid', doc_id_col := 'doc_id', vector_col := 'vector',
                                           doc_vector_col := 'vector', relevance_col := 'relevance',
                                           unknown := 'error') AS TABLE
WITH q AS (
    SELECT COLUMNS(lambda c: c IN ("by", '__emb_all')), __emb_b,
        list(__emb_k ORDER BY __emb_row) AS __emb_ids, list(__emb_v ORDER BY __emb_row) AS __emb_vs
    FROM emb__retrieval_rows(queries, 'queries', qid_col, 'qid', NULL, 'group', false, NULL, NULL,
                             vector_col, 'vector', "by")
    GROUP BY ALL
),
d AS (
    SELECT __emb_b, list(__emb_k ORDER BY __emb_row) AS __emb_ids, list(__emb_v ORDER BY __emb_row) AS __emb_vs
    FROM emb__retrieval_rows(docs, 'docs', doc_id_col, 'doc_id', NULL, 'doc_group', false, NULL, NULL,
                             doc_vector_col, 'doc_vector', "by")
    GROUP BY __emb_b
),
jmeta AS (SELECT * FROM emb__qrels_columns(qrels, qid_col, doc_id_col, relevance_col)),
j AS (
    SELECT
        list(coalesce(*COLUMNS(lambda c: c IN (qid_col, '__emb_null')))::VARCHAR) AS __emb_jq,
        list(coalesce(*COLUMNS(lambda c: c IN (doc_id_col, '__emb_null')))::VARCHAR) AS __emb_jd,
        list(coalesce(*COLUMNS(lambda c: c IN (relevance_col, '__emb_null')))::VARCHAR) AS __emb_jr
    FROM (SELECT *, NULL AS __emb_null FROM query_table(qrels))
),
checked_j AS (
    SELECT j.* FROM j, jmeta
    WHERE CASE
        WHEN __emb_qcols = 1 THEN error(format('embsql: [column.missing] qid column "{}" not found in qrels {}', qid_col, qrels))
        WHEN __emb_dcols = 1 THEN error(format('embsql: [column.missing] doc_id column "{}" not found in qrels {}', doc_id_col, qrels))
        WHEN __emb_rcols = 1 THEN error(format('embsql: [column.missing] relevance column "{}" not found in qrels {}', relevance_col, qrels))
        WHEN __emb_jq IS NULL THEN emb__no_rows_error(qrels)
        ELSE true
    END
),
r AS (
    SELECT q.* EXCLUDE (__emb_ids, __emb_vs),
        CASE WHEN q.__emb_b IS NULL AND d.__emb_b IS NOT NULL AND "by" IS NOT NULL THEN error(format(
                 'embsql: [model.missing] model {} is in docs {} but not in queries {}', d.__emb_b, docs, queries))
             ELSE emb__retrieval_eval_kernel(q.__emb_ids, q.__emb_vs, d.__emb_ids, d.__emb_vs, j.__emb_jq, j.__emb_jd,
                      j.__emb_jr, k,
                      coalesce(metrics, ['ndcg@' || k, 'map@' || k, 'recall@' || k, 'precision@' || k, 'mrr@' || k,
                                         'hit_rate@' || k]),
                      [queries, docs, qrels, vector_col, doc_vector_col, relevance_col], unknown, q.__emb_b::VARCHAR)
        END AS __emb_r
    FROM q FULL JOIN d ON q.__emb_b IS NOT DISTINCT FROM d.__emb_b, checked_j j
)
SELECT COLUMNS(lambda c: c NOT IN ('__emb_all', '__emb_b', '__emb_r', '__emb_u'))
FROM (SELECT *, unnest(__emb_r, recursive := true), unnest(range(len(__emb_r))) AS __emb_u FROM r)
ORDER BY __emb_b, __emb_u;
