"""similarity_eval against numpy's cosine plus scipy's spearmanr on arrays already in memory.

    nice -n 10 python bench/similarity.py [--pairs 1000000] [--items 100000] [--dim 384] [--repeats 3]

Data: two models embed the same items (FLOAT[d] vectors, stored in a DuckDB table with a model
column); a pairs table of item_a, item_b and a gold score.  Both sides are timed warm (each run once
before the timing), in full, interleaved, and the median of the repeats is reported, of the wall
time and of the CPU time of all the process's threads (DuckDB's and numpy's; on a machine shared
with other work the CPU time is the steadier figure):

  embsql   embsql.similarity_eval(con, "pairs", "emb", ...): reads both tables from DuckDB, matches the
           pairs' items to the vectors, computes the cosines in float64 and, per model, Spearman and
           Pearson with their item-clustered intervals (the whole job);
  peer     what a user writes with the vectors and the pair indices already in memory as numpy
           arrays (float32): the vectors scaled to unit length, the cosine of each pair by a row-wise
           product in blocks of 65,536 pairs (a 1,000,000 x 384 gather would take 1.5 GB per side), and
           scipy.stats.spearmanr(cosine, score) per model; no interval, no reading.

The ratio embsql / peer is printed with both times; the figures agree to 1e-6 (float32 cosines).

    nice -n 10 python bench/similarity.py --sql --pairs 100000 --items 10000

times instead the plain-SQL macros of the stock CLI (emb_similarity_pearson, emb_similarity_spearman;
they call no UDF) beside embsql.similarity_eval, on the same tables.
"""

from __future__ import annotations

import argparse
import statistics
import time

import duckdb
import numpy as np
import pyarrow as pa
from scipy.stats import spearmanr

import embsql

BLOCK = 65_536


def make_data(con: duckdb.DuckDBPyConnection, pairs: int, items: int, dim: int, seed: int = 0):
    """Write emb (model, item, vector FLOAT[dim]) and pairs (item_a, item_b, score) into DuckDB;
    return the same data as numpy arrays (vectors per model, pair indices, scores)."""
    rng = np.random.default_rng(seed)
    truth = rng.normal(size=(items, dim)).astype(np.float32)
    vectors = {m: truth + noise * rng.normal(size=(items, dim)).astype(np.float32)
               for m, noise in (("small", 1.0), ("large", 0.6))}
    names = pa.array([f"item{i}" for i in range(items)])
    for i, (m, x) in enumerate(vectors.items()):
        table = pa.table({"model": pa.array([m] * items), "item": names,
                          "vector": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), dim)})
        con.register("part", table)
        con.execute("CREATE TABLE emb AS SELECT * FROM part" if i == 0 else "INSERT INTO emb SELECT * FROM part")
        con.unregister("part")
    a = rng.integers(0, items, pairs)
    b = (a + rng.integers(1, items, pairs)) % items
    unit = truth / np.linalg.norm(truth, axis=1, keepdims=True)
    score = np.empty(pairs)
    for low in range(0, pairs, BLOCK):
        s = slice(low, low + BLOCK)
        score[s] = np.einsum("ij,ij->i", unit[a[s]], unit[b[s]])
    score = np.round(5 * (score - score.min()) / np.ptp(score) + rng.normal(0, 0.5, pairs), 1)   # a 0-5 scale, ties
    con.register("p", pa.table({"item_a": names.take(pa.array(a)), "item_b": names.take(pa.array(b)), "score": score}))
    con.execute("CREATE TABLE pairs AS SELECT * FROM p")
    con.unregister("p")
    return vectors, a, b, score


def peer(vectors: dict[str, np.ndarray], a: np.ndarray, b: np.ndarray, score: np.ndarray) -> dict[str, float]:
    out = {}
    for m, x in vectors.items():
        unit = x / np.linalg.norm(x, axis=1, keepdims=True)
        cosine = np.empty(len(a), dtype=np.float32)
        for low in range(0, len(a), BLOCK):
            s = slice(low, low + BLOCK)
            cosine[s] = np.einsum("ij,ij->i", unit[a[s]], unit[b[s]])
        out[m] = float(spearmanr(cosine, score).statistic)
    return out


