"""Benchmark: retrieval margins (SPEC S20, S21), corpus scope, against plain numpy and a SQL join.

    python bench/margins.py                      # 10,000 queries x 100,000 documents, d = 384
    python bench/margins.py --queries 2000 --docs 20000  # a quick run

Each way runs in its own child process (so each peak RSS is its own), one after the other, on the
same DuckDB file:
  * embsql.margins(con, 'q', 'd')      the Python API: streams both tables from DuckDB, checks and
                                       normalises, blocked float32 products with exact float64 recheck;
  * emb_margins(...) after register    the SQL macro on the UDF (lists of vectors through DuckDB);
  * numpy float32 blocked              plain brute force on arrays already in memory (loading not
                                       timed): per block q @ d.T, mask d+, max, count above s+;
  * numpy float64 blocked              the same in float64: the exact reference for the agreement check;
  * SQL join with array_distance       every query against every document, on a subsample of
                                       queries, scaled to all queries (said so in the output).
Ratios are to numpy float32.  The machine may be shared: ratios measured in one run are the figure.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
BLOCK = 8192


def build(path: Path, queries: int, docs: int, dim: int, seed: int) -> None:
    """Topics of 10 documents (near-miss distractors); 5 paraphrases per question; unit float32 vectors."""
    import duckdb
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    topics = docs // 10
    centres = rng.normal(size=(topics, dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    con = duckdb.connect(str(path))
    con.execute(f"CREATE TABLE d (doc_id INTEGER, topic INTEGER, vector FLOAT[{dim}])")
    con.execute(f"CREATE TABLE q (qid INTEGER, question INTEGER, positive INTEGER, vector FLOAT[{dim}])")
    doc_vectors = np.empty((docs, dim), np.float32)
    for low in range(0, docs, 20000):
        n = min(20000, docs - low)
        ids = np.arange(low, low + n)
        x = centres[ids // 10] + 0.5 * rng.normal(size=(n, dim)).astype(np.float32) / np.sqrt(dim)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        doc_vectors[low:low + n] = x
        chunk = pa.table({"doc_id": ids.astype(np.int32), "topic": (ids // 10).astype(np.int32),
                          "vector": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), dim)})
        con.execute("INSERT INTO d SELECT * FROM chunk")   # DuckDB reads the local Arrow table by name
    questions = queries // 5
    positive = rng.integers(0, docs, questions)
    ids = np.arange(queries)
    pos = positive[ids // 5]
    x = doc_vectors[pos] + 3.5 * rng.normal(size=(queries, dim)).astype(np.float32) / np.sqrt(dim)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    chunk = pa.table({"qid": ids.astype(np.int32), "question": (ids // 5).astype(np.int32),
                      "positive": pos.astype(np.int32),
                      "vector": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), dim)})
    con.from_arrow(chunk).insert_into("q")
    con.close()


def load(con, dim):
    """Both tables as numpy (not timed): query vectors, positive rows, document vectors."""
    d = con.sql("SELECT doc_id, vector FROM d ORDER BY doc_id").to_arrow_table()
    q = con.sql("SELECT qid, positive, vector FROM q ORDER BY qid").to_arrow_table()
    docs = d.column("vector").combine_chunks().flatten().to_numpy().reshape(-1, dim)
    queries = q.column("vector").combine_chunks().flatten().to_numpy().reshape(-1, dim)
    assert (d.column("doc_id").to_numpy() == np.arange(len(docs))).all()
    return queries, q.column("positive").to_numpy().astype(np.int64), docs


def numpy_blocked(queries, positive, docs, dtype):
    """Plain blocked brute force: s+, best distractor, rank (1 + count above s+), m from 2 - 2 s."""
    q, d = queries.astype(dtype), docs.astype(dtype)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    s_pos = np.einsum("ij,ij->i", q, d[positive])
    best = np.full(len(q), -np.inf, dtype)
    higher = np.zeros(len(q), np.int64)
    for q0 in range(0, len(q), 2048):
        rows = slice(q0, q0 + 2048)
        for d0 in range(0, len(d), BLOCK):
            s = q[rows] @ d[d0:d0 + BLOCK].T
            local = positive[rows] - d0
            here = np.flatnonzero((local >= 0) & (local < s.shape[1]))
            s[here, local[here]] = -np.inf
            np.maximum(best[rows], s.max(axis=1), out=best[rows])
            higher[rows] += np.count_nonzero(s > s_pos[rows, None], axis=1)
    d_pos2, d_neg2 = 2 - 2 * s_pos.astype(float), 2 - 2 * best.astype(float)
    return 1 + higher, (d_neg2 - d_pos2) / (d_neg2 + d_pos2)


def child(kind: str, path: str, dim: int, sql_queries: int, out: str) -> None:
    import duckdb

    import embsql

    con = duckdb.connect(path)   # not read-only: register() creates macros
    result = {}
    if kind == "embsql":
        start = time.perf_counter()
        table = embsql.margins(con, embsql.Queries("q", group="question"), embsql.Docs("d", group="topic"))
        result["seconds"] = time.perf_counter() - start
        np.savez(out, rank=np.array(table.column("rank")), m=np.array(table.column("m")),
                 ties=np.array(table.column("ties")))
    elif kind == "embsql-group":
        start = time.perf_counter()
        embsql.margins(con, "q", embsql.Docs("d", group="topic"), scope="group")
        result["seconds"] = time.perf_counter() - start
    elif kind == "sql-udf":
        embsql.register(con)
        start = time.perf_counter()
        rows = con.sql("SELECT count(*), sum(rank) FROM emb_margins('q', 'd')").fetchall()
        result["seconds"] = time.perf_counter() - start
        result["check"] = rows[0]
    elif kind in ("numpy32", "numpy64"):
        queries, positive, docs = load(con, dim)
        start = time.perf_counter()
        rank, m = numpy_blocked(queries, positive, docs, np.float32 if kind == "numpy32" else np.float64)
        result["seconds"] = time.perf_counter() - start
        np.savez(out, rank=rank, m=m)
    elif kind == "sql-join":
        # the same computation written as a join: distance to d+, then every document against it
        start = time.perf_counter()
        con.sql(f"""
            WITH qs AS (SELECT * FROM q ORDER BY qid LIMIT {sql_queries}),
            pos AS (SELECT qs.qid, qs.positive, qs.vector, array_distance(qs.vector, d.vector) AS d_pos
                    FROM qs JOIN d ON d.doc_id = qs.positive),
            pairs AS (SELECT pos.qid, pos.d_pos, array_distance(pos.vector, d.vector) AS dist
                      FROM pos JOIN d ON d.doc_id <> pos.positive)
            SELECT qid, any_value(d_pos) ^ 2 AS d_pos2, min(dist) ^ 2 AS d_neg2,
                   1 + count(*) FILTER (dist < d_pos) AS rank
            FROM pairs GROUP BY qid""").fetchall()
        result["seconds"] = time.perf_counter() - start
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))


def run_child(kind, path, args, out=""):
    proc = subprocess.run([sys.executable, __file__, "--child", kind, "--db", str(path), "--dim", str(args.dim),
                           "--sql-queries", str(args.sql_queries), "--out", out],
                          capture_output=True, text=True, check=False, env={**os.environ})
    if proc.returncode != 0:
        raise SystemExit(f"{kind} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--sql-queries", type=int, default=50, help="queries in the timed SQL-join subsample")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip", nargs="*", default=[], help="ways to leave out (e.g. sql-udf embsql-group)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.db, args.dim, args.sql_queries, args.out)
        return 0
    data = HERE / "data"
    data.mkdir(exist_ok=True)
    path = data / f"margins_bench_{os.getpid()}.duckdb"
    try:
        start = time.perf_counter()
        build(path, args.queries, args.docs, args.dim, args.seed)
        print(f"data: {args.queries:,} queries x {args.docs:,} documents, d = {args.dim} "
              f"(built in {time.perf_counter() - start:.1f} s)", flush=True)
        results = {}
        for kind in ("numpy32", "embsql", "numpy64", "sql-udf", "embsql-group", "sql-join"):
            if kind in args.skip:
                continue
            out = str(data / f"margins_{kind}_{os.getpid()}.npz")
            results[kind] = run_child(kind, path, args, out)
            if kind == "sql-join":
                results[kind]["measured"] = results[kind]["seconds"]
                results[kind]["seconds"] *= args.queries / args.sql_queries
            print(f"  {kind:13s} {results[kind]['seconds']:9.2f} s   peak RSS {results[kind]['peak_rss_mb']:7.0f} MB",
                  flush=True)
        base = results["numpy32"]["seconds"]
        labels = {"embsql": "embsql.margins (Python API, corpus scope)",
                  "sql-udf": "emb_margins after register (SQL on the UDF)",
                  "embsql-group": "embsql.margins, scope 'group' (10 documents a topic)",
                  "numpy32": "numpy float32 blocked brute force (data in memory)",
                  "numpy64": "numpy float64 blocked brute force (data in memory)",
                  "sql-join": f"SQL join with array_distance ({args.sql_queries} queries, scaled x"
                              f"{args.queries / args.sql_queries:g})"}
        print(f"\n{'way':58s} {'seconds':>9s} {'vs numpy32':>11s} {'peak RSS MB':>12s}")
        for kind, r in results.items():
            print(f"{labels[kind]:58s} {r['seconds']:9.2f} {r['seconds'] / base:10.2f}x {r['peak_rss_mb']:12.0f}")
        ok = True
        if "embsql" in results and "sql-join" in results:
            speedup = results["sql-join"]["seconds"] / results["embsql"]["seconds"]
            print(f"\nembsql.margins vs numpy float32: {results['embsql']['seconds'] / base:.2f}x (target <= 2)")
            print(f"SQL join vs embsql.margins: {speedup:.1f}x slower (target >= 10)")
            print(f"embsql peak RSS: {results['embsql']['peak_rss_mb']:.0f} MB (target < 2048)")
        if "embsql" in results and "numpy64" in results:
            ours = np.load(str(data / f"margins_embsql_{os.getpid()}.npz"))
            exact = np.load(str(data / f"margins_numpy64_{os.getpid()}.npz"))
            same_rank = np.mean(ours["rank"] == exact["rank"])
            m_diff = np.max(np.abs(ours["m"] - exact["m"]))
            top1 = np.mean(ours["rank"] == 1)
            print(f"agreement with float64 brute force: ranks equal for {same_rank:.4%} of queries, "
                  f"max |m difference| {m_diff:.2e}; top-1 rate {top1:.3f}, ties {int(ours['ties'].sum())}")
            ok = same_rank == 1 and m_diff < 1e-9
        return 0 if ok else 1
    finally:
        for file in data.glob(f"*_{os.getpid()}.*"):
            file.unlink()


if __name__ == "__main__":
    sys.exit(main())
