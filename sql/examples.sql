-- The tables the examples of the SQL reference read (sql/README.md): run this file after
-- .read sql/embsql.sql (or on a connection from embsql.connect()).  Plain SQL, no embsql function.

-- two models that embed the same four items in two topics; m2 is m1 lifted by a third coordinate
CREATE OR REPLACE TABLE ex AS SELECT * FROM (VALUES
    ('m1', 'A', [1.0, 0.0]), ('m1', 'A', [0.8, 0.6]), ('m1', 'B', [0.0, 1.0]), ('m1', 'B', [-0.6, 0.8]),
    ('m2', 'A', [1.0, 0.0, 1.0]), ('m2', 'A', [0.8, 0.6, 1.0]), ('m2', 'B', [0.0, 1.0, 1.0]), ('m2', 'B', [-0.6, 0.8, 1.0])
) t(model, topic, embedding);

-- the distances between m1's four vectors (one row per pair) and their labels
CREATE OR REPLACE TABLE lab AS SELECT * FROM (VALUES (1, 'A'), (2, 'A'), (3, 'B'), (4, 'B')) t(id, topic);
CREATE OR REPLACE TABLE dist AS
    SELECT a.id AS i, b.id AS j, array_distance(a.v, b.v) AS d
    FROM (SELECT row_number() OVER () AS id, embedding::DOUBLE[2] AS v FROM ex WHERE model = 'm1') a
    JOIN (SELECT row_number() OVER () AS id, embedding::DOUBLE[2] AS v FROM ex WHERE model = 'm1') b ON a.id < b.id;

