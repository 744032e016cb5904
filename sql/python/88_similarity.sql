-- Similarity (STS) evaluation: does a model's cosine of two items agree with gold similarity
-- judgements of them?  Loaded by embsql.register(con) after the UDFs in udfs/similarity.py.  Both
-- tables go to the UDF as lists (items as text, scores as DOUBLE, vectors as DOUBLE[]) with their
-- column names and types, so that the UDF can name a missing or mistyped column as the Python API
-- does; the model column keeps its name and type in the output (joined back by its text).

CREATE OR REPLACE TEMP MACRO emb__similarity_inputs(pairs, embeddings, model, a, b, score,
                                                    item, vector, skip := false) AS TABLE
SELECT pairs AS __emb_ptbl,
       (SELECT list(column_name) FROM (DESCRIBE SELECT * FROM query_table(pairs))) AS __emb_pnames,
       (SELECT list(column_type) FROM (DESCRIBE SELECT * FROM query_table(pairs))) AS __emb_ptypes,
       a AS __emb_a_col, b AS __emb_b_col, score AS __emb_s_col, p.*, e.*
-- (the embeddings first: a model column the call refuses (emb__checked_source) is refused before the
-- pairs table binds)
FROM emb__model_items(embeddings, item, model, vector, skip := skip) e,
(
    SELECT coalesce(list(__emb_pa), []) AS __emb_pa, coalesce(list(__emb_pb), []) AS __emb_pb,
           coalesce(list(__emb_ps), []) AS __emb_ps
    FROM (SELECT coalesce(*COLUMNS(lambda c: c IN (a, '__emb_null')))::VARCHAR AS __emb_pa,
                 coalesce(*COLUMNS(lambda c: c IN (b, '__emb_null')))::VARCHAR AS __emb_pb,
                 TRY_CAST(coalesce(*COLUMNS(lambda c: c IN (score, '__emb_null'))) AS DOUBLE) AS __emb_ps
          FROM (SELECT *, NULL AS __emb_null FROM query_table(pairs)))
) p
-- (a model column of another case is refused, not read as no model column: the UDF's default model;
-- a NULL or NaN model value is refused as the Python face refuses it, naming its row)
WHERE emb__model_case(embeddings, model)
  AND CASE
      WHEN NOT list_contains(e.__emb_names, model) THEN true
      WHEN list_count(e.__emb_b) < len(e.__emb_b)
          THEN emb__fail_label_null('model', format('''{}''', model), 'NULL',
                                    format(' at row {} of embeddings ''{}''', list_position(e.__emb_b, NULL) - 1, embeddings))
      WHEN e.__emb_types[list_position(e.__emb_names, model)] IN ('FLOAT', 'DOUBLE') AND list_contains(e.__emb_b, 'nan')
          THEN emb__fail_label_null('model', format('''{}''', model), 'NaN',
                                    format(' at row {} of embeddings ''{}''', list_position(e.__emb_b, 'nan') - 1, embeddings))
      ELSE true
  END;

-- The model values of the embeddings, under the model column's own name, with their text (the key
-- the UDF's rows carry); without a model column, one row of the constant __emb_all.
CREATE OR REPLACE TEMP MACRO emb__similarity_models(embeddings, model) AS TABLE
SELECT DISTINCT COLUMNS(lambda c: c IN (model, '__emb_all')),
       coalesce(*COLUMNS(lambda c: c IN (model, '__emb_null')))::VARCHAR AS __emb_m
FROM (SELECT *, 1 AS __emb_all, NULL AS __emb_null FROM query_table(embeddings));

CREATE OR REPLACE TEMP MACRO emb__similarity_eval(pairs, embeddings, model, a, b, score, item,
                                                  vector, missing, level, skip := false) AS TABLE
WITH r AS (
    SELECT unnest(__emb_r.value, recursive := true), unnest(range(len(__emb_r.value))) AS __emb_o
    FROM (SELECT emb__similarity_eval(__emb_ptbl, __emb_pnames, __emb_ptypes, __emb_a_col, __emb_b_col, __emb_s_col,
                                      __emb_pa, __emb_pb, __emb_ps, __emb_tbl, __emb_names, __emb_types,
                                      __emb_item_col, __emb_model_col, __emb_vector_col, __emb_b, __emb_x, __emb_v, __emb_rows,
                                      missing, level) AS __emb_r
          FROM emb__similarity_inputs(pairs, embeddings, model, a, b, score, item, vector, skip := skip))
    WHERE emb__udf_ok(__emb_r)
)
SELECT COLUMNS(lambda c: c NOT IN ('__emb_all', '__emb_m', '__emb_o', '__emb_sb'))
FROM emb__similarity_models(embeddings, model) m
JOIN r ON m.__emb_m IS NOT DISTINCT FROM r.__emb_m
-- (a model column that is not there, as the default 'model' may be, reads NULL there, as here)
LEFT JOIN emb__skipped_items(embeddings, model, vector, skip) s
    ON m.__emb_m IS NOT DISTINCT FROM s.__emb_sb
