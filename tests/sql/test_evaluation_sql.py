"""The SQL faces of retrieval evaluation: emb_retrieval_eval (after register) against pytrec_eval
on a brute-force run, and the plain-SQL run metrics in the stock DuckDB CLI against the stored
pytrec_eval values (tests/reference/retrieval/)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from helpers import TESTS, sql_error
from test_cli_duckdb import run_cli

from embsql.io.resources import sql_entry_file

REFERENCE = json.loads((TESTS / "reference/retrieval/reference.json").read_text())


def _vectors(array) -> pa.Array:
    array = np.asarray(array, dtype=np.float64)
    return pa.ListArray.from_arrays(pa.array(np.arange(0, array.size + 1, array.shape[1]), pa.int32()),
                                    pa.array(array.ravel()))


@pytest.fixture
def tables(con):
    rng = np.random.default_rng(8)
    docs = rng.normal(size=(2, 40, 5))
    queries = np.stack([docs[0, :12] + 0.5 * rng.normal(size=(12, 5)), rng.normal(size=(12, 5))])
    con.register("Q", pa.table({"m": ["a"] * 12 + ["b"] * 12, "qid": [f"q{i}" for i in range(12)] * 2,
                                "vector": _vectors(queries.reshape(24, 5))}))
    con.register("D", pa.table({"m": ["a"] * 40 + ["b"] * 40, "doc_id": [f"d{i}" for i in range(40)] * 2,
                                "vector": _vectors(docs.reshape(80, 5))}))
    qrels = {f"q{i}": {f"d{i}": 2, f"d{(i + 1) % 40}": 1, f"d{(i + 7) % 40}": 0} for i in range(12)}
    qrels["q4"] = {"d4": 0}
    rows = [(q, d, r) for q, judged in qrels.items() for d, r in judged.items()]
    con.register("J", pa.table({"qid": [r[0] for r in rows], "doc_id": [r[1] for r in rows],
                                "relevance": [r[2] for r in rows]}))
    return queries, docs, qrels


def test_emb_retrieval_eval_equals_pytrec_eval_on_the_brute_force_run(con, tables):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    queries, docs, qrels = tables
    got = con.sql("SELECT m, metric, value, queries, without_relevant FROM emb_retrieval_eval('Q', 'D', 'J', k := 10, "
                  "metrics := ['ndcg@10', 'map@10', 'recall@5', 'precision@5'], model := 'm')").fetchall()
    assert [r[1] for r in got[:4]] == ["ndcg@10", "map@10", "recall@5", "precision@5"]   # the order asked for
    for model, (q, d) in enumerate(zip(queries, docs)):
        sims = (q / np.linalg.norm(q, axis=1, keepdims=True)) @ (d / np.linalg.norm(d, axis=1, keepdims=True)).T
        run = {f"q{i}": {f"d{j}": float(sims[i, j]) for j in np.argsort(-sims[i])[:10]} for i in range(12)}
        expected = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "map_cut.10", "recall.5", "P.5"}).evaluate(run)
        for name, key in (("ndcg@10", "ndcg_cut_10"), ("map@10", "map_cut_10"), ("recall@5", "recall_5"),
                          ("precision@5", "P_5")):
            row = next(r for r in got if r[0] == "ab"[model] and r[1] == name)
            assert row[2] == pytest.approx(np.mean([v[key] for v in expected.values()]), abs=1e-12)
            assert row[3:] == (12, 1)


def test_emb_retrieval_eval_errors_start_with_embsql(con, tables):
    assert "k must be a whole number" in sql_error(con, "FROM emb_retrieval_eval('Q', 'D', 'J', k := 0, model := 'm')")
    con.register("J2", pa.table({"qid": ["q1"], "doc_id": ["d1"], "relevance": [-2]}))
    assert "relevance must be a whole number" in sql_error(con, "FROM emb_retrieval_eval('Q', 'D', 'J2', model := 'm')")
    con.register("J3", pa.table({"qid": ["q1", "q100"], "doc_id": ["d1", "d1"], "relevance": [1, 1]}))
    assert "qid 'q100' is not in queries" in sql_error(con, "FROM emb_retrieval_eval('Q', 'D', 'J3', model := 'm')")
    skipped = con.sql("SELECT value FROM emb_retrieval_eval('Q', 'D', 'J3', metrics := ['hit_rate@40'], "
                      "model := 'm', unknown := 'skip')").fetchall()
    assert skipped == [(1.0,), (1.0,)]
    assert 'relevance column "rel" not found' in sql_error(
        con, "FROM emb_retrieval_eval('Q', 'D', 'J', relevance := 'rel', model := 'm')")


def _csv(path: Path, header, rows) -> str:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return str(path)


CUTS = {3: ["ndcg@3", "recall@3", "precision@3", "mrr@3"], 10: ["ndcg@10", "recall@10", "precision@10", "mrr@10"],
        5: ["map@5", "hit_rate@5"], 100: ["map@100"], 1: ["hit_rate@1"]}


def test_plain_sql_run_metrics_in_the_stock_cli_equal_pytrec_eval(tmp_path):
    run = _csv(tmp_path / "run.csv", ["qid", "doc_id", "score"],
               [(q, d, s) for q, scores in REFERENCE["run"].items() for d, s in scores.items()])
    qrels = _csv(tmp_path / "qrels.csv", ["qid", "doc_id", "relevance"],
                 [(q, d, r) for q, judged in REFERENCE["qrels"].items() for d, r in judged.items()])
    script = (f".read {sql_entry_file()}\n.mode json\n"
              f"CREATE TABLE run AS FROM read_csv('{run}', types={{'qid': 'VARCHAR', 'doc_id': 'VARCHAR'}});\n"
              f"CREATE TABLE qrels AS FROM read_csv('{qrels}', types={{'qid': 'VARCHAR', 'doc_id': 'VARCHAR'}});\n")
    script += "".join(f"FROM emb_evaluate_per_query('run', 'qrels', k := {k});\n" for k in CUTS)
    script += "FROM emb_evaluate('run', 'qrels', k := 10);\n"
    result = run_cli(script)
    assert result.returncode == 0, result.stderr
    rows, at, decoder = [], 0, json.JSONDecoder()
    text = result.stdout.strip()
    while at < len(text):                      # one JSON array per statement
        chunk, at = decoder.raw_decode(text, at)
        rows += chunk
        while at < len(text) and text[at].isspace():
            at += 1
    values = {(r["metric"], r["qid"]): r["value"] for r in rows if "qid" in r}
    for names in CUTS.values():
        for name in names:
            for qid, value in REFERENCE["pytrec_eval"][name].items():
                assert values[(name, qid)] == pytest.approx(value, abs=1e-12), (name, qid)
            assert {q for (m, q) in values if m == name} == set(REFERENCE["pytrec_eval"][name])
    means = {r["metric"]: r for r in rows if "qid" not in r}
    assert means["ndcg@10"]["value"] == pytest.approx(np.mean(list(REFERENCE["pytrec_eval"]["ndcg@10"].values())),
                                                      abs=1e-12)
    assert (means["ndcg@10"]["queries"], means["ndcg@10"]["without_relevant"]) == (11, 1)


def test_plain_sql_run_metrics_refuse_bad_input_in_the_cli():
    script = (f".read {sql_entry_file()}\n"
              "CREATE TABLE run AS SELECT * FROM (VALUES ('q1', 'a', 0.5), ('q1', 'b', 0.2)) t(qid, doc_id, score);\n"
              "CREATE TABLE qrels AS SELECT * FROM (VALUES ('q1', 'a', 1.5)) t(qid, doc_id, relevance);\n"
              "CREATE TABLE dup AS SELECT * FROM (VALUES ('q1', 'a', 1), ('q1', 'a', 2)) t(qid, doc_id, relevance);\n"
              "FROM emb_evaluate('run', 'qrels');\n"
              "FROM emb_evaluate('run', 'dup');\n"
              "CREATE TABLE good AS SELECT * FROM (VALUES ('q1', 'a', 1)) t(qid, doc_id, relevance);\n"
              "FROM emb_evaluate('run', 'good', k := 0);\n")
    result = run_cli(script)
    errors = [line for line in result.stderr.splitlines() if "embsql:" in line]
    assert len(errors) == 3, result.stderr
    assert "embsql: [value.relevance] qrels qrels: relevance 1.5 at row 1" in errors[0]
    assert "embsql: [label.duplicate] qrels dup: (qid q1, doc_id a) is judged 2 times" in errors[1]
    assert "embsql: [argument.k] k must be a whole number of 1 or more" in errors[2]
