-- ---------------------------------------------------------------------------
-- The decomposition, from the stable group sums of emb__group_sums:
--   SS_W = sum_g n_g W_g,   SS_B = sum_g n_g ||mu_g - mu||^2 (group means about the overall mean),
--   SS_T = SS_W + SS_B,     R2 = SS_B / SS_T,   F = (SS_B / (G - 1)) / (SS_W / (n - G)).
-- No sum of squares is a difference of two large numbers, so near-identical vectors keep their
-- digits; below float64 resolution (SS / n < eps) the figures are refused, not printed.
-- Every check is a filter on the result (never pruned, whatever columns a query reads), and an
-- empty source is an error unless empty_ok (emb_icc hands in a source that is empty on purpose).
-- ---------------------------------------------------------------------------
CREATE OR REPLACE TEMP MACRO emb__decomposition(tbl, group_col, vector_col, by_col, empty_ok) AS TABLE
WITH sums AS MATERIALIZED (
    FROM emb__group_sums(tbl, group_col, vector_col, by_col)
),
per_group AS (
    -- n_g and n_g W_g are on each of a group's rows; its first coordinate's row has them once
    SELECT COLUMNS(lambda c: c IN (by_col, '__emb_all')), __emb_b, __emb_g, __emb_n AS n_g, __emb_ssw AS ssw
    FROM sums WHERE __emb_k = 1
),
per_by AS (
    SELECT COLUMNS(lambda c: c IN (by_col, '__emb_all')), __emb_b,
           sum(n_g)::BIGINT AS __emb_n, count(*) AS __emb_groups, fsum(ssw) AS __emb_ss_w
    FROM per_group GROUP BY ALL
),
-- the overall mean mu_k = (sum_g s_gk) / (sum_g n_g), summed with compensation (G terms each)
means AS (
    SELECT __emb_b, __emb_k, fsum(__emb_s) / sum(__emb_n) AS __emb_mu
    FROM sums GROUP BY ALL
),
spread_between AS (
    -- a sum of non-negative terms: no cancellation, so a plain sum
    SELECT s.__emb_b, sum(s.__emb_n * pow(s.__emb_s / s.__emb_n - m.__emb_mu, 2)) AS __emb_ss_b
    FROM sums s JOIN means m ON s.__emb_b IS NOT DISTINCT FROM m.__emb_b AND s.__emb_k = m.__emb_k
    GROUP BY ALL
),
resultant AS (
    SELECT __emb_b, sqrt(sum(__emb_mu * __emb_mu)) AS __emb_mrl FROM means GROUP BY ALL
),
stats AS (
    SELECT p.*, b.__emb_ss_b, p.__emb_ss_w + b.__emb_ss_b AS __emb_ss_t, r.__emb_mrl
    FROM per_by p
    JOIN spread_between b ON p.__emb_b IS NOT DISTINCT FROM b.__emb_b
    JOIN resultant r ON p.__emb_b IS NOT DISTINCT FROM r.__emb_b
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
FROM (SELECT count(*) AS __emb_bys FROM per_by) e LEFT JOIN stats s ON true
WHERE CASE
    WHEN e.__emb_bys = 0 AND NOT empty_ok THEN emb__no_rows_error(tbl)
    WHEN e.__emb_bys = 0 THEN false
    WHEN s.__emb_groups < 2 THEN error(format(
        'embsql: group column "{}" has only one group{}: the decomposition needs at least two',
        group_col, CASE WHEN s.__emb_b IS NULL THEN '' ELSE format(' for by value {}', s.__emb_b) END))
    WHEN s.__emb_n = s.__emb_groups THEN error(format(
        'embsql: every group in "{}" has one row (n = G = {}{}): no within-group degrees of freedom, so SS_W and F are undefined',
        group_col, s.__emb_n, CASE WHEN s.__emb_b IS NULL THEN '' ELSE format(', by value {}', s.__emb_b) END))
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
