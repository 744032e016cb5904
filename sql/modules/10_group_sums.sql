-- ---------------------------------------------------------------------------
-- Row stage: select the group, vector and by columns; classify each vector.
-- One row per input row.  __emb_bad is NULL for a usable vector, else a word.
-- __emb_x carries one more column when extra_col names one (strata for permutations).
-- ---------------------------------------------------------------------------
CREATE OR REPLACE TEMP MACRO emb__rows(tbl, group_col, vector_col, by_col, extra_col) AS TABLE
SELECT
    * EXCLUDE (__emb_g0, __emb_gcols, __emb_vcols, __emb_xcols),
    CASE
        WHEN __emb_gcols = 1
            THEN error(format('embsql: group column "{}" not found in {}', group_col, tbl))
        WHEN __emb_vcols = 1
            THEN error(format('embsql: vector column "{}" not found in {}', vector_col, tbl))
        WHEN extra_col IS NOT NULL AND __emb_xcols = 1
            THEN error(format('embsql: column "{}" not found in {}', extra_col, tbl))
        ELSE __emb_g0
    END AS __emb_g,
    -- Squared norm in double precision.  list_dot_product raises on a NULL element, and
    -- TRY() then gives NULL for the whole chunk, so only those rows take the slow exact way.
    coalesce(
        TRY(list_dot_product(__emb_v::DOUBLE[], __emb_v::DOUBLE[])),
        CASE WHEN list_count(__emb_v::DOUBLE[]) = len(__emb_v::DOUBLE[])
             THEN list_sum(list_transform(__emb_v::DOUBLE[], lambda x: x * x)) END) AS __emb_nrm2,
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
        -- an optional extra column (e.g. permutation strata), NULL when not asked for
        coalesce(*COLUMNS(lambda c: c IN (extra_col, '__emb_null'))) AS __emb_x,
        (SELECT len(list_value(*COLUMNS(lambda c: c IN (extra_col, '__emb_null')))) FROM (SELECT *, NULL AS __emb_null FROM query_table(tbl) LIMIT 1)) AS __emb_xcols,
        (SELECT len(list_value(*COLUMNS(lambda c: c IN (vector_col, '__emb_null')))) FROM (SELECT *, NULL AS __emb_null FROM query_table(tbl) LIMIT 1)) AS __emb_vcols
    FROM (SELECT *, 1 AS __emb_all, NULL AS __emb_null, NULL::DOUBLE[] AS __emb_nullv
          FROM query_table(tbl))
);

-- ---------------------------------------------------------------------------
-- Sufficient statistics in long form: one row per (by, group, dimension k) with
-- the group count n_g and the k-th coordinate of the sum of unit vectors s_g.
-- Every input check is raised here, so each statistic built on it is checked.
-- ---------------------------------------------------------------------------
CREATE OR REPLACE TEMP MACRO emb__group_sums(tbl, group_col, vector_col, by_col) AS TABLE
WITH rows AS NOT MATERIALIZED (
    SELECT *, len(__emb_v::DOUBLE[]) AS __emb_d,
        CASE WHEN __emb_bad IS NULL THEN 1.0 / sqrt(__emb_nrm2) END AS __emb_inv
    FROM emb__rows(tbl, group_col, vector_col, by_col, NULL)
),
-- Per group, from one row per item: counts, defects and lengths (and the length range of
-- the by value, taken here over G rows rather than over the G * d rows of the sums).
counts AS (
    SELECT *,
        min(__emb_dmin) OVER (PARTITION BY __emb_b) AS __emb_dmin_all,
        max(__emb_dmax) OVER (PARTITION BY __emb_b) AS __emb_dmax_all
    FROM (
        SELECT
            COLUMNS(lambda c: c = coalesce(by_col, '__emb_all')), __emb_b, __emb_g,
            count(*) FILTER (__emb_bad IS NULL) AS __emb_n,
            count(*) FILTER (__emb_bad IS NOT NULL) AS __emb_nbad,
            min(__emb_bad) AS __emb_bad,
            count(*) AS __emb_rows,
            min(__emb_d) AS __emb_dmin,
            max(__emb_d) AS __emb_dmax
        FROM rows
        GROUP BY ALL
    )
),
-- Per group and coordinate, from the usable items: the sums.  This is the expensive step, so
-- it carries nothing else; reading the table twice is cheaper.  Each item becomes one row per
-- block of 8 coordinates (j = 0, 8, 16, ...) with 8 sums per row, and the block sums are
-- unnested to one row per coordinate only after the aggregate (a slot past d reads NULL and is
-- dropped below).  Why blocks: one aggregate row per (group, coordinate) makes G * d groups
-- (3.84M for 2 models x 5000 groups x 384), and under a memory limit DuckDB's hash aggregate
-- then leaves its in-memory mode and spills nearly every input row (n * d of them: 5.9 GB
-- spilled for 1M rows under memory_limit = '1GB'); with blocks it holds G * d / 8 groups and
-- spilled nothing (bench/out_of_core.py).  It is also faster with many groups, not slower with
-- few (bench/README.md).  __emb_v[1:] reads a fixed-size array once as a list (see emb__rows).
sums AS (
    SELECT __emb_b, __emb_g, __emb_j + generate_subscripts(__emb_sj, 1) AS __emb_k, unnest(__emb_sj) AS __emb_s
    FROM (
        SELECT __emb_b, __emb_g, __emb_j, list_value(
            sum(__emb_z[__emb_j + 1] * __emb_inv),
            sum(__emb_z[__emb_j + 2] * __emb_inv),
            sum(__emb_z[__emb_j + 3] * __emb_inv),
            sum(__emb_z[__emb_j + 4] * __emb_inv),
            sum(__emb_z[__emb_j + 5] * __emb_inv),
            sum(__emb_z[__emb_j + 6] * __emb_inv),
            sum(__emb_z[__emb_j + 7] * __emb_inv),
            sum(__emb_z[__emb_j + 8] * __emb_inv)) AS __emb_sj
        FROM (
            SELECT __emb_b, __emb_g, __emb_inv, __emb_z, unnest(range(0, len(__emb_z), 8))::INTEGER AS __emb_j
            FROM (SELECT __emb_b, __emb_g, __emb_inv, __emb_v[1:] AS __emb_z FROM rows WHERE __emb_bad IS NULL)
        )
        GROUP BY ALL
    )
),
checked AS (
    SELECT c.*, s.__emb_k, s.__emb_s
    FROM counts c
    LEFT JOIN sums s ON c.__emb_b IS NOT DISTINCT FROM s.__emb_b AND c.__emb_g IS NOT DISTINCT FROM s.__emb_g
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
WHERE (__emb_k IS NOT NULL AND __emb_k <= __emb_dmax) OR __emb_nbad > 0 OR __emb_g IS NULL;

-- ---------------------------------------------------------------------------
-- Per-group figures from the sufficient statistics (S4).
-- ---------------------------------------------------------------------------
CREATE OR REPLACE TEMP MACRO emb__groups(tbl, group_col, vector_col, by_col) AS TABLE
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

CREATE OR REPLACE TEMP MACRO emb_groups(tbl, group_col, vector_col) AS TABLE
    (SELECT "group", n_g, w, w_tilde
     FROM emb__groups(tbl, group_col, vector_col, NULL) ORDER BY "group"),
    (tbl, group_col, vector_col, "by") AS TABLE
    (SELECT * EXCLUDE (__emb_b, __emb_ss)
     FROM emb__groups(tbl, group_col, vector_col, "by") ORDER BY __emb_b, "group");

