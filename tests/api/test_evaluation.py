"""Retrieval evaluation: exact top-k, trec_eval's metrics against pytrec_eval and ranx, the tie
rule, runs and qrels from files, bad input, and invariance to monotone transforms of scores."""

import json

import numpy as np
import pyarrow as pa
import pytest
from helpers import TESTS
from hypothesis import given, settings
from hypothesis import strategies as st

import embsql
import embsql.io.runs
from embsql.core import ranking
from embsql.errors import BadLabelError, InputError

REFERENCE = json.loads((TESTS / "reference/retrieval/reference.json").read_text())
METRICS = list(REFERENCE["pytrec_eval"])
SHARED = embsql.connect()       # one connection for the hypothesis examples (registering costs ~0.5 s)


def qrels_table(qrels: dict) -> pa.Table:
    rows = [(q, d, r) for q, judged in qrels.items() for d, r in judged.items()]
    return pa.table({"qid": [r[0] for r in rows], "doc_id": [r[1] for r in rows], "relevance": [r[2] for r in rows]})


def run_table(run: dict) -> pa.Table:
    rows = [(q, d, s) for q, scores in run.items() for d, s in scores.items()]
    return pa.table({"qid": [r[0] for r in rows], "doc_id": [r[1] for r in rows], "score": [r[2] for r in rows]})


def per_query(result) -> dict:
    out = {}
    for row in result.to_dicts():
        out.setdefault(row["metric"], {})[row["qid"]] = row["value"]
    return out


def vectors(array) -> pa.Array:
    array = np.asarray(array, dtype=np.float64)
    return pa.FixedSizeListArray.from_arrays(pa.array(array.ravel(), pa.float32()), array.shape[1])


# ---- reference agreement -----------------------------------------------------------------

def test_metrics_equal_pytrec_eval_with_ties_grades_and_unjudged(con):
    """Stored pytrec_eval values (tests/reference/retrieval/make_reference.py): per query to 1e-12,
    including the tie order, the all-zero query q03 (0 everywhere, counted) and the skipped
    queries (q11 is never judged, q99 is not in the run)."""
    ours = per_query(embsql.evaluate(con, run_table(REFERENCE["run"]), qrels_table(REFERENCE["qrels"]),
                                     metrics=METRICS, per_query=True))
    for metric, values in REFERENCE["pytrec_eval"].items():
        assert set(ours[metric]) == set(values), metric
        for qid, value in values.items():
            assert ours[metric][qid] == pytest.approx(value, abs=1e-12), (metric, qid)
    assert all(ours[m]["q03"] == 0 for m in METRICS)
    summary = {r["metric"]: r for r in embsql.evaluate(con, run_table(REFERENCE["run"]),
                                                       qrels_table(REFERENCE["qrels"]), metrics=METRICS).to_dicts()}
    row = summary["ndcg@10"]
    assert (row["queries"], row["without_relevant"], row["missing"]) == (11, 1, 1)
    assert row["value"] == pytest.approx(np.mean(list(REFERENCE["pytrec_eval"]["ndcg@10"].values())), abs=1e-12)


def test_metrics_equal_ranx_on_the_untied_run(con):
    ours = per_query(embsql.evaluate(con, run_table(REFERENCE["untied_run"]), qrels_table(REFERENCE["qrels"]),
                                     metrics=METRICS, per_query=True))
    for metric, values in REFERENCE["ranx"].items():
        for qid, value in values.items():
            assert ours[metric][qid] == pytest.approx(value, abs=1e-12), (metric, qid)


