-- Cluster jackknife, cluster bootstrap and paired comparison.  Loaded by
-- embsql.register(con) after the UDFs in udfs/resampling.py.  The jackknife and bootstrap take
-- per-group sufficient statistics (n_g and the vector sum s_g), never the items.

CREATE OR REPLACE TEMP MACRO emb__group_vectors(source, "group", vector, model, skip := false) AS TABLE
SELECT COLUMNS(lambda c: c IN (model, '__emb_all')), __emb_b, __emb_g,
       max(__emb_n) AS __emb_n, max(__emb_ssw) AS __emb_ssw, list(__emb_s ORDER BY __emb_k) AS __emb_s
FROM emb__group_sums(source, "group", vector, model, skip := skip)
GROUP BY ALL;

-- level := for emb_bootstrap: a number (its range, 0 < level < 1, is checked by the UDF under the one
-- rule of embsql/core/arguments.py); NULL or text is an embsql: error naming the argument.
CREATE OR REPLACE TEMP MACRO emb__level_argument(value) AS
    CASE WHEN value IS NOT NULL AND (typeof(value) IN ('TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'HUGEINT', 'FLOAT',
                                                      'DOUBLE', 'UTINYINT', 'USMALLINT', 'UINTEGER', 'UBIGINT')
                                     OR typeof(value) LIKE 'DECIMAL%')
         THEN try_cast(value::VARCHAR AS DOUBLE)
         ELSE error(format('embsql: [argument.level] level must be a number between 0 and 1, not {}',
                           coalesce(CASE WHEN typeof(value) = 'VARCHAR' THEN '''' || value::VARCHAR || ''''
                                         ELSE value::VARCHAR END, 'NULL')))
    END;

CREATE OR REPLACE TEMP MACRO emb__resampled(source, "group", vector, model, stat, replicates, seed, level, kind,
                                           skip := false) AS TABLE
SELECT COLUMNS(lambda c: c IN (model, '__emb_all')), __emb_b,
       CASE kind
           WHEN 'jackknife' THEN emb__jackknife(list(__emb_g::VARCHAR), list(__emb_n), list(__emb_ssw), list(__emb_s),
                                                stat)
           ELSE emb__bootstrap(list(__emb_g::VARCHAR), list(__emb_n), list(__emb_ssw), list(__emb_s), stat,
                               emb__whole_argument(replicates, 'replicates'), emb__whole_argument(seed, 'seed'),
                               emb__level_argument(level))
       END AS __emb_result
FROM emb__group_vectors(source, "group", vector, model, skip := skip)
GROUP BY ALL;

-- the UDF's result checked (in a filter), its value as __emb_r
CREATE OR REPLACE TEMP MACRO emb__resampled_checked(source, "group", vector, model, stat, replicates, seed, level,
                                                   kind, skip := false) AS TABLE
SELECT * EXCLUDE (__emb_result), __emb_result.value AS __emb_r
FROM emb__resampled(source, "group", vector, model, stat, replicates, seed, level, kind, skip := skip)
WHERE emb__udf_ok(__emb_result)
ORDER BY __emb_b;

-- @function emb_jackknife(source, "group", vector, model := NULL, statistic := 'r2', bad_rows := 'error')
-- Cluster jackknife: leave one group out, recompute the statistic, and
-- SE = sqrt((G − 1)/G Σ_g (θ_(−g) − mean)²).  One row, or one row per value of the model column
-- (first, under its own name).
-- @param source the table to read: a table or view name, or a file DuckDB reads
-- @param "group" the group column (GROUP is a keyword: by name it is written `"group" := 'topic'`)
-- @param vector the vector column; vectors are scaled to unit length
-- @param model the model column: one row per value of it
-- @param statistic the statistic: `r2`, `f`, `v`, `w_bar`, `icc` (the trace ICC) or `r2_adj` (adjusted R² = 1 − MS_W/MS_T, about 0 with no group structure)
-- @param bad_rows `'error'` (the default): a NULL, zero or non-finite vector is an error naming its group and model; `'skip'`: those rows are left out and counted in the `skipped_` columns
-- @column <model> the model, under the model column's own name (only with `model`)
-- @column statistic the statistic asked for
-- @column estimate its value on all groups
-- @column se the jackknife SE
-- @column groups G
-- @column sizes `'random'` (the plain jackknife) or `'fixed'` (the stratified one, for group sizes fixed by the design)
-- @column skipped_null rows left out for a NULL vector (or a NULL element), per model (only with `bad_rows := 'skip'`)
-- @column skipped_zero rows left out for a zero vector (only with `bad_rows := 'skip'`)
-- @column skipped_nonfinite rows left out for a NaN or infinite coordinate (only with `bad_rows := 'skip'`)
-- @notes
-- Every replicate comes from the per-group sums in closed form, so all G replicates cost about one
-- pass over the data.  Resampling is by group, never by item: items of a group are alike, and
-- treating them as independent would make the interval too narrow.  Needs at least 3 groups; a
-- replicate in which the statistic is undefined is an error that says how many there were.  For an
-- interval use `emb_bootstrap`, whose `ci_low, ci_high` are built from these replicates.  The
-- `many` table of the example has twelve groups of twelve items and two models (m0, m1) embedding
-- the same 144 items.
-- @example
-- SELECT * FROM emb_jackknife('many', 'topic', 'embedding', statistic := 'f', model := 'model');
CREATE OR REPLACE TEMP MACRO emb_jackknife(source, "group", vector, model := NULL, statistic := 'r2', bad_rows := 'error') AS TABLE
SELECT COLUMNS(lambda c: NOT starts_with(c, '__emb_')
                         AND (emb__skip_asked(bad_rows) OR c NOT IN ('skipped_null', 'skipped_zero', 'skipped_nonfinite')))
