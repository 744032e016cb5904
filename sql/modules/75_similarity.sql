-- ---------------------------------------------------------------------------
-- Similarity (STS) evaluation in plain SQL: the cosine of each judged pair's two vectors against
-- the gold score, per model.  The same numbers as embsql.similarity_eval (embsql/core/similarity.py
-- has the mathematics): each pair's influence value psi on the correlation, summed per item (S_i,
-- over the m_i pairs that contain item i) and per dyad (D_d, the pairs of the same two items), gives
--   V = sum_i (S_i / (n - m_i))^2 - sum_d (D_d / (n - m_d))^2,  never below sum psi^2 / n^2,
-- and the interval is t(df) on Fisher's z, df = (sum m_i^2)^2 / sum m_i^4 - 1.  The t quantile is the
-- Cornish-Fisher series in the normal quantile (A&S 26.7.5, four terms): within 1e-5 of the exact one
-- from df = 10, 3e-4 at df = 5.
-- ---------------------------------------------------------------------------

-- The judged pairs with their cosine per model, every row checked: a NULL or non-finite score, a
-- pair of one item, an item without a vector in a model (unless skipped), a NULL or zero vector,
-- an item twice in one model, a NULL, zero or non-finite vector (named by item, model and row;
-- with skip, its row is left out, which leaves its item without a vector in that model).
-- __emb_known is false for the pairs missing := 'skip' leaves out.
CREATE OR REPLACE TEMP MACRO emb__similarity_rows(pairs, embeddings, model, a, b, score, item,
                                                  vector, missing, skip := false) AS TABLE
WITH pmeta AS (
    SELECT len(list_value(*COLUMNS(lambda c: c IN (a, '__emb_null')))) AS __emb_acols,
           len(list_value(*COLUMNS(lambda c: c IN (b, '__emb_null')))) AS __emb_bcols,
           len(list_value(*COLUMNS(lambda c: c IN (score, '__emb_null')))) AS __emb_scols
    FROM (SELECT 1) LEFT JOIN (SELECT *, NULL AS __emb_null FROM query_table(pairs) LIMIT 1) ON true
),
emeta AS (
    SELECT len(list_value(*COLUMNS(lambda c: c IN (item, '__emb_null')))) AS __emb_icols,
           len(list_value(*COLUMNS(lambda c: c IN (vector, '__emb_null')))) AS __emb_vcols,
           len(list_value(*COLUMNS(lambda c: c IN (model, '__emb_null')))) AS __emb_mcols,
           typeof(coalesce(*COLUMNS(lambda c: c IN (vector, '__emb_null')))) AS __emb_vtype
    FROM (SELECT 1) LEFT JOIN (SELECT *, NULL AS __emb_null FROM query_table(embeddings) LIMIT 1) ON true
),
p AS (
    SELECT row_number() OVER () AS __emb_row,      -- counted from 1, as the Python readers name rows
           coalesce(*COLUMNS(lambda c: c IN (a, '__emb_null')))::VARCHAR AS __emb_pa,
           coalesce(*COLUMNS(lambda c: c IN (b, '__emb_null')))::VARCHAR AS __emb_pb,
           TRY_CAST(coalesce(*COLUMNS(lambda c: c IN (score, '__emb_null'))) AS DOUBLE) AS __emb_s
    FROM (SELECT *, NULL AS __emb_null FROM query_table(pairs))
),
e_read AS (
    -- (a column that holds no vectors skips nothing: its type is refused below)
    SELECT *, CASE WHEN emb__is_vector_type((SELECT __emb_vtype FROM emeta))
                   THEN emb__unusable(__emb_v, emb__norm2(__emb_v), emb__norm_scale(__emb_v, emb__norm2(__emb_v))) END
              AS __emb_bad
    FROM (
    SELECT row_number() OVER () AS __emb_erow,     -- counted from 1
           -- '' without a model column (a NULL key would match nothing in the joins below)
           coalesce(coalesce(*COLUMNS(lambda c: c IN (model, '__emb_null')))::VARCHAR, '') AS __emb_m,
           coalesce(*COLUMNS(lambda c: c IN (model, '__emb_null')))::VARCHAR AS __emb_m0,
           coalesce(*COLUMNS(lambda c: c IN (item, '__emb_null')))::VARCHAR AS __emb_i,
           -- (through the typed emb__vector: a text column binds, and is refused by its type below)
           emb__vector(struct_extract_at(row(*COLUMNS(lambda c: c IN (vector, '__emb_null'))), 1)) AS __emb_v
    FROM (SELECT *, 1 AS __emb_all, NULL AS __emb_null FROM query_table(embeddings)))
),
-- (NOT skip first, as in emb__margins: the refusal below stays above this filter)
e AS (FROM e_read WHERE NOT skip OR __emb_bad IS NULL),
-- the first unusable vector, refused without skip
bad AS (SELECT __emb_bad, __emb_i, __emb_m, __emb_erow FROM e_read
        WHERE NOT skip AND __emb_bad IS NOT NULL ORDER BY __emb_erow LIMIT 1),
