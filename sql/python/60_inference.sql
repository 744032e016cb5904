-- Permutation tests.  Loaded by embsql.register(con) after the UDFs they call
-- (udfs/inference.py); not part of sql/embsql.sql, which the CLI reads without Python.
-- Items reach the UDF as lists per by value; the UDF sorts them into a canonical order, so a
-- seed gives the same p-value whatever order the rows arrive in.

-- A permutation count or seed as BIGINT for a UDF: any integer type passes (its range is checked by
-- the UDF, under the one rule of embsql/arguments.py); NULL or another type (99.5, 'abc', true) is an
-- embsql: error naming the argument, never a binder error naming an internal function.
CREATE OR REPLACE TEMP MACRO emb__whole_argument(value, name) AS
    CASE WHEN value IS NOT NULL
              AND typeof(value) IN ('TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'HUGEINT', 'UTINYINT', 'USMALLINT',
                                    'UINTEGER', 'UBIGINT', 'UHUGEINT')
              AND try_cast(value::VARCHAR AS BIGINT) IS NOT NULL
         THEN try_cast(value::VARCHAR AS BIGINT)
         ELSE error(format('embsql: [argument.{}] {} must be a whole number, not {}', name, name,
                           coalesce(CASE WHEN typeof(value) = 'VARCHAR' THEN '''' || value::VARCHAR || ''''
                                         ELSE value::VARCHAR END, 'NULL')))
    END;

-- statistic := for emb_permanova(_dist): a text value, checked by the UDF
CREATE OR REPLACE TEMP MACRO emb__text_argument(value, name) AS
    CASE WHEN value IS NOT NULL AND typeof(value) = 'VARCHAR' THEN value::VARCHAR
         ELSE error(format('embsql: [argument.{}] {} must be ''pseudo-f'' or ''welch'', not {}', name, name,
                           coalesce(value::VARCHAR, 'NULL')))
    END;

-- null_method := for emb_permanova(_dist): a text value (checked by the UDF); NULL would skip the UDF
CREATE OR REPLACE TEMP MACRO emb__null_method_argument(value) AS
    CASE WHEN value IS NOT NULL AND typeof(value) = 'VARCHAR' THEN value::VARCHAR
         ELSE error(format('embsql: [argument.null_method] null_method must be ''auto'', ''permutation'' or ''wild bootstrap'', not {}',
                           coalesce(value::VARCHAR, 'NULL')))
    END;

-- One pass over the vectors: the UDF gets each by value's items as lists and returns the permutation
-- test together with n, G, SS_W, SS_B and the mean resultant length (embsql.permanova's own sums), from
-- which emb_anova's other columns follow by its formulas (20_anova.sql).  The checks are emb_anova's,
-- in its words: the vectors' on the per-by aggregate, before the UDF (which never sees an unusable
-- vector or mixed lengths); the design's on the UDF's result (the UDF skips the test of a design the
-- decomposition refuses).  Each check is a filter, so it holds whatever columns a query reads.
CREATE OR REPLACE TEMP MACRO emb__permanova(tbl, group_col, vector_col, by_col, permutations, seed, strata_col,
                                       statistic, null_method) AS TABLE
