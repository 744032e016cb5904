-- ---------------------------------------------------------------------------
-- Shared rules, as scalar macros (each lives here once).
-- ---------------------------------------------------------------------------

-- The smallest root-mean-square spread of unit vectors that float64 resolves: sqrt(eps), squared.
-- Normalising a vector rounds each coordinate to about eps, so a sum of squares SS over n unit
-- vectors with SS / n below eps is rounding noise (the same threshold as embsql/core/precision.py).
CREATE OR REPLACE TEMP MACRO emb__resolution2() AS pow(sqrt(2.220446049250313e-16), 2);

-- The refusal when SS_T (what = 'the vectors', undefined 'R² and F') or SS_W (what = 'the vectors
-- within each group', undefined 'F') is below that resolution; model is the by value or NULL.
-- A value as a message shows it: text quoted ('a'), anything else as it prints (3, true), NULL as NULL.
CREATE OR REPLACE TEMP MACRO emb__shown(x) AS
    coalesce(CASE WHEN typeof(x) = 'VARCHAR' THEN '''' || x::VARCHAR || '''' ELSE x::VARCHAR END, 'NULL');

-- ' of model ''m''' (a number unquoted), or '' when model is NULL (no model column).
CREATE OR REPLACE TEMP MACRO emb__of_model(model) AS
    CASE WHEN model IS NULL THEN '' ELSE ' of model ' || emb__shown(model) END;

CREATE OR REPLACE TEMP MACRO emb__precision_error(what, model, ss, n, undefined) AS emb__fail_design_identical(
    what,
    emb__of_model(model),
    sqrt(greatest(ss, 0.0) / n), sqrt(emb__resolution2()),
    undefined || CASE WHEN undefined LIKE '% and %' THEN ' are' ELSE ' is' END);

CREATE OR REPLACE TEMP MACRO emb__no_rows_error(source) AS emb__fail_source_empty(format('''{}''', source));

-- A label as DOUBLE when it is a number (for the NaN and -0.0 rule below), else NULL.  Typed
-- overloads resolve by the argument's type at bind time, so any label type binds.
CREATE OR REPLACE TEMP MACRO emb__label_double(x DOUBLE) AS x, (x) AS NULL::DOUBLE;

-- The one rule for group labels (as embsql/core/labels.py): a NULL or NaN label is an error naming the
-- column, and -0.0 is 0.0 (the literal '0' takes the label's own type).  x_double is
-- emb__label_double(x), computed by the caller (a scalar macro cannot call a typed one in the CLI),
-- place is '' or says where the label is (' for id 7').
CREATE OR REPLACE TEMP MACRO emb__label(x, x_double, column_name, role, place := '') AS
    CASE
        WHEN x IS NULL THEN emb__fail_label_null(role, format('"{}"', column_name), 'NULL', place)
        WHEN typeof(x) IN ('FLOAT', 'DOUBLE') AND isnan(x_double) THEN
            emb__fail_label_null(role, format('"{}"', column_name), 'NaN', place)
        WHEN typeof(x) IN ('FLOAT', 'DOUBLE') AND x_double = 0 THEN '0'
        ELSE x
    END;

-- A vector column's value as DOUBLE[] (a fixed-size array becomes a list, FLOAT becomes DOUBLE once
-- here), or NULL when the column holds something else (its type is then refused by name).
CREATE OR REPLACE TEMP MACRO emb__vector(x DOUBLE[]) AS x, (x) AS NULL::DOUBLE[];

-- Whether a type name, as typeof() spells it, is a vector of numbers.
CREATE OR REPLACE TEMP MACRO emb__is_vector_type(type_name) AS
    regexp_full_match(type_name, '(U?(TINY|SMALL|BIG|HUGE)?INT(EGER)?|FLOAT|DOUBLE|DECIMAL\(\d+,\d+\))\[\d*\]');

-- A column name as an SQL identifier: bare when plain, double-quoted otherwise.
CREATE OR REPLACE TEMP MACRO emb__sql_name(column_name) AS
    CASE WHEN regexp_full_match(column_name, '[A-Za-z_][A-Za-z0-9_]*') THEN column_name
         ELSE '"' || replace(column_name, '"', '""') || '"' END;

-- What an error about a vector column of type type_name adds: for text, the cast that reads it
-- (embsql.io.columns.CAST_HINT says the same in Python).
CREATE OR REPLACE TEMP MACRO emb__text_vector_hint(column_name, type_name) AS
    CASE WHEN upper(type_name) IN ('VARCHAR', 'JSON') THEN format(
        '; text like ''[0.1, 0.2]'' becomes a vector with SELECT * REPLACE ({}::DOUBLE[] AS {}) FROM ...',
        emb__sql_name(column_name), emb__sql_name(column_name)) ELSE '' END;

-- The refusal of a vector column of type type_name that holds no vectors (for text, with the cast
-- that reads it): every face that checks a vector column's type in SQL raises this one.
CREATE OR REPLACE TEMP MACRO emb__fail_vector_type(role, column_name, source, type_name) AS
    emb__fail_column_type(role, format('"{}"', column_name), source, type_name,
        'a vector column holds lists or arrays of numbers (FLOAT[], DOUBLE[], FLOAT[d], DOUBLE[d])'
        || emb__text_vector_hint(column_name, type_name));

-- Squared norm in double precision.  list_dot_product raises on a NULL element, and TRY() then
-- gives NULL for the whole chunk, so only those rows take the slow exact way.
CREATE OR REPLACE TEMP MACRO emb__norm2(v) AS
    -- an empty vector ([]) has norm 0 (zero-length), whichever value list_dot_product gives it
    -- (NULL for one read from a Parquet file, which would read as a NULL element)
    CASE WHEN len(v) = 0 THEN 0.0 ELSE
    coalesce(TRY(list_dot_product(v::DOUBLE[], v::DOUBLE[])),
             CASE WHEN list_count(v::DOUBLE[]) = len(v::DOUBLE[])
                  THEN list_sum(list_transform(v::DOUBLE[], lambda x: x * x)) END) END;

-- The largest |coordinate|, only for a vector whose squared norm leaves the safe range (it
-- overflowed, like 1e200 * x, or may have lost digits to underflow, like 1e-160 * x); else NULL.
-- Such a vector is normalised by way of v / scale, whose squares are in range.
CREATE OR REPLACE TEMP MACRO emb__norm_scale(v, norm2) AS
    CASE WHEN NOT (norm2 >= 1e-270 AND norm2 <= 1e300)
         THEN list_max(list_transform(v::DOUBLE[], lambda x: abs(x))) END;

-- NULL for a usable vector, else the word for what is wrong with it.
CREATE OR REPLACE TEMP MACRO emb__unusable(v, norm2, scale) AS
    CASE
        WHEN v IS NULL THEN 'NULL'
        WHEN norm2 IS NULL THEN 'NULL-element'
        WHEN isnan(norm2) THEN 'NaN'
        WHEN isinf(scale) THEN 'infinite'
        WHEN norm2 = 0 AND scale IS NULL THEN 'zero-length'
        WHEN scale = 0 THEN 'zero-length'
    END;

-- 1 / ||v|| for a usable vector, so that v * inv is its unit vector.  A vector with a scale has
-- been divided by it already (emb__rows: v / scale, whose largest |coordinate| is 1), so even a
-- subnormal one (1e-310 x v, whose own 1 / ||v|| overflows) gets its direction.
CREATE OR REPLACE TEMP MACRO emb__inverse_norm(v, norm2, scale) AS
    CASE
        WHEN scale IS NULL THEN 1.0 / sqrt(norm2)
        -- (list_sum, not list_dot_product, which raises on the NULL elements this branch would see
        -- if the stock CLI's optimizer evaluated it for every row)
        ELSE 1.0 / sqrt(list_sum(list_transform(v::DOUBLE[], lambda x: x * x)))
    END;

-- bad_rows := for the functions that read vectors: 'error' (the default: an unusable vector is an
-- error) or 'skip' (its row is left out, and counted by emb__skipped); true for 'skip'.
-- (compared as text, so that a number or a boolean is refused by emb__skip_rows, not by a failed
-- cast of 'skip'; emb__skip_asked is the test without the refusal, for a COLUMNS lambda)
CREATE OR REPLACE TEMP MACRO emb__skip_asked(bad_rows) AS
    coalesce(typeof(bad_rows) = 'VARCHAR' AND bad_rows::VARCHAR = 'skip', false);
CREATE OR REPLACE TEMP MACRO emb__skip_rows(bad_rows) AS
    CASE WHEN emb__skip_asked(bad_rows) THEN true
         WHEN typeof(bad_rows) = 'VARCHAR' AND bad_rows::VARCHAR = 'error' THEN false
         ELSE emb__fail_argument_bad_rows('bad_rows', '''error'' or ''skip''', emb__shown(bad_rows))
    END;

-- ---------------------------------------------------------------------------
-- Row stage: select the group, vector and by columns; classify each vector.
-- One row per input row.  __emb_bad is NULL for a usable vector, else a word; __emb_inv is then
-- 1 / ||v||.  __emb_x carries one more column when extra_col names one (strata, items).
-- Every check of a column or a label raises from __emb_g, which every consumer groups by.
-- With skip (bad_rows := 'skip'), the rows with an unusable vector are left out here, the one
-- place every consumer reads rows from (emb__skipped counts them).
-- ---------------------------------------------------------------------------
CREATE OR REPLACE TEMP MACRO emb__rows(source, "group", vector, model, extra_col, skip := false) AS TABLE
-- (nested SELECTs, so that each of the norm steps is computed once per row, not once per use)
SELECT *, CASE WHEN __emb_bad IS NULL THEN emb__inverse_norm(__emb_v, __emb_nrm2, __emb_scale) END AS __emb_inv
FROM (
-- a usable vector whose squared norm leaves the safe range is replaced by v / scale (same direction)
SELECT * REPLACE (CASE WHEN __emb_scale IS NOT NULL AND __emb_bad IS NULL
                       THEN list_transform(__emb_v, lambda x: x / __emb_scale) ELSE __emb_v END AS __emb_v)
FROM (
SELECT *, emb__unusable(__emb_v, __emb_nrm2, __emb_scale) AS __emb_bad
FROM (
SELECT *, emb__norm_scale(__emb_v, __emb_nrm2) AS __emb_scale
FROM (
SELECT
    * EXCLUDE (__emb_g0, __emb_gcols, __emb_vcols, __emb_xcols, __emb_bycols, __emb_vtype),
    CASE
        WHEN __emb_gcols = 1
            THEN error(format('embsql: [column.missing] group column "{}" not found in {}', "group", source))
        WHEN __emb_vcols = 1
            THEN error(format('embsql: [column.missing] vector column "{}" not found in {}', vector, source))
        WHEN NOT emb__is_vector_type(__emb_vtype) THEN emb__fail_vector_type('vector', vector, source, __emb_vtype)
        WHEN extra_col IS NOT NULL AND __emb_xcols = 1
            THEN error(format('embsql: [column.missing] column "{}" not found in {}', extra_col, source))
        WHEN model IS NOT NULL AND __emb_bycols = 1 AND NOT emb__model_case(source, model) THEN NULL  -- (another case)
        WHEN model IS NOT NULL AND __emb_bycols = 1
            THEN error(format('embsql: [column.missing] model column "{}" not found in {}', model, source))
        -- a NULL or NaN model value: refused like a group label (never a row for a NULL model)
        WHEN model IS NOT NULL AND (__emb_b IS NULL OR (typeof(__emb_b) IN ('FLOAT', 'DOUBLE')
                                                         AND isnan(emb__label_double(__emb_b))))
            THEN emb__fail_label_null('model', format('"{}"', model), CASE WHEN __emb_b IS NULL THEN 'NULL' ELSE 'NaN' END,
                                      format(' in a row of group ''{}''', __emb_g0))
        ELSE emb__label(__emb_g0, emb__label_double(__emb_g0), "group", 'group')
    END AS __emb_g,
    emb__norm2(__emb_v) AS __emb_nrm2
FROM (
    SELECT
        COLUMNS(lambda c: c IN (model, '__emb_all')),
        coalesce(*COLUMNS(lambda c: c IN (model, '__emb_null'))) AS __emb_b,
        coalesce(*COLUMNS(lambda c: c IN ("group", '__emb_null'))) AS __emb_g0,
        (SELECT len(list_value(*COLUMNS(lambda c: c IN ("group", '__emb_null')))) FROM (SELECT *, NULL AS __emb_null FROM query_table(source) LIMIT 1)) AS __emb_gcols,
        -- the vector column as DOUBLE[] through the typed emb__vector (any type binds, a fixed-size
        -- array becomes a list, which the stock CLI's CASE needs).  The first of the column and the
        -- NULL stand-in is taken from a row(), not by coalesce, which would copy every list again.
        emb__vector(struct_extract_at(row(*COLUMNS(lambda c: c IN (vector, '__emb_null'))), 1)) AS __emb_v,
        -- the vector column's type, read from a one-row probe that exists even for an empty table
        (SELECT typeof(coalesce(*COLUMNS(lambda c: c IN (vector, '__emb_null'))))
         FROM (SELECT 1) LEFT JOIN (SELECT *, NULL AS __emb_null FROM query_table(source) LIMIT 1) ON true) AS __emb_vtype,
        -- an optional extra column (e.g. permutation strata), NULL when not asked for
        coalesce(*COLUMNS(lambda c: c IN (extra_col, '__emb_null'))) AS __emb_x,
        (SELECT len(list_value(*COLUMNS(lambda c: c IN (extra_col, '__emb_null')))) FROM (SELECT *, NULL AS __emb_null FROM query_table(source) LIMIT 1)) AS __emb_xcols,
        (SELECT len(list_value(*COLUMNS(lambda c: c IN (vector, '__emb_null')))) FROM (SELECT *, NULL AS __emb_null FROM query_table(source) LIMIT 1)) AS __emb_vcols,
        (SELECT len(list_value(*COLUMNS(lambda c: c IN (model, '__emb_null')))) FROM (SELECT *, NULL AS __emb_null FROM query_table(source) LIMIT 1)) AS __emb_bycols
    FROM (SELECT *, 1 AS __emb_all, NULL AS __emb_null FROM query_table(source))
)))))
WHERE NOT skip OR __emb_bad IS NULL;

-- The refusal of an unusable vector, by what emb__unusable said of it (word), with its kind.
CREATE OR REPLACE TEMP MACRO emb__fail_vector(word, column_name, "where") AS
    CASE word WHEN 'NULL' THEN emb__fail_vector_null(column_name, word, "where")
              WHEN 'NULL-element' THEN emb__fail_vector_null_element(column_name, word, "where")
              WHEN 'zero-length' THEN emb__fail_vector_zero(column_name, word, "where")
              ELSE emb__fail_vector_nonfinite(column_name, word, "where") END;

-- The first row whose vector is unusable, in the table's order and counted from 1 as the Python
-- faces count rows, with its model (__emb_b), group (__emb_g), item (__emb_x: the item column, when
-- given) and what is wrong with it (__emb_bad): none when gate is false.  A second pass over the
-- rows, which only a refusal takes: the caller's gate is true only when its own pass found a bad
-- vector, and a false gate stops the pass before it reads a row.
CREATE OR REPLACE TEMP MACRO emb__first_bad_row(source, "group", vector, model, item, gate) AS TABLE
SELECT * FROM (
    -- (the row number over the four columns only, so the window holds no vector)
    SELECT row_number() OVER () AS __emb_row, *
    FROM (SELECT __emb_b, __emb_g, __emb_x, __emb_bad FROM emb__rows(source, "group", vector, model, item) WHERE gate))
WHERE __emb_bad IS NOT NULL
ORDER BY __emb_row
LIMIT 1;

-- The refusal of the row emb__first_bad_row found, worded as the Python faces word it:
--   vector column "v" has a NULL vector at row 4 (model 'a', item 'i03', group 'g3'); ...
-- (the model when there is a model column, the item when the call names an item column)
CREATE OR REPLACE TEMP MACRO emb__fail_bad_row(vector, item, bad_row, bad_model, bad_item, bad_group, word) AS
    emb__fail_vector(word, format('"{}"', vector), format('row {} ({})', bad_row, concat_ws(', ',
        CASE WHEN bad_model IS NOT NULL THEN 'model ' || emb__shown(bad_model) END,
        CASE WHEN item IS NOT NULL THEN 'item ' || emb__shown(bad_item) END,
        'group ' || emb__shown(bad_group))));

-- The counts of bad_rows := 'skip' from the list of what emb__unusable said of the rows it left
-- out: skipped_null (a NULL vector or element), skipped_zero (zero-length), skipped_nonfinite (a NaN
-- or infinite coordinate).  Every face counts its skipped rows per model with this one, as
--   SELECT __emb_b AS __emb_sb, unnest(emb__skip_counts(list(__emb_bad) FILTER (__emb_bad IS NOT NULL)))
CREATE OR REPLACE TEMP MACRO emb__skip_counts(reasons) AS struct_pack(
    skipped_null := len(list_filter(coalesce(reasons, []), lambda r: r IN ('NULL', 'NULL-element'))),
    skipped_zero := len(list_filter(coalesce(reasons, []), lambda r: r = 'zero-length')),
    skipped_nonfinite := len(list_filter(coalesce(reasons, []), lambda r: r IN ('NaN', 'infinite'))));

-- The rows of a table of items and vectors (source) that bad_rows := 'skip' leaves out, per model
-- value as text (__emb_sb; NULL without a model column) and reason; none when skip is false or the
-- vector column holds no vectors (its face refuses its type).  For the faces that read such a table
-- whole (the similarity functions), beside their own reading of it.
CREATE OR REPLACE TEMP MACRO emb__skipped_items(source, model, vector, skip) AS TABLE
SELECT __emb_sb, unnest(emb__skip_counts(list(__emb_bad) FILTER (__emb_bad IS NOT NULL)))
FROM (
    SELECT coalesce(*COLUMNS(lambda c: c IN (model, '__emb_null')))::VARCHAR AS __emb_sb,
           emb__unusable(__emb_v, emb__norm2(__emb_v), emb__norm_scale(__emb_v, emb__norm2(__emb_v))) AS __emb_bad
    FROM (SELECT *, emb__vector(struct_extract_at(row(*COLUMNS(lambda c: c IN (vector, '__emb_null'))), 1)) AS __emb_v
          FROM (SELECT *, NULL AS __emb_null FROM query_table(source)))
    WHERE skip AND emb__is_vector_type((SELECT typeof(coalesce(*COLUMNS(lambda c: c IN (vector, '__emb_null'))))
                                        FROM (SELECT 1) LEFT JOIN (SELECT *, NULL AS __emb_null FROM query_table(source) LIMIT 1) ON true))
)
GROUP BY __emb_sb;

-- The rows bad_rows := 'skip' leaves out, per by value (__emb_sb) and reason: a NULL vector or
-- element, a zero-length vector, a NaN or infinite coordinate (the words of emb__unusable).
-- A second pass over the rows, read only when skip is true.
CREATE OR REPLACE TEMP MACRO emb__skipped(source, "group", vector, model, skip) AS TABLE
SELECT __emb_b AS __emb_sb, unnest(emb__skip_counts(list(__emb_bad) FILTER (__emb_bad IS NOT NULL)))
FROM emb__rows(source, "group", vector, model, NULL)
WHERE skip
GROUP BY __emb_b;

-- ---------------------------------------------------------------------------
-- Sufficient statistics in blocks: one row per (by, group, block of 8 coordinates j = 0, 8, ...)
-- with the group count n_g, the group's within sum of squares __emb_ssw = sum_i ||z_i - mu_g||^2 =
-- n_g W_g (the same on each of its rows), __emb_sj, coordinates j+1 .. j+8 of the sum of unit
-- vectors s_g (NULL past d), and __emb_muj, the same coordinates of the overall mean mu (only
-- when with_mean: a caller that does not need it is spared that aggregate, and its memory).  A block row is 8 coordinates in one row, so what holds these (a
-- materialized CTE) needs a fraction of the memory of one row per coordinate; emb__group_sums
-- below gives the long form.
-- Every input check is a filter here (a filter is never pruned, whatever columns a query reads),
-- so each statistic built on it is checked.
--
-- Stable sums.  From s_g alone, n_g W_g = n_g - ||s_g||^2 / n_g subtracts two numbers of size n_g,
-- which leaves noise of a few n_g eps: fine when W_g is large, garbage when the group's vectors are
-- nearly equal.  So a group whose W_g from s_g is below TIGHT (1e-3; its noise, at most about n_g eps,
-- is then below 3e-7 of W_g even for a million rows) is summed again about its mean mu (the corrected
-- two-pass algorithm): n_g W_g = sum_i ||z_i - mu||^2 - ||t||^2 / n_g and s_g = n_g mu + t, with
-- t = sum_i (z_i - mu).  Both terms are then of the size of the spread, not of n_g.  Only the rows
-- of such groups are read a third time; when there are none (the usual case) that join is empty.
-- ---------------------------------------------------------------------------
CREATE OR REPLACE TEMP MACRO emb__group_blocks(source, "group", vector, model, with_mean, skip := false,
                                               item := NULL) AS TABLE
-- (the CTEs read before the source is read again (bad) have names no table of the user's can have:
-- query_table(source) there would read a CTE of the source's name)
WITH __emb_rows AS NOT MATERIALIZED (
    SELECT *, len(__emb_v) AS __emb_d
    FROM emb__rows(source, "group", vector, model, item, skip := skip)
),
-- Per group, from one row per item: counts, defects and lengths (and the length range of
-- the by value, taken here over G rows rather than over the G * d rows of the sums).
__emb_counts AS (
    SELECT *,
        min(__emb_dmin) OVER (PARTITION BY __emb_b) AS __emb_dmin_all,
        max(__emb_dmax) OVER (PARTITION BY __emb_b) AS __emb_dmax_all
    FROM (
        SELECT
            COLUMNS(lambda c: c IN (model, '__emb_all')), __emb_b, __emb_g,
            count(*) FILTER (__emb_bad IS NULL) AS __emb_n,
            count(*) FILTER (__emb_bad IS NOT NULL) AS __emb_nbad,
            min(__emb_bad) AS __emb_bad,
            min(__emb_d) AS __emb_dmin,
            max(__emb_d) AS __emb_dmax
        FROM __emb_rows
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
-- few (bench/README.md).  __emb_v[1:] reads the list once.
__emb_blocks AS (
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
        FROM (SELECT __emb_b, __emb_g, __emb_inv, __emb_v[1:] AS __emb_z FROM __emb_rows WHERE __emb_bad IS NULL)
    )
    GROUP BY ALL
),
-- the first unusable vector, read again only when counts found one: every group's row refuses
-- that one row, so the message is the same whichever group DuckDB checks first
bad AS (
    SELECT * FROM emb__first_bad_row(source, "group", vector, model, item,
                                     (SELECT max(__emb_nbad) FROM __emb_counts) > 0)
),
-- the checks, on the G rows of counts joined with the G * d / 8 block rows (a group with no usable
-- vector joins no block and keeps one row with a NULL block)
checked AS MATERIALIZED (
    SELECT COLUMNS(lambda c: c IN (model, '__emb_all')), c.__emb_b, c.__emb_g, c.__emb_n, c.__emb_dmax, s.__emb_j, s.__emb_sj
    FROM __emb_counts c
    LEFT JOIN __emb_blocks s ON c.__emb_b IS NOT DISTINCT FROM s.__emb_b AND c.__emb_g = s.__emb_g
    LEFT JOIN bad f ON true
    WHERE CASE
        WHEN f.__emb_row IS NOT NULL
            THEN emb__fail_bad_row(vector, item, f.__emb_row, f.__emb_b, f.__emb_x, f.__emb_g, f.__emb_bad)
        WHEN c.__emb_dmin_all <> c.__emb_dmax_all THEN error(format(
            'embsql: [vector.length] vector column "{}" mixes vectors of length {} and {} (group ''{}'' has length {})',
            vector, c.__emb_dmin_all, c.__emb_dmax_all, c.__emb_g, c.__emb_dmin))
        ELSE true
    END
),
-- n_g W_g from s_g, and which groups need the second sum (more than one row, W_g below TIGHT).
-- (list_sum skips the NULL slots past d.)
naive AS (
    SELECT __emb_b, __emb_g, __emb_n,
           -- a group of one item has no spread: exactly 0, not the rounding of 1 - ||z||^2
           CASE WHEN __emb_n = 1 THEN 0.0 ELSE greatest(0.0, __emb_n - __emb_ss / __emb_n) END AS __emb_ssw,
           __emb_n > 1 AND __emb_ss / (__emb_n::DOUBLE * __emb_n) > 1.0 - 1e-3 AS __emb_tight
    FROM (SELECT __emb_b, __emb_g, max(__emb_n) AS __emb_n,
                 sum(list_sum(list_transform(__emb_sj, lambda x: x * x))) AS __emb_ss
          FROM checked GROUP BY ALL)
),
-- the tight groups only: one row per (group, coordinate) k <= d, their mean from s_g, then each
-- of their rows minus that mean
tight_sums AS (
    SELECT * FROM (
        SELECT COLUMNS(lambda c: c IN (model, '__emb_all')), c.__emb_b, c.__emb_g, c.__emb_n, c.__emb_dmax,
               c.__emb_j + generate_subscripts(c.__emb_sj, 1) AS __emb_k, unnest(c.__emb_sj) AS __emb_s
        FROM checked c SEMI JOIN naive w
            ON w.__emb_tight AND c.__emb_b IS NOT DISTINCT FROM w.__emb_b AND c.__emb_g = w.__emb_g)
    WHERE __emb_k <= __emb_dmax
),
tight_means AS MATERIALIZED (
    SELECT __emb_b, __emb_g, list(__emb_s / __emb_n ORDER BY __emb_k) AS __emb_mu
    FROM tight_sums GROUP BY ALL
),
deviations AS (
    SELECT r.__emb_b, r.__emb_g,
           list_transform(r.__emb_v[1:], lambda x, i: x * r.__emb_inv - m.__emb_mu[i]) AS __emb_dev
    FROM __emb_rows r JOIN tight_means m ON r.__emb_b IS NOT DISTINCT FROM m.__emb_b AND r.__emb_g = m.__emb_g
    WHERE r.__emb_bad IS NULL
),
tight_ss AS (
    SELECT __emb_b, __emb_g, fsum(list_dot_product(__emb_dev, __emb_dev)) AS __emb_dd
    FROM deviations GROUP BY ALL
),
tight_t AS (
    SELECT __emb_b, __emb_g, __emb_k, fsum(__emb_e) AS __emb_t
    FROM (SELECT __emb_b, __emb_g, generate_subscripts(__emb_dev, 1) AS __emb_k, unnest(__emb_dev) AS __emb_e
          FROM deviations)
    GROUP BY ALL
),
tight AS (
    SELECT t.__emb_b, t.__emb_g, t.__emb_k, t.__emb_t,
           greatest(0.0, s.__emb_dd - sum(t.__emb_t * t.__emb_t) OVER (PARTITION BY t.__emb_b, t.__emb_g)
                                      / c.__emb_n) AS __emb_ssw
    FROM tight_t t
    JOIN tight_ss s ON t.__emb_b IS NOT DISTINCT FROM s.__emb_b AND t.__emb_g = s.__emb_g
    JOIN naive c ON t.__emb_b IS NOT DISTINCT FROM c.__emb_b AND t.__emb_g = c.__emb_g
),
-- the overall mean of each coordinate, mu_k = (sum_g s_gk) / n, in the same blocks (NULL past d).
-- From s_g before any correction: SS_B = sum_g n_g ||mu_g - mu||^2 is off by only n ||error of mu||^2.
overall AS (
    SELECT __emb_b, __emb_j, list(__emb_mu ORDER BY __emb_k) AS __emb_muj
    FROM (
        SELECT __emb_b, __emb_j, __emb_k, sum(__emb_s) / sum(__emb_n) AS __emb_mu
        FROM (SELECT __emb_b, __emb_n, __emb_j, __emb_j + generate_subscripts(__emb_sj, 1) AS __emb_k,
                     unnest(__emb_sj) AS __emb_s
              FROM checked WHERE with_mean)
        GROUP BY ALL)
    GROUP BY ALL
),
-- the usual groups' blocks as they are, and the tight ones' corrected (s_g = n_g mu + t) and blocked again
blocked AS (
    SELECT COLUMNS(lambda c: c IN (model, '__emb_all')), c.__emb_b, c.__emb_g, c.__emb_n, w.__emb_ssw, c.__emb_j, c.__emb_sj
    FROM checked c JOIN naive w ON c.__emb_b IS NOT DISTINCT FROM w.__emb_b AND c.__emb_g = w.__emb_g
    WHERE NOT w.__emb_tight
    UNION ALL BY NAME
    SELECT COLUMNS(lambda c: c IN (model, '__emb_all')), __emb_b, __emb_g, __emb_n, __emb_ssw, __emb_j,
           list(__emb_s ORDER BY __emb_k) AS __emb_sj
    FROM (
        SELECT u.* EXCLUDE (__emb_s, __emb_dmax), (u.__emb_k - 1) // 8 * 8 AS __emb_j,
               u.__emb_n * (u.__emb_s / u.__emb_n) + t.__emb_t AS __emb_s, t.__emb_ssw
        FROM tight_sums u
        JOIN tight t ON u.__emb_b IS NOT DISTINCT FROM t.__emb_b AND u.__emb_g = t.__emb_g AND u.__emb_k = t.__emb_k
    )
    GROUP BY ALL
)
SELECT b.*, m.__emb_muj
FROM blocked b LEFT JOIN overall m ON b.__emb_b IS NOT DISTINCT FROM m.__emb_b AND b.__emb_j = m.__emb_j;

-- The same in long form: one row per (by, group, coordinate k), with n_g, s_gk and n_g W_g.
CREATE OR REPLACE TEMP MACRO emb__group_sums(source, "group", vector, model, skip := false, item := NULL) AS TABLE
SELECT * FROM (
    SELECT * EXCLUDE (__emb_j, __emb_sj, __emb_muj),
           __emb_j + generate_subscripts(__emb_sj, 1) AS __emb_k, unnest(__emb_sj) AS __emb_s
    FROM emb__group_blocks(source, "group", vector, model, false, skip := skip, item := item)
)
WHERE __emb_s IS NOT NULL;  -- the slots of the last block past d

-- ---------------------------------------------------------------------------
-- Per-group figures from the sufficient statistics: W_g = n_g W_g / n_g, W~_g = n_g / (n_g - 1) W_g.
-- ---------------------------------------------------------------------------
CREATE OR REPLACE TEMP MACRO emb__groups(source, "group", vector, model, skip := false, item := NULL) AS TABLE
WITH per_group AS (
    SELECT
        COLUMNS(lambda c: c IN (model, '__emb_all')), __emb_b,
        __emb_g AS "group",
        __emb_n AS n_g,
        __emb_ssw / __emb_n AS w,
        CASE WHEN __emb_n > 1 THEN __emb_ssw / (__emb_n - 1.0) END AS w_tilde,
        -- false where the spread is above 0 but below float64 resolution (sqrt(eps)): W_g is rounding noise
        __emb_ssw = 0 OR __emb_ssw >= __emb_n * emb__resolution2() AS resolved
    FROM emb__group_blocks(source, "group", vector, model, false, skip := skip, item := item)
    WHERE __emb_j = 0  -- n_g and n_g W_g are on each of a group's rows
)
-- one row with NULLs when per_group is empty (read once, so nothing is computed twice)
SELECT p.*
FROM (SELECT 1) LEFT JOIN per_group p ON true
WHERE CASE WHEN p.n_g IS NULL THEN emb__no_rows_error(source) ELSE true END;
