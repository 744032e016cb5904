-- Multi-term PERMANOVA with adonis2's semantics: emb_permanova_terms.  Loaded by embsql.register(con)
-- after the UDF it calls (udfs/permanova_terms.py).  Each item's term columns go to the UDF as one JSON
-- object (numbers stay numbers: covariates; text: factors); the UDF puts the items in canonical order.

-- the column names the terms use: 'a:b' and 'a*b' name a and b
CREATE OR REPLACE TEMP MACRO emb__term_columns(terms) AS
    list_distinct(flatten(list_transform(terms, lambda t: list_transform(string_split_regex(t, '[:*]'),
                                                                          lambda c: trim(c)))));

-- sums := : 'sequential' or 'margin' (as the Python face and kernel name it); NULL would skip the UDF
CREATE OR REPLACE TEMP MACRO emb__sums_argument(value) AS
    CASE WHEN typeof(value) = 'VARCHAR' AND value::VARCHAR IN ('sequential', 'margin') THEN value::VARCHAR
         ELSE error(format('embsql: [argument.sums] sums must be ''sequential'' or ''margin'', not {}',
                           coalesce(CASE WHEN typeof(value) = 'VARCHAR' THEN '''' || value::VARCHAR || ''''
                                         ELSE value::VARCHAR END, 'NULL')))
    END;

