-- Paired comparison of retrieval models on a per-query evaluation table (model, qid, metric,
-- value): a sign-flip randomization test over paraphrase groups (or single queries) and a
-- cluster-robust t interval, for every pair of models.  Loaded by embsql.register(con) after
-- the UDF in udfs/compare_retrieval.py; the numerics are embsql.core.retrieval_comparison.
-- Columns are passed as text with the table's column names and types, so the UDF names a missing
-- column as the Python API does; a missing column reaches it as NULLs (the __emb_null stand-in).

-- "group" must be quoted in a call (GROUP is a keyword); group_col := is the same argument unquoted.
CREATE OR REPLACE TEMP MACRO emb_compare_retrieval(evaluation, metric := 'ndcg@10', "by" := 'model', "group" := NULL,
                                              qid := 'qid', permutations := 10000, seed := 42, level := 0.95,
                                              p_adjust := 'holm', group_col := NULL) AS TABLE
SELECT unnest(emb__compare_retrieval(
           evaluation,
           (SELECT list(column_name) FROM (DESCRIBE SELECT * FROM query_table(evaluation))),
           (SELECT list(column_type) FROM (DESCRIBE SELECT * FROM query_table(evaluation))),
           "by", qid, coalesce("group", group_col),
           coalesce((SELECT any_value(column_type) FROM (DESCRIBE SELECT * FROM query_table(evaluation))
                     WHERE column_name = 'value'), 'missing'),
           coalesce(list(__emb_b), []), coalesce(list(__emb_q), []), coalesce(list(__emb_m), []),
           coalesce(list(__emb_v), []), coalesce(list(__emb_g), []),
           metric, emb__whole_argument(permutations, 'permutations'), emb__whole_argument(seed, 'seed'), level,
           coalesce(p_adjust, 'none')),
       recursive := true)
FROM (
    SELECT coalesce(*COLUMNS(lambda c: c IN ("by", '__emb_null')))::VARCHAR AS __emb_b,
           coalesce(*COLUMNS(lambda c: c IN (qid, '__emb_null')))::VARCHAR AS __emb_q,
           coalesce(*COLUMNS(lambda c: c IN ('metric', '__emb_null')))::VARCHAR AS __emb_m,
           TRY_CAST(coalesce(*COLUMNS(lambda c: c IN ('value', '__emb_null'))) AS DOUBLE) AS __emb_v,
           coalesce(*COLUMNS(lambda c: c IN (coalesce("group", group_col), '__emb_null')))::VARCHAR AS __emb_g
    FROM (SELECT *, NULL AS __emb_null FROM query_table(evaluation))
);
