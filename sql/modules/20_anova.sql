-- ---------------------------------------------------------------------------
-- The decomposition, from the stable group sums of emb__group_blocks (10_group_sums.sql):
--   SS_W = sum_g n_g W_g,   SS_B = sum_g n_g ||mu_g - mu||^2 (group means about the overall mean),
--   SS_T = SS_W + SS_B,     R2 = SS_B / SS_T,   F = (SS_B / (G - 1)) / (SS_W / (n - G)).
-- No sum of squares is a difference of two large numbers, so near-identical vectors keep their
-- digits; below float64 resolution (SS / n < eps) the figures are refused, not printed.
-- Every check is a filter on the result (never pruned, whatever columns a query reads), and an
-- empty source is an error unless empty_ok (emb_icc hands in a source that is empty on purpose).
-- ---------------------------------------------------------------------------
CREATE OR REPLACE TEMP MACRO emb__decomposition(source, "group", vector, model, empty_ok, skip := false,
                                                item := NULL) AS TABLE
-- one pass over the blocks, unnested on the fly (nothing of size G * d is held)
WITH per_k AS (
    SELECT * FROM (
        SELECT COLUMNS(lambda c: c IN (model, '__emb_all')), __emb_b, __emb_n, __emb_ssw,
               __emb_j + generate_subscripts(__emb_sj, 1) AS __emb_k, unnest(__emb_sj) AS __emb_s,
               unnest(__emb_muj) AS __emb_mu
        FROM emb__group_blocks(source, "group", vector, model, true, skip := skip, item := item))
    WHERE __emb_s IS NOT NULL
),
stats AS (
    -- n_g and n_g W_g are on each of a group's rows, so they are taken from its row k = 1; a plain
    -- sum for SS_B, whose terms are non-negative (no cancellation); ||mu||^2 = sum_k mu_k^2, where
    -- each mu_k is on the row of every group
    SELECT COLUMNS(lambda c: c IN (model, '__emb_all')), __emb_b,
        sum(__emb_n) FILTER (__emb_k = 1)::BIGINT AS __emb_n,
        count(*) FILTER (__emb_k = 1) AS __emb_groups,
        fsum(__emb_ssw) FILTER (__emb_k = 1) AS __emb_ss_w,
        sum(__emb_n * pow(__emb_s / __emb_n - __emb_mu, 2)) AS __emb_ss_b,
        sqrt(sum(__emb_mu * __emb_mu) / count(*) FILTER (__emb_k = 1)) AS __emb_mrl
    FROM per_k GROUP BY ALL
),
with_total AS (
    SELECT *, __emb_ss_w + __emb_ss_b AS __emb_ss_t FROM stats
)
SELECT
    s.* EXCLUDE (__emb_n, __emb_groups, __emb_ss_t, __emb_ss_w, __emb_ss_b, __emb_mrl),
    s.__emb_n AS n,
    s.__emb_groups AS groups,
    s.__emb_ss_t AS ss_t,
    s.__emb_ss_w AS ss_w,
    s.__emb_ss_b AS ss_b,
    s.__emb_ss_b / s.__emb_ss_t AS r2,
    (s.__emb_groups - 1.0) / (s.__emb_n - 1.0) AS r2_null,
    (s.__emb_ss_b / (s.__emb_groups - 1.0)) / (s.__emb_ss_w / (s.__emb_n - s.__emb_groups)) AS f,
    s.__emb_ss_t / s.__emb_n AS v,
    s.__emb_mrl AS mean_resultant_length,
    s.__emb_ss_w / s.__emb_n AS w_bar
-- one row with NULLs when there are no stats (read once, so nothing is computed twice)
FROM (SELECT 1) LEFT JOIN with_total s ON true
WHERE CASE
    WHEN s.__emb_n IS NULL AND NOT empty_ok THEN emb__no_rows_error(source)
    WHEN s.__emb_n IS NULL THEN false
    WHEN s.__emb_groups < 2 THEN emb__fail_design_one_group(format('group column "{}"', "group"),
        CASE WHEN s.__emb_b IS NULL THEN '' ELSE format(' for by value {}', s.__emb_b) END, 'the decomposition')
    WHEN s.__emb_n = s.__emb_groups THEN emb__fail_design_no_residual_df(format(' in "{}"', "group"), 'row',
        s.__emb_n, CASE WHEN s.__emb_b IS NULL THEN '' ELSE format(', by value {}', s.__emb_b) END, 'SS_W and F')

    WHEN NOT (s.__emb_ss_t >= s.__emb_n * emb__resolution2()) THEN
        emb__precision_error('the vectors', s.__emb_b, s.__emb_ss_t, s.__emb_n, 'R² and F')
    WHEN NOT (s.__emb_ss_w >= s.__emb_n * emb__resolution2()) THEN
        emb__precision_error('the vectors within each group', s.__emb_b, s.__emb_ss_w, s.__emb_n, 'F')
    ELSE true
