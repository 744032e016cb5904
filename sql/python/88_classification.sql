-- Classification by labels: k-NN and nearest centroid, per model.  Loaded by embsql.register(con)
-- after the UDFs in udfs/classification.py; the numerics are embsql.core.classification, which
-- embsql.knn_classify and embsql.centroid_classify run too.  Each model's rows go to the UDF as
-- lists in table order, with the table's column names and types, so the UDF names a missing column
-- as the Python API does (a missing column reaches it as NULLs, the __emb_null stand-in).  Labels
-- travel as text with their dense rank in SQL's order of the label column, so that numbers keep
-- their number order in the vote's tie rule.

-- With skip (bad_rows := 'skip'), the rows whose vector emb__unusable refuses are left out and
-- counted per model (skipped_*; a column that is no vector column skips nothing: the kernel refuses
-- its type).  Rows keep their numbers in the table, from which messages count them.
CREATE OR REPLACE TEMP MACRO emb__classified(source, classifier, label, vector, model, k, split, item,
                                             "group", level, per_item, skip := false) AS TABLE
WITH read AS (
    SELECT COLUMNS(lambda c: c IN (model, '__emb_all')),
           coalesce(*COLUMNS(lambda c: c IN (model, '__emb_null')))::VARCHAR AS __emb_b,
           coalesce(*COLUMNS(lambda c: c IN (label, '__emb_null'))) AS __emb_l,
           coalesce(*COLUMNS(lambda c: c IN (item, '__emb_null')))::VARCHAR AS __emb_i,
           coalesce(*COLUMNS(lambda c: c IN (split, '__emb_null')))::VARCHAR AS __emb_s,
           coalesce(*COLUMNS(lambda c: c IN ("group", '__emb_null')))::VARCHAR AS __emb_g,
           -- (through the typed emb__vector, as emb__rows reads it: a text column binds, reads NULL,
           -- and the kernel refuses its type with the cast that works)
           emb__vector(struct_extract_at(row(*COLUMNS(lambda c: c IN (vector, '__emb_null'))), 1)) AS __emb_v,
           row_number() OVER () - 1 AS __emb_row,
           (SELECT typeof(coalesce(*COLUMNS(lambda c: c IN (vector, '__emb_null'))))
            FROM (SELECT 1) LEFT JOIN (SELECT *, NULL AS __emb_null FROM query_table(source) LIMIT 1) ON true) AS __emb_vtype
    FROM (SELECT *, 1 AS __emb_all, NULL AS __emb_null FROM query_table(source))
),
checked AS (
    SELECT *, CASE WHEN skip AND emb__is_vector_type(__emb_vtype)
                   THEN emb__unusable(__emb_v, emb__norm2(__emb_v), emb__norm_scale(__emb_v, emb__norm2(__emb_v))) END AS __emb_bad
    FROM read
),
rows AS (SELECT * EXCLUDE (__emb_bad, __emb_vtype) FROM checked WHERE __emb_bad IS NULL),
skipped AS (
    SELECT __emb_b AS __emb_sb, unnest(emb__skip_counts(list(__emb_bad) FILTER (__emb_bad IS NOT NULL)))
    FROM checked WHERE skip GROUP BY __emb_b
),
ranked AS (SELECT *, dense_rank() OVER (PARTITION BY __emb_b ORDER BY __emb_l) AS __emb_rank FROM rows),
per_model AS (
    SELECT COLUMNS(lambda c: c IN (model, '__emb_all')), __emb_b,
           list(__emb_row ORDER BY __emb_row) AS __emb_rows, list(__emb_rank ORDER BY __emb_row) AS __emb_ranks, list(__emb_l::VARCHAR ORDER BY __emb_row) AS __emb_ls,
           list(__emb_i ORDER BY __emb_row) AS __emb_is, list(__emb_s ORDER BY __emb_row) AS __emb_ss,
           list(__emb_g ORDER BY __emb_row) AS __emb_gs, list(__emb_v ORDER BY __emb_row) AS __emb_vs
    FROM ranked GROUP BY ALL
),
-- (a model column of another case than the table's is refused, not read as no model column)
described AS (SELECT list(column_name) AS __emb_names, list(column_type) AS __emb_types
              FROM (DESCRIBE SELECT * FROM query_table(source)) HAVING emb__model_case(source, model)),
classified AS (
    SELECT p.* EXCLUDE (__emb_rows, __emb_ranks, __emb_ls, __emb_is, __emb_ss, __emb_gs, __emb_vs),
        emb__classify(source, d.__emb_names, d.__emb_types,
                      [label, vector, CASE WHEN list_contains(d.__emb_names, model) THEN model END,
                       split, item, "group"],
                      classifier, k, level, p.__emb_b, p.__emb_rows, p.__emb_ranks, p.__emb_ls, p.__emb_is, p.__emb_ss, p.__emb_gs,
                      p.__emb_vs, per_item) AS __emb_result
    FROM per_model p, described d
)
SELECT c.* EXCLUDE (__emb_result), c.__emb_result.value AS __emb_r, s.skipped_null, s.skipped_zero, s.skipped_nonfinite
FROM classified c LEFT JOIN skipped s ON c.__emb_b IS NOT DISTINCT FROM s.__emb_sb
WHERE emb__udf_ok(c.__emb_result);

-- @function emb_knn_classify(source, label := 'label', vector := 'vector', model := 'model', k := 10, split := NULL, item := NULL, "group" := NULL, level := 0.95, bad_rows := 'error')
-- k-NN classification: each item gets the majority label of its k nearest neighbours by cosine,
-- itself excluded (leave-one-out), or, when `split` names a column of 'train' and 'test', each
-- test item the majority label of its k nearest training items.  One row per model.
-- @param source the table to read: a table or view name, or a file DuckDB reads
-- @param label the class-label column (a NULL or NaN label is an error naming its row)
-- @param vector the vector column; vectors are scaled to unit length
-- @param model the model column: one row per value of it, used when the table has it; NULL: the whole table is one model
-- @param k the number of neighbours, below the number of items (or of training items)
-- @param split a column whose values are 'train' or 'test' (anything else, NULL too, is an error naming its row); NULL: leave-one-out
-- @param item the item id column: sets the tie order and names rows in messages
-- @param "group" clusters of items that are not independent (paraphrases of one source; GROUP is a keyword: written `"group" := 'source'`): the intervals then resample clusters
-- @param level the confidence level of the intervals
-- @param bad_rows `'error'` (the default): a NULL, zero or non-finite vector is an error naming its row (from 1); `'skip'`: those rows are left out and counted in the `skipped_` columns
-- @column <model> the model, under the model column's own name (when the table has it)
-- @column accuracy the share of items whose predicted label is their label
-- @column ci_low the interval of accuracy: Wilson's score interval over the items; with `group`, Wilson's on the effective sample size p(1 − p)/se² (se cluster-robust over the G clusters) with the t(G − 1) quantile
-- @column ci_high its upper end
-- @column macro_f1 the mean over the classes present (as a label or a prediction) of F1_c = 2 TP_c / (n_c + p_c), scikit-learn's `f1_score(average='macro')`
-- @column macro_f1_ci_low macro_f1 − t(U − 1) × its delete-one jackknife SE over the U items (or clusters), clipped to [0, 1]
-- @column macro_f1_ci_high its upper end
-- @column items the items classified (all of them, or the test items)
-- @column classes the distinct labels
-- @column groups G, the clusters (NULL without `group`)
-- @column k as asked (NULL for the nearest centroid)
-- @column classifier `knn` or `centroid`
-- @column split `leave-one-out` or `train-test`
-- @column level as asked
-- @column calibrated true from 30 items (or clusters) on, where {{figure classification.accuracy_coverage}} (the macro-F1 interval covered 91.8% at 50 items, 94.4% at 200)
-- @column skipped_null rows left out for a NULL vector (or a NULL element), per model (only with `bad_rows := 'skip'`)
-- @column skipped_zero rows left out for a zero vector (only with `bad_rows := 'skip'`)
-- @column skipped_nonfinite rows left out for a NaN or infinite coordinate (only with `bad_rows := 'skip'`)
-- @notes
-- **Ties.** Cosines are compared on a grid of 2⁻⁴⁰; among equal cosines the item first in the item
-- order (the items' text order with `item`, else the rows' order) is nearer.  A tied vote goes to
-- the smallest label in the label column's order (numbers as numbers).  Wherever these rules do not
-- decide the answer the predictions equal scikit-learn's `KNeighborsClassifier(metric='cosine',
-- algorithm='brute')`.  The search is the exact blocked top-k of `embsql.retrieve` (O(n² d) time,
-- no n × n matrix).  The intervals treat the predictions as given.  From Python:
-- `embsql.knn_classify`, and `embsql.compare_classification` for the paired test between models.
-- Errors: a NULL label, k not below the number of (training) items, a split value other than
-- 'train' or 'test', a split with no train or no test items, a single label.
-- @example
-- SELECT model, round(accuracy, 4) AS accuracy, round(ci_low, 4) AS ci_low, round(macro_f1, 4) AS macro_f1, items, k
-- FROM emb_knn_classify('many', label := 'topic', vector := 'embedding', model := 'model', item := 'item', k := 5);
-- -- m0  0.1111  0.0696  0.0948  144  5
-- -- m1  0.1111  0.0696  0.086   144  5
CREATE OR REPLACE TEMP MACRO emb_knn_classify(source, label := 'label', vector := 'vector', model := 'model', k := 10,
                                              split := NULL, item := NULL, "group" := NULL, level := 0.95,
                                              bad_rows := 'error') AS TABLE
SELECT COLUMNS(lambda c: NOT starts_with(c, '__emb_')
                         AND (emb__skip_asked(bad_rows) OR c NOT IN ('skipped_null', 'skipped_zero', 'skipped_nonfinite')))
FROM (SELECT r.* EXCLUDE (__emb_all, __emb_r, skipped_null, skipped_zero, skipped_nonfinite), unnest(r.__emb_r.summary),
             r.skipped_null, r.skipped_zero, r.skipped_nonfinite
      FROM emb__classified(emb__checked_names(emb__checked_source(source, 'emb_knn_classify', model, emb__outputs_emb_knn_classify()), 'emb_knn_classify', [['label', label], ['vector', vector], ['split', split], ['item', item], ['group', "group"]]),
                     'knn', label, vector, model, emb__whole_argument(k, 'k'), split, item, "group", level, false,
                     skip := emb__skip_rows(bad_rows)) r) r
ORDER BY r.__emb_b;

-- @function emb_knn_classify_items(source, label := 'label', vector := 'vector', model := 'model', k := 10, split := NULL, item := NULL, "group" := NULL, bad_rows := 'error')
-- The per-item table behind `emb_knn_classify`: one row per model and classified item (all items,
-- or the test items), in table order, with its label and its predicted label.
-- @param source the table to read: a table or view name, or a file DuckDB reads
-- @param label the class-label column
-- @param vector the vector column; vectors are scaled to unit length
-- @param model the model column, used when the table has it; NULL: the whole table is one model
-- @param k the number of neighbours, below the number of items (or of training items)
-- @param split a column whose values are 'train' or 'test'; NULL: leave-one-out
-- @param item the item id column
-- @param "group" the cluster column, carried into the output (GROUP is a keyword: written `"group" := 'source'`)
-- @param bad_rows `'error'` (the default): a NULL, zero or non-finite vector is an error naming its row (from 1); `'skip'`: those rows are left out and counted in the `skipped_` columns
-- @column <model> the model, under the model column's own name (when the table has it)
-- @column item the item id as text (NULL without `item`)
-- @column label the item's label, as text
-- @column predicted the predicted label, as text
-- @column correct whether they are equal
-- @column group the item's cluster, as text (NULL without `group`)
-- @column skipped_null rows left out for a NULL vector (or a NULL element), per model, on each of its items' rows (only with `bad_rows := 'skip'`)
-- @column skipped_zero rows left out for a zero vector (only with `bad_rows := 'skip'`)
-- @column skipped_nonfinite rows left out for a NaN or infinite coordinate (only with `bad_rows := 'skip'`)
-- @notes
-- The tie rules and errors are those of `emb_knn_classify`.  From Python:
-- `embsql.knn_classify(..., per_item=True)`, whose result `embsql.compare_classification` reads.
-- @example
-- SELECT model, item, label, predicted, correct
-- FROM emb_knn_classify_items('many', label := 'topic', vector := 'embedding', model := 'model', item := 'item', k := 5)
-- WHERE item IN ('0', '1') ORDER BY model, item;
-- -- m0  0  g0  g0   true
-- -- m0  1  g1  g11  false
-- -- m1  0  g0  g5   false
-- -- m1  1  g1  g4   false
CREATE OR REPLACE TEMP MACRO emb_knn_classify_items(source, label := 'label', vector := 'vector', model := 'model',
                                                    k := 10, split := NULL, item := NULL, "group" := NULL,
                                                    bad_rows := 'error') AS TABLE
SELECT COLUMNS(lambda c: NOT starts_with(c, '__emb_')
                         AND (emb__skip_asked(bad_rows) OR c NOT IN ('skipped_null', 'skipped_zero', 'skipped_nonfinite')))
FROM (SELECT r.* EXCLUDE (__emb_all, __emb_r, skipped_null, skipped_zero, skipped_nonfinite), unnest(r.__emb_r.items, recursive := true),
             r.skipped_null, r.skipped_zero, r.skipped_nonfinite
      FROM emb__classified(emb__checked_names(emb__checked_source(source, 'emb_knn_classify_items', model, emb__outputs_emb_knn_classify_items()), 'emb_knn_classify_items', [['label', label], ['vector', vector], ['split', split], ['item', item], ['group', "group"]]),
                     'knn', label, vector, model, emb__whole_argument(k, 'k'), split, item, "group", 0.95, true,
                     skip := emb__skip_rows(bad_rows)) r) r
ORDER BY r.__emb_b;

-- @function emb_centroid_classify(source, label := 'label', vector := 'vector', model := 'model', split := NULL, item := NULL, "group" := NULL, level := 0.95, bad_rows := 'error')
-- Nearest-centroid classification: each item goes to the class whose mean of unit vectors is
-- nearest (Euclidean distance), its own class's mean leaving it out (leave-one-out: (S_g − z)/(n_g − 1)
-- from the group sums S_g of R²), or, with `split`, to the nearest mean of the training items.
-- One row per model, with the columns of `emb_knn_classify` (`classifier` is `centroid`, `k` NULL).
-- @param source the table to read: a table or view name, or a file DuckDB reads
-- @param label the class-label column (a NULL or NaN label is an error naming its row)
-- @param vector the vector column; vectors are scaled to unit length
-- @param model the model column: one row per value of it, used when the table has it; NULL: the whole table is one model
-- @param split a column whose values are 'train' or 'test'; NULL: leave-one-out
-- @param item the item id column: names rows in messages
-- @param "group" clusters of items that are not independent (GROUP is a keyword: written `"group" := 'source'`): the intervals then resample clusters
-- @param level the confidence level of the intervals
-- @param bad_rows `'error'` (the default): a NULL, zero or non-finite vector is an error naming its row (from 1); `'skip'`: those rows are left out and counted in the `skipped_` columns
-- @column <model> the model, under the model column's own name (when the table has it)
-- @column accuracy the share of items whose predicted label is their label
-- @column ci_low Wilson's interval over items; with `group`, on the clusters' effective sample size (as `emb_knn_classify`)
-- @column ci_high its upper end
-- @column macro_f1 the mean F1 over the classes present, scikit-learn's `f1_score(average='macro')`
-- @column macro_f1_ci_low macro_f1 − t(U − 1) × its jackknife SE over items or clusters
-- @column macro_f1_ci_high its upper end
-- @column items the items classified
-- @column classes the distinct labels
-- @column groups G (NULL without `group`)
-- @column k NULL
-- @column classifier `centroid`
-- @column split `leave-one-out` or `train-test`
-- @column level as asked
-- @column calibrated true from 30 items (or clusters) on
-- @column skipped_null rows left out for a NULL vector (or a NULL element), per model (only with `bad_rows := 'skip'`)
-- @column skipped_zero rows left out for a zero vector (only with `bad_rows := 'skip'`)
-- @column skipped_nonfinite rows left out for a NaN or infinite coordinate (only with `bad_rows := 'skip'`)
-- @notes
-- The figures equal scikit-learn's `NearestCentroid` on the unit vectors, refitted without each
-- item in turn.  An item alone in its class cannot be assigned to it.  A tie goes to the smallest
-- label.  Cost O(n G d).  From Python: `embsql.centroid_classify`.
-- @example
-- SELECT model, round(accuracy, 4) AS accuracy, round(macro_f1, 4) AS macro_f1, items, classifier
-- FROM emb_centroid_classify('many', label := 'topic', vector := 'embedding', model := 'model');
-- -- m0  0.1458  0.1079  144  centroid
-- -- m1  0.1597  0.1349  144  centroid
CREATE OR REPLACE TEMP MACRO emb_centroid_classify(source, label := 'label', vector := 'vector', model := 'model',
                                                   split := NULL, item := NULL, "group" := NULL, level := 0.95,
                                                   bad_rows := 'error') AS TABLE
SELECT COLUMNS(lambda c: NOT starts_with(c, '__emb_')
                         AND (emb__skip_asked(bad_rows) OR c NOT IN ('skipped_null', 'skipped_zero', 'skipped_nonfinite')))
FROM (SELECT r.* EXCLUDE (__emb_all, __emb_r, skipped_null, skipped_zero, skipped_nonfinite), unnest(r.__emb_r.summary),
             r.skipped_null, r.skipped_zero, r.skipped_nonfinite
      FROM emb__classified(emb__checked_names(emb__checked_source(source, 'emb_centroid_classify', model, emb__outputs_emb_centroid_classify()), 'emb_centroid_classify', [['label', label], ['vector', vector], ['split', split], ['item', item], ['group', "group"]]),
                     'centroid', label, vector, model, NULL, split, item, "group", level, false,
                     skip := emb__skip_rows(bad_rows)) r) r
ORDER BY r.__emb_b;
