-- The model-item table every model-pair statistic reads: the whole table goes to the UDF as lists
-- (one model may have another dimension than the next), with the table's column names and types,
-- so the UDF can name a missing or mistyped column as the Python API does.  Loaded by
-- embsql.register(con) after the UDFs; the macros of the declared statistics that read it are
-- generated into 86_statistics.sql (udfs/declared.py is their UDF).

-- With skip (bad_rows := 'skip'), the rows whose vector emb__unusable refuses are left out (a column
-- that is no vector column skips nothing: the kernel refuses its type).  "group" may be NULL (no
-- group column): its values are then NULL.
CREATE OR REPLACE TEMP MACRO emb__model_item_groups(source, item, model, vector, "group", skip := false) AS TABLE
SELECT source AS __emb_tbl,
       (SELECT list(column_name) FROM (DESCRIBE SELECT * FROM query_table(source))) AS __emb_names,
       (SELECT list(column_type) FROM (DESCRIBE SELECT * FROM query_table(source))) AS __emb_types,
       item AS __emb_item_col, model AS __emb_model_col, vector AS __emb_vector_col,
       "group"::VARCHAR AS __emb_group_col,
       coalesce(list(__emb_b), []) AS __emb_b, coalesce(list(__emb_x), []) AS __emb_x,
       coalesce(list(__emb_g), []) AS __emb_g, coalesce(list(__emb_v), []) AS __emb_v,
       coalesce(list(__emb_row), []) AS __emb_rows
FROM (
    -- a missing column gives NULLs here (the __emb_null* stand-ins) and an error in the UDF
    SELECT coalesce(*COLUMNS(lambda c: c IN (model, '__emb_null')))::VARCHAR AS __emb_b,
           coalesce(*COLUMNS(lambda c: c IN (item, '__emb_null')))::VARCHAR AS __emb_x,
           coalesce(*COLUMNS(lambda c: c IN ("group", '__emb_nullg')))::VARCHAR AS __emb_g,
           coalesce(*COLUMNS(lambda c: c IN (vector, '__emb_nullv'))) AS __emb_v, __emb_row
    FROM (SELECT TRY_CAST(COLUMNS(lambda c: c IN (vector, '__emb_nullv')) AS DOUBLE[]),
                 COLUMNS(lambda c: c IN (model, item, "group", '__emb_null', '__emb_nullg', '__emb_row'))
          -- (__emb_row: the row in the table, from 1, by which the kernel names a bad vector)
          FROM (SELECT *, NULL AS __emb_null, NULL AS __emb_nullg, NULL::DOUBLE[] AS __emb_nullv,
                       row_number() OVER () AS __emb_row
                FROM query_table(source)))
    WHERE NOT skip OR NOT emb__is_vector_type((SELECT typeof(coalesce(*COLUMNS(lambda c: c IN (vector, '__emb_null'))))
        FROM (SELECT 1) LEFT JOIN (SELECT *, NULL AS __emb_null FROM query_table(source) LIMIT 1) ON true))
        OR emb__unusable(__emb_v, emb__norm2(__emb_v), emb__norm_scale(__emb_v, emb__norm2(__emb_v))) IS NULL
);

-- The same without the group column (emb_similarity's embeddings table).
CREATE OR REPLACE TEMP MACRO emb__model_items(source, item, model, vector, skip := false) AS TABLE
SELECT * EXCLUDE (__emb_group_col, __emb_g) FROM emb__model_item_groups(source, item, model, vector, NULL, skip := skip);
