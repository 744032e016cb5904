-- Permutation tests.  Loaded by embsql.register(con) after the UDFs they call
-- (udfs/inference.py); not part of sql/embsql.sql, which the CLI reads without Python.
-- Items reach the UDF as lists per model; the UDF sorts them into a canonical order, so a
-- seed gives the same p-value whatever order the rows arrive in.

-- A permutation count or seed as BIGINT for a UDF: any integer type passes (its range is checked by
-- the UDF, under the one rule of embsql/core/arguments.py); NULL or another type (99.5, 'abc', true) is an
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

-- statistic for emb__permanova(_dist): a text value, checked by the UDF ('pseudo-f' from emb_permanova, 'welch' from emb_permanova_welch)
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

-- One pass over the vectors: the UDF gets each model's items as lists and returns the permutation
-- test together with n, G, SS_W, SS_B and the mean resultant length (embsql.permanova's own sums), from
-- which emb_anova's other columns follow by its formulas (20_anova.sql).  The checks are emb_anova's,
-- in its words: the vectors' on the per-by aggregate, before the UDF (which never sees an unusable
-- vector or mixed lengths); the design's on the UDF's result (the UDF skips the test of a design the
-- decomposition refuses).  Each check is a filter, so it holds whatever columns a query reads.
CREATE OR REPLACE TEMP MACRO emb__permanova_checked(source, "group", vector, model, permutations, seed,
                                               strata, statistic, null_method, skip := false) AS TABLE
-- (__emb_items: query_table(source) in bad would read a CTE of the source's name)
WITH __emb_items AS (
    SELECT COLUMNS(lambda c: c IN (model, '__emb_all')), __emb_b,
        list(__emb_g::VARCHAR) AS __emb_gs, list(__emb_v::DOUBLE[]) AS __emb_vs, list(__emb_x::VARCHAR) AS __emb_xs,
        any_value(typeof(__emb_g)) AS __emb_gtype,
        -- the unusable vectors (the first of them is named from emb__first_bad_row)
        count(__emb_bad) AS __emb_nbad,
        -- the lengths: their range, and the first group (by label) with its shortest length
        min(len(__emb_v)) AS __emb_dmin_all, max(len(__emb_v)) AS __emb_dmax_all,
        min({g: __emb_g, d: len(__emb_v)}) FILTER (__emb_v IS NOT NULL) AS __emb_dmin
    FROM emb__rows(source, "group", vector, model, strata, skip := skip)
    GROUP BY ALL
),
bad AS (
    SELECT * FROM emb__first_bad_row(source, "group", vector, model, NULL, (SELECT max(__emb_nbad) FROM __emb_items) > 0)
),
checked AS (
    SELECT i.* FROM __emb_items i LEFT JOIN bad f ON true
    WHERE CASE
        WHEN f.__emb_row IS NOT NULL
            THEN emb__fail_bad_row(vector, NULL, f.__emb_row, f.__emb_b, NULL, f.__emb_g, f.__emb_bad)
        WHEN __emb_dmin_all <> __emb_dmax_all THEN error(format(
            'embsql: [vector.length] vector column "{}" mixes vectors of length {} and {} (group ''{}'' has length {})',
            vector, __emb_dmin_all, __emb_dmax_all, __emb_dmin.g, __emb_dmin.d))
        ELSE true
    END
),
test AS (
    SELECT * EXCLUDE (__emb_gs, __emb_vs, __emb_xs, __emb_gtype, __emb_nbad, __emb_dmin_all,
                      __emb_dmax_all, __emb_dmin),
        emb__permanova_test(__emb_gs, __emb_vs, __emb_xs, vector, emb__whole_argument(permutations, 'permutations'),
                            emb__whole_argument(seed, 'seed'), strata IS NOT NULL,
                            emb__text_argument(statistic, 'statistic'), "group", __emb_gtype,
                            emb__null_method_argument(null_method)) AS __emb_r
    FROM checked
),
tested AS (SELECT * EXCLUDE (__emb_r), __emb_r.value AS __emb_t FROM test WHERE emb__udf_ok(__emb_r)),
with_total AS (SELECT *, __emb_t.ss_w + __emb_t.ss_b AS __emb_ss_t FROM tested)
SELECT s.*
-- one row with NULLs when there are no items (an empty source is an error, as in emb_anova)
FROM (SELECT 1) LEFT JOIN with_total s ON true
WHERE CASE
    WHEN s.__emb_t IS NULL THEN emb__no_rows_error(source)
    WHEN s.__emb_t.groups < 2 THEN emb__fail_design_one_group(format('group column "{}"', "group"),
        CASE WHEN s.__emb_b IS NULL THEN '' ELSE format(' for by value {}', s.__emb_b) END, 'the decomposition')
    WHEN s.__emb_t.n = s.__emb_t.groups THEN emb__fail_design_no_residual_df(format(' in "{}"', "group"), 'row',
        s.__emb_t.n, CASE WHEN s.__emb_b IS NULL THEN '' ELSE format(', by value {}', s.__emb_b) END, 'SS_W and F')
    WHEN NOT (s.__emb_ss_t >= s.__emb_t.n * emb__resolution2()) THEN
        emb__precision_error('the vectors', s.__emb_b, s.__emb_ss_t, s.__emb_t.n, 'R² and F')
    WHEN NOT (s.__emb_t.ss_w >= s.__emb_t.n * emb__resolution2()) THEN
        emb__precision_error('the vectors within each group', s.__emb_b, s.__emb_t.ss_w, s.__emb_t.n, 'F')
    ELSE true
END
ORDER BY s.__emb_b;

-- emb_permanova's columns (emb_anova's and the test's), from the checked rows (the model column under
-- its own name, __emb_b, __emb_all): only those, so that the model column, named like none of them
-- (emb__checked_source), keeps its place.  emb_permanova_welch reads emb__permanova_checked itself,
-- so that a model column named like one of these columns (ss_t, f ...), which it does not return,
-- cannot clash.
CREATE OR REPLACE TEMP MACRO emb__permanova(source, "group", vector, model, permutations, seed, strata,
                                       statistic, null_method, skip := false) AS TABLE
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
    s.__emb_t.p_value AS p_value, s.__emb_t.permutations AS permutations
