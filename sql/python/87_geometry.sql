-- Model-to-model geometry on the same items: linear CKA and the Procrustes correlation.
-- Loaded by embsql.register(con) after the UDFs in udfs/geometry.py.  As for the agreement
-- macros, the whole table goes to the UDF as lists, with the table's column names and types, so
-- the UDF can name a missing or mistyped column as the Python API does.

CREATE OR REPLACE TEMP MACRO emb__model_item_groups(tbl, item_col, model_col, vector_col, group_col) AS TABLE
SELECT tbl AS __emb_tbl,
       (SELECT list(column_name) FROM (DESCRIBE SELECT * FROM query_table(tbl))) AS __emb_names,
       (SELECT list(column_type) FROM (DESCRIBE SELECT * FROM query_table(tbl))) AS __emb_types,
       item_col AS __emb_item_col, model_col AS __emb_model_col, vector_col AS __emb_vector_col,
       group_col::VARCHAR AS __emb_group_col,
       coalesce(list(__emb_b), []) AS __emb_b, coalesce(list(__emb_x), []) AS __emb_x,
       coalesce(list(__emb_g), []) AS __emb_g, coalesce(list(__emb_v), []) AS __emb_v
FROM (
    -- a missing column gives NULLs here (the __emb_null* stand-ins) and an error in the UDF
    SELECT coalesce(*COLUMNS(lambda c: c IN (model_col, '__emb_null')))::VARCHAR AS __emb_b,
           coalesce(*COLUMNS(lambda c: c IN (item_col, '__emb_null')))::VARCHAR AS __emb_x,
           coalesce(*COLUMNS(lambda c: c IN (group_col, '__emb_nullg')))::VARCHAR AS __emb_g,
           coalesce(*COLUMNS(lambda c: c IN (vector_col, '__emb_nullv'))) AS __emb_v
    FROM (SELECT TRY_CAST(COLUMNS(lambda c: c IN (vector_col, '__emb_nullv')) AS DOUBLE[]),
                 COLUMNS(lambda c: c IN (model_col, item_col, group_col, '__emb_null', '__emb_nullg'))
          FROM (SELECT *, NULL AS __emb_null, NULL AS __emb_nullg, NULL::DOUBLE[] AS __emb_nullv
                FROM query_table(tbl)))
);

CREATE OR REPLACE TEMP MACRO emb_cka(tbl, item_col, model_col, vector_col, group_col := NULL, debiased := false,
                                permutations := 999, seed := 42, common := false) AS TABLE
SELECT unnest(emb__cka(__emb_tbl, __emb_names, __emb_types, __emb_item_col, __emb_model_col, __emb_vector_col,
                       __emb_group_col, __emb_b, __emb_x, __emb_g, __emb_v, debiased,
                       emb__whole_argument(permutations, 'permutations'), emb__whole_argument(seed, 'seed'),
                       common), recursive := true)
FROM emb__model_item_groups(tbl, item_col, model_col, vector_col, group_col);

CREATE OR REPLACE TEMP MACRO emb_procrustes(tbl, item_col, model_col, vector_col, permutations := 999, seed := 42,
                                       common := false) AS TABLE
SELECT unnest(emb__procrustes(__emb_tbl, __emb_names, __emb_types, __emb_item_col, __emb_model_col,
                              __emb_vector_col, __emb_group_col, __emb_b, __emb_x, __emb_g, __emb_v,
                              emb__whole_argument(permutations, 'permutations'), emb__whole_argument(seed, 'seed'),
                              common), recursive := true)
FROM emb__model_item_groups(tbl, item_col, model_col, vector_col, NULL);
