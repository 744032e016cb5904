-- Simultaneous rank confidence sets of K models.  Loaded by embsql.register(con) after the UDF in
-- udfs/model_ranking.py, which gets every model's per-group sums in one call.

-- @function emb_rank_models(source, "group", vector, model, statistic := 'r2', level := 0.95, replicates := 2000, seed := 42, bad_rows := 'error')
-- Rank K models by a statistic with simultaneous confidence sets for their ranks: one row per
-- model (first, under the model column's own name).
-- @param source the table to read: a table or view name, or a file DuckDB reads
-- @param "group" the group column (GROUP is a keyword: by name it is written `"group" := 'topic'`); models are paired by group label
-- @param vector the vector column; vectors are scaled to unit length (models may differ in dimension)
-- @param model the model column: the models ranked (two or more)
-- @param statistic the statistic, as for `emb_jackknife`
-- @param level the simultaneous confidence level, between 0 and 1
-- @param replicates the number of joint bootstrap replicates, a whole number from 2 to 1,000,000
-- @param seed the random seed, a whole number (0 or more)
-- @param bad_rows `'error'` (the default): a NULL, zero or non-finite vector is an error naming its group and model; `'skip'`: those rows are left out and counted in the `skipped_` columns
-- @column <model> the model, under the model column's own name
-- @column statistic the statistic asked for
-- @column estimate its value on all groups
-- @column ci_low the lower end of the model's own calibrated interval (as `emb_bootstrap`)
-- @column ci_high its upper end
-- @column rank the rank by the estimate (1 = largest; equal estimates share the smaller rank)
-- @column rank_low the lowest rank the model may have, simultaneously with all the others
-- @column rank_high the highest
-- @column top whether the model is in the confidence set for the best (rank_low = 1)
-- @column level the level asked for
-- @column calibrated true for `r2` from 30 groups on, where validation/rank_sets.py measured the family-wise coverage ({{figure rank_sets.coverage range}}, validation/calibration.json); false otherwise
-- @column skipped_null rows left out for a NULL vector (or a NULL element), per model (only with `bad_rows := 'skip'`)
-- @column skipped_zero rows left out for a zero vector (only with `bad_rows := 'skip'`)
-- @column skipped_nonfinite rows left out for a NaN or infinite coordinate (only with `bad_rows := 'skip'`)
-- @notes
-- All K true ranks lie in their sets [rank_low, rank_high] together with probability `level`;
-- the set of a model tied with others in truth holds every rank of the tie (no pair is ordered
-- falsely).  The method is that of Mogstad, Romano, Shaikh and Wilhelm ("Inference for Ranks",
-- 2024; the R package csranks): rank_low = 1 + the models shown better, rank_high = K − the
-- models shown worse, where "shown better" comes from simultaneous intervals for every pairwise
-- difference with their step-down.  The differences are resampled jointly, as `emb_compare_structure`
-- does for a pair: the same resamples of groups for all K models, each difference studentized by
-- its own jackknife SE in the resample; c is the `level` quantile of the largest studentized
-- difference over the pairs not yet shown ordered.  Pairing the models on the same groups keeps
-- their shared variation out of the differences: in simulation (validation/rank_sets.py) the paired
-- sets resolved 74.8% of truly ordered pairs where the same method fed with independent resamples
-- of each model resolved 43.3% (3 models, 30 groups, gaps of about three SEs).  The Python face is
-- `embsql.rank_models`; it
-- also ranks the models of a per-query retrieval evaluation by one of its metrics (Python only).
-- @example
-- SELECT * FROM emb_rank_models('many', 'topic', 'embedding', model := 'model', replicates := 999);
CREATE OR REPLACE TEMP MACRO emb_rank_models(source, "group", vector, model, statistic := 'r2', level := 0.95,
                                             replicates := 2000, seed := 42, bad_rows := 'error') AS TABLE
WITH per_group AS (
    SELECT * FROM emb__group_vectors(
        emb__checked_source(source, 'emb_rank_models', model, emb__outputs_emb_rank_models()),
        "group", vector, model, skip := emb__skip_rows(bad_rows))
),
ranked AS (
    SELECT unnest(__emb_r.value) AS __emb_x
    FROM (SELECT emb__rank_models(list(__emb_b::VARCHAR), list(__emb_g::VARCHAR), list(__emb_n), list(__emb_ssw),
                                  list(__emb_s), statistic, emb__whole_argument(replicates, 'replicates'),
                                  emb__whole_argument(seed, 'seed'), emb__level_argument(level)) AS __emb_r
          FROM per_group)
    WHERE emb__udf_ok(__emb_r)
),
models AS (SELECT DISTINCT COLUMNS(lambda c: c IN (model, '__emb_all')), __emb_b FROM per_group)
SELECT COLUMNS(lambda c: NOT starts_with(c, '__emb_')
                         AND (emb__skip_asked(bad_rows) OR c NOT IN ('skipped_null', 'skipped_zero', 'skipped_nonfinite')))
FROM (SELECT m.* EXCLUDE (__emb_all), r.__emb_x.statistic AS statistic, r.__emb_x.estimate AS estimate,
             r.__emb_x.ci_low AS ci_low, r.__emb_x.ci_high AS ci_high, r.__emb_x.rank AS rank,
             r.__emb_x.rank_low AS rank_low, r.__emb_x.rank_high AS rank_high, r.__emb_x.top AS top,
             r.__emb_x.level AS level, r.__emb_x.calibrated AS calibrated
      FROM ranked r JOIN models m ON m.__emb_b = r.__emb_x.model) m
LEFT JOIN emb__skipped(source, "group", vector, model, emb__skip_rows(bad_rows)) s
    ON m.__emb_b IS NOT DISTINCT FROM s.__emb_sb
ORDER BY m.__emb_b;
