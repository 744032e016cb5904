-- Cross-model agreement on the same items: k-NN overlap and the Mantel test.
-- Loaded by embsql.register(con) after the UDFs in udfs/agreement.py.  The whole table goes to
-- the UDF as lists (one model may have another dimension than the next), with the table's column
-- names and types, so the UDF can name a missing or mistyped column as the Python API does.

-- With skip (bad_rows := 'skip'), the rows whose vector emb__unusable refuses are left out (a column
-- that is no vector column skips nothing: the kernel refuses its type).
CREATE OR REPLACE TEMP MACRO emb__model_items(source, item, model, vector, skip := false) AS TABLE
SELECT source AS __emb_tbl,
       (SELECT list(column_name) FROM (DESCRIBE SELECT * FROM query_table(source))) AS __emb_names,
       (SELECT list(column_type) FROM (DESCRIBE SELECT * FROM query_table(source))) AS __emb_types,
       item AS __emb_item_col, model AS __emb_model_col, vector AS __emb_vector_col,
       coalesce(list(__emb_b), []) AS __emb_b, coalesce(list(__emb_x), []) AS __emb_x,
       coalesce(list(__emb_v), []) AS __emb_v, coalesce(list(__emb_row), []) AS __emb_rows
FROM (
    -- a missing column gives NULLs here (the __emb_null* stand-ins) and an error in the UDF;
    -- TRY_CAST lets a mistyped vector column reach the UDF too, which names its type
    SELECT coalesce(*COLUMNS(lambda c: c IN (model, '__emb_null')))::VARCHAR AS __emb_b,
           coalesce(*COLUMNS(lambda c: c IN (item, '__emb_null')))::VARCHAR AS __emb_x,
           coalesce(*COLUMNS(lambda c: c IN (vector, '__emb_nullv'))) AS __emb_v, __emb_row
    FROM (SELECT TRY_CAST(COLUMNS(lambda c: c IN (vector, '__emb_nullv')) AS DOUBLE[]),
                 COLUMNS(lambda c: c IN (model, item, '__emb_null', '__emb_row'))
          -- (__emb_row: the row in the table, from 1, by which the kernel names a bad vector)
          FROM (SELECT *, NULL AS __emb_null, NULL::DOUBLE[] AS __emb_nullv, row_number() OVER () AS __emb_row
                FROM query_table(source)))
    WHERE NOT skip OR NOT emb__is_vector_type((SELECT typeof(coalesce(*COLUMNS(lambda c: c IN (vector, '__emb_null'))))
        FROM (SELECT 1) LEFT JOIN (SELECT *, NULL AS __emb_null FROM query_table(source) LIMIT 1) ON true))
        OR emb__unusable(__emb_v, emb__norm2(__emb_v), emb__norm_scale(__emb_v, emb__norm2(__emb_v))) IS NULL
);

