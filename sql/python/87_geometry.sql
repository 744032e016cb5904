-- Model-to-model geometry on the same items: linear CKA and the Procrustes correlation.
-- Loaded by embsql.register(con) after the UDFs in udfs/geometry.py.  As for the agreement
-- macros, the whole table goes to the UDF as lists, with the table's column names and types, so
-- the UDF can name a missing or mistyped column as the Python API does.

-- With skip (bad_rows := 'skip'), the rows whose vector emb__unusable refuses are left out (a column
-- that is no vector column skips nothing: the kernel refuses its type).
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

-- @function emb_cka(source, item, model, vector, "group" := NULL, debiased := false, permutations := 999, seed := 42, common := false, bad_rows := 'error')
-- Linear CKA (Kornblith et al. 2019) of models that embedded the same items: one row per pair of
-- models, with a jackknife SE, a 95% interval for the population CKA and a permutation p-value.
-- @param source the table to read: a table or view name, or a file DuckDB reads
-- @param item the item column: which rows of different models embed the same item
-- @param model the model column: the models compared
-- @param vector the vector column (models may differ in dimension)
-- @param "group" a group column for the cluster jackknife (an item's group must be the same in every model); NULL: the delete-one-item jackknife
-- @param debiased the debiased (unbiased HSIC) form of CKA
-- @param permutations the number of permutations, a whole number (0: no p-value)
-- @param seed the random seed, a whole number (0 or more)
-- @param common use only the items every model has
-- @param bad_rows `'error'` (the default): a NULL, zero or non-finite vector is an error naming its row (from 1), model and item; `'skip'`: those rows are left out, which leaves their items missing in their models (with `common := true`, used by no model). The table has one row per pair of models, so it does not count them
-- @column model_a the first model of the pair
-- @column model_b the second
-- @column cka ‖X̃ᵀỸ‖²_F / (‖X̃ᵀX̃‖_F ‖ỸᵀỸ‖_F) on the unit vectors of each model centred at their mean (the RV coefficient), in [0, 1]; with `debiased := true` the same ratio of the unbiased HSIC estimates of Song et al. (2012), in [−1, 1], about 0 for unrelated models at any n (a negative value is returned as it is: read it as no detectable similarity)
-- @column se cluster-jackknife SE over the groups of `"group"`, else the delete-one-item jackknife
-- @column corrected the debiased CKA, the point the interval is built around (for both forms: it equals `cka` with `debiased := true`); NULL without an interval
-- @column ci_low the 95% interval for the population CKA (in [0, 1]), built from the debiased CKA's jackknife for both forms: the debiased CKA ± t(G − 1)·SE on the atanh scale (NULL with fewer than 3 groups)
-- @column ci_high its upper end
-- @column calibrated true from 30 groups (or 30 items without `"group"`), where simulation measured its coverage at {{figure cka.coverage range}} (within 95 ± 2.5% in {{figure cka.coverage within}} of {{figure cka.coverage count}} designs)
-- @column p_value permutation p: the items of `model_b` are shuffled against those of `model_a` (the same seeded shuffles for every pair); one-sided, upper tail, p = (b + 1)/(B + 1); NULL with `permutations := 0`
-- @column permutations B
-- @column items items compared (with `common := true`, those every model has)
-- @column groups groups of `"group"` (NULL without it)
-- @column debiased as asked
-- @column invariance `similarity`: CKA is exactly unchanged by a rotation, a uniform scale or an embedding into more dimensions of either model
-- @column note NULL, or why the debiased CKA is undefined (`design.debiased_hsic`): the unbiased HSIC of a model with itself can be 0 or negative on few items even when the model has spread; `cka` is then NULL with `debiased := true`, and the biased CKA keeps its value but has no interval
-- @notes
-- - **Routes.** Per model, from the centred cross products X̃ᵀX̃, ỸᵀỸ, X̃ᵀỸ (one pass over the rows
--   in blocks of 8,192, memory O(d²)) or, when n is small next to d, from the n × n Gram matrix,
--   whose principal coordinates stand in for the rows (taken when n < d / 5, where it measured
--   faster, and with 50 or more permutations when n < 3d/4, where each permutation's product
--   shrinks from d to fewer than n columns).  The jackknife takes every replicate from the same
--   products (one more pass: deleting a group subtracts its own products).  A permutation changes
--   only X̃ᵀỸ: one blocked product, O(n p q), each; with 100,000 items of d = 384 against 768 that
--   is about 1 s per permutation on a quiet 2-core machine, so pass `permutations := 0` (or a
--   sample of items) for large tables.  See bench/README.md.
-- - **Items** must match across models (an item a model lacks is an error naming it, unless
--   `common := true`); fewer than 3 items (5 for the debiased CKA), a NULL item, model or group, an
--   item twice in one model, or a model with no spread (`design.identical`, naming the model) is an
--   error naming the column or item.  The biased CKA is defined whenever both models have spread; the
--   debiased one is NULL, with a `note`, where a model's unbiased HSIC with itself is not positive.
-- - **Interval.** The biased CKA is biased upward by far more than its SE when the dimensions are
--   large next to the number of items (0.73 for a population CKA of 0.14 with 200 items of d = 384
--   against 768), so `cka ± 1.96·se` can cover the population value in 0% of samples.  `ci_low`,
--   `ci_high` come from the debiased CKA, which is unbiased: coverage {{figure cka.centre range}} at 30-40 groups or
--   40 items, d = 16/384 and 384/768, CKA 0.12-0.86 (validation/cka_interval_centre.py; {{figure cka.centre_groups range}} with
--   groups, higher with independent items at a low CKA).
--
-- What it says: how far two models' geometries agree up to rotation and scale, on these items.
-- What it cannot say: which model is better; agreement of local neighbourhoods (that is
-- `emb_knn_agreement`) or of the order of distances only (`emb_mantel`).  From Python:
-- `embsql.cka`, the same numbers.
-- @example
-- SELECT * FROM emb_cka('geometry', 'item_id', 'model', 'embedding', permutations := 199);
-- -- large  small  0.8873  0.0518  0.5183  0.9447  false  0.005  199  12  NULL  false  similarity  NULL
CREATE OR REPLACE TEMP MACRO emb_cka(source, item, model, vector, "group" := NULL, debiased := false,
                                     permutations := 999, seed := 42, common := false, bad_rows := 'error') AS TABLE
SELECT unnest(__emb_r.value, recursive := true)
FROM (SELECT emb__cka(__emb_tbl, __emb_names, __emb_types, __emb_item_col, __emb_model_col, __emb_vector_col,
                      __emb_group_col, __emb_b, __emb_x, __emb_g, __emb_v, __emb_rows, debiased,
                      emb__whole_argument(permutations, 'permutations'), emb__whole_argument(seed, 'seed'),
                      common) AS __emb_r
      FROM emb__model_item_groups(emb__checked_names(emb__checked_source(source, 'emb_cka', model, []::VARCHAR[]), 'emb_cka', [['item', item], ['vector', vector], ['group', "group"]]), item, model, vector,
                                        "group", skip := emb__skip_rows(bad_rows)))
WHERE emb__udf_ok(__emb_r);

-- @function emb_procrustes(source, item, model, vector, "group" := NULL, permutations := 999, seed := 42, common := false, bad_rows := 'error')
-- The symmetric Procrustes correlation of vegan's `protest`: one row per pair of models.
-- @param source the table to read: a table or view name, or a file DuckDB reads
-- @param item the item column: which rows of different models embed the same item
-- @param model the model column: the models compared
-- @param vector the vector column (models may differ in dimension)
-- @param "group" a group column for the jackknife (an item's group must be the same in every model); NULL: items; above 200 of either, 200 random blocks of them (drawn with `seed`)
-- @param permutations the number of permutations, a whole number (0: no p-value)
-- @param seed the random seed, a whole number (0 or more)
-- @param common use only the items every model has
-- @param bad_rows `'error'` (the default): a NULL, zero or non-finite vector is an error naming its row (from 1), model and item; `'skip'`: those rows are left out, which leaves their items missing in their models (with `common := true`, used by no model). The table has one row per pair of models, so it does not count them
-- @column model_a the first model of the pair
-- @column model_b the second
-- @column r √(1 − m12²) ∈ [0, 1]
-- @column m12_squared 1 − (Σ singular values of X̃ᵀỸ)², the residual sum of squares of the best rotation of one onto the other
-- @column se the jackknife SE of r (over the groups of `"group"`, else the items)
-- @column ci_low the bias-corrected jackknife t interval on the atanh scale, 95% (not calibrated: see the notes)
-- @column ci_high its upper end
-- @column calibrated always false: r's upward bias in high dimension is larger than the jackknife removes (it covered 10% in one design of validation/cka_validity.py); for a calibrated interval use `emb_cka`
-- @column p_value permutation p: the items of `model_b` permuted, counting permutations whose r reaches r − √(machine epsilon), as `protest` does: (b + 1)/(B + 1)
-- @column permutations B
-- @column items items compared
-- @column groups groups of `"group"` (NULL without it)
-- @column invariance `similarity`
-- @notes
-- Both models' unit vectors are centred and scaled to unit total sum of squares (the one with fewer
-- dimensions padded with zeros).  Matches `vegan::protest` (tests/reference/vegan/procrustes/).
-- Items are matched as in `emb_cka`; routes and costs are the same (plus one small SVD per
-- permutation).  From Python: `embsql.procrustes`.
-- @example
-- SELECT * FROM emb_procrustes('geometry', 'item_id', 'model', 'embedding', permutations := 199);
-- -- large  small  0.8790  0.2273  0.0371  0.6324  0.9047  false  0.005  199  12  NULL  similarity
CREATE OR REPLACE TEMP MACRO emb_procrustes(source, item, model, vector, "group" := NULL, permutations := 999,
                                            seed := 42, common := false, bad_rows := 'error') AS TABLE
SELECT unnest(__emb_r.value, recursive := true)
FROM (SELECT emb__procrustes(__emb_tbl, __emb_names, __emb_types, __emb_item_col, __emb_model_col,
                             __emb_vector_col, __emb_group_col, __emb_b, __emb_x, __emb_g, __emb_v, __emb_rows,
                             emb__whole_argument(permutations, 'permutations'), emb__whole_argument(seed, 'seed'),
                             common) AS __emb_r
      FROM emb__model_item_groups(emb__checked_names(emb__checked_source(source, 'emb_procrustes', model, []::VARCHAR[]), 'emb_procrustes', [['item', item], ['vector', vector], ['group', "group"]]), item, model, vector,
                                        "group", skip := emb__skip_rows(bad_rows)))
WHERE emb__udf_ok(__emb_r);

-- @function emb_compare_cka(source, item, model, vector, reference, "group" := NULL, debiased := false, common := false, bad_rows := 'error')
-- Is model A closer to the reference model than model B is?  CKA(A, R) − CKA(B, R) on the same
-- items, for every pair of models other than the reference, with a 95% interval and a p-value.
-- @param source the table to read: a table or view name, or a file DuckDB reads
-- @param item the item column: which rows of different models embed the same item
-- @param model the model column: the reference and at least two more models
-- @param vector the vector column (models may differ in dimension)
-- @param reference the model every other model is compared against (a value of the model column)
-- @param "group" a group column for the paired jackknife (an item's group must be the same in every model); NULL: items, taken as independent
-- @param debiased report the debiased CKAs (the interval and p-value are the same either way)
-- @param common use only the items every model has
-- @param bad_rows `'error'` (the default): a NULL, zero or non-finite vector is an error naming its row (from 1), model and item; `'skip'`: those rows are left out, which leaves their items missing in their models (with `common := true`, used by no model). The table has one row per pair of models, so it does not count them
-- @column model_a the first model of the pair
-- @column model_b the second
-- @column reference the reference model
-- @column cka_a CKA(model_a, reference) (biased, or debiased with `debiased := true`)
-- @column cka_b CKA(model_b, reference)
-- @column difference cka_a − cka_b
-- @column se paired jackknife SE of the debiased difference (the same group, else item, deleted from both pairs)
-- @column ci_low the 95% interval for the population difference: the bias-corrected debiased difference ± t(G − 1)·SE
-- @column ci_high its upper end
-- @column p_value two-sided p of no difference, from the same t statistic
-- @column calibrated true from 30 groups (or 30 items without `"group"`), where simulation measured level and coverage
-- @column items items compared
-- @column groups groups of `"group"` (NULL without it)
-- @column debiased as asked
-- @notes
-- Both CKAs are biased upward, each by its own amount, so the interval and the test use the debiased
-- CKAs.  In simulation (two d = 384 models against a d = 768 reference, validation/cka_validity.py) it
-- rejected a true "no difference" at {{figure cka.compare_level range}} at nominal 5% (conservative with independent items).
-- An unknown reference is `model.reference`.  From Python: `embsql.compare_cka`.
-- @example
-- SELECT model_a, model_b, reference, round(difference, 4) AS difference, calibrated
-- FROM emb_compare_cka('geometry3', 'item_id', 'model', 'embedding', 'ref');
-- -- far  near  ref  -0.3465  true
CREATE OR REPLACE TEMP MACRO emb_compare_cka(source, item, model, vector, reference, "group" := NULL,
                                             debiased := false, common := false, bad_rows := 'error') AS TABLE
SELECT unnest(__emb_r.value, recursive := true)
FROM (SELECT emb__compare_cka(__emb_tbl, __emb_names, __emb_types, __emb_item_col, __emb_model_col,
                              __emb_vector_col, __emb_group_col, __emb_b, __emb_x, __emb_g, __emb_v, __emb_rows,
                              reference::VARCHAR, debiased, common) AS __emb_r
      FROM emb__model_item_groups(emb__checked_names(emb__checked_source(source, 'emb_compare_cka', model, []::VARCHAR[]), 'emb_compare_cka', [['item', item], ['vector', vector], ['group', "group"]]), item, model, vector,
                                        "group", skip := emb__skip_rows(bad_rows)))
WHERE emb__udf_ok(__emb_r);