-- permute := : 'residuals' (Freedman-Lane under each term's reduced model), 'rows' (adonis2) or
-- 'residuals_free' (Freedman-Lane with an interaction's residuals permuted freely too); the
-- message is the catalogue's argument.permute, worded as embsql.core.permanova_terms.check_permute's
CREATE OR REPLACE TEMP MACRO emb__permute_argument(value) AS
    CASE WHEN typeof(value) = 'VARCHAR' AND value::VARCHAR IN ('residuals', 'rows', 'residuals_free') THEN value::VARCHAR
         ELSE emb__fail_argument_permute('permute', '''residuals'' (Freedman-Lane), ''rows'' (adonis2) or ''residuals_free''',
                                         coalesce(CASE WHEN typeof(value) = 'VARCHAR' THEN '''' || value::VARCHAR || ''''
                                                       ELSE value::VARCHAR END, 'NULL'))
    END;

-- One row per tested term, then Residual and Total, per value of the model column (which keeps its name).
-- With skip (bad_rows := 'skip'), the rows whose vector emb__unusable refuses are left out of the
-- test and counted per model (skipped); the kernel names a bad vector by its row in the table, from 1.
CREATE OR REPLACE TEMP MACRO emb__permanova_terms(source, terms, vector, sums, permute, permutations, seed, strata,
                                                  model, skip := false) AS TABLE
WITH items AS (
    SELECT *, CASE WHEN skip AND emb__is_vector_type(__emb_vtype)
                   THEN emb__unusable(__emb_v, __emb_n2, emb__norm_scale(__emb_v, __emb_n2)) END AS __emb_bad
    FROM (SELECT *, CASE WHEN skip THEN emb__norm2(__emb_v) END AS __emb_n2
    FROM (
    SELECT COLUMNS(lambda c: c IN (model, '__emb_all')),
           coalesce(*COLUMNS(lambda c: c IN (model, '__emb_null'))) AS __emb_b,
           to_json(struct_pack(*COLUMNS(lambda c: list_contains(emb__term_columns(terms), c) OR c = '__emb_null')))::VARCHAR AS __emb_j,
           -- (through the typed emb__vector: a text column binds, and is refused by its type in tested)
           emb__vector(struct_extract_at(row(*COLUMNS(lambda c: c IN (vector, '__emb_null'))), 1)) AS __emb_v,
           (SELECT typeof(coalesce(*COLUMNS(lambda c: c IN (vector, '__emb_null'))))
            FROM (SELECT 1) LEFT JOIN (SELECT *, NULL AS __emb_null FROM query_table(source) LIMIT 1) ON true) AS __emb_vtype,
           coalesce(*COLUMNS(lambda c: c IN (strata, '__emb_null')))::VARCHAR AS __emb_x,
           row_number() OVER () - 1 AS __emb_row
    FROM (SELECT *, 1 AS __emb_all, NULL AS __emb_null FROM query_table(source))))
),
skipped AS (
    SELECT __emb_b AS __emb_sb, unnest(emb__skip_counts(list(__emb_bad) FILTER (__emb_bad IS NOT NULL)))
    FROM items
    WHERE skip
    GROUP BY __emb_b
),
test AS (
    SELECT COLUMNS(lambda c: c IN (model, '__emb_all')), __emb_b,
           emb__permanova_terms_test(list(__emb_j ORDER BY __emb_row), list(__emb_v ORDER BY __emb_row),
                                     list(__emb_x ORDER BY __emb_row), terms::VARCHAR[], vector,
                                     emb__sums_argument(sums), emb__permute_argument(permute),
                                     emb__whole_argument(permutations, 'permutations'),
                                     emb__whole_argument(seed, 'seed'), strata IS NOT NULL, source,
                                     list(__emb_row ORDER BY __emb_row),
                                     -- (what the kernel adds to a row it names: the model; never NULL, which
                                     -- would make the kernel's result NULL)
                                     CASE WHEN model IS NULL THEN ''
                                          WHEN typeof(any_value(__emb_b)) = 'VARCHAR'
                                              THEN format(' (model ''{}'')', any_value(__emb_b))
                                          ELSE format(' (model {})', any_value(__emb_b)) END) AS __emb_r,
           min(__emb_row) AS __emb_first, any_value(__emb_vtype) AS __emb_vtype
    FROM items
    WHERE __emb_bad IS NULL
    GROUP BY ALL
),
-- a NULL or NaN model value is refused as in emb_anova (never a row for a NULL model), naming a row
tested AS (
    SELECT * EXCLUDE (__emb_r, __emb_first, __emb_vtype), __emb_r.value AS __emb_rows FROM test
    WHERE CASE
        WHEN model IS NOT NULL AND NOT emb__model_case(source, model) THEN false    -- (another case: refused)
        WHEN NOT emb__is_vector_type(__emb_vtype) THEN emb__fail_vector_type('vector', vector, source, __emb_vtype)
        WHEN model IS NOT NULL
             AND (SELECT len(list_value(*COLUMNS(lambda c: c IN (model, '__emb_null'))))
                  FROM (SELECT *, NULL AS __emb_null FROM query_table(source) LIMIT 1)) = 1
            THEN emb__fail_column_missing('model', format('"{}"', model), source, '')
        WHEN model IS NOT NULL AND (__emb_b IS NULL OR (typeof(__emb_b) IN ('FLOAT', 'DOUBLE')
                                                            AND isnan(emb__label_double(__emb_b))))
            THEN emb__fail_label_null('model', format('"{}"', model), CASE WHEN __emb_b IS NULL THEN 'NULL' ELSE 'NaN' END,
                                      format(' at row {} of {}', __emb_first, source))
        ELSE emb__udf_ok(__emb_r)
    END
)
SELECT t.* EXCLUDE (__emb_all, __emb_k, __emb_rows),
       emb__whole_argument(permutations, 'permutations') AS permutations, emb__permute_argument(permute) AS permute,
       s.skipped_null, s.skipped_zero, s.skipped_nonfinite
FROM (SELECT *, unnest(__emb_rows, recursive := true), unnest(range(len(__emb_rows))) AS __emb_k FROM tested) t
LEFT JOIN skipped s ON t.__emb_b IS NOT DISTINCT FROM s.__emb_sb
ORDER BY t.__emb_b, t.__emb_k;

-- @function emb_permanova_terms(source, terms, vector, sums := 'sequential', permute := 'residuals', permutations := 999, seed := 42, strata := NULL, model := NULL, bad_rows := 'error')
-- Multi-term PERMANOVA with the semantics of vegan's `adonis2(d ~ a + b, by = ...)`, on unit
-- vectors (Euclidean distances between them).  One row per tested term, then the `Residual` and
-- `Total` rows (per value of the model column, which comes first under its own name).
-- @param source the table to read: a table or view name, or a file DuckDB reads
-- @param terms the term columns, in order: `['language', 'topic']`, interactions `'language:topic'`, and `'a*b'` for `a + b + a:b`
-- @param vector the vector column; vectors are scaled to unit length
-- @param sums which sums of squares each term is tested on: `'sequential'` (adonis2's `by = "terms"`) or `'margin'` (`by = "margin"`)
-- @param permute what a permutation permutes: `'residuals'` (Freedman-Lane: each term's reduced-model residuals, an interaction's within the levels of its first factor; the default), `'residuals_free'` (Freedman-Lane, every term's residuals permuted freely) or `'rows'` (adonis2: the rows, every model refitted)
-- @param permutations the number of permutations, a whole number from 1 to 1,000,000
-- @param seed the random seed, a whole number (0 or more)
-- @param strata a column whose levels the rows (or residuals) are permuted within
-- @param model the model column: the table per value of it
-- @param bad_rows `'error'` (the default): a NULL, zero or non-finite vector is an error naming its row (from 1) and model; `'skip'`: those rows are left out and counted in the `skipped_` columns
-- @column <model> the model, under the model column's own name (only with `model`)
-- @column term the term label (`'a:b'` for an interaction), `'Residual'` or `'Total'`
-- @column df degrees of freedom the term adds (residual: n − 1 − model df; total: n − 1)
-- @column ss its sum of squares (residual and total rows: SS_res, SS_T)
-- @column r2 ss / SS_T
-- @column f pseudo-F = (ss / df) / (SS_res / df_res), SS_res of the full model; NULL on the last two rows
-- @column p_value permutation p, (b + 1)/(B + 1); NULL on the last two rows
-- @column permutations B
-- @column permute what was permuted: `'residuals'`, `'residuals_free'` or `'rows'`
-- @column skipped_null rows left out for a NULL vector (or a NULL element), per model, on each of its rows (only with `bad_rows := 'skip'`)
-- @column skipped_zero rows left out for a zero vector (only with `bad_rows := 'skip'`)
-- @column skipped_nonfinite rows left out for a NaN or infinite coordinate (only with `bad_rows := 'skip'`)
-- @notes
-- As in R, terms are ordered by degree (main effects, then two-way interactions, ...).  A text or
-- boolean column is a factor (levels − 1 df); a numeric column a continuous covariate (1 df).
-- `sums := 'sequential'`: each term's SS after the terms before it, so the SS add up to the model
-- SS and depend on the order.  `'margin'`: each term after all the others, order-free; terms
-- contained in an interaction are not tested (as vegan's drop.scope), so `['a*b']` tests only
-- `a:b`.  Each term is tested against its reduced model R (the terms before it; for `'margin'`,
-- all the others).  `permute := 'residuals'` (Freedman and Lane 1983; the default of Anderson's
-- PERMANOVA): the residuals of R are permuted (freely, or within levels of `strata`) and added
-- back to R's fit, which keeps the level of a term after a strong factor: at 5%, {{figure terms.freedman_lane range}} in
-- {{figure terms.freedman_lane count}} null designs of n = 120 (R² of the first factor 0 to 0.8, isotropic and anisotropic noise,
-- balanced and unbalanced crossed designs, strata, interactions, d = 16 and 384), conservative
-- ({{figure terms.freedman_lane_sets_384 range}}) after about 30 paraphrase-like sets at d = 384 (validation/README.md, terms_validity).
-- An interaction's residuals are permuted within the levels of its first factor (`a` of `a:b`): on
-- unit vectors a strong factor's levels differ in spread, and free permutation of the residuals
-- rejected up to {{figure terms.interaction_free high}} of true nulls at 5% for a:b after R² 0.54-0.8 of a ({{figure terms.interaction_free_spreads high}} with levels of
-- very unequal spread and size), {{figure terms.interaction_within}} and {{figure terms.interaction_within_spreads high}} there
-- (validation/terms_validity_interaction.txt); `permute := 'residuals_free'` permutes freely.  After many small sets (paraphrases) at d = 384 both schemes are
-- conservative; `strata :=` the sets column held the level ({{figure terms.strata_sets range}}).
-- `permute := 'rows'` is adonis2's: the rows are permuted and every model refitted; the marginal
-- statistic of a term is F* = ((SS*_full − SS*_without term)/df)/(SS*_res/df_res).  After a factor
-- with R² 0.54 it rejected {{figure terms.rows_strong_isotropic range}} of true nulls at 5% with isotropic noise ({{figure terms.rows_strong_anisotropic range}} with
-- anisotropic noise), and it has less power.  The first term of
-- a sequential test, and a one-term call, have the intercept as R, so both give the same p there.
-- SS, R² and F equal `adonis2`'s to 1e-9, and with `permute := 'rows'` the p-values too within
-- Monte Carlo error (tests/core/test_permanova_terms.py, dune and the bundled example).  Sums of squares are
-- projections: the main-effect factor with most levels by group sums, the other terms by an
-- orthonormal basis of their columns (no n × n matrix unless the one-factor method choice makes a
-- Gram matrix for the permutations).  A one-term call gives `emb_permanova`'s ss, F and p.  Errors
-- (`embsql:`, naming the term or column): a factor with one level, a term that adds no dimension
-- (zero df: constant, or collinear with the earlier terms), a NULL or NaN in a covariate or
-- factor, a term column not in the table, fewer than 3 items, terms that leave no residual df.
-- (`embsql: [argument.permute]`: `permute` not `'residuals'`, `'rows'` or `'residuals_free'`.)
-- Python: `embsql.permanova_terms(con, source, terms=[...], vector=..., sums=..., permute=...)`.
-- @example
-- SELECT term, df, round(ss, 4) AS ss, f, p_value, permute
-- FROM emb_permanova_terms('many', ['topic', 'model'], 'embedding', permute := 'rows', permutations := 99);
CREATE OR REPLACE TEMP MACRO emb_permanova_terms(source, terms, vector, sums := 'sequential', permute := 'residuals',
                                                 permutations := 999, seed := 42, strata := NULL,
                                                 model := NULL, bad_rows := 'error') AS TABLE
SELECT COLUMNS(lambda c: NOT starts_with(c, '__emb_')
                         AND (emb__skip_asked(bad_rows) OR c NOT IN ('skipped_null', 'skipped_zero', 'skipped_nonfinite')))
FROM emb__permanova_terms(
         emb__checked_source(source, 'emb_permanova_terms', model, emb__outputs_emb_permanova_terms()),
         terms, vector, sums, permute, permutations, seed, strata, model, skip := emb__skip_rows(bad_rows)) t;

CREATE OR REPLACE TEMP MACRO emb__permanova_terms_dist(distances, labels_tbl, terms, i_col, j_col, distance, item, sums,
                                                       permute, permutations, seed, strata) AS TABLE
WITH labels AS (
    SELECT coalesce(*COLUMNS(lambda c: c IN (item, '__emb_null')))::VARCHAR AS id,
           to_json(struct_pack(*COLUMNS(lambda c: list_contains(emb__term_columns(terms), c) OR c = '__emb_null')))::VARCHAR AS j,
           coalesce(*COLUMNS(lambda c: c IN (strata, '__emb_null')))::VARCHAR AS s
    FROM (SELECT *, NULL AS __emb_null FROM query_table(labels_tbl))
),
pairs AS (SELECT * FROM emb__distance_pairs(distances, i_col, j_col, distance)),
test AS (
    SELECT emb__permanova_terms_dist_test(
               (SELECT list(a) FROM pairs WHERE a <> b), (SELECT list(b) FROM pairs WHERE a <> b),
               (SELECT list(d) FROM pairs WHERE a <> b), list(id), list(j), list(s), terms::VARCHAR[],
               emb__sums_argument(sums), emb__permute_argument(permute),
               emb__whole_argument(permutations, 'permutations'),
               emb__whole_argument(seed, 'seed'), strata IS NOT NULL, labels_tbl) AS __emb_r
    FROM labels
),
tested AS (SELECT __emb_r.value AS __emb_rows FROM test WHERE emb__udf_ok(__emb_r))
SELECT COLUMNS(lambda c: c <> '__emb_k'), emb__whole_argument(permutations, 'permutations') AS permutations,
       emb__permute_argument(permute) AS permute
FROM (SELECT unnest(__emb_rows, recursive := true), unnest(range(len(__emb_rows))) AS __emb_k FROM tested)
ORDER BY __emb_k;

-- @function emb_permanova_terms_dist(distances, labels, terms, i := 'i', j := 'j', distance := 'd', item := 'id', sums := 'sequential', permute := 'residuals', permutations := 999, seed := 42, strata := NULL)
-- The multi-term test of `emb_permanova_terms` from a distance table (one row per pair, as
-- `emb_anova_dist` takes; every pair of the labelled items must be there, once in either order)
-- and a labels table holding the item and the term columns (and `strata`).  One row per tested
-- term, then `Residual` and `Total`.
-- @param distances the distance table: one row per unordered pair of items
-- @param labels the labels table: the item column and the term columns
-- @param terms the term columns of the labels table, in order (as `emb_permanova_terms`)
-- @param i the distance table's first item column
-- @param j the distance table's second item column
-- @param distance the distance table's distance column
-- @param item the labels table's item column
-- @param sums which sums of squares each term is tested on: `'sequential'` or `'margin'`
-- @param permute what a permutation permutes: `'residuals'` (Freedman-Lane, the default), `'residuals_free'` or `'rows'` (adonis2), as `emb_permanova_terms`
-- @param permutations the number of permutations, a whole number from 1 to 1,000,000
-- @param seed the random seed, a whole number (0 or more)
-- @param strata a column of the labels table whose levels the rows (or residuals) are permuted within
-- @column term the term label, `'Residual'` or `'Total'`
-- @column df degrees of freedom
-- @column ss its sum of squares
-- @column r2 ss / SS_T
-- @column f pseudo-F; NULL on the last two rows
-- @column p_value permutation p; NULL on the last two rows
-- @column permutations B
-- @column permute what was permuted: `'residuals'`, `'residuals_free'` or `'rows'`
-- @notes
-- Any dissimilarity: the sums of squares are tr(H G) with G the Gower-centred matrix −½ J D² J and
-- H the projector on a model's columns (McArdle and Anderson 2001), as adonis2 computes them.
-- `permute := 'residuals'` permutes the rows and columns of (I − H_R) G (I − H_R), the Gower matrix
-- of the reduced model R's residuals (vegan's Freedman-Lane for dbrda, to 1e-9 with the same
-- permutations); `'rows'` permutes those of G, as adonis2.
-- @example
-- SELECT * FROM emb_permanova_terms_dist('dist', 'lab', ['topic'], permutations := 99);
CREATE OR REPLACE TEMP MACRO emb_permanova_terms_dist(distances, labels, terms, i := 'i', j := 'j', distance := 'd',
                                                      item := 'id', sums := 'sequential', permute := 'residuals',
                                                      permutations := 999, seed := 42, strata := NULL) AS TABLE
FROM emb__permanova_terms_dist(emb__checked_names(distances, 'emb_permanova_terms_dist', [['i', i], ['j', j], ['distance', distance]]),
    emb__checked_names(labels, 'emb_permanova_terms_dist', [['item', item], ['strata', strata]]), terms, i, j, distance, item, sums, permute, permutations, seed,
                               strata);