twice AS (SELECT any_value(__emb_i) AS __emb_i, any_value(__emb_m) AS __emb_m
          FROM (SELECT __emb_m, __emb_i FROM e GROUP BY ALL HAVING count(*) > 1)),
null_models AS (SELECT count(*) FILTER (__emb_m0 IS NULL) AS __emb_k FROM e),
-- (the model's key only: the model column, named as the user named it (n, r, df ...), joins back by
-- __emb_m at the end, so it never meets the columns computed in between)
models AS (SELECT DISTINCT __emb_m FROM e),
j AS (
    SELECT m.__emb_m, p.*, ea.__emb_i IS NOT NULL AND eb.__emb_i IS NOT NULL AS __emb_known,
           ea.__emb_i IS NULL AS __emb_no_a, ea.__emb_v AS __emb_va, eb.__emb_v AS __emb_vb
    FROM models m CROSS JOIN p
    LEFT JOIN e ea ON ea.__emb_m IS NOT DISTINCT FROM m.__emb_m AND ea.__emb_i = p.__emb_pa
    LEFT JOIN e eb ON eb.__emb_m IS NOT DISTINCT FROM m.__emb_m AND eb.__emb_i = p.__emb_pb
)
SELECT * EXCLUDE (__emb_va, __emb_vb, __emb_no_a),
       CASE WHEN __emb_known THEN list_cosine_similarity(__emb_va, __emb_vb) END AS __emb_c