ORDER BY r.__emb_o;

-- @function emb_similarity_eval(pairs, embeddings, model := 'model', a := 'item_a', b := 'item_b', score := 'score', item := 'item', vector := 'vector', missing := 'error', level := 0.95, bad_rows := 'error')
-- Similarity (STS) evaluation: per model, how well the cosine of two items' vectors agrees with
-- gold similarity judgements of the pair (Spearman's rho, MTEB's STS main score, and Pearson's r),
-- each with an interval that accounts for items recurring across pairs.  One row per model.
-- @param pairs the gold judgements: one row per pair, two item columns and a numeric score (any real scale)
-- @param embeddings one row per item (and model): item, vector and optionally a model column
-- @param model the embeddings' model column: used when the table has it (without it the table is one model and the output has no model column); NULL: one model
-- @param a the pairs' first item column
-- @param b the pairs' second item column
-- @param score the pairs' gold-score column
-- @param item the embeddings' item column (matched to a and b as text)
-- @param vector the embeddings' vector column
-- @param missing a pair whose item has no vector in a model: `'error'` (naming the item and the model) or `'skip'` (left out, counted in `skipped`)
-- @param level the confidence level of the intervals
-- @param bad_rows `'error'` (the default): a NULL, zero or non-finite vector is an error naming its model and item; `'skip'`: those rows of the embeddings are left out and counted in the `skipped_` columns, which leaves their items without a vector in that model (their pairs then need `missing := 'skip'`)
-- @column <model> the model, under the model column's own name (only with a model column)
-- @column spearman Spearman's rho of cosine and score (average ranks for ties)
-- @column ci_low the lower end of its interval
-- @column ci_high the upper end
-- @column se its item-clustered standard error
-- @column pearson Pearson's r of cosine and score
-- @column pearson_ci_low the lower end of its interval
-- @column pearson_ci_high the upper end
-- @column pearson_se its item-clustered standard error
-- @column pairs the pairs used
-- @column items the distinct items in them
-- @column skipped pairs left out by `missing := 'skip'`
-- @column level the confidence level
-- @column calibrated true from 200 pairs with 20 or more degrees of freedom (effective items − 1), where the simulated coverage held
-- @column skipped_null rows of the embeddings left out for a NULL vector (or a NULL element), per model (only with `bad_rows := 'skip'`)
-- @column skipped_zero rows left out for a zero vector (only with `bad_rows := 'skip'`)
-- @column skipped_nonfinite rows left out for a NaN or infinite coordinate (only with `bad_rows := 'skip'`)
-- @notes
-- The same numbers as `embsql.similarity_eval` (and scipy's `spearmanr` / `pearsonr` on the cosines,
-- to 1e-12).  Pairs share items (a word is in many pairs of a word-similarity set), so they are not
-- independent: the standard errors come from each pair's influence on the correlation, summed over
-- the pairs of each item (the dyadic-robust variance, scaled as a delete-one-item jackknife), and the
-- interval is t on Fisher's z.  In simulations where items recur (half of them in one pair, some in
-- 20 or more) it covered {{figure similarity.coverage range}} at 95% wherever the t quantile had 20 or more degrees of freedom
-- ({{figure similarity.coverage_df10 range}} at 10); treating pairs as independent covered {{figure similarity.coverage_pairs range}} (validation/README.md).  Refused with an `embsql:` error: a NULL or non-finite score, a pair of
-- one item with itself, a pair whose item has no vector in a model (unless `missing := 'skip'`),
-- fewer than 3 pairs, a constant score or cosine.  A pair given twice counts twice.
-- @example
-- SELECT model, round(spearman, 4) AS spearman, round(pearson, 4) AS pearson, pairs, items
-- FROM emb_similarity_eval('judged_pairs', 'word_vectors', model := 'model') ORDER BY model;
-- -- good 0.9826 0.9927 28 8, noisy 0.9666 0.976 28 8
CREATE OR REPLACE TEMP MACRO emb_similarity_eval(pairs, embeddings, model := 'model', a := 'item_a', b := 'item_b',
                                                 score := 'score', item := 'item', vector := 'vector',
                                                 missing := 'error', level := 0.95, bad_rows := 'error') AS TABLE
SELECT COLUMNS(lambda c: emb__skip_asked(bad_rows) OR c NOT IN ('skipped_null', 'skipped_zero', 'skipped_nonfinite'))
FROM emb__similarity_eval(
    pairs, emb__checked_source(embeddings, 'emb_similarity_eval', model, emb__outputs_emb_similarity_eval()),
    model, a, b, score, item, vector, missing, level, skip := emb__skip_rows(bad_rows));