def _trec_order(scores):
    return sorted(scores, key=lambda d: (-scores[d], [-b for b in d.encode()] + [1]))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_metrics_equal_live_pytrec_eval_on_random_runs(seed):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(seed)
    qrels, run = {}, {}
    for q in range(int(rng.integers(1, 6))):
        docs = [f"d{j}" for j in rng.choice(40, size=int(rng.integers(1, 30)), replace=False)]   # ids of any length
        run[f"q{q}"] = {d: float(rng.integers(0, 5)) / 4 for d in docs}
        qrels[f"q{q}"] = {f"d{j}": int(rng.integers(0, 4)) for j in rng.choice(40, size=int(rng.integers(1, 10)),
                                                                                 replace=False)}
    names = {"ndcg@5": "ndcg_cut_5", "map@10": "map_cut_10", "recall@5": "recall_5", "precision@5": "P_5",
             "hit_rate@5": "success_5"}
    expected = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.5", "map_cut.10", "recall.5", "P.5",
                                                      "success.5"}).evaluate(run)
    cut = {q: {d: s[d] for d in _trec_order(s)[:5]} for q, s in run.items()}
    mrr = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank"}).evaluate(cut)
    con = SHARED
    ours = per_query(embsql.evaluate(con, run_table(run), qrels_table(qrels), metrics=[*names, "mrr@5"],
                                     per_query=True))
    for qid, values in expected.items():
        for metric, key in names.items():
            assert ours[metric][qid] == pytest.approx(values[key], abs=1e-12), (metric, qid)
        assert ours["mrr@5"][qid] == pytest.approx(mrr[qid]["recip_rank"], abs=1e-12)