FROM emb__permanova_checked(source, "group", vector, model, permutations, seed, strata, statistic, null_method,
                            skip := skip) s
ORDER BY s.__emb_b;

-- @function emb_permanova(source, "group", vector, permutations := 999, seed := 42, strata := NULL, model := NULL, bad_rows := 'error')
-- PERMANOVA: the columns of `emb_anova`, then a permutation p-value of pseudo-F.  One row, or one
-- row per value of the model column (first, under its own name).  The Welch-type test is
-- `emb_permanova_welch`.
-- @param source the table to read: a table or view name, or a file DuckDB reads
-- @param "group" the group column (GROUP is a keyword: by name it is written `"group" := 'topic'`)
-- @param vector the vector column; vectors are scaled to unit length
-- @param permutations the number of label permutations B, a whole number from 1 to 1,000,000
-- @param seed the random seed, a whole number (0 or more): the same seed gives the same p on any machine and for any row order
-- @param strata a column whose levels the labels are permuted within (exchangeability within blocks, as `adonis2(..., permutations = how(blocks = ...))`)
-- @param model the model column: one row per value of it
-- @param bad_rows `'error'` (the default): a NULL, zero or non-finite vector is an error naming its group and model; `'skip'`: those rows are left out and counted in the `skipped_` columns
-- @column <model> the model, under the model column's own name (only with `model`)
-- @column n number of vectors
-- @column groups number of groups G
-- @column ss_t total sum of squares (as `emb_anova`)
-- @column ss_w within-group sum of squares
-- @column ss_b between-group sum of squares
-- @column r2 SS_B / SS_T
-- @column r2_null (G − 1)/(n − 1)
-- @column f pseudo-F, the tested statistic
-- @column v SS_T/n
-- @column mean_resultant_length ‖μ‖
-- @column w_bar SS_W / n
-- @column p_value the permutation p-value (b + 1)/(B + 1) of pseudo-F
-- @column permutations B
-- @column skipped_null rows left out for a NULL vector (or a NULL element), per model (only with `bad_rows := 'skip'`)
-- @column skipped_zero rows left out for a zero vector (only with `bad_rows := 'skip'`)
-- @column skipped_nonfinite rows left out for a NaN or infinite coordinate (only with `bad_rows := 'skip'`)
-- @notes
-- p = (b + 1)/(B + 1), with b the number of the B label permutations whose pseudo-F is at least
-- the observed one (within sqrt(machine epsilon), as vegan counts ties); so p is never 0 and its
-- smallest value is 1/(B + 1).  The same seed gives the same p on any machine and for any row
-- order: items are sorted into a canonical order (stratum, label, vector) before the seeded
-- shuffles.  The p-value says the grouping is not chance under exchangeability; it is not an
-- effect size (that is R²).  Check `emb_dispersion` too: a large F can come from groups that
-- differ in spread rather than location, and then `emb_permanova_welch` is the test to read.
--
-- Arguments: anything outside the rules above (NULL, 99.5, `'abc'`) is an `embsql:` error naming
-- the argument.  Group labels must not be NULL or NaN; 0.0 and −0.0 are one group.  Identical
-- vectors (no spread) are refused as in `emb_anova`, in its words.  The vectors are read once: the
-- UDF that runs the test also returns the sums the `emb_anova` columns come from (the same sums as
-- `embsql.permanova`'s), and every check and argument holds whatever columns a query reads.
-- `embsql.interrupt(con)`, or Ctrl-C after `embsql.connect(interrupt=True)`, stops a running test
-- within a second with `embsql: [query.interrupted]` (plain `con.interrupt()` waits for the test to
-- finish); the connection stays usable.  In the example each model has 4 items in two groups of 2,
-- so there are only 3 distinct splits and p cannot go below 1/3.
-- @example
-- SELECT model, r2, f, p_value, permutations
-- FROM emb_permanova('ex', 'topic', 'embedding', permutations := 199, model := 'model');
CREATE OR REPLACE TEMP MACRO emb_permanova(source, "group", vector, permutations := 999, seed := 42, strata := NULL,
                                           model := NULL, bad_rows := 'error') AS TABLE
SELECT COLUMNS(lambda c: NOT starts_with(c, '__emb_')
                         AND (emb__skip_asked(bad_rows) OR c NOT IN ('skipped_null', 'skipped_zero', 'skipped_nonfinite')))
FROM emb__permanova(
         emb__checked_names(emb__checked_source(source, 'emb_permanova', model, emb__outputs_emb_permanova()), 'emb_permanova', [['group', "group"], ['vector', vector], ['strata', strata]]),
         "group", vector, model, permutations, seed, strata, 'pseudo-f', 'auto', skip := emb__skip_rows(bad_rows)) p
LEFT JOIN emb__skipped(source, "group", vector, model, emb__skip_rows(bad_rows)) s
    ON p.__emb_b IS NOT DISTINCT FROM s.__emb_sb
ORDER BY p.__emb_b;

-- @function emb_permanova_welch(source, "group", vector, permutations := 999, seed := 42, strata := NULL, model := NULL, null_method := 'auto', bad_rows := 'error')
-- The Welch-type PERMANOVA test of W*_d, for groups that may differ in spread: the tested
-- statistic `w_d` beside its p-value.  One row, or one row per value of the model column (first,
-- under its own name).  Pseudo-F and the decomposition are `emb_permanova`'s and `emb_anova`'s.
-- @param source the table to read: a table or view name, or a file DuckDB reads
-- @param "group" the group column (GROUP is a keyword: by name it is written `"group" := 'topic'`)
-- @param vector the vector column; vectors are scaled to unit length
-- @param permutations the number of label permutations (or bootstrap samples) B, a whole number from 1 to 1,000,000
-- @param seed the random seed, a whole number (0 or more)
-- @param strata a column whose levels the labels are permuted within
-- @param model the model column: one row per value of it
-- @param null_method where the p-value's null distribution comes from: `'auto'`, `'permutation'` or `'wild bootstrap'`
-- @param bad_rows `'error'` (the default): a NULL, zero or non-finite vector is an error naming its group and model; `'skip'`: those rows are left out and counted in the `skipped_` columns
-- @column <model> the model, under the model column's own name (only with `model`)
-- @column n number of vectors
-- @column groups number of groups G
-- @column w_d the observed W*_d, the tested statistic; NULL without a test
-- @column p_value its p-value (b + 1)/(B + 1); NULL without a test
-- @column permutations B (the number of resamples, for the wild bootstrap)
-- @column null_method where the p-value's null distribution came from: `'permutation'` or `'wild bootstrap'`
-- @column groups_left_out groups the default test left out (cells under 6 items)
-- @column items_left_out their items
-- @column note NULL, or which groups were left out and why
-- @column skipped_null rows left out for a NULL vector (or a NULL element), per model (only with `bad_rows := 'skip'`)
-- @column skipped_zero rows left out for a zero vector (only with `bad_rows := 'skip'`)
-- @column skipped_nonfinite rows left out for a NaN or infinite coordinate (only with `bad_rows := 'skip'`)
-- @notes
-- The test is of the Welch-type W*_d (Hamidi, Wallace, Vinzant and Alekseyenko
-- 2019; for two groups Alekseyenko's 2016 Tw²) instead of pseudo-F: each group is weighted by
-- n_g / s_g² (s_g² its own within spread) rather than pooled, so a small group with a larger spread
-- no longer inflates the test.  On unit vectors equal centroids imply equal total spread (the mean
-- squared distance to the centroid is 1 − ‖μ‖²), so what can still differ under the null is the
-- *shape* of the spread, and permuting labels mixes the shapes.  So when every group (with
-- `strata`, every stratum × group cell) has at least 6 items, W*_d's p-value comes from a group-wise
-- wild bootstrap: each item's residual from its group centroid, scaled by sqrt(n_g/(n_g − 1)), times
-- a random sign; every group keeps its own covariance and all centroids are equal.  Groups (cells)
-- under 6 items are left out of that default test, and counted: `groups_left_out`, `items_left_out`
-- and `note` say how many and why (with fewer than two groups left there is no test: `w_d` and
-- `p_value` NULL).  A group's residuals span at most n_g − 1 directions, so with small groups the
-- bootstrap turns conservative (exchangeable null data, 5 groups of 5: 1%, of 3: none), and permuting
-- labels instead is not valid when shapes differ (a rank-2 group of 5 against 40: 21% at 5%).  Measured
-- at 5% on null data (`validation/validity_tests.py`; validation/README.md has the table): a rank-2 group of 6
-- against 40, equal centres and spread, pseudo-F 15.9%, W*_d with permuted labels 17.3%, with the
-- wild bootstrap 4.5%; 6 items of sd 2 against 40 of sd 1 (Euclidean), pseudo-F 61%, W*_d 5.4%.
-- Every group needs 2 items.
-- `null_method := 'wild bootstrap'` or `'permutation'` overrides that choice (`'auto'`, the default,
-- makes it).
--
-- Arguments, labels, identical vectors and interrupts as for `emb_permanova`.
-- @example
-- SELECT model, w_d, p_value, null_method
-- FROM emb_permanova_welch('ex', 'topic', 'embedding', permutations := 199, model := 'model', null_method := 'permutation');
CREATE OR REPLACE TEMP MACRO emb_permanova_welch(source, "group", vector, permutations := 999, seed := 42,
                                                 strata := NULL, model := NULL, null_method := 'auto',
                                                 bad_rows := 'error') AS TABLE
-- (the output columns qualified: a macro parameter's name, unqualified, would stand for its value)
-- (from the checked rows: the model column and its own output columns only, so that a model column
-- named like an emb_anova column, ss_t or f, stands for the model)
SELECT COLUMNS(lambda c: NOT starts_with(c, '__emb_')
                         AND (emb__skip_asked(bad_rows) OR c NOT IN ('skipped_null', 'skipped_zero', 'skipped_nonfinite')))
FROM (SELECT w.* EXCLUDE (__emb_all, __emb_t, __emb_ss_t),
             w.__emb_t.n AS n, w.__emb_t.groups AS groups, w.__emb_t.w_d AS w_d, w.__emb_t.p_value AS p_value,
             w.__emb_t.permutations AS permutations, w.__emb_t.null_method AS null_method,
             w.__emb_t.groups_left_out AS groups_left_out, w.__emb_t.items_left_out AS items_left_out,
             w.__emb_t.note AS note
      FROM emb__permanova_checked(
               emb__checked_names(emb__checked_source(source, 'emb_permanova_welch', model, emb__outputs_emb_permanova_welch()), 'emb_permanova_welch', [['group', "group"], ['vector', vector], ['strata', strata]]),
               "group", vector, model, permutations, seed, strata, 'welch', null_method,
               skip := emb__skip_rows(bad_rows)) w) w
LEFT JOIN emb__skipped(source, "group", vector, model, emb__skip_rows(bad_rows)) s
    ON w.__emb_b IS NOT DISTINCT FROM s.__emb_sb
ORDER BY w.__emb_b;

-- The pairs (a, b, d) of a distance table, columns named by the caller (the distance routes of
-- emb_permanova_dist and emb_permanova_terms_dist read them the same way).
CREATE OR REPLACE TEMP MACRO emb__distance_pairs(distances, i_col, j_col, distance) AS TABLE
SELECT coalesce(*COLUMNS(lambda c: c IN (i_col, '__emb_null')))::VARCHAR AS a,
       coalesce(*COLUMNS(lambda c: c IN (j_col, '__emb_null')))::VARCHAR AS b,
       coalesce(*COLUMNS(lambda c: c IN (distance, '__emb_null')))::DOUBLE AS d
FROM (SELECT *, NULL AS __emb_null FROM query_table(distances));

CREATE OR REPLACE TEMP MACRO emb__permanova_dist(distances, labels_tbl, "group", i_col, j_col, distance, item,
                                            permutations, seed, strata, statistic, null_method) AS TABLE
WITH labels AS (
    SELECT coalesce(*COLUMNS(lambda c: c IN (item, '__emb_null')))::VARCHAR AS id,
           coalesce(*COLUMNS(lambda c: c IN ("group", '__emb_null')))::VARCHAR AS g,
           coalesce(*COLUMNS(lambda c: c IN ("group", '__emb_null'))) AS g0,
           coalesce(*COLUMNS(lambda c: c IN (strata, '__emb_null')))::VARCHAR AS s
    FROM (SELECT *, NULL AS __emb_null FROM query_table(labels_tbl))
),
pairs AS (SELECT * FROM emb__distance_pairs(distances, i_col, j_col, distance)),
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
        "group", any_value(typeof(g0)), emb__null_method_argument(null_method)) AS r
    FROM labels
),
tested AS (SELECT __emb_missing, r.value AS t FROM test WHERE emb__udf_ok(r))
SELECT a.*, test.t.p_value AS p_value, coalesce(test.__emb_missing, test.t.permutations) AS permutations,
       test.t.statistic_name AS statistic, test.t.w_d AS w_d, test.t.null_method AS null_method,
       test.t.groups_left_out AS groups_left_out, test.t.items_left_out AS items_left_out, test.t.note AS note
FROM emb__anova_dist(distances, labels_tbl, "group", i_col, j_col, distance, item) a, tested test;

-- @function emb_permanova_dist(distances, labels, "group", i := 'i', j := 'j', distance := 'd', item := 'id', permutations := 999, seed := 42, strata := NULL)
-- The permutation test of `emb_permanova` on the distance route: the columns of `emb_anova_dist`,
-- then `p_value` and `permutations`.  Any dissimilarity.  One row.
-- @param distances the distance table: one row per unordered pair of items
-- @param labels the labels table: an item column, the group column (and `strata`)
-- @param "group" the labels table's group column
-- @param i the distance table's first item column
-- @param j the distance table's second item column
-- @param distance the distance table's distance column
-- @param item the labels table's item column
-- @param permutations the number of label permutations B, a whole number from 1 to 1,000,000
-- @param seed the random seed, a whole number (0 or more)
-- @param strata a column of the labels table whose levels the labels are permuted within
-- @column n number of labelled items
-- @column groups number of groups G
-- @column ss_t total sum of squares (as `emb_anova_dist`)
-- @column ss_w within-group sum of squares
-- @column ss_b between-group sum of squares
-- @column r2 SS_B / SS_T
-- @column r2_null (G − 1)/(n − 1)
-- @column f pseudo-F, the tested statistic
-- @column p_value the permutation p-value (b + 1)/(B + 1)
-- @column permutations B
-- @example
-- SELECT r2, f, p_value, permutations FROM emb_permanova_dist('dist', 'lab', 'topic', permutations := 99);
CREATE OR REPLACE TEMP MACRO emb_permanova_dist(distances, labels, "group", i := 'i', j := 'j', distance := 'd',
                                                item := 'id', permutations := 999, seed := 42, strata := NULL) AS TABLE
SELECT * EXCLUDE (statistic, w_d, null_method, groups_left_out, items_left_out, note)
FROM emb__permanova_dist(emb__checked_names(distances, 'emb_permanova_dist', [['i', i], ['j', j], ['distance', distance]]),
    emb__checked_names(labels, 'emb_permanova_dist', [['group', "group"], ['item', item], ['strata', strata]]), "group", i, j, distance, item, permutations, seed, strata, 'pseudo-f',
                         'auto');

-- @function emb_permanova_welch_dist(distances, labels, "group", i := 'i', j := 'j', distance := 'd', item := 'id', permutations := 999, seed := 42, strata := NULL, null_method := 'auto')
-- The test of `emb_permanova_welch` on the distance route: W*_d and its p-value.  Any
-- dissimilarity.  One row.
-- @param distances the distance table: one row per unordered pair of items
-- @param labels the labels table: an item column, the group column (and `strata`)
-- @param "group" the labels table's group column
-- @param i the distance table's first item column
-- @param j the distance table's second item column
-- @param distance the distance table's distance column
-- @param item the labels table's item column
-- @param permutations the number of label permutations (or bootstrap samples) B, a whole number from 1 to 1,000,000
-- @param seed the random seed, a whole number (0 or more)
-- @param strata a column of the labels table whose levels the labels are permuted within
-- @param null_method where the p-value's null distribution comes from: `'auto'`, `'permutation'` or `'wild bootstrap'`
-- @column n number of labelled items
-- @column groups number of groups G
-- @column w_d the observed W*_d, the tested statistic; NULL without a test
-- @column p_value its p-value (b + 1)/(B + 1); NULL without a test
-- @column permutations B
-- @column null_method where the null distribution came from
-- @column groups_left_out groups the default test left out
-- @column items_left_out their items
-- @column note NULL, or which groups were left out and why
-- @notes
-- The group centroids and spreads are those of the principal-coordinates embedding of the
-- distances (Hamidi et al. 2019), and the wild bootstrap works on the residual inner products of
-- that embedding (the Gower-centred matrix, centred again within groups), so it draws the same
-- samples as the vector route would.
-- @example
-- SELECT w_d, p_value, null_method FROM emb_permanova_welch_dist('dist', 'lab', 'topic', permutations := 99, null_method := 'permutation');
CREATE OR REPLACE TEMP MACRO emb_permanova_welch_dist(distances, labels, "group", i := 'i', j := 'j',
                                                      distance := 'd', item := 'id', permutations := 999, seed := 42,
                                                      strata := NULL, null_method := 'auto') AS TABLE
SELECT t.n, t.groups, t.w_d, t.p_value, t.permutations, t.null_method, t.groups_left_out, t.items_left_out, t.note
FROM emb__permanova_dist(emb__checked_names(distances, 'emb_permanova_welch_dist', [['i', i], ['j', j], ['distance', distance]]),
    emb__checked_names(labels, 'emb_permanova_welch_dist', [['group', "group"], ['item', item], ['strata', strata]]), "group", i, j, distance, item, permutations, seed, strata, 'welch',
                         null_method) t;

CREATE OR REPLACE TEMP MACRO emb__dispersion(source, "group", vector, model, permutations, seed, skip := false) AS TABLE
SELECT COLUMNS(lambda c: c IN (model, '__emb_all')), __emb_b,
       emb__dispersion_test(list(__emb_g::VARCHAR), list(__emb_v::DOUBLE[]), vector,
                            emb__whole_argument(permutations, 'permutations'), emb__whole_argument(seed, 'seed'),
                            "group", any_value(typeof(__emb_g))) AS __emb_r
FROM emb__rows(source, "group", vector, model, NULL, skip := skip)
GROUP BY ALL;

-- the per-model test, the UDF's result checked (in a filter) and its value as __emb_t
CREATE OR REPLACE TEMP MACRO emb__dispersion_checked(source, "group", vector, model, permutations, seed,
                                                    skip := false) AS TABLE
SELECT * EXCLUDE (__emb_r), __emb_r.value AS __emb_t
FROM emb__dispersion(source, "group", vector, model, permutations, seed, skip := skip)
WHERE emb__udf_ok(__emb_r)
ORDER BY __emb_b;

-- @function emb_dispersion(source, "group", vector, model := NULL, permutations := 999, seed := 42, bad_rows := 'error')
-- The dispersion test: do the groups differ in spread about their centroids?  One row, or one row
-- per value of the model column (first, under its own name).
-- @param source the table to read: a table or view name, or a file DuckDB reads
-- @param "group" the group column (GROUP is a keyword: by name it is written `"group" := 'topic'`)
-- @param vector the vector column; vectors are scaled to unit length
-- @param model the model column: one row per value of it
-- @param permutations the number of permutations, a whole number from 1 to 1,000,000
-- @param seed the random seed, a whole number (0 or more)
-- @param bad_rows `'error'` (the default): a NULL, zero or non-finite vector is an error naming its group and model; `'skip'`: those rows are left out and counted in the `skipped_` columns
-- @column <model> the model, under the model column's own name (only with `model`)
-- @column groups groups in the test
-- @column f the studentised F of the groups' spreads W̃_g (about 1 under the null); NULL without a test
-- @column p_value its permutation p-value (b + 1)/(B + 1); NULL without a test
-- @column permutations B; NULL without a test
-- @column groups_left_out groups with fewer than 4 items, left out of the test
-- @column items_left_out their items
-- @column note NULL, or which groups were left out and why
-- @column skipped_null rows left out for a NULL vector (or a NULL element), per model (only with `bad_rows := 'skip'`)
-- @column skipped_zero rows left out for a zero vector (only with `bad_rows := 'skip'`)
-- @column skipped_nonfinite rows left out for a NaN or infinite coordinate (only with `bad_rows := 'skip'`)
-- @notes
-- Each group's spread is W̃_g = n_g/(n_g − 1) · (1 − |μ_g|²), the mean squared distance of its unit
-- vectors to their centroid with betadisper's bias adjustment (`emb_groups`' W̃_g; the mean over
-- pairs of ½|z_i − z_j|²).  For iid unit vectors its variance is exactly V_g = 4a/n_g +
-- 2b/(n_g(n_g − 1)), a = m'Σm (the items' own spread) and b = tr Σ² (the noise of the estimated
-- centroid, which dominates with small groups in high dimension); a and b are estimated without bias
-- from each group's inner products and pooled over the groups.  F = Σ_g (W̃_g − W̄)²/V_g/(G − 1), W̄
-- the 1/V_g-weighted mean.  Its p-value permutes labels while keeping |z| = 1: each item is reflected
-- (an orthogonal map) so that its group's location lies on one common axis, which removes the groups'
-- locations; the location is the centroid of the other items of its group, shrunk towards the grand
-- mean by the share of the between-group sum of squares that differing locations explain (0 when the
-- centroids differ no more than equal locations make them: the items are then permuted as they are).
-- Each permuted grouping then re-estimates W̃_g, a and b as the observed one did. In simulation
-- {{figure dispersion.level}} (`validation/calibration.json`, `validation/dispersion_validity.py`).  The scheme it replaces
-- (betadisper's distances, their ANOVA F, the residual vectors permuted) rejected {{figure dispersion.level_old range}} on the same designs, and vegan's `permutest` (its
-- distances' residuals permuted) {{figure dispersion.level_vegan range}} ({{figure dispersion.level_vegan replicates}} data sets each).  F is therefore not betadisper's ANOVA F;
-- `emb_dispersion_groups`' mean_distance is betadisper's `group.distances`.  Groups with fewer than
-- 4 items are left out of the test (a and b need 4 items).  With fewer than two groups of 4 or more
-- items the test does not run: `f`, `p_value` and `permutations` are NULL and `note` says so.
-- Arguments, labels, identical vectors and interrupts as for `emb_permanova`.
-- @example
-- SELECT * FROM emb_dispersion('many', 'topic', 'embedding', model := 'model', permutations := 199);
CREATE OR REPLACE TEMP MACRO emb_dispersion(source, "group", vector, model := NULL, permutations := 999, seed := 42, bad_rows := 'error') AS TABLE
SELECT COLUMNS(lambda c: NOT starts_with(c, '__emb_')
                         AND (emb__skip_asked(bad_rows) OR c NOT IN ('skipped_null', 'skipped_zero', 'skipped_nonfinite')))
FROM (SELECT d.* EXCLUDE (__emb_all, __emb_t),
             d.__emb_t.groups AS groups, d.__emb_t.f AS f, d.__emb_t.p_value AS p_value,
             d.__emb_t.permutations AS permutations, d.__emb_t.groups_left_out AS groups_left_out,
             d.__emb_t.items_left_out AS items_left_out, d.__emb_t.note AS note
      FROM emb__dispersion_checked(
               emb__checked_names(emb__checked_source(source, 'emb_dispersion', model, emb__outputs_emb_dispersion()), 'emb_dispersion', [['group', "group"], ['vector', vector]]),
               "group", vector, model, permutations, seed, skip := emb__skip_rows(bad_rows)) d) d
LEFT JOIN emb__skipped(source, "group", vector, model, emb__skip_rows(bad_rows)) s
    ON d.__emb_b IS NOT DISTINCT FROM s.__emb_sb
ORDER BY d.__emb_b;

-- @function emb_dispersion_groups(source, "group", vector, model := NULL, permutations := 999, seed := 42, bad_rows := 'error')
-- Per group, the spreads behind `emb_dispersion`: one row per group (and model, first under its
-- own name).  The test compares the groups' W̃_g (`emb_groups`), by the studentised F and aligned
-- permutation that `emb_dispersion` describes; `in_test` says which groups it used.
-- @param source the table to read: a table or view name, or a file DuckDB reads
-- @param "group" the group column (GROUP is a keyword: by name it is written `"group" := 'topic'`)
-- @param vector the vector column; vectors are scaled to unit length
-- @param model the model column: the groups of each model
-- @param permutations the number of permutations of the test (as `emb_dispersion`)
-- @param seed the random seed, a whole number (0 or more)
-- @param bad_rows `'error'` (the default): a NULL, zero or non-finite vector is an error naming its group and model; `'skip'`: those rows are left out and counted in the `skipped_` columns
-- @column <model> the model, under the model column's own name (only with `model`)
-- @column group the group label (as text)
-- @column n_g number of vectors in the group
-- @column mean_distance mean distance to the group centroid, unadjusted (betadisper's `group.distances` without `bias.adjust`)
-- @column in_test false for the groups left out of the dispersion test
-- @column skipped_null rows left out for a NULL vector (or a NULL element), per model, on each of its groups' rows (only with `bad_rows := 'skip'`)
-- @column skipped_zero rows left out for a zero vector (only with `bad_rows := 'skip'`)
-- @column skipped_nonfinite rows left out for a NaN or infinite coordinate (only with `bad_rows := 'skip'`)
-- @example
-- SELECT * FROM emb_dispersion_groups('many', 'topic', 'embedding', model := 'model', permutations := 99);
CREATE OR REPLACE TEMP MACRO emb_dispersion_groups(source, "group", vector, model := NULL, permutations := 999,
                                                   seed := 42, bad_rows := 'error') AS TABLE
SELECT COLUMNS(lambda c: NOT starts_with(c, '__emb_')
                         AND (emb__skip_asked(bad_rows) OR c NOT IN ('skipped_null', 'skipped_zero', 'skipped_nonfinite')))
FROM (SELECT d.* EXCLUDE (__emb_all, __emb_t), unnest(d.__emb_t.labels) AS "group",
             unnest(d.__emb_t.sizes) AS n_g, unnest(d.__emb_t.mean_distance) AS mean_distance,
             unnest(d.__emb_t.in_test) AS in_test, unnest(range(len(d.__emb_t.labels))) AS __emb_i
      FROM emb__dispersion_checked(
               emb__checked_names(emb__checked_source(source, 'emb_dispersion_groups', model, emb__outputs_emb_dispersion_groups()), 'emb_dispersion_groups', [['group', "group"], ['vector', vector]]),
               "group", vector, model, permutations, seed, skip := emb__skip_rows(bad_rows)) d) d
LEFT JOIN emb__skipped(source, "group", vector, model, emb__skip_rows(bad_rows)) s
    ON d.__emb_b IS NOT DISTINCT FROM s.__emb_sb
ORDER BY d.__emb_b, d.__emb_i;
