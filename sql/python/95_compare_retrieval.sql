-- Paired comparison of retrieval models on a per-query evaluation table (model, qid, metric,
-- value): a sign-flip randomization test over paraphrase groups (or single queries) and a
-- cluster-robust t interval, for every pair of models.  Loaded by embsql.register(con) after
-- the UDF in udfs/compare_retrieval.py; the numerics are embsql.core.retrieval_comparison.
-- Columns are passed as text with the table's column names and types, so the UDF names a missing
-- column as the Python API does; a missing column reaches it as NULLs (the __emb_null stand-in).

-- The rows of a per-query evaluation as text (model, qid, metric, group) and DOUBLE (value); a
-- missing column gives NULLs here (the __emb_null stand-in) and an error in the kernel.
CREATE OR REPLACE TEMP MACRO emb__evaluation_rows(evaluation, model, qid, "group") AS TABLE
SELECT coalesce(*COLUMNS(lambda c: c IN (model, '__emb_null')))::VARCHAR AS __emb_b,
       coalesce(*COLUMNS(lambda c: c IN (qid, '__emb_null')))::VARCHAR AS __emb_q,
       coalesce(*COLUMNS(lambda c: c IN ('metric', '__emb_null')))::VARCHAR AS __emb_m,
       TRY_CAST(coalesce(*COLUMNS(lambda c: c IN ('value', '__emb_null'))) AS DOUBLE) AS __emb_v,
       coalesce(*COLUMNS(lambda c: c IN ("group", '__emb_null')))::VARCHAR AS __emb_g
FROM (SELECT *, NULL AS __emb_null FROM query_table(evaluation));