-- @function emb_knn_agreement(source, item, model, vector, k := 10, common := false, bad_rows := 'error')
-- k-NN agreement of models that embedded the same items: one row per pair of models.  For item i,
-- N_M(i) is the set of its k nearest *other* items under model M by cosine distance on unit
-- vectors; `overlap` is the mean over items of |N_A(i) ∩ N_B(i)| / k, in [0, 1].
-- @param source the table to read: a table or view name, or a file DuckDB reads
-- @param item the item column: which rows of different models embed the same item
-- @param model the model column: the models compared
-- @param vector the vector column (models may differ in dimension)
-- @param k how many neighbours, between 1 and n − 2
-- @param common use only the items every model has (instead of refusing items one model lacks)
-- @param bad_rows `'error'` (the default): a NULL, zero or non-finite vector is an error naming its row (from 1), model and item; `'skip'`: those rows are left out, which leaves their items missing in their models (with `common := true`, used by no model). The table has one row per pair of models, so it does not count them
-- @column model_a the first model of the pair
-- @column model_b the second
-- @column k as asked
-- @column overlap the mean over items of |N_A(i) ∩ N_B(i)| / k
-- @column se the delete-one-item jackknife SE
-- @column chance k / (n − 1), what unrelated neighbour sets would give
-- @column items n
-- @notes
-- The overlap depends on each model only through the order of its similarities, so it is the
-- same for a rotated or rescaled copy.
--
-- - **Ties.** Similarities are compared on a grid of 2⁻⁴⁰ (float64 rounding noise is far
--   smaller), and among items tied at the k-th neighbour the one that comes first in the canonical
--   item order (items sorted by their text) counts as nearer; so the result does not depend on the
--   row order of the table.
-- - **`se`** is the delete-one-item jackknife SE, and it is honest about what deleting an item does:
--   the items that had it among their k nearest take their (k + 1)-th neighbour instead (computed
--   in closed form, O(n k)).  In simulations it was 1.4–1.9 × the actual spread of the overlap
--   across independent samples of items (conservative; holding neighbour sets fixed gave
--   0.67–0.89 ×, too small; `python bench/knn_agreement.py --calibration`).
-- - **Items** must match across models: an item a model lacks, an item twice in one model, or a
--   NULL item or model is an error naming the item and model; `common := true` uses only the
--   items every model has.  A NULL, zero-length or non-finite vector is an error naming its row
--   in the table (from 1), its model and its item, as the Python faces do (`bad_rows := 'skip'`
--   leaves it out).
-- - **Cost.** O(n² d) time per model (float32 Gram products in blocks of 512 rows; the final choice
--   among candidates is made in float64, and rows where float32 rounding could matter are redone in
--   float64), O(n d) memory.  20,000 items run in under a minute; see bench/README.md.
--
-- What it says: how far two models agree on *local* neighbourhoods (what a retriever returns).
-- What it cannot say: which model is right, or agreement on the global layout (that is
-- `emb_mantel`).  From Python: `embsql.knn_agreement`.
-- @example
-- SELECT * FROM emb_knn_agreement('neighbours', 'item_id', 'model', 'embedding', k := 3);
-- -- large  small  3  0.8333  0.1535  0.2727  12
CREATE OR REPLACE TEMP MACRO emb_knn_agreement(source, item, model, vector, k := 10, common := false, bad_rows := 'error') AS TABLE
SELECT unnest(__emb_r.value, recursive := true)
FROM (SELECT emb__knn_agreement(__emb_tbl, __emb_names, __emb_types, __emb_item_col, __emb_model_col,
                                __emb_vector_col, __emb_b, __emb_x, __emb_v, __emb_rows, k, common) AS __emb_r
      FROM emb__model_items(emb__checked_names(emb__checked_source(source, 'emb_knn_agreement', model, []::VARCHAR[]), 'emb_knn_agreement', [['item', item], ['vector', vector]]), item, model, vector, skip := emb__skip_rows(bad_rows)))
WHERE emb__udf_ok(__emb_r);

-- @function emb_knn_agreement_items(source, item, model, vector, k := 10, common := false, bad_rows := 'error')
-- The per-item table behind `emb_knn_agreement`: one row per pair of models and item, items in
-- canonical (text) order.  Useful to find the items on which two models disagree most.
-- @param source the table to read: a table or view name, or a file DuckDB reads
-- @param item the item column: which rows of different models embed the same item
-- @param model the model column: the models compared
-- @param vector the vector column (models may differ in dimension)
-- @param k how many neighbours, between 1 and n − 2
-- @param common use only the items every model has
-- @param bad_rows `'error'` (the default): a NULL, zero or non-finite vector is an error naming its row (from 1), model and item; `'skip'`: those rows are left out, which leaves their items missing in their models (with `common := true`, used by no model). The table has one row per pair of models, so it does not count them
-- @column model_a the first model of the pair
-- @column model_b the second
-- @column item the item (as text)
-- @column overlap |N_A(i) ∩ N_B(i)| / k
-- @notes
-- From Python: `embsql.knn_agreement(..., per_item=True)`.
-- @example
-- SELECT * FROM emb_knn_agreement_items('neighbours', 'item_id', 'model', 'embedding', k := 3)
-- ORDER BY overlap LIMIT 5;
CREATE OR REPLACE TEMP MACRO emb_knn_agreement_items(source, item, model, vector, k := 10, common := false, bad_rows := 'error') AS TABLE
SELECT unnest(__emb_r.value, recursive := true)
FROM (SELECT emb__knn_agreement_items(__emb_tbl, __emb_names, __emb_types, __emb_item_col, __emb_model_col,
                                      __emb_vector_col, __emb_b, __emb_x, __emb_v, __emb_rows, k, common) AS __emb_r
      FROM emb__model_items(emb__checked_names(emb__checked_source(source, 'emb_knn_agreement_items', model, []::VARCHAR[]), 'emb_knn_agreement_items', [['item', item], ['vector', vector]]), item, model, vector, skip := emb__skip_rows(bad_rows)))
