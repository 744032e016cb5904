"""Exact top-k retrieval and run evaluation: embsql against faiss, ranx and pytrec_eval.

    python bench/retrieval_eval.py                 # full size: 10,000 queries x 1,000,000 docs, d = 384
    python bench/retrieval_eval.py --scale 0.1     # 1,000 x 100,000 (a quick check)

Part 1, exact top-100 by cosine, float32 vectors, the same number of threads for everything
(--threads, default 2: OPENBLAS/OMP/NUMBA thread variables and faiss.omp_set_num_threads):
  * faiss     IndexFlatIP on L2-normalised copies (normalising and adding are timed too);
  * embsql    the kernel (embsql.io.runs.ranked: inverse norms, tie keys, blocked top-k, the
              run as an Arrow table) on the same arrays in memory;
  * with the load from DuckDB: embsql.retrieve(con, 'queries', 'docs', k=100) on an on-disk
    DuckDB database (the documents streamed in blocks, never held whole), against faiss after
    reading the same two tables from that database into numpy (Arrow, zero-copy where it can be).
Each runs in its own process, once warm (libraries loaded and a small search run first), so
its peak resident memory (ru_maxrss, which includes the data) is its own.  The top-100 lists of
embsql and faiss are compared (share of identical document sets).

Part 2, evaluate that run (1,000,000 rows at full size) on 10 metrics against qrels of 10 judged
documents per query (5 from its top 100, 5 at random, relevance 0-3): embsql.evaluate (Arrow
tables in, through DuckDB) against ranx.evaluate (numba, warm; Qrels/Run built beforehand, and
also timed with building them from DataFrames) and pytrec_eval (RelevanceEvaluator + evaluate on
dicts built beforehand), each contender's best of ROUNDS, alternating.  The per-query values must
agree to 1e-12.

Part 3, the paired randomization test end to end: embsql.compare_retrieval on two models'
per-query ndcg@10 (the run's and a noisy copy), 10,000 permutations, best of ROUNDS.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
METRICS = ["ndcg@10", "ndcg@100", "map@10", "map@100", "recall@10", "recall@100", "precision@10", "precision@100",
           "mrr@100", "hit_rate@10"]
TREC = {"ndcg@10": "ndcg_cut_10", "ndcg@100": "ndcg_cut_100", "map@10": "map_cut_10", "map@100": "map_cut_100",
        "recall@10": "recall_10", "recall@100": "recall_100", "precision@10": "P_10", "precision@100": "P_100",
        "mrr@100": "recip_rank", "hit_rate@10": "success_10"}


ROUNDS = 5          # parts 2 and 3: each contender's best of this many, alternating
QUERIES = None      # --queries: fewer queries against the full documents (time scales with them, memory not)


def sizes(scale: float) -> tuple[int, int, int, int]:
    return QUERIES or int(10_000 * scale), int(1_000_000 * scale), 384, 100


def data(scale: float, seed: int = 0):
    import numpy as np

    n, m, d, _ = sizes(scale)
    rng = np.random.default_rng(seed)
    docs = rng.standard_normal((m, d), dtype=np.float32)
    # queries near some documents, so the top 100 has structure
    queries = docs[rng.integers(0, m, size=n)] + rng.standard_normal((n, d), dtype=np.float32)
    return queries, docs


def peak_mb() -> float:
    """Peak resident memory of this process (VmHWM: unlike ru_maxrss it does not carry the
    parent's peak over exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ---------------------------------------------------------------------------------- children

def child_faiss(scale, database=None):
    import faiss
    import numpy as np

    faiss.omp_set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    k = sizes(scale)[3]
    warm = np.random.default_rng(1).standard_normal((500, 384), dtype=np.float32)
    faiss.IndexFlatIP(384).add(warm)                              # load the library
    if database is None:
        queries, docs = data(scale)
        start = time.perf_counter()
    else:
        import duckdb

        start = time.perf_counter()
        con = duckdb.connect(database, read_only=True)
        queries, docs = (_fetch(con, name) for name in ("queries", "docs"))
    faiss.normalize_L2(docs)        # in place: faiss's usual cosine recipe
    faiss.normalize_L2(queries)
    index = faiss.IndexFlatIP(docs.shape[1])
    index.add(docs)
    del docs
    _, ids = index.search(queries, k)
    seconds = time.perf_counter() - start
    np.save(os.environ["BENCH_OUT"], ids)
    return {"seconds": seconds, "peak_mb": peak_mb()}


def _fetch(con, name):
    import numpy as np

    table = con.sql(f"SELECT vector FROM {name} ORDER BY rowid").to_arrow_table().column(0).combine_chunks()
    d = table.type.list_size
    return np.ascontiguousarray(table.values.to_numpy().reshape(len(table), d))


def child_embsql(scale, database=None):
    import numpy as np
    import pyarrow as pa

    sys.path.insert(0, str(ROOT))
    import embsql
    import embsql.io.runs
    from embsql.io.runs import ranked

    k = sizes(scale)[3]
    rng = np.random.default_rng(1)
    small = rng.standard_normal((2000, 384), dtype=np.float32)
    ranked(None, pa.array(["q"] * 0, pa.string()), np.zeros((0, 384)), pa.array([str(i) for i in range(2000)]),
           small, np.ones(2000), 10)                              # warm
    if database is None:
        queries, docs = data(scale)
        start = time.perf_counter()
        inv = np.empty(len(docs))
        for a in range(0, len(docs), 8192):                       # as embsql.io.vectors does
            block = docs[a:a + 8192].astype(np.float64)
            inv[a:a + 8192] = 1 / np.sqrt(np.einsum("ij,ij->i", block, block))
        unit = queries.astype(np.float64)
        unit /= np.linalg.norm(unit, axis=1, keepdims=True)
        run = ranked(None, pa.array([f"q{i}" for i in range(len(queries))]), unit,
                     pa.array([str(i) for i in range(len(docs))]), docs, inv, k)
        seconds = time.perf_counter() - start
        ids = np.asarray(run.column("doc_id").to_pylist(), dtype=np.int64).reshape(len(queries), k)
    else:
        import duckdb

        start = time.perf_counter()
        con = embsql.register(duckdb.connect(database, read_only=True))
        run = embsql.io.runs.retrieve_run(con, embsql.Queries("queries"), embsql.Docs("docs"), k=k, model=None)
        seconds = time.perf_counter() - start
        order = np.argsort(np.asarray(run.column("qid").to_pylist(), dtype=np.int64), kind="stable")
        ids = np.asarray(run.column("doc_id").to_pylist(), dtype=np.int64)[order].reshape(-1, k)
        run = run.take(pa.array(order))
    np.save(os.environ["BENCH_OUT"], ids)
    if database is None:
        import pyarrow.parquet as pq

        pq.write_table(run, os.environ["BENCH_OUT"] + ".run.parquet")
    return {"seconds": seconds, "peak_mb": peak_mb()}


def child_evaluate(scale, run_path):
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq
    import pytrec_eval
    import ranx

    sys.path.insert(0, str(ROOT))
    import embsql
    from embsql.io.runs import ranked

    n, m, _, k = sizes(scale)
    if QUERIES and QUERIES < int(10_000 * scale):
        # part 1 ran fewer queries: score a run of the full number of queries, exact top-k of
        # embsql against a 20,000-document sample (the same kind of run: ids dictionary-encoded)
        n = int(10_000 * scale)
        queries, docs = data(scale)
        rng = np.random.default_rng(5)
        queries = rng.standard_normal((n, docs.shape[1]))
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        sample = docs[:20_000]
        run = ranked(None, pa.array([f"q{i}" for i in range(n)]), queries, pa.array([str(i) for i in range(20_000)]),
                     sample, 1 / np.linalg.norm(sample.astype(np.float64), axis=1), k)
        m = 20_000
        del docs
    else:
        run = pq.read_table(run_path)
    rng = np.random.default_rng(3)
    top = np.asarray(run.column("doc_id").to_pylist(), dtype=object).reshape(n, k)
    qids = sorted(set(run.column("qid").to_pylist()), key=lambda q: int(q[1:]) if q[1:].isdigit() else q)
    judged = {}
    for i, qid in enumerate(qids):
        docs = list(top[i, rng.choice(k, size=5, replace=False)]) + [str(x) for x in rng.integers(0, m, size=5)]
        judged[qid] = {d: int(rng.integers(0, 4)) for d in docs}
    rows = [(q, d, r) for q, j in judged.items() for d, r in j.items()]
    qrels = pa.table({"qid": [r[0] for r in rows], "doc_id": [r[1] for r in rows], "relevance": [r[2] for r in rows]})
    con = embsql.connect()
    small = run.slice(0, 2000)
    embsql.evaluate(con, small, qrels, metrics=METRICS)            # warm, both forms
    embsql.evaluate(con, small, qrels, metrics=METRICS, per_query=True)
    # ranx: built beforehand from dicts (not timed), and built from DataFrames (timed)
    run_dict = {}
    for q, d, s in zip(run.column("qid").to_pylist(), run.column("doc_id").to_pylist(), run.column("score").to_pylist()):
        run_dict.setdefault(q, {})[d] = s
    ranx_q, ranx_r = ranx.Qrels(judged), ranx.Run(run_dict)
    ranx.evaluate(ranx_q, ranx_r, METRICS)                         # numba compiles here: warm
    qdf = pd.DataFrame({"q_id": qrels.column("qid").to_pylist(), "doc_id": qrels.column("doc_id").to_pylist(),
                        "score": qrels.column("relevance").to_pylist()}).astype({"q_id": object, "doc_id": object})
    rdf = pd.DataFrame({"q_id": run.column("qid").to_pylist(), "doc_id": run.column("doc_id").to_pylist(),
                        "score": run.column("score").to_pylist()}).astype({"q_id": object, "doc_id": object})
    measures = {"ndcg_cut.10,100", "map_cut.10,100", "recall.10,100", "P.10,100", "recip_rank", "success.10"}
    pytrec_eval.RelevanceEvaluator(judged, measures).evaluate(run_dict)       # warm
    contenders = {
        "embsql": lambda: embsql.evaluate(con, run, qrels, metrics=METRICS),
        "embsql_per_query": lambda: embsql.evaluate(con, run, qrels, metrics=METRICS, per_query=True),
        "ranx": lambda: ranx.evaluate(ranx_q, ranx_r, METRICS, return_mean=False, make_comparable=False),
        "pytrec_eval": lambda: pytrec_eval.RelevanceEvaluator(judged, measures).evaluate(run_dict),
    }
    # best of ROUNDS, the contenders alternating, so that a burst of load on this shared machine
    # does not fall on one of them only
    best, answers = dict.fromkeys(contenders, float("inf")), {}
    for _ in range(ROUNDS):
        for name, call in contenders.items():
            start = time.perf_counter()
            answers[name] = call()
            best[name] = min(best[name], time.perf_counter() - start)
    start = time.perf_counter()
    ranx.evaluate(ranx.Qrels.from_df(qdf), ranx.Run.from_df(rdf), METRICS, return_mean=False)
    t_ranx_df = time.perf_counter() - start
    ours, theirs, trec = answers["embsql_per_query"], answers["ranx"], answers["pytrec_eval"]
    values = {}
    for row in ours.to_dicts():
        values.setdefault(row["metric"], {})[row["qid"]] = row["value"]
    order = sorted(ranx_r.keys()) if hasattr(ranx_r, "keys") else sorted(run_dict)
    diff_trec = max(abs(values[mm][q] - trec[q][TREC[mm]]) for mm in METRICS for q in qids)
    # ranx compares the float64 scores, trec_eval (and embsql.evaluate) 32-bit floats: they may
    # differ only on queries where two scores tie in float32 but not in float64
    near = set()
    for q, scores in run_dict.items():
        s64 = np.sort(np.fromiter(scores.values(), dtype=np.float64))
        s32 = s64.astype(np.float32)
        if np.any((s32[1:] == s32[:-1]) & (s64[1:] != s64[:-1])):
            near.add(q)
    diff_ranx = max(abs(values[mm][q] - float(v)) for mm in METRICS for q, v in zip(order, theirs[mm]) if q not in near)
    diff_ranx_near = max((abs(values[mm][q] - float(v)) for mm in METRICS for q, v in zip(order, theirs[mm])
                          if q in near), default=0.0)
    # part 3: the paired randomization test of two models on ndcg@10, end to end from a per-query
    # table (compare_retrieval: 10,000 sign-flip permutations over the queries), best of ROUNDS
    ndcg = ours.to_arrow().filter(pa.compute.equal(ours.to_arrow().column("metric"), "ndcg@10"))
    other = pa.table({"model": pa.array(["b"] * ndcg.num_rows), "qid": ndcg.column("qid"), "metric": ndcg.column("metric"),
                      "value": pa.array(np.clip(ndcg.column("value").to_numpy() + rng.normal(0, 0.1, ndcg.num_rows), 0, 1))})
    two = pa.concat_tables([ndcg.add_column(0, "model", pa.array(["a"] * ndcg.num_rows)), other])
    embsql.compare_retrieval(con, pa.concat_tables([two.slice(0, 50), two.slice(ndcg.num_rows, 50)]),
                             metric="ndcg@10", permutations=100, model="model")                                # warm
    t_compare = float("inf")
    for _ in range(ROUNDS):
        start = time.perf_counter()
        embsql.compare_retrieval(con, two, metric="ndcg@10", permutations=10_000, model="model")
        t_compare = min(t_compare, time.perf_counter() - start)
    return {**best, "ranx_from_dataframes": t_ranx_df, "compare": t_compare, "compare_queries": ndcg.num_rows,
            "max_diff_pytrec_eval": diff_trec, "max_diff_ranx": diff_ranx, "near_ties": len(near),
            "max_diff_ranx_near_ties": diff_ranx_near, "rows": run.num_rows}


# ---------------------------------------------------------------------------------- parent

def make_database(scale: float, path: str) -> float:
    import duckdb
    import numpy as np
    import pyarrow as pa

    queries, docs = data(scale)
    start = time.perf_counter()
    con = duckdb.connect(path)
    for name, key, array in (("queries", "qid", queries), ("docs", "doc_id", docs)):
        ids = [str(i) for i in range(len(array))]
        vectors = pa.FixedSizeListArray.from_arrays(pa.array(array.ravel()), array.shape[1])
        con.register("t", pa.table({key: ids, "vector": vectors}))
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM t")
        con.unregister("t")
    con.close()
    del queries, docs
    np.zeros(1)
    return time.perf_counter() - start


def run_child(name: str, scale: float, threads: int, out: str, extra: str = "") -> dict:
    env = {**os.environ, "OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads),
           "MKL_NUM_THREADS": str(threads), "NUMBA_NUM_THREADS": str(threads), "BENCH_OUT": out,
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, __file__, "--child", name, "--scale", str(scale), "--extra", extra]
                          + (["--queries", str(QUERIES)] if QUERIES else []),
                          env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{name} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--child")
    parser.add_argument("--extra", default="")
    parser.add_argument("--queries", type=int, help="queries in part 1 (default 10,000 x scale)")
    args = parser.parse_args()
    global QUERIES
    QUERIES = args.queries
    if args.child:
        functions = {"faiss": lambda: child_faiss(args.scale), "embsql": lambda: child_embsql(args.scale),
                     "faiss_duckdb": lambda: child_faiss(args.scale, args.extra),
                     "embsql_duckdb": lambda: child_embsql(args.scale, args.extra),
                     "evaluate": lambda: child_evaluate(args.scale, args.extra)}
        print(json.dumps(functions[args.child]()))
        return 0
    import numpy as np

    n, m, d, k = sizes(args.scale)
    print(f"exact top-{k}: {n:,} queries x {m:,} docs, d = {d}, float32, {args.threads} threads; "
          f"load average before: {os.getloadavg()[0]:.1f}", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        database = str(Path(folder) / "retrieval.duckdb")
        print(f"  DuckDB database written in {make_database(args.scale, database):.1f} s", flush=True)
        results = {}
        for name, extra in (("faiss", ""), ("embsql", ""), ("faiss_duckdb", database), ("embsql_duckdb", database)):
            out = str(Path(folder) / f"{name}.npy")
            results[name] = run_child(name, args.scale, args.threads, out, extra)
            results[name]["ids"] = np.load(out)
            print(f"  {name:14s} {results[name]['seconds']:8.2f} s   peak {results[name]['peak_mb']:7.0f} MB   "
                  f"(load average {os.getloadavg()[0]:.1f})", flush=True)
        same = np.mean([set(a) == set(b) for a, b in zip(results["faiss"]["ids"], results["embsql"]["ids"])])
        print(f"  ratio embsql / faiss, arrays in memory: {results['embsql']['seconds'] / results['faiss']['seconds']:.2f}")
        print(f"  ratio embsql / faiss, with the load from DuckDB: "
              f"{results['embsql_duckdb']['seconds'] / results['faiss_duckdb']['seconds']:.2f}")
        print(f"  queries whose top-{k} set is the same in embsql and faiss: {same:.4f}")
        print(f"  the two embsql runs give the same lists: "
              f"{bool((results['embsql']['ids'] == results['embsql_duckdb']['ids']).all())}", flush=True)
        e = run_child("evaluate", args.scale, args.threads, str(Path(folder) / "e"),
                      str(Path(folder) / "embsql.npy.run.parquet"))
        print(f"evaluate: {e['rows']:,} run rows, {len(METRICS)} metrics")
        print(f"  best of {ROUNDS}, alternating: embsql.evaluate {e['embsql']:.2f} s "
              f"(per_query=True {e['embsql_per_query']:.2f} s)   "
              f"ranx {e['ranx']:.2f} s (from DataFrames "
              f"{e['ranx_from_dataframes']:.2f} s)   pytrec_eval {e['pytrec_eval']:.2f} s")
        print(f"  ratio embsql / ranx: {e['embsql'] / e['ranx']:.2f}   embsql / ranx from DataFrames: "
              f"{e['embsql'] / e['ranx_from_dataframes']:.2f}   embsql / pytrec_eval: {e['embsql'] / e['pytrec_eval']:.2f}"
              f" (per_query=True: {e['embsql_per_query'] / e['pytrec_eval']:.2f})")
        print(f"  largest difference per query: pytrec_eval {e['max_diff_pytrec_eval']:.1e}, ranx {e['max_diff_ranx']:.1e} "
              f"(on the {e['near_ties']} queries with scores that tie only in float32, which trec_eval and embsql "
              f"compare as float32 and ranx as float64: {e['max_diff_ranx_near_ties']:.1e})")
        print(f"paired randomization test (compare_retrieval, 2 models, {e['compare_queries']:,} queries, "
              f"10,000 permutations): {e['compare']:.2f} s (target: under 2 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