def ours(con: duckdb.DuckDBPyConnection) -> dict[str, float]:
    return {r["model"]: r["spearman"] for r in embsql.similarity_eval(con, "pairs", "emb", vector="vector", model="model",
                                                                      item="item").to_dicts()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1_000_000)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--sql", action="store_true", help="time the plain-SQL macros beside the Python route")
    args = parser.parse_args()
    con = embsql.connect()
    if args.sql:
        return plain_sql(con, args)
    started = time.perf_counter()
    vectors, a, b, score = make_data(con, args.pairs, args.items, args.dim)
    print(f"similarity: {args.pairs:,} pairs of {args.items:,} items, d = {args.dim}, 2 models "
          f"(data made in {time.perf_counter() - started:.0f} s)")
    expected, got = peer(vectors, a, b, score), ours(con)             # warm-up runs, and the check
    for m in expected:
        assert abs(expected[m] - got[m]) < 1e-6, (m, expected[m], got[m])
    times: dict[str, list[float]] = {"embsql": [], "peer": []}
    cpu: dict[str, list[float]] = {"embsql": [], "peer": []}
    for _ in range(args.repeats):
        for name, run in (("embsql", lambda: ours(con)), ("peer", lambda: peer(vectors, a, b, score))):
            t0, c0 = time.perf_counter(), time.process_time()
            run()
            times[name].append(time.perf_counter() - t0)
            cpu[name].append(time.process_time() - c0)
    median = {k: statistics.median(v) for k, v in times.items()}
    median_cpu = {k: statistics.median(v) for k, v in cpu.items()}
    print(f"spearman per model: {got}")
    print(f"embsql similarity_eval (from DuckDB, with intervals): {median['embsql']:.2f} s  (runs {times['embsql']})")
    print(f"peer numpy cosine + scipy spearmanr (in memory):      {median['peer']:.2f} s  (runs {times['peer']})")
    print(f"CPU s (median): embsql {median_cpu['embsql']:.2f}, peer {median_cpu['peer']:.2f}  "
          f"(runs {[round(c, 2) for c in cpu['embsql']]}, {[round(c, 2) for c in cpu['peer']]})")
    print(f"RATIO embsql / peer = {median['embsql'] / median['peer']:.2f} wall, "
          f"{median_cpu['embsql'] / median_cpu['peer']:.2f} CPU  (target <= 1.5)")


def plain_sql(con: duckdb.DuckDBPyConnection, args: argparse.Namespace) -> None:
    """Median times of emb_similarity_pearson / _spearman (plain SQL) beside similarity_eval."""
    make_data(con, args.pairs, args.items, args.dim)
    query = "SELECT * FROM emb_similarity_{}('pairs', 'emb')"
    runs = {"similarity_eval (Python)": lambda: ours(con),
            "emb_similarity_pearson (plain SQL)": lambda: con.sql(query.format("pearson")).fetchall(),
            "emb_similarity_spearman (plain SQL)": lambda: con.sql(query.format("spearman")).fetchall()}
    times: dict[str, list[float]] = {name: [] for name in runs}
    for run in runs.values():
        run()                                                   # warm
    for _ in range(args.repeats):
        for name, run in runs.items():
            t0 = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - t0)
    base = statistics.median(times["similarity_eval (Python)"])
    print(f"plain SQL beside Python: {args.pairs:,} pairs of {args.items:,} items, d = {args.dim}, 2 models")
    for name, values in times.items():
        print(f"{name:40s} {statistics.median(values):7.2f} s  ratio to Python {statistics.median(values) / base:.2f}")


if __name__ == "__main__":
    main()