FROM j, pmeta, emeta
WHERE CASE
    WHEN __emb_acols = 1 THEN emb__fail_column_missing('a', format('''{}''', a), format('''{}''', pairs), '')
    WHEN __emb_bcols = 1 THEN emb__fail_column_missing('b', format('''{}''', b), format('''{}''', pairs), '')
    WHEN __emb_scols = 1 THEN emb__fail_column_missing('score', format('''{}''', score), format('''{}''', pairs), '')
    WHEN __emb_icols = 1 THEN emb__fail_column_missing('item', format('''{}''', item), format('''{}''', embeddings), '')
    WHEN __emb_vcols = 1 THEN emb__fail_column_missing('vector', format('''{}''', vector), format('''{}''', embeddings), '')
    WHEN NOT emb__is_vector_type(__emb_vtype)
        THEN emb__fail_vector_type('vector', vector, format('''{}''', embeddings), __emb_vtype)
    WHEN __emb_mcols = 1 AND NOT emb__model_case(embeddings, model) THEN false   -- (another case: refused)
    WHEN model IS NOT NULL AND model <> 'model' AND __emb_mcols = 1
        THEN emb__fail_column_missing('model', format('''{}''', model), format('''{}''', embeddings), '')
    WHEN missing IS NULL OR missing NOT IN ('error', 'skip')
        THEN emb__fail_argument_missing('missing', '''error'' or ''skip''', format('''{}''', missing))
    WHEN __emb_mcols = 2 AND (SELECT __emb_k FROM null_models) > 0
        THEN emb__fail_label_null('model', format('''{}''', model), 'NULL', format(' in embeddings ''{}''', embeddings))
    WHEN (SELECT count(*) FROM bad) > 0
        THEN (SELECT emb__fail_vector(__emb_bad, format('''{}''', vector),
                                      format('row {} ({})', __emb_erow,
                                             concat_ws(', ', CASE WHEN __emb_m <> '' THEN format('model ''{}''', __emb_m) END,
                                                       format('item ''{}''', __emb_i)))) FROM bad)
    WHEN (SELECT __emb_i FROM twice) IS NOT NULL
        THEN emb__fail_label_duplicate(format('''{}''', (SELECT __emb_i FROM twice)), format('''{}''', embeddings))
    WHEN __emb_pa IS NULL OR __emb_pb IS NULL
        THEN emb__fail_label_null('item', format('''{}''', CASE WHEN __emb_pa IS NULL THEN a ELSE b END), 'NULL',
                                  format(' at row {} of pairs ''{}''', __emb_row, pairs))
    WHEN __emb_s IS NULL
        THEN emb__fail_value_null('score', format('''{}''', score), 1, format(' (first at row {} of pairs ''{}'')', __emb_row, pairs))
    WHEN NOT isfinite(__emb_s)
        THEN emb__fail_value_nonfinite('score', format('''{}''', score), 1, CASE WHEN isnan(__emb_s) THEN 'NaN' ELSE 'infinite' END,
                                       format(' (first at row {} of pairs ''{}'')', __emb_row, pairs))
    WHEN __emb_pa = __emb_pb
        THEN emb__fail_pair_same_item(__emb_row, format('''{}''', pairs), format('''{}''', __emb_pa),
                                      format('''{}''', a), format('''{}''', b))
    WHEN NOT __emb_known AND missing = 'error'
        THEN emb__fail_pair_no_vector(format('''{}''', CASE WHEN __emb_no_a THEN __emb_pa ELSE __emb_pb END),
                                      format('''{}''', CASE WHEN __emb_no_a THEN a ELSE b END), __emb_row,
                                      format('''{}''', pairs), format('''{}''', __emb_m), format('''{}''', embeddings),
                                      'missing := ''skip''')
    WHEN __emb_known AND (__emb_va IS NULL OR __emb_vb IS NULL)
        THEN emb__fail_vector_null(format('''{}''', vector), 'NULL', format('a pair at row {} of pairs ''{}''', __emb_row, pairs))
    WHEN __emb_known AND len(__emb_va) <> len(__emb_vb)
        THEN emb__fail_vector_length(format('''{}''', vector), len(__emb_vb),
                                     format('item ''{}''{}', __emb_pb, CASE WHEN __emb_m = '' THEN '' ELSE format(' of model ''{}''', __emb_m) END),
                                     len(__emb_va))
    ELSE true
END;

-- The t quantile (Cornish-Fisher series in the normal quantile z, four terms).
CREATE OR REPLACE TEMP MACRO emb__t_quantile(p, df) AS (
    SELECT z + (z^3 + z) / 4 / df + (5 * z^5 + 16 * z^3 + 3 * z) / 96 / df^2
             + (3 * z^7 + 19 * z^5 + 17 * z^3 - 15 * z) / 384 / df^3
             + (79 * z^9 + 776 * z^7 + 1482 * z^5 - 1920 * z^3 - 945 * z) / 92160 / df^4
    FROM (SELECT emb_normal_quantile(p) AS z));

-- Per model: the correlation of x (cosine, or its rank) and y (score, or its rank), with its
-- influence-based interval.  rank = true ranks both (average ranks; cosines on the 2^-40 tie grid).
CREATE OR REPLACE TEMP MACRO emb__similarity_correlation(pairs, embeddings, model, a, b, score, item,
                                                         vector, missing, level, rank, skip := false) AS TABLE
