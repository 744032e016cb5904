-- embsql: sum-of-squares decomposition of embedding tables, as DuckDB macros.
--
-- Load in the stock DuckDB CLI with   .read sql/embsql.sql
-- (Python: embsql.register(con) runs this same file.)  Reference: sql/README.md.
--
-- Conventions
--   * Public macros are emb_*; helpers are emb__* and may change.
--   * Internal column names start with __emb_ so they cannot collide with user columns.
--   * Bad input raises an error whose message starts with "embsql:".
--   * Column names arrive as strings.  A column that does not exist must still *bind*
--     (so that we can raise our own error instead of a binder error), hence the
--     pattern  coalesce(*COLUMNS(lambda c: c IN (name, '__emb_null')))  over a source
--     that has a NULL sentinel column appended: it expands to coalesce(col, NULL)
--     when the column exists and to coalesce(NULL) when it does not, and counting
--     the expansion tells which.
--   * The optional by column keeps its own name: the no-by overloads use a constant
--     column __emb_all in its place and drop it at the end.

-- ---------------------------------------------------------------------------
-- Row stage: select the group, vector and by columns; classify each vector.
-- One row per input row.  __emb_bad is NULL for a usable vector, else a word.
-- ---------------------------------------------------------------------------
CREATE OR REPLACE MACRO emb__rows(tbl, group_col, vector_col, by_col) AS TABLE
SELECT
    * EXCLUDE (__emb_g0, __emb_gcols, __emb_vcols),
    CASE
        WHEN __emb_gcols = 1
            THEN error(format('embsql: group column "{}" not found in {}', group_col, tbl))
        WHEN __emb_vcols = 1
            THEN error(format('embsql: vector column "{}" not found in {}', vector_col, tbl))
        ELSE __emb_g0
    END AS __emb_g,
    -- Squared norm in double precision.  Not list_dot_product: it raises on a NULL element
    -- anywhere in a chunk, even under CASE; list_sum skips NULLs, so count them first.
    CASE WHEN list_count(__emb_v) = len(__emb_v)
         THEN list_sum(list_transform(__emb_v, lambda x: x::DOUBLE * x)) END AS __emb_nrm2,
    CASE
        WHEN __emb_v IS NULL THEN 'NULL'
        WHEN __emb_nrm2 IS NULL THEN 'NULL-element'
        WHEN isnan(__emb_nrm2) THEN 'NaN'
        WHEN isinf(__emb_nrm2) THEN 'infinite'
        WHEN __emb_nrm2 = 0 THEN 'zero-length'
    END AS __emb_bad
FROM (
    SELECT
        COLUMNS(lambda c: c = coalesce(by_col, '__emb_all')),
        CASE WHEN by_col IS NULL THEN NULL
             ELSE COLUMNS(lambda c: c = coalesce(by_col, '__emb_all')) END AS __emb_b,
        coalesce(*COLUMNS(lambda c: c IN (group_col, '__emb_null'))) AS __emb_g0,
        (SELECT len(list_value(*COLUMNS(lambda c: c IN (group_col, '__emb_null')))) FROM (SELECT *, NULL AS __emb_null FROM query_table(tbl) LIMIT 1)) AS __emb_gcols,
        coalesce(*COLUMNS(lambda c: c IN (vector_col, '__emb_nullv'))) AS __emb_v,
        (SELECT len(list_value(*COLUMNS(lambda c: c IN (vector_col, '__emb_null')))) FROM (SELECT *, NULL AS __emb_null FROM query_table(tbl) LIMIT 1)) AS __emb_vcols
    FROM (SELECT *, 1 AS __emb_all, NULL AS __emb_null, NULL::DOUBLE[] AS __emb_nullv
          FROM query_table(tbl))
);

