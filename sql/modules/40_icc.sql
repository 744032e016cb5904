-- ---------------------------------------------------------------------------
-- ICC(1), one-way random effects:
--   MS_B = SS_B/(G-1),  MS_W = SS_W/(n-G),  n0 = (n - sum_g n_g^2 / n)/(G-1),
--   ICC = (MS_B - MS_W) / (MS_B + (n0-1) MS_W),  F = MS_B/MS_W.
-- One macro for both kinds of value column:
--   * numeric or BOOLEAN (0/1): kind 'scalar', the standard ICC(1) of the raw values,
--   * a numeric vector (FLOAT[], DOUBLE[], FLOAT[d], ...): kind 'trace', the same formula with
--     SS_B and SS_W of the unit vectors, taken from emb__anova (the stated extension).
-- Scalar vs vector: each path has to *bind* whatever the column's type is.  The value column is
-- read through typed macro overloads (emb__icc_num, and emb__vector of emb__rows), which DuckDB resolves by the
-- argument's type at bind time: a vector column becomes NULL::DOUBLE for the scalar path and a
-- number becomes NULL::DOUBLE[] for the vector path.  The vector path hands emb__anova a CTE
-- (__emb_icc_vsrc) in which the value column keeps its name but has type DOUBLE[]; that CTE is
-- empty unless the column is a vector column and every check below has passed, so emb__anova
-- raises only its own vector errors (and names the user's column in them).
-- ---------------------------------------------------------------------------

-- The value as DOUBLE for the scalar path (NULL for any other type).
CREATE OR REPLACE TEMP MACRO emb__icc_num(x DOUBLE) AS x,
    (x BOOLEAN) AS x::INTEGER::DOUBLE,
    (x) AS NULL::DOUBLE;

-- 'scalar', 'trace' or NULL (unsupported) from a type name as typeof() spells it.
CREATE OR REPLACE TEMP MACRO emb__icc_kind(type_name) AS
    CASE
        WHEN type_name = 'BOOLEAN'
          OR regexp_full_match(type_name, '(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|FLOAT|DOUBLE|DECIMAL\(\d+,\d+\))')
            THEN 'scalar'
        WHEN emb__is_vector_type(type_name) THEN 'trace'
    END;

CREATE OR REPLACE TEMP MACRO emb__icc(source, "group", value, model) AS TABLE
WITH __emb_icc_meta AS (
    -- column counts (1 = missing, see 00_conventions) and the value column's type
    SELECT
        len(list_value(*COLUMNS(lambda c: c IN ("group", '__emb_null')))) AS __emb_gcols,
        len(list_value(*COLUMNS(lambda c: c IN (value, '__emb_null')))) AS __emb_vcols,
        len(list_value(*COLUMNS(lambda c: c IN (model, '__emb_null')))) AS __emb_bycols,
        typeof(coalesce(*COLUMNS(lambda c: c IN (value, '__emb_null')))) AS __emb_type,
        emb__icc_kind(typeof(coalesce(*COLUMNS(lambda c: c IN (value, '__emb_null'))))) AS __emb_kind
    FROM (SELECT 1) LEFT JOIN (SELECT *, NULL AS __emb_null FROM query_table(source) LIMIT 1) ON true
),
__emb_icc_rows AS (
    -- the label rule of emb__rows (NULL and NaN refused, -0.0 is 0.0), once the column exists
    SELECT * EXCLUDE (__emb_g0),
        CASE WHEN (SELECT __emb_gcols FROM __emb_icc_meta) = 1
                 THEN error(format('embsql: [column.missing] group column "{}" not found in {}', "group", source))
             WHEN model IS NOT NULL AND (SELECT __emb_bycols FROM __emb_icc_meta) = 1
                 THEN error(format('embsql: [column.missing] model column "{}" not found in {}', model, source))
             WHEN model IS NOT NULL AND (__emb_b IS NULL OR (typeof(__emb_b) IN ('FLOAT', 'DOUBLE')
                                                              AND isnan(emb__label_double(__emb_b))))
                 THEN emb__fail_label_null('model', format('"{}"', model), CASE WHEN __emb_b IS NULL THEN 'NULL' ELSE 'NaN' END,
                                           format(' in a row of group ''{}''', __emb_g0))
             ELSE emb__label(__emb_g0, emb__label_double(__emb_g0), "group", 'group')
        END AS __emb_g
    FROM (
        SELECT
            COLUMNS(lambda c: c IN (model, '__emb_all')),
            coalesce(*COLUMNS(lambda c: c IN (model, '__emb_null'))) AS __emb_b,
            coalesce(*COLUMNS(lambda c: c IN ("group", '__emb_null'))) AS __emb_g0,
            emb__icc_num(coalesce(*COLUMNS(lambda c: c IN (value, '__emb_null')))) AS __emb_x
        FROM (SELECT *, 1 AS __emb_all, NULL AS __emb_null FROM query_table(source))
    )
),
__emb_icc_centred AS (
    -- centred first, on the grand mean of the model: a constant shift of the values (BIGINTs near
    -- 1e15, where a DOUBLE's spacing is 1/8) leaves the same figures, as the values near 0 give.
    -- x - c is exact for x and c of like size, so the centring loses nothing of the data's spread
    SELECT *, __emb_x - favg(__emb_x) OVER (PARTITION BY __emb_b) AS __emb_xc
    FROM __emb_icc_rows
),
__emb_icc_dev AS (
    -- two passes: deviations from the group mean and of the group mean from the grand mean
    SELECT *,
        __emb_xc - favg(__emb_xc) OVER (PARTITION BY __emb_b, __emb_g) AS __emb_dw,
        favg(__emb_xc) OVER (PARTITION BY __emb_b, __emb_g) - favg(__emb_xc) OVER (PARTITION BY __emb_b) AS __emb_db
    FROM __emb_icc_centred
),
__emb_icc_per_group AS (
    SELECT
        COLUMNS(lambda c: c IN (model, '__emb_all')), __emb_b, __emb_g,
        count(*) AS __emb_rows,
        count(*) FILTER (__emb_x IS NULL) AS __emb_nnull,  -- all rows for a vector column (unused),
        count(*) FILTER (isnan(__emb_x)) AS __emb_nnan,
        count(*) FILTER (isinf(__emb_x)) AS __emb_ninf,
        fsum(__emb_dw * __emb_dw) AS __emb_ss_w,
        fsum(__emb_db * __emb_db) AS __emb_ss_b,
        min(__emb_x) AS __emb_min,
        max(__emb_x) AS __emb_max,
        max(abs(__emb_xc)) AS __emb_cmax
    FROM __emb_icc_dev
    GROUP BY ALL
),
-- every check is a filter (never pruned, whatever columns a query reads)
__emb_icc_checked_groups AS (
    SELECT * EXCLUDE (__emb_rows), __emb_rows AS __emb_n_g
    FROM __emb_icc_per_group, __emb_icc_meta m
    WHERE CASE
            WHEN m.__emb_gcols = 1 THEN error(format('embsql: [column.missing] group column "{}" not found in {}', "group", source))
            WHEN m.__emb_vcols = 1 THEN error(format('embsql: [column.missing] value column "{}" not found in {}', value, source))
            WHEN m.__emb_kind IS NULL THEN error(format(
                'embsql: [column.type] value column "{}" has type {}: ICC needs a numeric or BOOLEAN column, or a numeric vector column (FLOAT[], DOUBLE[], FLOAT[d])',
                value, m.__emb_type))
            WHEN m.__emb_kind = 'scalar' AND __emb_nnull > 0 THEN error(format(
                'embsql: [value.null] value column "{}" has {} NULL value(s) in group ''{}''', value, __emb_nnull, __emb_g))
            WHEN m.__emb_kind = 'scalar' AND __emb_nnan > 0 THEN error(format(
                'embsql: [value.nonfinite] value column "{}" has {} NaN value(s) in group ''{}''', value, __emb_nnan, __emb_g))
            WHEN m.__emb_kind = 'scalar' AND __emb_ninf > 0 THEN error(format(
                'embsql: [value.nonfinite] value column "{}" has {} infinite value(s) in group ''{}''', value, __emb_ninf, __emb_g))
            ELSE true
        END
),
__emb_icc_design AS (
    SELECT
        COLUMNS(lambda c: c IN (model, '__emb_all')), __emb_b,
        any_value(__emb_kind) AS __emb_kind,
        sum(__emb_n_g)::BIGINT AS __emb_n0,
        count(*) AS __emb_groups,
        sum(__emb_n_g * __emb_n_g)::DOUBLE AS __emb_sum_n2,
        -- values constant within each group but not exactly representable (3 x 0.1) leave a within
        -- sum of rounding only, below n (4 eps max|x - c|)^2 (c the grand mean the values were
        -- centred on): that is SS_W = 0 (then F = inf), not 1e-33
        CASE WHEN fsum(__emb_ss_w) <= sum(__emb_n_g) * pow(4 * 2.220446049250313e-16 * max(__emb_cmax), 2)
             THEN 0.0 ELSE fsum(__emb_ss_w) END AS __emb_ss_w,
        fsum(__emb_ss_b) AS __emb_ss_b,
        min(__emb_min) = max(__emb_max) AS __emb_all_equal
    FROM __emb_icc_checked_groups
    GROUP BY ALL
),
__emb_icc_checked AS (
    SELECT * EXCLUDE (__emb_n0), __emb_n0 AS __emb_n
    FROM __emb_icc_design
    WHERE CASE
            WHEN __emb_groups < 2 THEN emb__fail_design_one_group(format('group column "{}"', "group"),
                CASE WHEN __emb_b IS NULL THEN '' ELSE format(' for by value {}', __emb_b) END, 'ICC')
            WHEN __emb_n0 = __emb_groups THEN emb__fail_design_no_residual_df(format(' in "{}"', "group"), 'row',
                __emb_n0, CASE WHEN __emb_b IS NULL THEN '' ELSE format(', by value {}', __emb_b) END, 'MS_W and ICC')
            ELSE true
        END
),
__emb_icc_vsrc AS NOT MATERIALIZED (
    -- the vector path's source: the table with its value column as DOUBLE[] (name kept), and
    -- rows only when the value column is a vector column and every check above passed.  The model
    -- column travels as __emb_icc_model, so that emb__decomposition's outputs (n, ss_w ...) can
    -- never meet a model column of the same name.
    SELECT
        COLUMNS(lambda c: c NOT IN (value, '__emb_icc_pad', '__emb_icc_pad2', '__emb_icc_model')
                          AND (model IS NULL OR c <> model)),
        emb__vector(COLUMNS(lambda c: c IN (value, '__emb_icc_pad'))),
        coalesce(*COLUMNS(lambda c: c IN (model, '__emb_icc_pad2'))) AS __emb_icc_model
    FROM (SELECT *, NULL::DOUBLE[] AS __emb_icc_pad, NULL AS __emb_icc_pad2 FROM query_table(source))
    WHERE (SELECT bool_and(__emb_n > 0 AND __emb_kind = 'trace') FROM __emb_icc_checked)
),
__emb_icc_trace AS (
    SELECT
        __emb_b, n AS __emb_tn, groups AS __emb_tgroups, ss_b AS __emb_tss_b, ss_w AS __emb_tss_w
    FROM emb__decomposition('__emb_icc_vsrc', "group", value,
                            CASE WHEN model IS NULL THEN NULL ELSE '__emb_icc_model' END, true)
),
__emb_icc_stats AS (
    SELECT
        c.* EXCLUDE (__emb_n, __emb_groups, __emb_ss_w, __emb_ss_b),
        CASE WHEN c.__emb_kind = 'trace' THEN t.__emb_tn ELSE c.__emb_n END AS __emb_n,
        CASE WHEN c.__emb_kind = 'trace' THEN t.__emb_tgroups ELSE c.__emb_groups END AS __emb_groups,
        CASE WHEN c.__emb_kind = 'trace' THEN t.__emb_tss_b ELSE c.__emb_ss_b END AS __emb_ss_b,
        CASE WHEN c.__emb_kind = 'trace' THEN t.__emb_tss_w ELSE c.__emb_ss_w END AS __emb_ss_w
    FROM __emb_icc_checked c LEFT JOIN __emb_icc_trace t ON c.__emb_b IS NOT DISTINCT FROM t.__emb_b
),
__emb_icc_mean_squares AS (
    SELECT *,
        __emb_ss_b / (__emb_groups - 1.0) AS __emb_ms_b,
        __emb_ss_w / (__emb_n - __emb_groups) AS __emb_ms_w,
        (__emb_n - __emb_sum_n2 / __emb_n) / (__emb_groups - 1.0) AS __emb_nn0
    FROM __emb_icc_stats
)
SELECT
    COLUMNS(lambda c: c IN (model, '__emb_all')),
    (__emb_ms_b - __emb_ms_w) / (__emb_ms_b + (__emb_nn0 - 1.0) * __emb_ms_w) AS icc,
    __emb_nn0 AS n0,
    __emb_ms_b AS ms_b,
    __emb_ms_w AS ms_w,
    CASE WHEN __emb_ms_w = 0 THEN 'infinity'::DOUBLE ELSE __emb_ms_b / __emb_ms_w END AS f,
    __emb_groups AS groups,
    __emb_n AS n,
    __emb_kind AS kind
-- one row with NULLs when there are no rows (read once, so nothing is computed twice)
FROM (SELECT 1) LEFT JOIN __emb_icc_mean_squares ON true
WHERE CASE
    WHEN __emb_n IS NULL THEN emb__no_rows_error(source)
    WHEN (__emb_kind = 'scalar' AND __emb_all_equal)
      OR NOT (__emb_ms_b + (__emb_nn0 - 1.0) * __emb_ms_w > 0) THEN emb__fail_design_equal_values(
        __emb_n, format('"{}"', value), CASE WHEN __emb_b IS NULL THEN '' ELSE format(', by value {}', __emb_b) END)

    ELSE true
END
ORDER BY __emb_b;

-- @function emb_icc(source, "group", value, model := NULL)
-- ICC(1), the one-way random-effects intraclass correlation:
-- MS_B = SS_B/(G − 1), MS_W = SS_W/(n − G), n0 = (n − Σ_g n_g²/n)/(G − 1) and
-- ICC = (MS_B − MS_W)/(MS_B + (n0 − 1) MS_W).  One row, or one row per value of the model column
-- (which comes first, under its own name).  Unbalanced groups are allowed (n0 is then not n/G).
-- @param source the table to read: a table or view name, or a file DuckDB reads
-- @param "group" the group column (GROUP is a keyword: by name it is written `"group" := 'question'`)
-- @param value the value column: a number or a `BOOLEAN` (the scalar ICC), or a vector (the trace ICC of the unit vectors)
-- @param model the model column: one row per value of it (NULL: one row for the whole table)
-- @column <model> the model, under the model column's own name (only with `model`)
-- @column icc ICC(1); may be negative (down to −1/(n0 − 1)) when groups differ less than chance
-- @column n0 the effective group size (n − Σ n_g²/n)/(G − 1); the group size when balanced
-- @column ms_b between-group mean square SS_B/(G − 1)
-- @column ms_w within-group mean square SS_W/(n − G)
-- @column f MS_B/MS_W (for `trace`, emb_anova's pseudo-F); `inf` when MS_W = 0 (scalar values only)
-- @column groups number of groups G
-- @column n number of rows
-- @column kind `'scalar'` or `'trace'`
-- @notes
-- What is computed depends on the type of `value`:
--
-- * a number (any integer, `DECIMAL`, `FLOAT`, `DOUBLE`) or a `BOOLEAN` (read as 0/1, e.g. correctness):
--   `kind = 'scalar'`, the standard ICC(1) of the raw values (not normalised).  On balanced data
--   it equals pingouin's `intraclass_corr` ICC(1,1) (`tests/reference/pingouin`).  The values are
--   centred on their mean before the sums are taken, so a constant shift does not change the figures:
--   `BIGINT`s near 10^15 give the ICC and F of the same data near 0.
-- * a vector (`FLOAT[]`, `DOUBLE[]`, `FLOAT[d]`, `DOUBLE[d]`, any numeric list): `kind = 'trace'`, the
--   same formula with SS_B and SS_W of the unit vectors, exactly those `emb_anova` reports: a stated
--   extension of ICC to embeddings, the share of the (trace of the) covariance that lies between
--   groups.
--
-- Errors: a missing column; a value column of another type (e.g. `VARCHAR`); a NULL or NaN group
-- label; a source with no rows; for numbers a NULL, NaN or infinite value (named with its group);
-- one group only; n = G (no within-group degrees of freedom); all values equal (MS_B + (n0 − 1) MS_W
-- = 0).  A vector column gets `emb_anova`'s vector errors (NULL, zero-length, NaN or infinite
-- vectors, vectors of different lengths) and its precision errors: identical vectors are refused,
-- never reported as ICC = 1.
--
-- The `scores` table of the examples holds one score and one 0/1 correctness per answer, for three
-- questions of 2, 3 and 4 paraphrases: `emb_icc('scores', 'question', 'score')` gives icc 0.5556
-- (= 5/9), n0 2.8889 (= 26/9), ms_b 18.4444, ms_w 4.0, f 4.6111, groups 3, n 9, kind scalar, and
-- `emb_icc('scores', 'question', 'correct')` icc 0.5094, n0 2.8889, ms_b 0.4444, ms_w 0.1111, f 4.0.
-- @example
-- SELECT * FROM emb_icc('ex', 'topic', 'embedding', model := 'model');
-- -- model  icc  n0   ms_b  ms_w  f    groups  n  kind
-- -- m1     0.8  2.0  1.8   0.2   9.0  2       4  trace
-- -- m2     0.8  2.0  0.9   0.1   9.0  2       4  trace
CREATE OR REPLACE TEMP MACRO emb_icc(source, "group", value, model := NULL) AS TABLE
SELECT r.* EXCLUDE (__emb_all)
FROM emb__icc(
         emb__checked_names(emb__checked_source(source, 'emb_icc', model, emb__outputs_emb_icc()), 'emb_icc', [['group', "group"], ['value', value]]),
         "group", value, model) r;