WITH r AS (SELECT * FROM emb__similarity_rows(pairs, embeddings, model, a, b, score, item,
                                              vector, missing, skip := skip)),
skipped AS (SELECT __emb_m, count(*) FILTER (NOT __emb_known) AS skipped FROM r GROUP BY __emb_m),
k AS (
    SELECT * EXCLUDE (__emb_c, __emb_s),
        CASE WHEN rank THEN rank() OVER (PARTITION BY __emb_m ORDER BY round(__emb_c * 1099511627776.0))
                            + (count(*) OVER (PARTITION BY __emb_m, round(__emb_c * 1099511627776.0)) - 1) / 2.0
             ELSE __emb_c END AS __emb_x,
        CASE WHEN rank THEN rank() OVER (PARTITION BY __emb_m ORDER BY __emb_s)
                            + (count(*) OVER (PARTITION BY __emb_m, __emb_s) - 1) / 2.0
             ELSE __emb_s END AS __emb_y,
        round(__emb_c * 1099511627776.0) AS __emb_xkey, __emb_s AS __emb_ykey
    FROM r WHERE __emb_known
),
moments AS (SELECT __emb_m, count(*) AS n, favg(__emb_x) AS mx, stddev_pop(__emb_x) AS sx, favg(__emb_y) AS my,
                   stddev_pop(__emb_y) AS sy FROM k GROUP BY __emb_m),
checked AS (
    SELECT * FROM moments
    WHERE CASE
        WHEN n < 3 THEN emb__fail_pair_too_few(CASE WHEN __emb_m = '' THEN 'the pairs' ELSE format('model ''{}''', __emb_m) END, n, 3)
        WHEN sy = 0 THEN emb__fail_pair_constant(CASE WHEN __emb_m = '' THEN 'the pairs' ELSE format('model ''{}''', __emb_m) END, 'the gold score', format('{}', my))
        WHEN sx = 0 THEN emb__fail_pair_constant(CASE WHEN __emb_m = '' THEN 'the pairs' ELSE format('model ''{}''', __emb_m) END, 'the cosine', format('{:.6g}', mx))
        ELSE true END
),
std AS (SELECT k.*, (__emb_x - mx) / sx AS u, (__emb_y - my) / sy AS v, n, sx, sy FROM k JOIN checked USING (__emb_m)),
est AS (SELECT __emb_m, greatest(-1.0, least(1.0, favg(u * v))) AS r FROM std GROUP BY __emb_m),
terms AS (
    -- the pair's own term, plus (ranks only) how it moves every other pair's ranks: the weight of the
    -- pairs above it (half of those tied), w = v - r u for x and u - r v for y, over sd of the ranks
    SELECT std.*, est.r, u * v - est.r / 2 * (u * u + v * v)
        + CASE WHEN rank THEN
              (fsum(v - est.r * u) OVER (PARTITION BY __emb_m)
               - fsum(v - est.r * u) OVER (PARTITION BY __emb_m ORDER BY __emb_xkey)
               + fsum(v - est.r * u) OVER (PARTITION BY __emb_m, __emb_xkey) / 2) / sx
            + (fsum(u - est.r * v) OVER (PARTITION BY __emb_m)
               - fsum(u - est.r * v) OVER (PARTITION BY __emb_m ORDER BY __emb_ykey)
               + fsum(u - est.r * v) OVER (PARTITION BY __emb_m, __emb_ykey) / 2) / sy
          ELSE 0 END AS psi0
    FROM std JOIN est USING (__emb_m)
),
psi AS (SELECT *, psi0 - favg(psi0) OVER (PARTITION BY __emb_m) AS psi FROM terms),
items AS (
    SELECT __emb_m, any_value(n) AS n, fsum(psi) AS s, count(*) AS m
    FROM (SELECT __emb_m, __emb_pa AS i, psi, n FROM psi UNION ALL SELECT __emb_m, __emb_pb, psi, n FROM psi)
    GROUP BY __emb_m, i
),
dyads AS (SELECT __emb_m, any_value(n) AS n, fsum(psi) AS s, count(*) AS m FROM psi
          GROUP BY __emb_m, least(__emb_pa, __emb_pb), greatest(__emb_pa, __emb_pb)),
