"""The report's retrieval evaluation: its sections agree with embsql.evaluate, the CLI flag, the
figure, and the coverage of the cluster bootstrap interval of a mean over clustered queries."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import embsql
from embsql.core.query_means import cluster_codes, mean_interval
from embsql.render.plots import report_plots


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("evaluation")
    rng = np.random.default_rng(4)
    docs = rng.normal(size=(120, 6))
    rows = [(m, f"q{g}_{p}", f"g{g}", (docs[g] + noise * rng.normal(size=6)).tolist())
            for g in range(30) for p in range(3) for m, noise in (("near", 0.5), ("far", 2.0))]
    pq.write_table(pa.table({"model": [r[0] for r in rows], "qid": [r[1] for r in rows], "group": [r[2] for r in rows],
                             "vector": [r[3] for r in rows]}), folder / "queries.parquet")
    pq.write_table(pa.table({"model": ["near"] * 120 + ["far"] * 120, "doc_id": [f"d{i}" for i in range(120)] * 2,
                             "vector": docs.tolist() * 2}), folder / "docs.parquet")
    near = pa.table({"qid": [r[1] for r in rows if r[0] == "near"], "group": [r[2] for r in rows if r[0] == "near"],
                     "vector": [r[3] for r in rows if r[0] == "near"]})
    pq.write_table(near, folder / "near_q.parquet")
    pq.write_table(pa.table({"doc_id": [f"d{i}" for i in range(120)], "vector": docs.tolist()}), folder / "near_d.parquet")
    (folder / "qrels.txt").write_text("".join(f"q{g}_{p} 0 d{g} 2\nq{g}_{p} 0 d{g + 30} 1\nq{g}_{p} 0 d{g + 60} 0\n"
                                              for g in range(30) for p in range(3)))
    return folder


def test_report_sections_agree_with_evaluate(files):
    con = embsql.connect()
    queries, docs, qrels = (str(files / name) for name in ("queries.parquet", "docs.parquet", "qrels.txt"))
    result = embsql.report(queries, vector="vector", group="group", model="model", sections=("decomposition",),
                           queries=queries, docs=docs, qrels=qrels, replicates=500).run(con)
    table = {(r["model"], r["metric"]): r for r in result["evaluation"].to_dicts()}
    run = embsql.retrieve(con, queries, docs, k=100, model="model")
    direct = embsql.evaluate(con, run, qrels, model="model",
                             metrics=["ndcg@10", "map@100", "recall@10", "recall@100", "mrr@10", "precision@10",
                                      "hit_rate@10"])
    for row in direct.to_dicts():
        mine = table[(row["model"], row["metric"])]
        assert mine["value"] == row["value"] and mine["queries"] == 90 and mine["clusters"] == 30
        assert mine["ci_low"] <= mine["value"] <= mine["ci_high"]
    assert table[("near", "ndcg@10")]["value"] > table[("far", "ndcg@10")]["ci_high"]
    spread = {r["model"]: r for r in result["evaluation_queries"].to_dicts()}
    per_query = embsql.evaluate(con, run, qrels, model="model", metrics=["ndcg@10"], per_query=True)
    near = [r["value"] for r in per_query.to_dicts() if r["model"] == "near"]
    assert spread["near"]["median"] == pytest.approx(np.median(near), abs=1e-15)
    assert spread["near"]["zero"] == pytest.approx(np.mean(np.asarray(near) == 0), abs=1e-15)
    plots = [p for p in report_plots(result) if p.anchor == "evaluation_queries"]
    assert len(plots) == 1 and "Per-query nDCG@10" in plots[0].figure.axes[0].get_title()


def test_report_compares_the_models_as_compare_retrieval_does(files):
    """The evaluation_compare section is embsql.compare_retrieval on the per-query nDCG@10, paired by
    paraphrase group; the verdict says which model retrieves better; a figure shows the difference."""
    con = embsql.connect()
    queries, docs, qrels = (str(files / name) for name in ("queries.parquet", "docs.parquet", "qrels.txt"))
    result = embsql.report(queries, vector="vector", group="group", model="model", sections=("decomposition",),
                           queries=queries, docs=docs, qrels=qrels, replicates=200).run(con)
    run = embsql.retrieve(con, queries, docs, k=100, model="model")
    per_query = embsql.evaluate(con, run, qrels, model="model", metrics=["ndcg@10"], per_query=True)
    expected = embsql.compare_retrieval(con, per_query, queries=queries, metric="ndcg@10", permutations=10_000,
                                        seed=42, model="model").to_dicts()
    got = result["evaluation_compare"].to_dicts()
    assert len(got) == 1 and got[0].keys() == expected[0].keys()
    for key, value in expected[0].items():
        assert got[0][key] == (pytest.approx(value, rel=1e-12) if isinstance(value, float) else value), key
    assert (got[0]["model_a"], got[0]["model_b"]) == ("far", "near")      # display order
    assert got[0]["groups"] == 30 and got[0]["p_value"] < 0.01 and got[0]["ci_high"] < 0   # "near" is clearly better
    sentences = " ".join(result.verdict)
    assert "near" in sentences and "far" in sentences and "ndcg@10" in sentences.lower()
    plots = [p for p in report_plots(result) if p.anchor == "evaluation_compare"]
    assert len(plots) == 1 and plots[0].figure.axes[0].get_title() == "Paired comparison of models"
    # the comparison needs no permutations of the report's (its sign flips are its own): 0 keeps it (issue 32)
    quick = embsql.report(queries, vector="vector", group="group", model="model", sections=("decomposition",),
                          queries=queries, docs=docs, qrels=qrels, replicates=200, permutations=0).run(con)
    assert quick["evaluation_compare"].to_dicts() == result["evaluation_compare"].to_dicts()
    assert any("near" in sentence and "ndcg@10" in sentence for sentence in quick.verdict)


def test_cli_report_with_qrels_and_its_one_line_error(files):
    environment = {**os.environ, "NO_COLOR": "1"}
    base = [sys.executable, "-m", "embsql", "report", str(files / "queries.parquet"), "--vector", "vector",
            "--group", "group", "--sections", "decomposition"]
    done = subprocess.run(base + ["--model", "model", "--queries", str(files / "queries.parquet"), "--docs",
                                  str(files / "docs.parquet"), "--qrels", str(files / "qrels.txt"), "--format", "json"],
                          capture_output=True, text=True, env=environment, timeout=300)
    assert done.returncode == 0, done.stderr
    assert '"evaluation"' in done.stdout and '"evaluation_queries"' in done.stdout
    bad = subprocess.run(base + ["--qrels", str(files / "qrels.txt")], capture_output=True, text=True,
                         env=environment, timeout=300)
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0
    assert "needs the queries and docs" in bad.stderr


def test_cli_retrieval_only_report_from_the_three_files(files):
    """``embsql report --queries --docs --qrels --model`` with no DATA, --vector or --group, and with
    --permutations 0: the evaluation, and the paired comparison (a mean difference of the per-query
    nDCG@10 scored by embsql.evaluate), and a note for the layers it cannot run."""
    environment = {**os.environ, "NO_COLOR": "1"}
    queries, docs, qrels = (str(files / name) for name in ("queries.parquet", "docs.parquet", "qrels.txt"))
    done = subprocess.run([sys.executable, "-m", "embsql", "report", "--queries", queries, "--docs", docs,
                           "--qrels", qrels, "--model", "model", "--permutations", "0", "--replicates", "200",
                           "--format", "json"], capture_output=True, text=True, env=environment, timeout=300)
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    # the ranking of the two models by nDCG@10 first (right after the verdict)
    assert [s["name"] for s in document["sections"]] == ["ranking", "evaluation", "evaluation_queries",
                                                         "evaluation_compare"]
    con = embsql.connect()
    run = embsql.retrieve(con, queries, docs, k=100, model="model")
    evaluation = embsql.evaluate(con, run, qrels, model="model", metrics=["ndcg@10"], per_query=True)
    per_query = evaluation.to_dicts()
    ranking = [dict(zip(document["sections"][0]["columns"], r)) for r in document["sections"][0]["rows"]]
    direct = embsql.rank_models(con, evaluation, statistic="ndcg@10", queries=embsql.Queries(queries),
                                replicates=200, seed=42).to_dicts()
    # the section orders by rank: near (first) before far
    assert [(r["metric"], r["model"]) for r in ranking] == [("nDCG@10", "near"), ("nDCG@10", "far")]
    for mine, theirs in zip(ranking, direct[::-1]):
        assert mine["estimate"] == pytest.approx(theirs["estimate"], abs=1e-12)
        assert [mine[k] for k in ("rank", "rank_low", "rank_high", "top")] == \
            [theirs[k] for k in ("rank", "rank_low", "rank_high", "top")]
    assert document["verdict"][0].startswith("near retrieves better than far") and \
        "Ranked by nDCG@10 with 95% simultaneous rank sets: near is first (rank 1–1)" in document["verdict"][0]
    means = {m: np.mean([r["value"] for r in per_query if r["model"] == m]) for m in ("near", "far")}
    section = next(s for s in document["sections"] if s["name"] == "evaluation_compare")
    row = dict(zip(section["columns"], section["rows"][0]))
    assert (row["model_a"], row["model_b"]) == ("far", "near")
    assert row["difference"] == pytest.approx(means["far"] - means["near"], abs=1e-12)
    assert row["ci_high"] < 0 and row["p_value"] < 0.01 and row["groups"] == 30
    assert any("near" in sentence and "far" in sentence for sentence in document["verdict"])
    assert any("no retrieval layers" in note and "'positive'" in note for note in document["notes"])
    assert document["summary"]["rows"] == []
    # one model: nothing to compare, and the report says so
    one = subprocess.run([sys.executable, "-m", "embsql", "report", "--queries", str(files / "near_q.parquet"),
                          "--docs", str(files / "near_d.parquet"), "--qrels", qrels, "--permutations", "0",
                          "--format", "json"], capture_output=True, text=True, env=environment, timeout=300)
    assert one.returncode == 0, one.stderr
    alone = json.loads(one.stdout)
    assert "evaluation_compare" not in [s["name"] for s in alone["sections"]]
    assert any("no paired comparison" in note and "one model" in note for note in alone["notes"])
    # a flag that reads the embedding table: one line, exit 2
    bad = subprocess.run([sys.executable, "-m", "embsql", "report", "--queries", queries, "--docs", docs,
                          "--qrels", qrels, "--model", "model", "--min-r2", "0.1"], capture_output=True, text=True,
                         env=environment, timeout=300)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--min-r2 reads the embedding table" in bad.stderr


def _clustered(rng, groups, size, rho):
    """Per-query figures in [0, 1] with intra-cluster correlation about rho, true mean 0.5."""
    shared = rng.normal(size=groups)[:, None]
    latent = np.sqrt(rho) * shared + np.sqrt(1 - rho) * rng.normal(size=(groups, size))
    return (1 / (1 + np.exp(-latent))).ravel(), np.repeat(np.arange(groups), size)


def test_cluster_bootstrap_covers_and_the_query_level_one_does_not():
    """Coverage of the 95% interval of the mean, 40 clusters of 5 queries, intra-cluster correlation
    0.5 (true mean 0.5 by symmetry).  400 data sets: the MC SE of a 95% rate is 1.1 points, so
    [0.91, 0.985] is about 3.5 SE around 0.95; resampling single queries, which ignores the
    clustering, covers about 70% here and must stay below 0.85 (over 10 SE from 0.95)."""
    rng = np.random.default_rng(2026)
    covered = {"cluster": 0, "query": 0}
    reps = 400
    for _ in range(reps):
        values, clusters = _clustered(rng, 40, 5, 0.5)
        for kind, codes in (("cluster", cluster_codes(clusters)), ("query", np.arange(len(values)))):
            interval = mean_interval(values, codes, replicates=999, seed=7, level=0.95)   # draws cached
            covered[kind] += interval.ci_low <= 0.5 <= interval.ci_high
    assert 0.91 <= covered["cluster"] / reps <= 0.985, covered
    assert covered["query"] / reps < 0.85, covered
