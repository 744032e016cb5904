-- ---------------------------------------------------------------------------
-- Retrieval margins and the retrieval summary, in plain SQL.
--   queries: qid, paraphrase group, positive (the doc_id of its one correct document), vector
--   docs:    doc_id, topic group, vector          (both optionally with a model column)
-- For each query q, d+ its positive and D- the distractors (every other document of the same
-- model, or with scope 'group' only those of d+'s group), on unit vectors:
--   margin = s(q, d+) - max_{D-} s(q, d)      (cosine similarity s)
--   d_pos2 = ||q - d+||^2,  d_neg2 = ||q - d-||^2 (d- the best distractor),
--   m = (d_neg2 - d_pos2) / (d_neg2 + d_pos2),
--   ties = #{D-: |s - s+| <= tol}, rank = 1 + #{D-: s > s+ + tol} + ties, top1 = (rank = 1),
-- with tol = 2 (d + 4) * 2^-52.  When the best distractor ties with d+, margin = m = 0, so
-- top1 = (m > 0) in every row.  This is a join of every query with every document of its scope:
-- fine for the CLI and small tables; embsql.register(con) replaces emb__margins with a blocked
-- matrix-product version (sql/python/80_retrieval.sql) that gives the same numbers.
-- ---------------------------------------------------------------------------

-- One row per row of a queries or docs table: the model column (its own name, when given),
-- __emb_b (model value), the id as it is (__emb_q) and as text (__emb_k), group, level, positive
-- (as text), the vector, __emb_gcols (1 when the group column is missing), __emb_row (the row
-- number once the columns and labels are checked) and __emb_z (the unit vector once checked).
-- Roles name the columns in messages (qid, group, positive, vector; doc_id, doc_group,
-- doc_vector).  A NULL level_col or positive means the caller does not use that column;
-- need_group says whether the group column must exist and be non-NULL.  With skip (bad_rows :=
-- 'skip'), a row with an unusable vector is kept, not refused (its __emb_z NULL, __emb_bad what emb__unusable
-- said of it; NULL on every usable row): the caller leaves it out and counts it.
CREATE OR REPLACE TEMP MACRO emb__retrieval_rows(source, what, item, id_role, "group", group_role, need_group,
                                            level_col, positive, vector, vector_role, model,
                                            skip := false) AS TABLE
WITH meta AS (
    SELECT
        len(list_value(*COLUMNS(lambda c: c IN (item, '__emb_null')))) AS __emb_icols,
        len(list_value(*COLUMNS(lambda c: c IN ("group", '__emb_null')))) AS __emb_gcols,
        len(list_value(*COLUMNS(lambda c: c IN (level_col, '__emb_null')))) AS __emb_lcols,
        len(list_value(*COLUMNS(lambda c: c IN (positive, '__emb_null')))) AS __emb_pcols,
        len(list_value(*COLUMNS(lambda c: c IN (vector, '__emb_null')))) AS __emb_vcols,
        len(list_value(*COLUMNS(lambda c: c IN (model, '__emb_null')))) AS __emb_mcols,
        typeof(coalesce(*COLUMNS(lambda c: c IN (vector, '__emb_null')))) AS __emb_vtype
    FROM (SELECT 1) LEFT JOIN (SELECT *, NULL AS __emb_null FROM query_table(source) LIMIT 1) ON true
),
raw AS (
    SELECT
        COLUMNS(lambda c: c IN (model, '__emb_all')),
        coalesce(*COLUMNS(lambda c: c IN (model, '__emb_null'))) AS __emb_b,
        coalesce(*COLUMNS(lambda c: c IN (item, '__emb_null'))) AS __emb_q,
        coalesce(*COLUMNS(lambda c: c IN (item, '__emb_null')))::VARCHAR AS __emb_k,
        coalesce(*COLUMNS(lambda c: c IN ("group", '__emb_null'))) AS __emb_g0,
        coalesce(*COLUMNS(lambda c: c IN (level_col, '__emb_null'))) AS __emb_l,
        coalesce(*COLUMNS(lambda c: c IN (positive, '__emb_null')))::VARCHAR AS __emb_p,
        -- the vector column as DOUBLE[] (see emb__rows)
        emb__vector(struct_extract_at(row(*COLUMNS(lambda c: c IN (vector, '__emb_null'))), 1)) AS __emb_v,
        row_number() OVER () AS __emb_row      -- counted from 1, as the Python readers name rows
    FROM (SELECT *, 1 AS __emb_all, NULL AS __emb_null FROM query_table(source))
),
classified AS (
    SELECT * EXCLUDE (__emb_g0),
        -- the label rule of emb__rows (NaN refused, -0.0 is 0.0); a NULL label is checked below
        CASE WHEN __emb_g0 IS NOT NULL
             THEN emb__label(__emb_g0, emb__label_double(__emb_g0), "group", group_role) END AS __emb_g,
        emb__norm2(__emb_v) AS __emb_nrm2,
        count(*) OVER (PARTITION BY __emb_b, __emb_k) AS __emb_dup
    FROM raw
),
scaled AS (
    SELECT *, emb__norm_scale(__emb_v, __emb_nrm2) AS __emb_scale FROM classified
),
judged AS (
    SELECT *, emb__unusable(__emb_v, __emb_nrm2, __emb_scale) AS __emb_bad FROM scaled
),
normed AS (
    -- 1 / ||v|| for the few vectors whose squared norm needed scaling (see emb__norm_scale)
    SELECT *, CASE WHEN __emb_bad IS NULL AND __emb_scale IS NOT NULL
                   THEN emb__inverse_norm(list_transform(__emb_v, lambda x: x / __emb_scale), __emb_nrm2, __emb_scale)
              END AS __emb_inv
    FROM judged
)
SELECT c.* EXCLUDE (__emb_nrm2, __emb_dup, __emb_scale, __emb_inv), m.__emb_gcols,
    -- the unit vector (only the plain-SQL margins read it; the UDFs check vectors in Python)
    CASE WHEN __emb_bad IS NOT NULL THEN NULL
         WHEN __emb_scale IS NULL THEN list_transform(__emb_v, lambda x: x / sqrt(__emb_nrm2))
         ELSE list_transform(__emb_v, lambda x: (x / __emb_scale) * __emb_inv)  -- (v / scale) / ||v / scale||
    END AS __emb_z
FROM normed c, meta m
-- every check is a filter, so it holds whatever columns a query reads
WHERE CASE
    WHEN m.__emb_icols = 1 THEN error(format('embsql: [column.missing] {} column "{}" not found in {}', id_role, item, source))
    WHEN positive IS NOT NULL AND m.__emb_pcols = 1
        THEN error(format('embsql: [column.missing] positive column "{}" not found in {}', positive, source))
    WHEN m.__emb_vcols = 1 THEN error(format('embsql: [column.missing] {} column "{}" not found in {}', vector_role, vector, source))
    WHEN NOT emb__is_vector_type(m.__emb_vtype) THEN emb__fail_vector_type(vector_role, vector, source, m.__emb_vtype)
    WHEN need_group AND m.__emb_gcols = 1
        THEN error(format('embsql: [column.missing] {} column "{}" not found in {}', group_role, "group", source))
    WHEN level_col IS NOT NULL AND m.__emb_lcols = 1
        THEN error(format('embsql: [column.missing] strength column "{}" not found in {}', level_col, source))
    WHEN model IS NOT NULL AND m.__emb_mcols = 1
        THEN error(format('embsql: [column.missing] model column "{}" not found in {}', model, source))
    WHEN model IS NOT NULL AND __emb_b IS NULL
        THEN error(format('embsql: [label.null] {} {}: model column "{}" is NULL at row {}', what, source, model, __emb_row))
    WHEN __emb_q IS NULL
        THEN error(format('embsql: [label.null] {} {}: {} column "{}" is NULL at row {}', what, source, id_role, item, __emb_row))
    WHEN positive IS NOT NULL AND __emb_p IS NULL
        THEN error(format('embsql: [label.null] {} {}: positive column "{}" is NULL at row {} ({} ''{}'')',
                          what, source, positive, __emb_row, id_role, __emb_q))
    WHEN need_group AND __emb_g IS NULL
        THEN error(format('embsql: [label.null] {} {}: {} column "{}" is NULL at row {} ({} ''{}'')',
                          what, source, group_role, "group", __emb_row, id_role, __emb_q))
    WHEN level_col IS NOT NULL AND __emb_l IS NULL
        THEN error(format('embsql: [label.null] {} {}: strength column "{}" is NULL at row {} ({} ''{}'')',
                          what, source, level_col, __emb_row, id_role, __emb_q))
    WHEN __emb_dup > 1
        THEN error(format('embsql: [label.duplicate] {} {}: {} column "{}" has ''{}'' more than once; each {} must identify one row',
                          what, source, id_role, item, __emb_q, id_role))
    WHEN __emb_bad IS NOT NULL AND NOT skip
        THEN error(format('embsql: [{}] {} {}: {} column "{}" has a {} vector at row {} ({}{} ''{}''); vectors must be non-NULL, finite and of non-zero length',
                          emb__vector_kind(__emb_bad), what, source, vector_role, vector, __emb_bad, __emb_row,
                          CASE WHEN model IS NOT NULL THEN 'model ' || emb__shown(__emb_b) || ', ' ELSE '' END,
                          id_role, __emb_q))
    ELSE true
END;

CREATE OR REPLACE TEMP MACRO emb__margin_queries(queries, qid_col, "group", positive, vector, model,
                                                skip := false) AS TABLE
FROM emb__retrieval_rows(queries, 'queries', qid_col, 'qid', "group", 'group', false, NULL, positive,
                         vector, 'vector', model, skip := skip);

CREATE OR REPLACE TEMP MACRO emb__margin_docs(docs, doc_id, doc_group, doc_vector, model, need_group,
                                             skip := false) AS TABLE
FROM emb__retrieval_rows(docs, 'docs', doc_id, 'doc_id', doc_group, 'doc_group', need_group, NULL, NULL,
                         doc_vector, 'doc_vector', model, skip := skip);

-- Per query (plus the model column, __emb_b, __emb_g = paraphrase group, __emb_gcols): the margins,
-- and skipped_null, skipped_zero, skipped_nonfinite: with skip, the rows of the queries and the
-- documents left out for an unusable vector, the two tables together, per model (on each row).
CREATE OR REPLACE TEMP MACRO emb__margins(queries, docs, scope, qid_col, "group", positive, vector,
                                     doc_id, doc_group, doc_vector, model, skip := false) AS TABLE
WITH q_read AS MATERIALIZED (
    FROM emb__margin_queries(queries, qid_col, "group", positive, vector, model, skip := skip)
),
d_read AS MATERIALIZED (
    FROM emb__margin_docs(docs, doc_id, doc_group, doc_vector, model, scope = 'group', skip := skip)
),
-- (NOT skip first: without it, a filter on __emb_bad alone could be pushed below the check that
-- refuses a bad row, and hide it)
q AS (FROM q_read WHERE NOT skip OR __emb_bad IS NULL),
d AS (FROM d_read WHERE NOT skip OR __emb_bad IS NULL),
skipped AS (
    SELECT __emb_b AS __emb_sb, unnest(emb__skip_counts(list(__emb_bad) FILTER (__emb_bad IS NOT NULL)))
    FROM (SELECT __emb_b, __emb_bad FROM q_read UNION ALL SELECT __emb_b, __emb_bad FROM d_read)
    WHERE skip GROUP BY __emb_b
),
checked_docs AS (
    -- every document is checked, also those no query compares with; lengths agree within a model,
    -- and every model of the documents has queries
    SELECT count(CASE
               WHEN __emb_row IS NULL OR len(__emb_z) <> dim_min OR len(__emb_z) <> dim_max THEN error(format(
                   'embsql: [vector.length] docs {}: doc_vector column "{}" mixes vectors of length {} and {}{}', docs, doc_vector,
                   dim_min, dim_max, CASE WHEN __emb_b IS NULL THEN '' ELSE format(' (model {})', __emb_b) END))
               WHEN __emb_b NOT IN (SELECT __emb_b FROM q) THEN error(format(
                   'embsql: [model.missing] model {} is in docs {} but not in queries {}', __emb_b, docs, queries))
           END) AS __emb_n
    FROM (SELECT __emb_b, __emb_row, __emb_z, min(len(__emb_z)) OVER (PARTITION BY __emb_b) AS dim_min,
                 max(len(__emb_z)) OVER (PARTITION BY __emb_b) AS dim_max FROM d)
),
positives AS (
    SELECT q.*, p.__emb_g AS __emb_pg,
        list_dot_product(q.__emb_z, p.__emb_z) AS __emb_spos,
        list_distance(q.__emb_z, p.__emb_z) ** 2 AS __emb_dpos2,
        2.0 * (len(q.__emb_z) + 4) * 2.220446049250313e-16 AS __emb_tol
    FROM q LEFT JOIN d p ON q.__emb_b IS NOT DISTINCT FROM p.__emb_b AND q.__emb_p = p.__emb_k
    -- the checks are filters, so they hold whatever columns a query reads
    WHERE CASE
            WHEN scope IS NULL OR scope NOT IN ('corpus', 'group') THEN error(format(
                'embsql: [argument.scope] scope must be ''corpus'' or ''group'', not {}', coalesce('''' || scope || '''', 'NULL')))
            WHEN q.__emb_b NOT IN (SELECT __emb_b FROM d) THEN error(format(
                'embsql: [model.missing] model {} is in queries {} but not in docs {}', q.__emb_b, queries, docs))
            WHEN p.__emb_k IS NULL THEN error(format(
                'embsql: [label.unknown_positive] query {}{} has positive {}, which is not a doc_id of {}', q.__emb_q,
                CASE WHEN q.__emb_b IS NULL THEN '' ELSE format(' (model {})', q.__emb_b) END, q.__emb_p, docs))
            WHEN len(q.__emb_z) <> len(p.__emb_z) THEN error(format(
                'embsql: [vector.dimension] query vectors ("{}") have dimension {} but document vectors ("{}") have dimension {}{}; queries and documents must be embedded by the same model',
                vector, len(q.__emb_z), doc_vector, len(p.__emb_z),
                CASE WHEN q.__emb_b IS NULL THEN '' ELSE format(' (model {})', q.__emb_b) END))
            ELSE true
        END
),
pairs AS (
    SELECT q.__emb_row, list_dot_product(q.__emb_z, x.__emb_z) AS s, x.__emb_z AS z
    FROM positives q JOIN d x
      ON q.__emb_b IS NOT DISTINCT FROM x.__emb_b AND x.__emb_k <> q.__emb_p
     AND (scope = 'corpus' OR x.__emb_g IS NOT DISTINCT FROM q.__emb_pg)
),
best AS (
    SELECT p.__emb_row, max(p.s) AS s_neg, arg_max(p.z, p.s) AS z_neg,
           count(*) FILTER (p.s > q.__emb_spos + q.__emb_tol) AS higher,
           count(*) FILTER (abs(p.s - q.__emb_spos) <= q.__emb_tol) AS ties
    FROM pairs p JOIN positives q ON p.__emb_row = q.__emb_row
    GROUP BY p.__emb_row
),
joined AS (
    SELECT q.* EXCLUDE (__emb_v), b.s_neg, b.higher, b.ties, list_distance(q.__emb_z, b.z_neg) ** 2 AS __emb_dneg2
    FROM positives q LEFT JOIN best b ON q.__emb_row = b.__emb_row, checked_docs
    WHERE checked_docs.__emb_n >= 0 AND CASE
        WHEN b.__emb_row IS NULL THEN error(format(
            'embsql: [design.no_distractor] query {}{}: scope ''{}'' leaves it no distractor (its positive {} is the only document{})',
            q.__emb_q, CASE WHEN q.__emb_b IS NULL THEN '' ELSE format(' (model {})', q.__emb_b) END, scope, q.__emb_p,
            CASE WHEN scope = 'group' THEN format(' of group {}', q.__emb_pg) ELSE '' END))
        ELSE true END
)
SELECT
    COLUMNS(lambda c: c IN (model, '__emb_all')), __emb_b, __emb_g, __emb_gcols, __emb_row,
    __emb_q AS qid,
    __emb_dpos2 AS d_pos2,
    __emb_dneg2 AS d_neg2,
    CASE WHEN higher = 0 AND ties > 0 THEN 0.0 ELSE __emb_spos - s_neg END AS margin,
    CASE WHEN higher = 0 AND ties > 0 THEN 0.0
         ELSE (__emb_dneg2 - __emb_dpos2) / (__emb_dneg2 + __emb_dpos2) END AS m,
    higher + ties = 0 AS top1,
    1 + higher + ties AS rank,
    ties,
    s.skipped_null, s.skipped_zero, s.skipped_nonfinite
FROM joined LEFT JOIN skipped s ON joined.__emb_b IS NOT DISTINCT FROM s.__emb_sb;

-- @function emb_margins(queries, docs, scope := 'corpus', qid := 'qid', positive := 'positive', vector := 'vector', doc_id := 'doc_id', doc_group := 'group', doc_vector := 'vector', model := NULL, bad_rows := 'error')
-- Retrieval margins, one row per query: how far each query's correct document beats its best
-- distractor.  Rows are ordered by model, then qid.
-- @param queries the queries table: one row per query (and model), with its id, the doc_id of its one correct document and its vector
-- @param docs the documents table: one row per document (and model), with its id, a topic group and its vector
-- @param scope which documents are distractors: `'corpus'` (every other document) or `'group'` (the other documents of the positive's group)
-- @param qid the queries' id column
-- @param positive the queries' column holding the doc_id of each query's one relevant document (matched to doc_ids as text)
-- @param vector the queries' vector column
-- @param doc_id the documents' id column
-- @param doc_group the documents' group column (documents of one topic are near-miss distractors; used by `scope := 'group'`)
-- @param doc_vector the documents' vector column
-- @param model the model column of both tables: each model's queries are compared with that model's documents only
-- @param bad_rows `'error'` (the default): a NULL, zero or non-finite vector is an error naming its table, row (from 1) and id; `'skip'`: those rows of either table are left out and counted in the `skipped_` columns
-- @column <model> the model, under the model column's own name (only with `model`)
-- @column qid the query
-- @column d_pos2 ‖q − d+‖² (summed from coordinate differences, exact near 0)
-- @column d_neg2 min over D− of ‖q − d‖² (the best distractor)
-- @column margin s(q, d+) − max over D− of s(q, d) (depends on the similarity scale)
-- @column m (d_neg2 − d_pos2)/(d_neg2 + d_pos2) in [−1, 1]: same sign as `margin`, unchanged by similarity transforms
-- @column top1 d+ ranks first, = (`m` > 0) = (`rank` = 1)
-- @column rank 1 + number of distractors more similar than d+ + `ties`
-- @column ties distractors whose similarity equals d+'s within tol = 2 (d + 4) · 2⁻⁵²
-- @column skipped_null rows of the queries and documents left out for a NULL vector (or a NULL element), per model, on each of its rows (only with `bad_rows := 'skip'`)
-- @column skipped_zero rows left out for a zero vector (only with `bad_rows := 'skip'`)
-- @column skipped_nonfinite rows left out for a NaN or infinite coordinate (only with `bad_rows := 'skip'`)
-- @notes
-- With s the cosine similarity of the unit vectors, d+ the correct document and D− the
-- distractors.  A tie counts against d+ (pessimistic rank); when the best distractor ties with d+,
-- `margin` and `m` are exactly 0.  The `.read` version is a join of every query with every
-- document of its scope: fine for thousands of queries and documents.  After
-- `embsql.register(con)` the same macro runs blocked matrix products in a Python UDF (float32
-- products, exact float64 recheck of anything float32 cannot decide) and gives the same numbers;
-- `embsql.margins(con, queries, docs, ...)` is its Python face (bench/README.md has timings), which
-- also takes qrels (many relevant documents per query) instead of the `positive` column.
--
-- Errors: a missing column; a NULL id, positive or model; a doc_id or qid twice (per model); a
-- NULL, zero-length, NaN or infinite vector (named by qid or doc_id); vectors of different lengths,
-- or queries and documents of different dimension; a positive that is not a doc_id; a model in one
-- table only; a query with no distractor (scope 'group' and d+ alone in its group); a scope other
-- than 'corpus' or 'group'.
-- @example
-- SELECT qid, round(m, 4) AS m, top1, rank FROM emb_margins('queries', 'docs', scope := 'group');
-- -- q1  -0.3873  false  2
-- -- q2  -0.6492  false  2
-- -- q3   0.8064  true   1
-- -- q4  -0.6689  false  2
CREATE OR REPLACE TEMP MACRO emb_margins(queries, docs, scope := 'corpus', qid := 'qid', positive := 'positive',
                                         vector := 'vector', doc_id := 'doc_id', doc_group := 'group',
                                         doc_vector := 'vector', model := NULL, bad_rows := 'error') AS TABLE
SELECT COLUMNS(lambda c: c NOT IN ('__emb_all', '__emb_b', '__emb_g', '__emb_gcols', '__emb_row', '__emb_bad')
                         AND (emb__skip_asked(bad_rows) OR c NOT IN ('skipped_null', 'skipped_zero', 'skipped_nonfinite')))
FROM emb__margins(
         emb__checked_source(queries, 'emb_margins', model, emb__outputs_emb_margins()),
         docs, scope, qid, NULL, positive, vector, doc_id, doc_group, doc_vector, model,
         skip := emb__skip_rows(bad_rows)) m
ORDER BY m.__emb_b, m.qid;

-- Per model: top-1, recall@k, MRR, mean and quantiles of m, and cluster-jackknife SEs over the
-- paraphrase groups: theta_(-g) = (sum - sum_g)/(n - n_g), SE = sqrt((G-1)/G sum_g (theta_(-g) - mean)^2)
-- = sqrt((G - 1) var_pop(theta_(-g))).
CREATE OR REPLACE TEMP MACRO emb__retrieval_summary(queries, docs, scope, qid_col, "group", positive, vector,
                                                doc_id, doc_group, doc_vector, model, skip := false) AS TABLE
WITH r AS (
    -- the first column (the model column under its own name, or __emb_all) renamed by position, so
    -- that a model column named like a margin column (rank, m, qid ...) cannot stand for it
    SELECT *
    FROM emb__margins(queries, docs, scope, qid_col, "group", positive, vector, doc_id, doc_group,
                      doc_vector, model, skip := skip) AS __emb_margin_rows(__emb_model)
    -- a filter, so the check holds whatever columns a query reads
    WHERE CASE WHEN __emb_gcols = 1 THEN error(format('embsql: [column.missing] group column "{}" not found in {}', "group", queries))
               WHEN __emb_g IS NULL THEN error(format('embsql: [label.null] queries {}: group column "{}" is NULL (qid {})', queries, "group", qid))
               ELSE true END
),
per_group AS (
    SELECT __emb_b, __emb_g, count(*)::DOUBLE AS n, sum(top1::INTEGER) AS t1, sum((rank <= 5)::INTEGER) AS r5,
           sum((rank <= 10)::INTEGER) AS r10, sum(1.0 / rank) AS rr, sum(m) AS ms
    FROM r GROUP BY ALL
),
replicates AS (
    SELECT __emb_b,
        (sum(t1) OVER w - t1) / (sum(n) OVER w - n) AS t1,
        (sum(r5) OVER w - r5) / (sum(n) OVER w - n) AS r5,
        (sum(r10) OVER w - r10) / (sum(n) OVER w - n) AS r10,
        (sum(rr) OVER w - rr) / (sum(n) OVER w - n) AS rr,
        (sum(ms) OVER w - ms) / (sum(n) OVER w - n) AS ms
    FROM per_group
    WINDOW w AS (PARTITION BY __emb_b)
),
se AS (
    SELECT __emb_b, count(*) AS g,
        CASE WHEN count(*) >= 2 THEN sqrt((count(*) - 1) * var_pop(t1)) END AS top1_se,
        CASE WHEN count(*) >= 2 THEN sqrt((count(*) - 1) * var_pop(r5)) END AS recall_at_5_se,
        CASE WHEN count(*) >= 2 THEN sqrt((count(*) - 1) * var_pop(r10)) END AS recall_at_10_se,
        CASE WHEN count(*) >= 2 THEN sqrt((count(*) - 1) * var_pop(rr)) END AS mrr_se,
        CASE WHEN count(*) >= 2 THEN sqrt((count(*) - 1) * var_pop(ms)) END AS m_mean_se
    FROM replicates GROUP BY __emb_b
),
main AS (
    SELECT __emb_b,
        count(*) AS queries, avg(top1::INTEGER) AS top1, avg((rank <= 5)::INTEGER) AS recall_at_5,
        avg((rank <= 10)::INTEGER) AS recall_at_10, avg(1.0 / rank) AS mrr, avg(m) AS m_mean,
        quantile_cont(m, [0.05, 0.25, 0.5, 0.75, 0.95]) AS mq, count(*) FILTER (ties > 0) AS ties,
        any_value(skipped_null) AS skipped_null, any_value(skipped_zero) AS skipped_zero,
        any_value(skipped_nonfinite) AS skipped_nonfinite
    FROM r GROUP BY ALL
)
SELECT COLUMNS(lambda c: c <> '__emb_all') FROM (
-- the model column under its own name again: a struct of one field read from the queries table
-- (a row of a one-column subquery), unnested
SELECT unnest(k.__emb_key),
    main.queries, se.g AS groups, main.top1, se.top1_se, main.top1 AS recall_at_1, main.recall_at_5, se.recall_at_5_se,
    main.recall_at_10, se.recall_at_10_se, main.mrr, se.mrr_se, main.m_mean, se.m_mean_se,
    mq[1] AS m_p05, mq[2] AS m_p25, mq[3] AS m_median, mq[4] AS m_p75, mq[5] AS m_p95, main.ties, scope AS scope,
    main.skipped_null, main.skipped_zero, main.skipped_nonfinite
FROM main JOIN se ON main.__emb_b IS NOT DISTINCT FROM se.__emb_b
LEFT JOIN (SELECT DISTINCT s AS __emb_key
           FROM (SELECT COLUMNS(lambda c: c IN (model, '__emb_all'))
                 FROM (SELECT *, 1 AS __emb_all FROM query_table(queries))) s) k
    ON CASE WHEN model IS NULL THEN NULL ELSE struct_extract_at(k.__emb_key, 1) END IS NOT DISTINCT FROM main.__emb_b
ORDER BY main.__emb_b);

-- @function emb_retrieval_summary(queries, docs, scope := 'corpus', qid := 'qid', "group" := 'group', positive := 'positive', vector := 'vector', doc_id := 'doc_id', doc_group := 'group', doc_vector := 'vector', model := NULL, bad_rows := 'error')
-- The retrieval summary per model, from the margins of `emb_margins`: top-1, recall@k, MRR and the
-- distribution of m, with cluster-jackknife SEs over the queries' paraphrase groups.  One row, or
-- one row per model (first, under its own name).
-- @param queries the queries table: one row per query (and model), with its id, its paraphrase group, the doc_id of its one correct document and its vector
-- @param docs the documents table: one row per document (and model), with its id, a topic group and its vector
-- @param scope which documents are distractors: `'corpus'` (every other document) or `'group'` (the other documents of the positive's group)
-- @param qid the queries' id column
-- @param "group" the queries' paraphrase group column (the original question; required here, for the SEs)
-- @param positive the queries' column holding the doc_id of each query's one relevant document
-- @param vector the queries' vector column
-- @param doc_id the documents' id column
-- @param doc_group the documents' group column (used by `scope := 'group'`)
-- @param doc_vector the documents' vector column
-- @param model the model column of both tables
-- @param bad_rows `'error'` (the default): a NULL, zero or non-finite vector is an error naming its table, row (from 1) and id; `'skip'`: those rows of either table are left out and counted in the `skipped_` columns
-- @column <model> the model, under the model column's own name (only with `model`)
-- @column queries number of queries
-- @column groups number of paraphrase groups
-- @column top1 share of queries whose positive ranks first
-- @column top1_se its cluster-jackknife SE
-- @column recall_at_1 = `top1`
-- @column recall_at_5 share of queries whose positive is in the top 5
-- @column recall_at_5_se its SE
-- @column recall_at_10 share of queries whose positive is in the top 10
-- @column recall_at_10_se its SE
-- @column mrr mean reciprocal rank of the positive
-- @column mrr_se its SE
-- @column m_mean mean of `m` (see `emb_margins`)
-- @column m_mean_se its SE
-- @column m_p05 5% quantile of `m` (linear interpolation, as `quantile_cont` and numpy)
-- @column m_p25 25% quantile of `m`
-- @column m_median median of `m`
-- @column m_p75 75% quantile of `m`
-- @column m_p95 95% quantile of `m`
-- @column ties queries whose d+ ties with a distractor
-- @column scope the scope asked for
-- @column skipped_null rows of the queries and documents left out for a NULL vector (or a NULL element), per model, on each of its rows (only with `bad_rows := 'skip'`)
-- @column skipped_zero rows left out for a zero vector (only with `bad_rows := 'skip'`)
-- @column skipped_nonfinite rows left out for a NaN or infinite coordinate (only with `bad_rows := 'skip'`)
-- @notes
-- The SEs are cluster jackknives over the paraphrase groups: paraphrases of one question are not
-- independent, so each replicate leaves out a whole group, θ₍₋g₎ = (Σ − Σ_g)/(n − n_g) and
-- SE = sqrt((G − 1)/G Σ_g (θ₍₋g₎ − mean)²); NULL with one group.  Quantiles carry no SE.  Top-1,
-- recall and MRR depend only on the order of similarities; `m` is scale-free (it says how much
-- room a query has, not anything about ranks below the first).  In Python:
-- `embsql.retrieval_summary`; the four-layer report is `embsql.retrieval_layers`.  Errors: those
-- of `emb_margins`, and a missing or NULL group.
-- @example
-- SELECT queries, groups, top1, top1_se, mrr, round(m_median, 4) AS m_median
-- FROM emb_retrieval_summary('queries', 'docs');
-- -- 4  2  0.25  0.25  0.625  -0.5183
CREATE OR REPLACE TEMP MACRO emb_retrieval_summary(queries, docs, scope := 'corpus', qid := 'qid', "group" := 'group',
                                                   positive := 'positive', vector := 'vector', doc_id := 'doc_id',
                                                   doc_group := 'group', doc_vector := 'vector',
                                                   model := NULL, bad_rows := 'error') AS TABLE
SELECT COLUMNS(lambda c: emb__skip_asked(bad_rows) OR c NOT IN ('skipped_null', 'skipped_zero', 'skipped_nonfinite'))
FROM emb__retrieval_summary(
         emb__checked_source(queries, 'emb_retrieval_summary', model, emb__outputs_emb_retrieval_summary()),
         docs, scope, qid, "group", positive, vector, doc_id, doc_group, doc_vector, model,
         skip := emb__skip_rows(bad_rows)) r;
