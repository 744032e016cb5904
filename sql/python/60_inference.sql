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

CREATE OR REPLACE TEMP MACRO emb__permanova(tbl, group_col, vector_col, by_col, permutations, seed, strata_col,
                                       statistic, null_method) AS TABLE
WITH test AS (
    SELECT __emb_b,
        emb__permanova_test(list(__emb_g::VARCHAR), list(__emb_v::DOUBLE[]), list(__emb_x::VARCHAR),
                            vector_col, emb__whole_argument(permutations, 'permutations'),
                            emb__whole_argument(seed, 'seed'), strata_col IS NOT NULL,
                            emb__text_argument(statistic, 'statistic'), group_col, any_value(typeof(__emb_g)),
                            emb__null_method_argument(null_method)) AS t
    FROM emb__rows(tbl, group_col, vector_col, by_col, strata_col)
    GROUP BY __emb_b
)
SELECT a.*, test.t.p_value AS p_value, test.t.permutations AS permutations, test.t.statistic_name AS statistic,
       test.t.w_d AS w_d, test.t.null_method AS null_method, test.t.groups_left_out AS groups_left_out,
       test.t.items_left_out AS items_left_out, test.t.note AS note
FROM emb__anova(tbl, group_col, vector_col, by_col) a
JOIN test ON a.__emb_b IS NOT DISTINCT FROM test.__emb_b
ORDER BY a.__emb_b;

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
