"""k-NN leave-one-out classification: embsql.knn_classify beside faiss-cpu, side by side in one run.

    pip install faiss-cpu          # the peer (also in the "bench" extra)
    nice -n 10 python bench/knn_classify.py [--n 100000] [--d 384] [--k 10] [--threads 2] [--table FILE]

(--table keeps the DuckDB file of the data for the next run: made if absent, else checked to hold n x d.)

The data: n items in 20 classes (class centre + noise), FLOAT[d] vectors in a DuckDB file.
Each peer runs in a child process of its own, which reports its time and its peak resident
memory (ru_maxrss), so neither inherits the other's memory:
  embsql  embsql.knn_classify(con, table, k=k, model=None, vector="vector") from the DuckDB table: reading and
          checking the vectors, the exact blocked top-k (embsql.core.ranking.top_k), the vote
          and the figures with their intervals;
  faiss   the vectors already in memory as a float32 numpy array (read before the clock starts),
          normalised, IndexFlatIP (exact inner product) searched for k + 1 neighbours, the item
          itself dropped, and a numpy majority vote (ties to the smallest label).
Both children run with the same number of threads (--threads, default all cores: OpenBLAS for
numpy's products, OpenMP for faiss; set through OPENBLAS_NUM_THREADS / OMP_NUM_THREADS before they
start).  Each is warmed first on a small table / index (no first-call costs in the timing), then
timed once in full.  RATIO = embsql / faiss (target: at most 1.3), of the wall time and of the CPU time
of all threads (process_time: on a machine shared with other work the wall time measures the
neighbours' load as much as the code); the accuracies are printed beside it (they agree unless a
tie at the k-th neighbour is broken differently).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

CLASSES = 20


def make_table(path: str, n: int, d: int, seed: int = 0) -> None:
    import duckdb
    import pyarrow as pa
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, CLASSES, n)
    centres = rng.normal(size=(CLASSES, d)).astype(np.float32)
    con = duckdb.connect(path)
    con.execute(f"CREATE TABLE emb (item VARCHAR, label INTEGER, vector FLOAT[{d}])")
    step = 20_000
    for low in range(0, n, step):
        high = min(n, low + step)
        x = (0.2 * centres[labels[low:high]] + rng.normal(size=(high - low, d)).astype(np.float32))
        batch = pa.table({"item": [f"i{i:07d}" for i in range(low, high)], "label": labels[low:high],
                          "vector": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), d)})
        con.register("batch", batch)
        con.execute("INSERT INTO emb SELECT * FROM batch")
        con.unregister("batch")
    con.close()


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_embsql(path: str, k: int, out: mp.Queue) -> None:
    import duckdb

    import embsql
    con = embsql.register(duckdb.connect(path, read_only=True))
    con.execute("CREATE TEMP TABLE warm AS SELECT * FROM emb LIMIT 2000")
    embsql.knn_classify(con, "warm", k=k, model=None, vector="vector")                     # warm-up
    start, cpu = time.perf_counter(), time.process_time()
    row = embsql.knn_classify(con, "emb", k=k, model=None, vector="vector").to_dicts()[0]
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    out.put({"peer": "embsql", "seconds": seconds, "cpu": cpu, "accuracy": row["accuracy"], "peak_mb": _peak_mb()})


def _vote(labels: np.ndarray, classes: int) -> np.ndarray:
    counts = np.zeros((len(labels), classes), dtype=np.int32)
    np.add.at(counts, (np.repeat(np.arange(len(labels)), labels.shape[1]), labels.ravel()), 1)
    return counts.argmax(axis=1)


def faiss_loo(x: np.ndarray, y: np.ndarray, k: int) -> np.ndarray:
    import faiss
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    index = faiss.IndexFlatIP(x.shape[1])
    index.add(x)
    _, idx = index.search(x, k + 1)
    keep = idx != np.arange(len(x))[:, None]
    keep[keep.all(axis=1), -1] = False
    return _vote(y[idx[keep].reshape(len(x), k)], int(y.max()) + 1)


def run_faiss(path: str, k: int, out: mp.Queue) -> None:
    import duckdb
    con = duckdb.connect(path, read_only=True)
    table = con.sql("SELECT label, vector FROM emb").to_arrow_table()
    y = table.column("label").to_numpy()
    vectors = table.column("vector").combine_chunks()
    x = vectors.flatten().to_numpy().reshape(len(vectors), -1).astype(np.float32)
    del table, vectors
    faiss_loo(x[:2000].copy(), y[:2000], k)                                   # warm-up
    start, cpu = time.perf_counter(), time.process_time()
    predicted = faiss_loo(x, y, k)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    out.put({"peer": "faiss", "seconds": seconds, "cpu": cpu, "accuracy": float(np.mean(predicted == y)),
             "peak_mb": _peak_mb()})


def child(target, path: str, k: int) -> dict:
    context = mp.get_context("spawn")
    queue = context.Queue()
    process = context.Process(target=target, args=(path, k, queue))
    process.start()
    result = queue.get()
    process.join()
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--d", type=int, default=384)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--table", help="keep the DuckDB file of the data here (made if absent) for another run")
    args = parser.parse_args()
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = str(args.threads)              # inherited by both children
    with tempfile.TemporaryDirectory() as tmp:
        path = args.table or str(Path(tmp) / "emb.duckdb")
        if not Path(path).exists():
            make_table(path, args.n, args.d)
        import duckdb
        with duckdb.connect(path, read_only=True) as con:
            rows, width = con.sql("SELECT count(*), max(len(vector)) FROM emb").fetchall()[0]
        assert (rows, width) == (args.n, args.d), f"{path} holds {rows} x {width}, not {args.n} x {args.d}"
        results = [child(run_embsql, path, args.k), child(run_faiss, path, args.k)]
    ours, peer = results
    print(f"k-NN leave-one-out, n = {args.n:,}, d = {args.d}, k = {args.k}, {CLASSES} classes, "
          f"{args.threads} thread{'s' if args.threads > 1 else ''} each")
    print(f"{'peer':8} {'seconds':>9} {'CPU s':>9} {'peak MB':>9} {'accuracy':>9}")
    for r in results:
        print(f"{r['peer']:8} {r['seconds']:9.2f} {r['cpu']:9.2f} {r['peak_mb']:9.0f} {r['accuracy']:9.5f}")
    print(f"RATIO embsql / faiss = {ours['seconds'] / peer['seconds']:.3f} wall, "
          f"{ours['cpu'] / peer['cpu']:.3f} CPU (all threads; steadier on a shared machine) (target <= 1.3); "
          f"embsql peak memory {ours['peak_mb'] / 1024:.2f} GB (target < 3 GB)")
    json.dump({"args": vars(args), "results": results}, sys.stderr)
    print(file=sys.stderr)


if __name__ == "__main__":
    main()