item_sums AS (SELECT __emb_m, count(*) AS items, fsum((s / greatest(n - m, 1)) ^ 2) AS vi, fsum(m::DOUBLE ^ 2) AS m2,
                     fsum(m::DOUBLE ^ 4) AS m4 FROM items GROUP BY __emb_m),
dyad_sums AS (SELECT __emb_m, fsum((s / greatest(n - m, 1)) ^ 2) AS vd FROM dyads GROUP BY __emb_m),
pair_sums AS (SELECT __emb_m, fsum(psi * psi) / (count(*)::DOUBLE ^ 2) AS vp FROM psi GROUP BY __emb_m),
v AS (
    SELECT __emb_m, est.r, checked.n AS pairs, items, skipped.skipped, sqrt(greatest(vi - vd, vp)) AS se,
           greatest(m2 * m2 / m4 - 1, 1) AS df
    FROM est JOIN checked USING (__emb_m) JOIN item_sums USING (__emb_m) JOIN dyad_sums USING (__emb_m)
    JOIN pair_sums USING (__emb_m) JOIN skipped USING (__emb_m)
)
-- (v's columns qualified: the model column beside them may have any name, r or df too)
SELECT models.* EXCLUDE (__emb_m), v.__emb_m, v.r AS __emb_estimate,
       CASE WHEN abs(v.r) >= 1 THEN v.r
            ELSE tanh(atanh(v.r) - emb__t_quantile((1 + level) / 2, v.df) * v.se / (1 - v.r * v.r)) END AS ci_low,
       CASE WHEN abs(v.r) >= 1 THEN v.r
            ELSE tanh(atanh(v.r) + emb__t_quantile((1 + level) / 2, v.df) * v.se / (1 - v.r * v.r)) END AS ci_high,
       v.se, v.pairs AS __emb_pairs, v.items, v.skipped, level::DOUBLE AS __emb_level,
       v.pairs >= 200 AND v.df >= 20 AS calibrated, s.skipped_null, s.skipped_zero, s.skipped_nonfinite
FROM v LEFT JOIN emb__skipped_items(embeddings, model, vector, skip) s ON coalesce(s.__emb_sb, '') = v.__emb_m
JOIN (SELECT DISTINCT COLUMNS(lambda c: c IN (model, '__emb_all')), __emb_m
             FROM (SELECT *, 1 AS __emb_all, coalesce(coalesce(*COLUMNS(lambda c: c IN (model, '__emb_null')))::VARCHAR, '') AS __emb_m
                   FROM (SELECT *, NULL AS __emb_null FROM query_table(embeddings)))) models
     ON models.__emb_m IS NOT DISTINCT FROM v.__emb_m
ORDER BY v.__emb_m;

-- @function emb_similarity_pearson(pairs, embeddings, model := 'model', a := 'item_a', b := 'item_b', score := 'score', item := 'item', vector := 'vector', missing := 'error', level := 0.95, bad_rows := 'error')
-- Pearson's r between the cosine of each judged pair's two vectors and its gold score, per model,
-- with an interval that accounts for items recurring across pairs, in plain SQL for the stock
-- DuckDB CLI.  One row per model.
-- @param pairs the gold judgements: one row per pair, two item columns and a numeric score (any real scale)
-- @param embeddings one row per item (and model): item, vector and optionally a model column
-- @param model the embeddings' model column: used when the table has it (without it the table is one model and the output has no model column); NULL: one model
-- @param a the pairs' first item column
-- @param b the pairs' second item column
-- @param score the pairs' gold-score column
-- @param item the embeddings' item column (matched to a and b as text)
-- @param vector the embeddings' vector column
-- @param missing a pair whose item has no vector in a model: `'error'` (naming the item and the model) or `'skip'` (left out, counted in `skipped`)
-- @param level the confidence level of the interval
-- @param bad_rows `'error'` (the default): a NULL, zero or non-finite vector is an error naming its item, model and row (from 1); `'skip'`: those rows of the embeddings are left out and counted in the `skipped_` columns, which leaves their items without a vector in that model (their pairs then need `missing := 'skip'`)
-- @column <model> the model, under the model column's own name (only with a model column)
-- @column pearson Pearson's r of cosine and score
-- @column ci_low the lower end of its interval
-- @column ci_high the upper end
-- @column se its item-clustered standard error
-- @column pairs the pairs used
-- @column items the distinct items in them
-- @column skipped pairs left out by `missing := 'skip'`
-- @column level the confidence level
-- @column calibrated true from 200 pairs with 20 or more degrees of freedom (effective items − 1), where the simulated coverage held
-- @column skipped_null rows of the embeddings left out for a NULL vector (or a NULL element), per model (only with `bad_rows := 'skip'`)
-- @column skipped_zero rows left out for a zero vector (only with `bad_rows := 'skip'`)
-- @column skipped_nonfinite rows left out for a NaN or infinite coordinate (only with `bad_rows := 'skip'`)
-- @notes
-- The same figures as `pearson`, `pearson_ci_low`, `pearson_ci_high` and `pearson_se` of
-- `emb_similarity_eval` and `embsql.similarity_eval` (r and se to 1e-12; the interval's t quantile
-- is a series, within 1e-5 from 10 degrees of freedom).  The standard error sums each pair's
-- influence on r over the pairs of each item (pairs that share an item are not independent); see
-- `emb_similarity_eval` for the simulations.  Refused with an `embsql:` error: a missing column, a
-- NULL or non-finite score, a pair of one item, an item without a vector in a model (unless
-- `missing := 'skip'`), an item twice in one model, fewer than 3 pairs, a constant score or cosine.
-- @example
-- SELECT model, round(pearson, 4) AS pearson, pairs
-- FROM emb_similarity_pearson('judged_pairs', 'word_vectors', model := 'model') ORDER BY model;
-- -- good 0.9927 28, noisy 0.976 28
CREATE OR REPLACE TEMP MACRO emb_similarity_pearson(pairs, embeddings, model := 'model', a := 'item_a', b := 'item_b',
                                                    score := 'score', item := 'item', vector := 'vector',
                                                    missing := 'error', level := 0.95, bad_rows := 'error') AS TABLE
SELECT COLUMNS(lambda c: c <> '__emb_all'       -- (__emb_all stands in for a missing model column)
                         AND (emb__skip_asked(bad_rows) OR c NOT IN ('skipped_null', 'skipped_zero', 'skipped_nonfinite'))) FROM (
SELECT COLUMNS(lambda c: c NOT IN ('__emb_m', '__emb_estimate', 'ci_low', 'ci_high', 'se', '__emb_pairs', 'items', 'skipped',
                                   '__emb_level', 'calibrated', 'skipped_null', 'skipped_zero', 'skipped_nonfinite')),
       __emb_estimate AS pearson, ci_low, ci_high, se, __emb_pairs AS pairs, items, skipped, __emb_level AS level, calibrated,
       skipped_null, skipped_zero, skipped_nonfinite
FROM emb__similarity_correlation(
    pairs, emb__checked_source(embeddings, 'emb_similarity_pearson', model, emb__outputs_emb_similarity_pearson()),
    model, a, b, score, item, vector, missing, level, false, skip := emb__skip_rows(bad_rows)));

-- @function emb_similarity_spearman(pairs, embeddings, model := 'model', a := 'item_a', b := 'item_b', score := 'score', item := 'item', vector := 'vector', missing := 'error', level := 0.95, bad_rows := 'error')
-- Spearman's rho between the cosine of each judged pair's two vectors and its gold score (MTEB's STS
-- main score), per model, with an interval that accounts for items recurring across pairs, in
-- plain SQL for the stock DuckDB CLI.  One row per model.
-- @param pairs the gold judgements: one row per pair, two item columns and a numeric score (any real scale)
-- @param embeddings one row per item (and model): item, vector and optionally a model column
-- @param model the embeddings' model column: used when the table has it (without it the table is one model and the output has no model column); NULL: one model
-- @param a the pairs' first item column
-- @param b the pairs' second item column
-- @param score the pairs' gold-score column
-- @param item the embeddings' item column (matched to a and b as text)
-- @param vector the embeddings' vector column
-- @param missing a pair whose item has no vector in a model: `'error'` (naming the item and the model) or `'skip'` (left out, counted in `skipped`)
-- @param level the confidence level of the interval
-- @param bad_rows `'error'` (the default): a NULL, zero or non-finite vector is an error naming its item, model and row (from 1); `'skip'`: those rows of the embeddings are left out and counted in the `skipped_` columns, which leaves their items without a vector in that model (their pairs then need `missing := 'skip'`)
-- @column <model> the model, under the model column's own name (only with a model column)
-- @column spearman Spearman's rho of cosine and score (average ranks for ties)
-- @column ci_low the lower end of its interval
-- @column ci_high the upper end
-- @column se its item-clustered standard error
-- @column pairs the pairs used
-- @column items the distinct items in them
-- @column skipped pairs left out by `missing := 'skip'`
-- @column level the confidence level
-- @column calibrated true from 200 pairs with 20 or more degrees of freedom (effective items − 1), where the simulated coverage held
-- @column skipped_null rows of the embeddings left out for a NULL vector (or a NULL element), per model (only with `bad_rows := 'skip'`)
-- @column skipped_zero rows left out for a zero vector (only with `bad_rows := 'skip'`)
-- @column skipped_nonfinite rows left out for a NaN or infinite coordinate (only with `bad_rows := 'skip'`)
-- @notes
-- The same figures as `spearman`, `ci_low`, `ci_high` and `se` of `emb_similarity_eval` and
-- `embsql.similarity_eval` (rho and se to 1e-12; the t quantile is a series, within 1e-5 from 10
-- degrees of freedom): ranks by window functions (cosines ranked on a grid of 2⁻⁴⁰, so that
-- cosines equal in exact arithmetic tie), and the rank terms of each pair's influence by running
-- sums over the sorted cosines and scores.  Refused as `emb_similarity_pearson`.  Ranking costs a
-- few sorts of the pairs: see bench/README.md for the time beside the Python route.
-- @example
-- SELECT model, round(spearman, 4) AS spearman, pairs
-- FROM emb_similarity_spearman('judged_pairs', 'word_vectors', model := 'model') ORDER BY model;
-- -- good 0.9826 28, noisy 0.9666 28
CREATE OR REPLACE TEMP MACRO emb_similarity_spearman(pairs, embeddings, model := 'model', a := 'item_a', b := 'item_b',
                                                     score := 'score', item := 'item', vector := 'vector',
                                                     missing := 'error', level := 0.95, bad_rows := 'error') AS TABLE
SELECT COLUMNS(lambda c: c <> '__emb_all'       -- (__emb_all stands in for a missing model column)
                         AND (emb__skip_asked(bad_rows) OR c NOT IN ('skipped_null', 'skipped_zero', 'skipped_nonfinite'))) FROM (
SELECT COLUMNS(lambda c: c NOT IN ('__emb_m', '__emb_estimate', 'ci_low', 'ci_high', 'se', '__emb_pairs', 'items', 'skipped',
                                   '__emb_level', 'calibrated', 'skipped_null', 'skipped_zero', 'skipped_nonfinite')),
       __emb_estimate AS spearman, ci_low, ci_high, se, __emb_pairs AS pairs, items, skipped, __emb_level AS level, calibrated,
       skipped_null, skipped_zero, skipped_nonfinite
FROM emb__similarity_correlation(
    pairs, emb__checked_source(embeddings, 'emb_similarity_spearman', model, emb__outputs_emb_similarity_spearman()),
    model, a, b, score, item, vector, missing, level, true, skip := emb__skip_rows(bad_rows)));
