-- ---------------------------------------------------------------------------
-- The distance route: the same decomposition from a table of pairwise
-- dissimilarities (i, j, distance) and a labels table (item, group).  Any dissimilarity.
--   SS_T = (1/n) sum_{i<j} d_ij^2,   SS_W = sum_g (1/n_g) sum_{i<j in g} d_ij^2
-- Sums of squared distances have no cancellation, so they need no second pass; every check is a
-- filter (never pruned, whatever columns a query reads).
-- ---------------------------------------------------------------------------
CREATE OR REPLACE TEMP MACRO emb__anova_dist(distances, labels_tbl, "group", i_col, j_col, distance, item) AS TABLE
WITH labels AS MATERIALIZED (
    SELECT
        CASE
            WHEN idcols = 1 THEN error(format('embsql: [column.missing] id column "{}" not found in {}', item, labels_tbl))
            WHEN gcols = 1 THEN error(format('embsql: [column.missing] group column "{}" not found in {}', "group", labels_tbl))
            ELSE id0
        END AS id,
        g
    FROM (
        SELECT
            coalesce(*COLUMNS(lambda c: c IN (item, '__emb_null'))) AS id0,
            (SELECT len(list_value(*COLUMNS(lambda c: c IN (item, '__emb_null')))) FROM (SELECT *, NULL AS __emb_null FROM query_table(labels_tbl) LIMIT 1)) AS idcols,
            coalesce(*COLUMNS(lambda c: c IN ("group", '__emb_null'))) AS g,
            (SELECT len(list_value(*COLUMNS(lambda c: c IN ("group", '__emb_null')))) FROM (SELECT *, NULL AS __emb_null FROM query_table(labels_tbl) LIMIT 1)) AS gcols
        FROM (SELECT *, NULL AS __emb_null FROM query_table(labels_tbl))
    )
),
labels_ruled AS (
    -- the label rule of emb__rows: NULL and NaN labels refused, -0.0 is 0.0
    SELECT id, CASE
        WHEN id IS NULL THEN error(format('embsql: [label.null] id column "{}" in {} has a NULL id', item, labels_tbl))
        ELSE emb__label(g, emb__label_double(g), "group", 'group', place := format(' for id {}', id)) END AS g
    FROM labels
),
labels_checked AS MATERIALIZED (
    SELECT id, g, count(*) OVER (PARTITION BY g) AS n_g
    FROM labels_ruled
    QUALIFY CASE
        WHEN count(*) OVER (PARTITION BY id) > 1 THEN error(format('embsql: [label.duplicate] id {} appears more than once in {}', id, labels_tbl))
        ELSE true END
),
raw AS (
    SELECT
        CASE
            WHEN icols = 1 THEN error(format('embsql: [column.missing] first item column "{}" not found in {}', i_col, distances))
            WHEN jcols = 1 THEN error(format('embsql: [column.missing] second item column "{}" not found in {}', j_col, distances))
            WHEN dcols = 1 THEN error(format('embsql: [column.missing] distance column "{}" not found in {}', distance, distances))
            ELSE i0
        END AS i,
        j, d
    FROM (
        SELECT
            coalesce(*COLUMNS(lambda c: c IN (i_col, '__emb_null'))) AS i0,
            (SELECT len(list_value(*COLUMNS(lambda c: c IN (i_col, '__emb_null')))) FROM (SELECT *, NULL AS __emb_null FROM query_table(distances) LIMIT 1)) AS icols,
            coalesce(*COLUMNS(lambda c: c IN (j_col, '__emb_null'))) AS j,
            (SELECT len(list_value(*COLUMNS(lambda c: c IN (j_col, '__emb_null')))) FROM (SELECT *, NULL AS __emb_null FROM query_table(distances) LIMIT 1)) AS jcols,
            coalesce(*COLUMNS(lambda c: c IN (distance, '__emb_null')))::DOUBLE AS d,
            (SELECT len(list_value(*COLUMNS(lambda c: c IN (distance, '__emb_null')))) FROM (SELECT *, NULL AS __emb_null FROM query_table(distances) LIMIT 1)) AS dcols
        FROM (SELECT *, NULL AS __emb_null FROM query_table(distances))
    )
),
raw_checked AS (
    SELECT least(i, j) AS a, greatest(i, j) AS b, d
    FROM raw
    WHERE CASE
        WHEN i IS NULL OR j IS NULL THEN error(format('embsql: [distance.null_id] distance table {} has a NULL id in "{}" or "{}"', distances, i_col, j_col))
        WHEN d IS NULL OR isnan(d) THEN error(format('embsql: [distance.invalid] distance for pair ({}, {}) in column "{}" is NULL or NaN', i, j, distance))
        WHEN isinf(d) THEN error(format('embsql: [distance.invalid] distance for pair ({}, {}) in column "{}" is infinite', i, j, distance))
        WHEN d < 0 THEN error(format('embsql: [distance.invalid] distance for pair ({}, {}) in column "{}" is negative ({})', i, j, distance, d))
        ELSE true END
),
pairs AS (
    SELECT a, b, min(d) AS d, max(d) AS d_max
    FROM raw_checked GROUP BY a, b
),
joined AS (
    SELECT
        p.d * p.d AS d2,
        la.g = lb.g AND p.a <> p.b AS same,
        p.a <> p.b AS off_diagonal,
        la.n_g
    FROM pairs p
    LEFT JOIN labels_checked la ON la.id = p.a
    LEFT JOIN labels_checked lb ON lb.id = p.b
    WHERE CASE
        WHEN p.a = p.b AND p.d_max <> 0 THEN error(format(
            'embsql: [distance.self] distance of id {} to itself is {}, not 0', p.a, p.d_max))
        WHEN p.d <> p.d_max THEN error(format(
            'embsql: [distance.asymmetric] pair ({}, {}) is given in both orders with different distances ({} and {})', p.a, p.b, p.d, p.d_max))
        WHEN la.id IS NULL THEN error(format('embsql: [distance.unlabelled] id {} in distance table {} has no label in {}', p.a, distances, labels_tbl))
        WHEN lb.id IS NULL THEN error(format('embsql: [distance.unlabelled] id {} in distance table {} has no label in {}', p.b, distances, labels_tbl))
        ELSE true END
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
SELECT n, groups, ss_t, ss_w,
    ss_t - ss_w AS ss_b,  -- signed, as vegan's adonis2: negative only for a non-Euclidean dissimilarity
    (ss_t - ss_w) / ss_t AS r2,
    (groups - 1.0) / (n - 1.0) AS r2_null,
    CASE WHEN ss_w = 0 THEN 'infinity'::DOUBLE
         ELSE ((ss_t - ss_w) / (groups - 1.0)) / (ss_w / (n - groups)) END AS f
FROM stats
WHERE CASE
        WHEN n = 0 THEN emb__no_rows_error(labels_tbl)
        WHEN n_pairs <> n * (n - 1) / 2 THEN error(format(
            'embsql: [distance.incomplete] distance table {} has {} distinct pairs, but {} labelled ids need {}: missing pair(s), e.g. {}',
            distances, n_pairs, n, n * (n - 1) // 2,
            (SELECT min((l1.id, l2.id))
             FROM labels_checked l1 JOIN labels_checked l2 ON l1.id < l2.id
             ANTI JOIN pairs p ON p.a = l1.id AND p.b = l2.id)))
        WHEN groups < 2 THEN emb__fail_design_one_group(format('group column "{}"', "group"), '', 'the decomposition')
        WHEN n = groups THEN emb__fail_design_no_residual_df(format(' in "{}"', "group"), 'id', n, '', 'SS_W and F')
        WHEN ss_t <= 0 THEN emb__fail_design_zero_distances('R2 and F are')

        ELSE true
    END;

-- @function emb_anova_dist(distances, labels, "group", i := 'i', j := 'j', distance := 'd', item := 'id')
-- The same decomposition from pairwise dissimilarities, for any dissimilarity (Euclidean, cosine
-- distance, Bray–Curtis, a distance between two models' outputs): SS_T = (1/n) Σ_{i<j} d²_ij and
-- SS_W = Σ_g (1/n_g) Σ_{i<j in g} d²_ij.  One row.  SS_B = SS_T − SS_W is returned signed, with R² and
-- F as their definitions give (as vegan's adonis2 does): for a Euclidean-embeddable dissimilarity
-- SS_B ≥ 0, but for one that is not (its principal coordinates have negative eigenvalues) SS_W can
-- exceed SS_T, and SS_B, R² and F are then negative; that says the dissimilarity is not Euclidean-
-- embeddable, not that the groups differ less than at random.
-- @param distances the distance table: one row per unordered pair of items (either triangle, or both orders with equal values; zero self-distances are allowed)
-- @param labels the labels table: an item column and the group column
-- @param "group" the labels table's group column
-- @param i the distance table's first item column
-- @param j the distance table's second item column
-- @param distance the distance table's distance column
-- @param item the labels table's item column
-- @column n number of labelled items
-- @column groups number of groups G
-- @column ss_t total sum of squares (1/n) Σ_{i<j} d²_ij
-- @column ss_w within-group sum of squares Σ_g (1/n_g) Σ_{i<j in g} d²_ij
-- @column ss_b SS_T − SS_W, signed: negative only when the dissimilarity is not Euclidean-embeddable
-- @column r2 SS_B / SS_T (negative with SS_B)
-- @column r2_null (G − 1)/(n − 1)
-- @column f pseudo-F = (SS_B/(G−1)) / (SS_W/(n−G)); infinite when SS_W = 0, negative with SS_B
-- @notes
-- Errors: a pair given in both orders with different values, a missing pair (the error names
-- one), an item without a label (named), a duplicated item, a NULL or NaN label (named with its
-- item; -0.0 and 0.0 are one group), a negative, NULL, NaN or infinite distance, a non-zero
-- distance of an item to itself, a missing column, an empty labels table, one group, n = G, every
-- distance 0.  Sums of squared distances have no cancellation, so this route needs no second pass.
-- @example
-- SELECT * FROM emb_anova_dist('dist', 'lab', 'topic');
-- -- n 4, groups 2, ss_t 2.2, ss_w 0.4, ss_b 1.8, r2 0.8182, r2_null 0.3333, f 9.0
CREATE OR REPLACE TEMP MACRO emb_anova_dist(distances, labels, "group", i := 'i', j := 'j', distance := 'd',
                                            item := 'id') AS TABLE
FROM emb__anova_dist(emb__checked_names(distances, 'emb_anova_dist', [['i', i], ['j', j], ['distance', distance]]),
    emb__checked_names(labels, 'emb_anova_dist', [['group', "group"], ['item', item]]), "group", i, j, distance, item);