FROM (SELECT r.* EXCLUDE (__emb_all, __emb_r), statistic AS statistic, r.__emb_r.estimate AS estimate,
             r.__emb_r.se AS se, r.__emb_r.groups AS groups, r.__emb_r.sizes AS sizes
      FROM emb__resampled_checked(
               emb__checked_names(emb__checked_source(source, 'emb_jackknife', model, emb__outputs_emb_jackknife()), 'emb_jackknife', [['group', "group"], ['vector', vector]]),
               "group", vector, model, statistic, 0, 0, 0.0, 'jackknife', skip := emb__skip_rows(bad_rows)) r) r
LEFT JOIN emb__skipped(source, "group", vector, model, emb__skip_rows(bad_rows)) s
    ON r.__emb_b IS NOT DISTINCT FROM s.__emb_sb
ORDER BY r.__emb_b;

-- @function emb_bootstrap(source, "group", vector, model := NULL, statistic := 'r2', replicates := 2000, seed := 42, level := 0.95, bad_rows := 'error')
-- Cluster bootstrap (groups drawn with replacement; a group drawn twice counts twice) and a
-- calibrated interval.  One row, or one row per value of the model column (first, under its own
-- name).
-- @param source the table to read: a table or view name, or a file DuckDB reads
-- @param "group" the group column (GROUP is a keyword: by name it is written `"group" := 'topic'`)
-- @param vector the vector column; vectors are scaled to unit length
-- @param model the model column: one row per value of it
-- @param statistic the statistic, as for `emb_jackknife`
-- @param replicates the number of bootstrap replicates, a whole number from 2 to 1,000,000
-- @param seed the random seed, a whole number (0 or more): the same seed gives the same draws on any machine
-- @param level the confidence level of the interval, between 0 and 1
-- @param bad_rows `'error'` (the default): a NULL, zero or non-finite vector is an error naming its group and model; `'skip'`: those rows are left out and counted in the `skipped_` columns
-- @column <model> the model, under the model column's own name (only with `model`)
-- @column statistic the statistic asked for
-- @column estimate its plain value on all groups
-- @column se the standard deviation of the bootstrap replicates
-- @column ci_low the lower end of the calibrated `level` interval for the value with many more groups like these
-- @column ci_high its upper end
-- @column level as asked
-- @column replicates as asked
-- @column groups G
-- @column estimate_bc the jackknife bias-corrected estimate the interval is built around, computed on the figure's scale h and mapped back: h⁻¹(G·h(θ) − (G − 1)·mean_g h(θ₋g)), h = logit for `r2`, `w_bar` and `v`, log for `f`, the statistic itself for `icc` and `r2_adj` (not G·θ − (G − 1)·mean(θ₋g) on the statistic)
-- @column dropped bootstrap replicates left out because the statistic was undefined in them (e.g. F when only groups of one were drawn)
-- @column calibrated true from 30 groups on for `r2`, `f` and `w_bar`, where the coverage was measured at 95 ± 2.5%; false below 30 groups, and for `v`, `icc` and `r2_adj`, whose coverage was not simulated
-- @column sizes `'random'` or `'fixed'` (the stratified jackknife), as for `emb_jackknife`
-- @column skipped_null rows left out for a NULL vector (or a NULL element), per model (only with `bad_rows := 'skip'`)
-- @column skipped_zero rows left out for a zero vector (only with `bad_rows := 'skip'`)
-- @column skipped_nonfinite rows left out for a NaN or infinite coordinate (only with `bad_rows := 'skip'`)
-- @notes
-- The interval is estimate_bc ± t_{G−1} × jackknife SE, built on the logit scale for `r2`, `w_bar`
-- and `v` and on the log scale for `f` (then mapped back, so it stays inside the statistic's range),
-- on the statistic itself for `icc` and `r2_adj`.  It was chosen by simulation
-- (validation/validity_intervals.py, table in validation/validity_intervals.txt): against its value with many
-- groups R² is biased by about −R²(1−R²)/G, and a resample that repeats groups shifts the draws by
-- about as much again, so the bootstrap percentile interval misses on one side (R² with equal
-- groups and equal noise: 0.1% coverage at 10 groups, 6% at 30, 51% at 100).  The bootstrap-t and
-- basic bootstrap intervals failed for F too (40–65% with equal groups, in screening runs).  The
-- jackknife t interval covered {{figure intervals.model.G30 range}} at 30 groups (1000 data sets per design) and
-- {{figure intervals.model.G100 range}} at 100, in balanced and unbalanced designs with equal or unequal noise, and
-- {{figure intervals.model.G10 range}} at 10 groups;
-- `calibrated` is false below 30 groups all the same, as for `emb_compare_structure`.  Up to 10% of
-- replicates may be dropped; beyond that the call fails and says how many were undefined.  The
-- same seed gives the same draws on any machine: groups are put in the order of their labels as
-- text before drawing.  Valid when the groups can be seen as independent draws from a larger
-- population of groups.
--
-- Group sizes: when the sizes come with the groups (topics of whatever size they happen to have),
-- the plain jackknife is right; when every sample has the same sizes by design (so many groups of
-- 2, of 5, of 20), a replicate that leaves out a large group moves more than one that leaves out a
-- small group, and that movement is not sampling variation: the plain jackknife overstated the SE
-- up to 7 times there (coverage 99–100%).  Such designs get the stratified jackknife instead:
-- deviations from the mean of the groups of the same size, with Welch–Satterthwaite degrees of
-- freedom (coverage {{figure intervals.fixed_sizes.G30 range}} at 30 groups, validation/README.md).  The column `sizes` says which was
-- used.  The Python faces take `sizes='auto'` (default), `'fixed'` or `'random'`; `'auto'` takes
-- the sizes as fixed when every distinct size occurs equally often and at least 5 times (equal
-- groups need no strata: both give the same interval), and as random otherwise.  The difference of
-- F between models with fixed sizes covered 90.8% and is flagged `calibrated = false`.
-- @example
-- SELECT * FROM emb_bootstrap('many', 'topic', 'embedding', replicates := 999, seed := 7, model := 'model');
CREATE OR REPLACE TEMP MACRO emb_bootstrap(source, "group", vector, model := NULL, statistic := 'r2',
                                           replicates := 2000, seed := 42, level := 0.95,
                                           bad_rows := 'error') AS TABLE
SELECT COLUMNS(lambda c: NOT starts_with(c, '__emb_')
                         AND (emb__skip_asked(bad_rows) OR c NOT IN ('skipped_null', 'skipped_zero', 'skipped_nonfinite')))
FROM (SELECT r.* EXCLUDE (__emb_all, __emb_r), statistic AS statistic, r.__emb_r.estimate AS estimate,
             r.__emb_r.se AS se, r.__emb_r.ci_low AS ci_low, r.__emb_r.ci_high AS ci_high, level::DOUBLE AS level,
             replicates AS replicates, r.__emb_r.groups AS groups, r.__emb_r.estimate_bc AS estimate_bc,
             r.__emb_r.dropped AS dropped, r.__emb_r.calibrated AS calibrated, r.__emb_r.sizes AS sizes
      FROM emb__resampled_checked(
               emb__checked_names(emb__checked_source(source, 'emb_bootstrap', model, emb__outputs_emb_bootstrap()), 'emb_bootstrap', [['group', "group"], ['vector', vector]]),
               "group", vector, model, statistic, replicates, seed, level, 'bootstrap',
               skip := emb__skip_rows(bad_rows)) r) r
LEFT JOIN emb__skipped(source, "group", vector, model, emb__skip_rows(bad_rows)) s
    ON r.__emb_b IS NOT DISTINCT FROM s.__emb_sb
ORDER BY r.__emb_b;

-- @function emb_compare_structure(source, "group", vector, model, item, statistic := 'r2', replicates := 2000, seed := 42, level := 0.95, common := false, bad_rows := 'error')
-- Paired comparison of models that embedded the same items: one row per pair of models, with the
-- difference of the statistic, its paired jackknife SE and a studentized paired bootstrap interval.
-- @param source the table to read: a table or view name, or a file DuckDB reads
-- @param "group" the group column (GROUP is a keyword: by name it is written `"group" := 'topic'`)
-- @param vector the vector column; vectors are scaled to unit length (models may differ in dimension)
-- @param model the model column: the models compared
-- @param item the item column: which rows of different models embed the same item
-- @param statistic the statistic, as for `emb_jackknife`
-- @param replicates the number of bootstrap replicates, a whole number from 2 to 1,000,000
-- @param seed the random seed, a whole number (0 or more)
-- @param level the confidence level of the interval, between 0 and 1
-- @param common use only the items every model has (instead of refusing items one model lacks)
-- @param bad_rows `'error'` (the default): a NULL, zero or non-finite vector is an error naming its model and item; `'skip'`: those rows are left out, which leaves their items missing in that model (so `common := true` compares the others on the items every model kept)
-- @column model_a the first model of the pair (in the order of the model names as text)
-- @column model_b the second
-- @column estimate_a the statistic of model_a
-- @column estimate_b the statistic of model_b
-- @column difference estimate_a − estimate_b
-- @column se the paired jackknife SE (the same group left out of both models in each replicate)
-- @column ci_low the lower end of the studentized paired bootstrap interval
-- @column ci_high its upper end
-- @column items the items either model has (after `common`)
-- @column same_items whether the two models have exactly the same items
-- @column shared_items the items both models have
-- @column dropped bootstrap replicates left out because the difference was undefined in them
-- @column calibrated true from 30 groups on for `r2`, `f` and `w_bar` (coverage measured at 95 ± 2.5%); false below, and for the other statistics (not simulated)
-- @column sizes `'random'` or `'fixed'`, as for `emb_jackknife`
-- @notes
-- Models are paired by group label: the same groups are left out (jackknife) and drawn (bootstrap)
-- for both.  That is enough because groups are the sampled units; the items inside a group may
-- differ between the models (in simulation the interval covered as well with a quarter of one
-- model's items missing as with the same items; see below).  An item both models have must be in
-- the same group for both, and every group needs items from both models; with `common := true`
-- only the items every model has are used.  Pairing removes the variation the models share, so it
-- detects smaller differences than two separate intervals.
--
-- The interval is the studentized (bootstrap-t) cluster bootstrap: in each resample the difference
-- d* and its own jackknife SE* over the drawn groups give t* = (d* − d)/SE*; the interval is
-- d − q_{1−α/2}(t*)·se to d − q_{α/2}(t*)·se.  From 30 groups on it covered {{figure intervals.difference.from30 range}} in every
-- design of validation/validity_intervals.txt; at 10 groups {{figure intervals.difference.G10 range}} (a difference of F with equal
-- groups was the worst), hence `calibrated` = false there.  The jackknife t interval of a
-- difference undercovered a difference of F with unequal group sizes and noise (90% at 30 groups,
-- 80% at 10), and the percentile interval did too (89.5%, 75%).  With a quarter of one model's
-- items missing (6 of 8 per group) the coverage was 93–94% at 30 groups and 94.5–95.5% at 100, as
-- with the same items.
-- @example
-- SELECT model_a, model_b, difference, se, ci_low, ci_high, same_items, shared_items, calibrated
-- FROM emb_compare_structure('many', 'topic', 'embedding', 'model', 'item', replicates := 999);
CREATE OR REPLACE TEMP MACRO emb_compare_structure(source, "group", vector, model, item, statistic := 'r2', replicates := 2000,
                                         seed := 42, level := 0.95, common := false, bad_rows := 'error') AS TABLE
SELECT unnest(__emb_r.value, recursive := true)
FROM (SELECT emb__compare(list(__emb_b::VARCHAR), list(__emb_x::VARCHAR), list(__emb_g::VARCHAR),
                          list(__emb_v::DOUBLE[]), vector, statistic, replicates, seed, level, common) AS __emb_r
      FROM emb__rows(emb__checked_names(emb__checked_source(source, 'emb_compare_structure', model, []::VARCHAR[]), 'emb_compare_structure', [['group', "group"], ['vector', vector], ['item', item]]), "group", vector, model, item,
                    skip := emb__skip_rows(bad_rows)))
WHERE emb__udf_ok(__emb_r);