-- @function emb_compare_retrieval(evaluation, metric := 'ndcg@10', model := 'model', "group" := NULL, qid := 'qid', permutations := 10000, seed := 42, level := 0.95, p_adjust := 'holm', intervals := 'marginal', replicates := 2000)
-- Is model A better than model B on these queries, and how sure?  One row per pair of models (in
-- model order): the difference of their mean metric, a cluster-robust t interval and a paired
-- sign-flip randomization test over paraphrase groups.
-- @param evaluation a per-query evaluation table with columns `model` (named by `model`), `qid` (named by `qid`), `metric` and `value` (a number), as `embsql.evaluate(..., per_query=True)` or `emb_evaluate_per_query` returns
-- @param metric the metric compared: only the rows whose `metric` is this are used
-- @param model the evaluation's model column: the models compared
-- @param "group" a column giving each query its paraphrase group (one group per qid; GROUP is a keyword: written `"group" := 'topic'`); NULL: every query is its own group
-- @param qid the evaluation's query id column
-- @param permutations the number of random sign vectors, a whole number from 1 to 1,000,000
-- @param seed the random seed, a whole number (0 or more)
-- @param level the confidence level of the interval
-- @param p_adjust the adjustment across all pairs: `'holm'`, `'bh'` (Benjamini–Hochberg), `'bonferroni'` or NULL (none)
-- @param intervals `'marginal'` (each pair's interval holds `level` on its own) or `'simultaneous'` (all the K(K − 1)/2 intervals hold `level` together: difference ∓ c × se, c the `level` quantile of the largest studentized difference over the pairs in a joint cluster bootstrap, a single-step max-|t|)
-- @param replicates the joint cluster bootstrap resamples of `intervals := 'simultaneous'`, a whole number from 2 to 1,000,000 (`permutations` are the test's)
-- @column model_a the first model of the pair
-- @column model_b the second
-- @column metric the metric
-- @column mean_a the mean of model_a over the queries
-- @column mean_b the mean of model_b
-- @column difference `mean_a − mean_b`, the mean over queries of the per-query difference d
-- @column se cluster-robust over the G groups: √(G/(G − 1) Σ_g (S_g − n_g·difference)²) / N, with S_g the sum of d over group g, n_g its size and N the number of queries
-- @column ci_low difference − t(G − 1) × se at `level`; with `intervals := 'simultaneous'`, difference − c × se
-- @column ci_high difference + t(G − 1) × se, or + c × se
-- @column p_value a two-sided paired randomization test that swaps the two models' scores for whole paraphrase groups (flips the sign of S_g), p = (b + 1)/(B + 1)
-- @column p_adjusted the p-value adjusted across all pairs
-- @column p_adjust the adjustment used
-- @column queries N
-- @column groups G
-- @column permutations B, or 2^G when every sign vector is enumerated
-- @column method `exact group sign-flip` when all 2^G ≤ `permutations` sign vectors are enumerated (the p-value is then exact), else the random one
-- @column level as asked
-- @column calibrated false below 30 groups
-- @column interval which kind the interval is: `marginal` or `simultaneous` (the p-values stay per pair, adjusted by `p_adjust`)
-- @notes
-- In simulation (validation/README.md) the interval covered {{figure retrieval.coverage range}} from 30 groups on, as well as or
-- better than the percentile and studentized cluster bootstraps; the simultaneous intervals held
-- together in {{figure rank_sets.simultaneous_ndcg range}} of data sets (3 to 10 models, validation/rank_sets.py).  Under H0 the test rejected
-- {{figure retrieval.level range}} at 5% from 30 groups on, where swapping single queries rejected up to {{figure retrieval.level_queries high}}.  The same
-- seed gives the same p whatever the row order.  Every model must score the same queries, once
-- each.  Errors: a missing column, no rows for `metric` (the message lists the metrics there are),
-- a model without a query another model has, a query twice for one model, a query in two groups, a
-- NULL group, a non-finite value, fewer than two models.  From Python:
-- `embsql.compare_retrieval`, where the evaluation may also be a DataFrame, an Arrow table or a
-- ResultTable, and the groups may come from a queries table.
-- @example
-- SELECT model_a, model_b, round(difference, 4) AS difference, round(ci_low, 4) AS ci_low,
--        round(ci_high, 4) AS ci_high, p_value, groups, calibrated
-- FROM emb_compare_retrieval('evaluation', metric := 'ndcg@10', "group" := 'group');
-- -- bge  e5  0.0979  0.0752  0.1206  9.999000099990002e-05  30  true
CREATE OR REPLACE TEMP MACRO emb_compare_retrieval(evaluation, metric := 'ndcg@10', model := 'model', "group" := NULL,
                                                   qid := 'qid', permutations := 10000, seed := 42, level := 0.95,
                                                   p_adjust := 'holm', intervals := 'marginal',
                                                   replicates := 2000) AS TABLE
SELECT unnest(r.__emb_r.value, recursive := true)
FROM (SELECT emb__compare_retrieval(
                 evaluation,
                 (SELECT list(column_name) FROM (DESCRIBE SELECT * FROM query_table(evaluation))),
                 (SELECT list(column_type) FROM (DESCRIBE SELECT * FROM query_table(evaluation))),
                 model, qid, "group",
                 coalesce((SELECT any_value(column_type) FROM (DESCRIBE SELECT * FROM query_table(evaluation))
                           WHERE column_name = 'value'), 'missing'),
                 coalesce(list(__emb_b), []), coalesce(list(__emb_q), []), coalesce(list(__emb_m), []),
                 coalesce(list(__emb_v), []), coalesce(list(__emb_g), []),
                 metric, emb__whole_argument(permutations, 'permutations'), emb__whole_argument(seed, 'seed'), level,
                 coalesce(p_adjust, 'none'), intervals, emb__whole_argument(replicates, 'replicates')) AS __emb_r
      FROM emb__evaluation_rows(emb__checked_source(evaluation, 'emb_compare_retrieval', model, []::VARCHAR[]),
                                model, qid, "group")) r
WHERE emb__udf_ok(r.__emb_r);