WITH items AS (
    SELECT COLUMNS(lambda c: c IN (by_col, '__emb_all')), __emb_b,
        list(__emb_g::VARCHAR) AS __emb_gs, list(__emb_v::DOUBLE[]) AS __emb_vs, list(__emb_x::VARCHAR) AS __emb_xs,
        any_value(typeof(__emb_g)) AS __emb_gtype,
        -- the unusable vectors: the first group that has any (by label), its count and its word
        min({g: __emb_g, bad: __emb_bad}) FILTER (__emb_bad IS NOT NULL) AS __emb_bad,
        histogram(__emb_g) FILTER (__emb_bad IS NOT NULL) AS __emb_nbad,
        -- the lengths: their range, and the first group (by label) with its shortest length
        min(len(__emb_v)) AS __emb_dmin_all, max(len(__emb_v)) AS __emb_dmax_all,
        min({g: __emb_g, d: len(__emb_v)}) FILTER (__emb_v IS NOT NULL) AS __emb_dmin
    FROM emb__rows(tbl, group_col, vector_col, by_col, strata_col)
    GROUP BY ALL
),
checked AS (
    SELECT * FROM items
    WHERE CASE
        WHEN __emb_bad IS NOT NULL THEN error(format(
            'embsql: [{}] vector column "{}" has {} unusable vector(s) in group ''{}'' ({}; vectors must be non-NULL, finite and of non-zero length)',
            emb__vector_kind(__emb_bad.bad), vector_col, __emb_nbad[__emb_bad.g], __emb_bad.g, __emb_bad.bad))
        WHEN __emb_dmin_all <> __emb_dmax_all THEN error(format(
            'embsql: [vector.length] vector column "{}" mixes vectors of length {} and {} (group ''{}'' has length {})',
            vector_col, __emb_dmin_all, __emb_dmax_all, __emb_dmin.g, __emb_dmin.d))
        ELSE true
    END
),
test AS (
    SELECT * EXCLUDE (__emb_gs, __emb_vs, __emb_xs, __emb_gtype, __emb_bad, __emb_nbad, __emb_dmin_all,
                      __emb_dmax_all, __emb_dmin),
        emb__permanova_test(__emb_gs, __emb_vs, __emb_xs, vector_col, emb__whole_argument(permutations, 'permutations'),
                            emb__whole_argument(seed, 'seed'), strata_col IS NOT NULL,
                            emb__text_argument(statistic, 'statistic'), group_col, __emb_gtype,
                            emb__null_method_argument(null_method)) AS __emb_t
    FROM checked
),
with_total AS (SELECT *, __emb_t.ss_w + __emb_t.ss_b AS __emb_ss_t FROM test)
SELECT
    s.* EXCLUDE (__emb_t, __emb_ss_t),
    s.__emb_t.n AS n,
    s.__emb_t.groups AS groups,
    s.__emb_ss_t AS ss_t,
    s.__emb_t.ss_w AS ss_w,
    s.__emb_t.ss_b AS ss_b,
    s.__emb_t.ss_b / s.__emb_ss_t AS r2,
    (s.__emb_t.groups - 1.0) / (s.__emb_t.n - 1.0) AS r2_null,
    (s.__emb_t.ss_b / (s.__emb_t.groups - 1.0)) / (s.__emb_t.ss_w / (s.__emb_t.n - s.__emb_t.groups)) AS f,
    s.__emb_ss_t / s.__emb_t.n AS v,
    s.__emb_t.mean_resultant_length AS mean_resultant_length,
    s.__emb_t.ss_w / s.__emb_t.n AS w_bar,
    s.__emb_t.p_value AS p_value, s.__emb_t.permutations AS permutations, s.__emb_t.statistic_name AS statistic,
    s.__emb_t.w_d AS w_d, s.__emb_t.null_method AS null_method, s.__emb_t.groups_left_out AS groups_left_out,
    s.__emb_t.items_left_out AS items_left_out, s.__emb_t.note AS note
-- one row with NULLs when there are no items (an empty source is an error, as in emb_anova)
FROM (SELECT 1) LEFT JOIN with_total s ON true
WHERE CASE
    WHEN s.__emb_t IS NULL THEN emb__no_rows_error(tbl)
    WHEN s.__emb_t.groups < 2 THEN emb__fail_design_one_group(format('group column "{}"', group_col),
        CASE WHEN s.__emb_b IS NULL THEN '' ELSE format(' for by value {}', s.__emb_b) END, 'the decomposition')
    WHEN s.__emb_t.n = s.__emb_t.groups THEN emb__fail_design_no_residual_df(format(' in "{}"', group_col), 'row',
        s.__emb_t.n, CASE WHEN s.__emb_b IS NULL THEN '' ELSE format(', by value {}', s.__emb_b) END, 'SS_W and F')
    WHEN NOT (s.__emb_ss_t >= s.__emb_t.n * emb__resolution2()) THEN
        emb__precision_error('the vectors', s.__emb_b, s.__emb_ss_t, s.__emb_t.n, 'R² and F')
    WHEN NOT (s.__emb_t.ss_w >= s.__emb_t.n * emb__resolution2()) THEN
        emb__precision_error('the vectors within each group', s.__emb_b, s.__emb_t.ss_w, s.__emb_t.n, 'F')
    ELSE true
END
ORDER BY s.__emb_b;

CREATE OR REPLACE TEMP MACRO emb_permanova(tbl, group_col, vector_col, permutations := 999, seed := 42,
                                      strata := NULL, "by" := NULL, statistic := 'pseudo-f',
                                      null_method := 'auto') AS TABLE
SELECT COLUMNS(lambda c: c NOT IN ('__emb_b', '__emb_all'))
FROM emb__permanova(tbl, group_col, vector_col, "by", permutations, seed, strata, statistic, null_method);

-- The pairs (a, b, d) of a distance table, columns named by the caller (the distance routes of
-- emb_permanova_dist and emb_permanova_terms_dist read them the same way).
CREATE OR REPLACE TEMP MACRO emb__distance_pairs(dist_tbl, i_col, j_col, d_col) AS TABLE
SELECT coalesce(*COLUMNS(lambda c: c IN (i_col, '__emb_null')))::VARCHAR AS a,
       coalesce(*COLUMNS(lambda c: c IN (j_col, '__emb_null')))::VARCHAR AS b,
       coalesce(*COLUMNS(lambda c: c IN (d_col, '__emb_null')))::DOUBLE AS d
FROM (SELECT *, NULL AS __emb_null FROM query_table(dist_tbl));

CREATE OR REPLACE TEMP MACRO emb_permanova_dist(dist_tbl, labels_tbl, group_col, i_col := 'i', j_col := 'j',
                                           d_col := 'd', id_col := 'id', permutations := 999, seed := 42,
                                           strata := NULL, statistic := 'pseudo-f', null_method := 'auto') AS TABLE
