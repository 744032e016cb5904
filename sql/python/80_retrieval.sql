-- Retrieval margins by blocked matrix products (SPEC S20, S21).  Loaded by embsql.register(con)
-- after the UDF in udfs/retrieval.py.  Replaces the plain-SQL emb__margins of sql/embsql.sql
-- (a join of every query with every document) with one UDF call per model; emb_margins and
-- emb_retrieval_summary keep their signatures and columns and give the same numbers.  Columns and
-- labels are checked by the same SQL as the plain version; vectors are checked in the UDF.

CREATE OR REPLACE MACRO emb__margins(queries, docs, scope, qid_col, group_col, positive_col, vector_col,
                                     doc_id_col, doc_group_col, doc_vector_col, model_col) AS TABLE
WITH q AS (
    SELECT COLUMNS(lambda c: c IN (model_col, '__emb_all')), __emb_b, any_value(__emb_gcols) AS __emb_gcols,
        list(__emb_row ORDER BY __emb_row) AS __emb_rows, list(__emb_q ORDER BY __emb_row) AS __emb_qs,
        list(__emb_g ORDER BY __emb_row) AS __emb_gs, list(__emb_p ORDER BY __emb_row) AS __emb_ps,
        list(__emb_v ORDER BY __emb_row) AS __emb_vs
    FROM emb__margin_queries(queries, qid_col, group_col, positive_col, vector_col, model_col)
    GROUP BY ALL
),
d AS (
    SELECT __emb_b, list(__emb_k ORDER BY __emb_row) AS __emb_ks, list(__emb_g::VARCHAR ORDER BY __emb_row) AS __emb_gs,
        list(__emb_v ORDER BY __emb_row) AS __emb_vs
    FROM emb__margin_docs(docs, doc_id_col, doc_group_col, doc_vector_col, model_col, scope = 'group')
    GROUP BY ALL
),
r AS (
    SELECT q.* EXCLUDE (__emb_ps, __emb_vs),
        CASE WHEN q.__emb_b IS NULL AND d.__emb_b IS NOT NULL AND model_col IS NOT NULL THEN error(format(
                 'embsql: model {} is in docs {} but not in queries {}', d.__emb_b, docs, queries))
             ELSE emb__margin_kernel(q.__emb_qs::VARCHAR[], q.__emb_ps, q.__emb_vs, d.__emb_ks, d.__emb_gs, d.__emb_vs,
                                     scope, [queries, docs, vector_col, doc_vector_col], q.__emb_b::VARCHAR)
        END AS __emb_r
    FROM q FULL JOIN d ON q.__emb_b IS NOT DISTINCT FROM d.__emb_b
)
SELECT COLUMNS(lambda c: c IN (model_col, '__emb_all')), __emb_b, unnest(__emb_gs) AS __emb_g, __emb_gcols,
       unnest(__emb_rows) AS __emb_row, unnest(__emb_qs) AS qid, unnest(__emb_r, recursive := true)
FROM r;

-- Dose (SPEC S23): W~_q per paraphrase level, jackknife SEs, monotonicity and the within-group
-- permutation trend test (udfs/retrieval.py, embsql.paraphrase_dose).  Groups and levels reach the
-- UDF as dense ranks, so levels keep the order SQL gives their values (numbers as numbers).
CREATE OR REPLACE MACRO emb_retrieval_dose(queries, level_col := 'level', qid_col := 'qid', group_col := 'group',
                                           vector_col := 'vector', model_col := NULL, permutations := 999,
                                           seed := 42, alpha := 0.05) AS TABLE
