-- Simultaneous rank confidence sets of K models for the evaluation families other than structure
-- (emb_rank_models, 72_model_ranking.sql): retrieval, similarity, classification and agreement
-- with a reference model (CKA).  Loaded by embsql.register(con) after the UDFs
-- (udfs/compare_retrieval.py, udfs/similarity.py, udfs/compare_classification.py,
-- udfs/model_ranking.py), whose numerics are embsql.rank_models'.  Each table goes to its kernel as
-- lists with its column names and types, as for the compare macros of the same family, so a
-- missing column gets the Python face's message.

-- The rows of a rank kernel (one struct per model, the model as text) under the model column's own
-- name and type, in the kernel's order (model order).  With skip (bad_rows := 'skip' on a table of
-- vectors: source's vector column), each model's skipped rows are counted per reason, as
-- emb_rank_models counts them; a table without vectors passes vector := NULL.
CREATE OR REPLACE TEMP MACRO emb__ranked_rows(source, model, ranked, vector := NULL, skip := false) AS TABLE
WITH r AS (SELECT unnest(ranked) AS __emb_x, unnest(range(len(ranked))) AS __emb_o),
-- (the model column with __emb_null beside it: a missing model column then binds, and the kernel
-- refuses it naming the column, as every other function does)
m AS (SELECT DISTINCT COLUMNS(lambda c: c IN (model, '__emb_null')),
             coalesce(*COLUMNS(lambda c: c IN (model, '__emb_null')))::VARCHAR AS __emb_k
      FROM (SELECT *, NULL AS __emb_null FROM query_table(source)))
SELECT COLUMNS(lambda c: NOT starts_with(c, '__emb_')
                         AND (skip OR c NOT IN ('skipped_null', 'skipped_zero', 'skipped_nonfinite')))
FROM (SELECT m.* EXCLUDE (__emb_null), r.__emb_o, r.__emb_x.statistic AS statistic, r.__emb_x.estimate AS estimate,
             r.__emb_x.ci_low AS ci_low, r.__emb_x.ci_high AS ci_high, r.__emb_x.rank AS rank,
             r.__emb_x.rank_low AS rank_low, r.__emb_x.rank_high AS rank_high, r.__emb_x.top AS top,
             r.__emb_x.level AS level, r.__emb_x.calibrated AS calibrated
      FROM r JOIN m ON m.__emb_k = r.__emb_x.model) x
LEFT JOIN (SELECT __emb_sb, COLUMNS(lambda c: c IN ('skipped_null', 'skipped_zero', 'skipped_nonfinite'))::BIGINT
           FROM emb__skipped_items(source, model, vector, skip)) s
    ON x.__emb_k IS NOT DISTINCT FROM s.__emb_sb
ORDER BY x.__emb_o;

