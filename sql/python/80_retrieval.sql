-- Retrieval margins by blocked matrix products.  Loaded by embsql.register(con)
-- after the UDF in udfs/retrieval.py.  Replaces the plain-SQL emb__margins of sql/embsql.sql
-- (a join of every query with every document) with one UDF call per model; emb_margins and
-- emb_retrieval_summary keep their signatures and columns and give the same numbers.  Columns and
-- labels are checked by the same SQL as the plain version; vectors are checked in the UDF.

CREATE OR REPLACE TEMP MACRO emb__margins(queries, docs, scope, qid_col, group_col, positive_col, vector_col,
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
    GROUP BY __emb_b
),
r AS (
    SELECT q.* EXCLUDE (__emb_ps, __emb_vs),
        CASE WHEN q.__emb_b IS NULL AND d.__emb_b IS NOT NULL AND model_col IS NOT NULL THEN error(format(
                 'embsql: [model.missing] model {} is in docs {} but not in queries {}', d.__emb_b, docs, queries))
             ELSE emb__margin_kernel(q.__emb_qs::VARCHAR[], q.__emb_ps, q.__emb_vs, d.__emb_ks, d.__emb_gs, d.__emb_vs,
                                     scope, [queries, docs, vector_col, doc_vector_col], q.__emb_b::VARCHAR)
        END AS __emb_r
    FROM q FULL JOIN d ON q.__emb_b IS NOT DISTINCT FROM d.__emb_b
)
SELECT COLUMNS(lambda c: c IN (model_col, '__emb_all')), __emb_b, unnest(__emb_gs) AS __emb_g, __emb_gcols,
       unnest(__emb_rows) AS __emb_row, unnest(__emb_qs) AS qid, unnest(__emb_r, recursive := true)
FROM r;

-- Dose: W~_q per paraphrase level, jackknife SEs, monotonicity and the within-group
-- permutation trend test (udfs/retrieval.py, embsql.core.dose).  Groups and levels reach the
-- UDF as dense ranks, so levels keep the order SQL gives their values (numbers as numbers).
CREATE OR REPLACE TEMP MACRO emb_retrieval_dose(queries, level_col := 'level', qid_col := 'qid', group_col := 'group',
                                           vector_col := 'vector', model_col := NULL, permutations := 999,
                                           seed := 42, alpha := 0.05) AS TABLE
WITH checked AS (
    SELECT *,
        dense_rank() OVER (PARTITION BY __emb_b ORDER BY __emb_g) - 1 AS __emb_gr,
        dense_rank() OVER (PARTITION BY __emb_b ORDER BY __emb_l) - 1 AS __emb_lr
    FROM emb__retrieval_rows(queries, 'queries', qid_col, 'qid', group_col, 'group', true, level_col, NULL,
                             vector_col, 'vector', model_col)
),
per_model AS (
    SELECT COLUMNS(lambda c: c IN (model_col, '__emb_all')), __emb_b,
        list(DISTINCT __emb_l ORDER BY __emb_l) AS __emb_levels,
        emb__dose_kernel(list(__emb_gr ORDER BY __emb_row), list(__emb_lr ORDER BY __emb_row),
                         list(__emb_q::VARCHAR ORDER BY __emb_row), list(__emb_v ORDER BY __emb_row), vector_col,
                         emb__whole_argument(permutations, 'permutations'), emb__whole_argument(seed, 'seed'),
                         alpha) AS __emb_r
    FROM checked GROUP BY ALL
)
SELECT COLUMNS(lambda c: c NOT IN ('__emb_all', '__emb_b', '__emb_levels', '__emb_r', '__emb_u', 'level_code'))
FROM (
    SELECT *, unnest(__emb_levels) AS level, unnest(__emb_r, recursive := true)
    FROM per_model
)
ORDER BY __emb_b, level;
