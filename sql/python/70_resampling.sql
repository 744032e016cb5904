-- Cluster jackknife, cluster bootstrap and paired comparison.  Loaded by
-- embsql.register(con) after the UDFs in udfs/resampling.py.  The jackknife and bootstrap take
-- per-group sufficient statistics (n_g and the vector sum s_g), never the items.

CREATE OR REPLACE TEMP MACRO emb__group_vectors(tbl, group_col, vector_col, by_col) AS TABLE
SELECT COLUMNS(lambda c: c IN (by_col, '__emb_all')), __emb_b, __emb_g,
       max(__emb_n) AS __emb_n, max(__emb_ssw) AS __emb_ssw, list(__emb_s ORDER BY __emb_k) AS __emb_s
FROM emb__group_sums(tbl, group_col, vector_col, by_col)
GROUP BY ALL;

-- level := for emb_bootstrap: a number (its range, 0 < level < 1, is checked by the UDF under the one
-- rule of embsql/arguments.py); NULL or text is an embsql: error naming the argument.
CREATE OR REPLACE TEMP MACRO emb__level_argument(value) AS
    CASE WHEN value IS NOT NULL AND (typeof(value) IN ('TINYINT', 'SMALLINT', 'INTEGER', 'BIGINT', 'HUGEINT', 'FLOAT',
                                                      'DOUBLE', 'UTINYINT', 'USMALLINT', 'UINTEGER', 'UBIGINT')
                                     OR typeof(value) LIKE 'DECIMAL%')
         THEN try_cast(value::VARCHAR AS DOUBLE)
         ELSE error(format('embsql: [argument.level] level must be a number between 0 and 1, not {}',
                           coalesce(CASE WHEN typeof(value) = 'VARCHAR' THEN '''' || value::VARCHAR || ''''
                                         ELSE value::VARCHAR END, 'NULL')))
    END;

CREATE OR REPLACE TEMP MACRO emb__resampled(tbl, group_col, vector_col, by_col, stat, replicates, seed, level, kind) AS TABLE
SELECT COLUMNS(lambda c: c IN (by_col, '__emb_all')), __emb_b,
       CASE kind
           WHEN 'jackknife' THEN emb__jackknife(list(__emb_g::VARCHAR), list(__emb_n), list(__emb_ssw), list(__emb_s),
                                                stat)
           ELSE emb__bootstrap(list(__emb_g::VARCHAR), list(__emb_n), list(__emb_ssw), list(__emb_s), stat,
                               emb__whole_argument(replicates, 'replicates'), emb__whole_argument(seed, 'seed'),
                               emb__level_argument(level))
       END AS __emb_r
FROM emb__group_vectors(tbl, group_col, vector_col, by_col)
GROUP BY ALL
ORDER BY __emb_b;

CREATE OR REPLACE TEMP MACRO emb_jackknife(tbl, group_col, vector_col, stat := 'r2') AS TABLE
    (SELECT stat AS stat, __emb_r.estimate AS estimate, __emb_r.se AS se, __emb_r.groups AS groups,
            __emb_r.sizes AS sizes
     FROM emb__resampled(tbl, group_col, vector_col, NULL, stat, 0, 0, 0.0, 'jackknife')),
    (tbl, group_col, vector_col, "by", stat := 'r2') AS TABLE
    (SELECT * EXCLUDE (__emb_all, __emb_b, __emb_r), stat AS stat, __emb_r.estimate AS estimate, __emb_r.se AS se,
            __emb_r.groups AS groups, __emb_r.sizes AS sizes
     FROM emb__resampled(tbl, group_col, vector_col, "by", stat, 0, 0, 0.0, 'jackknife'));

CREATE OR REPLACE TEMP MACRO emb_bootstrap(tbl, group_col, vector_col, stat := 'r2', replicates := 2000, seed := 42,
                                      level := 0.95) AS TABLE
    (SELECT stat AS stat, __emb_r.estimate AS estimate, __emb_r.se AS se, __emb_r.ci_low AS ci_low,
            __emb_r.ci_high AS ci_high, level::DOUBLE AS level, replicates AS replicates, __emb_r.groups AS groups,
            __emb_r.estimate_bc AS estimate_bc, __emb_r.dropped AS dropped, __emb_r.calibrated AS calibrated,
            __emb_r.sizes AS sizes
     FROM emb__resampled(tbl, group_col, vector_col, NULL, stat, replicates, seed, level, 'bootstrap')),
    (tbl, group_col, vector_col, "by", stat := 'r2', replicates := 2000, seed := 42, level := 0.95) AS TABLE
    (SELECT * EXCLUDE (__emb_all, __emb_b, __emb_r), stat AS stat, __emb_r.estimate AS estimate, __emb_r.se AS se,
            __emb_r.ci_low AS ci_low, __emb_r.ci_high AS ci_high, level::DOUBLE AS level, replicates AS replicates,
            __emb_r.groups AS groups, __emb_r.estimate_bc AS estimate_bc, __emb_r.dropped AS dropped,
            __emb_r.calibrated AS calibrated, __emb_r.sizes AS sizes
     FROM emb__resampled(tbl, group_col, vector_col, "by", stat, replicates, seed, level, 'bootstrap'));

CREATE OR REPLACE TEMP MACRO emb_compare(tbl, group_col, vector_col, model_col, item_col, stat := 'r2',
                                    replicates := 2000, seed := 42, level := 0.95, common := false) AS TABLE
SELECT unnest(emb__compare(list(__emb_b::VARCHAR), list(__emb_x::VARCHAR), list(__emb_g::VARCHAR),
                           list(__emb_v::DOUBLE[]), vector_col, stat, replicates, seed, level, common),
              recursive := true)
FROM emb__rows(tbl, group_col, vector_col, model_col, item_col);
