-- ---------------------------------------------------------------------------
-- The decomposition (S2, S3, S10, S11).
-- ---------------------------------------------------------------------------
CREATE OR REPLACE TEMP MACRO emb__anova(tbl, group_col, vector_col, by_col) AS TABLE
WITH sums AS MATERIALIZED (
    FROM emb__group_sums(tbl, group_col, vector_col, by_col)
),
per_group AS (
    SELECT COLUMNS(lambda c: c = coalesce(by_col, '__emb_all')), __emb_b, __emb_g,
           max(__emb_n) AS n_g, sum(__emb_s * __emb_s) AS ss
    FROM sums GROUP BY ALL
),
per_by AS (
    SELECT COLUMNS(lambda c: c = coalesce(by_col, '__emb_all')), __emb_b,
           sum(n_g)::BIGINT AS __emb_n, count(*) AS __emb_groups,
           sum(ss / n_g) AS __emb_between  -- sum_g n_g ||mu_g||^2
    FROM per_group GROUP BY ALL
),
total AS (
    -- ||s||^2 with s the sum of all unit vectors of one by value
    SELECT __emb_b, sum(t * t) AS __emb_tt
    FROM (SELECT __emb_b, __emb_k, sum(__emb_s) AS t FROM sums GROUP BY ALL)
    GROUP BY ALL
),
stats AS (
    SELECT p.*,
        p.__emb_n - t.__emb_tt / p.__emb_n AS __emb_ss_t,
        greatest(0.0, p.__emb_n - p.__emb_between) AS __emb_ss_w,
        -- SS_B = sum_g n_g ||mu_g||^2 - n ||mu||^2, computed directly (not SS_T - SS_W)
        greatest(0.0, p.__emb_between - t.__emb_tt / p.__emb_n) AS __emb_ss_b,
        t.__emb_tt
    FROM per_by p JOIN total t ON p.__emb_b IS NOT DISTINCT FROM t.__emb_b
)
SELECT
    * EXCLUDE (__emb_n, __emb_groups, __emb_between, __emb_ss_t, __emb_ss_w,
               __emb_ss_b, __emb_tt),
    CASE
        WHEN __emb_groups < 2 THEN error(format(
            'embsql: group column "{}" has only one group{}: the decomposition needs at least two',
            group_col, CASE WHEN __emb_b IS NULL THEN '' ELSE format(' for by value {}', __emb_b) END))
        WHEN __emb_n = __emb_groups THEN error(format(
            'embsql: every group in "{}" has one row (n = G = {}{}): no within-group degrees of freedom, so SS_W and F are undefined',
            group_col, __emb_n, CASE WHEN __emb_b IS NULL THEN '' ELSE format(', by value {}', __emb_b) END))
        WHEN __emb_ss_t <= 0 THEN error(format(
            'embsql: all {} vectors in "{}" point the same way (SS_T = 0{}): R2 and F are undefined',
            __emb_n, vector_col, CASE WHEN __emb_b IS NULL THEN '' ELSE format(', by value {}', __emb_b) END))
        ELSE __emb_n
    END AS n,
    __emb_groups AS groups,
    __emb_ss_t AS ss_t,
    __emb_ss_w AS ss_w,
    __emb_ss_b AS ss_b,
    __emb_ss_b / __emb_ss_t AS r2,
    (__emb_groups - 1.0) / (__emb_n - 1.0) AS r2_null,
    CASE WHEN __emb_ss_w = 0 THEN 'infinity'::DOUBLE
         ELSE (__emb_ss_b / (__emb_groups - 1.0)) / (__emb_ss_w / (__emb_n - __emb_groups)) END AS f,
    __emb_ss_t / __emb_n AS v,
    sqrt(__emb_tt) / __emb_n AS mean_resultant_length,
    __emb_ss_w / __emb_n AS w_bar
FROM stats
ORDER BY __emb_b;

CREATE OR REPLACE TEMP MACRO emb_anova(tbl, group_col, vector_col) AS TABLE
    (SELECT * EXCLUDE (__emb_all, __emb_b) FROM emb__anova(tbl, group_col, vector_col, NULL)),
    (tbl, group_col, vector_col, "by") AS TABLE
    (SELECT * EXCLUDE (__emb_b) FROM emb__anova(tbl, group_col, vector_col, "by"));