-- twelve topics of twelve items, two models (m0, m1) embedding the same 144 items
CREATE OR REPLACE TABLE many AS SELECT 'g' || ((i // 2) % 12) AS topic, 'm' || (i % 2) AS model, i // 2 AS item,
       [sin(i), cos(1.3 * i), sin(0.7 * i) + ((i // 2) % 12) / 6] AS embedding
FROM range(288) t(i);

-- retrieval: four documents in two topics, four queries (two paraphrases of each of two questions)
CREATE OR REPLACE TABLE docs AS SELECT * FROM (VALUES
    ('d1', 'cats', [1.0, 0.0, 0.0]), ('d2', 'cats', [0.9, 0.3, 0.0]),
    ('d3', 'dogs', [0.0, 1.0, 0.0]), ('d4', 'dogs', [0.0, 0.8, 0.6])) t(doc_id, "group", vector);
CREATE OR REPLACE TABLE queries AS SELECT * FROM (VALUES
    ('q1', 'what eats mice', 'd1', [0.95, 0.2, 0.1]), ('q2', 'what eats mice', 'd1', [0.8, 0.5, 0.1]),
    ('q3', 'who fetches', 'd4', [0.1, 0.9, 0.5]), ('q4', 'who fetches', 'd4', [0.0, 1.0, 0.2])) t(qid, "group", positive, vector);

-- paraphrases at two strengths (level 1 and 2) of three questions
CREATE OR REPLACE TABLE para AS SELECT * FROM (VALUES
    ('a1', 'A', 1, [1.0, 0.1, 0.0]), ('a2', 'A', 1, [1.0, -0.1, 0.0]), ('a3', 'A', 2, [1.0, 0.5, 0.2]), ('a4', 'A', 2, [1.0, -0.4, -0.3]),
    ('b1', 'B', 1, [0.0, 1.0, 0.1]), ('b2', 'B', 1, [0.1, 1.0, 0.0]), ('b3', 'B', 2, [0.5, 1.0, 0.3]), ('b4', 'B', 2, [-0.4, 1.0, -0.2]),
    ('c1', 'C', 1, [0.0, 0.1, 1.0]), ('c2', 'C', 1, [0.1, 0.0, 1.0]), ('c3', 'C', 2, [0.4, 0.3, 1.0]), ('c4', 'C', 2, [-0.5, -0.2, 1.0])
) t(qid, "group", level, vector);

-- twelve items embedded by a small and a large model (neighbourhoods), and by two others (geometry)
CREATE OR REPLACE TABLE neighbours AS
    SELECT 'doc' || i AS item_id, 'small' AS model, [cos(i), sin(i)] AS embedding FROM range(12) t(i)
    UNION ALL
    SELECT 'doc' || i, 'large', [cos(i), sin(i), 0.3 * cos(3 * i)] FROM range(12) t(i);
CREATE OR REPLACE TABLE geometry AS
    SELECT 'i' || i AS item_id, m AS model,
           CASE m WHEN 'large' THEN [cos(i), sin(i), cos(2 * i), sin(3 * i)]
                  ELSE [cos(i) + 0.1 * sin(5 * i), sin(i), cos(2 * i)] END AS embedding
    FROM range(12) t(i), (VALUES ('large'), ('small')) v(m);
-- forty items embedded by a reference model and two others, one near it and one far (emb_compare_cka)
CREATE OR REPLACE TABLE geometry3 AS
    SELECT 'doc' || i AS item_id, m AS model, [cos(i), sin(i), w * cos(3 * i) + v * sin(5 * i)] AS embedding
    FROM range(40) t(i), (VALUES ('ref', 0.0, 0.0), ('near', 0.2, 0.0), ('far', 0.2, 1.5)) m(m, w, v);

-- a per-query evaluation of two models on 90 queries in 30 paraphrase groups
CREATE OR REPLACE TABLE evaluation AS
    SELECT m AS model, 'q' || i AS qid, 'ndcg@10' AS metric, 'g' || (i // 3) AS "group",
           CASE m WHEN 'bge' THEN 0.6 + 0.3 * sin(i) ELSE 0.5 + 0.3 * sin(i) + 0.1 * cos(7 * i) END AS value
    FROM range(90) t(i), (VALUES ('bge'), ('e5')) v(m);

-- a run (any retrieval system's output) and its relevance judgements
CREATE OR REPLACE TABLE run AS SELECT * FROM (VALUES
    ('q1', 'a', 0.9), ('q1', 'b', 0.8), ('q1', 'c', 0.1),
    ('q2', 'a', 0.7), ('q2', 'c', 0.7), ('q2', 'b', 0.2)
) t(qid, doc_id, score);
CREATE OR REPLACE TABLE qrels AS SELECT * FROM (VALUES
    ('q1', 'b', 2), ('q1', 'c', 1), ('q2', 'a', 1), ('q2', 'b', 0)
) t(qid, doc_id, relevance);

-- queries and documents as vectors, with judgements
CREATE OR REPLACE TABLE eval_queries AS SELECT * FROM (VALUES
    ('q1', [1.0, 0.0]), ('q2', [0.0, 1.0])) t(qid, vector);
CREATE OR REPLACE TABLE eval_docs AS SELECT * FROM (VALUES
    ('a', [1.0, 0.1]), ('b', [0.1, 1.0]), ('c', [0.7, 0.7])) t(doc_id, vector);
CREATE OR REPLACE TABLE eval_qrels AS SELECT * FROM (VALUES
    ('q1', 'a', 1), ('q2', 'c', 2), ('q2', 'b', 1)) t(qid, doc_id, relevance);

-- gold similarity judgements of 28 pairs of 8 words, and the words embedded by two models
CREATE OR REPLACE TABLE word_vectors AS
    SELECT m AS model, 'w' || i AS item, [cos(i / 3), sin(i / 3), w * cos(7 * i)] AS vector
    FROM range(8) t(i), (VALUES ('good', 0.0), ('noisy', 0.6)) v(m, w);
CREATE OR REPLACE TABLE judged_pairs AS
    SELECT 'w' || i AS item_a, 'w' || j AS item_b, 10.0 - (j - i) + 0.01 * i AS score
    FROM range(8) s(i), range(8) t(j) WHERE i < j;
-- per-item answers of two classifiers on the same six items (the shape emb_knn_classify_items gives)
CREATE OR REPLACE TABLE predictions AS SELECT * FROM (VALUES
    ('a', 'u', true), ('a', 'v', true), ('a', 'w', true), ('a', 'x', true), ('a', 'y', true), ('a', 'z', true),
    ('b', 'u', true), ('b', 'v', false), ('b', 'w', false), ('b', 'x', false), ('b', 'y', true), ('b', 'z', true)
) t(model, item, correct);