END
ORDER BY s.__emb_b;

CREATE OR REPLACE TEMP MACRO emb__anova(source, "group", vector, model, skip := false, item := NULL) AS TABLE
    FROM emb__decomposition(source, "group", vector, model, false, skip := skip, item := item);

-- @function emb_anova(source, "group", vector, model := NULL, item := NULL, bad_rows := 'error')
-- The sum-of-squares decomposition of the unit vectors z_i by group.  One row, or one row per
-- value of the model column (which comes first, under its own name).
-- @param source the table to read: a table or view name, or a file DuckDB reads (`'data.parquet'`)
-- @param "group" the group column (GROUP is a keyword: by name it is written `"group" := 'topic'`)
-- @param vector the vector column (`FLOAT[]`, `DOUBLE[]`, `FLOAT[d]`, `DOUBLE[d]`); vectors are scaled to unit length
-- @param model the model column: one row per value of it (NULL: one row for the whole table)
-- @param item an item column (NULL: none): an unusable vector's error then names its item
-- @param bad_rows `'error'` (the default): a NULL, zero or non-finite vector is an error naming its row (counted from 1), model, item and group; `'skip'`: those rows are left out and counted in the `skipped_` columns
-- @column <model> the model, under the model column's own name (only with `model`)
-- @column n number of vectors
-- @column groups number of groups G
-- @column ss_t total sum of squares Σ_i ‖z_i − μ‖² = n (1 − ‖μ‖²), computed as SS_W + SS_B
-- @column ss_w within-group sum of squares Σ_g Σ_{i in g} ‖z_i − μ_g‖² = Σ_g n_g (1 − ‖μ_g‖²)
-- @column ss_b between-group sum of squares Σ_g n_g ‖μ_g − μ‖²
-- @column r2 SS_B / SS_T: similarity-invariant (exactly unchanged by rotation, uniform scaling and extra dimensions of the raw vectors; only approximately by a shared direction or a translation added before normalisation), biased upward
-- @column r2_null (G − 1)/(n − 1), roughly E[R²] with no group structure
-- @column f pseudo-F = (SS_B/(G−1)) / (SS_W/(n−G)) (PERMANOVA's statistic)
-- @column v spread 1 − ‖μ‖² = SS_T/n: descriptive, *not* comparable across models
-- @column mean_resultant_length ‖μ‖
-- @column w_bar SS_W / n
-- @column skipped_null rows left out for a NULL vector (or a NULL element), per model (only with `bad_rows := 'skip'`)
-- @column skipped_zero rows left out for a zero vector (only with `bad_rows := 'skip'`)
-- @column skipped_nonfinite rows left out for a NaN or infinite coordinate (only with `bad_rows := 'skip'`)
-- @notes
-- Errors: a NULL, zero-length, NaN or infinite vector (or one with NULL elements); vectors of
-- different lengths within one model; a NULL or NaN group label; a missing column; a vector
-- column of another type; a source with no rows; one group only; n = G (no within-group degrees of
-- freedom); vectors identical to within floating-point precision, overall (R² and F undefined) or
-- within each group (F undefined); see *Precision* above.
--
-- In the example, m2 is the exact lift of m1 with λ = 1/2: R² and F are unchanged and V is halved.
-- @example
-- SELECT * FROM emb_anova('ex', 'topic', 'embedding', model := 'model');
-- -- model  n  groups  ss_t   ss_w   ss_b   r2      r2_null  f    v      mean_resultant_length  w_bar
-- -- m1     4  2       2.2    0.4    1.8    0.8182  0.3333   9.0  0.55   0.6708                 0.1
-- -- m2     4  2       1.1    0.2    0.9    0.8182  0.3333   9.0  0.275  0.8515                 0.05
CREATE OR REPLACE TEMP MACRO emb_anova(source, "group", vector, model := NULL, item := NULL,
                                         bad_rows := 'error') AS TABLE
SELECT COLUMNS(lambda c: NOT starts_with(c, '__emb_')
                         AND (emb__skip_asked(bad_rows) OR c NOT IN ('skipped_null', 'skipped_zero', 'skipped_nonfinite')))
FROM emb__anova(
         emb__checked_names(emb__checked_source(source, 'emb_anova', model, emb__outputs_emb_anova()), 'emb_anova', [['group', "group"], ['vector', vector], ['item', item]]),
         "group", vector, model, skip := emb__skip_rows(bad_rows), item := item) a
LEFT JOIN emb__skipped(source, "group", vector, model, emb__skip_rows(bad_rows)) s
    ON a.__emb_b IS NOT DISTINCT FROM s.__emb_sb
ORDER BY a.__emb_b;

-- @function emb_groups(source, "group", vector, model := NULL, item := NULL, bad_rows := 'error')
-- Per group: its size, its spread W_g about its centroid and the size-corrected W̃_g.  One row per
-- group, ordered by group (and by model first, with `model`).  W_g keeps its digits for
-- near-duplicate vectors (see *Precision* above): identical vectors give W_g = 0.
-- @param source the table to read: a table or view name, or a file DuckDB reads (`'data.parquet'`)
-- @param "group" the group column (GROUP is a keyword: by name it is written `"group" := 'topic'`)
-- @param vector the vector column (`FLOAT[]`, `DOUBLE[]`, `FLOAT[d]`, `DOUBLE[d]`); vectors are scaled to unit length
-- @param model the model column: the figures per value of it, which comes first under its own name (NULL: one model)
-- @param item an item column (NULL: none): an unusable vector's error then names its item
-- @param bad_rows `'error'` (the default): a NULL, zero or non-finite vector is an error naming its row (counted from 1), model, item and group; `'skip'`: those rows are left out and counted in the `skipped_` columns
-- @column <model> the model, under the model column's own name (only with `model`)
-- @column group the group label
-- @column n_g number of vectors in the group
-- @column w W_g = (1/n_g) Σ_i ‖z_i − μ_g‖² = 1 − ‖μ_g‖², the mean squared distance to the group centroid
-- @column w_tilde W̃_g = n_g/(n_g − 1) W_g, size-corrected; NULL for a singleton group
-- @column resolved false where the group's vectors are identical to within floating-point precision (root-mean-square spread above 0 but below 1.5e-8): W_g is then rounding noise, not a figure
-- @column skipped_null rows left out for a NULL vector (or a NULL element), per model (only with `bad_rows := 'skip'`)
-- @column skipped_zero rows left out for a zero vector (only with `bad_rows := 'skip'`)
-- @column skipped_nonfinite rows left out for a NaN or infinite coordinate (only with `bad_rows := 'skip'`)
-- @notes
-- Errors: those of `emb_anova` that concern the rows (vectors, labels, columns, an empty source).
-- @example
-- SELECT * FROM emb_groups('ex', 'topic', 'embedding', model := 'model');
-- -- model  group  n_g  w    w_tilde  resolved
-- -- m1     A      2    0.1  0.2      true
CREATE OR REPLACE TEMP MACRO emb_groups(source, "group", vector, model := NULL, item := NULL,
                                         bad_rows := 'error') AS TABLE
SELECT COLUMNS(lambda c: NOT starts_with(c, '__emb_')
                         AND (emb__skip_asked(bad_rows) OR c NOT IN ('skipped_null', 'skipped_zero', 'skipped_nonfinite')))
FROM emb__groups(
         emb__checked_names(emb__checked_source(source, 'emb_groups', model, emb__outputs_emb_groups()), 'emb_groups', [['group', "group"], ['vector', vector], ['item', item]]),
         "group", vector, model, skip := emb__skip_rows(bad_rows), item := item) g
LEFT JOIN emb__skipped(source, "group", vector, model, emb__skip_rows(bad_rows)) s
    ON g.__emb_b IS NOT DISTINCT FROM s.__emb_sb
ORDER BY g.__emb_b, g."group";