WHERE emb__udf_ok(__emb_r);

-- @function emb_mantel(source, item, model, vector, permutations := 999, seed := 42, common := false, bad_rows := 'error')
-- Mantel test of models that embedded the same items: one row per pair of models, the Spearman
-- correlation of the two models' cosine distances over all item pairs and its permutation p-value.
-- @param source the table to read: a table or view name, or a file DuckDB reads
-- @param item the item column: which rows of different models embed the same item
-- @param model the model column: the models compared
-- @param vector the vector column (models may differ in dimension)
-- @param permutations the number of permutations, a whole number from 1 to 1,000,000
-- @param seed the random seed, a whole number (0 or more)
-- @param common use only the items every model has
-- @param bad_rows `'error'` (the default): a NULL, zero or non-finite vector is an error naming its row (from 1), model and item; `'skip'`: those rows are left out, which leaves their items missing in their models (with `common := true`, used by no model). The table has one row per pair of models, so it does not count them
-- @column model_a the first model of the pair
-- @column model_b the second
-- @column r the Spearman correlation of the two models' cosine distances over all item pairs i < j; 1 for a similarity transform
-- @column p_value one-sided (upper tail) permutation p, (b + 1)/(B + 1)
-- @column permutations B
-- @column items n
-- @notes
-- Tied distances get average ranks, as `scipy.stats.spearmanr` (the same tie grid as
-- `emb_knn_agreement`).  `p_value` permutes the items of `model_b` against those of `model_a`,
-- with b the permutations whose r reaches the observed one (within sqrt(machine epsilon)), so p is
-- in (0, 1].  The same seed gives the same p for any row order.  Items are matched as in
-- `emb_knn_agreement`; every pair of items at one distance is an error (r undefined).
--
-- Cost: ranks once, O(n² log n); then O(n²) per permutation (a re-indexing of the rank matrix and
-- one dot product, float32 products summed in float64 per block of rows; permutations within 1e-5
-- of the observed r are recomputed in float64 before they are counted).  Memory O(n²): at most
-- 10,000 items (run it on a sample of items beyond that).  2,000 items with 999 permutations take
-- tens of seconds; see bench/README.md.  The p-value says the two distance structures are related
-- beyond chance under exchangeability of items; with many items it is tiny even for weak
-- agreement, so read `r`, not p, as the size.
-- @example
-- SELECT * FROM emb_mantel('neighbours', 'item_id', 'model', 'embedding', permutations := 199);
-- -- large  small  0.9925  0.005  199  12
CREATE OR REPLACE TEMP MACRO emb_mantel(source, item, model, vector, permutations := 999, seed := 42,
                                        common := false, bad_rows := 'error') AS TABLE
SELECT unnest(__emb_r.value, recursive := true)
FROM (SELECT emb__mantel(__emb_tbl, __emb_names, __emb_types, __emb_item_col, __emb_model_col, __emb_vector_col,
                         __emb_b, __emb_x, __emb_v, __emb_rows, emb__whole_argument(permutations, 'permutations'),
                         emb__whole_argument(seed, 'seed'), common) AS __emb_r
      FROM emb__model_items(emb__checked_names(emb__checked_source(source, 'emb_mantel', model, []::VARCHAR[]), 'emb_mantel', [['item', item], ['vector', vector]]), item, model, vector, skip := emb__skip_rows(bad_rows)))
WHERE emb__udf_ok(__emb_r);
