-- Multi-term PERMANOVA with adonis2's semantics: emb_permanova_terms.  Loaded by embsql.register(con)
-- after the UDF it calls (udfs/permanova_terms.py).  Each item's term columns go to the UDF as one JSON
-- object (numbers stay numbers: covariates; text: factors); the UDF puts the items in canonical order.

-- the column names the terms use: 'a:b' and 'a*b' name a and b
CREATE OR REPLACE TEMP MACRO emb__term_columns(terms) AS
    list_distinct(flatten(list_transform(terms, lambda t: list_transform(string_split_regex(t, '[:*]'),
                                                                          lambda c: trim(c)))));

-- by_terms := : 'sequential' or 'margin' (checked by the UDF); NULL would skip the UDF
CREATE OR REPLACE TEMP MACRO emb__by_terms_argument(value) AS
    CASE WHEN value IS NOT NULL AND typeof(value) = 'VARCHAR' THEN value::VARCHAR
         ELSE error(format('embsql: [argument.by_terms] by_terms must be ''sequential'' or ''margin'', not {}',
                           coalesce(value::VARCHAR, 'NULL')))
    END;

CREATE OR REPLACE TEMP MACRO emb_permanova_terms(tbl, terms, vector_col, by_terms := 'sequential',
                                                 permutations := 999, seed := 42, strata := NULL,
                                                 model := NULL) AS TABLE
WITH items AS (
    SELECT coalesce(*COLUMNS(lambda c: c IN (model, '__emb_null'))) AS __emb_b,
           to_json(struct_pack(*COLUMNS(lambda c: list_contains(emb__term_columns(terms), c) OR c = '__emb_null')))::VARCHAR AS __emb_j,
           coalesce(*COLUMNS(lambda c: c IN (vector_col, '__emb_null')))::DOUBLE[] AS __emb_v,
           coalesce(*COLUMNS(lambda c: c IN (strata, '__emb_null')))::VARCHAR AS __emb_x
    FROM (SELECT *, NULL AS __emb_null FROM query_table(tbl))
),
test AS (
    SELECT __emb_b,
           emb__permanova_terms_test(list(__emb_j), list(__emb_v), list(__emb_x), terms::VARCHAR[], vector_col,
                                     emb__by_terms_argument(by_terms), emb__whole_argument(permutations, 'permutations'),
                                     emb__whole_argument(seed, 'seed'), strata IS NOT NULL, tbl) AS rows
    FROM items
    GROUP BY __emb_b
)
SELECT COLUMNS(lambda c: c NOT IN ('__emb_b', '__emb_k') AND (model IS NOT NULL OR c <> 'model')),
       emb__whole_argument(permutations, 'permutations') AS permutations
FROM (SELECT __emb_b, __emb_b AS model, unnest(rows, recursive := true), unnest(range(len(rows))) AS __emb_k FROM test)
ORDER BY __emb_b, __emb_k;

CREATE OR REPLACE TEMP MACRO emb_permanova_terms_dist(dist_tbl, labels_tbl, terms, i_col := 'i', j_col := 'j',
                                                      d_col := 'd', id_col := 'id', by_terms := 'sequential',
                                                      permutations := 999, seed := 42, strata := NULL) AS TABLE
WITH labels AS (
    SELECT coalesce(*COLUMNS(lambda c: c IN (id_col, '__emb_null')))::VARCHAR AS id,
           to_json(struct_pack(*COLUMNS(lambda c: list_contains(emb__term_columns(terms), c) OR c = '__emb_null')))::VARCHAR AS j,
           coalesce(*COLUMNS(lambda c: c IN (strata, '__emb_null')))::VARCHAR AS s
    FROM (SELECT *, NULL AS __emb_null FROM query_table(labels_tbl))
),
pairs AS (SELECT * FROM emb__distance_pairs(dist_tbl, i_col, j_col, d_col)),
test AS (
    SELECT emb__permanova_terms_dist_test(
               (SELECT list(a) FROM pairs WHERE a <> b), (SELECT list(b) FROM pairs WHERE a <> b),
               (SELECT list(d) FROM pairs WHERE a <> b), list(id), list(j), list(s), terms::VARCHAR[],
               emb__by_terms_argument(by_terms), emb__whole_argument(permutations, 'permutations'),
               emb__whole_argument(seed, 'seed'), strata IS NOT NULL, labels_tbl) AS rows
    FROM labels
)
SELECT COLUMNS(lambda c: c <> '__emb_k'), emb__whole_argument(permutations, 'permutations') AS permutations
FROM (SELECT unnest(rows, recursive := true), unnest(range(len(rows))) AS __emb_k FROM test)
ORDER BY __emb_k;