-- ---------------------------------------------------------------------------
-- Sufficient statistics in long form: one row per (by, group, dimension k) with
-- the group count n_g and the k-th coordinate of the sum of unit vectors s_g.
-- Every input check is raised here, so each statistic built on it is checked.
-- ---------------------------------------------------------------------------
CREATE OR REPLACE MACRO emb__group_sums(tbl, group_col, vector_col, by_col) AS TABLE
WITH long AS (
    -- unnest(v[1:]) is much faster than unnest(v) on fixed-size arrays.
    SELECT
        COLUMNS(lambda c: c = coalesce(by_col, '__emb_all')), __emb_b, __emb_g, __emb_bad,
        len(__emb_v) AS __emb_d,
        generate_subscripts(__emb_z, 1) AS __emb_k,
        unnest(__emb_z) * __emb_inv AS __emb_x
    FROM (
        SELECT *,
            CASE WHEN __emb_bad IS NULL THEN __emb_v[1:] ELSE [NULL] END AS __emb_z,
            CASE WHEN __emb_bad IS NULL THEN 1.0 / sqrt(__emb_nrm2) END AS __emb_inv
        FROM emb__rows(tbl, group_col, vector_col, by_col)
    )
),
agg AS (
    SELECT
        COLUMNS(lambda c: c = coalesce(by_col, '__emb_all')), __emb_b, __emb_g, __emb_k,
        count(*) FILTER (__emb_bad IS NULL) AS __emb_n,
        sum(__emb_x) AS __emb_s,
        count(*) FILTER (__emb_bad IS NOT NULL) AS __emb_nbad,
        min(__emb_bad) AS __emb_bad,
        count(*) AS __emb_rows,
        min(__emb_d) AS __emb_dmin,
        max(__emb_d) AS __emb_dmax
    FROM long
    GROUP BY ALL
),
checked AS (
    SELECT *,
        min(__emb_dmin) OVER (PARTITION BY __emb_b) AS __emb_dmin_all,
        max(__emb_dmax) OVER (PARTITION BY __emb_b) AS __emb_dmax_all
    FROM agg
)
SELECT
    COLUMNS(lambda c: c = coalesce(by_col, '__emb_all')), __emb_b, __emb_g, __emb_k, __emb_n,
    CASE
        WHEN __emb_g IS NULL THEN error(format(
            'embsql: group column "{}" has {} NULL label(s){}', group_col, __emb_rows,
            CASE WHEN __emb_b IS NULL THEN '' ELSE format(' (by value {})', __emb_b) END))
        WHEN __emb_nbad > 0 THEN error(format(
            'embsql: vector column "{}" has {} unusable vector(s) in group ''{}'' ({}; vectors must be non-NULL, finite and of non-zero length)',
            vector_col, __emb_nbad, __emb_g, __emb_bad))
        WHEN __emb_dmin_all <> __emb_dmax_all THEN error(format(
            'embsql: vector column "{}" mixes vectors of length {} and {} (group ''{}'' has length {})',
            vector_col, __emb_dmin_all, __emb_dmax_all, __emb_g, __emb_dmin))
        ELSE __emb_s
    END AS __emb_s
FROM checked
WHERE __emb_k IS NOT NULL OR __emb_nbad > 0 OR __emb_g IS NULL;

-- ---------------------------------------------------------------------------
-- Per-group figures from the sufficient statistics (S4).
-- ---------------------------------------------------------------------------
CREATE OR REPLACE MACRO emb__groups(tbl, group_col, vector_col, by_col) AS TABLE
SELECT
    COLUMNS(lambda c: c = coalesce(by_col, '__emb_all')), __emb_b,
    __emb_g AS "group",
    max(__emb_n) AS n_g,
    -- ||mu_g||^2 = ||s_g||^2 / n_g^2, and W_g = 1 - ||mu_g||^2 (S4)
    sum(__emb_s * __emb_s) AS __emb_ss,
    greatest(0.0, 1.0 - sum(__emb_s * __emb_s) / (max(__emb_n)::DOUBLE * max(__emb_n))) AS w,
    CASE WHEN max(__emb_n) > 1
        THEN max(__emb_n) / (max(__emb_n) - 1.0)
             * greatest(0.0, 1.0 - sum(__emb_s * __emb_s) / (max(__emb_n)::DOUBLE * max(__emb_n)))
    END AS w_tilde
FROM emb__group_sums(tbl, group_col, vector_col, by_col)
GROUP BY ALL;

CREATE OR REPLACE MACRO emb_groups(tbl, group_col, vector_col) AS TABLE
    (SELECT "group", n_g, w, w_tilde
     FROM emb__groups(tbl, group_col, vector_col, NULL) ORDER BY "group"),
    (tbl, group_col, vector_col, "by") AS TABLE
    (SELECT * EXCLUDE (__emb_b, __emb_ss)
     FROM emb__groups(tbl, group_col, vector_col, "by") ORDER BY __emb_b, "group");