def test_scores_closer_than_float32_tie_as_in_trec_eval(con):
    """trec_eval keeps scores as C floats: d1 beats d9 by 1e-9 in float64, but the two tie in
    float32 and go by doc_id descending (d9 first), so nDCG@1 is 0 there, not 1.  Live pytrec_eval,
    the Python route and the plain-SQL route agree."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    run = {"q1": {"d1": 0.5 + 1e-9, "d9": 0.5, "d5": 0.25}, "q2": {"a": 0.3 + 2e-9, "b": 0.3, "c": 0.1}}
    qrels = {"q1": {"d1": 3, "d9": 0, "d5": 1}, "q2": {"a": 1, "b": 2}}
    expected = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.1", "ndcg_cut.3", "recip_rank"}).evaluate(run)
    assert expected["q1"]["ndcg_cut_1"] == 0.0          # the float64 order would give 1.0
    ours = per_query(embsql.evaluate(con, run_table(run), qrels_table(qrels), metrics=["ndcg@1", "ndcg@3", "mrr@3"],
                                     per_query=True))
    con.register("near_run", run_table(run))
    con.register("near_qrels", qrels_table(qrels))
    sql = {(q, m): v for q, m, v in con.sql("SELECT qid, metric, value FROM emb_evaluate_per_query("
                                            "'near_run', 'near_qrels', k := 3)").fetchall()}
    for qid, values in expected.items():
        for metric, key in (("ndcg@1", "ndcg_cut_1"), ("ndcg@3", "ndcg_cut_3"), ("mrr@3", "recip_rank")):
            assert ours[metric][qid] == pytest.approx(values[key], abs=1e-12), (metric, qid)
        for metric, key in (("ndcg@3", "ndcg_cut_3"), ("mrr@3", "recip_rank")):
            assert sql[(qid, metric)] == pytest.approx(values[key], abs=1e-12), (metric, qid)


# ---- retrieve: exact top-k and the tie rule ----------------------------------------------

def _brute(q, d, ids, k):
    unit_q = q / np.linalg.norm(q, axis=1, keepdims=True)
    d64 = np.asarray(d, dtype=np.float32).astype(np.float64)
    sims = ranking.grid(unit_q @ (d64 / np.linalg.norm(d64, axis=1, keepdims=True)).T)
    tie = embsql.io.runs.tie_keys(pa.array(ids))
    return [[ids[j] for j in np.lexsort((tie, -row))[:k]] for row in sims]


@pytest.mark.parametrize("query_block,doc_block", [(7, 50), (1024, 16384)])
def test_top_k_is_exact_with_duplicates_and_blocks(query_block, doc_block):
    rng = np.random.default_rng(3)
    base = rng.normal(size=(12, 6))
    d = np.vstack([base[rng.integers(0, 12, size=300)], rng.normal(size=(200, 6))]).astype(np.float32)
    q = rng.normal(size=(40, 6))
    ids = [f"doc{j}" for j in rng.permutation(500)]
    tie = embsql.io.runs.tie_keys(pa.array(ids))
    inv = 1 / np.linalg.norm(d.astype(np.float64), axis=1)
    idx, _ = ranking.top_k(q / np.linalg.norm(q, axis=1, keepdims=True), d, inv, tie, 25,
                           query_block=query_block, doc_block=doc_block)
    assert [[ids[j] for j in row] for row in idx] == _brute(q, d, ids, 25)


def test_retrieve_orders_ties_by_doc_id_descending_like_trec_eval(con, tmp_path):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    queries = pa.table({"qid": ["q1", "q2"], "vector": vectors([[1, 0], [0, 1]])})
    docs = pa.table({"doc_id": ["a", "b10", "b9", "c", "z"], "vector": vectors([[1, 0], [2, 0], [1, 0], [0, 3], [1, 1]])})
    run = embsql.retrieve(con, queries, docs, k=4)
    assert run.columns == ("qid", "doc_id", "rank", "score")          # no model column without model=
    first = [r["doc_id"] for r in run.to_dicts() if r["qid"] == "q1"]
    assert first == ["b9", "b10", "a", "z"]            # three exact ties: text order, descending
    # trec_eval reads the written run and ranks it the same way
    path = tmp_path / "run.txt"
    assert embsql.write_trec_run(con, run, str(path), tag="mine") == 8
    trec_run = {}
    for line in path.read_text().splitlines():
        qid, _, doc, rank, score, tag = line.split()
        assert tag == "mine"
        trec_run.setdefault(qid, {})[doc] = float(score)
    qrels = {"q1": {"a": 1, "b10": 0}, "q2": {"c": 2, "z": 1}}
    expected = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.2", "map_cut.4"}).evaluate(trec_run)
    ours = per_query(embsql.evaluate(con, str(path), qrels_table(qrels), metrics=["ndcg@2", "map@4"],
                                     per_query=True))
    for qid in qrels:
        assert ours["ndcg@2"][qid] == pytest.approx(expected[qid]["ndcg_cut_2"], abs=1e-12)
        assert ours["map@4"][qid] == pytest.approx(expected[qid]["map_cut_4"], abs=1e-12)


def test_retrieve_per_model_and_evaluate_from_embeddings(con):
    rng = np.random.default_rng(5)
    d = rng.normal(size=(30, 4))
    q = d[:10] + 0.3 * rng.normal(size=(10, 4))
    queries = pa.table({"model": ["m1"] * 10 + ["m2"] * 10, "qid": [f"q{i}" for i in range(10)] * 2,
                        "vector": vectors(np.vstack([q, rng.normal(size=(10, 4))]))})
    docs = pa.table({"model": ["m1"] * 30 + ["m2"] * 30, "doc_id": [f"d{i}" for i in range(30)] * 2,
                     "vector": vectors(np.vstack([d, d]))})
    qrels = pa.table({"qid": [f"q{i}" for i in range(10)], "doc_id": [f"d{i}" for i in range(10)], "relevance": [1] * 10})
    run = embsql.retrieve(con, queries, docs, k=5, model="model")
    assert len(run) == 100 and set(run.column("model")) == {"m1", "m2"}
    direct = embsql.evaluate(con, run, qrels, model="model", metrics=["hit_rate@5"])
    con.register("the_run", run.to_arrow())      # the same run as a DuckDB table: the same figures
    assert embsql.evaluate(con, "the_run", qrels, model="model", metrics=["hit_rate@5"]).rows == direct.rows
    values = dict(zip(direct.column("model"), direct.column("value")))
    assert values["m1"] > values["m2"]              # m1's queries are near their documents
    # hit_rate@5 by hand from the brute-force ranking of m1
    ids = [f"d{i}" for i in range(30)]
    brute = _brute(q, d.astype(np.float32), ids, 5)
    assert values["m1"] == pytest.approx(np.mean([f"d{i}" in brute[i] for i in range(10)]), abs=1e-15)


def test_positive_column_is_the_one_relevant_document_shorthand(con):
    queries = pa.table({"qid": ["q1", "q2"], "positive": ["a", "b"], "vector": vectors([[1, 0], [1, 0.1]])})
    docs = pa.table({"doc_id": ["a", "b"], "vector": vectors([[1, 0], [0, 1]])})
    result = embsql.evaluate(con, embsql.retrieve(con, queries, docs, k=10),
                             embsql.Qrels(queries, doc_id="positive", relevance=None), metrics=["mrr@10", "recall@1"])
    assert dict(zip(result.column("metric"), result.column("value"))) == {"mrr@10": 0.75, "recall@1": 0.5}


# ---- inputs from files -------------------------------------------------------------------

def test_trec_qrels_and_run_files(con, tmp_path):
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("q1 0 a 2\nq1 0 b 0\n\nq2\t0\tc   1\n")
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 a 1 0.5 x\nq1 Q0 b 2 0.9 x\nq2 Q0 c 1 0.3 x\n")
    result = embsql.evaluate(con, str(run), str(qrels), metrics=["mrr@10"], per_query=True)
    assert dict(zip(result.column("qid"), result.column("value"))) == {"q1": 0.5, "q2": 1.0}
    assert result.columns == ("qid", "metric", "value")
    by_tag = embsql.evaluate(con, str(run), str(qrels), metrics=["mrr@10"], per_query=True, model="tag")
    assert by_tag.columns == ("tag", "qid", "metric", "value") and set(by_tag.column("tag")) == {"x"}
    two = tmp_path / "two.trec"
    two.write_text(run.read_text() + "q1 Q0 a 1 0.5 y\n")
    with pytest.raises(InputError, match=r"holds 2 runs \(tags 'x', 'y'\); pass model='tag'"):
        embsql.evaluate(con, str(two), str(qrels))
    assert embsql.evaluate(con, str(two), str(qrels), metrics=["mrr@10"], model="tag").column("tag") == ["x", "y"]
    parquet = tmp_path / "qrels.parquet"
    con.sql(f"COPY (SELECT 'q1' AS qid, 'a' AS doc_id, 1 AS relevance) TO '{parquet}'")
    assert embsql.evaluate(con, str(run), str(parquet), metrics=["mrr@10"]).value == 0.5


# ---- bad input ---------------------------------------------------------------------------

RUN = pa.table({"qid": ["q1", "q1"], "doc_id": ["a", "b"], "score": [0.9, 0.1]})


@pytest.mark.parametrize("relevance,word", [([-1], "has -1 at"), ([1.5], "1.5"), ([None], "NULL")])
def test_bad_relevance_is_refused(con, relevance, word):
    qrels = pa.table({"qid": ["q1"], "doc_id": ["a"], "relevance": pa.array(relevance, pa.float64())})
    with pytest.raises((InputError, BadLabelError), match=word):
        embsql.evaluate(con, RUN, qrels)


def test_duplicate_qrels_empty_run_and_bad_k_are_refused(con, tmp_path):
    qrels = pa.table({"qid": ["q1", "q1"], "doc_id": ["a", "a"], "relevance": [1, 1]})
    with pytest.raises(InputError, match=r"\(qid 'q1', doc_id 'a'\) is judged 2 times"):
        embsql.evaluate(con, RUN, qrels)
    good = pa.table({"qid": ["q1"], "doc_id": ["a"], "relevance": [1]})
    with pytest.raises(InputError, match="empty run"):
        embsql.evaluate(con, RUN.slice(0, 0), good)
    empty = tmp_path / "empty.run"
    empty.write_text("")
    with pytest.raises(InputError, match="no lines"):
        embsql.evaluate(con, str(empty), good)
    with pytest.raises(InputError, match="unknown metric 'ndcg@0'"):
        embsql.evaluate(con, RUN, good, metrics=["ndcg@0"])
    twice = pa.table({"qid": ["q1", "q1"], "doc_id": ["a", "a"], "score": [0.9, 0.1]})
    with pytest.raises(InputError, match="ranks doc_id .a. more than once for qid .q1."):
        embsql.evaluate(con, twice, good)


def test_qrels_ids_the_run_lacks_are_counted_missing_or_refused(con):
    """A judged query the run does not rank is counted (missing), a relevant document it does not
    retrieve lowers recall, as in trec_eval; a run without any judged query is an error."""
    queries = pa.table({"qid": ["q1"], "vector": vectors([[1, 0]])})
    docs = pa.table({"doc_id": ["a", "b"], "vector": vectors([[1, 0], [0, 1]])})
    qrels = pa.table({"qid": ["q1", "q1", "q7"], "doc_id": ["a", "zz", "a"], "relevance": [1, 1, 1]})
    result = embsql.evaluate(con, embsql.retrieve(con, queries, docs, k=2), qrels, metrics=["recall@2"])
    assert (result.value, result.queries, result.missing) == (0.5, 1, 1)
    with pytest.raises(InputError, match="qids match"):
        embsql.evaluate(con, RUN, pa.table({"qid": ["q5"], "doc_id": ["a"], "relevance": [1]}))


def test_retrieve_refuses_mismatched_models_dimensions_and_k(con):
    queries = pa.table({"model": ["m1"], "qid": ["q1"], "vector": vectors([[1, 0]])})
    docs = pa.table({"model": ["m2"], "doc_id": ["a"], "vector": vectors([[1, 0]])})
    with pytest.raises(InputError, match="model 'm1' is in queries") as caught:
        embsql.retrieve(con, queries, docs, model="model")
    assert caught.value.kind == "model.missing"
    wide = pa.table({"doc_id": ["a"], "vector": vectors([[1, 0, 0]])})
    with pytest.raises(embsql.BadVectorError, match=r"dimension 2 but document vectors \('vector'\) have dimension 3"):
        embsql.retrieve(con, queries, wide)
    with pytest.raises(InputError, match="k must be"):
        embsql.retrieve(con, queries, wide, k=0)
    zero = pa.table({"doc_id": ["a", "b"], "vector": vectors([[1, 0], [0, 0]])})
    with pytest.raises(embsql.BadVectorError, match="zero-length vector.*'b'"):
        embsql.retrieve(con, queries, zero)
    dup = pa.table({"doc_id": ["a", "a"], "vector": vectors([[1, 0], [0, 1]])})
    with pytest.raises(BadLabelError, match="'a' more than once"):
        embsql.retrieve(con, queries, dup)


# ---- invariance --------------------------------------------------------------------------

TRANSFORMS = [lambda x: 3 * x - 7, lambda x: x ** 3, np.exp, lambda x: np.arctan(x) * 4 + 1]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(range(len(TRANSFORMS))))
def test_monotone_transform_of_scores_leaves_every_metric_unchanged(seed, which):
    rng = np.random.default_rng(seed)
    rows = [(f"q{q}", f"d{d}", float(rng.integers(-8, 9)) / 8) for q in range(4)
            for d in rng.choice(30, size=int(rng.integers(1, 20)), replace=False)]
    qrels = pa.table({"qid": [f"q{q}" for q in range(4) for _ in range(6)],
                      "doc_id": [f"d{d}" for _ in range(4) for d in rng.choice(30, size=6, replace=False)],
                      "relevance": rng.integers(0, 4, size=24)})
    scores = np.array([r[2] for r in rows])
    before = pa.table({"qid": [r[0] for r in rows], "doc_id": [r[1] for r in rows], "score": scores})
    after = before.set_column(2, "score", pa.array(TRANSFORMS[which](scores)))
    con = SHARED
    metrics = ["ndcg@5", "map@20", "recall@3", "precision@2", "mrr@10", "hit_rate@1"]
    assert (embsql.evaluate(con, before, qrels, metrics=metrics, per_query=True).rows
            == embsql.evaluate(con, after, qrels, metrics=metrics, per_query=True).rows)