-- @function emb_rank_retrieval(evaluation, metric := 'ndcg@10', model := 'model', "group" := NULL, qid := 'qid', level := 0.95, replicates := 2000, seed := 42)
-- Rank K retrieval models by one metric of a per-query evaluation, with simultaneous confidence
-- sets for their ranks: one row per model (first, under the model column's own name).
-- @param evaluation a per-query evaluation table with columns `model` (named by `model`), `qid` (named by `qid`), `metric` and `value` (a number), as `embsql.evaluate(..., per_query=True)` or `emb_evaluate_per_query` returns
-- @param metric the metric ranked: only the rows whose `metric` is this are used (a ranking is per metric)
-- @param model the evaluation's model column: the models ranked (two or more)
-- @param "group" a column giving each query its paraphrase group (one group per qid; GROUP is a keyword: written `"group" := 'topic'`); NULL: every query is its own cluster
-- @param qid the evaluation's query id column
-- @param level the simultaneous confidence level, between 0 and 1
-- @param replicates the number of joint cluster bootstrap replicates, a whole number from 2 to 1,000,000
-- @param seed the random seed, a whole number (0 or more)
-- @column <model> the model, under the model column's own name
-- @column statistic the metric
-- @column estimate the model's mean of the metric over the queries
-- @column ci_low the lower end of the mean's cluster-robust t interval at `level` (the model alone)
-- @column ci_high its upper end
-- @column rank the rank by the estimate (1 = largest; equal estimates share the smaller rank)
-- @column rank_low the lowest rank the model may have, simultaneously with all the others
-- @column rank_high the highest
-- @column top whether the model is in the confidence set for the best (rank_low = 1)
-- @column level the level asked for
-- @column calibrated true from 30 query clusters on, where validation/rank_sets.py measured the family-wise coverage ({{figure rank_sets.coverage range}} at 95%); false otherwise
-- @notes
-- All K true ranks lie in their sets [rank_low, rank_high] together with probability `level`
-- (Mogstad, Romano, Shaikh and Wilhelm's rank sets with their step-down, as `emb_rank_models`).
-- The resampling is the cluster bootstrap of the queries' paraphrase groups, the same resamples
-- for every model, each difference studentized by its own cluster-robust (CR1) SE.  Every model
-- must score the same queries, once each; the errors are those of `emb_compare_retrieval`.  From
-- Python: `embsql.rank_models(con, evaluation, statistic=...)`.
-- @example
-- SELECT model, rank, rank_low, rank_high, top
-- FROM emb_rank_retrieval('evaluation', metric := 'ndcg@10', model := 'model', "group" := 'group', replicates := 999);
CREATE OR REPLACE TEMP MACRO emb_rank_retrieval(evaluation, metric := 'ndcg@10', model := 'model', "group" := NULL,
                                                qid := 'qid', level := 0.95, replicates := 2000, seed := 42) AS TABLE
SELECT * FROM emb__ranked_rows(evaluation, model, (
    SELECT r.__emb_r.value
    FROM (SELECT emb__rank_retrieval(
                     evaluation,
                     (SELECT list(column_name) FROM (DESCRIBE SELECT * FROM query_table(evaluation))),
                     (SELECT list(column_type) FROM (DESCRIBE SELECT * FROM query_table(evaluation))),
                     model, qid, "group",
                     coalesce((SELECT any_value(column_type) FROM (DESCRIBE SELECT * FROM query_table(evaluation))
                               WHERE column_name = 'value'), 'missing'),
                     coalesce(list(__emb_b), []), coalesce(list(__emb_q), []), coalesce(list(__emb_m), []),
                     coalesce(list(__emb_v), []), coalesce(list(__emb_g), []),
                     metric, emb__whole_argument(replicates, 'replicates'), emb__whole_argument(seed, 'seed'),
                     emb__level_argument(level)) AS __emb_r
          FROM emb__evaluation_rows(emb__checked_source(evaluation, 'emb_rank_retrieval', model,
                                                        emb__outputs_emb_rank_retrieval()), model, qid, "group")) r
    WHERE emb__udf_ok(r.__emb_r)));

-- @function emb_rank_similarity(pairs, embeddings, model := 'model', a := 'item_a', b := 'item_b', score := 'score', item := 'item', vector := 'vector', statistic := 'spearman', level := 0.95, replicates := 2000, seed := 42, bad_rows := 'error')
-- Rank K models by the agreement of their cosines with human similarity judgements (Spearman or
-- Pearson), with simultaneous confidence sets for their ranks: one row per model.
-- @param pairs the gold pairs: columns `a`, `b` (the two items) and `score` (the human similarity), as for `emb_similarity_eval`
-- @param embeddings the embeddings: one row per model and item
-- @param model the embeddings' model column: the models ranked (two or more)
-- @param a the pairs' first item column
-- @param b the pairs' second item column
-- @param score the pairs' score column (a number)
-- @param item the embeddings' item column
-- @param vector the embeddings' vector column
-- @param statistic `'spearman'` (the default) or `'pearson'`
-- @param level the simultaneous confidence level, between 0 and 1
-- @param replicates the number of joint normal draws, a whole number from 2 to 1,000,000
-- @param seed the random seed, a whole number (0 or more)
-- @param bad_rows `'error'` (the default): a NULL, zero or non-finite vector is an error naming its model and item; `'skip'`: those rows of the embeddings are left out and counted per model, which leaves their items without a vector in that model (a pair a model cannot score is an error)
-- @column <model> the model, under the model column's own name
-- @column statistic `spearman` or `pearson`
-- @column estimate the correlation of the model's cosines with the score, on the pairs every model scores
-- @column ci_low the lower end of the correlation's Fisher interval at `level` (as `emb_similarity_eval`)
-- @column ci_high its upper end
-- @column rank the rank by the estimate (1 = largest; equal estimates share the smaller rank)
-- @column rank_low the lowest rank the model may have, simultaneously with all the others
-- @column rank_high the highest
-- @column top whether the model is in the confidence set for the best (rank_low = 1)
-- @column level the level asked for
-- @column calibrated true from 30 distinct items on (the clusters of the covariance), where validation/rank_sets_families.py measured the family-wise coverage ({{figure rank_sets_families.spearman_sets range}} by Spearman, {{figure rank_sets_families.pearson_sets range}} by Pearson, at 95%, five pairs per item)
-- @column skipped_null rows left out for a NULL vector (or a NULL element), per model (only with `bad_rows := 'skip'`)
-- @column skipped_zero rows left out for a zero vector (only with `bad_rows := 'skip'`)
-- @column skipped_nonfinite rows left out for a NaN or infinite coordinate (only with `bad_rows := 'skip'`)
-- @notes
-- The sets are Mogstad, Romano, Shaikh and Wilhelm's (as `emb_rank_models`), from joint normal
-- draws with the correlations' item-clustered covariance, each pair studentized by
-- `emb_compare_similarity`'s SE.  Pairs a model cannot score are an error.  From Python:
-- `embsql.rank_models(con, embeddings, pairs=..., vector=..., model=...)`.
-- @example
-- SELECT model, estimate, rank_low, rank_high, top
-- FROM emb_rank_similarity('judged_pairs', 'word_vectors', model := 'model', replicates := 999);
CREATE OR REPLACE TEMP MACRO emb_rank_similarity(pairs, embeddings, model := 'model', a := 'item_a', b := 'item_b',
                                                 score := 'score', item := 'item', vector := 'vector',
                                                 statistic := 'spearman', level := 0.95, replicates := 2000,
                                                 seed := 42, bad_rows := 'error') AS TABLE
SELECT * FROM emb__ranked_rows(embeddings, model, (
    SELECT __emb_r.value
    FROM (SELECT emb__rank_similarity(__emb_ptbl, __emb_pnames, __emb_ptypes, __emb_a_col, __emb_b_col, __emb_s_col,
                                      __emb_pa, __emb_pb, __emb_ps, __emb_tbl, __emb_names, __emb_types,
                                      __emb_item_col, __emb_model_col, __emb_vector_col, __emb_b, __emb_x, __emb_v,
                                      __emb_rows, 'error', emb__level_argument(level), statistic,
                                      emb__whole_argument(replicates, 'replicates'),
                                      emb__whole_argument(seed, 'seed')) AS __emb_r
          FROM emb__similarity_inputs(pairs, emb__checked_source(embeddings, 'emb_rank_similarity', model,
                                                                 emb__outputs_emb_rank_similarity()),
                                      model, a, b, score, item, vector, skip := emb__skip_rows(bad_rows)))
    WHERE emb__udf_ok(__emb_r)), vector := vector, skip := emb__skip_asked(bad_rows));

-- @function emb_rank_classification(predictions, statistic := 'accuracy', model := 'model', item := 'item', "group" := NULL, level := 0.95, replicates := 2000, seed := 42)
-- Rank K classifiers by accuracy or macro-F1 on per-item predictions, with simultaneous confidence
-- sets for their ranks: one row per model.
-- @param predictions a per-item predictions table with columns `model` (named by `model`), `item` (named by `item`), and `correct` (a boolean) for accuracy or `label` and `predicted` for macro-F1, as `emb_knn_classify_items` or `embsql.knn_classify(..., per_item=True)` returns
-- @param statistic `'accuracy'` (the default) or `'macro_f1'`
-- @param model the predictions' model column: the models ranked (two or more)
-- @param item the predictions' item column: models are paired on the same items, each once per model
-- @param "group" a column giving each item its cluster (one cluster per item; GROUP is a keyword: written `"group" := 'source'`); NULL: items are independent
-- @param level the simultaneous confidence level, between 0 and 1
-- @param replicates the number of joint bootstrap replicates (accuracy) or joint normal draws (macro-F1), a whole number from 2 to 1,000,000
-- @param seed the random seed, a whole number (0 or more)
-- @column <model> the model, under the model column's own name
-- @column statistic `accuracy` or `macro_f1`
-- @column estimate the model's accuracy or macro-F1 on the items
-- @column ci_low the lower end of the model's own interval at `level` (accuracy: the mean's cluster-robust t interval; macro-F1: the figure − t × its jackknife SE)
-- @column ci_high its upper end
-- @column rank the rank by the estimate (1 = largest; equal estimates share the smaller rank)
-- @column rank_low the lowest rank the model may have, simultaneously with all the others
-- @column rank_high the highest
-- @column top whether the model is in the confidence set for the best (rank_low = 1)
-- @column level the level asked for
-- @column calibrated accuracy: true from 30 clusters (or items) on, where validation/rank_sets_families.py measured the family-wise coverage ({{figure rank_sets_families.accuracy_sets range}} at 95%); macro-F1: from 100 on ({{figure rank_sets_families.macro_f1_sets_G100 range}}; {{figure rank_sets_families.macro_f1_sets low}} at 30 with 10 tied models)
-- @notes
-- The sets are Mogstad, Romano, Shaikh and Wilhelm's (as `emb_rank_models`): for accuracy from the
-- joint cluster bootstrap of each item's 0/1 answer (the same resamples of clusters for every
-- model, each difference studentized by its CR1 SE), for macro-F1 from joint normal draws with the
-- delete-one jackknife's covariance over the items (or clusters).  The errors are those of
-- `emb_compare_classification`.  From Python: `embsql.rank_models(con, predictions, statistic=...)`.
-- @example
-- SELECT model, estimate, rank_low, rank_high, top
-- FROM emb_rank_classification('predictions', model := 'model', replicates := 999);
CREATE OR REPLACE TEMP MACRO emb_rank_classification(predictions, statistic := 'accuracy', model := 'model',
                                                     item := 'item', "group" := NULL, level := 0.95,
                                                     replicates := 2000, seed := 42) AS TABLE