-- ---------------------------------------------------------------------------
-- The decomposition (S2, S3, S10, S11).
-- ---------------------------------------------------------------------------
CREATE OR REPLACE MACRO emb__anova(tbl, group_col, vector_col, by_col) AS TABLE
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
    * EXCLUDE (__emb_b, __emb_n, __emb_groups, __emb_between, __emb_ss_t, __emb_ss_w,
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

CREATE OR REPLACE MACRO emb_anova(tbl, group_col, vector_col) AS TABLE
    (SELECT * EXCLUDE (__emb_all) FROM emb__anova(tbl, group_col, vector_col, NULL)),
    (tbl, group_col, vector_col, "by") AS TABLE
    (SELECT * FROM emb__anova(tbl, group_col, vector_col, "by"));

-- ---------------------------------------------------------------------------
-- The distance route (S5): the same decomposition from a table of pairwise
-- dissimilarities (i, j, d) and a labels table (id, group).  Any dissimilarity.
--   SS_T = (1/n) sum_{i<j} d_ij^2,   SS_W = sum_g (1/n_g) sum_{i<j in g} d_ij^2
-- ---------------------------------------------------------------------------
CREATE OR REPLACE MACRO emb_anova_dist(dist_tbl, labels_tbl, group_col,
                                       i_col := 'i', j_col := 'j', d_col := 'd',
                                       id_col := 'id') AS TABLE
WITH labels AS MATERIALIZED (
    SELECT
        CASE
            WHEN idcols = 1 THEN error(format('embsql: id column "{}" not found in {}', id_col, labels_tbl))
            WHEN gcols = 1 THEN error(format('embsql: group column "{}" not found in {}', group_col, labels_tbl))
            ELSE id0
        END AS id,
        g
    FROM (
        SELECT
            coalesce(*COLUMNS(lambda c: c IN (id_col, '__emb_null'))) AS id0,
            (SELECT len(list_value(*COLUMNS(lambda c: c IN (id_col, '__emb_null')))) FROM (SELECT *, NULL AS __emb_null FROM query_table(labels_tbl) LIMIT 1)) AS idcols,
            coalesce(*COLUMNS(lambda c: c IN (group_col, '__emb_null'))) AS g,
            (SELECT len(list_value(*COLUMNS(lambda c: c IN (group_col, '__emb_null')))) FROM (SELECT *, NULL AS __emb_null FROM query_table(labels_tbl) LIMIT 1)) AS gcols
        FROM (SELECT *, NULL AS __emb_null FROM query_table(labels_tbl))
    )
),
labels_checked AS (
    SELECT id, CASE
        WHEN id IS NULL THEN error(format('embsql: id column "{}" in {} has a NULL id', id_col, labels_tbl))
        WHEN g IS NULL THEN error(format('embsql: group column "{}" has a NULL label for id {}', group_col, id))
        WHEN count(*) OVER (PARTITION BY id) > 1 THEN error(format('embsql: id {} appears more than once in {}', id, labels_tbl))
        ELSE g END AS g,
        count(*) OVER (PARTITION BY g) AS n_g
    FROM labels
),
raw AS (
    SELECT
        CASE
            WHEN icols = 1 THEN error(format('embsql: column "{}" not found in {}', i_col, dist_tbl))
            WHEN jcols = 1 THEN error(format('embsql: column "{}" not found in {}', j_col, dist_tbl))
            WHEN dcols = 1 THEN error(format('embsql: column "{}" not found in {}', d_col, dist_tbl))
            ELSE i0
        END AS i,
        j, d
    FROM (
        SELECT
            coalesce(*COLUMNS(lambda c: c IN (i_col, '__emb_null'))) AS i0,
            (SELECT len(list_value(*COLUMNS(lambda c: c IN (i_col, '__emb_null')))) FROM (SELECT *, NULL AS __emb_null FROM query_table(dist_tbl) LIMIT 1)) AS icols,
            coalesce(*COLUMNS(lambda c: c IN (j_col, '__emb_null'))) AS j,
            (SELECT len(list_value(*COLUMNS(lambda c: c IN (j_col, '__emb_null')))) FROM (SELECT *, NULL AS __emb_null FROM query_table(dist_tbl) LIMIT 1)) AS jcols,
            coalesce(*COLUMNS(lambda c: c IN (d_col, '__emb_null')))::DOUBLE AS d,
            (SELECT len(list_value(*COLUMNS(lambda c: c IN (d_col, '__emb_null')))) FROM (SELECT *, NULL AS __emb_null FROM query_table(dist_tbl) LIMIT 1)) AS dcols
        FROM (SELECT *, NULL AS __emb_null FROM query_table(dist_tbl))
    )
),
raw_checked AS (
    SELECT least(i, j) AS a, greatest(i, j) AS b, CASE
        WHEN i IS NULL OR j IS NULL THEN error(format('embsql: distance table {} has a NULL id in "{}" or "{}"', dist_tbl, i_col, j_col))
        WHEN d IS NULL OR isnan(d) THEN error(format('embsql: distance for pair ({}, {}) in column "{}" is NULL or NaN', i, j, d_col))
        WHEN isinf(d) THEN error(format('embsql: distance for pair ({}, {}) in column "{}" is infinite', i, j, d_col))
        WHEN d < 0 THEN error(format('embsql: distance for pair ({}, {}) in column "{}" is negative ({})', i, j, d_col, d))
        ELSE d END AS d
    FROM raw
),
pairs AS (
    SELECT a, b, min(d) AS d, max(d) AS d_max
    FROM raw_checked GROUP BY a, b
),
joined AS (
    SELECT
        CASE
            WHEN p.a = p.b AND p.d_max <> 0 THEN error(format(
                'embsql: distance of id {} to itself is {}, not 0', p.a, p.d_max))
            WHEN p.d <> p.d_max THEN error(format(
                'embsql: pair ({}, {}) is given in both orders with different distances ({} and {})', p.a, p.b, p.d, p.d_max))
            WHEN la.id IS NULL THEN error(format('embsql: id {} in distance table {} has no label in {}', p.a, dist_tbl, labels_tbl))
            WHEN lb.id IS NULL THEN error(format('embsql: id {} in distance table {} has no label in {}', p.b, dist_tbl, labels_tbl))
            ELSE p.d * p.d
        END AS d2,
        la.g = lb.g AND p.a <> p.b AS same,
        p.a <> p.b AS off_diagonal,
        la.n_g
    FROM pairs p
    LEFT JOIN labels_checked la ON la.id = p.a
    LEFT JOIN labels_checked lb ON lb.id = p.b
),
sums AS (
    SELECT
        count(*) FILTER (off_diagonal) AS n_pairs,
        sum(d2) AS sum_d2,  -- the diagonal adds 0
        coalesce(sum(d2 / n_g) FILTER (same), 0.0) AS ss_w
    FROM joined
),
design AS (
    SELECT count(*) AS n, count(DISTINCT g) AS groups FROM labels_checked
),
stats AS (
    SELECT design.n, design.groups, sums.sum_d2 / design.n AS ss_t, sums.ss_w, sums.n_pairs
    FROM design, sums
)
SELECT
    CASE
        WHEN n_pairs <> n * (n - 1) / 2 THEN error(format(
            'embsql: distance table {} has {} distinct pairs, but {} labelled ids need {}: missing pair(s), e.g. {}',
            dist_tbl, n_pairs, n, n * (n - 1) // 2,
            (SELECT min((l1.id, l2.id))
             FROM labels_checked l1 JOIN labels_checked l2 ON l1.id < l2.id
             ANTI JOIN pairs p ON p.a = l1.id AND p.b = l2.id)))
        WHEN groups < 2 THEN error(format('embsql: group column "{}" has only one group: the decomposition needs at least two', group_col))
        WHEN n = groups THEN error(format(
            'embsql: every group in "{}" has one id (n = G = {}): no within-group degrees of freedom, so SS_W and F are undefined', group_col, n))
        WHEN ss_t <= 0 THEN error('embsql: every distance is 0 (SS_T = 0): R2 and F are undefined')
        ELSE n
    END AS n,
    groups,
    ss_t,
    ss_w,
    greatest(0.0, ss_t - ss_w) AS ss_b,
    greatest(0.0, ss_t - ss_w) / ss_t AS r2,
    (groups - 1.0) / (n - 1.0) AS r2_null,
    CASE WHEN ss_w = 0 THEN 'infinity'::DOUBLE
         ELSE (greatest(0.0, ss_t - ss_w) / (groups - 1.0)) / (ss_w / (n - groups)) END AS f
FROM stats;
