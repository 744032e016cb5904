"""Benchmark: linear CKA between two models on the same items, against numpy, side by side.

    python bench/cka.py [--n 100000] [--dims 384,768] [--repeats 3] [--skip-memory] [--skip-routes]

Target: CKA for 100,000 items with d = 384 against d = 768 within 1.5x of a numpy implementation of
the same formula on arrays already in memory.  "The same formula" is what embsql.cka returns with
permutations=0: the CKA from the centred cross products X~'X~, Y~'Y~, X~'Y~ (blocked, float64)
and its delete-one-item jackknife SE.  The numpy peer derives the jackknife its own way (deleting
item i changes C_xy to C_xy - n/(n-1) x~_i y~_i', so ||C||^2 changes by -2c x~'C y~ + c^2 ||x~||^2 ||y~||^2)
and holds the centred arrays whole; it is timed warm, in full, best of --repeats runs interleaved, beside:
  * the embsql kernel on the same arrays (embsql.core.geometry.cka_pair, permutations=0);
  * embsql.cka on a DuckDB table (reading, checking and normalising the 200,000 rows too).
Also: one permutation's cost (one blocked product X~'(P Y~)), the kernel's peak extra memory
(tracemalloc) against the size of the rows, and, at small n with d = 768, the cross-products route
against the Gram route without and with 99 permutations (the rule embsql.core.geometry.gram_cheaper
picks between them).
"""

from __future__ import annotations

import argparse
import os
import time
import tracemalloc

import duckdb
import numpy as np
import pyarrow as pa

import embsql
from embsql.core import geometry

BLOCK = 8192


def timed(function):
    start = time.perf_counter()
    value = function()
    return time.perf_counter() - start, value


def make(n, p, q, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, p)) + 0.3
    w = rng.normal(size=(p, q)) / np.sqrt(p)
    y = np.empty((n, q))
    for low in range(0, n, BLOCK):
        y[low:low + BLOCK] = x[low:low + BLOCK] @ w + rng.normal(size=(min(BLOCK, n - low), q))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    return x, y


def numpy_cka(x, y):
    """CKA and its delete-one-item jackknife SE, plain numpy, arrays in memory."""
    n = len(x)
    xc, yc = x - x.mean(axis=0), y - y.mean(axis=0)
    cxx = np.zeros((x.shape[1],) * 2)
    cyy = np.zeros((y.shape[1],) * 2)
    cxy = np.zeros((x.shape[1], y.shape[1]))
    for low in range(0, n, BLOCK):
        a, b = xc[low:low + BLOCK], yc[low:low + BLOCK]
        cxx += a.T @ a
        cyy += b.T @ b
        cxy += a.T @ b
    c = n / (n - 1)
    ax, ay = np.einsum("ik,ik->i", xc, xc), np.einsum("ik,ik->i", yc, yc)
    mxy, mxx, myy = np.empty(n), np.empty(n), np.empty(n)
    for low in range(0, n, BLOCK):
        a, b = xc[low:low + BLOCK], yc[low:low + BLOCK]
        mxy[low:low + BLOCK] = np.einsum("ik,ik->i", a @ cxy, b)
        mxx[low:low + BLOCK] = np.einsum("ik,ik->i", a @ cxx, a)
        myy[low:low + BLOCK] = np.einsum("ik,ik->i", b @ cyy, b)
    fxy, fxx, fyy = (float(np.vdot(m, m)) for m in (cxy, cxx, cyy))
    value = fxy / np.sqrt(fxx * fyy)
    reps = (fxy - 2 * c * mxy + c * c * ax * ay) / np.sqrt((fxx - 2 * c * mxx + c * c * ax * ax)
                                                            * (fyy - 2 * c * myy + c * c * ay * ay))
    return value, float(np.sqrt((n - 1) / n * np.sum((reps - reps.mean()) ** 2)))


