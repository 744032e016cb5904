-- Paired comparison of classifiers' accuracy on the same items, from a per-item predictions table
-- (model, item, correct): the mid-p McNemar test and Agresti and Min's interval, or with clusters
-- a sign-flip randomization test and a cluster-robust t interval, for every pair of models.
-- Loaded by embsql.register(con) after the UDF in udfs/compare_classification.py; the numerics are
-- embsql.core.classification, which embsql.compare_classification runs too.  Columns are passed as
-- text (correct as a boolean) with the table's column names and types, so the UDF names a missing
-- column as the Python API does; a missing column reaches it as NULLs (the __emb_null stand-in).

-- The rows of a per-item predictions table as text (model, item, label, predicted, group) and
-- BOOLEAN (correct); a missing column gives NULLs here (the __emb_null stand-in) and an error in the kernel.
CREATE OR REPLACE TEMP MACRO emb__prediction_rows(predictions, model, item, "group") AS TABLE
SELECT coalesce(*COLUMNS(lambda c: c IN (model, '__emb_null')))::VARCHAR AS __emb_b,
       coalesce(*COLUMNS(lambda c: c IN (item, '__emb_null')))::VARCHAR AS __emb_i,
       TRY_CAST(coalesce(*COLUMNS(lambda c: c IN ('correct', '__emb_null'))) AS BOOLEAN) AS __emb_c,
       coalesce(*COLUMNS(lambda c: c IN ('label', '__emb_null')))::VARCHAR AS __emb_l,
       coalesce(*COLUMNS(lambda c: c IN ('predicted', '__emb_null')))::VARCHAR AS __emb_p,
       coalesce(*COLUMNS(lambda c: c IN ("group", '__emb_null')))::VARCHAR AS __emb_g
FROM (SELECT *, NULL AS __emb_null FROM query_table(predictions));

-- @function emb_compare_classification(predictions, model := 'model', item := 'item', "group" := NULL, level := 0.95, p_adjust := 'holm', permutations := 10000, seed := 42, intervals := 'marginal', replicates := 2000)
-- Does model A classify these items better than model B, and how sure?  One row per pair of models
-- (in model order): the difference of their accuracy, its interval and a paired test on the items
-- only one of them gets right.
-- @param predictions a per-item predictions table with columns `model` (named by `model`), `item` (named by `item`) and `correct` (a boolean), as `emb_knn_classify_items` or `embsql.knn_classify(..., per_item=True)` returns
-- @param model the predictions' model column: the models compared (at least two)
-- @param item the predictions' item column: models are compared on the same items, each once per model
-- @param "group" a column giving each item its cluster (one cluster per item; GROUP is a keyword: written `"group" := 'source'`); NULL: items are independent
-- @param level the confidence level of the interval
-- @param p_adjust the adjustment across the pairs: `'holm'`, `'bh'` (Benjamini–Hochberg), `'bonferroni'` or NULL (none)
-- @param permutations the random sign vectors of the cluster test, a whole number from 1 to 1,000,000
-- @param seed the random seed of the cluster test (and of the resamples of `intervals := 'simultaneous'`), a whole number (0 or more)
-- @param intervals `'marginal'` (each pair's interval holds `level` on its own) or `'simultaneous'` (all the K(K − 1)/2 intervals hold `level` together: difference ∓ c × se, se the cluster-robust SE of the mean per-item difference, c the `level` quantile of the largest studentized difference over the pairs in a joint cluster bootstrap, a single-step max-|t|)
-- @param replicates the joint cluster bootstrap resamples of `intervals := 'simultaneous'`, a whole number from 2 to 1,000,000 (`permutations` are the test's)
-- @column model_a the first model of the pair
-- @column model_b the second
-- @column accuracy_a the share of the items model_a gets right
-- @column accuracy_b the share model_b gets right
-- @column difference `accuracy_a − accuracy_b`, (a_only − b_only)/items
-- @column se Agresti and Min's (after adding 1/2 to each cell of the 2 × 2 table); with `group` or `intervals := 'simultaneous'`, cluster-robust over the G clusters (each item its own without `group`)
-- @column ci_low difference − z × se (Agresti and Min), or − t(G − 1) × se with `group`; with `intervals := 'simultaneous'`, difference − c × se
-- @column ci_high its upper end
-- @column p_value the mid-p McNemar test (the exact two-sided binomial test of a_only among a_only + b_only, 2 P(X < min) + P(X = min)); with `group`, a two-sided sign-flip test that swaps the two models' answers for whole clusters
-- @column p_exact the exact McNemar test (conservative: {{figure classification.mcnemar_level_exact range}} at 5% from 10 expected discordant items on, where the mid-p held {{figure classification.mcnemar_level range}}); NULL with `group`
-- @column p_adjusted the p-value adjusted across the pairs
-- @column p_adjust the adjustment used
-- @column items the items compared
-- @column groups G (NULL without `group`)
-- @column a_only the items only model_a gets right
-- @column b_only the items only model_b gets right
-- @column permutations the sign vectors used (NULL for McNemar), or 2^G when every one is enumerated
-- @column method `mid-p McNemar`, `cluster sign-flip` or `exact cluster sign-flip`
-- @column level as asked
-- @column calibrated true from 30 items (or clusters) on
-- @column interval which kind the interval is: `marginal` or `simultaneous` (the p-values stay per pair, adjusted by `p_adjust`)
-- @notes
-- The simultaneous intervals held together in {{figure rank_sets_families.accuracy_simultaneous range}} of simulated
-- data sets at 95% (3 to 10 models, 30 or 100 clusters; validation/rank_sets_families.py).
-- McNemar on items that are not independent (paraphrases of one source) rejects a true H0 too
-- often; give `group` for them (validation/README.md).  Every model must answer the same items, once
-- each.  Errors: a missing column, an item one model lacks, an item twice for a model, a NULL
-- `correct`, an item in two clusters, a NULL model, item or group, fewer than two models.  From
-- Python: `embsql.compare_classification`, where the predictions may also be a DataFrame, an Arrow
-- table or a ResultTable.
-- @example
-- SELECT model_a, model_b, difference, a_only, b_only, p_value, method
-- FROM emb_compare_classification('predictions');
-- -- a  b  0.5  3  0  0.125  mid-p McNemar
CREATE OR REPLACE TEMP MACRO emb_compare_classification(predictions, model := 'model', item := 'item', "group" := NULL,
                                                        level := 0.95, p_adjust := 'holm', permutations := 10000,
                                                        seed := 42, intervals := 'marginal',
                                                        replicates := 2000) AS TABLE
SELECT unnest(r.__emb_r.value, recursive := true)
FROM (SELECT emb__compare_classification(
                 predictions,
                 (SELECT list(column_name) FROM (DESCRIBE SELECT * FROM query_table(predictions))),
                 (SELECT list(column_type) FROM (DESCRIBE SELECT * FROM query_table(predictions))),
                 model, item, "group",
                 coalesce(list(__emb_b), []), coalesce(list(__emb_i), []), coalesce(list(__emb_c), []),
                 coalesce(list(__emb_g), []),
                 level, coalesce(p_adjust, 'none'), emb__whole_argument(permutations, 'permutations'),
                 emb__whole_argument(seed, 'seed'), intervals,
                 emb__whole_argument(replicates, 'replicates')) AS __emb_r
      FROM emb__prediction_rows(emb__checked_source(predictions, 'emb_compare_classification', model,
                                                     []::VARCHAR[]), model, item, "group")) r
WHERE emb__udf_ok(r.__emb_r);
