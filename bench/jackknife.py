"""Benchmark: the cluster jackknife against the decomposition itself, on the same table.

    python bench/jackknife.py [--n 1000000] [--d 384] [--groups 5000]

Issue target: the jackknife over n rows and G groups within 1.5x of emb_anova on the same table,
because every leave-one-group-out replicate comes from the per-group sums in O(d).  Printed for
both routes: Python (embsql.jackknife vs embsql.anova) and SQL (emb_jackknife vs emb_anova).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pyarrow as pa

import embsql


def best(function, repeats=2):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--d", type=int, default=384)
    parser.add_argument("--groups", type=int, default=5000)
    args = parser.parse_args()
    con = embsql.connect()
    rng = np.random.default_rng(0)
    con.execute(f"CREATE TABLE emb (g INTEGER, v FLOAT[{args.d}])")
    for low in range(0, args.n, 100_000):
        rows = min(100_000, args.n - low)
        x = rng.standard_normal((rows, args.d), dtype=np.float32)
        chunk = pa.table({"g": rng.integers(0, args.groups, rows).astype(np.int32),
                          "v": pa.FixedSizeListArray.from_arrays(pa.array(x.ravel()), args.d)})
        con.from_arrow(chunk).insert_into("emb")
    timings = {
        "python anova": best(lambda: embsql.anova(con, "emb", group="g", vector="v")),
        "python jackknife": best(lambda: embsql.jackknife(con, "emb", group="g", vector="v")),
        "sql emb_anova": best(lambda: con.sql("SELECT * FROM emb_anova('emb', 'g', 'v')").fetchall()),
        "sql emb_jackknife": best(lambda: con.sql("SELECT * FROM emb_jackknife('emb', 'g', 'v')").fetchall()),
    }
    print(f"jackknife n={args.n:,} d={args.d} G={args.groups} (best of 2)")
    for name, seconds in timings.items():
        print(f"  {name:20} {seconds:7.2f} s")
    for route in ("python", "sql"):
        anova = timings["python anova" if route == "python" else "sql emb_anova"]
        jack = timings["python jackknife" if route == "python" else "sql emb_jackknife"]
        met = "met" if jack / anova <= 1.5 else "NOT met"
        print(f"  {route:6} jackknife / anova = {jack / anova:4.2f}  (target <= 1.5: {met})")


if __name__ == "__main__":
    main()