SELECT * FROM emb__ranked_rows(predictions, model, (
    SELECT r.__emb_r.value
    FROM (SELECT emb__rank_classification(
                     predictions,
                     (SELECT list(column_name) FROM (DESCRIBE SELECT * FROM query_table(predictions))),
                     (SELECT list(column_type) FROM (DESCRIBE SELECT * FROM query_table(predictions))),
                     model, item, "group",
                     coalesce(list(__emb_b), []), coalesce(list(__emb_i), []), coalesce(list(__emb_c), []),
                     coalesce(list(__emb_l), []), coalesce(list(__emb_p), []), coalesce(list(__emb_g), []),
                     statistic, emb__whole_argument(replicates, 'replicates'), emb__whole_argument(seed, 'seed'),
                     emb__level_argument(level)) AS __emb_r
          FROM emb__prediction_rows(emb__checked_source(predictions, 'emb_rank_classification', model,
                                                        emb__outputs_emb_rank_classification()), model, item,
                                    "group")) r
    WHERE emb__udf_ok(r.__emb_r)));

-- @function emb_rank_cka(source, item, vector, reference, model := 'model', "group" := NULL, level := 0.95, replicates := 2000, seed := 42, bad_rows := 'error')
-- Rank K models by their debiased CKA with a reference model on the same items, with simultaneous
-- confidence sets for their ranks: one row per model other than the reference.
-- @param source the table to read: a table or view name, or a file DuckDB reads
-- @param item the item column: which rows of different models embed the same item
-- @param vector the vector column (models may differ in dimension)
-- @param reference the reference model (a value of the model column), which is not ranked
-- @param model the model column: the reference and the models ranked (two or more besides the reference)
-- @param "group" a column giving each item its group (GROUP is a keyword: written `"group" := 'topic'`); the jackknife leaves out whole groups; NULL: single items
-- @param level the simultaneous confidence level, between 0 and 1
-- @param replicates the number of joint normal draws, a whole number from 2 to 1,000,000
-- @param seed the random seed, a whole number (0 or more)
-- @param bad_rows `'error'` (the default): a NULL, zero or non-finite vector is an error naming its row; `'skip'`: those rows are left out and counted per ranked model (an item must then be left out of every model, or be missing from none: the models are compared on the same items)
-- @column <model> the model, under the model column's own name
-- @column statistic `cka`
-- @column estimate the debiased CKA of the model with the reference (as `emb_compare_cka`'s `cka_a`)
-- @column ci_low the lower end of the CKA − t × its jackknife SE at `level` (the model alone)
-- @column ci_high its upper end
-- @column rank the rank by the estimate (1 = largest; equal estimates share the smaller rank)
-- @column rank_low the lowest rank the model may have, simultaneously with all the others
-- @column rank_high the highest
-- @column top whether the model is in the confidence set for the best (rank_low = 1)
-- @column level the level asked for
-- @column calibrated true from 30 groups (or 30 items without `"group"`) on, where validation/rank_sets_families.py measured the family-wise coverage ({{figure rank_sets_families.cka_sets range}} at 95%)
-- @column skipped_null rows left out for a NULL vector (or a NULL element), per model (only with `bad_rows := 'skip'`)
-- @column skipped_zero rows left out for a zero vector (only with `bad_rows := 'skip'`)
-- @column skipped_nonfinite rows left out for a NaN or infinite coordinate (only with `bad_rows := 'skip'`)
-- @notes
-- The sets are Mogstad, Romano, Shaikh and Wilhelm's (as `emb_rank_models`), from joint normal draws
-- with the covariance of the paired delete-one jackknife over the items or groups (the replicates
-- of `emb_compare_cka`).  An unknown reference is `model.reference`.  From Python:
-- `embsql.rank_models(con, source, statistic='cka', reference=..., vector=..., model=...)`.
-- @example
-- SELECT model, round(estimate, 4) AS estimate, rank_low, rank_high, top
-- FROM emb_rank_cka('geometry3', 'item_id', 'embedding', 'ref', model := 'model', replicates := 999);
CREATE OR REPLACE TEMP MACRO emb_rank_cka(source, item, vector, reference, model := 'model', "group" := NULL,
                                          level := 0.95, replicates := 2000, seed := 42,
                                          bad_rows := 'error') AS TABLE
SELECT * FROM emb__ranked_rows(source, model, (
    SELECT __emb_r.value
    FROM (SELECT emb__rank_cka(__emb_tbl, __emb_names, __emb_types, __emb_item_col, __emb_model_col,
                               __emb_vector_col, __emb_group_col, __emb_b, __emb_x, __emb_g, __emb_v, __emb_rows,
                               reference::VARCHAR, emb__level_argument(level),
                               emb__whole_argument(replicates, 'replicates'),
                               emb__whole_argument(seed, 'seed')) AS __emb_r
          FROM emb__model_item_groups(emb__checked_names(emb__checked_source(source, 'emb_rank_cka', model,
                                                                             emb__outputs_emb_rank_cka()),
                                                         'emb_rank_cka',
                                                         [['item', item], ['vector', vector], ['group', "group"]]),
                                      item, model, vector, "group", skip := emb__skip_rows(bad_rows)))
    WHERE emb__udf_ok(__emb_r)), vector := vector, skip := emb__skip_asked(bad_rows));
