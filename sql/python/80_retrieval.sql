-- Retrieval margins by blocked matrix products.  Loaded by embsql.register(con)
-- after the UDF in udfs/retrieval.py.  Replaces the plain-SQL emb__margins of sql/embsql.sql
-- (a join of every query with every document) with one UDF call per model; emb_margins and
-- emb_retrieval_summary keep their signatures and columns and give the same numbers.  Columns and
-- labels are checked by the same SQL as the plain version; vectors are checked in the UDF.

-- With skip, the rows of either table with an unusable vector are left out of the lists (each
-- aggregate's FILTER) and their reasons listed (__emb_bads), for the counts of the plain version.
CREATE OR REPLACE TEMP MACRO emb__margins(queries, docs, scope, qid_col, "group", positive, vector,
                                     doc_id, doc_group, doc_vector, model, skip := false) AS TABLE
WITH q AS (
    SELECT COLUMNS(lambda c: c IN (model, '__emb_all')), __emb_b, any_value(__emb_gcols) AS __emb_gcols,
        list(__emb_row ORDER BY __emb_row) FILTER (__emb_bad IS NULL) AS __emb_rows,
        list(__emb_q ORDER BY __emb_row) FILTER (__emb_bad IS NULL) AS __emb_qs,
        list(__emb_g ORDER BY __emb_row) FILTER (__emb_bad IS NULL) AS __emb_gs,
        list(__emb_p ORDER BY __emb_row) FILTER (__emb_bad IS NULL) AS __emb_ps,
        list(__emb_v ORDER BY __emb_row) FILTER (__emb_bad IS NULL) AS __emb_vs,
        list(__emb_bad) FILTER (__emb_bad IS NOT NULL) AS __emb_bads
    FROM emb__margin_queries(queries, qid_col, "group", positive, vector, model, skip := skip)
    GROUP BY ALL
),
d AS (
    SELECT __emb_b, list(__emb_k ORDER BY __emb_row) FILTER (__emb_bad IS NULL) AS __emb_ks,
        list(__emb_g::VARCHAR ORDER BY __emb_row) FILTER (__emb_bad IS NULL) AS __emb_gs,
        list(__emb_v ORDER BY __emb_row) FILTER (__emb_bad IS NULL) AS __emb_vs,
        list(__emb_bad) FILTER (__emb_bad IS NOT NULL) AS __emb_bads
    FROM emb__margin_docs(docs, doc_id, doc_group, doc_vector, model, scope = 'group', skip := skip)
    GROUP BY __emb_b
),
r AS (
    SELECT q.* EXCLUDE (__emb_ps, __emb_vs, __emb_bads),
        emb__skip_counts(list_concat(q.__emb_bads, d.__emb_bads)) AS __emb_skipped,
        CASE WHEN q.__emb_b IS NULL AND d.__emb_b IS NOT NULL AND model IS NOT NULL THEN error(format(
                 'embsql: [model.missing] model {} is in docs {} but not in queries {}', d.__emb_b, docs, queries))
             ELSE emb__margin_kernel(q.__emb_qs::VARCHAR[], q.__emb_ps, q.__emb_vs, d.__emb_ks, d.__emb_gs, d.__emb_vs,
                                     scope, [queries, docs, vector, doc_vector], q.__emb_b::VARCHAR)
        END AS __emb_result
    FROM q FULL JOIN d ON q.__emb_b IS NOT DISTINCT FROM d.__emb_b
),
checked AS (SELECT * EXCLUDE (__emb_result), __emb_result.value AS __emb_r FROM r WHERE emb__udf_ok(__emb_result))
SELECT COLUMNS(lambda c: c IN (model, '__emb_all')), __emb_b, unnest(__emb_gs) AS __emb_g, __emb_gcols,
       unnest(__emb_rows) AS __emb_row, unnest(__emb_qs) AS qid, unnest(__emb_r, recursive := true),
       unnest(__emb_skipped)
FROM checked;

-- Dose: W~_q per paraphrase level, jackknife SEs, monotonicity and the within-group
-- permutation trend test (udfs/retrieval.py, embsql.core.dose).  Groups and strength levels reach the
-- UDF as dense ranks, so levels keep the order SQL gives their values (numbers as numbers).
-- With skip (bad_rows := 'skip'), the queries whose vector emb__unusable refuses are left out before
-- the ranks are taken, and counted per model (skipped_*).
CREATE OR REPLACE TEMP MACRO emb__retrieval_dose(queries, level_col, qid_col, "group", vector, model,
                                                permutations, seed, alpha, skip := false) AS TABLE
WITH judged AS (
    -- (__emb_bad: what emb__unusable said of the row's vector; without skip such a row is refused there)
    SELECT *
    FROM emb__retrieval_rows(queries, 'queries', qid_col, 'qid', "group", 'group', true, level_col, NULL,
                             vector, 'vector', model, skip := skip)
),
skipped AS (
    SELECT __emb_b AS __emb_sb, unnest(emb__skip_counts(list(__emb_bad) FILTER (__emb_bad IS NOT NULL)))
    FROM judged WHERE skip GROUP BY __emb_b
),
checked AS (
    SELECT * EXCLUDE (__emb_bad),
        dense_rank() OVER (PARTITION BY __emb_b ORDER BY __emb_g) - 1 AS __emb_gr,
        dense_rank() OVER (PARTITION BY __emb_b ORDER BY __emb_l) - 1 AS __emb_lr
    FROM judged WHERE NOT skip OR __emb_bad IS NULL     -- (see emb__margins: the check stays above this filter)
),
per_model AS (
    SELECT COLUMNS(lambda c: c IN (model, '__emb_all')), __emb_b,
        list(DISTINCT __emb_l ORDER BY __emb_l) AS __emb_levels,
        emb__dose_kernel(list(__emb_gr ORDER BY __emb_row), list(__emb_lr ORDER BY __emb_row),
                         list(__emb_q::VARCHAR ORDER BY __emb_row), list(__emb_v ORDER BY __emb_row), vector,
                         emb__whole_argument(permutations, 'permutations'), emb__whole_argument(seed, 'seed'),
                         alpha) AS __emb_result
    FROM checked GROUP BY ALL
),
per_model_checked AS (
    SELECT * EXCLUDE (__emb_result), __emb_result.value AS __emb_r FROM per_model WHERE emb__udf_ok(__emb_result)
)
SELECT COLUMNS(lambda c: c NOT IN ('__emb_all', '__emb_levels', '__emb_r', '__emb_u', 'level_code', '__emb_sb'))
FROM (
    SELECT *, unnest(__emb_levels) AS strength, unnest(__emb_r, recursive := true)
    FROM per_model_checked
) x LEFT JOIN skipped s ON x.__emb_b IS NOT DISTINCT FROM s.__emb_sb
ORDER BY x.__emb_b, x.strength;

-- @function emb_retrieval_dose(queries, strength := 'level', qid := 'qid', "group" := 'group', vector := 'vector', model := NULL, permutations := 999, seed := 42, alpha := 0.05, bad_rows := 'error')
-- Paraphrase strength as a dose: is the spread of a question's paraphrases larger at a higher
-- paraphrase strength?  One row per model (first, under its own name) and strength level, in level
-- order (as SQL orders the strength values).
-- @param queries the queries table: one row per query (and model), with its id, paraphrase group, strength and vector
-- @param strength the queries' column holding the paraphrase strength (an ordered dose level)
-- @param qid the queries' id column
-- @param "group" the queries' paraphrase group column (GROUP is a keyword: by name it is written `"group" := 'question'`)
-- @param vector the queries' vector column
-- @param model the model column: one set of rows per model
-- @param permutations the number of permutations of the trend test, a whole number from 1 to 1,000,000
-- @param seed the random seed, a whole number (0 or more)
-- @param alpha the significance level `dose_works` uses
-- @param bad_rows `'error'` (the default): a NULL, zero or non-finite vector is an error naming its row (from 1) and qid; `'skip'`: those queries are left out and counted in the `skipped_` columns
-- @column <model> the model, under the model column's own name (only with `model`)
-- @column strength the strength level (a value of the strength column)
-- @column queries queries at that level
-- @column groups paraphrase groups with two or more queries at that level
-- @column w_tilde_q the mean over paraphrase groups of W̃ = n/(n − 1) (1 − ‖mean‖²) of the group's queries at that level (NULL when no group has two)
-- @column se its cluster jackknife SE over paraphrase groups
-- @column step the change from the previous level that has a value
-- @column step_se its paired jackknife SE (the same group left out at both levels)
-- @column monotone the point estimates increase strictly
-- @column p_value one-sided permutation p of the trend, (b + 1)/(B + 1)
-- @column permutations B
-- @column dose_works `monotone` and p ≤ `alpha`
-- @column skipped_null rows left out for a NULL vector (or a NULL element), per model, on each of its rows (only with `bad_rows := 'skip'`)
-- @column skipped_zero rows left out for a zero vector (only with `bad_rows := 'skip'`)
-- @column skipped_nonfinite rows left out for a NaN or infinite coordinate (only with `bad_rows := 'skip'`)
-- @notes
-- The trend test: T = Σ_l (r_l − mean r) W̃_q(l), levels permuted within each paraphrase group (the
-- numbers of queries per group and level stay fixed); the same seed gives the same p whatever the
-- row order.  What it can say: whether the manipulation acts as a dose; not whether real inputs
-- fall in that range, and p is not an effect size.  `embsql.retrieval_dose(con, queries, docs, ...)` in
-- Python adds `w_tilde_g` (mean W̃ of the document topic groups) and the descriptive ratio
-- W̃_q / W̃_g.  In the example 3 groups of 4 queries (2 per level) allow only 6³ = 216 level
-- assignments, so p cannot be very small.
-- @example
-- SELECT strength, round(w_tilde_q, 4) AS w_tilde_q, round(se, 4) AS se, monotone, p_value
-- FROM emb_retrieval_dose('para', permutations := 99);
-- -- (1, 0.0132, 0.0033, true, 0.02), (2, 0.417, 0.0003, true, 0.02)
CREATE OR REPLACE TEMP MACRO emb_retrieval_dose(queries, strength := 'level', qid := 'qid', "group" := 'group',
                                                vector := 'vector', model := NULL, permutations := 999, seed := 42,
                                                alpha := 0.05, bad_rows := 'error') AS TABLE
SELECT COLUMNS(lambda c: NOT starts_with(c, '__emb_')
                         AND (emb__skip_asked(bad_rows) OR c NOT IN ('skipped_null', 'skipped_zero', 'skipped_nonfinite')))
FROM emb__retrieval_dose(
         emb__checked_source(queries, 'emb_retrieval_dose', model, emb__outputs_emb_retrieval_dose()),
         strength, qid, "group", vector, model, permutations, seed, alpha, skip := emb__skip_rows(bad_rows)) r;
