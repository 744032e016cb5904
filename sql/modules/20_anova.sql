-- ---------------------------------------------------------------------------
-- The decomposition, from the stable group sums of emb__group_blocks (10_group_sums.sql):
--   SS_W = sum_g n_g W_g,   SS_B = sum_g n_g ||mu_g - mu||^2 (group means about the overall mean),
--   SS_T = SS_W + SS_B,     R2 = SS_B / SS_T,   F = (SS_B / (G - 1)) / (SS_W / (n - G)).
-- No sum of squares is a difference of two large numbers, so near-identical vectors keep their
-- digits; below float64 resolution (SS / n < eps) the figures are refused, not printed.
-- Every check is a filter on the result (never pruned, whatever columns a query reads), and an
-- empty source is an error unless empty_ok (emb_icc hands in a source that is empty on purpose).
-- ---------------------------------------------------------------------------
CREATE OR REPLACE TEMP MACRO emb__decomposition(tbl, group_col, vector_col, by_col, empty_ok) AS TABLE
-- one pass over the blocks, unnested on the fly (nothing of size G * d is held)
WITH per_k AS (
    SELECT * FROM (
        SELECT COLUMNS(lambda c: c IN (by_col, '__emb_all')), __emb_b, __emb_n, __emb_ssw,
               __emb_j + generate_subscripts(__emb_sj, 1) AS __emb_k, unnest(__emb_sj) AS __emb_s,
               unnest(__emb_muj) AS __emb_mu
        FROM emb__group_blocks(tbl, group_col, vector_col, by_col, true))
    WHERE __emb_s IS NOT NULL
),
stats AS (
    -- n_g and n_g W_g are on each of a group's rows, so they are taken from its row k = 1; a plain
    -- sum for SS_B, whose terms are non-negative (no cancellation); ||mu||^2 = sum_k mu_k^2, where
    -- each mu_k is on the row of every group
    SELECT COLUMNS(lambda c: c IN (by_col, '__emb_all')), __emb_b,
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
    WHEN s.__emb_n IS NULL AND NOT empty_ok THEN emb__no_rows_error(tbl)
    WHEN s.__emb_n IS NULL THEN false
    WHEN s.__emb_groups < 2 THEN emb__fail_design_one_group(format('group column "{}"', group_col),
        CASE WHEN s.__emb_b IS NULL THEN '' ELSE format(' for by value {}', s.__emb_b) END, 'the decomposition')
    WHEN s.__emb_n = s.__emb_groups THEN emb__fail_design_no_residual_df(format(' in "{}"', group_col), 'row',
        s.__emb_n, CASE WHEN s.__emb_b IS NULL THEN '' ELSE format(', by value {}', s.__emb_b) END, 'SS_W and F')

    WHEN NOT (s.__emb_ss_t >= s.__emb_n * emb__resolution2()) THEN
        emb__precision_error('the vectors', s.__emb_b, s.__emb_ss_t, s.__emb_n, 'R² and F')
    WHEN NOT (s.__emb_ss_w >= s.__emb_n * emb__resolution2()) THEN
        emb__precision_error('the vectors within each group', s.__emb_b, s.__emb_ss_w, s.__emb_n, 'F')
    ELSE true
END
ORDER BY s.__emb_b;

CREATE OR REPLACE TEMP MACRO emb__anova(tbl, group_col, vector_col, by_col) AS TABLE
    FROM emb__decomposition(tbl, group_col, vector_col, by_col, false);

CREATE OR REPLACE TEMP MACRO emb_anova(tbl, group_col, vector_col) AS TABLE
    (SELECT * EXCLUDE (__emb_all, __emb_b) FROM emb__anova(tbl, group_col, vector_col, NULL)),
    (tbl, group_col, vector_col, "by") AS TABLE
    (SELECT * EXCLUDE (__emb_b, __emb_all) FROM emb__anova(tbl, group_col, vector_col, "by"));