-- @function emb_compare_similarity(pairs, embeddings, model := 'model', a := 'item_a', b := 'item_b', score := 'score', item := 'item', vector := 'vector', missing := 'error', level := 0.95, bad_rows := 'error', intervals := 'marginal', replicates := 2000, seed := 42)
-- Every pair of models on the same gold judgements: the difference of their Spearman and of their
-- Pearson correlations, with a standard error and interval that account for recurring items, a
-- paired p-value and Holm's adjustment across the pairs of models.
-- @param pairs the gold judgements: one row per pair, two item columns and a numeric score
-- @param embeddings one row per model and item: model, item and vector columns
-- @param model the embeddings' model column (at least two models)
-- @param a the pairs' first item column
-- @param b the pairs' second item column
-- @param score the pairs' gold-score column
-- @param item the embeddings' item column
-- @param vector the embeddings' vector column
-- @param missing `'error'` or `'skip'` (the two models are compared on the pairs both can score; with `intervals := 'simultaneous'`, every pair of models on the pairs every model scores)
-- @param level the confidence level of the intervals
-- @param bad_rows `'error'` (the default): a NULL, zero or non-finite vector is an error naming its model and item; `'skip'`: those rows of the embeddings are left out, which leaves their items without a vector in that model (their pairs then need `missing := 'skip'`)
-- @param intervals `'marginal'` (each pair's interval holds `level` on its own) or `'simultaneous'` (per correlation, all the K(K − 1)/2 intervals hold `level` together: difference ∓ c × se, c the `level` quantile of the largest studentized difference over the pairs in joint normal draws with the correlations' item-clustered covariance, a single-step max-|t|; every row is then computed on the pairs every model scores)
-- @param replicates the joint normal draws of `intervals := 'simultaneous'`, a whole number from 2 to 1,000,000
-- @param seed the random seed of those draws, a whole number (0 or more)
-- @column model_a the first model (as text)
-- @column model_b the second
-- @column correlation `spearman` or `pearson`
-- @column estimate_a model a's correlation
-- @column estimate_b model b's
-- @column difference a − b
-- @column se its item-clustered standard error
-- @column ci_low the lower end of its interval
-- @column ci_high the upper end
-- @column p_value two-sided, H0: equal population correlations
-- @column p_adjusted Holm-adjusted across the pairs of models, per correlation
-- @column pairs the pairs both models scored
-- @column items the distinct items in them
-- @column level the confidence level
-- @column calibrated true from 200 pairs with 20 or more degrees of freedom (effective items − 1), where the simulated level held
-- @column interval which kind the interval is: `marginal` or `simultaneous` (the p-values stay per pair, Holm-adjusted)
-- @notes
-- The same numbers as `embsql.compare_similarity`.  The simultaneous intervals held together in
-- {{figure rank_sets_families.spearman_simultaneous range}} (Spearman) and {{figure rank_sets_families.pearson_simultaneous range}} (Pearson) of simulated data sets at 95% (3 to
-- 10 models, 30 or 100 items in five times as many pairs; validation/rank_sets_families.py).  The difference's influence values are the two
-- models' subtracted pair by pair, clustered by item; the test held its level ({{figure similarity.level range}} at 5% wherever df ≥ 20) in the
-- simulations of validation/README.md, where treating pairs as independent rejected {{figure similarity.level_pairs range}} of the time.
-- @example
-- SELECT correlation, model_a, model_b, difference > 0 AS a_better FROM emb_compare_similarity('judged_pairs', 'word_vectors');
-- -- spearman good noisy true, pearson good noisy true
CREATE OR REPLACE TEMP MACRO emb_compare_similarity(pairs, embeddings, model := 'model', a := 'item_a', b := 'item_b',
                                                    score := 'score', item := 'item', vector := 'vector',
                                                    missing := 'error', level := 0.95, bad_rows := 'error',
                                                    intervals := 'marginal', replicates := 2000, seed := 42) AS TABLE
SELECT unnest(__emb_r.value, recursive := true)
FROM (SELECT emb__compare_similarity(__emb_ptbl, __emb_pnames, __emb_ptypes, __emb_a_col, __emb_b_col, __emb_s_col,
                                     __emb_pa, __emb_pb, __emb_ps, __emb_tbl, __emb_names, __emb_types,
                                     __emb_item_col, __emb_model_col, __emb_vector_col, __emb_b, __emb_x, __emb_v, __emb_rows,
                                     missing, level, intervals, emb__whole_argument(replicates, 'replicates'),
                                     emb__whole_argument(seed, 'seed')) AS __emb_r
      FROM emb__similarity_inputs(pairs, emb__checked_source(embeddings, 'emb_compare_similarity', model, []::VARCHAR[]),
                                  model, a, b, score, item, vector, skip := emb__skip_rows(bad_rows)))
WHERE emb__udf_ok(__emb_r);