def duckdb_table(x, y) -> duckdb.DuckDBPyConnection:
    con = embsql.connect()
    n = len(x)
    items = pa.array([f"item{i:06d}" for i in range(n)] * 2)
    offsets = np.r_[0, np.cumsum([x.shape[1]] * n + [y.shape[1]] * n)].astype(np.int64)
    vectors = pa.ListArray.from_arrays(pa.array(offsets), pa.array(np.concatenate([x.ravel(), y.ravel()])))
    arrow = pa.table({"item": items, "model": ["small"] * n + ["large"] * n, "v": vectors})
    con.register("arrow_rows", arrow)
    con.execute("CREATE TABLE emb AS SELECT * FROM arrow_rows")
    con.unregister("arrow_rows")
    return con


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--dims", default="384,768")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved timed runs of each (best is kept)")
    parser.add_argument("--skip-memory", action="store_true")
    parser.add_argument("--skip-routes", action="store_true")
    args = parser.parse_args()
    p, q = map(int, args.dims.split(","))
    x, y = make(args.n, p, q)
    con = duckdb_table(x, y)
    print(f"n = {args.n:,} items, d = {p} against d = {q}; rows {x.nbytes / 1e6 + y.nbytes / 1e6:,.0f} MB as float64; "
          f"{os.cpu_count()} cores, OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}, "
          f"load average {os.getloadavg()[0]:.1f}")

    pick = lambda row: (row["cka"], row["se"])     # one call per run (a generator over the keys would call twice)
    runs = {
        "numpy (arrays in memory)": lambda: numpy_cka(x, y),
        "embsql kernel (arrays in memory)": lambda: pick(geometry.cka_pair(x, y, permutations=0)),
        "embsql.cka (DuckDB table)": lambda: pick(embsql.cka(con, "emb", item="item", model="model", vector="v",
                                                             permutations=0).to_dicts()[0]),
    }
    for run in runs.values():      # warm: BLAS threads, DuckDB's first scan, imports
        run()
    times, values = {}, {}
    for _ in range(args.repeats):  # interleaved, best of several: the machine may be shared
        for name, run in runs.items():
            took, values[name] = timed(run)
            times[name] = min(took, times.get(name, took))
    base = times["numpy (arrays in memory)"]
    for name in runs:
        cka, se = values[name]
        ratio = times[name] / base
        verdict = "" if name.startswith("numpy") else ("  within 1.5x" if ratio <= 1.5 else "  NOT within 1.5x")
        print(f"  {name:36s} {times[name]:7.2f} s  ratio {ratio:5.2f}{verdict:17s} cka {cka:.12f}  se {se:.6e}")
    spread = max(abs(v[0] - values["numpy (arrays in memory)"][0]) for v in values.values())
    se_spread = max(abs(v[1] - values["numpy (arrays in memory)"][1]) for v in values.values())
    print(f"  largest difference between the three: cka {spread:.1e}, se {se_spread:.1e}")

    mean_x, mean_y = x.mean(axis=0), y.mean(axis=0)
    perm = np.random.default_rng(1).permutation(args.n)
    one, _ = timed(lambda: geometry.permuted_cross(x, y, mean_x, mean_y, perm))
    print(f"  one permutation (blocked X~'(P Y~)): {one:.2f} s, so 999 permutations take about {999 * one / 60:.0f} min")

    if not args.skip_memory:
        tracemalloc.start()
        geometry.cka_pair(x, y, permutations=0)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(f"  kernel peak extra memory {peak / 1e6:,.0f} MB (rows: {(x.nbytes + y.nbytes) / 1e6:,.0f} MB; "
              f"d x d statistics: {8 * (p * p + q * q + p * q) / 1e6:.0f} MB)")

    if not args.skip_routes:
        print("\nroutes at d = 768 against 768 (statistic + jackknife SE, best of 3):")
        for n in (100, 200, 400, 600, 1000):
            a, b = make(n, q, q, seed=n)
            best = {}
            for route in ("cross products", "gram"):
                run = lambda a=a, b=b, route=route: geometry.cka_pair(a, b, permutations=0, route=route)
                best[route] = min(timed(run)[0] for _ in range(3))
            chosen = "gram" if geometry.gram_cheaper(n, q) else "cross products"
            print(f"  n = {n:5d}: cross products {best['cross products'] * 1e3:7.1f} ms, gram {best['gram'] * 1e3:7.1f} ms;"
                  f" rule picks {chosen}")
        print("with 99 permutations (statistic + SE + p, best of 2):")
        for n in (200, 400, 600, 800):
            a, b = make(n, q, q, seed=n)
            best = {}
            for route in ("cross products", "gram"):
                run = lambda a=a, b=b, route=route: geometry.cka_pair(a, b, permutations=99, route=route)
                best[route] = min(timed(run)[0] for _ in range(2))
            chosen = "gram" if geometry.gram_cheaper(n, q, 99) else "cross products"
            print(f"  n = {n:5d}: cross products {best['cross products']:6.2f} s, gram {best['gram']:6.2f} s;"
                  f" rule picks {chosen}")


if __name__ == "__main__":
    main()