WITH meta AS (
    SELECT
        len(list_value(*COLUMNS(lambda c: c IN (qid_col, '__emb_null')))) AS __emb_qcols,
        len(list_value(*COLUMNS(lambda c: c IN (group_col, '__emb_null')))) AS __emb_gcols,
        len(list_value(*COLUMNS(lambda c: c IN (level_col, '__emb_null')))) AS __emb_lcols,
        len(list_value(*COLUMNS(lambda c: c IN (vector_col, '__emb_null')))) AS __emb_vcols,
        len(list_value(*COLUMNS(lambda c: c IN (model_col, '__emb_null')))) AS __emb_mcols
    FROM (SELECT 1) LEFT JOIN (SELECT *, NULL AS __emb_null FROM query_table(queries) LIMIT 1) ON true
),
raw AS (
    SELECT
        COLUMNS(lambda c: c IN (model_col, '__emb_all')),
        coalesce(*COLUMNS(lambda c: c IN (model_col, '__emb_null'))) AS __emb_b,
        coalesce(*COLUMNS(lambda c: c IN (qid_col, '__emb_null'))) AS __emb_q,
        coalesce(*COLUMNS(lambda c: c IN (group_col, '__emb_null'))) AS __emb_g,
        coalesce(*COLUMNS(lambda c: c IN (level_col, '__emb_null'))) AS __emb_l,
        coalesce(*COLUMNS(lambda c: c IN (vector_col, '__emb_nullv')))::DOUBLE[] AS __emb_v,
        row_number() OVER () - 1 AS __emb_row
    FROM (SELECT *, 1 AS __emb_all, NULL AS __emb_null, NULL::DOUBLE[] AS __emb_nullv FROM query_table(queries))
),
checked AS (
    SELECT r.* EXCLUDE (__emb_row),
        CASE
            WHEN m.__emb_qcols = 1 THEN error(format('embsql: qid column "{}" not found in {}', qid_col, queries))
            WHEN m.__emb_gcols = 1 THEN error(format('embsql: group column "{}" not found in {}', group_col, queries))
            WHEN m.__emb_lcols = 1 THEN error(format('embsql: level column "{}" not found in {}', level_col, queries))
            WHEN m.__emb_vcols = 1 THEN error(format('embsql: vector column "{}" not found in {}', vector_col, queries))
            WHEN model_col IS NOT NULL AND m.__emb_mcols = 1
                THEN error(format('embsql: model column "{}" not found in {}', model_col, queries))
            WHEN model_col IS NOT NULL AND __emb_b IS NULL
                THEN error(format('embsql: queries {}: model column "{}" is NULL at row {}', queries, model_col, __emb_row))
            WHEN __emb_q IS NULL THEN error(format('embsql: queries {}: qid column "{}" is NULL at row {}', queries, qid_col, __emb_row))
            WHEN __emb_g IS NULL THEN error(format('embsql: queries {}: group column "{}" is NULL at row {} (qid ''{}'')',
                                                   queries, group_col, __emb_row, __emb_q))
            WHEN __emb_l IS NULL THEN error(format('embsql: queries {}: level column "{}" is NULL at row {} (qid ''{}'')',
                                                   queries, level_col, __emb_row, __emb_q))
            ELSE __emb_row
        END AS __emb_row,
        dense_rank() OVER (PARTITION BY __emb_b ORDER BY __emb_g) - 1 AS __emb_gr,
        dense_rank() OVER (PARTITION BY __emb_b ORDER BY __emb_l) - 1 AS __emb_lr
    FROM raw r, meta m
),
per_model AS (
    SELECT COLUMNS(lambda c: c IN (model_col, '__emb_all')), __emb_b,
        list(DISTINCT __emb_l ORDER BY __emb_l) AS __emb_levels,
        emb__dose_kernel(list(__emb_gr ORDER BY __emb_row), list(__emb_lr ORDER BY __emb_row),
                         list(__emb_q::VARCHAR ORDER BY __emb_row), list(__emb_v ORDER BY __emb_row), vector_col,
                         permutations, seed, alpha) AS __emb_r
    FROM checked GROUP BY ALL
)
SELECT COLUMNS(lambda c: c NOT IN ('__emb_all', '__emb_b', '__emb_levels', '__emb_r', '__emb_u', 'level_code'))
FROM (
    SELECT *, unnest(__emb_levels) AS level, unnest(__emb_r, recursive := true)
    FROM per_model
)
ORDER BY __emb_b, level;