WITH labels AS (
    SELECT coalesce(*COLUMNS(lambda c: c IN (id_col, '__emb_null')))::VARCHAR AS id,
           coalesce(*COLUMNS(lambda c: c IN (group_col, '__emb_null')))::VARCHAR AS g,
           coalesce(*COLUMNS(lambda c: c IN (group_col, '__emb_null'))) AS g0,
           coalesce(*COLUMNS(lambda c: c IN (strata, '__emb_null')))::VARCHAR AS s
    FROM (SELECT *, NULL AS __emb_null FROM query_table(labels_tbl))
),
pairs AS (SELECT * FROM emb__distance_pairs(dist_tbl, i_col, j_col, d_col)),
test AS (
    SELECT CASE WHEN strata IS NOT NULL AND (SELECT len(list_value(*COLUMNS(lambda c: c IN (strata, '__emb_null'))))
                                          FROM (SELECT *, NULL AS __emb_null FROM query_table(labels_tbl) LIMIT 1)) = 1
               THEN error(format('embsql: [column.missing] strata column "{}" not found in {}', strata, labels_tbl))
           END AS __emb_missing,
        emb__permanova_dist_test(
        (SELECT list(a) FROM pairs WHERE a <> b), (SELECT list(b) FROM pairs WHERE a <> b),
        (SELECT list(d) FROM pairs WHERE a <> b),
        list(id), list(g), list(s), emb__whole_argument(permutations, 'permutations'),
        emb__whole_argument(seed, 'seed'), strata IS NOT NULL, emb__text_argument(statistic, 'statistic'),
        group_col, any_value(typeof(g0)), emb__null_method_argument(null_method)) AS t
    FROM labels
)
SELECT a.*, test.t.p_value AS p_value, coalesce(test.__emb_missing, test.t.permutations) AS permutations,
       test.t.statistic_name AS statistic, test.t.w_d AS w_d, test.t.null_method AS null_method,
       test.t.groups_left_out AS groups_left_out, test.t.items_left_out AS items_left_out, test.t.note AS note
FROM emb_anova_dist(dist_tbl, labels_tbl, group_col, i_col := i_col, j_col := j_col, d_col := d_col,
                    id_col := id_col) a, test;

CREATE OR REPLACE TEMP MACRO emb__dispersion(tbl, group_col, vector_col, by_col, permutations, seed) AS TABLE
SELECT COLUMNS(lambda c: c IN (by_col, '__emb_all')), __emb_b,
       emb__dispersion_test(list(__emb_g::VARCHAR), list(__emb_v::DOUBLE[]), vector_col,
                            emb__whole_argument(permutations, 'permutations'), emb__whole_argument(seed, 'seed'),
                            group_col, any_value(typeof(__emb_g))) AS __emb_t
FROM emb__rows(tbl, group_col, vector_col, by_col, NULL)
GROUP BY ALL
ORDER BY __emb_b;

CREATE OR REPLACE TEMP MACRO emb_dispersion(tbl, group_col, vector_col, permutations := 999, seed := 42) AS TABLE
    (SELECT __emb_t.groups AS groups, __emb_t.f AS f, __emb_t.p_value AS p_value, __emb_t.permutations AS permutations,
            __emb_t.groups_left_out AS groups_left_out, __emb_t.items_left_out AS items_left_out, __emb_t.note AS note
     FROM emb__dispersion(tbl, group_col, vector_col, NULL, permutations, seed)),
    (tbl, group_col, vector_col, "by", permutations := 999, seed := 42) AS TABLE
    (SELECT * EXCLUDE (__emb_all, __emb_b, __emb_t),
            __emb_t.groups AS groups, __emb_t.f AS f, __emb_t.p_value AS p_value, __emb_t.permutations AS permutations,
            __emb_t.groups_left_out AS groups_left_out, __emb_t.items_left_out AS items_left_out, __emb_t.note AS note
     FROM emb__dispersion(tbl, group_col, vector_col, "by", permutations, seed));

CREATE OR REPLACE TEMP MACRO emb_dispersion_groups(tbl, group_col, vector_col, permutations := 999, seed := 42) AS TABLE
    (SELECT unnest(__emb_t.labels) AS "group", unnest(__emb_t.sizes) AS n_g,
            unnest(__emb_t.mean_distance) AS mean_distance, unnest(__emb_t.in_test) AS in_test
     FROM emb__dispersion(tbl, group_col, vector_col, NULL, permutations, seed)),
    (tbl, group_col, vector_col, "by", permutations := 999, seed := 42) AS TABLE
    (SELECT * EXCLUDE (__emb_all, __emb_b, __emb_t), unnest(__emb_t.labels) AS "group", unnest(__emb_t.sizes) AS n_g,
            unnest(__emb_t.mean_distance) AS mean_distance, unnest(__emb_t.in_test) AS in_test
     FROM emb__dispersion(tbl, group_col, vector_col, "by", permutations, seed));
